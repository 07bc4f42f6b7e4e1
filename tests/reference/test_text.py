"""Decoding, re-encoding, newline styles and MIME sniffing (``reference/_text.py``)."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference._errors import ToolError
from editspec.reference.text._text import (
    DecodedText,
    decode,
    decode_as,
    encode,
    is_binary,
    newline_style,
    sha256_hex,
    sniff_mime,
)

# -- decode ----------------------------------------------------------------------------


def test_sha256_hex_is_the_lowercase_hex_digest() -> None:
    assert sha256_hex(b"abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_plain_utf8_decodes_without_bom() -> None:
    decoded = decode("héllo\n".encode())
    assert decoded == DecodedText(text="héllo\n", encoding="utf-8", bom=False, newline="lf")


def test_utf8_bom_is_stripped_and_remembered() -> None:
    decoded = decode(codecs.BOM_UTF8 + b"a\r\nb\r\n")
    assert decoded is not None
    assert decoded.text == "a\r\nb\r\n"
    assert decoded.bom and decoded.encoding == "utf-8" and decoded.newline == "crlf"


@pytest.mark.parametrize(
    ("bom", "encoding"),
    [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")],
)
def test_utf16_with_bom_decodes(bom: bytes, encoding: str) -> None:
    decoded = decode(bom + "x\ny€😀".encode(encoding))
    assert decoded is not None
    assert (decoded.text, decoded.encoding, decoded.bom) == ("x\ny€😀", encoding, True)


def test_utf16_without_bom_is_binary() -> None:
    # "ab" in UTF-16-LE is a\0b\0: valid UTF-8 bytes, but NUL makes it binary.
    assert decode("ab".encode("utf-16-le")) is None


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe\x00",  # odd length after a UTF-16 BOM
        codecs.BOM_UTF16_LE + b"\x00\xd8",  # a lone high surrogate
        codecs.BOM_UTF16_BE + b"\xdc\x00",  # a lone low surrogate
        b"caf\xe9",  # Latin-1, not UTF-8
        b"\xed\xa0\x80",  # an encoded surrogate is not UTF-8
        b"\xc0\xaf",  # an overlong encoding
        codecs.BOM_UTF8 + b"\xff",
        b"text\x00more",
        b"\xff\xfe\x00\x00a\x00\x00\x00",  # UTF-32 LE: decodes to U+0000 first
    ],
)
def test_invalid_or_nul_bearing_data_is_binary(data: bytes) -> None:
    assert decode(data) is None
    assert is_binary(data)


def test_decoding_never_substitutes_replacement_characters() -> None:
    data = b"ok \x80 ok"
    assert decode(data) is None
    assert decode_as(data, "utf-8") is None


def test_decode_as_accepts_nul_when_the_caller_chooses_the_encoding() -> None:
    decoded = decode_as(b"a\x00b", "utf-8")
    assert decoded is not None and decoded.text == "a\x00b"


def test_empty_data_is_empty_text() -> None:
    assert decode(b"") == DecodedText(text="", encoding="utf-8", bom=False, newline="none")


# -- newline styles --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "style"),
    [
        ("", "none"),
        ("no newline", "none"),
        ("a\nb\n", "lf"),
        ("a\r\nb\r\n", "crlf"),
        ("a\r\nb\n", "mixed"),
        ("a\rb", "none"),  # a lone CR is not a line break
        ("a\rb\n", "lf"),
        ("a\r\r\n", "crlf"),
    ],
)
def test_newline_style(text: str, style: str) -> None:
    assert newline_style(text) == style


# -- encode ----------------------------------------------------------------------------


def test_encode_without_like_is_plain_utf8() -> None:
    assert encode("é\r\n") == b"\xc3\xa9\r\n"


def test_encode_restores_bom_and_encoding() -> None:
    like = DecodedText(text="", encoding="utf-16-be", bom=True, newline="none")
    assert encode("hi", like) == codecs.BOM_UTF16_BE + b"\x00h\x00i"


def test_encode_rejects_lone_surrogates() -> None:
    with pytest.raises(ToolError) as info:
        encode("bad \ud800 text")
    assert info.value.code == "INVALID_ARGUMENT"


# Property (b): decode then encode is byte-identical, for every supported encoding,
# newline style and BOM.

_line_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r\n\ufeff"),
    max_size=12,
)
_newline = st.sampled_from(["\n", "\r\n", "\r", ""])


@st.composite
def _documents(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.tuples(_line_text, _newline), max_size=8))
    return "".join(line + end for line, end in lines)


@given(
    text=_documents(),
    encoding=st.sampled_from(["utf-8", "utf-16-le", "utf-16-be"]),
    bom=st.booleans(),
)
def test_decode_then_encode_is_byte_identical(text: str, encoding: str, bom: bool) -> None:
    if encoding != "utf-8":
        bom = True  # UTF-16 is recognised only with its BOM
    prefix = {
        "utf-8": codecs.BOM_UTF8,
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
    }[encoding]
    data = (prefix if bom else b"") + text.encode(encoding)
    decoded = decode(data)
    assert decoded is not None
    assert decoded.text == text
    assert (decoded.encoding, decoded.bom) == (encoding, bom)
    assert decoded.newline == newline_style(text)
    assert encode(decoded.text, decoded) == data


@given(st.binary(max_size=64))
def test_whatever_decodes_reencodes_to_the_same_bytes(data: bytes) -> None:
    decoded = decode(data)
    if decoded is not None:
        assert encode(decoded.text, decoded) == data
        assert "\ufffd" not in decoded.text or "\ufffd".encode() in data


# -- MIME sniffing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\x00", "image/gif"),
        (b"GIF87a\x01\x00", "image/gif"),
        (b"%PDF-1.7\n%\xe2\xe3", "application/pdf"),
        (b"PK\x03\x04\x14\x00", "application/zip"),
        (b"\x1f\x8b\x08\x00", "application/gzip"),
        (b"\x7fELF\x02\x01\x01\x00", "application/x-elf"),
        (b"\x00asm\x01\x00\x00\x00", "application/wasm"),
        (b"SQLite format 3\x00\x10\x00", "application/vnd.sqlite3"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio/wav"),
        (b"\x00\x00\x00\x18ftypmp42", "video/mp4"),
        (b"\x00\x00\x00\x18ftypheic", "image/heic"),
        (b"BZh91AY&SY", "application/x-bzip2"),
        (b"\xfd7zXZ\x00\x00", "application/x-xz"),
        (b"\x28\xb5\x2f\xfd\x04", "application/zstd"),
        (b"\x00" * 257 + b"ustar\x0000", "application/x-tar"),
        (b"\xca\xfe\xba\xbe\x00\x00", "application/java-vm"),
        (b"\x93NUMPY\x01\x00", "application/x-npy"),
        (b"\x01\x02\x03\x04", "application/octet-stream"),
        (b"", "application/octet-stream"),
    ],
)
def test_sniff_mime_from_magic_bytes(data: bytes, mime: str) -> None:
    assert sniff_mime(data) == mime


@pytest.mark.parametrize("size", [0, 10, 4 << 20])
def test_sha256_later_gives_the_same_digest(size: int) -> None:
    from editspec.reference.text._text import sha256_later

    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert sha256_later(data)() == sha256_hex(data)


def test_sha256_later_hands_a_failure_to_the_caller() -> None:
    from editspec.reference.text._text import sha256_later

    pending = sha256_later("text is not bytes" * (1 << 17))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pending()
