"""Tests of ``_patch_plan.apply_hunks``: placing hunks in a file's text, in memory."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference._errors import AMBIGUOUS, NO_MATCH, ToolError
from editspec.reference._limits import Limits
from editspec.reference.patch._patch_parse import FileOp, Hunk, parse_patch
from editspec.reference.patch._patch_plan import apply_hunks, split_lines
from tests.reference import patch_render


def update_op(patch: str) -> FileOp:
    (op,) = parse_patch(patch, Limits()).ops
    return op


def codex_hunks(*lines: str) -> tuple[Hunk, ...]:
    body = "\n".join(["*** Begin Patch", "*** Update File: f", *lines, "*** End Patch"])
    return update_op(body).hunks


def apply(text: str, *lines: str) -> str:
    new_text, _ = apply_hunks(text, codex_hunks(*lines), path="f")
    return new_text


def apply_diff(text: str, diff: str) -> tuple[str, tuple[str, ...]]:
    return apply_hunks(text, update_op(diff).hunks, path="f")


def fails(code: str, text: str, *lines: str) -> ToolError:
    with pytest.raises(ToolError) as info:
        apply(text, *lines)
    assert info.value.code == code, info.value
    return info.value


# --------------------------------------------------------------------------- basics


def test_replace_insert_delete() -> None:
    text = "one\ntwo\nthree\nfour\n"
    assert apply(text, "@@", " one", "-two", "+2", " three") == "one\n2\nthree\nfour\n"
    assert apply(text, "@@", " two", "+2.5", " three") == "one\ntwo\n2.5\nthree\nfour\n"
    assert apply(text, "@@", "-one", "-two") == "three\nfour\n"
    assert apply(text, "@@", "-one", "-two", "-three", "-four") == ""


def test_hunks_apply_in_order_after_each_other() -> None:
    text = "a\nx\nb\nx\n"
    # Alone, "-x" would be ambiguous; after the first hunk only one x is left to match.
    assert apply(text, "@@", " a", "-x", "+A", "@@", "-x", "+B") == "a\nA\nb\nB\n"
    fails(AMBIGUOUS, text, "@@", "-x", "+B")
    # A hunk is looked for only after the previous one.
    error = fails(NO_MATCH, "a\nb\nc\n", "@@", "-c", "+C", "@@", "-a", "+A")
    assert (error.details["hunk"], error.details["context"], error.details["line"]) == (2, "a", 6)


def test_no_match_names_the_patch_line_and_the_first_context_line() -> None:
    error = fails(NO_MATCH, "a\nb\n", "@@", " a", "-zzz", "+y")
    assert error.details == {
        "path": "f",
        "hunk": 1,
        "line": 3,
        "context": "a",
        "searched_from": 1,
    }
    assert "patch line 3" in error.message and "'a'" in error.message


def test_every_line_of_the_context_must_match() -> None:
    fails(NO_MATCH, "a\nb\nx\nc\n", "@@", " x", "-a")
    fails(NO_MATCH, "y\nx\n", "@@", " x", "-y")  # would run past the end
    assert apply("x\na\nx\nc\n", "@@", " x", "-c") == "x\na\nx\n"


def test_never_most_similar() -> None:
    fails(NO_MATCH, "def handler(request):\n    pass\n", "@@", "-def handle(request):", "+x")


# --------------------------------------------------------------------------- strategies


def test_strategies_in_order_with_a_warning_for_the_tolerant_ones() -> None:
    text = "keep  \n\tindented\nsay \u201chi\u201d \u2014 ok\n"
    new_text, warnings = apply_hunks(
        text,
        codex_hunks("@@", "-keep", "+kept", "@@", "-indented", "+dedented", "@@", '-say "hi" - ok'),
        path="f",
    )
    assert new_text == "kept\ndedented\n"
    assert [w.split("tolerance")[0].rsplit("the ", 1)[1] for w in warnings] == [
        "trailing whitespace ",
        "surrounding whitespace ",
        "unicode punctuation ",
    ]
    assert "f: hunk 1 (patch line 3): matched at line 1" in warnings[0]


def test_an_exact_match_beats_an_earlier_tolerant_one() -> None:
    assert apply("x  \nx\n", "@@", "-x", "+y") == "x  \ny\n"


def test_context_keeps_the_files_own_bytes_when_matched_tolerantly() -> None:
    text = "a  \r\n  b\r\nc\r\n"
    assert apply(text, "@@", " a", " b", "-c", "+C") == "a  \r\n  b\r\nC\r\n"


def test_unicode_punctuation_covers_dashes_quotes_and_spaces() -> None:
    text = "x = \u2018a\u2019 \u2013 \u201cb\u201d \u00a0\u2014 c\u2009d\n"
    assert apply(text, "@@", "-x = 'a' - \"b\"  - c d", "+ok") == "ok\n"


# --------------------------------------------------------------------------- ambiguity


def test_context_matching_twice_is_ambiguous() -> None:
    error = fails(AMBIGUOUS, "a\nx\nb\nx\n", "@@", "-x", "+y")
    assert (error.details["matches"], error.details["line"], error.details["strategy"]) == (
        (2, 4),
        3,
        "exact",
    )


def test_ambiguity_is_decided_in_the_first_strategy_that_matches() -> None:
    # Two tolerant matches: ambiguous even though they differ from each other.
    error = fails(AMBIGUOUS, "x \nx\t\n", "@@", "-x", "+y")
    assert error.details["strategy"] == "trailing_whitespace"
    # One match under trailing whitespace decides, though the next strategy would find two.
    assert apply("x \n x\n", "@@", "-x", "+y") == "y\n x\n"


def test_a_header_disambiguates() -> None:
    text = "def foo():\n    return 1\ndef bar():\n    return 1\n"
    result = apply(text, "@@ def bar():", "-    return 1", "+    return 2")
    assert result == "def foo():\n    return 1\ndef bar():\n    return 2\n"
    # A header selects the first match after it.
    result = apply(text, "@@ def foo():", "-    return 1", "+    return 0")
    assert result == "def foo():\n    return 0\ndef bar():\n    return 1\n"


def test_nested_headers() -> None:
    text = (
        "class A:\n    def run(self):\n        return 1\n"
        "class B:\n    def run(self):\n        return 1\n"
    )
    result = apply(
        text, "@@ class B:", "@@     def run(self):", "-        return 1", "+        pass"
    )
    assert result.endswith("class B:\n    def run(self):\n        pass\n")
    assert result.count("return 1") == 1


def test_a_header_that_leads_to_two_places_is_ambiguous() -> None:
    text = "def f():\n    return 1\ndef f():\n    return 1\n"
    error = fails(AMBIGUOUS, text, "@@ def f():", "-    return 1", "+    return 2")
    assert error.details["matches"] == (2, 4)
    # ...but not when every occurrence leads to the same place.
    assert apply("h\nh\nx\n", "@@ h", "-x", "+y") == "h\nh\ny\n"


def test_a_missing_header_is_no_match() -> None:
    error = fails(NO_MATCH, "a\n", "@@ def nowhere():", "-a", "+b")
    assert error.details["context"] == "def nowhere():"


# --------------------------------------------------------------------------- end of file


def test_end_of_file_hunk_matches_only_at_the_end() -> None:
    text = "x\ny\nx\n"
    assert apply(text, "@@", "-x", "+z", "*** End of File") == "x\ny\nz\n"
    error = fails(NO_MATCH, text, "@@", "-y", "+z", "*** End of File")
    assert "end of the file" in error.message


def test_end_of_file_hunk_after_its_header() -> None:
    assert apply("h\nx\n", "@@ h", "-x", "+y", "*** End of File") == "h\ny\n"
    error = fails(NO_MATCH, "x\nh\n", "@@ h", "-x", "+y", "*** End of File")
    assert error.details["context"] == "x"


def test_end_of_file_with_a_pure_insertion_appends() -> None:
    assert apply("a\nb\n", "@@", "+c", "*** End of File") == "a\nb\nc\n"


# --------------------------------------------------------------------------- pure insertions


def test_pure_insertion_into_an_empty_file() -> None:
    assert apply("", "@@", "+one", "+two") == "one\ntwo\n"
    assert apply_diff("", "--- f\n+++ f\n@@ -0,0 +1 @@\n+one\n\\ No newline at end of file\n")[
        0
    ] == ("one")


def test_pure_insertion_goes_after_its_header_or_else_at_the_end() -> None:
    text = "import os\n\ndef main():\n    pass\n"
    assert apply(text, "@@ import os", "+import sys") == (
        "import os\nimport sys\n\ndef main():\n    pass\n"
    )
    assert apply(text, "@@", "+main()") == text + "main()\n"
    error = fails(AMBIGUOUS, "h\nx\nh\n", "@@ h", "+y")
    assert error.details["matches"] == (1, 3)


# --------------------------------------------------------------------------- newlines


def test_inserted_lines_take_the_files_newline() -> None:
    assert apply("a\r\nb\r\n", "@@", " a", "+x", " b") == "a\r\nx\r\nb\r\n"
    assert apply("a\nb\n", "@@", " a", "+x", " b") == "a\nx\nb\n"
    # Mixed: the majority; a tie is LF.
    assert apply("a\r\nb\r\nc\n", "@@", " a", "+x") == "a\r\nx\r\nb\r\nc\n"
    assert apply("a\r\nb\n", "@@", " a", "+x") == "a\r\nx\nb\n"
    # No newline at all: LF, and still no final newline.
    assert apply("a", "@@", " a", "+x") == "a\nx"


def test_untouched_lines_keep_their_own_endings() -> None:
    text = "a\r\nb\nc\r\nd\n"
    assert apply(text, "@@", " b", "-c", "+C", " d") == "a\r\nb\nC\nd\n"


def test_the_final_newline_state_is_kept() -> None:
    assert apply("a\nb", "@@", " a", "-b", "+c") == "a\nc"
    assert apply("a\nb", "@@", " b", "+c") == "a\nb\nc"
    assert apply("a\nb\n", "@@", " b", "+c") == "a\nb\nc\n"
    assert apply("a\r\nb", "@@", "-a", "+z") == "z\r\nb"


def test_a_lone_carriage_return_is_content() -> None:
    assert split_lines("a\rb\r\nc") == [("a\rb", "\r\n"), ("c", "")]
    assert apply("a\rb\n", "@@", "-a\rb", "+c") == "c\n"


def test_unified_no_newline_markers_change_the_final_newline() -> None:
    drop = "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"
    assert apply_diff("a\nb\n", drop)[0] == "a\nb"
    add = "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    assert apply_diff("a\nb", add)[0] == "a\nb\n"
    # A unified line is the file's bytes: the added line ends as the diff says (LF), the
    # context line matched only tolerantly keeps its CRLF (git apply would refuse).
    new_text, warnings = apply_diff("a\r\nb", add)
    assert new_text == "a\r\nb\n"
    assert "trailing whitespace tolerance" in warnings[0]
    crlf = "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\r\n-b\n\\ No newline at end of file\n+b\r\n"
    assert apply_diff("a\r\nb", crlf) == ("a\r\nb\r\n", ())


# --------------------------------------------------------------------------- unified hints


def test_unified_hint_breaks_a_tie_between_exact_matches() -> None:
    text = "x\ny\nx\ny\n"
    assert apply_diff(text, "--- f\n+++ f\n@@ -3,2 +3,2 @@\n x\n-y\n+Y\n")[0] == "x\ny\nx\nY\n"
    assert apply_diff(text, "--- f\n+++ f\n@@ -1,2 +1,2 @@\n x\n-y\n+Y\n")[0] == "x\nY\nx\ny\n"
    with pytest.raises(ToolError) as info:
        apply_diff(text, "--- f\n+++ f\n@@ -2,2 +2,2 @@\n x\n-y\n+Y\n")
    assert (info.value.code, info.value.details["matches"]) == (AMBIGUOUS, (1, 3))


def test_unified_hint_does_not_break_a_tie_between_tolerant_matches() -> None:
    with pytest.raises(ToolError) as info:
        apply_diff("x \ny\nx \ny\n", "--- f\n+++ f\n@@ -1,2 +1,2 @@\n x\n-y\n+Y\n")
    assert info.value.code == AMBIGUOUS


def test_unified_single_match_applies_away_from_its_hint_and_the_offset_carries() -> None:
    text = "new1\nnew2\na\nb\nq\nx\ny\nx\ny\n"
    diff = "--- f\n+++ f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -6,2 +6,2 @@\n x\n-y\n+Y\n"
    new_text, warnings = apply_diff(text, diff)
    # Hunk 1 moved by +2 lines; hunk 2's tie is broken at its header's line + 2.
    assert new_text == "new1\nnew2\nA\nb\nq\nx\ny\nx\nY\n"
    assert warnings == (
        "f: hunk 1 (patch line 3): applied at line 3; its header says 1",
        "f: hunk 2 (patch line 7): applied at line 8; its header says 6",
    )


def test_unified_zero_context_insertion_uses_its_line_number() -> None:
    diff = "--- f\n+++ f\n@@ -2,0 +3 @@\n+inserted\n"
    assert apply_diff("a\nb\nc\n", diff)[0] == "a\nb\ninserted\nc\n"
    with pytest.raises(ToolError) as info:
        apply_diff("a\n", diff)
    assert info.value.code == NO_MATCH


def test_unified_deletion_hunks_empty_the_file() -> None:
    (op,) = parse_patch("--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n", Limits()).ops
    assert apply_hunks("a\r\nb", op.hunks, path="f")[0] == ""
    with pytest.raises(ToolError):
        apply_hunks("a\nb\nc\n", op.hunks, path="f")


# --------------------------------------------------------------------------- round trips

_LINE_POOL = ["", "x", "y", "  x", "x  ", "}", "def f():", "\treturn 1", "-- dash", "@@", "*"]
_LINE = st.one_of(
    st.sampled_from(_LINE_POOL),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=6),
)


@st.composite
def edited(draw: st.DrawFn, lines: list[str]) -> list[str]:
    new = list(lines)
    for _ in range(draw(st.integers(0, 5))):
        at = draw(st.integers(0, len(new)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        if action == "insert":
            new[at:at] = draw(st.lists(_LINE, min_size=1, max_size=3))
        elif at < len(new):
            new[at : at + 1] = [] if action == "delete" else [draw(_LINE)]
    return new


def join(lines: list[str], newline: str, final: bool) -> str:
    if lines and not final and lines[-1] == "":
        lines = [*lines[:-1], "end"]  # else the text would end with a newline after all
    return newline.join(lines) + (newline if lines and final else "")


@st.composite
def file_versions(draw: st.DrawFn, *, final_may_change: bool) -> tuple[str, str]:
    lines = draw(st.lists(_LINE, max_size=12))
    new = draw(edited(lines))
    final = draw(st.booleans())
    if lines == [""] and not final:
        lines = []  # the text is "": an empty file
    final = final or not lines  # an empty file counts as ending with a newline
    # Only a file with a line break has a newline style; the others get LF.
    has_break = len(lines) > 1 or (lines and final)
    newline = draw(st.sampled_from(["\n", "\r\n"])) if has_break else "\n"
    new_final = draw(st.booleans()) if final_may_change else final
    return join(lines, newline, final), join(new, newline, new_final)


@given(file_versions(final_may_change=False), st.data())
def test_codex_round_trip(versions: tuple[str, str], data: st.DataObject) -> None:
    old, new = versions
    patch = patch_render.render_codex(
        {"f": old},
        {"f": new},
        context=data.draw(st.integers(0, 3)),
        headers=data.draw(st.integers(0, 2)),
        end_of_file_marker=data.draw(st.booleans()),
        bare_first_hunk=data.draw(st.booleans()),
        crlf=data.draw(st.booleans()),
    )
    if old == new or split_lines(old) == split_lines(new):
        return
    ops = parse_patch(patch, Limits()).ops
    if not ops:  # only the newline style differs, which Codex cannot say
        return
    assert apply_hunks(old, ops[0].hunks, path="f")[0] == new


@given(file_versions(final_may_change=True), st.data())
def test_unified_round_trip(versions: tuple[str, str], data: st.DataObject) -> None:
    old, new = versions
    if old == new:
        return
    patch = patch_render.render_unified(
        {"f": old},
        {"f": new},
        context=data.draw(st.integers(0, 3)),
        git=data.draw(st.booleans()),
        prefixes=data.draw(st.booleans()),
        omit_single_counts=data.draw(st.booleans()),
    )
    (op,) = parse_patch(patch, Limits()).ops
    assert (op.op, op.path) == ("update", "f")
    assert apply_hunks(old, op.hunks, path="f")[0] == new


def apply_tree(old: dict[str, str], patch: str) -> dict[str, str]:
    """Apply a parsed patch to a tree of texts, the way the transaction would."""
    tree = dict(old)
    for op in parse_patch(patch, Limits()).ops:
        if op.op == "add":
            assert op.path not in tree and op.content is not None
            tree[op.path] = op.content
        elif op.op == "delete":
            text = tree.pop(op.path)
            if op.hunks:  # a unified deletion shows the lines it removes
                assert apply_hunks(text, op.hunks, path=op.path)[0] == ""
        else:
            text = tree.pop(op.path)
            tree[op.move_to or op.path] = apply_hunks(text, op.hunks, path=op.path)[0]
    return tree


_PATHS = ["a.txt", "b.txt", "d/c.txt", "d/e/f.py", "g.md"]


@st.composite
def tree_versions(
    draw: st.DrawFn, *, unified: bool
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    old: dict[str, str] = {}
    new: dict[str, str] = {}
    moves: dict[str, str] = {}
    free = [f"moved/{name}" for name in _PATHS]
    for path in _PATHS:
        fate = draw(st.sampled_from(["absent", "same", "edit", "delete", "add", "move"]))
        lines = draw(st.lists(_LINE, min_size=1, max_size=8))
        final = draw(st.booleans()) or lines == [""]  # never "" but as an empty file
        has_break = len(lines) > 1 or final
        newline = draw(st.sampled_from(["\n", "\r\n"])) if has_break else "\n"
        text = join(lines, newline, final)
        changed = join(draw(edited(lines)), newline, draw(st.booleans()) if unified else final)
        if fate in ("same", "edit", "delete", "move"):
            old[path] = text
        if fate == "same":
            new[path] = text
        elif fate == "edit":
            new[path] = changed
        elif fate == "move":
            moves[path] = free.pop(0)
            new[moves[path]] = changed
        elif fate == "add":
            # Added text has LF newlines; in Codex patches it also ends with one.
            new[path] = join(lines, "\n", final or not unified)
    return old, new, moves


@given(tree_versions(unified=False), st.integers(0, 3), st.integers(0, 1))
def test_codex_tree_round_trip(
    trees: tuple[dict[str, str], dict[str, str], dict[str, str]], context: int, headers: int
) -> None:
    old, new, moves = trees
    patch = patch_render.render_codex(old, new, moves=moves, context=context, headers=headers)
    if patch.count("\n") <= 2:
        return  # nothing changed
    assert apply_tree(old, patch) == new


@given(tree_versions(unified=True), st.integers(0, 3))
def test_git_diff_tree_round_trip(
    trees: tuple[dict[str, str], dict[str, str], dict[str, str]], context: int
) -> None:
    old, new, moves = trees
    patch = patch_render.render_unified(old, new, moves=moves, context=context)
    if not patch:
        return
    assert apply_tree(old, patch) == new


@given(st.data())
def test_parsed_mutations_fail_only_with_no_match_or_ambiguous(data: st.DataObject) -> None:
    old, new = data.draw(file_versions(final_may_change=False))
    lines = patch_render.render_codex({"f": old}, {"f": new}, context=1).split("\n")
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(1, max(1, len(lines) - 3)))
        lines.insert(at, data.draw(st.sampled_from([" x", "-x", "+x", "@@ x", "@@", " ", "-"])))
    try:
        ops = parse_patch("\n".join(lines), Limits()).ops
    except ToolError:
        return
    for op in ops:
        try:
            apply_hunks(old, op.hunks, path=op.path)
        except ToolError as error:
            assert error.code in (NO_MATCH, AMBIGUOUS), error


# --------------------------------------------------------------------------- real tools

CASES = [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb\nc", "a\nb\nc\n"),
    ("a\nb\nc\n", "a\nb\nc"),
    ("", "first\nsecond\n"),
    ("only\n", ""),
    ("x\r\ny\r\nz\r\n", "x\r\nnew\r\ny\r\n"),
    ("".join(f"line {n}\n" for n in range(40)), "".join(f"line {n}\n" for n in range(40) if n % 7)),
    ("}\n}\n}\nx\n}\n}\n}\n", "}\n}\n}\ny\n}\n}\n}\n"),
]


def run(*command: str, cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.decode("utf-8")


def write_tree(root: Path, tree: dict[str, str]) -> None:
    for name, text in tree.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())


@pytest.mark.parametrize(("old", "new"), CASES)
def test_git_diff_no_index_output_applies(tmp_path: Path, old: str, new: str) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed on this machine")
    write_tree(tmp_path, {"old.txt": old, "new.txt": new})
    for context in ("-U3", "-U0", "-U1"):
        diff = run("git", "diff", "--no-index", context, "old.txt", "new.txt", cwd=tmp_path)
        if not diff:
            continue
        (op,) = parse_patch(diff, Limits()).ops
        assert (op.path, op.move_to) == ("old.txt", "new.txt")  # git: two names, a rename
        assert apply_hunks(old, op.hunks, path=op.path)[0] == new


@pytest.mark.parametrize(("old", "new"), CASES)
def test_diff_u_output_applies(tmp_path: Path, old: str, new: str) -> None:
    if shutil.which("diff") is None:
        pytest.skip("diff is not installed on this machine")
    write_tree(tmp_path, {"a/f.txt": old, "b/f.txt": new})
    for context in ("-U3", "-U0", "-U1"):
        diff = run("diff", context, "-N", "a/f.txt", "b/f.txt", cwd=tmp_path)
        (op,) = parse_patch(diff, Limits()).ops
        assert (op.op, op.path) == ("update", "f.txt")
        assert apply_hunks(old, op.hunks, path=op.path)[0] == new


OLD_TREE = {
    "keep.txt": "same\n",
    "edit.py": "def f():\n    return 1\n\n\ndef g():\n    return 1\n",
    "gone.txt": "bye\n",
    "move/me.txt": "".join(f"{n}\n" for n in range(20)),
    "crlf.txt": "one\r\ntwo\r\n",
    "tail": "no newline",
}
NEW_TREE = {
    "keep.txt": "same\n",
    "edit.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
    "added.txt": "hello\nworld",
    "empty-added": "",
    "moved/me.txt": "".join(f"{n}\n" for n in range(20) if n != 10),
    "crlf.txt": "one\r\n1.5\r\ntwo\r\n",
    "tail": "no newline\nnow",
}


def test_git_diff_of_a_repository_applies(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed on this machine")
    git = (
        "git",
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "-c",
        "core.autocrlf=false",
    )
    run(*git, "init", "-q", ".", cwd=tmp_path)
    write_tree(tmp_path, OLD_TREE)
    run(*git, "add", "-A", cwd=tmp_path)
    run(*git, "commit", "-q", "-m", "old", cwd=tmp_path)
    for name in OLD_TREE:
        (tmp_path / name).unlink()
    write_tree(tmp_path, NEW_TREE)
    run(*git, "add", "-A", cwd=tmp_path)
    diff = run(*git, "diff", "--cached", "-M", cwd=tmp_path)
    ops = parse_patch(diff, Limits()).ops
    assert {(op.op, op.path, op.move_to) for op in ops} == {
        ("add", "added.txt", None),
        ("add", "empty-added", None),
        ("update", "crlf.txt", None),
        ("update", "edit.py", None),
        ("delete", "gone.txt", None),
        ("update", "move/me.txt", "moved/me.txt"),
        ("update", "tail", None),
    }
    assert apply_tree(OLD_TREE, diff) == NEW_TREE


def test_diff_ruN_of_two_directories_applies(tmp_path: Path) -> None:
    if shutil.which("diff") is None:
        pytest.skip("diff is not installed on this machine")
    old = {k: v for k, v in OLD_TREE.items() if v}  # diff -N cannot tell empty from absent
    new = {k: v for k, v in NEW_TREE.items() if v}
    write_tree(tmp_path / "old", old)
    write_tree(tmp_path / "new", new)
    diff = run("diff", "-ruN", "old", "new", cwd=tmp_path)
    assert apply_tree(old, diff) == new
