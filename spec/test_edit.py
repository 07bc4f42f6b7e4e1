"""EDIT: string replacements with the matching cascade, all or nothing (DESIGN §4 "Edit")."""

from __future__ import annotations

import codecs
import json

from editspec.reference import EditSpec
from editspec.spec import (
    MUST,
    SHOULD,
    assert_fields,
    clause,
    inconclusive,
    prepare_change,
    raises_code,
)
from editspec.spec.fixtures import sha256

CODE = "def greet(name):\n    message = 'hello ' + name\n    return message\n"


def _prepared(session, disk, rel, data):
    """A file on disk that ``session`` may edit (read first if the tool needs it)."""
    disk.write(rel, data)
    prepare_change(session, rel)


def _control(session, disk, rel="control.txt"):
    """Positive control (DESIGN §7): an edit of the same kind, in the same session and path
    style, succeeds and lands, so a refusal that follows is about what the clause tests."""
    _prepared(session, disk, rel, "control = 1\n")
    session.edit(rel, [EditSpec("control = 1", "control = 2")])
    assert disk.read(rel) == b"control = 2\n", "the positive control's edit did not land"


def _exact_strategy_name(session, disk):
    """The name this implementation gives the exact strategy (asked, not assumed)."""
    _prepared(session, disk, "exact-probe.txt", "probe = 1\n")
    result = session.edit("exact-probe.txt", [EditSpec("probe = 1", "probe = 2")])
    return result.replacements[0].matched_by


def _assert_fallback(result, exact_name):
    matched_by = result.replacements[0].matched_by
    assert isinstance(matched_by, str) and matched_by, "the result names no strategy"
    assert matched_by != exact_name, f"a fallback match is reported as {matched_by!r}"


@clause(
    "EDIT-001",
    MUST,
    requires={"edit"},
    text="An old_string that occurs exactly once is replaced by new_string, and every other byte "
    "of the file stays as it was; the result says operation 'patch' and count 1.",
    rationale="This is the edit agents make hundreds of times a day; anything beyond the "
    "replaced span that changes is damage.",
)
def test_unique_exact_match_is_replaced(session, disk):
    _prepared(session, disk, "greet.py", CODE)
    result = session.edit("greet.py", [EditSpec("'hello '", "'hi '")])
    assert disk.read("greet.py") == CODE.replace("'hello '", "'hi '").encode()
    assert result.operation == "patch"
    assert result.replacements[0].count == 1


@clause(
    "EDIT-002",
    MUST,
    requires={"edit"},
    text="Each replacement reports the strategy that matched and the 1-based line of its first "
    "match.",
    rationale="The agent and the reviewer need to know where an edit landed and how loosely "
    "it matched.",
)
def test_replacement_reports_where_and_how(session, disk):
    _prepared(session, disk, "greet.py", CODE)
    result = session.edit("greet.py", [EditSpec("return message", "return message.upper()")])
    replacement = result.replacements[0]
    assert replacement.line == 3
    assert isinstance(replacement.matched_by, str) and replacement.matched_by


@clause(
    "EDIT-003",
    MUST,
    requires={"edit"},
    text="An old_string that matches more than once without replace_all is rejected with "
    "AMBIGUOUS, and the file is unchanged.",
    rationale="Replacing the first of two identical blocks edits the wrong one half the time.",
)
def test_ambiguous_match_is_rejected(session, disk):
    _control(session, disk)
    _prepared(session, disk, "dup.py", "x = 1\ny = 2\nx = 1\n")
    before = disk.snapshot()
    with raises_code("AMBIGUOUS"):
        session.edit("dup.py", [EditSpec("x = 1", "x = 3")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-004",
    MUST,
    requires={"edit"},
    text="replace_all replaces every occurrence and reports their number.",
    rationale="Renames across a file are one call, not a loop of fragile single edits.",
)
def test_replace_all(session, disk):
    text = "foo(1)\nbar(foo)\nfoo\n"
    _prepared(session, disk, "r.py", text)
    result = session.edit("r.py", [EditSpec("foo", "baz", replace_all=True)])
    assert disk.read("r.py") == text.replace("foo", "baz").encode()
    assert result.replacements[0].count == 3


@clause(
    "EDIT-005",
    MUST,
    requires={"edit"},
    text="An old_string that matches nowhere, by any strategy, fails with NO_MATCH and the file "
    "is unchanged.",
    rationale="A non-matching edit must never be applied 'somewhere close'.",
)
def test_no_match(session, disk):
    _control(session, disk)
    _prepared(session, disk, "greet.py", CODE)
    before = disk.snapshot()
    with raises_code("NO_MATCH"):
        session.edit("greet.py", [EditSpec("goodbye(name)", "farewell(name)")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-006",
    MUST,
    requires={"edit"},
    text="old_string equal to new_string fails with NO_CHANGE and the file is unchanged.",
    rationale="An identical replacement is a confused call; reporting success hides the confusion.",
)
def test_identical_strings_are_no_change(session, disk):
    _control(session, disk)
    _prepared(session, disk, "greet.py", CODE)
    before = disk.snapshot()
    with raises_code("NO_CHANGE"):
        session.edit("greet.py", [EditSpec("return message", "return message")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-007",
    MUST,
    requires={"edit"},
    text="An empty old_string on a missing file creates the file with new_string.",
    rationale="Agents create files through Edit; the empty old_string is the convention.",
)
def test_empty_old_string_creates_missing_file(session, disk):
    session.edit("created.py", [EditSpec("", "x = 1\n")])
    assert disk.read("created.py") == b"x = 1\n"
    disk.assert_no_leftovers()


@clause(
    "EDIT-008",
    MUST,
    requires={"edit"},
    text="An empty old_string on an existing empty file fills it with new_string.",
    rationale="Empty placeholder files are filled the same way a missing one is created.",
)
def test_empty_old_string_fills_empty_file(session, disk):
    _prepared(session, disk, "pkg/__init__.py", b"")
    session.edit("pkg/__init__.py", [EditSpec("", "__all__ = []\n")])
    assert disk.read("pkg/__init__.py") == b"__all__ = []\n"


@clause(
    "EDIT-009",
    MUST,
    requires={"edit"},
    text="An empty old_string on a non-empty file fails with INVALID_ARGUMENT and the file is "
    "unchanged.",
    rationale="An empty pattern matches everywhere; treating it as 'overwrite' or 'prepend' "
    "destroys or mangles the file.",
)
def test_empty_old_string_on_non_empty_file(session, disk):
    _control(session, disk)
    _prepared(session, disk, "greet.py", CODE)
    before = disk.snapshot()
    with raises_code("INVALID_ARGUMENT"):
        session.edit("greet.py", [EditSpec("", "x = 1\n")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-010",
    MUST,
    requires={"edit"},
    text="Several edits in one call apply in order, each to the result of the previous one.",
    rationale="Agents chain edits that depend on each other (rename, then use the new name).",
)
def test_edits_apply_in_order(session, disk):
    _prepared(session, disk, "seq.py", "alpha = 1\n")
    session.edit(
        "seq.py",
        [EditSpec("alpha = 1", "beta = 1"), EditSpec("beta = 1", "beta = 2\ngamma = 3")],
    )
    assert disk.read("seq.py") == b"beta = 2\ngamma = 3\n"


@clause(
    "EDIT-011",
    MUST,
    requires={"edit"},
    text="Several edits in one call are all or nothing: if any fails (NO_MATCH, AMBIGUOUS), the "
    "file is unchanged and no edit is applied.",
    rationale="A half-applied refactoring leaves code that neither the old nor the new plan "
    "describes.",
)
def test_edits_are_all_or_nothing(session, disk):
    _control(session, disk)
    _prepared(session, disk, "all.py", "a = 1\nb = 2\nc = 3\nc = 3\n")
    before = disk.snapshot()
    with raises_code("NO_MATCH"):
        session.edit("all.py", [EditSpec("a = 1", "a = 10"), EditSpec("zzz", "yyy")])
    with raises_code("AMBIGUOUS"):
        session.edit(
            "all.py",
            [EditSpec("a = 1", "a = 10"), EditSpec("b = 2", "b = 20"), EditSpec("c = 3", "c = 30")],
        )
    disk.assert_unchanged(before)


@clause(
    "EDIT-012",
    MUST,
    requires={"edit"},
    text="In a CRLF file an old_string written with LF line breaks matches, and the new text is "
    "written with CRLF; every other byte is unchanged.",
    rationale="Models write LF; a CRLF file must neither reject the edit nor get mixed line "
    "endings.",
)
def test_crlf_is_kept(session, disk):
    _prepared(session, disk, "win.txt", b"one\r\ntwo\r\nthree\r\nfour\r\n")
    session.edit("win.txt", [EditSpec("two\nthree", "2\n3\n3.5")])
    assert disk.read("win.txt") == b"one\r\n2\r\n3\r\n3.5\r\nfour\r\n"


@clause(
    "EDIT-013",
    MUST,
    requires={"edit"},
    text="A UTF-8 BOM is kept, and an old_string at the very start of the text matches after it.",
    rationale="Dropping or duplicating a BOM breaks Windows toolchains and shows as a "
    "whole-file diff.",
)
def test_utf8_bom_is_kept(session, disk):
    _prepared(session, disk, "bom.cs", codecs.BOM_UTF8 + b"using System;\nclass A {}\n")
    session.edit("bom.cs", [EditSpec("using System;", "using System.IO;")])
    assert disk.read("bom.cs") == codecs.BOM_UTF8 + b"using System.IO;\nclass A {}\n"


@clause(
    "EDIT-014",
    MUST,
    requires={"edit"},
    text="A UTF-16 file with a BOM stays UTF-16 of the same byte order, with its BOM.",
    rationale="Re-encoding as UTF-8 makes the file unreadable to the tools that wrote it.",
)
def test_utf16_is_kept(session, disk):
    bom = codecs.BOM_UTF16_LE
    _prepared(session, disk, "res.txt", bom + "alpha\r\nbeta\r\n".encode("utf-16-le"))
    session.edit("res.txt", [EditSpec("beta", "gamma")])
    assert disk.read("res.txt") == bom + "alpha\r\ngamma\r\n".encode("utf-16-le")


@clause(
    "EDIT-015",
    MUST,
    requires={"edit"},
    text="An edit of a binary file fails with BINARY and the file is unchanged.",
    rationale="String replacement in bytes that are not text corrupts images, archives and "
    "databases.",
)
def test_binary_file_is_refused(session, disk):
    _control(session, disk)
    _prepared(session, disk, "img.png", b"\x89PNG\r\n\x1a\n\x00\x00IHDR\xff\xfe")
    before = disk.snapshot()
    with raises_code("BINARY"):
        session.edit("img.png", [EditSpec("IHDR", "XXXX")])
    disk.assert_unchanged(before)


NOTEBOOK = json.dumps(
    {
        "cells": [{"cell_type": "code", "source": ["x = 1\n"], "metadata": {}, "outputs": []}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    },
    indent=1,
)


@clause(
    "EDIT-016",
    MUST,
    requires={"edit"},
    text="A string edit of a .ipynb notebook fails with UNSUPPORTED and the file is unchanged.",
    rationale="Replacing text inside notebook JSON breaks its escaping and structure; notebooks "
    "need cell-level editing.",
)
def test_notebook_is_unsupported(session, disk):
    _control(session, disk)
    _prepared(session, disk, "analysis.ipynb", NOTEBOOK)
    before = disk.snapshot()
    with raises_code("UNSUPPORTED"):
        session.edit("analysis.ipynb", [EditSpec("x = 1", "x = 2")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-017",
    MUST,
    requires={"edit"},
    text="When no exact match exists, an old_string that matches once with trailing whitespace "
    "ignored on each line is applied, and the result names a strategy other than the exact one.",
    rationale="Models drop trailing spaces they cannot see; refusing those edits wastes "
    "round trips.",
)
def test_trailing_whitespace_fallback(session, disk):
    exact = _exact_strategy_name(session, disk)
    _prepared(session, disk, "t.py", "def f():\n    return 1   \n    # end\n")
    result = session.edit("t.py", [EditSpec("    return 1\n    # end", "    return 2\n    # end")])
    assert disk.read("t.py") == b"def f():\n    return 2\n    # end\n"
    _assert_fallback(result, exact)


@clause(
    "EDIT-018",
    MUST,
    requires={"edit"},
    text="Straight quotes in old_string match curly quotes in the file, and the new text takes "
    "the file's curly style.",
    rationale="Models normalise typography; the document's quote style must survive the edit.",
)
def test_smart_quotes_fallback(session, disk):
    exact = _exact_strategy_name(session, disk)
    _prepared(session, disk, "doc.md", "He said \u201chello\u201d to them.\n")
    result = session.edit("doc.md", [EditSpec('said "hello"', 'said "goodbye"')])
    assert disk.read("doc.md") == "He said \u201cgoodbye\u201d to them.\n".encode()
    _assert_fallback(result, exact)


@clause(
    "EDIT-019",
    MUST,
    requires={"edit"},
    text='Over-escaped sequences in old_string (a literal backslash-n for a line break, \\" for '
    "a quote) match what they escape.",
    rationale="JSON-in-JSON tool calls double-escape; the intended text is unambiguous.",
)
def test_over_escaped_fallback(session, disk):
    exact = _exact_strategy_name(session, disk)
    _prepared(session, disk, "esc.py", 'first()\nsecond()\nsay("hi")\n')
    result = session.edit("esc.py", [EditSpec("first()\\nsecond()", "both()")])
    assert disk.read("esc.py") == b'both()\nsay("hi")\n'
    _assert_fallback(result, exact)
    session.edit("esc.py", [EditSpec('say(\\"hi\\")', 'say("bye")')])
    assert disk.read("esc.py") == b'both()\nsay("bye")\n'


@clause(
    "EDIT-020",
    MUST,
    requires={"edit"},
    text="An old_string that matches once when runs of spaces and tabs inside lines are read as "
    "one space is applied.",
    rationale="Aligned code (tables, assignments) is retyped by models with single spaces.",
)
def test_whitespace_runs_fallback(session, disk):
    exact = _exact_strategy_name(session, disk)
    _prepared(session, disk, "align.py", "x     = 1\ny\t=\t2\n")
    result = session.edit("align.py", [EditSpec("x = 1", "x = 10")])
    assert disk.read("align.py") == b"x = 10\ny\t=\t2\n"
    _assert_fallback(result, exact)


@clause(
    "EDIT-021",
    MUST,
    requires={"edit"},
    text="Lines whose indentation differs from the file's by one constant offset match, and the "
    "new text is re-indented by the same offset.",
    rationale="Models quote nested code with its indentation stripped; the replacement must "
    "land at the right depth or Python stops parsing.",
)
def test_flexible_indentation(session, disk):
    exact = _exact_strategy_name(session, disk)
    text = "class A:\n    def f(self, x):\n        if x:\n            return 1\n        return 0\n"
    _prepared(session, disk, "ind.py", text)
    result = session.edit("ind.py", [EditSpec("if x:\n    return 1", "if x > 1:\n    return 2")])
    expected = text.replace(
        "        if x:\n            return 1", "        if x > 1:\n            return 2"
    )
    assert disk.read("ind.py") == expected.encode()
    _assert_fallback(result, exact)


@clause(
    "EDIT-022",
    MUST,
    requires={"edit"},
    text="As the last resort, a block of lines whose first and last lines match the file's once "
    "(with a slightly different middle) is replaced as a whole.",
    rationale="Models misremember one line in the middle of a function; anchoring on its first "
    "and last lines still finds the one place meant.",
)
def test_block_anchors(session, disk):
    exact = _exact_strategy_name(session, disk)
    text = "def compute():\n    a = 1\n    b = 2\n    return a + b\n\nprint(compute())\n"
    _prepared(session, disk, "blk.py", text)
    old = "def compute():\n    a = 1\n    b = 3\n    return a + b"
    result = session.edit("blk.py", [EditSpec(old, "def compute():\n    return 42")])
    assert disk.read("blk.py") == b"def compute():\n    return 42\n\nprint(compute())\n"
    _assert_fallback(result, exact)


@clause(
    "EDIT-023",
    MUST,
    requires={"edit"},
    text="A fallback strategy that finds several matches is AMBIGUOUS; it never applies the first.",
    rationale="Loose matching multiplies candidates; picking one silently edits the wrong place.",
)
def test_fallback_ambiguity(session, disk):
    _control(session, disk)
    _prepared(session, disk, "two.py", "a = 1   \nb\nmid\na = 1  \nb\n")
    before = disk.snapshot()
    with raises_code("AMBIGUOUS"):
        session.edit("two.py", [EditSpec("a = 1\nb", "a = 2\nb")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-024",
    MUST,
    requires={"edit"},
    text="An exact match takes precedence: when old_string matches exactly once, looser matches "
    "elsewhere neither make it ambiguous nor get edited.",
    rationale="The cascade only falls through on zero matches; otherwise a precise edit becomes "
    "AMBIGUOUS because of a look-alike.",
)
def test_exact_match_has_precedence(session, disk):
    _prepared(session, disk, "p.py", "x = 1\nx  =  1\n")
    session.edit("p.py", [EditSpec("x = 1", "x = 2")])
    assert disk.read("p.py") == b"x = 2\nx  =  1\n"


@clause(
    "EDIT-025",
    MUST,
    requires={"edit"},
    text="line= chooses, among several matches, the one on that 1-based line.",
    rationale="Agents that know the line number can disambiguate without quoting more context.",
)
def test_line_hint_chooses_among_matches(session, disk):
    _prepared(session, disk, "v.py", "v = 0\nv = 0\nv = 0\n")
    result = session.edit("v.py", [EditSpec("v = 0", "v = 9", line=2)])
    assert disk.read("v.py") == b"v = 0\nv = 9\nv = 0\n"
    assert result.replacements[0].line == 2


@clause(
    "EDIT-026",
    MUST,
    requires={"edit"},
    text="Hints (line, before, after) never make a non-matching edit match: NO_MATCH.",
    rationale="A hint that pulls in 'the nearest similar text' turns a wrong old_string into a "
    "wrong edit.",
)
def test_hints_never_create_a_match(session, disk):
    _control(session, disk)
    _prepared(session, disk, "v.py", "v = 0\nw = 1\n")
    before = disk.snapshot()
    with raises_code("NO_MATCH"):
        session.edit("v.py", [EditSpec("u = 0", "u = 1", line=1)])
    with raises_code("NO_MATCH"):
        session.edit("v.py", [EditSpec("u = 0", "u = 1", before="v = 0")])
    with raises_code("NO_MATCH"):
        session.edit("v.py", [EditSpec("u = 1", "u = 2", after="w = 1")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-027",
    MUST,
    requires={"edit"},
    text="before= (text preceding the match) and after= (text following it) choose among several "
    "matches.",
    rationale="Quoting a unique neighbour is often easier than quoting a unique block.",
)
def test_anchor_hints_choose_among_matches(session, disk):
    text = "[alpha]\nvalue = 1\n[beta]\nvalue = 1\n[gamma]\n"
    _prepared(session, disk, "cfg.ini", text)
    session.edit("cfg.ini", [EditSpec("value = 1", "value = 2", before="[beta]")])
    assert disk.read("cfg.ini") == b"[alpha]\nvalue = 1\n[beta]\nvalue = 2\n[gamma]\n"
    session.edit("cfg.ini", [EditSpec("value = 1", "value = 3", after="[beta]")])
    assert disk.read("cfg.ini") == b"[alpha]\nvalue = 3\n[beta]\nvalue = 2\n[gamma]\n"


@clause(
    "EDIT-028",
    MUST,
    requires={"edit"},
    text="An edit that grows the file more than tenfold succeeds and carries a warning.",
    rationale="Runaway growth is a common symptom of a model pasting a file into itself; the "
    "host should be told.",
)
def test_tenfold_growth_warns(session, disk):
    _prepared(session, disk, "small.txt", "seed = 1\n")
    result = session.edit("small.txt", [EditSpec("seed = 1", "row = 1\n" * 200)])
    assert disk.read("small.txt") == ("row = 1\n" * 200 + "\n").encode()
    assert tuple(result.warnings), "no warning for a more than tenfold growth"


@clause(
    "EDIT-029",
    MUST,
    requires={"edit"},
    text="The result's diff is a unified diff of the change ('-' for removed, '+' for added "
    "lines).",
    rationale="The diff is what the agent and the human review.",
)
def test_edit_diff(session, disk):
    _prepared(session, disk, "greet.py", CODE)
    diff = session.edit("greet.py", [EditSpec("return message", "return message + '!'")]).diff
    lines = diff.splitlines()
    assert "-    return message" in lines, diff
    assert "+    return message + '!'" in lines, diff
    assert any(line.startswith("@@") for line in lines), diff


@clause(
    "EDIT-030",
    MUST,
    requires={"edit"},
    text="Bytes outside the replaced span stay byte-identical: tabs, trailing spaces, Unicode, "
    "and a missing final newline included.",
    rationale="Editors that re-serialise the whole file (strip whitespace, add a final newline) "
    "turn a one-line edit into a noisy diff and break whitespace-sensitive files.",
)
def test_untouched_bytes_are_identical(session, disk):
    text = "\tindented\t \ntrailing   \n# ünïcode ☃ 漢字\nTARGET here\n  \nno final newline"
    _prepared(session, disk, "keep.txt", text)
    session.edit("keep.txt", [EditSpec("TARGET", "DONE")])
    assert disk.read("keep.txt") == text.replace("TARGET", "DONE").encode()


@clause(
    "EDIT-031",
    MUST,
    requires={"edit"},
    text="An edit with a non-empty old_string of a missing file fails with NOT_FOUND and "
    "creates nothing.",
    rationale="Creating a file from an edit that expected content hides a wrong path.",
)
def test_missing_file_is_not_found(session, disk):
    _control(session, disk)
    before = disk.snapshot()
    with raises_code("NOT_FOUND"):
        session.edit("missing.py", [EditSpec("x = 1", "x = 2")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-032",
    MUST,
    requires={"edit"},
    text="An edit of a directory fails with IS_A_DIRECTORY.",
    rationale="The code tells the agent its path is wrong, not its old_string.",
)
def test_directory_is_refused(session, disk):
    _control(session, disk)
    disk.write("pkg/a.py", "x = 1\n")
    before = disk.snapshot()
    with raises_code("IS_A_DIRECTORY"):
        session.edit("pkg", [EditSpec("x = 1", "x = 2")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-033",
    MUST,
    requires={"edit"},
    text="An edit keeps the file's permission bits.",
    rationale="Publishing by rename resets modes unless they are carried over; scripts stop "
    "being executable.",
)
def test_edit_keeps_mode(session, disk):
    disk.write("run.sh", "#!/bin/sh\necho old\n", mode=0o750)
    prepare_change(session, "run.sh")
    session.edit("run.sh", [EditSpec("echo old", "echo new")])
    assert disk.mode("run.sh") == 0o750


@clause(
    "EDIT-034",
    MUST,
    requires={"edit"},
    text="An edit leaves no temporary file behind, whether it succeeds or fails.",
    rationale="Leftover temp files pollute repositories and get committed.",
)
def test_edit_leaves_no_leftovers(session, disk):
    _prepared(session, disk, "greet.py", CODE)
    session.edit("greet.py", [EditSpec("'hello '", "'hey '")])
    disk.assert_no_leftovers()
    before = disk.snapshot()
    with raises_code("NO_MATCH"):
        session.edit("greet.py", [EditSpec("not there", "x")])
    disk.assert_unchanged(before)


@clause(
    "EDIT-035",
    MUST,
    requires={"edit"},
    text="An EditResult carries the fields of the contract (the WriteResult fields, replacements "
    "with count, matched_by and line, and warnings).",
    rationale="Clients are written against field names; a missing one breaks them at run time.",
)
def test_edit_result_fields(session, disk):
    _prepared(session, disk, "greet.py", CODE)
    result = session.edit("greet.py", [EditSpec("'hello '", "'hey '")])
    assert_fields(result, "EditResult")
    assert_fields(result.replacements[0], "Replacement")


@clause(
    "EDIT-036",
    MUST,
    requires={"edit"},
    text="A call with several edits reports one replacement per edit, in order, each with its "
    "own count and line.",
    rationale="The agent must be able to tell which of its edits matched where.",
)
def test_one_replacement_per_edit(session, disk):
    _prepared(session, disk, "m.py", "a = 1\nb = 2\nb = 2\nc = 3\n")
    result = session.edit(
        "m.py",
        [EditSpec("c = 3", "c = 30"), EditSpec("b = 2", "b = 20", replace_all=True)],
    )
    counts = [(r.count, r.line) for r in result.replacements]
    assert counts == [(1, 4), (2, 2)]


@clause(
    "EDIT-037",
    MUST,
    requires={"edit"},
    text="old_string is literal text: regular-expression metacharacters match only themselves.",
    rationale="Treating old_string as a pattern makes '.' and '*' in code match the wrong places.",
)
def test_old_string_is_literal(session, disk):
    _control(session, disk)
    _prepared(session, disk, "re.py", "axxb\n(foo)\n")
    before = disk.snapshot()
    with raises_code("NO_MATCH"):
        session.edit("re.py", [EditSpec("a.*b", "matched")])
    disk.assert_unchanged(before)
    session.edit("re.py", [EditSpec("(foo)", "[bar]")])
    assert disk.read("re.py") == b"axxb\n[bar]\n"


@clause(
    "EDIT-038",
    MUST,
    requires={"edit"},
    text="new_string is literal text: backslashes, '$&', '$1', '\\1' and '\\g<0>' are written as "
    "they are.",
    rationale="Passing new_string as a re.sub or String.replace replacement expands these "
    "sequences and corrupts regexes, shell and LaTeX code.",
)
def test_new_string_is_literal(session, disk):
    _prepared(session, disk, "lit.txt", "value = PLACEHOLDER\n")
    new = r"$& $1 \1 \g<0> \\ \n"
    session.edit("lit.txt", [EditSpec("PLACEHOLDER", new)])
    assert disk.read("lit.txt") == f"value = {new}\n".encode()


@clause(
    "EDIT-039",
    MUST,
    requires={"edit"},
    text="replace_all with no occurrence fails with NO_MATCH.",
    rationale="'Replaced 0 occurrences' reported as success hides a wrong old_string.",
)
def test_replace_all_without_match(session, disk):
    _control(session, disk)
    _prepared(session, disk, "greet.py", CODE)
    before = disk.snapshot()
    with raises_code("NO_MATCH"):
        session.edit("greet.py", [EditSpec("absent_name", "x", replace_all=True)])
    disk.assert_unchanged(before)


@clause(
    "EDIT-040",
    MUST,
    requires={"edit"},
    text="old_sha256 and new_sha256 of an edit are the hashes of the file before and after.",
    rationale="The new hash is the next expected_sha256; the old one proves what was edited.",
)
def test_edit_hashes(session, disk):
    _prepared(session, disk, "greet.py", CODE)
    result = session.edit("greet.py", [EditSpec("'hello '", "'yo '")])
    assert result.old_sha256 == sha256(CODE)
    assert result.new_sha256 == sha256(disk.read("greet.py"))


@clause(
    "EDIT-041",
    MUST,
    requires={"edit"},
    text="In a file with mixed line endings every untouched line keeps its own ending.",
    rationale="Normalising a mixed file on edit rewrites lines the agent never touched.",
)
def test_mixed_endings_are_kept(session, disk):
    data = b"a\r\nb\nTARGET\r\nc\nd\r\n"
    _prepared(session, disk, "mixed.txt", data)
    session.edit("mixed.txt", [EditSpec("TARGET", "DONE")])
    assert disk.read("mixed.txt") == data.replace(b"TARGET", b"DONE")


@clause(
    "EDIT-042",
    SHOULD,
    requires={"edit"},
    text="The UNSUPPORTED error for a notebook points to notebook editing (its message mentions "
    "notebooks).",
    rationale="An agent told only 'unsupported' retries the same edit; one told to use notebook "
    "editing switches tools.",
)
def test_notebook_error_points_to_notebook_editing(session, disk):
    _control(session, disk)
    _prepared(session, disk, "analysis.ipynb", NOTEBOOK)
    before = disk.snapshot()
    with raises_code("UNSUPPORTED") as caught:
        session.edit("analysis.ipynb", [EditSpec("x = 1", "x = 2")])
    disk.assert_unchanged(before)
    assert "notebook" in str(caught.exception).lower()


@clause(
    "EDIT-043",
    SHOULD,
    requires={"edit"},
    text="A hint is only a tie-breaker: an edit that matches once is applied even if its line "
    "hint names another line.",
    rationale="Line numbers drift as a file is edited; a single match is unambiguous anyway.",
)
def test_hint_on_single_match_is_ignored(session, disk):
    _prepared(session, disk, "one.py", "a = 1\nb = 2\n")
    session.edit("one.py", [EditSpec("b = 2", "b = 3", line=1)])
    assert disk.read("one.py") == b"a = 1\nb = 3\n"


@clause(
    "EDIT-044",
    MUST,
    requires={"edit"},
    text="The cascade's order decides: a single match found by an earlier strategy (trailing "
    "whitespace) is applied even when a later strategy (whitespace runs) would match elsewhere.",
    rationale="Running the loose strategies together turns a clear near-match into AMBIGUOUS, "
    "or edits the look-alike.",
)
def test_earlier_strategy_wins(session, disk):
    text = "a = 1   \nb = 2\n\na  =  1\nb = 2\n"
    _prepared(session, disk, "order.py", text)
    session.edit("order.py", [EditSpec("a = 1\nb = 2", "a = 10\nb = 20")])
    assert disk.read("order.py") == b"a = 10\nb = 20\n\na  =  1\nb = 2\n"


@clause(
    "EDIT-045",
    MUST,
    requires={"edit", "python_fs"},
    text="A crash at any step of an edit leaves the file's old or new bytes at its path, never "
    "a truncated or partial file, whether or not the tool detects stale reads; a restarted "
    "implementation edits the file again.",
    rationale="An edit that truncates the file and writes it back in place leaves an empty or "
    "half-written source file when the process is killed in between; atomicity is not a "
    "property of stale detection.",
)
def test_crash_during_edit(disk, crash):
    old = "value = 0\n" + "unchanged line\n" * 4000
    new = "value = 1\n" + "unchanged line\n" * 4000
    valid = {sha256(old), sha256(new)}
    warm = crash.restart().open_session("A")  # warm up: lock and state directories exist
    _prepared(warm, disk, "warmup.txt", "w = 0\n")
    warm.edit("warmup.txt", [EditSpec("w = 0", "w = 1")])

    def prepared():
        live = crash.restart().open_session("A")
        _prepared(live, disk, "a.txt", old)
        return live

    probe = prepared()
    steps = len(crash.count(lambda: probe.edit("a.txt", [EditSpec("value = 0", "value = 1")])))
    assert disk.read("a.txt") == new.encode(), "the unfaulted edit did not land"
    crashed = 0
    for step in range(1, steps + 1):
        live = prepared()
        with crash.at(step) as point:
            live.edit("a.txt", [EditSpec("value = 0", "value = 1")])
        crashed += point.crashed
        assert sha256(disk.read("a.txt")) in valid, f"torn file after a crash at step {step}"
        if not point.crashed:
            assert disk.read("a.txt") == new.encode()
        restarted = crash.restart()
        restarted.recover()
        assert sha256(disk.read("a.txt")) in valid, f"recovery after step {step} tore the file"
        again = restarted.open_session("A")
        current = disk.read("a.txt").decode()
        prepare_change(again, "a.txt")
        again.edit("a.txt", [EditSpec(current.split("\n", 1)[0], "value = 2")])
        assert disk.read("a.txt").startswith(b"value = 2\n"), f"no edit after step {step}"
    if crashed == 0:
        inconclusive("no crash landed inside the edit")
