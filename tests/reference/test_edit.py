"""Session.edit end to end (reference/_edit.py): every test checks the bytes on disk."""

from __future__ import annotations

import codecs
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from editspec.reference import (
    EditResult,
    EditSpec,
    FileSystem,
    Limits,
    Session,
    ToolError,
    Workspace,
)
from editspec.reference.text._diff import unified_diff


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(root: Path) -> list[str]:
    """Every name under the root that is not one the test created (temp files, stages)."""
    return sorted(
        str(path.relative_to(root)) for path in root.rglob("*") if ".editspec-" in path.name
    )


@pytest.fixture
def ws(root: Path, state_dir: Path) -> Iterator[Workspace]:
    workspace = Workspace(root, state_dir)
    yield workspace
    workspace.close()


@pytest.fixture
def s1(ws: Workspace) -> Session:
    return ws.session("s1")


@pytest.fixture
def put(root: Path) -> Callable[[str, bytes], Path]:
    def put(name: str, data: bytes) -> Path:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    return put


def read_in_full(session: Session, name: str) -> None:
    result = session.read(name, max_bytes=1 << 30)
    assert not result.truncated


def edit_after_read(session: Session, name: str, *edits: Any, **options: Any) -> EditResult:
    read_in_full(session, name)
    return session.edit(name, list(edits), **options)


def refused(code: str, path: Path, call: Callable[[], object]) -> ToolError:
    """``call`` fails with ``code`` and leaves ``path`` byte-for-byte as it was."""
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(ToolError) as info:
        call()
    assert info.value.code == code, info.value
    assert (path.read_bytes() if path.exists() else None) == before
    assert leftovers(path.parent) == []
    return info.value


# -- every strategy, on disk ----------------------------------------------------------

STRATEGY_CASES = [
    ("exact", b"a = 1\nb = 2\n", EditSpec("b = 2", "b = 3"), b"a = 1\nb = 3\n", 2),
    (
        "trailing_whitespace",
        b"top\nif x:   \n    go()\t\n",
        EditSpec("if x:\n    go()", "if y:\n    stop()"),
        b"top\nif y:\n    stop()\t\n",
        2,
    ),
    (
        "smart_quotes",
        "msg = \u201cdone\u201d\n".encode(),
        EditSpec('msg = "done"', 'msg = "finished"'),
        "msg = \u201cfinished\u201d\n".encode(),
        1,
    ),
    (
        "unescape",
        b'say("hi")\nend\n',
        EditSpec('say(\\"hi\\")\\nend', 'say(\\"bye\\")\\nend'),
        b'say("bye")\nend\n',
        1,
    ),
    (
        "whitespace_runs",
        b"x  =  compute( 1 )\n",
        EditSpec("x = compute( 1 )", "x = compute(2)"),
        b"x = compute(2)\n",
        1,
    ),
    (
        "indentation",
        b"class C:\n    def f(self):\n        return 1\n",
        EditSpec("def f(self):\n    return 1", "def f(self):\n    return 2"),
        b"class C:\n    def f(self):\n        return 2\n",
        2,
    ),
    (
        "block_anchors",
        b"def total(xs):\n    s = 0\n    for x in xs: s += x\n    return s\n",
        EditSpec(
            "def total(xs):\n    s = 0\n    for x in xs:  s = s + x\n    return s",
            "def total(xs):\n    return sum(xs)",
        ),
        b"def total(xs):\n    return sum(xs)\n",
        1,
    ),
]


@pytest.mark.parametrize(
    ("strategy", "before", "spec", "after", "line"),
    STRATEGY_CASES,
    ids=[case[0] for case in STRATEGY_CASES],
)
def test_each_strategy_edits_the_file(
    s1: Session,
    put: Callable[[str, bytes], Path],
    strategy: str,
    before: bytes,
    spec: EditSpec,
    after: bytes,
    line: int,
) -> None:
    path = put("f.py", before)
    result = edit_after_read(s1, "f.py", spec)
    assert path.read_bytes() == after
    (replacement,) = result.replacements
    assert replacement.matched_by == strategy
    assert replacement.count == 1
    assert replacement.line == line


def test_result_fields(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("dir/m.txt", b"one\ntwo\nthree\n")
    result = edit_after_read(s1, "dir/m.txt", EditSpec("two", "TWO"))
    assert path.read_bytes() == b"one\nTWO\nthree\n"
    assert result.path == "dir/m.txt"
    assert result.operation == "patch"
    assert result.old_sha256 == sha(b"one\ntwo\nthree\n")
    assert result.new_sha256 == sha(path.read_bytes())
    assert result.bytes_written == len(b"one\nTWO\nthree\n")
    assert result.newline == "lf"
    assert result.snapshot_created is False
    assert "-two\n" in result.diff and "+TWO\n" in result.diff
    assert result.warnings == ()


def test_a_second_edit_needs_no_new_read(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"a b c\n")
    edit_after_read(s1, "f.txt", EditSpec("a", "A"))
    s1.edit("f.txt", [EditSpec("b", "B")])
    assert path.read_bytes() == b"A B c\n"


# -- refusals leave the file as it was ------------------------------------------------


def test_ambiguous(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"x = 1\nx = 1\n")
    read_in_full(s1, "f.txt")
    error = refused("AMBIGUOUS", path, lambda: s1.edit("f.txt", [EditSpec("x = 1", "x = 2")]))
    assert error.details["lines"] == [1, 2]


def test_no_match(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"alpha\nbeta\n")
    read_in_full(s1, "f.txt")
    error = refused("NO_MATCH", path, lambda: s1.edit("f.txt", [EditSpec("gamma", "delta")]))
    assert "f.txt" in error.message


def test_no_match_names_whitespace(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"a\nb\ncall(x, y)\n")
    read_in_full(s1, "f.txt")
    error = refused("NO_MATCH", path, lambda: s1.edit("f.txt", [EditSpec("call(x,y)", "z")]))
    assert error.details["whitespace_differs_at_line"] == 3


def test_no_change(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"same\n")
    read_in_full(s1, "f.txt")
    refused("NO_CHANGE", path, lambda: s1.edit("f.txt", [EditSpec("same", "same")]))


def test_no_change_when_edits_cancel_out(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"left\n")
    read_in_full(s1, "f.txt")
    edits = [EditSpec("left", "right"), EditSpec("right", "left")]
    refused("NO_CHANGE", path, lambda: s1.edit("f.txt", edits))


def test_multi_edit_is_all_or_nothing(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"one two three\n")
    read_in_full(s1, "f.txt")
    edits = [EditSpec("one", "1"), EditSpec("four", "4"), EditSpec("three", "3")]
    error = refused("NO_MATCH", path, lambda: s1.edit("f.txt", edits))
    assert error.details["edit_index"] == 1
    second_ambiguous = [EditSpec("one", "x"), EditSpec("t", "T")]
    refused("AMBIGUOUS", path, lambda: s1.edit("f.txt", second_ambiguous))


def test_multi_edit_applies_in_order(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"one two three\n")
    result = edit_after_read(
        s1, "f.txt", EditSpec("one", "1"), EditSpec("1 two", "12"), EditSpec("three", "3")
    )
    assert path.read_bytes() == b"12 3\n"
    assert [r.line for r in result.replacements] == [1, 1, 1]


def test_replace_all(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"foo\nbar foo\nfoo\n")
    result = edit_after_read(s1, "f.txt", EditSpec("foo", "baz", replace_all=True))
    assert path.read_bytes() == b"baz\nbar baz\nbaz\n"
    assert result.replacements[0].count == 3
    assert result.replacements[0].line == 1


@pytest.mark.parametrize(
    ("hints", "after"),
    [
        ({"line": 3}, b"v\nw\nV\nw\nv\n"),
        ({"before": "w\nv\nw"}, b"v\nw\nv\nw\nV\n"),
        ({"after": "w\nv\nw"}, b"V\nw\nv\nw\nv\n"),
    ],
)
def test_hints_choose_a_match(
    s1: Session, put: Callable[[str, bytes], Path], hints: dict[str, Any], after: bytes
) -> None:
    path = put("f.txt", b"v\nw\nv\nw\nv\n")
    edit_after_read(s1, "f.txt", EditSpec("v", "V", **hints))
    assert path.read_bytes() == after


def test_hints_never_make_a_missing_string_match(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("f.txt", b"v\nw\n")
    read_in_full(s1, "f.txt")
    spec = EditSpec("q", "Q", line=1, before="v", after="w")
    refused("NO_MATCH", path, lambda: s1.edit("f.txt", [spec]))


# -- empty old_string ----------------------------------------------------------------


def test_empty_old_string_creates_a_missing_file(s1: Session, root: Path) -> None:
    result = s1.edit("new/dir/f.txt", [EditSpec("", "hello\r\nworld\n")])
    assert (root / "new/dir/f.txt").read_bytes() == b"hello\r\nworld\n"
    assert result.old_sha256 is None
    assert result.new_sha256 == sha(b"hello\r\nworld\n")
    assert "+hello" in result.diff and "/dev/null" in result.diff
    # Created by this session: the next edit needs no read.
    s1.edit("new/dir/f.txt", [EditSpec("world", "there")])
    assert (root / "new/dir/f.txt").read_bytes() == b"hello\r\nthere\n"


def test_creation_may_be_followed_by_more_edits(s1: Session, root: Path) -> None:
    s1.edit("f.txt", [EditSpec("", "a b\n"), EditSpec("b", "c")])
    assert (root / "f.txt").read_bytes() == b"a c\n"


def test_missing_file_with_old_string_is_not_found(s1: Session, root: Path) -> None:
    refused("NOT_FOUND", root / "nope.txt", lambda: s1.edit("nope.txt", [EditSpec("a", "b")]))


def test_creation_with_expected_sha256_is_stale(s1: Session, root: Path) -> None:
    spec = EditSpec("", "x")
    refused("STALE", root / "n.txt", lambda: s1.edit("n.txt", [spec], expected_sha256="0" * 64))


def test_empty_old_string_fills_an_empty_file(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("empty.txt", b"")
    refused("NOT_READ", path, lambda: s1.edit("empty.txt", [EditSpec("", "x")]))
    edit_after_read(s1, "empty.txt", EditSpec("", "content\n"))
    assert path.read_bytes() == b"content\n"


def test_empty_old_string_keeps_the_bom_of_an_empty_file(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("bom.txt", codecs.BOM_UTF8)
    edit_after_read(s1, "bom.txt", EditSpec("", "x\n"))
    assert path.read_bytes() == codecs.BOM_UTF8 + b"x\n"


def test_empty_old_string_on_a_non_empty_file_is_invalid(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("f.txt", b"content\n")
    read_in_full(s1, "f.txt")
    refused("INVALID_ARGUMENT", path, lambda: s1.edit("f.txt", [EditSpec("", "more")]))


# -- untouched bytes stay byte-identical ---------------------------------------------


def test_crlf_file_gets_crlf_new_text(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("w.txt", b"head\r\nold line\r\ntail\r\n")
    result = edit_after_read(s1, "w.txt", EditSpec("old line\n", "new line\nextra line\n"))
    assert path.read_bytes() == b"head\r\nnew line\r\nextra line\r\ntail\r\n"
    assert result.newline == "crlf"


def test_mixed_endings_are_kept_outside_the_span(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("m.txt", b"a\r\nb\nc\r\nd\ne\r\n")
    result = edit_after_read(s1, "m.txt", EditSpec("c", "C"))
    assert path.read_bytes() == b"a\r\nb\nC\r\nd\ne\r\n"
    assert result.newline == "mixed"


def test_no_final_newline_is_kept(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("n.txt", b"first\nlast")
    edit_after_read(s1, "n.txt", EditSpec("first", "1st"))
    assert path.read_bytes() == b"1st\nlast"


def test_utf8_bom_is_kept(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("b.txt", codecs.BOM_UTF8 + "caf\u00e9\r\n".encode())
    edit_after_read(s1, "b.txt", EditSpec("caf\u00e9", "th\u00e9"))
    assert path.read_bytes() == codecs.BOM_UTF8 + "th\u00e9\r\n".encode()


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom_is_kept(
    s1: Session, put: Callable[[str, bytes], Path], encoding: str
) -> None:
    bom = codecs.BOM_UTF16_LE if encoding == "utf-16-le" else codecs.BOM_UTF16_BE
    path = put("u.txt", bom + "line one\r\nline \u2603\r\n".encode(encoding))
    edit_after_read(s1, "u.txt", EditSpec("line \u2603\n", "snow \u2603\nmore\n"))
    assert path.read_bytes() == bom + "line one\r\nsnow \u2603\r\nmore\r\n".encode(encoding)


def test_smart_quote_style_is_kept_on_disk(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("q.md", "He said \u201chello\u201d and it\u2019s fine.\n".encode())
    edit_after_read(s1, "q.md", EditSpec('said "hello" and it\'s', 'said "bye" and it\'s'))
    assert path.read_bytes() == "He said \u201cbye\u201d and it\u2019s fine.\n".encode()


# -- what Edit refuses -------------------------------------------------------------------


def test_binary_file(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    read_in_full(s1, "img.png")
    refused("BINARY", path, lambda: s1.edit("img.png", [EditSpec("IHDR", "XXXX")]))


def test_invalid_utf8_is_binary(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("latin1.txt", b"caf\xe9\n")
    refused(
        "BINARY",
        path,
        lambda: s1.edit("latin1.txt", [EditSpec("caf", "x")], expected_sha256=sha(b"caf\xe9\n")),
    )


def test_notebook_is_unsupported(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("nb.ipynb", b'{"cells": [], "nbformat": 4}\n')
    read_in_full(s1, "nb.ipynb")
    error = refused("UNSUPPORTED", path, lambda: s1.edit("nb.ipynb", [EditSpec("4", "5")]))
    assert "edit_notebook" in error.message


def test_too_large_file(root: Path, state_dir: Path, put: Callable[[str, bytes], Path]) -> None:
    session = Workspace(root, state_dir, Limits(edit_file_bytes=64)).session("s")
    path = put("big.txt", b"x" * 65)
    refused(
        "TOO_LARGE",
        path,
        lambda: session.edit("big.txt", [EditSpec("x", "y")], expected_sha256=sha(b"x" * 65)),
    )


def test_too_large_result(root: Path, state_dir: Path, put: Callable[[str, bytes], Path]) -> None:
    session = Workspace(root, state_dir, Limits(edit_file_bytes=64)).session("s")
    path = put("f.txt", b"small\n")
    spec = EditSpec("small", "y" * 64)
    refused(
        "TOO_LARGE",
        path,
        lambda: session.edit("f.txt", [spec], expected_sha256=sha(b"small\n")),
    )


def test_growth_warning(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("g.txt", b"seed\n")
    result = edit_after_read(s1, "g.txt", EditSpec("seed", "s" * 100))
    assert path.read_bytes() == b"s" * 100 + b"\n"
    assert any("grew" in warning for warning in result.warnings)


def test_no_growth_warning_within_the_factor(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("g.txt", b"seed\n")
    result = edit_after_read(s1, "g.txt", EditSpec("seed", "s" * 40))
    assert path.read_bytes() == b"s" * 40 + b"\n"
    assert result.warnings == ()


def test_directory_is_refused(s1: Session, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(ToolError) as info:
        s1.edit("d", [EditSpec("a", "b")])
    assert info.value.code == "IS_A_DIRECTORY"
    assert list((root / "d").iterdir()) == []


# -- read-before-write and compare-and-swap -------------------------------------------


def test_not_read(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"a\n")
    refused("NOT_READ", path, lambda: s1.edit("f.txt", [EditSpec("a", "b")]))


def test_partial_read_is_not_enough(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"a\nb\nc\n")
    s1.read("f.txt", start_line=1, end_line=1)
    refused("NOT_READ", path, lambda: s1.edit("f.txt", [EditSpec("a", "b")]))


def test_another_sessions_read_does_not_count(
    ws: Workspace, s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("f.txt", b"a\n")
    read_in_full(ws.session("other"), "f.txt")
    refused("NOT_READ", path, lambda: s1.edit("f.txt", [EditSpec("a", "b")]))


def test_stale_after_a_same_size_change(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"abc\n")
    read_in_full(s1, "f.txt")
    stat = path.stat()
    path.write_bytes(b"abd\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    refused("STALE", path, lambda: s1.edit("f.txt", [EditSpec("ab", "xy")]))


def test_expected_sha256_stands_in_for_a_read(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("f.txt", b"abc\n")
    refused("STALE", path, lambda: s1.edit("f.txt", [EditSpec("b", "B")], expected_sha256="a" * 64))
    result = s1.edit("f.txt", [EditSpec("b", "B")], expected_sha256=sha(b"abc\n").upper())
    assert path.read_bytes() == b"aBc\n"
    assert result.old_sha256 == sha(b"abc\n")


# -- arguments ----------------------------------------------------------------------------


def test_mappings_are_accepted(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"k = 1\nk = 1\n")
    edit_after_read(s1, "f.txt", {"old_string": "k = 1", "new_string": "k = 2", "line": 2})
    assert path.read_bytes() == b"k = 1\nk = 2\n"


@pytest.mark.parametrize(
    "edits",
    [
        [],
        [{"old_string": "a"}],
        [{"old_string": "a", "new_string": "b", "extra": 1}],
        ["a"],
        "a",
        [EditSpec("a", "b", line=0)],
    ],
    ids=["empty", "missing-key", "unknown-key", "string-item", "string", "bad-line"],
)
def test_unusable_edits_are_invalid(
    s1: Session, put: Callable[[str, bytes], Path], edits: Any
) -> None:
    path = put("f.txt", b"a\n")
    read_in_full(s1, "f.txt")
    refused("INVALID_ARGUMENT", path, lambda: s1.edit("f.txt", edits))


def test_bad_expected_sha256_is_invalid(s1: Session, put: Callable[[str, bytes], Path]) -> None:
    path = put("f.txt", b"a\n")
    spec = EditSpec("a", "b")
    refused("INVALID_ARGUMENT", path, lambda: s1.edit("f.txt", [spec], expected_sha256="xyz"))


def test_outside_the_workspace(s1: Session, root: Path) -> None:
    outside = root.parent / "outside.txt"
    outside.write_bytes(b"a\n")
    spec = EditSpec("a", "b")
    refused("OUTSIDE_WORKSPACE", outside, lambda: s1.edit(str(outside), [spec]))
    refused("OUTSIDE_WORKSPACE", outside, lambda: s1.edit("../outside.txt", [spec]))


# -- aliases -------------------------------------------------------------------------------


def test_edit_through_a_symlink_writes_the_target_and_keeps_the_link(
    s1: Session, root: Path, put: Callable[[str, bytes], Path]
) -> None:
    target = put("real.txt", b"value = 1\n")
    (root / "alias.txt").symlink_to("real.txt")
    read_in_full(s1, "real.txt")
    # One canonical key: the read of the real name covers the alias.
    result = s1.edit("alias.txt", [EditSpec("1", "2")])
    assert target.read_bytes() == b"value = 2\n"
    assert (root / "alias.txt").is_symlink()
    assert os.readlink(root / "alias.txt") == "real.txt"
    assert result.path == "alias.txt"


# -- property: a unique match is one replacement, and nothing else changes -----------

_PIECES = ["a", "b", "c", "d", " ", "\t", "\n", "\r\n", "\r", "\u00e9", "\u2603", "x1"]
_pieces = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


def _occurrences(text: str, needle: str) -> int:
    return sum(text.startswith(needle, index) for index in range(len(text)))


_counter = iter(range(10**9))


@given(
    prefix=_pieces,
    old=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map("".join),
    suffix=_pieces,
    new=_pieces,
    bom=st.sampled_from([b"", codecs.BOM_UTF8]),
    final_newline=st.sampled_from(["", "\n", "\r\n"]),
)
def test_unique_match_replaces_only_its_span(
    s1: Session,
    root: Path,
    prefix: str,
    old: str,
    suffix: str,
    new: str,
    bom: bytes,
    final_newline: str,
) -> None:
    suffix += final_newline
    text = prefix + old + suffix
    assume(_occurrences(text, old) == 1 and old != new)
    # A needle that begins or ends inside a CRLF is not a run of whole line breaks.
    assume(not (old.startswith("\n") and prefix.endswith("\r")))
    assume(not (old.endswith("\r") and suffix.startswith("\n")))
    name = f"p{next(_counter)}.txt"
    data = bom + text.encode()
    (root / name).write_bytes(data)
    try:
        result = s1.edit(name, [EditSpec(old, new)], expected_sha256=sha(data))
    except ToolError as error:
        # Only when the new text, in the file's line-break style, is the old text.
        assert error.code == "NO_CHANGE"
        assert old.replace("\r\n", "\n") == new.replace("\r\n", "\n")
        assert (root / name).read_bytes() == data
        return
    written = (root / name).read_bytes()
    head, tail = bom + prefix.encode(), suffix.encode()
    assert written.startswith(head) and written.endswith(tail)
    assert len(written) >= len(head) + len(tail)
    middle = written[len(head) : len(written) - len(tail)].decode()
    # The new text, its line breaks (read as LF) written in the file's style.
    lines = new.replace("\r\n", "\n").split("\n")
    if "\r\n" not in text:
        assert middle == "\n".join(lines)
    elif text.count("\n") == text.count("\r\n"):
        assert middle == "\r\n".join(lines)
    else:
        assert re.fullmatch("\r?\n".join(re.escape(line) for line in lines), middle)
    assert result.replacements[0].matched_by == "exact"
    assert result.replacements[0].line == prefix.count("\n") + 1
    assert result.new_sha256 == sha(written)
    body = written[len(bom) :].decode()
    assert result.newline == newline_kind(body)
    assert result.diff == unified_diff(name, text, body)


def newline_kind(text: str) -> str:
    kinds = {"crlf" if text[:index].endswith("\r") else "lf" for index in _breaks(text)}
    return "none" if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"


def _breaks(text: str) -> list[int]:
    return [index for index, char in enumerate(text) if char == "\n"]


# -- the order of refusals, and large files (hashed on a worker thread) ---------------


def test_freshness_is_checked_before_the_edit_is_judged(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    text_path = put("t.txt", b"alpha\n")
    refused("NOT_READ", text_path, lambda: s1.edit("t.txt", [EditSpec("missing", "x")]))
    binary_path = put("b.bin", b"\x00\x01\x02")
    refused("NOT_READ", binary_path, lambda: s1.edit("b.bin", [EditSpec("a", "b")]))
    spec = EditSpec("alpha", "beta")
    refused("STALE", text_path, lambda: s1.edit("t.txt", [spec], expected_sha256="0" * 64))


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_large_file_edit(s1: Session, put: Callable[[str, bytes], Path], newline: bytes) -> None:
    lines = [b"row %06d = value" % number for number in range(200_000)]
    data = newline.join(lines) + newline
    assert len(data) > 2 * 1024 * 1024
    path = put("large.txt", data)
    refused("NOT_READ", path, lambda: s1.edit("large.txt", [EditSpec("row 150000 =", "x")]))
    result = edit_after_read(
        s1, "large.txt", EditSpec("row 150000 = value\n", "row 150000 = 1\nnew\n")
    )
    expected = data.replace(
        b"row 150000 = value" + newline, b"row 150000 = 1" + newline + b"new" + newline
    )
    assert path.read_bytes() == expected
    assert result.old_sha256 == sha(data)
    assert result.new_sha256 == sha(expected)
    assert result.replacements[0].line == 150_001
    assert result.newline == ("lf" if newline == b"\n" else "crlf")
    assert "-row 150000 = value" in result.diff and "@@ -149998," in result.diff
    # The session's record now holds the new hash: another edit needs no read.
    s1.edit("large.txt", [EditSpec("\nnew\n", "\nnewer\n")])
    assert path.read_bytes() == expected.replace(b"new" + newline, b"newer" + newline, 1)
    stale_data = path.read_bytes().replace(b"row 000001", b"row 00000X")
    path.write_bytes(stale_data)
    refused("STALE", path, lambda: s1.edit("large.txt", [EditSpec("newer", "newest")]))


# -- arguments and races ---------------------------------------------------------------


def test_a_bare_edit_spec_or_mapping_is_a_list_of_one(
    s1: Session, put: Callable[[str, bytes], Path]
) -> None:
    path = put("f.txt", b"one two\n")
    read_in_full(s1, "f.txt")
    s1.edit("f.txt", EditSpec("one", "1"))  # type: ignore[arg-type]
    s1.edit("f.txt", {"old_string": "two", "new_string": "2"})  # type: ignore[arg-type]
    assert path.read_bytes() == b"1 2\n"


def test_a_link_retargeted_while_locking_is_resolved_again(
    ws: Workspace, s1: Session, root: Path, put: Callable[[str, bytes], Path], monkeypatch: Any
) -> None:
    first, second = put("a.txt", b"same\n"), put("b.txt", b"same\n")
    (root / "link.txt").symlink_to("a.txt")
    read_in_full(s1, "a.txt")
    read_in_full(s1, "b.txt")
    resolve = ws.resolve
    calls = 0

    def retargeting(path: Any) -> Any:
        nonlocal calls
        calls += 1
        resolved = resolve(path)
        if calls == 1:  # the link moves between the first resolution and the lock
            (root / "link.txt").unlink()
            (root / "link.txt").symlink_to("b.txt")
        return resolved

    monkeypatch.setattr(ws, "resolve", retargeting)
    s1.edit("link.txt", [EditSpec("same", "changed")])
    assert first.read_bytes() == b"same\n"
    assert second.read_bytes() == b"changed\n"


def test_a_link_that_keeps_moving_is_stale(
    ws: Workspace, s1: Session, root: Path, put: Callable[[str, bytes], Path], monkeypatch: Any
) -> None:
    first, second = put("a.txt", b"same\n"), put("b.txt", b"same\n")
    (root / "link.txt").symlink_to("a.txt")
    resolve = ws.resolve

    def flipping(path: Any) -> Any:
        resolved = resolve(path)
        target = "b.txt" if os.readlink(root / "link.txt") == "a.txt" else "a.txt"
        (root / "link.txt").unlink()
        (root / "link.txt").symlink_to(target)
        return resolved

    monkeypatch.setattr(ws, "resolve", flipping)
    with pytest.raises(ToolError) as info:
        s1.edit("link.txt", [EditSpec("same", "changed")], expected_sha256=sha(b"same\n"))
    assert info.value.code == "STALE"
    assert first.read_bytes() == second.read_bytes() == b"same\n"


class _VanishingFs(FileSystem):
    """A file system on which the edited file disappears, or cannot be read, at one step."""

    def __init__(self, step: str, error: OSError) -> None:
        super().__init__()
        self.step, self.error, self.armed = step, error, False

    def lstat(self, path: str) -> os.stat_result:
        if self.armed and self.step == "lstat" and path.endswith("victim.txt"):
            raise self.error
        return super().lstat(path)

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        if self.armed and self.step == "read" and path.endswith("victim.txt"):
            raise self.error
        return super().read_bytes(path, offset=offset, limit=limit)


@pytest.mark.parametrize(
    ("step", "error", "code"),
    [
        ("lstat", FileNotFoundError(2, "gone"), "NOT_FOUND"),
        ("read", FileNotFoundError(2, "gone"), "NOT_FOUND"),
        ("lstat", PermissionError(13, "denied"), "IO_ERROR"),
        ("read", PermissionError(13, "denied"), "IO_ERROR"),
    ],
)
def test_a_file_that_vanishes_or_fails_under_the_lock(
    root: Path, state_dir: Path, monkeypatch: Any, step: str, error: OSError, code: str
) -> None:
    fs = _VanishingFs(step, error)
    workspace = Workspace(root, state_dir, fs=fs)
    session = workspace.session("s")
    path = root / "victim.txt"
    path.write_bytes(b"text\n")
    resolve = workspace.resolve
    calls = 0

    def arming(requested: Any) -> Any:
        nonlocal calls
        calls += 1
        resolved = resolve(requested)
        fs.armed = calls == 2  # after the resolution under the lock, before the read
        return resolved

    monkeypatch.setattr(workspace, "resolve", arming)
    refused(code, path, lambda: session.edit("victim.txt", [EditSpec("text", "new")]))
