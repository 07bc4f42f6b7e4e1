"""Checks of scalar arguments at the entry of every operation (caller errors, before any I/O).

Every operation's entry turns a bad argument into INVALID_ARGUMENT (or TOO_LARGE for a
bounded size) before it resolves a path, takes a lock or reads a byte: a wrong type, a
number out of range, a string that holds NUL or a lone surrogate (not Unicode text: it
cannot be encoded for the file system, a journal or a JSON answer). The messages quote
an input only as a bounded ``excerpt``. Spec: PATH-060, PATH-061, LIMIT-030.
"""

from __future__ import annotations

import math
import re

from editspec.reference import _errors
from editspec.reference._errors import ToolError

EXCERPT_CHARS = 80
"""The most characters of an input an error message quotes."""

MESSAGE_ID_CHARS = 1024
"""The longest message id (and session id): an identifier, not a payload."""

LARGEST_INTEGER = 2**63 - 1
"""No count, offset or line number beyond a signed 64-bit integer names anything."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``value`` for a message: ASCII, at most ``limit`` characters plus the whole length."""
    text = ascii(value)
    if len(text) <= limit:
        return text
    length = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:limit]}...{length}"


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a surrogate code point (so it is not Unicode text)."""
    return _LONE_SURROGATE.search(text) is not None


def check_text(
    name: str,
    value: object,
    *,
    optional: bool = False,
    empty: bool = False,
    nul: bool = False,
    max_chars: int | None = None,
) -> str | None:
    """A string argument: a ``str``, not empty, no NUL, no lone surrogate, bounded.

    ``optional``: None is allowed (and returned); ``empty``: "" is allowed; ``nul``: NUL
    is allowed (file content); ``max_chars``: longer is TOO_LARGE.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{name} must be a string, not {type(value).__name__}",
            argument=name,
        )
    if not value and not empty:
        raise ToolError(_errors.INVALID_ARGUMENT, f"{name} is empty", argument=name)
    if max_chars is not None and len(value) > max_chars:
        raise ToolError(
            _errors.TOO_LARGE,
            f"{name} is {len(value)} characters long (at most {max_chars})",
            argument=name,
            limit=name,
            maximum=max_chars,
            size=len(value),
        )
    if not nul and "\0" in value:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{name} contains a NUL character: {excerpt(value)}",
            argument=name,
        )
    if has_lone_surrogate(value):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{name} holds a lone surrogate, which is not Unicode text: {excerpt(value)}",
            argument=name,
        )
    return value


def check_integer(name: str, value: object, *, minimum: int, optional: bool = True) -> int | None:
    """An integer argument (not a bool, not a float) between ``minimum`` and 2**63 - 1."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{name} must be an integer, not {type(value).__name__}",
            argument=name,
        )
    if not minimum <= value <= LARGEST_INTEGER:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{name} must be between {minimum} and {LARGEST_INTEGER}, not {excerpt(value)}",
            argument=name,
        )
    return value


def check_bool(name: str, value: object) -> bool:
    """A boolean argument: ``True`` or ``False`` only (1 and "yes" are not)."""
    if not isinstance(value, bool):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{name} must be a boolean, not {type(value).__name__}",
            argument=name,
        )
    return value


def check_finite(name: str, value: object) -> float | None:
    """An optional real number that is finite (a deadline: NaN would never expire)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{name} must be a number, not {type(value).__name__}",
            argument=name,
        )
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ToolError(_errors.INVALID_ARGUMENT, f"{name} must be finite", argument=name)
    return number
