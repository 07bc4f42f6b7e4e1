"""The ranges of Read, cut from a decoded text in memory (DESIGN §4 "Read").

Shared by every session whatever holds its files: the local Read (``_read``) cuts its
ranges here from the bytes of the fs port, the remote one (``remote._remote``) from the
text its client returns. No disk access here.

* ``read_request`` checks the arguments before any I/O; ``ReadRequest.require_consistent``
  the combination (a line range or a byte offset, never both; ``end_line`` not before
  ``start_line``).
* ``line_range`` / ``byte_range`` cut the content, bounded by ``max_bytes`` at a whole
  line or a whole character, and report the range actually returned, so the caller can
  continue exactly there; ``covers_whole_file`` says whether it is the whole file (a
  full access record, TRACK-*).
"""

from __future__ import annotations

import codecs

import attrs

from editspec.reference import _errors
from editspec.reference._arguments import LARGEST_INTEGER, check_integer, check_text, excerpt
from editspec.reference._errors import ToolError
from editspec.reference._results import ReadResult
from editspec.reference.text._text import BINARY, TEXT_ENCODINGS, DecodedText, bom_length

AUTO = "auto"


@attrs.frozen(kw_only=True)
class ReadRequest:
    """The checked arguments of a Read."""

    first: int | None
    last: int | None
    offset: int | None
    budget: int | None
    encoding: str

    def require_consistent(self) -> None:
        """A line range or a byte offset, never both; ``end_line`` not before ``start_line``."""
        first, last = self.first, self.last
        if first is not None and last is not None and last < first:
            raise ToolError(
                _errors.INVALID_ARGUMENT,
                f"end_line ({last}) is before start_line ({first})",
                start_line=first,
                end_line=last,
            )
        if self.offset is not None and (first is not None or last is not None):
            raise ToolError(
                _errors.INVALID_ARGUMENT, "give either a line range or start_byte, not both"
            )


def read_request(
    start_line: object, end_line: object, start_byte: object, max_bytes: object, encoding: object
) -> ReadRequest:
    """Read's arguments checked one by one, before any I/O. Spec: READ-*."""
    return ReadRequest(
        first=_check_int("start_line", start_line, 1),
        last=_check_int("end_line", end_line, 1),
        offset=_check_int("start_byte", start_byte, 0),
        budget=_check_int("max_bytes", max_bytes, 1),
        encoding=check_encoding(encoding),
    )


def cut_range(
    shown: str, data: bytes, digest: str, decoded: DecodedText, request: ReadRequest, budget: int
) -> ReadResult:
    """The range ``request`` asks for, of a text file's bytes and their decoded text."""
    if request.offset is not None:
        return byte_range(shown, data, digest, decoded, request.offset, budget)
    return line_range(shown, data, digest, decoded, request.first, request.last, budget)


def covers_whole_file(result: ReadResult, data: bytes, decoded: DecodedText) -> bool:
    """Whether a text read returned every character of the file (a full access record)."""
    content_start = bom_length(decoded.encoding, decoded.bom)
    return result.start_byte == content_start and result.end_byte == len(data)


def _check_int(name: str, value: object, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(_errors.INVALID_ARGUMENT, f"{name} must be an integer", argument=name)
    if value > LARGEST_INTEGER:
        check_integer(name, value, minimum=minimum)  # the bounded refusal
    if value < minimum:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{name} must be at least {minimum}, not {value}",
            argument=name,
            value=value,
        )
    return value


def check_encoding(encoding: object) -> str:
    if not isinstance(encoding, str):
        raise ToolError(_errors.INVALID_ARGUMENT, "encoding must be a string")
    # NUL or a lone surrogate would make codecs.lookup raise something else than
    # LookupError; an absurdly long name is no encoding either.
    check_text("encoding", encoding, max_chars=64)
    lowered = encoding.strip().lower()
    if lowered in (AUTO, BINARY):
        return lowered
    try:
        name = codecs.lookup(lowered).name
    except LookupError:
        name = lowered
    if name not in TEXT_ENCODINGS:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"unsupported encoding {excerpt(encoding)}; "
            "use auto, utf-8, utf-16-le, utf-16-be or binary",
            encoding=encoding,
        )
    return name


def _complete_prefix(data: bytes, encoding: str, final: bool) -> str:
    """Decode ``data`` strictly, dropping only an incomplete character at its end."""
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    return decoder.decode(data, final)


def _line_start(text: str, line: int) -> int:
    """Character offset where 1-based ``line`` starts (``len(text)`` past the last line)."""
    position = 0
    for _ in range(line - 1):
        newline = text.find("\n", position)
        if newline < 0:
            return len(text)
        position = newline + 1
    return position


def _last_line(first_line: int, content: str) -> int:
    """The number of the line holding ``content``'s last character."""
    if not content:
        return first_line - 1
    return first_line + content.count("\n") - (1 if content.endswith("\n") else 0)


def _char_boundary(data: bytes, offset: int, decoded: DecodedText) -> int:
    """``offset`` moved forward to the next character boundary of the file's bytes."""
    bom = bom_length(decoded.encoding, decoded.bom)
    offset = max(offset, bom)
    if decoded.encoding == "utf-8":
        while offset < len(data) and data[offset] & 0xC0 == 0x80:
            offset += 1
        return offset
    if (offset - bom) % 2:
        offset += 1
    high = 1 if decoded.encoding == "utf-16-le" else 0  # where a code unit's high byte is
    if offset + 1 < len(data) and 0xDC <= data[offset + high] <= 0xDF:
        offset += 2  # the second half of a surrogate pair
    return min(offset, len(data))


def _total_lines(decoded: DecodedText) -> int:
    text = decoded.text
    breaks = decoded.line_breaks if decoded.line_breaks is not None else text.count("\n")
    return breaks + (1 if text and not text.endswith("\n") else 0)


def _text_result(
    shown: str,
    data: bytes,
    digest: str,
    decoded: DecodedText,
    *,
    content: str,
    start_line: int,
    start_byte: int,
    truncated: bool,
    warnings: list[str],
    known: tuple[int, int, int] | None = None,
) -> ReadResult:
    # ``known``: (total lines, end line, content bytes) when the caller has counted them,
    # which spares a large file two more scans and an encoding.
    if known is None:
        total_lines = _total_lines(decoded)
        end_line = _last_line(start_line, content)
        end_byte = start_byte + len(content.encode(decoded.encoding))
    else:
        total_lines, end_line, content_bytes = known
        end_byte = start_byte + content_bytes
    if truncated:
        resume = f"start_byte={end_byte}"
        if content.endswith("\n"):
            resume = f"start_line={end_line + 1} or {resume}"
        warnings.append(
            f"content truncated at byte {end_byte} of {len(data)}; continue with {resume}"
        )
    return ReadResult(
        path=shown,
        content=content,
        start_line=start_line,
        end_line=end_line,
        total_bytes=len(data),
        total_lines=total_lines,
        sha256=digest,
        encoding=decoded.encoding,
        newline=decoded.newline,
        bom=decoded.bom,
        truncated=truncated,
        start_byte=start_byte,
        end_byte=end_byte,
        warnings=tuple(warnings),
    )


def line_range(
    shown: str,
    data: bytes,
    digest: str,
    decoded: DecodedText,
    first: int | None,
    last: int | None,
    budget: int,
) -> ReadResult:
    text = decoded.text
    total = _total_lines(decoded)
    start_line = first or 1
    if start_line > max(total, 1):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"start_line {start_line} is past the end of the file ({total} lines)",
            start_line=start_line,
            total_lines=total,
        )
    warnings: list[str] = []
    end_line = total if last is None else last
    if end_line > total:
        if last is not None:
            warnings.append(f"end_line {last} is past the end; the file has {total} lines")
        end_line = total
    char_start = _line_start(text, start_line)
    char_end = _line_start(text, end_line + 1) if end_line < total else len(text)
    selected = text[char_start:char_end]
    if char_start == 0 and char_end == len(text):
        encoded = data[bom_length(decoded.encoding, decoded.bom) :]  # decoding is exact
    else:
        encoded = selected.encode(decoded.encoding)
    truncated = len(encoded) > budget
    if truncated:
        selected = _complete_prefix(encoded[:budget], decoded.encoding, final=False)
        cut = selected.rfind("\n")
        if cut >= 0:
            selected = selected[: cut + 1]  # whole lines when at least one fits
    start_byte = bom_length(decoded.encoding, decoded.bom) + len(
        text[:char_start].encode(decoded.encoding)
    )
    return _text_result(
        shown,
        data,
        digest,
        decoded,
        content=selected,
        start_line=start_line,
        start_byte=start_byte,
        truncated=truncated,
        warnings=warnings,
        known=None if truncated else (total, end_line, len(encoded)),
    )


def byte_range(
    shown: str,
    data: bytes,
    digest: str,
    decoded: DecodedText,
    offset: int,
    budget: int,
) -> ReadResult:
    if offset > len(data):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"start_byte {offset} is past the end of the file ({len(data)} bytes)",
            start_byte=offset,
            total_bytes=len(data),
        )
    warnings: list[str] = []
    start = _char_boundary(data, offset, decoded)
    bom = bom_length(decoded.encoding, decoded.bom)
    if start != offset and not (offset == 0 and start == bom):
        warnings.append(f"start_byte {offset} moved to the next character boundary, {start}")
    stop = min(len(data), start + budget)
    content = _complete_prefix(data[start:stop], decoded.encoding, final=stop == len(data))
    end = start + len(content.encode(decoded.encoding))
    before = data[bom:start].decode(decoded.encoding)
    return _text_result(
        shown,
        data,
        digest,
        decoded,
        content=content,
        start_line=before.count("\n") + 1,
        start_byte=start,
        truncated=end < len(data),
        warnings=warnings,
    )
