"""READ: whole files, line and byte ranges, encodings, binary files (DESIGN §4 "Read")."""

from __future__ import annotations

import codecs

from editspec.spec import MUST, SHOULD, assert_fields, clause, raises_code
from editspec.spec.fixtures import sha256

FIVE_LINES = "line 1\nline 2\nline 3\nline 4\nline 5\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(256)) * 8


@clause(
    "READ-001",
    MUST,
    requires={"read"},
    text="A read without a range returns the whole text, from line 1 to the last line, "
    "with total_bytes and truncated=False.",
    rationale="An agent that believes it saw the whole file must really have seen it; a silently "
    "short read leads to edits that drop the unseen part.",
)
def test_full_read_returns_everything(session, disk):
    disk.write("a.txt", FIVE_LINES)
    result = session.read("a.txt")
    assert result.content == FIVE_LINES
    assert result.start_line == 1
    assert result.end_line == 5
    assert result.total_lines == 5
    assert result.total_bytes == len(FIVE_LINES.encode())
    assert result.truncated is False


@clause(
    "READ-002",
    MUST,
    requires={"read"},
    text="sha256 is the hex SHA-256 of the file's bytes.",
    rationale="The hash is what compare-and-swap and stale detection compare; a hash of anything "
    "else makes expected_sha256 unusable.",
)
def test_sha256_is_of_the_file_bytes(session, disk):
    data = "alpha\nbeta\n"
    disk.write("a.txt", data)
    assert session.read("a.txt").sha256 == sha256(data)


@clause(
    "READ-003",
    MUST,
    requires={"read"},
    text="start_line and end_line select 1-based, inclusive lines, and the result reports "
    "the lines it returns.",
    rationale="Off-by-one line ranges make agents quote and then edit the wrong lines.",
)
def test_line_range_is_one_based_inclusive(session, disk):
    disk.write("a.txt", FIVE_LINES)
    result = session.read("a.txt", start_line=2, end_line=3)
    assert result.content == "line 2\nline 3\n"
    assert (result.start_line, result.end_line) == (2, 3)


@clause(
    "READ-004",
    MUST,
    requires={"read"},
    text="A partial read reports sha256, total_bytes and total_lines of the whole file.",
    rationale="An agent that paged through a file needs the whole file's identity to pass as "
    "expected_sha256 later.",
)
def test_partial_read_reports_whole_file_identity(session, disk):
    disk.write("a.txt", FIVE_LINES)
    result = session.read("a.txt", start_line=4, end_line=4)
    assert result.content == "line 4\n"
    assert result.sha256 == sha256(FIVE_LINES)
    assert result.total_bytes == len(FIVE_LINES)
    assert result.total_lines == 5


@clause(
    "READ-005",
    MUST,
    requires={"read"},
    text="start_line without end_line reads from that line to the end of the file.",
    rationale="Reading the rest of a file is the commonest continuation after a first page.",
)
def test_start_line_reads_to_the_end(session, disk):
    disk.write("a.txt", FIVE_LINES)
    result = session.read("a.txt", start_line=4)
    assert result.content == "line 4\nline 5\n"
    assert (result.start_line, result.end_line) == (4, 5)


@clause(
    "READ-006",
    MUST,
    requires={"read"},
    text="end_line without start_line reads from line 1 to that line.",
    rationale="The head of a file is read this way; starting anywhere else would skip lines.",
)
def test_end_line_reads_from_the_start(session, disk):
    disk.write("a.txt", FIVE_LINES)
    result = session.read("a.txt", end_line=2)
    assert result.content == "line 1\nline 2\n"
    assert (result.start_line, result.end_line) == (1, 2)


@clause(
    "READ-007",
    MUST,
    requires={"read"},
    text="start_byte and max_bytes select a byte range of the file; truncated=True when bytes "
    "remain after it.",
    rationale="Byte ranges let an agent page through files with very long lines (minified code, "
    "logs) that line ranges cannot split.",
)
def test_byte_range(session, disk):
    disk.write("a.txt", "0123456789")
    result = session.read("a.txt", start_byte=3, max_bytes=4)
    assert result.content == "3456"
    assert result.truncated is True
    tail = session.read("a.txt", start_byte=6, max_bytes=100)
    assert tail.content == "6789"
    assert tail.truncated is False


@clause(
    "READ-008",
    MUST,
    requires={"read"},
    text="max_bytes truncates at a character boundary: the content is the longest whole-character "
    "prefix within the limit, never a split or replaced character, and truncated=True.",
    rationale="Cutting a UTF-8 sequence in half yields U+FFFD or a decode error, and an agent that "
    "copies such text back into an edit corrupts the file.",
)
def test_max_bytes_truncates_at_a_character_boundary(session, disk):
    text = "ab€€€"  # "€" is three bytes in UTF-8
    disk.write("a.txt", text)
    for limit, expected in ((2, "ab"), (3, "ab"), (4, "ab"), (5, "ab€"), (7, "ab€"), (8, "ab€€")):
        result = session.read("a.txt", max_bytes=limit)
        assert result.content == expected, f"max_bytes={limit}"
        assert "\ufffd" not in result.content
        assert result.truncated is True, f"max_bytes={limit}"


@clause(
    "READ-009",
    MUST,
    requires={"read"},
    text="A max_bytes at or above the file's size returns the whole file with truncated=False.",
    rationale="A false truncated flag sends agents paging for bytes that do not exist.",
)
def test_max_bytes_at_or_above_size_is_not_truncated(session, disk):
    disk.write("a.txt", "héllo\n")
    size = len("héllo\n".encode())
    for limit in (size, size + 1, 10 * size):
        result = session.read("a.txt", max_bytes=limit)
        assert result.content == "héllo\n"
        assert result.truncated is False, f"max_bytes={limit}"


@clause(
    "READ-010",
    MUST,
    requires={"read"},
    text="A file that is not valid UTF-8 and has no UTF-16 BOM is reported as binary: encoding "
    "'binary' and empty content, never text with replaced or dropped bytes.",
    rationale="Decoding with errors='replace' turns Latin-1 or mixed files into text whose "
    "round trip through an edit destroys every non-ASCII byte.",
)
def test_invalid_utf8_is_binary_not_replaced(session, disk):
    data = b"caf\xe9 au lait\n"  # Latin-1
    disk.write("latin1.txt", data)
    result = session.read("latin1.txt")
    assert result.encoding == "binary"
    assert result.content == ""
    assert result.total_bytes == len(data)
    assert result.sha256 == sha256(data)


@clause(
    "READ-011",
    MUST,
    requires={"read"},
    text="A binary file reads as encoding 'binary' with empty content, its size in total_bytes "
    "and the sha256 of its bytes.",
    rationale="Agents need to know a binary file exists and how big it is without receiving "
    "megabytes of mojibake.",
)
def test_binary_file_metadata(session, disk):
    disk.write("image.png", PNG)
    result = session.read("image.png")
    assert result.encoding == "binary"
    assert result.content == ""
    assert result.total_bytes == len(PNG)
    assert result.sha256 == sha256(PNG)


@clause(
    "READ-012",
    MUST,
    requires={"read"},
    text="The MIME type of a binary file comes from its magic bytes: a PNG is 'image/png' "
    "whatever its name.",
    rationale="File names lie (image.dat, a .txt that is a zip); the content decides what "
    "the agent is looking at.",
)
def test_binary_mime_from_magic_bytes(session, disk):
    disk.write("picture.dat", PNG)
    assert session.read("picture.dat").mime == "image/png"


@clause(
    "READ-013",
    MUST,
    requires={"read"},
    text="preview_hex of a binary file is the hex of its first bytes, bounded (at most 512 bytes' "
    "worth) however large the file.",
    rationale="An unbounded preview of a large binary floods the agent's context.",
)
def test_binary_preview_is_bounded(session, disk):
    data = PNG + bytes(range(256)) * 4096  # about 1 MiB
    disk.write("big.png", data)
    preview = session.read("big.png").preview_hex
    assert isinstance(preview, str) and preview, "a binary read has a preview"
    compact = "".join(preview.split()).lower()
    assert 0 < len(compact) <= 1024
    assert data.hex().startswith(compact)


@clause(
    "READ-014",
    MUST,
    requires={"read"},
    text="A file with a UTF-16 LE byte-order mark is decoded as 'utf-16-le' with bom=True; the "
    "content does not include the BOM.",
    rationale="Windows tools write UTF-16; treating it as binary hides the file, and keeping the "
    "BOM in the text makes edits duplicate it.",
)
def test_utf16_le_with_bom(session, disk):
    text = "hello wörld\n"
    disk.write("u16le.txt", codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    result = session.read("u16le.txt")
    assert result.encoding == "utf-16-le"
    assert result.bom is True
    assert result.content == text


@clause(
    "READ-015",
    MUST,
    requires={"read"},
    text="A file with a UTF-16 BE byte-order mark is decoded as 'utf-16-be' with bom=True.",
    rationale="Big-endian UTF-16 exists in the wild (Java resources, old Mac tools).",
)
def test_utf16_be_with_bom(session, disk):
    text = "grüße\n"
    disk.write("u16be.txt", codecs.BOM_UTF16_BE + text.encode("utf-16-be"))
    result = session.read("u16be.txt")
    assert result.encoding == "utf-16-be"
    assert result.bom is True
    assert result.content == text


@clause(
    "READ-016",
    MUST,
    requires={"read"},
    text="A UTF-8 file with a BOM is 'utf-8' with bom=True, and the content does not start with "
    "U+FEFF.",
    rationale="A BOM left in the content ends up in old_string matching and in rewritten files "
    "twice.",
)
def test_utf8_bom_is_reported(session, disk):
    disk.write("bom.txt", codecs.BOM_UTF8 + b"key = 1\n")
    result = session.read("bom.txt")
    assert result.encoding == "utf-8"
    assert result.bom is True
    assert result.content == "key = 1\n"


@clause(
    "READ-017",
    MUST,
    requires={"read"},
    text="The newline style is reported: 'lf', 'crlf', 'mixed', or 'none' for a file without "
    "line breaks.",
    rationale="Agents and editors must write new text in the file's own style; they can only if "
    "the read tells them which it is.",
)
def test_newline_style_is_reported(session, disk):
    cases = {
        "lf.txt": (b"a\nb\n", "lf"),
        "crlf.txt": (b"a\r\nb\r\n", "crlf"),
        "mixed.txt": (b"a\nb\r\nc\n", "mixed"),
        "none.txt": (b"no newline at all", "none"),
    }
    for name, (data, style) in cases.items():
        disk.write(name, data)
        assert session.read(name).newline == style, name


@clause(
    "READ-018",
    MUST,
    requires={"read"},
    text="An empty file reads as empty text: content '', total_bytes 0, truncated=False, "
    "newline 'none', and the sha256 of no bytes.",
    rationale="Empty files (__init__.py, .gitkeep) are common; treating them as binary or "
    "missing blocks filling them.",
)
def test_empty_file(session, disk):
    disk.write("empty.py", b"")
    result = session.read("empty.py")
    assert result.content == ""
    assert result.total_bytes == 0
    assert result.truncated is False
    assert result.newline == "none"
    assert result.encoding != "binary"
    assert result.sha256 == sha256(b"")


@clause(
    "READ-019",
    MUST,
    requires={"read"},
    text="Reading a path that does not exist fails with NOT_FOUND and creates nothing.",
    rationale="A distinct code lets the agent decide to create the file instead of retrying.",
)
def test_missing_file_is_not_found(session, disk):
    disk.write("present.txt", FIVE_LINES)
    disk.write("no/such/present.txt", FIVE_LINES)
    for path in ("present.txt", "no/such/present.txt"):  # the control: existing files read
        assert session.read(path).content == FIVE_LINES, f"control: read({path!r})"
    before = disk.snapshot()
    with raises_code("NOT_FOUND"):
        session.read("missing.txt")
    with raises_code("NOT_FOUND"):
        session.read("no/such/dir/file.txt")
    disk.assert_unchanged(before)


@clause(
    "READ-020",
    MUST,
    requires={"read"},
    text="Reading a directory fails with IS_A_DIRECTORY.",
    rationale="Agents mistake directories for files; the code points them to list_directory.",
)
def test_directory_is_not_readable(session, disk):
    disk.write("pkg/mod.py", "x = 1\n")
    assert session.read("pkg/mod.py").content == "x = 1\n", "control: a file in the directory"
    before = disk.snapshot()
    with raises_code("IS_A_DIRECTORY"):
        session.read("pkg")
    disk.assert_unchanged(before)


@clause(
    "READ-021",
    MUST,
    requires={"read"},
    text="total_lines counts a last line without a trailing newline as a line, and a trailing "
    "newline does not start another one.",
    rationale="Line counts that disagree with editors put ranges past the end or miss the last "
    "line.",
)
def test_total_lines_counting(session, disk):
    disk.write("no-final.txt", "a\nb\nc")
    disk.write("final.txt", "a\nb\n")
    assert session.read("no-final.txt").total_lines == 3
    assert session.read("final.txt").total_lines == 2
    last = session.read("no-final.txt", start_line=3, end_line=3)
    assert last.content == "c"


@clause(
    "READ-022",
    MUST,
    requires={"read"},
    text="A read changes nothing on disk: no file is created, modified or removed, whatever "
    "range it asks for.",
    rationale="Reads are retried and issued in parallel by agents; they must be free of side "
    "effects.",
)
def test_read_changes_nothing(session, disk):
    disk.write("a.txt", FIVE_LINES)
    disk.write("b.bin", PNG)
    before = disk.snapshot()
    session.read("a.txt")
    session.read("a.txt", start_line=2, end_line=4)
    session.read("a.txt", start_byte=5, max_bytes=3)
    session.read("b.bin")
    disk.assert_unchanged(before)


@clause(
    "READ-023",
    MUST,
    requires={"read"},
    text="A range that makes no sense (start_line < 1, end_line < start_line, a negative "
    "start_byte or max_bytes) fails with INVALID_ARGUMENT.",
    rationale="Guessing what a nonsensical range meant returns text the agent did not ask for.",
)
def test_invalid_ranges_are_rejected(session, disk):
    disk.write("a.txt", FIVE_LINES)
    # The control: the nearest sensible ranges are served.
    assert session.read("a.txt", start_line=1, end_line=1).content == "line 1\n"
    assert session.read("a.txt", start_line=2, end_line=2).content == "line 2\n"
    assert session.read("a.txt", start_byte=0, max_bytes=4).content == "line"
    before = disk.snapshot()
    for kwargs in (
        {"start_line": 0},
        {"start_line": -1},
        {"start_line": 4, "end_line": 2},
        {"start_byte": -1},
        {"max_bytes": -5},
    ):
        with raises_code("INVALID_ARGUMENT"):
            session.read("a.txt", **kwargs)
    disk.assert_unchanged(before)


@clause(
    "READ-024",
    MUST,
    requires={"read"},
    text="A ReadResult carries the fields of the contract: path, content, start_line, end_line, "
    "total_bytes, total_lines, sha256, encoding, newline, bom, truncated, mime, preview_hex.",
    rationale="Clients are written against field names; a missing one breaks them at run time.",
)
def test_read_result_fields(session, disk):
    disk.write("a.txt", FIVE_LINES)
    disk.write("b.png", PNG)
    assert_fields(session.read("a.txt"), "ReadResult")
    assert_fields(session.read("b.png"), "ReadResult")


@clause(
    "READ-025",
    MUST,
    requires={"read"},
    text="Paging with start_byte and max_bytes, each page starting where the previous one ended, "
    "reconstructs the file exactly, multi-byte characters included.",
    rationale="Agents read large files in pages; a character lost or doubled at a page boundary "
    "corrupts what they later write back.",
)
def test_byte_paging_reconstructs_the_file(session, disk):
    text = "".join(f"{i:05d} αβγ 😀 {'x' * (i % 7)}\n" for i in range(600))
    disk.write("paged.txt", text)
    pages: list[str] = []
    offset = 0
    for _ in range(1000):
        result = session.read("paged.txt", start_byte=offset, max_bytes=1000)
        chunk = result.content.encode("utf-8")
        assert len(chunk) <= 1000
        pages.append(result.content)
        offset += len(chunk)
        if not result.truncated:
            break
        assert chunk, "a truncated page must make progress"
    assert "".join(pages) == text


@clause(
    "READ-026",
    MUST,
    requires={"read"},
    text="Non-ASCII text (accents, CJK, emoji, right-to-left scripts) reads back exactly, as "
    "encoding 'utf-8' with bom=False.",
    rationale="Locale-dependent decoding corrupts non-English source files.",
)
def test_unicode_text_is_exact(session, disk):
    text = "naïve café\n漢字かな\n😀 👍🏽\n\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd\n"
    disk.write("i18n.txt", text)
    result = session.read("i18n.txt")
    assert result.content == text
    assert result.encoding == "utf-8"
    assert result.bom is False
    assert result.total_bytes == len(text.encode())


@clause(
    "READ-027",
    SHOULD,
    requires={"read"},
    text="A binary file whose magic bytes are unknown still has a MIME type "
    "('application/octet-stream').",
    rationale="A null MIME type forces every client to special-case unknown binaries.",
)
def test_unknown_binary_has_a_mime(session, disk):
    disk.write("blob.bin", b"\x00\x01\x02\xfd\xfe\xff" * 50)
    result = session.read("blob.bin")
    assert result.encoding == "binary"
    assert result.mime == "application/octet-stream"


@clause(
    "READ-028",
    MUST,
    requires={"read"},
    text="sha256 and total_bytes describe the bytes on disk, not the decoded text: a UTF-16 or "
    "CRLF file's hash is that of its raw bytes, BOM and carriage returns included.",
    rationale="A hash of the decoded text never matches what a write would compare on disk, "
    "so compare-and-swap would always fail or, worse, always pass.",
)
def test_hash_is_of_raw_bytes(session, disk):
    utf16 = codecs.BOM_UTF16_LE + "a\r\nb\r\n".encode("utf-16-le")
    crlf = b"a\r\nb\r\n"
    disk.write("u16.txt", utf16)
    disk.write("crlf.txt", crlf)
    for name, data in (("u16.txt", utf16), ("crlf.txt", crlf)):
        result = session.read(name)
        assert result.sha256 == sha256(data), name
        assert result.total_bytes == len(data), name


@clause(
    "READ-029",
    MUST,
    requires={"read"},
    text="In a CRLF file a CRLF is one line break: total_lines and line ranges count lines as "
    "an editor shows them.",
    rationale="Counting CR and LF separately doubles line numbers on Windows files.",
)
def test_crlf_lines_count_once(session, disk):
    disk.write("crlf.txt", b"one\r\ntwo\r\nthree\r\n")
    result = session.read("crlf.txt")
    assert result.total_lines == 3
    middle = session.read("crlf.txt", start_line=2, end_line=2)
    assert middle.content.rstrip("\r\n") == "two"
