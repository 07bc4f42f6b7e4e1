"""The content memo (reference/_memo.py): remembered hashes and texts, for identical bytes only."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference import EditSpec, ToolError, Workspace
from editspec.reference._fs import FileSystem
from editspec.reference.text._memo import ContentMemo
from editspec.reference.text._text import DecodedText, decode

KEY = "/ws/file.txt"


def big(text: str, size: int = 300 * 1024) -> bytes:
    return (text * (size // len(text) + 1)).encode()


def test_a_remembered_hash_is_used_for_equal_bytes_only() -> None:
    memo = ContentMemo()
    data = big("alpha\n")
    assert memo.sha256_later(KEY, data)() == hashlib.sha256(data).hexdigest()
    # A different object with the same content: the remembered value.
    same = bytes(bytearray(data))
    assert memo.sha256_later(KEY, same)() == hashlib.sha256(data).hexdigest()
    # Same size, one byte changed: hashed again, never the remembered value.
    changed = b"A" + data[1:]
    assert memo.sha256_later(KEY, changed)() == hashlib.sha256(changed).hexdigest()
    # Another key does not see this key's entry.
    assert memo.sha256_later("/ws/other", changed)() == hashlib.sha256(changed).hexdigest()


def test_small_inputs_are_not_remembered_but_still_right() -> None:
    memo = ContentMemo()
    data = b"small\n"
    assert memo.sha256_later(KEY, data)() == hashlib.sha256(data).hexdigest()
    assert memo.decode(KEY, data) == decode(data)
    assert memo.decode(KEY, b"\x00\x01") is None


def test_decode_is_remembered_and_counts_lines_on_request() -> None:
    memo = ContentMemo()
    data = big("one\r\ntwo\n")
    first = memo.decode(KEY, data)
    assert first == decode(data)
    assert first is not None and first.line_breaks is None
    counted = memo.decode(KEY, bytes(bytearray(data)), count_lines=True)
    assert counted == first
    assert counted is not None and counted.line_breaks == data.count(b"\n")
    # Remembered now, with its count.
    assert memo.decode(KEY, data) is counted
    assert memo.decode(KEY, big("binary\x00")) is None


def test_remember_text_refuses_what_decode_would_read_differently() -> None:
    memo = ContentMemo()
    nul = big("x\x00")
    memo.remember_text(
        KEY, nul, DecodedText(text=nul.decode(), encoding="utf-8", bom=False, newline="none")
    )
    assert memo.decode(KEY, nul) is None  # binary, as _text.decode says
    with_bom = "\ufeff".encode() + big("y")
    wrong = DecodedText(text=with_bom.decode(), encoding="utf-8", bom=False, newline="none")
    memo.remember_text(KEY, with_bom, wrong)
    assert memo.decode(KEY, with_bom) == decode(with_bom)
    assert decode(with_bom) is not None and decode(with_bom).bom  # type: ignore[union-attr]


def test_capacity_evicts_the_least_recently_used() -> None:
    size = 300 * 1024
    memo = ContentMemo(capacity_bytes=2 * size + 10, min_bytes=1024)
    blobs = {name: big(name, size)[:size] for name in ("a", "b", "c")}
    for name, data in blobs.items():
        memo.sha256_later(name, data)()
    assert memo._lookup("a", blobs["a"]) is None  # evicted first
    assert memo._lookup("b", blobs["b"]) is not None
    assert memo._lookup("c", blobs["c"]) is not None
    too_big = ContentMemo(capacity_bytes=size // 2, min_bytes=1024)
    too_big.sha256_later("a", blobs["a"])()
    assert too_big._lookup("a", blobs["a"]) is None


@given(
    lines=st.lists(
        st.sampled_from(["row", "row\r", "col", "", "\u00e9t\u00e9", "x\ty"]),
        min_size=1,
        max_size=20,
    ),
    newline=st.sampled_from(["\n", "\r\n"]),
    pick=st.integers(0, 19),
    new=st.sampled_from(["", "new", "new\nline", "tab\there\r\n"]),
)
def test_after_an_edit_the_memo_agrees_with_the_disk(
    tmp_path_factory: object, lines: list[str], newline: str, pick: int, new: str
) -> None:
    base = Path(tmp_path_factory.mktemp("memo"))  # type: ignore[attr-defined]
    (base / "ws").mkdir()
    workspace = Workspace(base / "ws", base / "state")
    session = workspace.session("s")
    marker = f"<{pick}>"
    body = newline.join(
        line + (marker if index == pick % len(lines) else "") for index, line in enumerate(lines)
    )
    # Padding puts the file over the memo's threshold, so the memo is really used.
    data = (body + newline + "pad\n" * 70_000).encode()
    path = base / "ws" / "f.txt"
    path.write_bytes(data)
    read = session.read("f.txt", max_bytes=1 << 24)
    assert read.total_lines == data.decode().count("\n") + (0 if data.endswith(b"\n") else 1)
    session.edit("f.txt", [EditSpec(marker, new)])
    disk = path.read_bytes()
    key = str(path.resolve())
    assert workspace.memo.decode(key, disk) == decode(disk)
    assert workspace.memo.sha256_later(key, disk)() == hashlib.sha256(disk).hexdigest()
    reread = session.read("f.txt", max_bytes=1 << 24)
    text = disk.decode()
    assert reread.total_lines == text.count("\n") + (0 if text.endswith("\n") else 1)
    assert reread.sha256 == hashlib.sha256(disk).hexdigest()
    assert reread.content == text
    assert reread.newline == decode(disk).newline  # type: ignore[union-attr]


def test_an_edit_that_inserts_nul_leaves_a_binary_file_binary(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    workspace = Workspace(tmp_path / "ws", tmp_path / "state")
    session = workspace.session("s")
    path = tmp_path / "ws" / "f.txt"
    data = b"head\n" + b"line\n" * 70_000
    path.write_bytes(data)
    session.read("f.txt", max_bytes=1 << 24)
    session.edit("f.txt", [EditSpec("head", "he\x00ad")])
    disk = path.read_bytes()
    assert disk == data.replace(b"head", b"he\x00ad")
    assert workspace.memo.decode(str(path.resolve()), disk) is None
    assert session.read("f.txt").encoding == "binary"


def test_equal_bytes_are_compared_once_per_object() -> None:
    memo = ContentMemo()
    data = big("gamma\n")
    memo.sha256_later(KEY, data)()
    copy = bytes(bytearray(data))
    first = memo._lookup(KEY, copy)
    assert first is not None and first.data is copy  # the entry now holds the caller's object
    assert memo._lookup(KEY, copy) is not None


# -- the line index -----------------------------------------------------------------------

_chars = st.sampled_from(["a", "b", "\n", "\r\n", " ", "\u00e9"])


@given(
    text=st.lists(_chars, max_size=400).map("".join),
    offsets=st.lists(st.integers(0, 400), max_size=10),
)
def test_line_index_counts_like_str_count(text: str, offsets: list[int]) -> None:
    import editspec.reference.text._memo as memo_module

    step = memo_module.LINE_INDEX_STEP
    memo_module.LINE_INDEX_STEP = 7  # many checkpoints in a small text
    try:
        index = memo_module.LineIndex.build(text)
    finally:
        memo_module.LINE_INDEX_STEP = step
    assert index.total == text.count("\n")
    for offset in offsets:
        offset = min(offset, len(text))
        assert index.newlines_before(text, offset) == text.count("\n", 0, offset)


@given(
    text=st.lists(_chars, max_size=300).map("".join),
    data=st.data(),
    inserted=st.lists(_chars, max_size=40).map("".join),
)
def test_line_index_after_an_edit_counts_like_the_new_text(
    text: str, data: st.DataObject, inserted: str
) -> None:
    import editspec.reference.text._memo as memo_module

    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    new_text = text[:start] + inserted + text[end:]
    step = memo_module.LINE_INDEX_STEP
    memo_module.LINE_INDEX_STEP = 5
    try:
        index = memo_module.LineIndex.build(text)
    finally:
        memo_module.LINE_INDEX_STEP = step
    moved = index.after_edit(text, new_text, start, len(text) - end)
    assert moved.total == new_text.count("\n")
    assert list(moved.offsets) == sorted(set(moved.offsets))
    for offset in range(len(new_text) + 1):
        assert moved.newlines_before(new_text, offset) == new_text.count("\n", 0, offset)


def test_an_edit_uses_and_moves_the_line_index(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    workspace = Workspace(tmp_path / "ws", tmp_path / "state")
    session = workspace.session("s")
    path = tmp_path / "ws" / "f.txt"
    lines = [f"line {number}" for number in range(300_000)]
    path.write_bytes(("\n".join(lines) + "\n").encode())
    session.read("f.txt", max_bytes=1 << 24)
    key = str(path.resolve())
    assert workspace.memo.line_index(key, path.read_bytes()) is not None
    first = session.edit("f.txt", [EditSpec("line 250000\n", "a\nb\nc\n")])
    assert first.replacements[0].line == 250_001
    # The index moved with the text: the next edit's line numbers are right too.
    second = session.edit("f.txt", [EditSpec("line 299999\n", "end\n")])
    assert second.replacements[0].line == 300_002
    disk = path.read_bytes()
    index = workspace.memo.line_index(key, disk)
    assert index is not None and index.total == disk.count(b"\n")
    assert session.read("f.txt", max_bytes=1 << 24).total_lines == disk.count(b"\n")


def test_line_index_drops_checkpoints_inside_the_changed_region() -> None:
    import editspec.reference.text._memo as memo_module

    text = "a\nb\nc\nd\ne\nf\n"
    index = memo_module.LineIndex(offsets=(0, 4, 8, 12), newlines=(0, 2, 4, 6))
    new_text = text[:3] + "X" + text[9:]  # replaces "\nc\nd\ne" (offsets 3..9)
    moved = index.after_edit(text, new_text, 3, len(text) - 9)
    assert 4 not in moved.offsets and 8 not in moved.offsets
    assert moved.offsets == (0, len(new_text))
    for offset in range(len(new_text) + 1):
        assert moved.newlines_before(new_text, offset) == new_text.count("\n", 0, offset)


class _ChangeBeforeVerify(FileSystem):
    """An external writer that rewrites ``target`` (same size) just before the check that
    precedes the rename: the engine's last compare against its remembered bytes."""

    def __init__(self, target: Path, replacement: bytes) -> None:
        super().__init__()
        self.target, self.replacement, self.armed = target, replacement, False

    def create_exclusive(self, path: str, mode: int = 0o600) -> int:
        if self.armed and os.path.dirname(path) == str(self.target.parent):
            self.armed = False  # the temp file beside the target: the rename comes next
            self.target.write_bytes(self.replacement)
        return super().create_exclusive(path, mode)


def _one_byte_changed(data: bytes, at: int) -> bytes:
    return data[:at] + (b"Y" if data[at : at + 1] != b"Y" else b"Z") + data[at + 1 :]


def test_a_same_size_change_of_a_remembered_file_is_stale(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    path = tmp_path / "ws" / "f.txt"
    data = big("line of text\n")
    path.write_bytes(data)
    session = Workspace(tmp_path / "ws", tmp_path / "state").session("s")
    session.read("f.txt", max_bytes=1 << 24)  # remembered: the edit compares in place
    changed = _one_byte_changed(data, len(data) - 2)
    path.write_bytes(changed)
    with pytest.raises(ToolError) as caught:
        session.edit("f.txt", [EditSpec("line of text", "LINE", replace_all=True)])
    assert caught.value.code == "STALE"
    assert path.read_bytes() == changed


def test_a_same_size_change_just_before_the_rename_of_a_remembered_file_is_stale(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    path = tmp_path / "ws" / "f.txt"
    data = big("line of text\n")
    path.write_bytes(data)
    changed = _one_byte_changed(data, len(data) // 2)
    fs = _ChangeBeforeVerify(path, changed)
    session = Workspace(tmp_path / "ws", tmp_path / "state", fs=fs).session("s")
    session.read("f.txt", max_bytes=1 << 24)
    fs.armed = True
    with pytest.raises(ToolError) as caught:
        session.edit("f.txt", [EditSpec("line of text", "LINE", replace_all=True)])
    assert caught.value.code == "STALE"
    assert not fs.armed  # the writer did run, between the plan and the rename
    assert path.read_bytes() == changed
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.txt"]  # no temp left
