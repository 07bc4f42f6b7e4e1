"""Text and bytes: hashing, strict decoding, byte-identical re-encoding, MIME sniffing.

The rules (DESIGN §4 "Read", "Edit"):

* Strict UTF-8 first (with or without a BOM), then UTF-16 LE/BE, but only with a BOM;
  anything else is binary. Nothing is ever replaced by U+FFFD: a file either decodes
  exactly or it is binary.
* A decoded text that contains U+0000 is binary too (source text never holds NUL; images,
  archives and UTF-32 files do, and treating them as text would mangle them on edit).
* ``DecodedText.text`` keeps the file's newlines as they are; the BOM is stripped and
  remembered, so ``encode(decoded.text, decoded)`` gives back the original bytes.
* A newline is ``\\n`` (``\\r\\n`` counts as one CRLF newline). A lone ``\\r`` is not a
  line break: it is kept as ordinary text.
"""

from __future__ import annotations

import codecs
import hashlib
import threading
from collections.abc import Callable

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError

UTF8 = "utf-8"
UTF16_LE = "utf-16-le"
UTF16_BE = "utf-16-be"
BINARY = "binary"
TEXT_ENCODINGS: tuple[str, ...] = (UTF8, UTF16_LE, UTF16_BE)

_BOMS: dict[str, bytes] = {
    UTF8: codecs.BOM_UTF8,
    UTF16_LE: codecs.BOM_UTF16_LE,
    UTF16_BE: codecs.BOM_UTF16_BE,
}

LF = "lf"
CRLF = "crlf"
MIXED = "mixed"
NONE = "none"


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``: the identity of a file's content (TRACK-*)."""
    return hashlib.sha256(data).hexdigest()


# Below this size a worker thread costs more than the hashing it hides.
_BACKGROUND_HASH_BYTES = 1 << 20


def sha256_later(data: bytes) -> Callable[[], str]:
    """``sha256_hex(data)``, started now and returned by the function this gives back.

    ``hashlib`` releases the GIL while it hashes, so a large input is hashed on another
    core while the caller decodes, matches or writes; small inputs are hashed at once.
    An error of the hashing is raised by the call that asks for the value.
    """
    if len(data) < _BACKGROUND_HASH_BYTES:
        value = sha256_hex(data)
        return lambda: value
    outcome: list[str] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(sha256_hex(data))
        except BaseException as exc:  # handed to the thread that asks for the value
            failure.append(exc)

    worker = threading.Thread(target=run, name="editspec-sha256", daemon=True)
    worker.start()

    def result() -> str:
        worker.join()
        if failure:
            raise failure[0]
        return outcome[0]

    return result


@attrs.frozen(kw_only=True)
class DecodedText:
    """A decoded file: its text (original newlines, no BOM) and how to encode it back."""

    text: str
    encoding: str  # "utf-8" | "utf-16-le" | "utf-16-be"
    bom: bool
    newline: str  # "lf" | "crlf" | "mixed" | "none"
    # The number of "\n" in ``text`` when known (counting a large text is not free);
    # ``decode`` leaves it None. Not part of equality.
    line_breaks: int | None = attrs.field(default=None, eq=False)

    @property
    def bom_bytes(self) -> bytes:
        """The BOM this text is written with (b"" without one)."""
        return _BOMS[self.encoding] if self.bom else b""


def bom_length(encoding: str, bom: bool) -> int:
    """Length in bytes of the BOM of ``encoding`` (0 when ``bom`` is False)."""
    return len(_BOMS[encoding]) if bom else 0


def newline_style(text: str) -> str:
    """Classify the newlines of ``text``: "lf", "crlf", "mixed" or "none". Spec: READ-*."""
    # Two cheap membership tests decide most files; counting is needed only with a CR.
    if "\n" not in text:
        return NONE
    if "\r" not in text:
        return LF
    newlines = text.count("\n")
    crlf = text.count("\r\n")
    if crlf == 0:
        return LF
    if crlf == newlines:
        return CRLF
    return MIXED


def decode_as(data: bytes, encoding: str) -> DecodedText | None:
    """Decode ``data`` strictly as ``encoding`` (a leading BOM of it is stripped); None if invalid.

    Unlike ``decode`` this does not refuse U+0000: the caller chose the encoding.
    """
    bom_bytes = _BOMS[encoding]
    bom = data.startswith(bom_bytes)
    body = data[len(bom_bytes) :] if bom else data
    try:
        text = body.decode(encoding, "strict")
    except UnicodeDecodeError:
        return None
    return DecodedText(text=text, encoding=encoding, bom=bom, newline=newline_style(text))


def decode(data: bytes) -> DecodedText | None:
    """Decode a file's bytes, or None when they are binary. Spec: READ-*, EDIT-*.

    Strict UTF-8 (optional BOM), then UTF-16 LE/BE when the data starts with its BOM.
    """
    if data.startswith(codecs.BOM_UTF16_LE):
        # A UTF-16 BOM is never valid UTF-8 (0xFF and 0xFE do not occur in UTF-8).
        encoding = UTF16_LE
    elif data.startswith(codecs.BOM_UTF16_BE):
        encoding = UTF16_BE
    else:
        encoding = UTF8
    decoded = decode_as(data, encoding)
    if decoded is None or "\0" in decoded.text:
        return None
    return decoded


def is_binary(data: bytes) -> bool:
    """True when ``data`` is not text by the rules of ``decode``."""
    return decode(data) is None


def encode(text: str, like: DecodedText | None = None) -> bytes:
    """Encode ``text`` in the encoding and BOM of ``like`` (plain UTF-8 without it).

    Newlines are written as they are in ``text``. A string that cannot be encoded (a lone
    surrogate) is INVALID_ARGUMENT. Spec: EDIT-* (encoding and BOM kept).
    """
    encoding = like.encoding if like is not None else UTF8
    try:
        body = text.encode(encoding, "strict")
    except UnicodeEncodeError as exc:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"text cannot be encoded as {encoding}: {exc.reason} at character {exc.start}",
            encoding=encoding,
            position=exc.start,
        ) from exc
    return (like.bom_bytes if like is not None else b"") + body


# -- MIME types from magic bytes ------------------------------------------------------

# (offset, magic, mime), most specific first.
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"%PDF-", "application/pdf"),
    (0, b"PK\x03\x04", "application/zip"),
    (0, b"PK\x05\x06", "application/zip"),
    (0, b"PK\x07\x08", "application/zip"),
    (0, b"\x1f\x8b", "application/gzip"),
    (0, b"BZh", "application/x-bzip2"),
    (0, b"\xfd7zXZ\x00", "application/x-xz"),
    (0, b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (0, b"\x28\xb5\x2f\xfd", "application/zstd"),
    (0, b"Rar!\x1a\x07", "application/vnd.rar"),
    (257, b"ustar", "application/x-tar"),
    (0, b"\x7fELF", "application/x-elf"),
    (0, b"\x00asm", "application/wasm"),
    (0, b"SQLite format 3\x00", "application/vnd.sqlite3"),
    (0, b"MZ", "application/vnd.microsoft.portable-executable"),
    (0, b"\xca\xfe\xba\xbe", "application/java-vm"),
    (0, b"\xcf\xfa\xed\xfe", "application/x-mach-binary"),
    (0, b"\xce\xfa\xed\xfe", "application/x-mach-binary"),
    (0, b"\x93NUMPY", "application/x-npy"),
    (0, b"\x89HDF\r\n\x1a\n", "application/x-hdf5"),
    (0, b"PAR1", "application/vnd.apache.parquet"),
    (0, b"OggS", "application/ogg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\x1aE\xdf\xa3", "video/webm"),
    (0, b"II*\x00", "image/tiff"),
    (0, b"MM\x00*", "image/tiff"),
    (0, b"\x00\x00\x01\x00", "image/x-icon"),
    (0, b"BM", "image/bmp"),
    (0, b"wOFF", "font/woff"),
    (0, b"wOF2", "font/woff2"),
    (0, b"OTTO", "font/otf"),
    (0, b"\x00\x01\x00\x00\x00", "font/ttf"),
)

# RIFF containers: the form type at offset 8 says what is inside.
_RIFF: dict[bytes, str] = {b"WEBP": "image/webp", b"WAVE": "audio/wav", b"AVI ": "video/x-msvideo"}


def sniff_mime(data: bytes) -> str:
    """The MIME type named by ``data``'s magic bytes; ``application/octet-stream`` otherwise.

    Spec: READ-* (binary files report a MIME type).
    """
    if data.startswith(b"RIFF") and len(data) >= 12:
        riff = _RIFF.get(data[8:12])
        if riff is not None:
            return riff
    if data[4:8] == b"ftyp":
        brand = data[8:12]
        if brand in (b"heic", b"heix", b"mif1"):
            return "image/heic"
        if brand == b"avif":
            return "image/avif"
        if brand.startswith(b"qt"):
            return "video/quicktime"
        return "video/mp4"
    for offset, magic, mime in _MAGIC:
        if data[offset : offset + len(magic)] == magic:
            return mime
    return "application/octet-stream"
