"""Read (``reference/_read.py``): ranges, truncation, encodings, binary files, records."""

from __future__ import annotations

import codecs
import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference import Limits, Session, ToolError, Workspace


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _error(session: Session, path: str, **kwargs: object) -> ToolError:
    with pytest.raises(ToolError) as info:
        session.read(path, **kwargs)  # type: ignore[arg-type]
    return info.value


# -- whole files -----------------------------------------------------------------------


def test_full_read_reports_every_field(session: Session, root: Path) -> None:
    data = b"alpha\nbeta\ngamma\n"
    (root / "f.txt").write_bytes(data)
    result = session.read("f.txt")
    assert (result.path, result.content) == ("f.txt", "alpha\nbeta\ngamma\n")
    assert (result.start_line, result.end_line, result.total_lines) == (1, 3, 3)
    assert (result.total_bytes, result.sha256) == (len(data), _sha(data))
    assert (result.encoding, result.newline, result.bom, result.truncated) == (
        "utf-8",
        "lf",
        False,
        False,
    )
    assert (result.mime, result.preview_hex) == (None, None)
    assert (result.start_byte, result.end_byte) == (0, len(data))
    assert (root / "f.txt").read_bytes() == data


def test_full_read_registers_a_full_access_record(
    session: Session, workspace: Workspace, root: Path
) -> None:
    data = b"x\ny\n"
    (root / "f.txt").write_bytes(data)
    session.read("f.txt")
    record = workspace.access.get("s1", str(root / "f.txt"))
    assert record is not None
    assert (record.sha256, record.size, record.full) == (_sha(data), 4, True)
    assert record.mtime_ns == os.stat(root / "f.txt").st_mtime_ns


def test_last_line_without_newline_counts(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"a\nb")
    result = session.read("f.txt")
    assert (result.total_lines, result.end_line, result.newline) == (2, 2, "lf")


def test_empty_file(session: Session, root: Path) -> None:
    (root / "empty").write_bytes(b"")
    result = session.read("empty")
    assert (result.content, result.total_lines, result.start_line, result.end_line) == ("", 0, 1, 0)
    assert (result.newline, result.truncated, result.sha256) == ("none", False, _sha(b""))


def test_crlf_is_kept_in_content(session: Session, root: Path) -> None:
    (root / "w.txt").write_bytes(b"a\r\nb\r\n")
    result = session.read("w.txt")
    assert (result.content, result.newline) == ("a\r\nb\r\n", "crlf")


def test_mixed_newlines_are_reported(session: Session, root: Path) -> None:
    (root / "m.txt").write_bytes(b"a\r\nb\n")
    assert session.read("m.txt").newline == "mixed"


def test_utf8_bom_is_reported_and_stripped(session: Session, root: Path) -> None:
    data = codecs.BOM_UTF8 + "é\n".encode()
    (root / "bom.txt").write_bytes(data)
    result = session.read("bom.txt")
    assert (result.content, result.bom, result.encoding) == ("é\n", True, "utf-8")
    assert (result.sha256, result.total_bytes) == (_sha(data), len(data))
    assert (result.start_byte, result.end_byte) == (3, len(data))


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom_is_text(session: Session, root: Path, encoding: str) -> None:
    bom = codecs.BOM_UTF16_LE if encoding == "utf-16-le" else codecs.BOM_UTF16_BE
    data = bom + "ü\r\n😀\r\n".encode(encoding)
    (root / "u.txt").write_bytes(data)
    result = session.read("u.txt")
    assert (result.content, result.encoding, result.bom, result.newline) == (
        "ü\r\n😀\r\n",
        encoding,
        True,
        "crlf",
    )
    assert result.sha256 == _sha(data)


# -- binary ----------------------------------------------------------------------------


def test_binary_file_has_no_content_but_mime_and_preview(
    session: Session, workspace: Workspace, root: Path
) -> None:
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    (root / "img.png").write_bytes(data)
    result = session.read("img.png")
    preview = workspace.limits.binary_preview_bytes
    assert (result.content, result.encoding, result.mime) == ("", "binary", "image/png")
    assert result.preview_hex == data[:preview].hex()
    assert (result.total_bytes, result.sha256) == (len(data), _sha(data))
    assert (result.start_byte, result.end_byte) == (0, preview)
    record = workspace.access.get("s1", str(root / "img.png"))
    assert record is not None and record.full and record.sha256 == _sha(data)


def test_invalid_utf8_is_binary_never_replaced(session: Session, root: Path) -> None:
    data = b"almost text \xff here\n"
    (root / "odd.txt").write_bytes(data)
    result = session.read("odd.txt")
    assert (result.content, result.encoding, result.mime) == (
        "",
        "binary",
        "application/octet-stream",
    )
    assert result.preview_hex == data.hex()


def test_binary_preview_from_an_offset_is_bounded(session: Session, root: Path) -> None:
    data = bytes(range(256))
    (root / "b.bin").write_bytes(data)
    result = session.read("b.bin", start_byte=100, max_bytes=8)
    assert result.preview_hex == data[100:108].hex()
    assert (result.start_byte, result.end_byte) == (100, 108)


def test_forced_binary_encoding_on_text(session: Session, root: Path) -> None:
    (root / "t.txt").write_bytes(b"hello")
    result = session.read("t.txt", encoding="binary")
    assert (result.content, result.encoding, result.preview_hex) == ("", "binary", b"hello".hex())


def test_forced_utf8_reads_nul_bytes(session: Session, root: Path) -> None:
    (root / "n.txt").write_bytes(b"a\x00b")
    assert session.read("n.txt").encoding == "binary"
    assert session.read("n.txt", encoding="utf-8").content == "a\x00b"
    assert session.read("n.txt", encoding="UTF8").content == "a\x00b"


def test_forced_utf16_without_bom(session: Session, root: Path) -> None:
    (root / "n.txt").write_bytes("hi".encode("utf-16-le"))
    result = session.read("n.txt", encoding="utf-16-le")
    assert (result.content, result.bom) == ("hi", False)


def test_forced_encoding_that_does_not_fit_is_invalid(session: Session, root: Path) -> None:
    (root / "bad").write_bytes(b"\xff\xfe\x00")
    assert _error(session, "bad", encoding="utf-8").code == "INVALID_ARGUMENT"
    assert _error(session, "bad", encoding="latin-1").code == "INVALID_ARGUMENT"


# -- line ranges -----------------------------------------------------------------------


@pytest.fixture
def numbered(root: Path) -> bytes:
    data = "".join(f"line {n}\n" for n in range(1, 11)).encode()
    (root / "n.txt").write_bytes(data)
    return data


def test_line_range_is_one_based_and_inclusive(session: Session, numbered: bytes) -> None:
    result = session.read("n.txt", start_line=3, end_line=5)
    assert result.content == "line 3\nline 4\nline 5\n"
    assert (result.start_line, result.end_line, result.total_lines) == (3, 5, 10)
    assert result.sha256 == _sha(numbered)  # always the whole file
    assert result.start_byte == numbered.index(b"line 3")
    assert result.end_byte == numbered.index(b"line 6")


def test_end_line_past_the_end_is_clamped(session: Session, numbered: bytes) -> None:
    result = session.read("n.txt", start_line=9, end_line=500)
    assert (result.content, result.end_line) == ("line 9\nline 10\n", 10)
    assert result.warnings


def test_start_line_alone_reads_to_the_end(session: Session, numbered: bytes) -> None:
    assert session.read("n.txt", start_line=10).content == "line 10\n"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"start_line": 0},
        {"start_line": -1},
        {"end_line": 0},
        {"start_line": 11},
        {"start_line": 5, "end_line": 4},
        {"start_byte": -1},
        {"start_byte": 10_000},
        {"max_bytes": 0},
        {"start_line": True},
        {"start_line": "1"},
        {"start_line": 1, "start_byte": 0},
        {"encoding": "ebcdic"},
    ],
)
def test_invalid_ranges_are_rejected(
    session: Session, numbered: bytes, kwargs: dict[str, object]
) -> None:
    assert _error(session, "n.txt", **kwargs).code == "INVALID_ARGUMENT"


def test_partial_read_registers_a_partial_record(
    session: Session, workspace: Workspace, root: Path, numbered: bytes
) -> None:
    session.read("n.txt", start_line=2, end_line=3)
    record = workspace.access.get("s1", str(root / "n.txt"))
    assert record is not None and not record.full and record.sha256 == _sha(numbered)


def test_a_range_that_covers_everything_is_a_full_read(
    session: Session, workspace: Workspace, root: Path, numbered: bytes
) -> None:
    session.read("n.txt", start_line=1, end_line=10)
    record = workspace.access.get("s1", str(root / "n.txt"))
    assert record is not None and record.full


# -- truncation and byte ranges --------------------------------------------------------


def test_max_bytes_cuts_after_the_last_whole_line(session: Session, numbered: bytes) -> None:
    result = session.read("n.txt", max_bytes=20)
    assert result.content == "line 1\nline 2\n"
    assert (result.truncated, result.end_line, result.end_byte) == (True, 2, 14)


def test_default_max_bytes_comes_from_the_limits(root: Path, state_dir: Path) -> None:
    (root / "f.txt").write_bytes(b"0123456789" * 10)
    workspace = Workspace(root, state_dir, Limits(read_max_bytes=16))
    result = workspace.session("s").read("f.txt")
    assert (result.content, result.truncated) == ("0123456789012345", True)
    record = workspace.access.get("s", str(root / "f.txt"))
    assert record is not None and not record.full


def test_truncation_never_splits_a_character(session: Session, root: Path) -> None:
    data = "€€€€".encode()  # 3 bytes each, one line
    (root / "e.txt").write_bytes(data)
    result = session.read("e.txt", max_bytes=7)
    assert (result.content, result.truncated, result.end_byte) == ("€€", True, 6)


def test_start_byte_inside_a_character_moves_to_the_next_boundary(
    session: Session, root: Path
) -> None:
    (root / "e.txt").write_bytes("a€b".encode())
    result = session.read("e.txt", start_byte=2)
    assert (result.content, result.start_byte) == ("b", 4)
    assert result.warnings


def test_byte_range_reports_lines(session: Session, numbered: bytes) -> None:
    start = numbered.index(b"line 4")
    result = session.read("n.txt", start_byte=start, max_bytes=10)
    assert result.content == "line 4\nlin"
    assert (result.start_line, result.end_line, result.truncated) == (4, 5, True)
    assert (result.start_byte, result.end_byte) == (start, start + 10)


def test_byte_read_of_everything_is_full(
    session: Session, workspace: Workspace, root: Path, numbered: bytes
) -> None:
    result = session.read("n.txt", start_byte=0)
    record = workspace.access.get("s1", str(root / "n.txt"))
    assert result.content == numbered.decode() and record is not None and record.full


@st.composite
def _encoded_texts(draw: st.DrawFn) -> bytes:
    text = draw(
        st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff"),
            max_size=40,
        )
    )
    encoding = draw(st.sampled_from(["utf-8", "utf-8-bom", "utf-16-le", "utf-16-be"]))
    if encoding == "utf-8":
        return text.encode()
    if encoding == "utf-8-bom":
        return codecs.BOM_UTF8 + text.encode()
    bom = codecs.BOM_UTF16_LE if encoding == "utf-16-le" else codecs.BOM_UTF16_BE
    return bom + text.encode(encoding)


@given(data=_encoded_texts(), page=st.integers(min_value=4, max_value=17))
def test_paging_by_bytes_reassembles_the_whole_text(
    session: Session, root: Path, data: bytes, page: int
) -> None:
    (root / "p.txt").write_bytes(data)
    whole = session.read("p.txt", max_bytes=1 << 20)
    pieces, offset = [], 0
    while True:
        result = session.read("p.txt", start_byte=offset, max_bytes=page)
        assert (
            len(result.content.encode(whole.encoding if whole.encoding != "binary" else "utf-8"))
            <= page
        )
        pieces.append(result.content)
        if not result.truncated:
            break
        assert result.end_byte > offset
        offset = result.end_byte
    assert "".join(pieces) == whole.content


@given(data=_encoded_texts(), page=st.integers(min_value=4, max_value=30))
def test_paging_by_lines_reassembles_the_whole_text(
    session: Session, root: Path, data: bytes, page: int
) -> None:
    (root / "p.txt").write_bytes(data)
    whole = session.read("p.txt", max_bytes=1 << 20)
    if whole.total_lines == 0:
        return
    pieces, line = [], 1
    while line <= whole.total_lines:
        result = session.read("p.txt", start_line=line, max_bytes=page)
        pieces.append(result.content)
        if result.content.endswith("\n") or not result.truncated:
            line = result.end_line + 1
            continue
        # One line longer than a page: continue it by bytes.
        rest = session.read("p.txt", start_byte=result.end_byte, max_bytes=1 << 20)
        tail = rest.content.split("\n", 1)[0]
        pieces.append(tail + ("\n" if "\n" in rest.content else ""))
        line = result.end_line + 1
    assert "".join(pieces) == whole.content


# -- what cannot be read ---------------------------------------------------------------


def test_directory_is_a_directory(session: Session, root: Path) -> None:
    (root / "d").mkdir()
    assert _error(session, "d").code == "IS_A_DIRECTORY"
    assert _error(session, ".").code == "IS_A_DIRECTORY"


def test_missing_file_is_not_found(session: Session) -> None:
    assert _error(session, "nope.txt").code == "NOT_FOUND"
    assert _error(session, "no/such/dir.txt").code == "NOT_FOUND"


def test_fifo_is_not_a_regular_file(session: Session, root: Path) -> None:
    os.mkfifo(root / "pipe")
    assert _error(session, "pipe").code == "INVALID_ARGUMENT"


def test_outside_paths_are_refused(session: Session, tmp_path: Path, root: Path) -> None:
    (tmp_path / "secret").write_bytes(b"s")
    (root / "leak").symlink_to(tmp_path / "secret")
    assert _error(session, "../secret").code == "OUTSIDE_WORKSPACE"
    assert _error(session, "leak").code == "OUTSIDE_WORKSPACE"


def test_read_through_an_alias_reports_the_logical_path_and_keys_the_target(
    session: Session, workspace: Workspace, root: Path
) -> None:
    (root / "target.txt").write_bytes(b"t\n")
    (root / "alias.txt").symlink_to("target.txt")
    assert session.read("alias.txt").path == "alias.txt"
    assert workspace.access.get("s1", str(root / "target.txt")) is not None
    assert workspace.access.get("s1", str(root / "alias.txt")) is None


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_byte_ranges_start_on_whole_characters(
    session: Session, root: Path, encoding: str
) -> None:
    bom = codecs.BOM_UTF16_LE if encoding == "utf-16-le" else codecs.BOM_UTF16_BE
    data = bom + "ab😀cd".encode(encoding)  # a=2 b=4 😀=6..9 c=10 d=12
    (root / "u.txt").write_bytes(data)
    assert session.read("u.txt", start_byte=3).content == "b😀cd"  # odd: next unit
    assert session.read("u.txt", start_byte=8).content == "cd"  # inside the pair
    assert session.read("u.txt", start_byte=0).start_byte == 2  # the BOM is not content
    result = session.read("u.txt", start_byte=6, max_bytes=5)
    assert (result.content, result.end_byte, result.truncated) == ("😀", 10, True)


def test_binary_start_byte_past_the_end_is_invalid(session: Session, root: Path) -> None:
    (root / "b.bin").write_bytes(b"\x00\x01")
    assert _error(session, "b.bin", start_byte=3).code == "INVALID_ARGUMENT"
    assert session.read("b.bin", start_byte=2).preview_hex == ""


def test_line_ranges_on_a_binary_file_warn_and_preview(session: Session, root: Path) -> None:
    (root / "b.bin").write_bytes(b"\x00\x01\x02")
    result = session.read("b.bin", start_line=2, end_line=3)
    assert (result.preview_hex, result.encoding) == ("000102", "binary")
    assert result.warnings


def test_non_string_encoding_is_invalid(session: Session, root: Path) -> None:
    (root / "t.txt").write_bytes(b"t")
    assert _error(session, "t.txt", encoding=None).code == "INVALID_ARGUMENT"
