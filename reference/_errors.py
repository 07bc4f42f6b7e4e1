"""The one error type of the engine and its closed set of codes (DESIGN §2).

Caller errors are raised before any side effect; environment errors wrap the
``OSError`` that caused them and keep its errno in ``details["errno"]``.
"""

from __future__ import annotations

import errno as _errno
from collections.abc import Mapping
from typing import Any

OUTSIDE_WORKSPACE = "OUTSIDE_WORKSPACE"
NOT_FOUND = "NOT_FOUND"
ALREADY_EXISTS = "ALREADY_EXISTS"
IS_A_DIRECTORY = "IS_A_DIRECTORY"
NOT_READ = "NOT_READ"
STALE = "STALE"
NO_MATCH = "NO_MATCH"
AMBIGUOUS = "AMBIGUOUS"
NO_CHANGE = "NO_CHANGE"
BINARY = "BINARY"
TOO_LARGE = "TOO_LARGE"
INVALID_ARGUMENT = "INVALID_ARGUMENT"
PATCH_SYNTAX = "PATCH_SYNTAX"
UNSUPPORTED = "UNSUPPORTED"
CONFLICT = "CONFLICT"
CORRUPT_JOURNAL = "CORRUPT_JOURNAL"
NEEDS_RECOVERY = "NEEDS_RECOVERY"
IO_ERROR = "IO_ERROR"
CANCELLED = "CANCELLED"
DENIED = "DENIED"

ERROR_CODES: frozenset[str] = frozenset(
    {
        OUTSIDE_WORKSPACE,
        NOT_FOUND,
        ALREADY_EXISTS,
        IS_A_DIRECTORY,
        NOT_READ,
        STALE,
        NO_MATCH,
        AMBIGUOUS,
        NO_CHANGE,
        BINARY,
        TOO_LARGE,
        INVALID_ARGUMENT,
        PATCH_SYNTAX,
        UNSUPPORTED,
        CONFLICT,
        CORRUPT_JOURNAL,
        NEEDS_RECOVERY,
        IO_ERROR,
        CANCELLED,
        DENIED,
    }
)

# errno values that say something precise about the caller's path; every other
# OSError is the environment's fault and becomes IO_ERROR.
_ERRNO_CODES: Mapping[int, str] = {
    _errno.ENOENT: NOT_FOUND,
    _errno.EEXIST: ALREADY_EXISTS,
    _errno.EISDIR: IS_A_DIRECTORY,
    _errno.ENAMETOOLONG: INVALID_ARGUMENT,
}


class ToolError(Exception):
    """A failed file-tool operation: ``code`` is one of ``ERROR_CODES``."""

    code: str
    message: str
    details: dict[str, Any]

    def __init__(self, code: str, message: str, **details: Any) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        # An error never repeats a runaway input in full (Spec: PATH-061, LIMIT-030): a 5 MB
        # argument quoted in a message must not come back as a 5 MB answer.
        message = _bounded(message, MESSAGE_CHARS)
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = {key: _bounded_detail(value, 0) for key, value in details.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable across process pools (the explorer runs scenarios in workers).
        return (_rebuild, (self.code, self.message, self.details))


MESSAGE_CHARS = 16 * 1024
"""The longest error message; longer ones keep their start and say how long they were."""
DETAIL_CHARS = 8 * 1024
"""The longest string in ``details`` (above PATH_MAX, so a valid path is never cut)."""
DETAIL_ITEMS = 256
"""The most items of a list or mapping in ``details``."""


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def _bounded_detail(value: Any, depth: int) -> Any:
    """``value`` with long strings cut and long containers shortened; itself if in bounds."""
    if isinstance(value, str):
        return _bounded(value, DETAIL_CHARS)
    if isinstance(value, bytes):
        return value if len(value) <= DETAIL_CHARS else value[:DETAIL_CHARS]
    if depth > 8 or not isinstance(value, (list, tuple, dict)):
        return value
    if isinstance(value, dict):
        pairs = list(value.items())
        bounded = [(key, _bounded_detail(item, depth + 1)) for key, item in pairs[:DETAIL_ITEMS]]
        same = len(pairs) == len(bounded) and all(
            new is old for (_, new), (_, old) in zip(bounded, pairs, strict=True)
        )
        return value if same else dict(bounded)
    items = [_bounded_detail(item, depth + 1) for item in value[:DETAIL_ITEMS]]
    if len(items) == len(value) and all(new is old for new, old in zip(items, value, strict=True)):
        return value
    return tuple(items) if isinstance(value, tuple) else items


def _rebuild(code: str, message: str, details: dict[str, Any]) -> ToolError:
    return ToolError(code, message, **details)


def from_oserror(exc: OSError, path: str | None = None, *, action: str = "") -> ToolError:
    """Wrap an environment failure, keeping its errno."""
    code = _ERRNO_CODES.get(exc.errno or 0, IO_ERROR)
    where = f" {path}" if path else ""
    what = f"{action}{where}: " if action or where else ""
    error = ToolError(code, f"{what}{exc.strerror or exc}", errno=exc.errno, path=path)
    error.__cause__ = exc
    return error
