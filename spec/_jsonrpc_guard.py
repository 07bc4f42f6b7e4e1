"""The request guard of ``editspec serve``: every line a transport reads gets an answer.

A pure function over one raw message (a line of stdio, or the body of an HTTP POST),
with no I/O and no dependency on the MCP SDK: ``check_message(raw)`` returns either
``Accepted(message)`` -- a parsed JSON-RPC 2.0 object that is strict JSON, Unicode
text throughout, bounded in size and depth, and shaped as MCP's request,
notification or response -- or ``Rejected(response)``, the JSON-RPC error object the
transport writes back instead of passing the message on.

Why it exists: the SDK's transports drop a line they cannot validate (the parse error
is handed to the session as an exception, logged and forgotten), so the client waits
forever for the answer. Lines it drops that way: a lone surrogate escape
(``"\\ud800"``), a raw control character inside a string, a number written ``01`` or
``0x10``, nesting deeper than about 200 levels, a batch array, a missing ``"jsonrpc"``.
Worse, a request whose ``id`` is ``1.5``, ``true`` or ``null`` is taken for a
notification: it runs and nobody hears of it. Here each of those is answered:

* ``-32700`` (parse error, ``id`` null): not UTF-8, not JSON (RFC 8259: no ``NaN``,
  ``Infinity``, leading zeros, hex, raw control characters, trailing data), or too large
  to read (``max_bytes``), or nested deeper than the parser goes.
* ``-32600`` (invalid request): JSON, but not a message MCP accepts: a batch, not an
  object, ``jsonrpc`` not ``"2.0"``, an ``id`` that is not a string or an integer (or
  one too long to repeat: over ``MAX_ID_CHARS`` characters or 64 bits),
  ``method`` not a string (or longer than ``MAX_METHOD_CHARS``), ``params`` not an
  object, nesting deeper than ``max_depth``,
  a string holding a lone surrogate (not Unicode text, so it cannot reach a file system
  or be echoed in UTF-8), a response with neither or both of ``result`` and ``error``.
  The answer carries the request's ``id`` whenever that ``id`` itself is valid, so the
  client can match it to the call it is waiting on.

Messages quoted in an answer are bounded excerpts (``EXCERPT_CHARS``), never the input.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message read (a 10 MiB file, base64 encoded, with room to spare)."""
MAX_DEPTH = 64
"""Containers nested deeper than this are refused (the tools' own arguments need 5)."""
EXCERPT_CHARS = 80

_SURROGATE = re.compile("[\ud800-\udfff]")


@attrs.frozen
class Accepted:
    """A message to pass on: the parsed JSON object."""

    message: dict[str, Any]


@attrs.frozen
class Rejected:
    """A message answered here: ``response`` is the JSON-RPC error object to send back."""

    response: dict[str, Any]

    @property
    def code(self) -> int:
        return int(self.response["error"]["code"])

    def line(self) -> str:
        """The response as one line of JSON (ASCII, so any transport can carry it)."""
        return json.dumps(self.response, ensure_ascii=True, separators=(",", ":"))


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``ascii`` of ``value`` cut to ``limit`` characters, saying how long the whole was."""
    text = value if isinstance(value, str) else ascii(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def error_response(request_id: object, code: int, message: str, **data: Any) -> dict[str, Any]:
    """A JSON-RPC error response; ``request_id`` is used only when it is a valid id."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id if valid_id(request_id) else None, "error": error}


MAX_ID_CHARS = 1024
MAX_METHOD_CHARS = 256
"""The longest method name passed on (MCP's are under 40 characters)."""
"""The longest string id answered with (a UUID is 36); a longer one is answered with null."""


def valid_id(value: object) -> bool:
    """MCP's request ids: a string or an integer (not a bool, not a fraction, not null).

    Bounded, so an answer never repeats a runaway id: a string of at most
    ``MAX_ID_CHARS`` characters, all Unicode text; an integer of at most 64 bits.
    """
    if isinstance(value, str):
        return len(value) <= MAX_ID_CHARS and _SURROGATE.search(value) is None
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth_and_surrogate(message: object) -> tuple[int, str | None]:
    """The nesting depth of ``message`` and the first string with a lone surrogate."""
    deepest = 0
    found: str | None = None
    stack: list[tuple[object, int]] = [(message, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if found is None and _SURROGATE.search(value):
                found = value
            continue
        if isinstance(value, dict):
            deepest = max(deepest, depth)
            for key, item in value.items():
                stack.append((key, depth))
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            deepest = max(deepest, depth)
            stack.extend((item, depth + 1) for item in value)
    return deepest, found


def check_message(
    raw: bytes | str, *, max_bytes: int = MAX_MESSAGE_BYTES, max_depth: int = MAX_DEPTH
) -> Accepted | Rejected:
    """Parse and check one JSON-RPC message; the message, or the answer it gets instead."""
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return Rejected(
            error_response(
                None, PARSE_ERROR, f"message too large: {size} bytes", max_bytes=max_bytes
            )
        )
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Rejected(
                error_response(None, PARSE_ERROR, f"not UTF-8 at byte {exc.start}: {exc.reason}")
            )
    else:
        text = raw
    if not text.strip():
        return Rejected(error_response(None, PARSE_ERROR, "empty message"))
    try:
        message = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return Rejected(error_response(None, PARSE_ERROR, "nested too deeply to parse"))
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, integers past 4300 digits
        where = f" (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return Rejected(error_response(None, PARSE_ERROR, f"not JSON{where}: {reason[:200]}"))
    return check_parsed(message, max_depth=max_depth)


def check_parsed(message: object, *, max_depth: int = MAX_DEPTH) -> Accepted | Rejected:
    """Check the shape of a parsed message (JSON-RPC 2.0 as MCP uses it)."""
    if isinstance(message, list):
        return Rejected(
            error_response(None, INVALID_REQUEST, "batches are not supported: send one message")
        )
    if not isinstance(message, dict):
        return Rejected(
            error_response(None, INVALID_REQUEST, f"not a JSON-RPC object: {excerpt(message)}")
        )
    request_id = message.get("id")
    depth, surrogate = _depth_and_surrogate(message)
    problem = _shape_problem(message)
    if problem is None and depth > max_depth:
        problem = f"nested {depth} levels deep (at most {max_depth})"
    if problem is None and surrogate is not None:
        problem = (
            "a string holds a lone surrogate, which is not Unicode text: "
            f"{excerpt(ascii(surrogate))}"
        )
    if problem is not None:
        return Rejected(error_response(request_id, INVALID_REQUEST, problem))
    return Accepted(message)


def _shape_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'not JSON-RPC 2.0 ("jsonrpc" must be "2.0")'
    null_error = message.get("id") is None and "error" in message and "method" not in message
    if "id" in message and not valid_id(message["id"]) and not null_error:
        return (
            '"id" must be a string of at most 1024 characters or a 64-bit integer, '
            f"not {excerpt(ascii(message['id']))}"
        )
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if len(message["method"]) > MAX_METHOD_CHARS:
            # The SDK answers an unknown method with the name as the error's data, in full.
            return f'"method" is longer than any MCP method: {excerpt(message["method"])}'
        if "params" in message and not isinstance(message["params"], dict):
            return '"params" must be an object'
        if "result" in message or "error" in message:
            return 'a request has no "result" or "error"'
        return None
    if "id" not in message:
        return 'a message needs "method" (a request or notification) or "id" (a response)'
    if ("result" in message) == ("error" in message):
        return 'a response has exactly one of "result" and "error"'
    if "error" in message and not isinstance(message["error"], dict):
        return '"error" must be an object'
    return None
