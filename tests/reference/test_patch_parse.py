"""Tests of ``_patch_parse``: the Codex apply_patch format and unified diffs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference._errors import INVALID_ARGUMENT, PATCH_SYNTAX, TOO_LARGE, ToolError
from editspec.reference._limits import Limits
from editspec.reference.patch._patch_parse import FileOp, Hunk, ParsedPatch, parse_patch
from tests.reference import patch_render

ALLOWED = {PATCH_SYNTAX, TOO_LARGE, INVALID_ARGUMENT}
OPERATION = "'*** Add File: ', '*** Delete File: ', '*** Update File: ' or '*** End Patch'"
HUNK_OR_OPERATION = "a hunk line (' ', '-', '+'), '@@', '*** End of File' or a file operation"
HUNK_HEADER = "a hunk header '@@ -start,count +start,count @@'"
LEFT_1_1 = "1 old and 1 new line(s) for the hunk at line 3"
LEFT_1_0 = "1 old and 0 new line(s) for the hunk at line 3"
NOT_A_PATCH = "'*** Begin Patch' or a unified diff ('--- ' and '+++ ' lines)"


def parse(text: str, **limits: int) -> ParsedPatch:
    return parse_patch(text, Limits(**limits))


def fails(text: str, code: str = PATCH_SYNTAX, **limits: int) -> ToolError:
    with pytest.raises(ToolError) as info:
        parse(text, **limits)
    assert info.value.code == code, info.value
    return info.value


def codex(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def hunk(
    *lines: str,
    headers: tuple[str, ...] = (),
    source_line: int,
    end_of_file: bool = False,
    old_start: int | None = None,
) -> Hunk:
    return Hunk(
        headers=headers,
        lines=tuple((line[0], line[1:]) for line in lines),
        end_of_file=end_of_file,
        old_start=old_start,
        source_line=source_line,
    )


# --------------------------------------------------------------------------- Codex format


def test_codex_patch_with_every_operation() -> None:
    text = codex(
        "*** Add File: src/new.py",
        "+print('hi')",
        "+",
        "*** Delete File: old.txt",
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@ def greet():",
        "-    print('Hi')",
        "+    print('Hello')",
        "*** Update File: README.md",
        "@@",
        " intro",
        "-old",
        "+new",
        "*** End of File",
    )
    assert parse(text) == ParsedPatch(
        format="codex",
        ops=(
            FileOp(
                op="add",
                path="src/new.py",
                move_to=None,
                content="print('hi')\n\n",
                hunks=(),
                source_line=2,
            ),
            FileOp(
                op="delete", path="old.txt", move_to=None, content=None, hunks=(), source_line=5
            ),
            FileOp(
                op="update",
                path="src/app.py",
                move_to="src/main.py",
                content=None,
                hunks=(
                    hunk(
                        "-    print('Hi')",
                        "+    print('Hello')",
                        headers=("def greet():",),
                        source_line=8,
                    ),
                ),
                source_line=6,
            ),
            FileOp(
                op="update",
                path="README.md",
                move_to=None,
                content=None,
                hunks=(hunk(" intro", "-old", "+new", source_line=12, end_of_file=True),),
                source_line=11,
            ),
        ),
    )


def test_nested_headers_and_several_hunks() -> None:
    text = codex(
        "*** Update File: a.py",
        "@@ class B:",
        "@@     def run(self):",
        "-        return 1",
        "+        return 2",
        "@@",
        "-x",
        "+y",
    )
    (op,) = parse(text).ops
    assert op.hunks == (
        hunk(
            "-        return 1",
            "+        return 2",
            headers=("class B:", "def run(self):"),
            source_line=3,
        ),
        hunk("-x", "+y", source_line=7),
    )


def test_first_hunk_may_omit_the_header_line() -> None:
    (op,) = parse(codex("*** Update File: a", " keep", "-x", "+y")).ops
    assert op.hunks == (hunk(" keep", "-x", "+y", source_line=3),)


def test_crlf_patch_text_parses_like_lf() -> None:
    text = codex("*** Add File: a", "+one", "*** Update File: b", "@@ h", " c", "-d", "+e")
    assert parse(text.replace("\n", "\r\n")) == parse(text)


def test_whitespace_around_markers_and_after_the_end_is_tolerated() -> None:
    text = (
        "\n  *** Begin Patch \n  *** Update File: a.txt\n@@\n-one\n+two\n *** End Patch  \n\n  \n"
    )
    (op,) = parse(text).ops
    assert op.path == "a.txt"
    assert op.hunks[0].lines == (("-", "one"), ("+", "two"))


def test_blank_lines_between_operations_and_trailing_bare_lines_are_separators() -> None:
    text = codex(
        "*** Update File: a",
        "",
        "@@",
        " one",
        "",
        " three",
        "-four",
        "",
        "",
        "*** Delete File: b",
    )
    first, second = parse(text).ops
    # A bare empty line inside a hunk is an empty context line; trailing ones separate.
    assert first.hunks[0].lines == ((" ", "one"), (" ", ""), (" ", "three"), ("-", "four"))
    assert second.op == "delete"


def test_bare_empty_lines_before_end_of_file_stay_context() -> None:
    (op,) = parse(codex("*** Update File: a", "@@", "-x", "", "*** End of File")).ops
    assert op.hunks[0].lines == (("-", "x"), (" ", ""))
    assert op.hunks[0].end_of_file


def test_add_file_without_lines_is_empty() -> None:
    (op,) = parse(codex("*** Add File: empty.txt")).ops
    assert op.content == ""


def test_pure_move_needs_no_hunk() -> None:
    (op,) = parse(codex("*** Update File: a.txt", "*** Move to: b/a.txt")).ops
    assert (op.op, op.path, op.move_to, op.hunks) == ("update", "a.txt", "b/a.txt", ())


def test_unified_style_header_in_a_codex_patch_is_a_line_hint() -> None:
    (op,) = parse(codex("*** Update File: a", "@@ -12,3 +12,4 @@ def f():", "-x", "+y")).ops
    assert op.hunks[0].old_start == 12
    assert op.hunks[0].headers == ("def f():",)


def test_marker_like_text_is_content_when_prefixed() -> None:
    (op,) = parse(
        codex("*** Update File: a", "@@", " *** End Patch", "-@@ x", "+*** End of File")
    ).ops
    assert op.hunks[0].lines == ((" ", "*** End Patch"), ("-", "@@ x"), ("+", "*** End of File"))


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("", 1, "'*** Begin Patch' or a unified diff"),
        ("  \n\t\n", 1, "'*** Begin Patch' or a unified diff"),
        ("*** Begin Patch\n*** End Patch\n", 1, "at least one file operation"),
        ("*** Begin Patch\n", 2, OPERATION),
        ("*** Begin Patch\n*** Delete File: a\n", 3, "'*** End Patch'"),
        (
            "*** Begin Patch\n*** Delete File: a\n*** End Patch\nmore\n",
            4,
            "nothing after '*** End Patch'",
        ),
        ("*** Update File: a\n@@\n-x\n*** End Patch\n", 1, "'*** Begin Patch'"),
        (codex("*** Frobnicate File: a"), 2, OPERATION),
        (codex("*** Update File: a"), 2, "a hunk ('@@') or '*** Move to: '"),
        (
            codex("*** Update File: a", "@@ h", "*** Delete File: b"),
            4,
            "a hunk line starting with ' ', '-' or '+'",
        ),
        (codex("*** Update File: a", "*** End of File"), 3, "hunk lines before '*** End of File'"),
        (codex("*** Update File: a", "@@", "-x", "bogus"), 5, HUNK_OR_OPERATION),
        (
            codex("*** Update File: a", "@@", "-x", "*** End of File", " y"),
            6,
            "'@@' after '*** End of File'",
        ),
        (codex("*** Add File:   "), 2, "a path after '*** Add File:'"),
        (codex("*** Update File: a", "*** Move to:"), 3, "a path after '*** Move to:'"),
        (codex("*** Add File: a", "+x", "", "+y"), 5, OPERATION),
        (
            codex("*** Delete File: a", "*** End Patch", "*** Delete File: b"),
            4,
            "nothing after '*** End Patch'",
        ),
    ],
)
def test_codex_syntax_errors_name_the_line_and_what_was_expected(
    text: str, line: int, expected: str
) -> None:
    error = fails(text)
    assert error.details["line"] == line
    assert error.details["expected"] == expected
    assert f"line {line}:" in error.message


@pytest.mark.parametrize(
    "body",
    [
        ("*** Update File: a", "@@", "-x", "*** Delete File: a"),
        ("*** Add File: a", "*** Update File: b", "*** Move to: a", "@@", "-x"),
        ("*** Delete File: ./dir/a", "*** Add File: dir//a"),
        ("*** Update File: a", "*** Move to: a"),
    ],
)
def test_the_same_path_twice_is_invalid(body: tuple[str, ...]) -> None:
    error = fails(codex(*body), INVALID_ARGUMENT)
    assert error.details["first_line"] == 2
    assert error.details["line"] >= 2


# --------------------------------------------------------------------------- limits


def test_byte_limit_is_checked_before_parsing() -> None:
    # Not even a patch, but too large: the size is checked first.
    assert fails("x" * 101, TOO_LARGE, patch_bytes=100).details["limit"] == "patch_bytes"
    text = codex("*** Add File: a", "+" + "é" * 10)
    size = len(text.encode())
    assert size == len(text) + 10
    assert parse(text, patch_bytes=size).ops  # bytes, not characters, are counted
    assert fails(text, TOO_LARGE, patch_bytes=size - 1).details["maximum"] == size - 1


def test_line_limit_is_checked_before_parsing() -> None:
    text = codex("*** Add File: a", "+1", "+2", "bogus")
    assert fails(text, TOO_LARGE, patch_lines=5).details["actual"] == 6
    assert fails(text, PATCH_SYNTAX, patch_lines=6).details["line"] == 5


def test_file_limit_fails_at_the_first_excess() -> None:
    body = ["*** Delete File: a", "*** Delete File: b", "*** Delete File: c", "bogus"]
    error = fails(codex(*body), TOO_LARGE, patch_files=2)
    assert (error.details["limit"], error.details["line"]) == ("patch_files", 4)
    # A syntax error before the excess is found first.
    assert fails(codex("bogus", *body), PATCH_SYNTAX, patch_files=2).details["line"] == 2


def test_hunk_limit_counts_across_files_in_both_formats() -> None:
    text = codex(
        "*** Update File: a", "@@", "-1", "@@", "-2", "*** Update File: b", "@@", "-3", "@@ broken"
    )
    error = fails(text, TOO_LARGE, patch_hunks=2)
    assert (error.details["limit"], error.details["line"]) == ("patch_hunks", 8)
    diff = "--- a\n+++ a\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5 @@\n-c\n+d\n@@ -9 +9 @@\n-e\n+f\n"
    assert fails(diff, TOO_LARGE, patch_hunks=2).details["line"] == 9
    assert len(parse(diff, patch_hunks=3).ops[0].hunks) == 3


def test_file_limit_in_unified_diffs() -> None:
    diff = "".join(f"--- f{n}\n+++ f{n}\n@@ -1 +1 @@\n-a\n+b\n" for n in range(3))
    assert fails(diff, TOO_LARGE, patch_files=2).details["line"] == 11


# --------------------------------------------------------------------------- unified diffs

GIT_DIFF = """\
diff --git a/src/app.py b/src/app.py
index 3b18e51..b0e2d4f 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,3 @@ def main():
 a
-b
+B
 c
@@ -10,2 +10,3 @@ class X:
 j
+k
 l
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
\\ No newline at end of file
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 286c5f5..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/empty b/empty
new file mode 100644
index 0000000..e69de29
diff --git a/old name.txt b/new name.txt
similarity index 100%
rename from old name.txt
rename to new name.txt
diff --git a/r1 b/r2
similarity index 80%
rename from r1
rename to r2
index 1111111..2222222 100644
--- a/r1
+++ b/r2
@@ -1 +1 @@
-x
+y
diff --git a/script.sh b/script.sh
old mode 100644
new mode 100755
diff --git a/was-empty b/was-empty
deleted file mode 100644
index e69de29..0000000
"""


def test_git_diff_with_every_construct() -> None:
    parsed = parse(GIT_DIFF)
    assert parsed.format == "unified"
    summary = [(op.op, op.path, op.move_to, op.content, op.source_line) for op in parsed.ops]
    assert summary == [
        ("update", "src/app.py", None, None, 1),
        ("add", "new.txt", None, "hello\nworld", 14),
        ("delete", "gone.txt", None, None, 23),
        ("add", "empty", None, "", 30),
        ("update", "old name.txt", "new name.txt", None, 33),
        ("update", "r1", "r2", None, 37),
        ("update", "script.sh", None, None, 47),  # a mode change alone
        ("delete", "was-empty", None, None, 50),
    ]
    assert [op.executable for op in parsed.ops] == [
        None,
        False,
        None,
        False,
        None,
        None,
        True,
        None,
    ]
    update = parsed.ops[0]
    assert update.hunks == (
        Hunk(
            headers=("def main():",),
            lines=((" ", "a"), ("-", "b"), ("+", "B"), (" ", "c")),
            end_of_file=False,
            old_start=1,
            source_line=5,
            exact_newlines=True,
        ),
        Hunk(
            headers=("class X:",),
            lines=((" ", "j"), ("+", "k"), (" ", "l")),
            end_of_file=False,
            old_start=10,
            source_line=10,
            exact_newlines=True,
        ),
    )
    deletion = parsed.ops[2].hunks[0]
    assert (deletion.lines, deletion.end_of_file) == ((("-", "gone"),), True)
    assert parsed.ops[4].hunks == ()
    assert parsed.ops[5].hunks[0].lines == (("-", "x"), ("+", "y"))


def test_no_newline_markers_close_each_side() -> None:
    diff = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    (hunk_,) = parse(diff).ops[0].hunks
    assert (hunk_.old_missing_newline, hunk_.new_missing_newline, hunk_.end_of_file) == (
        True,
        False,
        True,
    )
    both = "--- f\n+++ f\n@@ -1 +1,2 @@\n+x\n a\n\\ No newline at end of file\n"
    (hunk_,) = parse(both).ops[0].hunks
    assert (hunk_.old_missing_newline, hunk_.new_missing_newline) == (True, True)


def test_traditional_diff_with_timestamps_and_prefixes() -> None:
    diff = (
        "Some mail preamble\n"
        "diff -u a/x.txt b/x.txt\n"
        "--- a/x.txt\t2024-01-01 10:00:00.000000000 +0100\n"
        "+++ b/x.txt\t2024-01-01 11:00:00.000000000 +0100\n"
        "@@ -2 +2 @@\n"
        "-old\n"
        "+new\n"
        "-- \n"
        "2.39.5\n"
    )
    (op,) = parse(diff).ops
    assert (op.op, op.path, op.move_to, op.source_line) == ("update", "x.txt", None, 3)
    assert op.hunks[0].old_start == 2
    assert op.hunks[0].headers == ("",)


def test_diff_ruN_epoch_timestamps_mean_absent_files() -> None:
    diff = (
        "diff -ruN old/add.txt new/add.txt\n"
        "--- old/add.txt\t1970-01-01 00:00:00.000000000 +0000\n"
        "+++ new/add.txt\t2024-05-06 07:08:09.000000000 +0000\n"
        "@@ -0,0 +1 @@\n"
        "+new\n"
        "diff -ruN old/del.txt new/del.txt\n"
        "--- old/del.txt\t2024-05-06 07:08:09.000000000 +0000\n"
        "+++ new/del.txt\t1969-12-31 19:00:00.000000000 -0500\n"
        "@@ -1 +0,0 @@\n"
        "-gone\n"
        "--- old/kept.txt\t1970-01-01 00:00:00.000000000 +0000\n"
        "+++ new/kept.txt\t2024-05-06 07:08:09.000000000 +0000\n"
        "@@ -1 +1 @@\n"
        "-a\n"
        "+b\n"
    )
    ops = parse(diff).ops
    assert [(op.op, op.path, op.content) for op in ops] == [
        ("add", "add.txt", "new\n"),
        ("delete", "del.txt", None),
        # An epoch time with a non-empty old range is a real (old) file.
        ("update", "kept.txt", None),
    ]


@pytest.mark.parametrize(
    ("stamp", "absent"),
    [
        ("1970-01-01 00:00:00", True),
        ("1970-01-01 01:00:00.000000000 +0100", True),
        ("1970-01-01 01:00:00.000000000 +0000", False),
        ("1970-02-30 00:00:00 +0000", False),
        ("Thu Jan  1 00:00:00 1970", False),
    ],
)
def test_epoch_timestamps(stamp: str, absent: bool) -> None:
    diff = f"--- old/f\t{stamp}\n+++ new/f\t2024-05-06 07:08:09 +0000\n@@ -0,0 +1 @@\n+x\n"
    (op,) = parse(diff).ops
    assert (op.op, op.path) == (("add" if absent else "update"), "f")


def test_git_names_without_prefixes_or_with_a_quoted_new_name() -> None:
    diff = (
        "diff --git x y x y\nnew file mode 100644\n"
        "diff --git a/p b/p q\nnew file mode 100644\n"
        'diff --git "a/m n" "b/m n"\ndeleted file mode 100644\n'
        'diff --git a/r "b/s t"\nsimilarity index 100%\nrename from r\nrename to s t\n'
    )
    assert [(op.op, op.path, op.move_to) for op in parse(diff).ops] == [
        ("add", "x y", None),
        ("add", "p q", None),
        ("delete", "m n", None),
        ("update", "r", "s t"),
    ]


def test_traditional_diff_between_different_names_patches_the_new_name() -> None:
    (op,) = parse("--- file.orig\n+++ file\n@@ -1 +1 @@\n-a\n+b\n").ops
    assert (op.op, op.path, op.move_to) == ("update", "file", None)


def test_git_diff_between_different_names_is_a_rename() -> None:
    (op,) = parse("diff --git a/one b/two\n--- a/one\n+++ b/two\n@@ -1 +1 @@\n-a\n+b\n").ops
    assert (op.op, op.path, op.move_to) == ("update", "one", "two")


def test_quoted_git_names() -> None:
    diff = (
        'diff --git "a/t\\303\\251st \\"q\\".txt" "b/t\\303\\251st \\"q\\".txt"\n'
        "new file mode 100644\n"
        "index 0000000..e69de29\n"
        'diff --git "a/tab\\there" "b/tab\\there"\n'
        "index 1..2 100644\n"
        '--- "a/tab\\there"\n'
        '+++ "b/tab\\there"\n'
        "@@ -1 +1 @@\n"
        "-a\n"
        "+b\n"
    )
    assert [op.path for op in parse(diff).ops] == ['tést "q".txt', "tab\there"]


def test_crlf_diff_text_and_counts_omitted() -> None:
    diff = "--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n"
    (op,) = parse(diff).ops
    assert op.hunks[0].lines == (("-", "a"), ("+", "b"))


def test_bare_empty_line_in_a_hunk_is_an_empty_context_line() -> None:
    (op,) = parse("--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n\n-c\n+d\n").ops
    assert op.hunks[0].lines == ((" ", "a"), (" ", ""), ("-", "c"), ("+", "d"))


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("hello\nworld\n", 1, NOT_A_PATCH),
        ("@@ -1 +1 @@\n-a\n+b\n", 1, "a file header ('--- ' and '+++ ') before"),
        ("--- f\n+++ f\n@@ -x +1 @@\n", 3, HUNK_HEADER),
        ("--- f\n+++ f\nno hunk\n", 3, HUNK_HEADER),
        ("--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n", 7, LEFT_1_1),
        ("--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\nzzz\n", 5, LEFT_1_1),
        ("--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n c\n", 6, "'@@' or the next file header"),
        ("--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n+b\n+c\n", 6, LEFT_1_0),
        (
            "--- f\n+++ f\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n",
            4,
            "a hunk line before it",
        ),
        (
            "--- f\n+++ f\n@@ -1,2 +1 @@\n-a\n\\ No newline at end of file\n-b\n+c\n",
            6,
            "the end of the hunk",
        ),
        (
            "--- f\n+++ f\n@@ -0,1 +1 @@\n-a\n+b\n",
            3,
            "a start line of at least 1 for a non-empty range",
        ),
        (
            "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n",
            1,
            "at least one side that is not /dev/null",
        ),
        ("--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", 3, "only '+' lines for a new file"),
        ("--- a/f\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n", 3, "only '-' lines for a deleted file"),
        ("diff --git a/f b/f\n--- a/f\n@@ -1 +1 @@\n", 3, "a '+++ ' line after the '--- ' line"),
        (
            "diff --git a/x y/z\nold mode 100644\nnew mode 100755\n",
            1,
            "'diff --git a/<path> b/<path>'",
        ),
        ('--- "a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n', 1, "a closing '\"' in the quoted file name"),
        ('--- "a/\\q"\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n', 1, "a C escape in the quoted name"),
        ('--- "a/\\377"\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n', 1, "a UTF-8 file name"),
        ("--- \t2024-01-01\n+++ f\n@@ -1 +1 @@\n-a\n+b\n", 1, "a file name after '--- ' / '+++ '"),
        ("diff --git a/f b/f\nmode change only\n", 1, "at least one file operation"),
        ("diff --git a/f b/f\n--- a/f\n+++ b/f\n", 4, HUNK_HEADER),
        ('diff --git "a/f"\nold mode 100644\n', 1, "'diff --git a/<path> b/<path>'"),
    ],
)
def test_unified_syntax_errors_name_the_line_and_what_was_expected(
    text: str, line: int, expected: str
) -> None:
    error = fails(text)
    assert (error.details["line"], error.details["expected"]) == (line, expected)


def test_the_same_file_twice_in_a_unified_diff_is_invalid() -> None:
    diff = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n--- a/f\n+++ b/f\n@@ -5 +5 @@\n-c\n+d\n"
    error = fails(diff, INVALID_ARGUMENT)
    assert (error.details["path"], error.details["line"], error.details["first_line"]) == (
        "f",
        6,
        1,
    )


# --------------------------------------------------------------------------- fuzzing

_PATCHY_LINES = st.sampled_from(
    [
        "*** Begin Patch",
        "*** End Patch",
        "*** Add File: a",
        "*** Delete File: a",
        "*** Update File: b",
        "*** Move to: c",
        "*** End of File",
        "@@",
        "@@ def f():",
        "@@ -1,2 +1,3 @@",
        "@@ -0,0 +1 @@ x",
        "diff --git a/a b/a",
        "diff --git a/a b/b",
        "new file mode 100644",
        "deleted file mode 100644",
        "rename from a",
        "rename to b",
        "--- a/a",
        "+++ b/a",
        "--- /dev/null",
        "+++ /dev/null",
        '--- "a/\\303"',
        "\\ No newline at end of file",
        " context",
        "-removed",
        "+added",
        "",
        " ",
        "\r",
        "-- ",
    ]
)


def _parse_or_allowed_error(text: str, limits: Limits | None = None) -> ParsedPatch | None:
    try:
        return parse_patch(text, limits or Limits())
    except ToolError as error:
        assert error.code in ALLOWED, error
        if error.code == PATCH_SYNTAX:
            assert isinstance(error.details["line"], int) and error.details["line"] >= 1
            assert error.details["expected"]
        return None


@given(st.text())
def test_arbitrary_text_raises_only_patch_errors(text: str) -> None:
    _parse_or_allowed_error(text)


@given(st.lists(st.one_of(_PATCHY_LINES, st.text(max_size=8)), max_size=30), st.booleans())
def test_patch_like_text_raises_only_patch_errors(lines: list[str], crlf: bool) -> None:
    text = ("\r\n" if crlf else "\n").join(lines)
    parsed = _parse_or_allowed_error(text, Limits(patch_files=4, patch_hunks=4, patch_lines=25))
    if parsed is not None:
        assert parsed.ops
        for op in parsed.ops:
            assert op.op in ("add", "delete", "update")
            assert (op.content is not None) == (op.op == "add")


_TREES = st.fixed_dictionaries(
    {
        "a.txt": st.lists(st.sampled_from(["x", "y", "", " z"]), max_size=6),
        "b.txt": st.lists(st.sampled_from(["x", "q", "w"]), min_size=1, max_size=6),
    }
)


@st.composite
def valid_patches(draw: st.DrawFn) -> str:
    old = {path: "".join(line + "\n" for line in lines) for path, lines in draw(_TREES).items()}
    new = dict(old)
    new["a.txt"] = "".join(line + "\n" for line in draw(st.lists(st.sampled_from(["x", "k"]))))
    if draw(st.booleans()):
        del new["b.txt"]
    new["c.txt"] = "made\n"
    if draw(st.booleans()):
        return patch_render.render_codex(old, new, context=draw(st.integers(0, 2)))
    return patch_render.render_unified(old, new, git=draw(st.booleans()))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    lines = draw(valid_patches()).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines)))
        choice = draw(st.sampled_from(["drop", "insert", "duplicate", "swap", "edit", "cut"]))
        if choice == "drop" and at < len(lines):
            del lines[at]
        elif choice == "insert":
            lines.insert(at, draw(st.one_of(_PATCHY_LINES, st.text(max_size=5))))
        elif choice == "duplicate" and at < len(lines):
            lines.insert(at, lines[at])
        elif choice == "swap" and at + 1 < len(lines):
            lines[at], lines[at + 1] = lines[at + 1], lines[at]
        elif choice == "edit" and at < len(lines) and lines[at]:
            k = draw(st.integers(0, len(lines[at]) - 1))
            lines[at] = lines[at][:k] + draw(st.text(max_size=2)) + lines[at][k + 1 :]
        elif choice == "cut":
            lines = lines[:at]
    return "\n".join(lines)


@given(valid_patches())
def test_rendered_patches_parse(text: str) -> None:
    assert parse_patch(text, Limits()).ops


@given(mutated())
def test_mutated_patches_raise_only_patch_errors(text: str) -> None:
    _parse_or_allowed_error(text)
