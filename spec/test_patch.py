"""PATCH: multi-file patches in the Codex format and as unified diffs (DESIGN §4 "ApplyPatch").

Every clause here runs without faults; crashes and I/O errors during the publish are the
TXN and RECOV clauses' business.
"""

from __future__ import annotations

import os
import re

import pytest

from editspec.reference import EditSpec
from editspec.spec import (
    MUST,
    SHOULD,
    assert_fields,
    clause,
    prepare_change,
    raises_code,
    setup,
)
from editspec.spec.fixtures import sha256

CODE = (
    "import os\n"
    "\n"
    "def alpha():\n"
    "    value = 1\n"
    "    return value\n"
    "\n"
    "def beta():\n"
    "    value = 1\n"
    "    return value\n"
)


def _patch(*sections: str) -> str:
    """A Codex patch around ``sections`` (each one or more complete lines)."""
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


def _prepared(session, disk, rel, data):
    """A file on disk that ``session`` may patch (read in full first if the tool needs it)."""
    disk.write(rel, data)
    prepare_change(session, rel)


def _control(session, disk, rel="control.txt"):
    """Positive control (DESIGN §7): a patch of the same kind, in the same session, succeeds
    and lands, so a refusal that follows is about what the clause tests."""
    _prepared(session, disk, rel, "control = 1\n")
    session.apply_patch(_patch(f"*** Update File: {rel}\n@@\n-control = 1\n+control = 2\n"))
    assert disk.read(rel) == b"control = 2\n", "the positive control's patch did not land"


def _takes_pure_moves(session, disk) -> bool:
    """Whether the tool accepts a '*** Move to:' without hunks, a pure rename.

    Codex's own grammar rejects it (an update needs at least one hunk), so a tool may refuse
    it as PATCH_SYNTAX; then the clause checks only moves with hunks. A tool that accepts it
    must move the file, and is held to each clause's code for it as for any other section.
    """
    _prepared(session, disk, "pure-move-probe.txt", "probe\n")
    try:
        with setup():
            session.apply_patch(
                _patch("*** Update File: pure-move-probe.txt\n*** Move to: pure-move-done.txt\n")
            )
    except Exception as exc:
        if getattr(exc, "code", None) != "PATCH_SYNTAX":
            raise
        assert disk.read("pure-move-probe.txt") == b"probe\n", "a refused move changed the file"
        return False
    assert not disk.exists("pure-move-probe.txt"), "a pure move left its source behind"
    assert disk.read("pure-move-done.txt") == b"probe\n", "a pure move changed the bytes"
    return True


def _needs_pure_moves(session, disk) -> None:
    if not _takes_pure_moves(session, disk):
        pytest.skip(
            "UNSUPPORTED: the tool refuses a '*** Move to:' without hunks (PATCH_SYNTAX), "
            "as Codex's grammar does"
        )


def _declares(session, capability: str) -> bool:
    return capability in getattr(session, "driver_capabilities", frozenset())


def _names_line(exc: BaseException, line: int) -> bool:
    """The error names the 1-based patch line ``line`` (in its details or its message)."""
    details = getattr(exc, "details", None)
    if isinstance(details, dict) and details.get("line") == line:
        return True
    return re.search(rf"\bline {line}\b", str(exc)) is not None


# -- the Codex constructs ------------------------------------------------------------------


@clause(
    "PATCH-001",
    MUST,
    requires={"apply_patch"},
    text="'*** Add File:' creates the file with exactly the '+' lines, each ending in a newline, "
    "without a prior read; its change reports op 'add', no old hash and the new hash.",
    rationale="Adding files is half of what patches do; a stray or missing newline makes every "
    "added file differ from what the agent wrote.",
)
def test_add_file(session, disk):
    result = session.apply_patch(
        _patch("*** Add File: hello.py\n+print('hi')\n+\n+# end\n"),
    )
    expected = b"print('hi')\n\n# end\n"
    assert disk.read("hello.py") == expected
    (change,) = result.changes
    assert change.op == "add"
    assert change.path == "hello.py"
    assert change.old_sha256 is None
    assert change.new_sha256 == sha256(expected)


@clause(
    "PATCH-002",
    MUST,
    requires={"apply_patch"},
    text="'*** Add File:' creates the missing parent directories of the new file.",
    rationale="New modules go into new packages; refusing to create the package forces a second "
    "tool call the agent rarely knows it needs.",
)
def test_add_file_creates_directories(session, disk):
    session.apply_patch(_patch("*** Add File: pkg/sub/mod.py\n+x = 1\n"))
    assert disk.read("pkg/sub/mod.py") == b"x = 1\n"


@clause(
    "PATCH-003",
    MUST,
    requires={"apply_patch"},
    text="'*** Delete File:' removes a file this session has read; its change reports op "
    "'delete', the old hash and no new hash.",
    rationale="Deletions are part of refactorings; the old hash tells the host what was removed.",
)
def test_delete_file(session, disk):
    _prepared(session, disk, "gone.txt", "obsolete\n")
    _prepared(session, disk, "kept.txt", "kept\n")
    result = session.apply_patch(_patch("*** Delete File: gone.txt\n"))
    assert not disk.exists("gone.txt")
    assert disk.read("kept.txt") == b"kept\n"
    (change,) = result.changes
    assert change.op == "delete"
    assert change.path == "gone.txt"
    assert change.old_sha256 == sha256("obsolete\n")
    assert change.new_sha256 is None


@clause(
    "PATCH-004",
    MUST,
    requires={"apply_patch"},
    text="'*** Update File:' with one hunk replaces the hunk's '-' lines by its '+' lines where "
    "its context and removed lines match, and every other byte stays as it was; its change "
    "reports op 'update' with the old and new hashes.",
    rationale="This is the patch agents send most; any change beyond the hunk is damage.",
)
def test_update_file(session, disk):
    _prepared(session, disk, "mod.py", CODE)
    result = session.apply_patch(
        _patch(
            "*** Update File: mod.py\n"
            "@@\n"
            " import os\n"
            " \n"
            "-def alpha():\n"
            "+def alpha(flag):\n"
            "     value = 1\n"
        )
    )
    expected = CODE.replace("def alpha():", "def alpha(flag):")
    assert disk.read("mod.py") == expected.encode()
    (change,) = result.changes
    assert change.op == "update"
    assert change.path == "mod.py"
    assert change.old_sha256 == sha256(CODE)
    assert change.new_sha256 == sha256(expected)


@clause(
    "PATCH-005",
    MUST,
    requires={"apply_patch"},
    text="'*** Update File:' followed by '*** Move to:' writes the updated content at the new "
    "path and removes the old one; its change reports op 'move' and move_to.",
    rationale="Renaming a module while fixing its imports is one change; doing it in two "
    "steps leaves a window where both or neither exist.",
)
def test_update_and_move(session, disk):
    _prepared(session, disk, "old_name.py", CODE)
    result = session.apply_patch(
        _patch(
            "*** Update File: old_name.py\n"
            "*** Move to: new_name.py\n"
            "@@ def beta():\n"
            "-    value = 1\n"
            "+    value = 2\n"
        )
    )
    assert not disk.exists("old_name.py")
    expected = CODE.replace("def beta():\n    value = 1", "def beta():\n    value = 2")
    assert disk.read("new_name.py") == expected.encode()
    (change,) = result.changes
    assert change.op == "move"
    assert change.path == "old_name.py"
    assert change.move_to == "new_name.py"
    assert change.old_sha256 == sha256(CODE)
    assert change.new_sha256 == sha256(expected)


@clause(
    "PATCH-006",
    MUST,
    requires={"apply_patch"},
    text="A '*** Move to:' without hunks, where the tool accepts one (Codex's grammar does "
    "not), moves the file with its bytes unchanged (line endings, a missing final newline and "
    "non-ASCII text included).",
    rationale="A rename must not rewrite the file: re-encoding or newline normalisation turns "
    "a move into a whole-file diff.",
)
def test_pure_move_keeps_bytes(session, disk):
    _needs_pure_moves(session, disk)
    data = "\ufeffwindows\r\nnaïve — text\r\nno final newline".encode()
    _prepared(session, disk, "a.txt", data)
    session.apply_patch(_patch("*** Update File: a.txt\n*** Move to: b.txt\n"))
    assert not disk.exists("a.txt")
    assert disk.read("b.txt") == data


@clause(
    "PATCH-007",
    MUST,
    requires={"apply_patch"},
    text="A '*** Move to:' into a directory that does not exist creates that directory, with "
    "hunks and, where the tool accepts a move without them, without.",
    rationale="Moving a file into a new package is a common refactoring step.",
)
def test_move_creates_directories(session, disk):
    _prepared(session, disk, "util.py", "x = 1\n")
    session.apply_patch(
        _patch("*** Update File: util.py\n*** Move to: lib/helpers/util.py\n@@\n-x = 1\n+x = 2\n")
    )
    assert not disk.exists("util.py")
    assert disk.read("lib/helpers/util.py") == b"x = 2\n"
    if _takes_pure_moves(session, disk):
        _prepared(session, disk, "tool.py", "y = 1\n")
        session.apply_patch(_patch("*** Update File: tool.py\n*** Move to: pkg/sub/tool.py\n"))
        assert not disk.exists("tool.py")
        assert disk.read("pkg/sub/tool.py") == b"y = 1\n"


@clause(
    "PATCH-008",
    MUST,
    requires={"apply_patch"},
    text="Several hunks of one '*** Update File:' all apply, in order, to one file.",
    rationale="A change to a function and to its caller is one update with two hunks.",
)
def test_several_hunks(session, disk):
    _prepared(session, disk, "mod.py", CODE)
    session.apply_patch(
        _patch(
            "*** Update File: mod.py\n"
            "@@\n"
            "-import os\n"
            "+import sys\n"
            "@@ def beta():\n"
            "-    return value\n"
            "+    return -value\n"
        )
    )
    lines = CODE.replace("import os", "import sys").split("\n")
    lines[8] = "    return -value"
    assert disk.read("mod.py") == "\n".join(lines).encode()


@clause(
    "PATCH-009",
    MUST,
    requires={"apply_patch"},
    text="A hunk whose context and removed lines match in several places is rejected with "
    "AMBIGUOUS when it has no '@@' header, and nothing changes.",
    rationale="Patching the first of two identical blocks edits the wrong function half the "
    "time, silently.",
)
def test_ambiguous_hunk(session, disk):
    _control(session, disk)
    _prepared(session, disk, "mod.py", CODE)
    before = disk.snapshot()
    with raises_code("AMBIGUOUS"):
        session.apply_patch(
            _patch(
                "*** Update File: mod.py\n@@\n     value = 1\n-    return value\n+    return 0\n"
            )
        )
    disk.assert_unchanged(before)


@clause(
    "PATCH-010",
    MUST,
    requires={"apply_patch"},
    text="An '@@' header line names a line before the hunk and decides between several matches: "
    "the hunk applies to the match after that line.",
    rationale="The header is how a patch author points at the right one of several identical "
    "blocks; ignoring it makes such patches impossible.",
)
def test_header_disambiguates(session, disk):
    _prepared(session, disk, "mod.py", CODE)
    session.apply_patch(
        _patch(
            "*** Update File: mod.py\n"
            "@@ def beta():\n     value = 1\n-    return value\n+    return 0\n"
        )
    )
    expected = CODE[: CODE.rindex("    return value")] + "    return 0\n"
    assert disk.read("mod.py") == expected.encode()


@clause(
    "PATCH-011",
    MUST,
    requires={"apply_patch"},
    text="Nested '@@' headers narrow the place step by step: each header is looked for after the "
    "previous one.",
    rationale="Methods of the same name in two classes are told apart only by the class, then "
    "the method.",
)
def test_nested_headers(session, disk):
    text = (
        "class A:\n"
        "    def run(self):\n"
        "        return 1\n"
        "\n"
        "class B:\n"
        "    def run(self):\n"
        "        return 1\n"
    )
    _prepared(session, disk, "two.py", text)
    session.apply_patch(
        _patch(
            "*** Update File: two.py\n"
            "@@ class B:\n"
            "@@     def run(self):\n"
            "-        return 1\n"
            "+        return 2\n"
        )
    )
    assert disk.read("two.py") == (text[: text.rindex("return 1")] + "return 2\n").encode()


@clause(
    "PATCH-012",
    MUST,
    requires={"apply_patch"},
    text="A hunk followed by '*** End of File' matches only at the end of the file: it decides "
    "between several matches, and one whose lines are not the file's last is NO_MATCH.",
    rationale="Appending to or trimming a file's tail is the commonest use of the marker; a "
    "match elsewhere edits the wrong place.",
)
def test_end_of_file_marker(session, disk):
    _prepared(session, disk, "list.txt", "item\nother\nitem\n")
    session.apply_patch(_patch("*** Update File: list.txt\n@@\n-item\n+last\n*** End of File\n"))
    assert disk.read("list.txt") == b"item\nother\nlast\n"
    before = disk.snapshot()
    with raises_code("NO_MATCH"):
        session.apply_patch(
            _patch("*** Update File: list.txt\n@@\n-other\n+changed\n*** End of File\n")
        )
    disk.assert_unchanged(before)


# -- context matching ---------------------------------------------------------------------


@clause(
    "PATCH-013",
    MUST,
    requires={"apply_patch"},
    text="Context that differs from the file only in trailing whitespace matches, and the "
    "context lines keep the file's own bytes.",
    rationale="Patch generators strip trailing blanks; refusing them fails good patches, and "
    "rewriting the context lines adds unrelated changes.",
)
def test_trailing_whitespace_tolerance(session, disk):
    _prepared(session, disk, "f.py", "def f():   \n    return 1\t\nprint(f())\n")
    session.apply_patch(
        _patch("*** Update File: f.py\n@@\n def f():\n-    return 1\n+    return 2\n")
    )
    assert disk.read("f.py") == b"def f():   \n    return 2\nprint(f())\n"


@clause(
    "PATCH-014",
    MUST,
    requires={"apply_patch"},
    text="Context that differs from the file only in leading and trailing whitespace matches "
    "when no stricter comparison does, and the context lines keep the file's own bytes.",
    rationale="A patch written against a re-indented copy (tabs for spaces) still names the "
    "right lines.",
)
def test_surrounding_whitespace_tolerance(session, disk):
    _prepared(session, disk, "g.py", "\tif ok:\n\t\trun()\n\tdone()\n")
    session.apply_patch(
        _patch("*** Update File: g.py\n@@\n    if ok:\n-        run()\n+        stop()\n")
    )
    result = disk.read("g.py").decode()
    lines = result.split("\n")
    assert lines[0] == "\tif ok:", "the context line lost the file's own indentation"
    assert "run()" not in result and lines[1].strip() == "stop()"
    assert lines[2:] == ["\tdone()", ""]


@clause(
    "PATCH-015",
    MUST,
    requires={"apply_patch"},
    text="Context that differs from the file only in Unicode punctuation (dashes, curly quotes, "
    "non-breaking and other odd spaces read as their ASCII forms) matches when no stricter "
    "comparison does, and the context lines keep the file's own characters.",
    rationale="Models write ASCII quotes and hyphens for the typographic ones in the file; "
    "refusing such a patch makes the text unpatchable.",
)
def test_unicode_punctuation_tolerance(session, disk):
    text = "title = \u201cHello\u201d \u2013 world\nnote = \u2018a\u00a0b\u2019\nend = 1\n"
    _prepared(session, disk, "u.py", text)
    session.apply_patch(
        _patch(
            "*** Update File: u.py\n@@\n title = \"Hello\" - world\n-note = 'a b'\n+note = 'c'\n"
        )
    )
    expected = "title = \u201cHello\u201d \u2013 world\nnote = 'c'\nend = 1\n"
    assert disk.read("u.py") == expected.encode()


@clause(
    "PATCH-047",
    MUST,
    requires={"apply_patch"},
    text="Every line of a tolerantly matched hunk that no '-' line removes keeps the file's own "
    "bytes: context before, between and after the changes, whatever comparison matched it "
    "(trailing whitespace, surrounding whitespace, Unicode punctuation).",
    rationale="A patcher that writes back the patch's spelling of the context rewrites lines "
    "the patch never changed: trailing blanks, tabs and typographic quotes are lost in the "
    "diff of the next commit.",
)
def test_tolerant_context_keeps_file_bytes(session, disk):
    cases = (
        (  # trailing whitespace
            "a = 1  \nb = 2\nc = 3\t\nd = 4\ne = 5 \n",
            "@@\n a = 1\n-b = 2\n+B = 2\n c = 3\n-d = 4\n+D = 4\n e = 5\n",
            "a = 1  \nB = 2\nc = 3\t\nD = 4\ne = 5 \n",
        ),
        (  # surrounding whitespace
            "\tif a:\n\t\tx()\n\tif b:\n\t\ty()\n\tend()\n",
            "@@\n    if a:\n-        x()\n+        X()\n    if b:\n-        y()\n"
            "+        Y()\n    end()\n",
            None,
        ),
        (  # Unicode punctuation
            "s = \u201ca\u201d\nt = 1\nu = \u2018b\u2019 \u2013 c\n",
            "@@\n s = \"a\"\n-t = 1\n+t = 2\n u = 'b' - c\n",
            "s = \u201ca\u201d\nt = 2\nu = \u2018b\u2019 \u2013 c\n",
        ),
    )
    for index, (text, hunk, expected) in enumerate(cases):
        rel = f"case{index}.txt"
        _prepared(session, disk, rel, text)
        session.apply_patch(_patch(f"*** Update File: {rel}\n{hunk}"))
        if expected is not None:
            assert disk.read(rel) == expected.encode(), f"case {index}: {disk.read(rel)!r}"
            continue
        lines = disk.read(rel).decode().split("\n")
        assert [lines[0], lines[2], lines[4]] == ["\tif a:", "\tif b:", "\tend()"], (
            f"a context line on disk lost the file's own indentation: {lines!r}"
        )
        assert [lines[1].strip(), lines[3].strip()] == ["X()", "Y()"], f"on disk: {lines!r}"


@clause(
    "PATCH-016",
    MUST,
    requires={"apply_patch"},
    text="The comparisons are tried in order (exact, then trailing whitespace, then surrounding "
    "whitespace, then Unicode punctuation) and the first that finds the context decides: a "
    "single exact match wins over fuzzy matches elsewhere.",
    rationale="A tolerant comparison must never turn a unique exact match into an ambiguity, "
    "or pick a fuzzy place over the exact one.",
)
def test_exact_match_wins(session, disk):
    _prepared(session, disk, "x.py", "x = 1  \ny = 2\nx = 1\n")
    session.apply_patch(_patch("*** Update File: x.py\n@@\n-x = 1\n+x = 9\n"))
    assert disk.read("x.py") == b"x = 1  \ny = 2\nx = 9\n"


@clause(
    "PATCH-017",
    MUST,
    requires={"apply_patch"},
    text="Context that matches in several places under the first comparison that finds it at "
    "all is AMBIGUOUS, and nothing changes.",
    rationale="Ambiguity under a tolerance is still ambiguity; choosing one silently is a coin "
    "toss.",
)
def test_fuzzy_ambiguity(session, disk):
    _control(session, disk)
    _prepared(session, disk, "x.py", "x = 1  \ny = 2\nx = 1\t\n")
    before = disk.snapshot()
    with raises_code("AMBIGUOUS"):
        session.apply_patch(_patch("*** Update File: x.py\n@@\n-x = 1\n+x = 9\n"))
    disk.assert_unchanged(before)


@clause(
    "PATCH-018",
    MUST,
    requires={"apply_patch"},
    text="Context that matches nowhere under any of the comparisons is NO_MATCH, however "
    "similar a line of the file is: there is no 'most similar' match, and nothing changes.",
    rationale="Similarity matching applies a hunk written for other code to the wrong lines; "
    "a clean NO_MATCH makes the agent re-read.",
)
def test_never_most_similar(session, disk):
    _control(session, disk)
    _prepared(session, disk, "calc.py", "total = compute(a, b)\nprint(total)\n")
    before = disk.snapshot()
    for hunk in (
        "@@\n-total = compute(a, c)\n+total = compute(a, d)\n",
        "@@\n total = compute(a, b)\n-print(totals)\n+print(total + 1)\n",
    ):
        with raises_code("NO_MATCH"):
            session.apply_patch(_patch("*** Update File: calc.py\n" + hunk))
    disk.assert_unchanged(before)


# -- newlines, BOM, final newline ------------------------------------------------------------


@clause(
    "PATCH-019",
    MUST,
    requires={"apply_patch"},
    text="Updating a CRLF file keeps CRLF: untouched lines keep their bytes and added lines end "
    "in CRLF.",
    rationale="Patch text has LF lines; writing them into a CRLF file mixes line endings and "
    "rewrites the file in the diff of every later change.",
)
def test_crlf_is_kept(session, disk):
    _prepared(session, disk, "win.txt", b"a\r\nb\r\nc\r\n")
    session.apply_patch(_patch("*** Update File: win.txt\n@@\n a\n-b\n+B\n+B2\n"))
    assert disk.read("win.txt") == b"a\r\nB\r\nB2\r\nc\r\n"


@clause(
    "PATCH-020",
    MUST,
    requires={"apply_patch"},
    text="Updating a file with a UTF-8 byte order mark keeps the mark.",
    rationale="Dropping the BOM changes how some compilers and editors read the file.",
)
def test_bom_is_kept(session, disk):
    _prepared(session, disk, "bom.txt", b"\xef\xbb\xbffirst\nsecond\n")
    session.apply_patch(_patch("*** Update File: bom.txt\n@@\n first\n-second\n+2nd\n"))
    assert disk.read("bom.txt") == b"\xef\xbb\xbffirst\n2nd\n"


@clause(
    "PATCH-021",
    MUST,
    requires={"apply_patch"},
    text="Whether a file ends with a newline is kept: a file without a final newline gets none "
    "when its last line is changed, and a file with one keeps it.",
    rationale="Adding or removing the final newline is a change the patch did not ask for, "
    "and breaks files whose consumers count bytes.",
)
def test_final_newline_is_kept(session, disk):
    _prepared(session, disk, "open.txt", "a\nb")
    _prepared(session, disk, "closed.txt", "a\nb\n")
    session.apply_patch(
        _patch(
            "*** Update File: open.txt\n@@\n a\n-b\n+B\n"
            "*** Update File: closed.txt\n@@\n a\n-b\n+B\n"
        )
    )
    assert disk.read("open.txt") == b"a\nB"
    assert disk.read("closed.txt") == b"a\nB\n"


# -- syntax and limits --------------------------------------------------------------------


@clause(
    "PATCH-022",
    MUST,
    requires={"apply_patch"},
    text="A malformed patch fails with PATCH_SYNTAX naming the 1-based patch line where it went "
    "wrong, and nothing changes, also when the operations before that line were valid.",
    rationale="The line number is what lets the agent repair its patch instead of rewriting it "
    "blind; applying the valid prefix would be a partial patch.",
)
def test_syntax_error_names_the_line(session, disk):
    _control(session, disk)
    _prepared(session, disk, "a.txt", "a\nb\n")
    before = disk.snapshot()
    cases = (
        ("*** Update File: a.txt\n@@\n-a\nthis is junk\n+A\n", 5),
        ("*** Add File: n.txt\n+x\n*** Frobnicate File: a.txt\n", 4),
        ("*** Add File: n.txt\n+x\n*** Add File: m.txt\nno plus\n", 5),
    )
    for sections, line in cases:
        text = _patch(sections)
        with raises_code("PATCH_SYNTAX") as caught:
            session.apply_patch(text)
        assert caught.exception is not None
        assert _names_line(caught.exception, line), (
            f"the error does not name line {line}: {caught.exception}"
        )
    disk.assert_unchanged(before)


@clause(
    "PATCH-023",
    MUST,
    requires={"apply_patch"},
    text="A text that is neither a Codex patch nor a unified diff (empty, without '*** Begin "
    "Patch', without '*** End Patch', or with no file operation) fails with PATCH_SYNTAX and "
    "nothing changes.",
    rationale="Guessing at a truncated or free-form patch applies something nobody wrote.",
)
def test_not_a_patch(session, disk):
    _control(session, disk)
    before = disk.snapshot()
    for text in (
        "",
        "\n\n",
        "*** Add File: n.txt\n+x\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: n.txt\n+x\n",
        "*** Begin Patch\n*** End Patch\n",
        "please add a file n.txt containing x\n",
    ):
        with raises_code("PATCH_SYNTAX"):
            session.apply_patch(text)
    disk.assert_unchanged(before)


@clause(
    "PATCH-024",
    MUST,
    requires={"apply_patch"},
    text="The patch limits are checked when the patch is parsed, before any file is looked at: "
    "a patch over a limit is TOO_LARGE even when its first operation would fail on its own.",
    rationale="Planning a runaway patch file by file costs the work the limit exists to "
    "prevent, and the error must say the patch is too large, not something incidental.",
)
def test_limits_before_plan(session, disk):
    _control(session, disk)
    before = disk.snapshot()
    sections = "*** Delete File: missing.txt\n" + "".join(
        f"*** Add File: f{index}.txt\n+{index}\n" for index in range(100)
    )
    with raises_code("TOO_LARGE"):
        session.apply_patch(_patch(sections))
    disk.assert_unchanged(before)


# -- preconditions of the plan ------------------------------------------------------------


@clause(
    "PATCH-025",
    MUST,
    requires={"apply_patch"},
    text="'*** Add File:' on a path that exists fails with ALREADY_EXISTS, even after a read, "
    "and nothing changes.",
    rationale="An Add that overwrites loses a file the agent did not know existed.",
)
def test_add_existing_is_refused(session, disk):
    _control(session, disk)
    _prepared(session, disk, "here.txt", "precious\n")
    before = disk.snapshot()
    with raises_code("ALREADY_EXISTS"):
        session.apply_patch(_patch("*** Add File: here.txt\n+replacement\n"))
    disk.assert_unchanged(before)


@clause(
    "PATCH-026",
    MUST,
    requires={"apply_patch"},
    text="A '*** Move to:' onto a path that exists fails with ALREADY_EXISTS and nothing changes.",
    rationale="A rename that clobbers its destination loses that file.",
)
def test_move_onto_existing_is_refused(session, disk):
    _control(session, disk)
    _prepared(session, disk, "src.txt", "source\n")
    _prepared(session, disk, "dst.txt", "destination\n")
    pure = _takes_pure_moves(session, disk)
    before = disk.snapshot()
    for hunks in ("@@\n-source\n+moved\n", *([""] if pure else [])):
        with raises_code("ALREADY_EXISTS"):
            session.apply_patch(_patch(f"*** Update File: src.txt\n*** Move to: dst.txt\n{hunks}"))
    disk.assert_unchanged(before)


@clause(
    "PATCH-027",
    MUST,
    requires={"apply_patch"},
    text="'*** Delete File:' and '*** Update File:' of a path that does not exist fail with "
    "NOT_FOUND and nothing changes.",
    rationale="Reporting success for a file that is not there hides a wrong path.",
)
def test_missing_file_is_not_found(session, disk):
    _control(session, disk)
    pure = _takes_pure_moves(session, disk)
    before = disk.snapshot()
    for section in (
        "*** Delete File: nowhere.txt\n",
        "*** Update File: nowhere.txt\n@@\n-a\n+b\n",
        "*** Update File: nowhere.txt\n*** Move to: somewhere.txt\n@@\n-a\n+b\n",
        *(["*** Update File: nowhere.txt\n*** Move to: somewhere.txt\n"] if pure else []),
    ):
        with raises_code("NOT_FOUND"):
            session.apply_patch(_patch(section))
    disk.assert_unchanged(before)


@clause(
    "PATCH-028",
    MUST,
    requires={"apply_patch"},
    text="A patch that names the same path twice (as written, after '.' and '..' are resolved, "
    "or as a move destination) fails with INVALID_ARGUMENT and nothing changes.",
    rationale="Two operations on one file have no defined order or result; applying both "
    "corrupts it.",
)
def test_same_path_twice(session, disk):
    _control(session, disk)
    _prepared(session, disk, "a.txt", "a\n")
    _prepared(session, disk, "b.txt", "b\n")
    pure = _takes_pure_moves(session, disk)
    before = disk.snapshot()
    for sections in (
        "*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: a.txt\n@@\n-a\n+B\n",
        "*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: ./a.txt\n",
        "*** Add File: new.txt\n+x\n*** Add File: dir/../new.txt\n+y\n",
        "*** Update File: b.txt\n*** Move to: a.txt\n@@\n-b\n+B\n*** Delete File: a.txt\n",
        "*** Update File: a.txt\n*** Move to: c.txt\n@@\n-a\n+A\n*** Add File: c.txt\n+c\n",
        *(
            [
                "*** Update File: b.txt\n*** Move to: a.txt\n*** Delete File: a.txt\n",
                "*** Update File: a.txt\n*** Move to: c.txt\n*** Add File: c.txt\n+c\n",
            ]
            if pure
            else []
        ),
    ):
        with raises_code("INVALID_ARGUMENT"):
            session.apply_patch(_patch(sections))
    disk.assert_unchanged(before)


@clause(
    "PATCH-029",
    SHOULD,
    requires={"apply_patch", "confinement"},
    text="Two names of one file (a symlink inside the root and its target) in one patch count "
    "as the same path twice: INVALID_ARGUMENT, and nothing changes.",
    rationale="Aliases resolve to one canonical file; two hunks through two names are two "
    "unordered writes to it.",
)
def test_alias_twice(session, disk, alias):
    _control(session, disk)
    _prepared(session, disk, "real.txt", "one\ntwo\n")
    alias.symlink("link.txt", "real.txt")
    prepare_change(session, "link.txt")
    before = disk.snapshot()
    with raises_code("INVALID_ARGUMENT"):
        session.apply_patch(
            _patch(
                "*** Update File: real.txt\n@@\n-one\n+ONE\n"
                "*** Update File: link.txt\n@@\n-two\n+TWO\n"
            )
        )
    disk.assert_unchanged(before)


@clause(
    "PATCH-030",
    MUST,
    requires={"apply_patch", "read_before_write"},
    text="Updating, deleting or moving an existing file this session has not read fails with "
    "NOT_READ and nothing changes.",
    rationale="A patch written from memory of a file is a blind overwrite in disguise.",
)
def test_unread_file_is_refused(session, disk):
    _control(session, disk)
    pure = _takes_pure_moves(session, disk)
    disk.write("a.txt", "a\nb\n")
    before = disk.snapshot()
    for section in (
        "*** Update File: a.txt\n@@\n-a\n+A\n",
        "*** Delete File: a.txt\n",
        "*** Update File: a.txt\n*** Move to: z.txt\n@@\n-a\n+A\n",
        *(["*** Update File: a.txt\n*** Move to: z.txt\n"] if pure else []),
    ):
        with raises_code("NOT_READ"):
            session.apply_patch(_patch(section))
    disk.assert_unchanged(before)


@clause(
    "PATCH-031",
    MUST,
    requires={"read", "apply_patch", "read_before_write"},
    text="A partial read (a line range) or another session's read does not authorize a patch "
    "of the file: NOT_READ.",
    rationale="The agent that saw lines 1-10 does not know what its hunk context misses; "
    "another session's read says nothing about this one's knowledge.",
)
def test_partial_or_foreign_read_is_not_enough(session, other_session, disk):
    _control(session, disk)
    disk.write("a.txt", "".join(f"line {i}\n" for i in range(1, 41)))
    session.read("a.txt", start_line=1, end_line=10)
    other_session.read("a.txt")
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.apply_patch(_patch("*** Update File: a.txt\n@@\n-line 2\n+line two\n"))
    disk.assert_unchanged(before)


@clause(
    "PATCH-032",
    MUST,
    requires={"apply_patch", "stale_detection"},
    text="Updating, deleting or moving a file that changed on disk since this session read it "
    "fails with STALE, and the other writer's bytes stay.",
    rationale="A patch planned against old content silently reverts the concurrent change.",
)
def test_stale_file_is_refused(session, disk, external):
    _control(session, disk)
    pure = _takes_pure_moves(session, disk)
    for section, name in (
        ("*** Update File: {}\n@@\n-a\n+A\n", "u.txt"),
        ("*** Delete File: {}\n", "d.txt"),
        ("*** Update File: {}\n*** Move to: moved.txt\n@@\n-a\n+A\n", "m.txt"),
        *([("*** Update File: {}\n*** Move to: moved.txt\n", "p.txt")] if pure else []),
    ):
        _prepared(session, disk, name, "a\nb\n")
        external.modify_same_size_same_mtime(name, "a\nc\n")
        before = disk.snapshot()
        with raises_code("STALE"):
            session.apply_patch(_patch(section.format(name)))
        disk.assert_unchanged(before)
        assert disk.read(name) == b"a\nc\n"


@clause(
    "PATCH-033",
    MUST,
    requires={"apply_patch", "confinement"},
    text="A patch that names a path outside the workspace (to add, update, delete, or as a move "
    "destination) fails with OUTSIDE_WORKSPACE and nothing changes, inside the root or out.",
    rationale="A patch is as able to escape the root as a write; one escaping operation must "
    "not let the others through either.",
)
def test_outside_paths_are_refused(session, disk):
    _control(session, disk)
    _prepared(session, disk, "a.txt", "a\n")
    pure = _takes_pure_moves(session, disk)
    (disk.outside / "victim.txt").write_bytes(b"victim\n")
    before = disk.snapshot()
    victim = os.path.join(disk.outside, "victim.txt")
    for sections in (
        "*** Add File: ../outside/evil.txt\n+evil\n",
        f"*** Update File: {victim}\n@@\n-victim\n+owned\n",
        "*** Delete File: ../outside/victim.txt\n",
        "*** Update File: a.txt\n*** Move to: ../outside/a.txt\n@@\n-a\n+A\n",
        *(["*** Update File: a.txt\n*** Move to: ../outside/a.txt\n"] if pure else []),
        "*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: ../ws_evil/x.txt\n+x\n",
    ):
        with raises_code("OUTSIDE_WORKSPACE"):
            session.apply_patch(_patch(sections))
    disk.assert_unchanged(before)


# -- all or nothing -----------------------------------------------------------------------


@clause(
    "PATCH-034",
    MUST,
    requires={"apply_patch"},
    text="A patch whose later operation fails (NO_MATCH, AMBIGUOUS, NOT_FOUND, ALREADY_EXISTS, "
    "and NOT_READ or STALE for a tool that declares read-before-write or stale detection) "
    "changes no file at all: the earlier updates, deletions, additions and moves are not "
    "applied.",
    rationale="A half-applied refactoring (the function renamed, its callers not) is worse "
    "than none: the code no longer builds and the agent does not know why.",
)
def test_later_failure_leaves_earlier_files(session, disk, external):
    _control(session, disk)
    _prepared(session, disk, "first.py", "def run():\n    pass\n")
    _prepared(session, disk, "victim.txt", "delete me\n")
    _prepared(session, disk, "mover.txt", "move me\n")
    _prepared(session, disk, "dup.txt", "x\nx\n")
    good = (
        "*** Update File: first.py\n@@\n-def run():\n+def start():\n"
        "*** Delete File: victim.txt\n"
        "*** Add File: added/new.txt\n+new\n"
        "*** Update File: mover.txt\n*** Move to: moved/mover.txt\n@@\n-move me\n+moved\n"
    )
    failures = [
        ("*** Update File: dup.txt\n@@\n-y\n+z\n", "NO_MATCH"),
        ("*** Update File: dup.txt\n@@\n-x\n+z\n", "AMBIGUOUS"),
        ("*** Delete File: missing.txt\n", "NOT_FOUND"),
        ("*** Add File: dup.txt\n+z\n", "ALREADY_EXISTS"),
    ]
    if _declares(session, "read_before_write"):
        disk.write("unread.txt", "u\n")
        failures.append(("*** Update File: unread.txt\n@@\n-u\n+v\n", "NOT_READ"))
    if _declares(session, "stale_detection"):
        _prepared(session, disk, "stale.txt", "old\n")
        external.modify_same_size_same_mtime("stale.txt", "new\n")
        failures.append(("*** Update File: stale.txt\n@@\n-new\n+newer\n", "STALE"))
    before = disk.snapshot()
    for bad, code in failures:
        with raises_code(code):
            session.apply_patch(_patch(good + bad))
        disk.assert_unchanged(before)


@clause(
    "PATCH-035",
    MUST,
    requires={"apply_patch"},
    text="A patch leaves no temporary, stage or backup file in the workspace, after success and "
    "after failure.",
    rationale="Leftover side files show up in git status, in builds and in the next glob.",
)
def test_no_leftovers(session, disk):
    _prepared(session, disk, "a.txt", "a\n")
    _prepared(session, disk, "b.txt", "b\n")
    _prepared(session, disk, "c.txt", "c\n")
    session.apply_patch(
        _patch(
            "*** Update File: a.txt\n@@\n-a\n+A\n"
            "*** Delete File: b.txt\n"
            "*** Update File: c.txt\n*** Move to: sub/c.txt\n@@\n-c\n+C\n"
            "*** Add File: sub/d.txt\n+d\n"
        )
    )
    disk.assert_no_leftovers()
    assert disk.tree() == {"a.txt": b"A\n", "sub/c.txt": b"C\n", "sub/d.txt": b"d\n"}
    with raises_code("NO_MATCH"):
        session.apply_patch(
            _patch("*** Update File: a.txt\n@@\n-A\n+AA\n*** Update File: sub/d.txt\n@@\n-x\n+y\n")
        )
    disk.assert_no_leftovers()
    assert disk.tree() == {"a.txt": b"A\n", "sub/c.txt": b"C\n", "sub/d.txt": b"d\n"}


# -- the result and what follows it ------------------------------------------------------


@clause(
    "PATCH-036",
    MUST,
    requires={"apply_patch"},
    text="The result lists one change per file operation, in patch order, each with path, op, "
    "move_to, old and new sha256 of the file's bytes, and a unified diff of its text.",
    rationale="The host shows the agent and the user what changed and verifies it by hash.",
)
def test_result_describes_every_change(session, disk):
    _prepared(session, disk, "u.txt", "one\ntwo\n")
    _prepared(session, disk, "d.txt", "dead\n")
    _prepared(session, disk, "m.txt", "mobile\n")
    result = session.apply_patch(
        _patch(
            "*** Update File: u.txt\n@@\n one\n-two\n+TWO\n"
            "*** Add File: n.txt\n+born\n"
            "*** Delete File: d.txt\n"
            "*** Update File: m.txt\n*** Move to: mm.txt\n@@\n-mobile\n+moved\n"
        )
    )
    assert_fields(result, "PatchResult")
    for change in result.changes:
        assert_fields(change, "FileChange")
    assert [(c.path, c.op, c.move_to) for c in result.changes] == [
        ("u.txt", "update", None),
        ("n.txt", "add", None),
        ("d.txt", "delete", None),
        ("m.txt", "move", "mm.txt"),
    ]
    update, add, delete, move = result.changes
    assert (update.old_sha256, update.new_sha256) == (sha256("one\ntwo\n"), sha256("one\nTWO\n"))
    assert (add.old_sha256, add.new_sha256) == (None, sha256("born\n"))
    assert (delete.old_sha256, delete.new_sha256) == (sha256("dead\n"), None)
    assert (move.old_sha256, move.new_sha256) == (sha256("mobile\n"), sha256("moved\n"))
    assert "-two" in update.diff and "+TWO" in update.diff
    assert "+born" in add.diff


@clause(
    "PATCH-037",
    MUST,
    requires={"apply_patch", "edit"},
    text="After a patch the session counts the files it wrote as read at their new content: "
    "a next edit or patch of them needs no read.",
    rationale="Forcing a re-read after every own change doubles the calls of every agent loop.",
)
def test_patched_files_count_as_read(session, disk):
    _prepared(session, disk, "a.txt", "a\n")
    session.apply_patch(_patch("*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: n.txt\n+n\n"))
    session.apply_patch(_patch("*** Update File: a.txt\n@@\n-b\n+c\n"))
    session.edit("n.txt", [EditSpec("n", "m")])
    assert disk.read("a.txt") == b"c\n"
    assert disk.read("n.txt") == b"m\n"
    if _declares(session, "read_before_write"):
        # The same calls on a file the session never read are refused: the reads above
        # were really needed, and the patch is what made them unnecessary.
        disk.write("unread.txt", "u\n")
        with raises_code("NOT_READ"):
            session.edit("unread.txt", [EditSpec("u", "v")])
        with raises_code("NOT_READ"):
            session.apply_patch(_patch("*** Update File: unread.txt\n@@\n-u\n+v\n"))
        assert disk.read("unread.txt") == b"u\n"


@clause(
    "PATCH-038",
    MUST,
    requires={"apply_patch"},
    text="Updating a file keeps its permission bits, and a moved file keeps them at its new path.",
    rationale="A patch published through a new file must not make scripts lose their "
    "executable bit or private files become readable.",
)
def test_mode_bits_are_kept(session, disk):
    _prepared(session, disk, "run.sh", "#!/bin/sh\necho a\n")
    os.chmod(disk.path("run.sh"), 0o755)
    _prepared(session, disk, "secret.env", "KEY=a\n")
    os.chmod(disk.path("secret.env"), 0o600)
    session.apply_patch(
        _patch(
            "*** Update File: run.sh\n@@\n-echo a\n+echo b\n"
            "*** Update File: secret.env\n*** Move to: private/secret.env\n@@\n-KEY=a\n+KEY=b\n"
        )
    )
    assert disk.mode("run.sh") == 0o755
    assert disk.mode("private/secret.env") == 0o600


@clause(
    "PATCH-039",
    MUST,
    requires={"apply_patch", "confinement"},
    text="Updating a file through a symlink inside the root that points to a file inside the "
    "root changes the target's bytes and keeps the link a link.",
    rationale="Replacing the link with a regular file silently forks the two names.",
)
def test_update_through_symlink(session, disk, alias):
    _prepared(session, disk, "real.txt", "value = 1\n")
    alias.symlink("link.txt", "real.txt")
    prepare_change(session, "link.txt")
    session.apply_patch(_patch("*** Update File: link.txt\n@@\n-value = 1\n+value = 2\n"))
    assert disk.is_symlink("link.txt")
    assert disk.read("real.txt") == b"value = 2\n"


# -- unified diffs ------------------------------------------------------------------------


@clause(
    "PATCH-040",
    MUST,
    requires={"apply_patch"},
    text="A unified diff (diff -u output) is accepted as a patch and applied like the Codex "
    "format.",
    rationale="Agents and humans produce unified diffs as often as Codex patches.",
)
def test_unified_diff(session, disk):
    _prepared(session, disk, "mod.py", CODE)
    diff = (
        "--- mod.py\t2024-01-01 00:00:00.000000000 +0000\n"
        "+++ mod.py\t2024-01-01 00:00:01.000000000 +0000\n"
        "@@ -1,4 +1,4 @@\n"
        "-import os\n"
        "+import sys\n"
        " \n"
        " def alpha():\n"
        "     value = 1\n"
    )
    result = session.apply_patch(diff)
    assert disk.read("mod.py") == CODE.replace("import os", "import sys").encode()
    assert [(c.path, c.op) for c in result.changes] == [("mod.py", "update")]


@clause(
    "PATCH-041",
    MUST,
    requires={"apply_patch"},
    text="A git diff with 'new file mode' and 'deleted file mode' sections (against /dev/null) "
    "creates and deletes those files.",
    rationale="git diff is the format agents copy from repositories and reviews.",
)
def test_git_diff_new_and_deleted(session, disk):
    _prepared(session, disk, "old.txt", "x\ny\n")
    diff = (
        "diff --git a/new.txt b/new.txt\n"
        "new file mode 100644\n"
        "index 0000000..814f4a4\n"
        "--- /dev/null\n"
        "+++ b/new.txt\n"
        "@@ -0,0 +1,2 @@\n"
        "+one\n"
        "+two\n"
        "diff --git a/old.txt b/old.txt\n"
        "deleted file mode 100644\n"
        "index 8c7e5a6..0000000\n"
        "--- a/old.txt\n"
        "+++ /dev/null\n"
        "@@ -1,2 +0,0 @@\n"
        "-x\n"
        "-y\n"
    )
    result = session.apply_patch(diff)
    assert disk.read("new.txt") == b"one\ntwo\n"
    assert not disk.exists("old.txt")
    assert sorted((c.path, c.op) for c in result.changes) == [
        ("new.txt", "add"),
        ("old.txt", "delete"),
    ]


@clause(
    "PATCH-042",
    MUST,
    requires={"apply_patch"},
    text="A git diff rename ('rename from' / 'rename to', with or without hunks) moves the file, "
    "applying its hunks on the way.",
    rationale="Renames are where naive diff appliers create a copy and leave the original.",
)
def test_git_diff_rename(session, disk):
    _prepared(session, disk, "src.txt", "one\ntwo\nthree\n")
    _prepared(session, disk, "p.txt", "pure\n")
    diff = (
        "diff --git a/src.txt b/dst.txt\n"
        "similarity index 80%\n"
        "rename from src.txt\n"
        "rename to dst.txt\n"
        "index 4cb29ea..7e2f2f1 100644\n"
        "--- a/src.txt\n"
        "+++ b/dst.txt\n"
        "@@ -1,3 +1,3 @@\n"
        " one\n"
        "-two\n"
        "+TWO\n"
        " three\n"
        "diff --git a/p.txt b/q.txt\n"
        "similarity index 100%\n"
        "rename from p.txt\n"
        "rename to q.txt\n"
    )
    session.apply_patch(diff)
    assert disk.tree() == {"dst.txt": b"one\nTWO\nthree\n", "q.txt": b"pure\n"}


@clause(
    "PATCH-043",
    MUST,
    requires={"apply_patch"},
    text="A unified diff goes through the same plan as a Codex patch: a file it updates must "
    "have been read (NOT_READ, for a tool that declares read-before-write), and a failing "
    "later file leaves the earlier ones untouched.",
    rationale="A second input format must not be a second, weaker set of rules.",
)
def test_unified_diff_same_rules(session, disk):
    _control(session, disk)
    _prepared(session, disk, "a.txt", "a\n")
    disk.write("b.txt", "b\n")
    before = disk.snapshot()
    two_files = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n"
        "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-{old}\n+B\n"
    )
    if _declares(session, "read_before_write"):
        with raises_code("NOT_READ"):
            session.apply_patch(two_files.format(old="b"))
        disk.assert_unchanged(before)
        prepare_change(session, "b.txt")
    with raises_code("NO_MATCH"):
        session.apply_patch(two_files.format(old="not there"))
    disk.assert_unchanged(before)


@clause(
    "PATCH-044",
    MUST,
    requires={"apply_patch"},
    text="A unified diff's '\\ No newline at end of file' markers are honoured: the file ends "
    "with or without a final newline as the new side says.",
    rationale="Ignoring the marker adds or drops a final newline the diff was explicit about.",
)
def test_unified_no_newline_marker(session, disk):
    _prepared(session, disk, "a.txt", "one\ntwo\n")
    session.apply_patch(
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n"
        " one\n-two\n+TWO\n\\ No newline at end of file\n"
    )
    assert disk.read("a.txt") == b"one\nTWO"
    session.apply_patch(
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-TWO\n\\ No newline at end of file\n+2\n"
    )
    assert disk.read("a.txt") == b"one\n2\n"


@clause(
    "PATCH-045",
    SHOULD,
    requires={"apply_patch"},
    text="A unified hunk whose context is found once, at another line than its header says, "
    "applies where the context is.",
    rationale="Line numbers in a diff go stale as soon as the file gains a line above; the "
    "context is what identifies the place.",
)
def test_unified_offset(session, disk):
    _prepared(session, disk, "a.txt", "new first\nnew second\none\ntwo\nthree\n")
    session.apply_patch("--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")
    assert disk.read("a.txt") == b"new first\nnew second\none\nTWO\nthree\n"


@clause(
    "PATCH-046",
    SHOULD,
    requires={"apply_patch"},
    text="'*** Add File:' with no '+' lines creates an empty file.",
    rationale="Empty marker files (__init__.py, .gitkeep) are added this way.",
)
def test_add_empty_file(session, disk):
    session.apply_patch(_patch("*** Add File: pkg/__init__.py\n*** Add File: b.txt\n+b\n"))
    assert disk.read("pkg/__init__.py") == b""
    assert disk.read("b.txt") == b"b\n"
