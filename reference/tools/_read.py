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

The ranges themselves are cut in ``_ranges``. The file is read through the workspace's
store (``_store``): a local workspace's bytes with their encoding sniffed (or the one
asked for), a remote workspace's text as its client gives it; a service that holds
text only (``Supports.binary`` false) reads no other encoding (UNSUPPORTED).
"""

from __future__ import annotations

from typing import Any

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import ReadResult
from editspec.reference._store import FilesSession
from editspec.reference.paths._paths import DIR, MISSING, OTHER
from editspec.reference.text._text import BINARY, NONE, UTF8, sniff_mime
from editspec.reference.tools import _ranges


def _target_file(session: FilesSession, path: str) -> Any:
    target = session.workspace.store.resolve(path)
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


def read(
    session: FilesSession,
    path: str,
    *,
    start_line: int | None = None,
    end_line: int | None = None,
    start_byte: int | None = None,
    max_bytes: int | None = None,
    encoding: str = _ranges.AUTO,
) -> ReadResult:
    """Read a file, a line range or a byte range of it. Spec: READ-*, TRACK-*, PATH-*, REMOTE-*."""
    workspace = session.workspace
    request = _ranges.read_request(start_line, end_line, start_byte, max_bytes, encoding)
    if not workspace.supports.binary and request.encoding not in (_ranges.AUTO, UTF8):
        raise ToolError(
            _errors.UNSUPPORTED,
            f"a remote file is read as the text the client gives; encoding {encoding!r} "
            "does not apply",
            encoding=encoding,
        )
    request.require_consistent()
    budget = workspace.limits.read_max_bytes if request.budget is None else request.budget

    target = _target_file(session, path)
    loaded = workspace.store.load(target, request.encoding)
    data, digest, decoded = loaded.data, loaded.digest, loaded.decoded
    if decoded is None:
        result = _binary(session, target, data, digest, request)
        full = result.start_byte == 0  # the preview is bounded, the file was seen whole
    else:
        result = _ranges.cut_range(target.logical_relative, data, digest, decoded, request, budget)
        full = _ranges.covers_whole_file(result, data, decoded)
    workspace.access.record_read(
        session.id,
        target.canonical_key,
        sha256=digest,
        size=len(data),
        mtime_ns=loaded.mtime_ns,
        full=full,
    )
    return result


def _binary(
    session: FilesSession,
    target: Any,
    data: bytes,
    digest: str,
    request: _ranges.ReadRequest,
) -> ReadResult:
    budget = session.workspace.limits.read_max_bytes if request.budget is None else request.budget
    start = request.offset or 0
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
    if request.first is not None or request.last is not None:
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
