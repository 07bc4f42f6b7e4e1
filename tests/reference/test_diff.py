"""Unified diffs around the changed region (``reference/_diff.py``)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from editspec.reference.text._diff import split_lines, unified_diff

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")
_NO_NEWLINE = "\\ No newline at end of file"


def apply_unified(old: str, diff: str) -> str:
    """Apply a unified diff of one file to ``old`` (strict: every context line must match)."""
    if not diff:
        return old
    old_lines = split_lines(old)
    rows = diff.split("\n")
    assert rows[-1] == ""
    rows = rows[:-1]
    assert rows[0].startswith("--- ") and rows[1].startswith("+++ ")
    out: list[str] = []
    position = 0
    index = 2
    while index < len(rows):
        match = _HUNK.match(rows[index])
        assert match, rows[index]
        start, count = int(match.group(1)), int(match.group(2) or 1)
        begin = start if count == 0 else start - 1
        assert begin >= position
        out.extend(old_lines[position:begin])
        position = begin
        index += 1
        while index < len(rows) and not rows[index].startswith("@@"):
            tag, body = rows[index][0], rows[index][1:] + "\n"
            if index + 1 < len(rows) and rows[index + 1] == _NO_NEWLINE:
                body = body[:-1]
                index += 1
            if tag in " -":
                assert old_lines[position] == body
                position += 1
            if tag in " +":
                out.append(body)
            index += 1
    out.extend(old_lines[position:])
    return "".join(out)


def test_equal_texts_have_an_empty_diff() -> None:
    assert unified_diff("f.txt", "a\nb\n", "a\nb\n") == ""


def test_one_line_change_has_three_lines_of_context() -> None:
    old = "".join(f"{n}\n" for n in range(1, 21))
    new = old.replace("10\n", "ten\n")
    assert unified_diff("dir/f.txt", old, new) == (
        "--- a/dir/f.txt\n+++ b/dir/f.txt\n@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n"
    )


def test_created_file_is_labelled_dev_null() -> None:
    assert unified_diff("n.txt", "", "x\ny", old_exists=False) == (
        "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
    )


def test_deleted_file_is_labelled_dev_null() -> None:
    assert unified_diff("d.txt", "x\n", "", new_exists=False) == (
        "--- a/d.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )


def test_missing_final_newline_is_marked() -> None:
    diff = unified_diff("f", "a\nb", "a\nb\n")
    assert diff == ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n")


def test_crlf_lines_keep_their_endings() -> None:
    diff = unified_diff("f", "a\r\nb\r\n", "a\r\nc\r\n")
    assert "-b\r\n+c\r\n" in diff


def test_distant_changes_make_separate_hunks() -> None:
    old = "".join(f"{n}\n" for n in range(1, 41))
    new = old.replace("5\n", "five\n", 1).replace("35\n", "thirty-five\n")
    diff = unified_diff("f", old, new)
    assert [line for line in diff.splitlines() if line.startswith("@@")] == [
        "@@ -2,7 +2,7 @@",
        "@@ -32,7 +32,7 @@",
    ]
    assert apply_unified(old, diff) == new


def test_one_line_change_in_a_large_file_shows_only_its_region() -> None:
    old = "".join(f"line {n}\n" for n in range(200_000))
    new = old.replace("line 123456\n", "changed\n")
    diff = unified_diff("big", old, new)
    assert diff.count("\n") == 2 + 1 + 8  # headers, hunk header, 3 + 1 + 1 + 3 lines
    assert "@@ -123454,7 +123454,7 @@" in diff
    assert apply_unified(old, diff) == new


_lines = st.lists(st.sampled_from(["a", "b", "c", "a\r", "", "dd"]), max_size=25)


@given(
    old=_lines, new=_lines, old_end=st.sampled_from(["", "\n"]), new_end=st.sampled_from(["", "\n"])
)
def test_diff_applies_back_to_the_new_text(
    old: list[str], new: list[str], old_end: str, new_end: str
) -> None:
    old_text = "\n".join(old) + old_end
    new_text = "\n".join(new) + new_end
    diff = unified_diff("f", old_text, new_text)
    assert (diff == "") == (old_text == new_text)
    assert apply_unified(old_text, diff) == new_text


@given(
    base=st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=40),
    data=st.data(),
)
def test_small_edits_in_repetitive_text_apply_back(base: list[str], data: st.DataObject) -> None:
    edited = list(base)
    position = data.draw(st.integers(0, len(edited) - 1))
    edited[position : position + data.draw(st.integers(0, 3))] = data.draw(
        st.lists(st.sampled_from(["x", "y", "w"]), max_size=3)
    )
    old_text, new_text = "\n".join(base) + "\n", "\n".join(edited) + "\n"
    assert apply_unified(old_text, unified_diff("f", old_text, new_text)) == new_text
