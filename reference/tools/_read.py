"""Read: a file or a range of it, never silently altered (DESIGN §4 "Read").

* Ranges are either lines (``start_line``/``end_line``, 1-based, inclusive; an
  ``end_line`` past the end is clamped) or bytes (``start_byte``, an offset into the
  file's bytes), never both. ``max_bytes`` (default ``limits.read_max_bytes``) bounds the
  encoded size of the content; a line read is cut after the last whole line that fits
  (or, for a single longer line, at the last whole character), a byte read at the last
  whole character. A cut is reported with ``truncated=True`` and the range actually
  returned (``end_line``, ``end_byte``), so the caller can continue exactly there.
* ``sha256`` is always of the whole file's bytes. Text is strict (``_text``); anything
  else is binary: no content, but the size, the MIME type from magic bytes and a bounded
  hex preview.
* A read whose content is the whole file (not truncated, nothing left out) registers a
  full access record for the session; any other read a partial one, which does not
  authorize a write (TRACK-*).
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._arguments import LARGEST_INTEGER, check_integer, check_text, excerpt
from editspec.reference._errors import ToolError
from editspec.reference._results import ReadResult
from editspec.reference.paths._paths import DIR, MISSING, OTHER, WorkspacePath
from editspec.reference.text._text import (
    BINARY,
    NONE,
    TEXT_ENCODINGS,
    DecodedText,
    bom_length,
    decode_as,
    sniff_mime,
)

if TYPE_CHECKING:
    from editspec.reference._workspace import Session

AUTO = "auto"


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


def _check_encoding(encoding: object) -> str:
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


def _target_file(session: Session, path: str) -> WorkspacePath:
    target = session.workspace.resolve(path)
    shown = target.logical_relative
    if target.kind == MISSING:
        raise ToolError(_errors.NOT_FOUND, f"{shown} does not exist", path=shown)
    if target.kind == DIR:
        raise ToolError(
            _errors.IS_A_DIRECTORY,
            f"{shown} is a directory; list it instead",
            path=shown,
        )
    if target.kind == OTHER:
        raise ToolError(_errors.INVALID_ARGUMENT, f"{shown} is not a regular file", path=shown)
    return target


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


def read(
    session: Session,
    path: str,
    *,
    start_line: int | None = None,
    end_line: int | None = None,
    start_byte: int | None = None,
    max_bytes: int | None = None,
    encoding: str = AUTO,
) -> ReadResult:
    """Read a file, a line range or a byte range of it. Spec: READ-*, TRACK-*, PATH-*."""
    workspace = session.workspace
    first = _check_int("start_line", start_line, 1)
    last = _check_int("end_line", end_line, 1)
    offset = _check_int("start_byte", start_byte, 0)
    budget = _check_int("max_bytes", max_bytes, 1)
    chosen = _check_encoding(encoding)
    if first is not None and last is not None and last < first:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"end_line ({last}) is before start_line ({first})",
            start_line=first,
            end_line=last,
        )
    if offset is not None and (first is not None or last is not None):
        raise ToolError(
            _errors.INVALID_ARGUMENT, "give either a line range or start_byte, not both"
        )
    if budget is None:
        budget = workspace.limits.read_max_bytes

    target = _target_file(session, path)
    try:
        data = workspace.memo.read(workspace.fs, target.canonical_key, target.real)
        mtime_ns = workspace.fs.lstat(target.real).st_mtime_ns
    except OSError as exc:
        raise _errors.from_oserror(exc, target.logical_relative, action="read") from exc
    # Hashed on another core while the text decodes (or known, for bytes seen before).
    pending_digest = workspace.memo.sha256_later(target.canonical_key, data)

    if chosen == AUTO:
        decoded = workspace.memo.decode(target.canonical_key, data, count_lines=True)
    elif chosen == BINARY:
        decoded = None
    else:
        decoded = decode_as(data, chosen)
        if decoded is None:
            raise ToolError(
                _errors.INVALID_ARGUMENT,
                f"{target.logical_relative} is not valid {chosen}",
                path=target.logical_relative,
                encoding=chosen,
            )

    digest = pending_digest()
    if decoded is None:
        result = _binary(session, target, data, digest, offset, budget, first, last)
    elif offset is not None:
        result = _byte_range(target, data, digest, decoded, offset, budget)
    else:
        result = _line_range(target, data, digest, decoded, first, last, budget)
    if decoded is None:
        full = result.start_byte == 0  # the preview is bounded, the file was seen whole
    else:
        content_start = bom_length(decoded.encoding, decoded.bom)
        full = result.start_byte == content_start and result.end_byte == len(data)
    workspace.access.record_read(
        session.id,
        target.canonical_key,
        sha256=digest,
        size=len(data),
        mtime_ns=mtime_ns,
        full=full,
    )
    return result


def _binary(
    session: Session,
    target: WorkspacePath,
    data: bytes,
    digest: str,
    offset: int | None,
    budget: int,
    first: int | None,
    last: int | None,
) -> ReadResult:
    start = offset or 0
    if start > len(data):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"start_byte {start} is past the end of the file ({len(data)} bytes)",
            start_byte=start,
            total_bytes=len(data),
        )
    size = min(session.workspace.limits.binary_preview_bytes, budget)
    preview = data[start : start + size]
    warnings: tuple[str, ...] = ()
    if first is not None or last is not None:
        warnings = ("line ranges do not apply to a binary file; the preview starts at byte 0",)
    return ReadResult(
        path=target.logical_relative,
        content="",
        start_line=0,
        end_line=0,
        total_bytes=len(data),
        total_lines=0,
        sha256=digest,
        encoding=BINARY,
        newline=NONE,
        bom=False,
        truncated=False,
        mime=sniff_mime(data),
        preview_hex=preview.hex(),
        start_byte=start,
        end_byte=start + len(preview),
        warnings=warnings,
    )


def _total_lines(decoded: DecodedText) -> int:
    text = decoded.text
    breaks = decoded.line_breaks if decoded.line_breaks is not None else text.count("\n")
    return breaks + (1 if text and not text.endswith("\n") else 0)


def _text_result(
    target: WorkspacePath,
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
        path=target.logical_relative,
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


def _line_range(
    target: WorkspacePath,
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
        target,
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


def _byte_range(
    target: WorkspacePath,
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
        target,
        data,
        digest,
        decoded,
        content=content,
        start_line=before.count("\n") + 1,
        start_byte=start,
        truncated=end < len(data),
        warnings=warnings,
    )
