"""One MCP server process (or running server) and the SDK client connected to it.

The contract is synchronous; the SDK is async. One background thread runs an asyncio
event loop for every server of the process (``Loop``); a ``Connection`` lives on it,
started by ``run()`` and stopped by ``stop()``; ``SharedConnection`` is the one
connection of every driver of a URL factory. The errors the adapter raises are here
too, since a connection raises them first.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import shlex
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from editspec.contract.drivers._mcp_map import (
    MapError,
)
from editspec.contract.verdicts import WrongBehaviour

_STDERR_TAIL = 4000


START_TIMEOUT = 120.0


class McpToolError(Exception):
    """A tool call the server failed with an error code from the table."""

    def __init__(self, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details if isinstance(details, dict) else {}


class UncodedToolError(Exception):
    """A tool call the server refused (``isError``) without a code from the table."""


class ServerError(WrongBehaviour):
    """The server failed outside the contract: it died, broke the protocol, or hung.

    A FAIL of kind ``wrong-behaviour``: the implementation's failure, not the suite's.
    """


class Loop:
    """One asyncio loop on a daemon thread, shared by every server of the process."""

    _instance: Loop | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self.loop.run_forever, name="editspec-mcp", daemon=True)
        thread.start()

    @classmethod
    def get(cls) -> Loop:
        with cls._lock:
            if cls._instance is None:
                cls._instance = Loop()
            return cls._instance

    def submit(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)


def command_line(command: str | Sequence[str], root: Path, state_dir: Path) -> list[str]:
    """The server's argv: ``{root}`` and ``{state_dir}`` replaced in every word."""
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if not words:
        raise MapError("the MCP server command is empty")
    return [
        word.replace("{root}", os.fspath(root)).replace("{state_dir}", os.fspath(state_dir))
        for word in words
    ]


def leaves(exc: BaseException) -> str:
    """An exception (group) as the errors it holds: what the task groups wrapped."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (list, tuple)) and inner:
        return "; ".join(leaves(item) for item in inner)
    return repr(exc)


class Connection:
    """A running server and the SDK client connected to it (lives on the loop thread)."""

    def __init__(
        self, argv: list[str], protocol: str, url: str | None = None, cwd: str | None = None
    ) -> None:
        self.argv = argv
        self.protocol = protocol
        self.url = url  # Streamable HTTP to a running server; else argv is started (stdio)
        self.cwd = cwd
        # The server's stderr: kept for error messages, closed with the connection. The
        # server shares its file offset, so it is opened O_APPEND: our reads move the
        # offset, never where the server writes.
        self.stderr = tempfile.TemporaryFile(  # noqa: SIM115
            mode="a+", encoding="utf-8", errors="replace"
        )
        self.client: Any = None
        self.tools: dict[str, Any] = {}
        self.listing_problem: str | None = None
        self.server_name = ""
        self.ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.finished: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._stopping = False

    def launch_argv(self) -> list[str]:
        if os.name != "posix":
            return self.argv
        # The shell prints its pid, then exec keeps it for the server: kill() needs it.
        return ["/bin/sh", "-c", 'echo "editspec-pid $$" >&2; exec "$@"', "sh", *self.argv]

    async def run(self) -> None:
        # the SDK is optional (editspec[mcp]): imported when a server is started
        from mcp import Client, StdioServerParameters, stdio_client

        self._stop = asyncio.Event()
        if self._stopping:  # stopped before it started
            self.ready.set_exception(ServerError("the MCP driver is closed"))
            self.finished.set_result(None)
            return
        try:
            if self.url is not None:
                transport: Any = self.url  # the SDK's streamable_http_client
            else:
                argv = self.launch_argv()
                env = dict(os.environ)
                params = StdioServerParameters(
                    command=argv[0], args=argv[1:], env=env, cwd=self.cwd
                )
                transport = repaired(stdio_client(params, errlog=self.stderr), self)
            async with Client(transport, mode=self.protocol) as client:
                self.client = client
                info = client.server_info
                self.server_name = getattr(info, "name", "") or ""
                await self._list_tools(client)
                self.ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self.ready.done():
                self.ready.set_exception(ServerError(f"the server did not start: {leaves(exc)}"))
            if isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
                raise
        finally:
            self.client = None
            if not self.finished.done():
                self.finished.set_result(None)

    async def _list_tools(self, client: Any) -> None:
        """Every tool the server lists, page by page."""
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            self.tools.update({tool.name: tool for tool in page.tools})
            cursor = page.next_cursor
            if not cursor:
                return

    def stop(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.call_soon_threadsafe(self._request_stop)

    def _request_stop(self) -> None:  # on the loop thread
        self._stopping = True
        if self._stop is not None:
            self._stop.set()

    def pid(self) -> int | None:
        if self.url is not None:
            return None
        self.stderr.seek(0)
        first = self.stderr.readline()
        if first.startswith("editspec-pid "):
            return int(first.split()[1])
        return None

    def stderr_tail(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0)
            text = self.stderr.read()
            lines = [line for line in text.splitlines() if not line.startswith("editspec-pid ")]
            return "\n".join(lines)[-_STDERR_TAIL:]
        return ""


STOPPING: set[Connection] = set()


def stopped(connection: Connection) -> None:
    STOPPING.discard(connection)
    with contextlib.suppress(OSError, ValueError):
        connection.stderr.close()


def wait_stopped(connection: Connection, *, timeout: float) -> None:
    with contextlib.suppress(concurrent.futures.TimeoutError):
        connection.finished.result(timeout=timeout)
    stopped(connection)


@atexit.register
def wait_for_stopping_servers() -> None:
    for connection in list(STOPPING):
        wait_stopped(connection, timeout=10)


class SharedConnection:
    """One connection to a running server for every driver of a URL factory.

    Connecting takes longer than most clauses; the drivers' sessions are kept apart by
    their ids, not by their connections. A connection that failed is replaced on the
    next use; the last one is closed when the process ends.
    """

    def __init__(self, url: str, protocol: str) -> None:
        self.url = url
        self.protocol = protocol
        self._connection: Connection | None = None
        self._lock = threading.Lock()
        atexit.register(self.close)

    def get(self, loop: Loop) -> Connection:
        with self._lock:
            connection = self._connection
            if connection is None or connection.finished.done():
                connection = Connection([self.url], self.protocol, self.url)
                self._connection = connection
                loop.submit(connection.run())
            return connection

    def close(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.stop(Loop.get().loop)
            wait_stopped(connection, timeout=10)


@contextlib.asynccontextmanager
async def repaired(transport: Any, connection: Connection) -> Any:
    """The server's messages, with one protocol defect mended and recorded.

    A tool listing whose ``inputSchema`` lacks ``"type": "object"`` (as
    ``@modelcontextprotocol/server-filesystem`` 2025.3.28 sends: ``{"$schema": ...}``
    only) fails the SDK's validation of the whole list, and with it every clause. The
    missing type is added here, at our side of the transport, and the defect is kept in
    ``connection.listing_problem``: the file tools can still be judged, and the report
    can say what the server got wrong.
    """
    # the SDK and its anyio are optional (editspec[mcp]): imported when a server is started
    import anyio
    from mcp_types import JSONRPCResponse

    async with transport as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def relay() -> None:
            async with send:
                async for message in read_stream:
                    inner = getattr(message, "message", None)
                    if isinstance(inner, JSONRPCResponse):
                        mend_tool_listing(inner.result, connection)
                    await send.send(message)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            try:
                yield receive, write_stream
            finally:
                group.cancel_scope.cancel()


def mend_tool_listing(result: dict[str, Any], connection: Connection) -> None:
    tools = result.get("tools")
    if not isinstance(tools, list):
        return
    for tool in tools:
        schema = tool.get("inputSchema") if isinstance(tool, dict) else None
        if isinstance(schema, dict) and "type" not in schema:
            schema["type"] = "object"
            connection.listing_problem = (
                f"tools/list: the inputSchema of {tool.get('name')!r} has no type "
                '(the protocol requires "object"); mended to read the listing'
            )


async def call_tool(connection: Connection, name: str, arguments: dict[str, Any]) -> Any:
    if connection.client is None:
        raise ServerError("the server is gone")
    return await connection.client.call_tool(name, arguments)


__all__ = [
    "START_TIMEOUT",
    "STOPPING",
    "Connection",
    "Loop",
    "McpToolError",
    "ServerError",
    "SharedConnection",
    "UncodedToolError",
    "call_tool",
    "command_line",
    "leaves",
    "mend_tool_listing",
    "repaired",
    "stopped",
    "wait_stopped",
]
