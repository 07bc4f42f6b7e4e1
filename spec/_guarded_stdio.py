"""The stdio transport of ``editspec serve``: the SDK's, behind the request guard.

The SDK's ``stdio_server`` reads stdin line by line and drops every line its message
model refuses (and takes a request with an ``id`` of ``1.5`` or ``true`` for a
notification), so such a request is never answered. Here the SDK still runs the
session, but it is given streams of our own: lines are read as bytes, at most
``MAX_MESSAGE_BYTES`` of a line are kept (the rest is skipped up to its newline), and
each line goes through ``check_message`` (``_jsonrpc_guard``) and then the SDK's own
message model; a line refused by either is answered here with its JSON-RPC error and
never reaches the session. Only lines both accept are handed on, so every line read
gets an answer (a valid notification or response excepted, which JSON-RPC never answers).

Answers written here and the session's own replies share one lock, so lines never
interleave. While serving, fd 0 reads the null device and fd 1 goes to stderr (as the
SDK does), so a stray print or a child process cannot corrupt or consume the wire.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from typing import IO, Any

import anyio
import anyio.to_thread

from editspec.spec._jsonrpc_guard import (
    INVALID_REQUEST,
    MAX_MESSAGE_BYTES,
    PARSE_ERROR,
    Accepted,
    Rejected,
    check_message,
    error_response,
)

_SKIP_CHUNK = 1024 * 1024


class WireOutput:
    """The wire's stdout: whole lines, one writer at a time."""

    def __init__(self, binary: IO[bytes]) -> None:
        self._binary = binary
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        # The SDK writes a message and its newline in one call, then flushes: the message
        # is written and flushed in one hand-off to a worker thread (each costs a thread
        # wake-up, which on a busy machine is most of a small call's time), and the
        # SDK's flush that follows finds nothing left to flush.
        async with self._lock:
            data = text.encode("utf-8", "backslashreplace")
            await anyio.to_thread.run_sync(self._write_flush, data)

    async def flush(self) -> None:
        # Every write above and below has flushed already: nothing is ever buffered here.
        async with self._lock:
            return

    async def write_line(self, line: str) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._write_flush, line.encode("ascii") + b"\n")

    def _write_flush(self, data: bytes) -> None:
        self._binary.write(data)
        self._binary.flush()


def _validate_with_sdk(text: str) -> str | None:
    """None when the SDK's message model takes ``text``; else why not (bounded)."""
    import mcp_types
    from pydantic import ValidationError

    try:
        mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))[:120]
        return f"not an MCP message: {str(first.get('msg', exc))[:200]} (at {where or '-'})"
    return None


def screen(raw: bytes, *, max_bytes: int = MAX_MESSAGE_BYTES) -> str | Rejected:
    """One line read: the text to hand to the session, or the answer it gets here."""
    verdict = check_message(raw, max_bytes=max_bytes)
    if isinstance(verdict, Rejected):
        return verdict
    assert isinstance(verdict, Accepted)
    text = raw.decode("utf-8")
    problem = _validate_with_sdk(text)
    if problem is not None:
        return Rejected(error_response(verdict.message.get("id"), INVALID_REQUEST, problem))
    return text


class GuardedInput:
    """The wire's stdin as the SDK iterates it: only lines that passed ``screen``."""

    def __init__(
        self, binary: IO[bytes], output: WireOutput, *, max_bytes: int = MAX_MESSAGE_BYTES
    ) -> None:
        self._binary = binary
        self._output = output
        self._max_bytes = max_bytes

    async def _lines(self) -> AsyncIterator[bytes | int]:
        """Each line without its newline, or the size of one too long to keep."""
        while True:
            line = await anyio.to_thread.run_sync(self._binary.readline, self._max_bytes + 1)
            if not line:
                return
            if not line.endswith(b"\n") and len(line) > self._max_bytes:
                size = len(line)
                while line and not line.endswith(b"\n"):  # skip to its end, bounded
                    line = await anyio.to_thread.run_sync(self._binary.readline, _SKIP_CHUNK)
                    size += len(line)
                yield size - line.endswith(b"\n")
                continue
            yield line[:-1] if line.endswith(b"\n") else line

    async def __aiter__(self) -> AsyncIterator[str]:
        async for raw in self._lines():
            if isinstance(raw, int):
                too_large = error_response(
                    None,
                    PARSE_ERROR,
                    f"message too large: {raw} bytes",
                    max_bytes=self._max_bytes,
                )
                await self._output.write_line(Rejected(too_large).line())
                continue
            screened = screen(raw, max_bytes=self._max_bytes)
            if isinstance(screened, Rejected):
                await self._output.write_line(screened.line())
                continue
            yield screened


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """The wire's stdin and stdout, with fd 0 and fd 1 diverted while serving."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        # closefd=False: a reader thread may still block on the wire when serving ends.
        with (
            os.fdopen(wire_in, "rb", closefd=False) as reader,
            os.fdopen(wire_out, "wb", closefd=False) as writer,
        ):
            yield reader, writer
    finally:
        os.dup2(saved_out, 1)
        os.dup2(saved_in, 0)
        os.close(saved_in)
        os.close(saved_out)


async def serve_guarded_stdio(server: Any) -> None:
    """Run ``server`` (a low-level MCP ``Server``) on stdin/stdout behind the guard."""
    from mcp.server.stdio import stdio_server

    with claimed_stdio() as (reader, writer):
        output = WireOutput(writer)
        source = GuardedInput(reader, output)
        async with stdio_server(stdin=source, stdout=output) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, server.create_initialization_options())
