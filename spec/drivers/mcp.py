"""The MCP adapter: any MCP server over stdio as a driver of the contract (DESIGN §2).

``--editspec-mcp="COMMAND"`` (``editspec check --mcp``) starts ``COMMAND`` once per
clause, with ``{root}`` and ``{state_dir}`` replaced by the clause's workspace root and
state directory, and speaks MCP to it as a client (the official ``mcp`` SDK). A tool map
(``--editspec-mcp-map``, see ``_mcp_map``) says which tool serves each operation, how
arguments are named and how results and error codes are read.

The contract is synchronous; the SDK is async. One background thread runs an asyncio
event loop for every server of the process; a call from any thread is scheduled there
and waited for, so concurrent calls from several threads are concurrent requests.

Every driver declares the ``process`` capability: ``restart()`` stops the server (stdin
closed, as the MCP lifecycle says) and starts a new one over the same directories, and
``kill()`` sends SIGKILL to the server's process group (a crash: it gets no chance to
clean up). Errors the server reports with a code from the table are raised as
``McpToolError`` (its ``code``); everything else (a dead server, a protocol error, a
result the map cannot read, an argument the map cannot express) is raised without one,
so the suite reports it as ERROR.

``--editspec-mcp-url=URL`` (``editspec check --mcp-url``) instead connects to a server
that is already running over Streamable HTTP. That server has one workspace root, which
the suite's fixtures share between clauses (see ``editspec.spec._shared_root``: the
root is emptied before and after every clause); the driver keeps the server's
in-memory state apart by sending each driver instance's sessions under ids of their
own (``<token>-A``), so a later clause never inherits an earlier one's read records or
snapshots. Such a driver cannot be killed or restarted (no ``process`` capability),
and its server's state directory is its own (no ``journal_layout``).
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import concurrent.futures
import contextlib
import os
import secrets
import shlex
import signal
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from editspec.spec._assertions import WrongBehaviour
from editspec.spec.drivers._mcp_map import (
    EDIT_FIELDS,
    OPERATIONS,
    FieldNotReported,
    Inexpressible,
    MapError,
    NotMapped,
    Record,
    ServerMap,
    ToolMap,
    default_map,
    dig,
    load_map,
    parse_json_object,
    read_lines,
    to_record,
)

_STDERR_TAIL = 4000
_START_TIMEOUT = 120.0


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


# -- the event loop thread ----------------------------------------------------------------------


class _Loop:
    """One asyncio loop on a daemon thread, shared by every server of the process."""

    _instance: _Loop | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self.loop.run_forever, name="editspec-mcp", daemon=True)
        thread.start()

    @classmethod
    def get(cls) -> _Loop:
        with cls._lock:
            if cls._instance is None:
                cls._instance = _Loop()
            return cls._instance

    def submit(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)


# -- one server process and its MCP connection ----------------------------------------------


def command_line(command: str | Sequence[str], root: Path, state_dir: Path) -> list[str]:
    """The server's argv: ``{root}`` and ``{state_dir}`` replaced in every word."""
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if not words:
        raise MapError("the MCP server command is empty")
    return [
        word.replace("{root}", os.fspath(root)).replace("{state_dir}", os.fspath(state_dir))
        for word in words
    ]


def _leaves(exc: BaseException) -> str:
    """An exception (group) as the errors it holds: what the task groups wrapped."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (list, tuple)) and inner:
        return "; ".join(_leaves(item) for item in inner)
    return repr(exc)


class _Connection:
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
                transport = _repaired(stdio_client(params, errlog=self.stderr), self)
            async with Client(transport, mode=self.protocol) as client:
                self.client = client
                info = client.server_info
                self.server_name = getattr(info, "name", "") or ""
                await self._list_tools(client)
                self.ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self.ready.done():
                self.ready.set_exception(ServerError(f"the server did not start: {_leaves(exc)}"))
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


_STOPPING: set[_Connection] = set()


def _stopped(connection: _Connection) -> None:
    _STOPPING.discard(connection)
    with contextlib.suppress(OSError, ValueError):
        connection.stderr.close()


def _wait_stopped(connection: _Connection, *, timeout: float) -> None:
    with contextlib.suppress(concurrent.futures.TimeoutError):
        connection.finished.result(timeout=timeout)
    _stopped(connection)


@atexit.register
def _wait_for_stopping_servers() -> None:
    for connection in list(_STOPPING):
        _wait_stopped(connection, timeout=10)


class SharedConnection:
    """One connection to a running server for every driver of a URL factory.

    Connecting takes longer than most clauses; the drivers' sessions are kept apart by
    their ids, not by their connections. A connection that failed is replaced on the
    next use; the last one is closed when the process ends.
    """

    def __init__(self, url: str, protocol: str) -> None:
        self.url = url
        self.protocol = protocol
        self._connection: _Connection | None = None
        self._lock = threading.Lock()
        atexit.register(self.close)

    def get(self, loop: _Loop) -> _Connection:
        with self._lock:
            connection = self._connection
            if connection is None or connection.finished.done():
                connection = _Connection([self.url], self.protocol, self.url)
                self._connection = connection
                loop.submit(connection.run())
            return connection

    def close(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.stop(_Loop.get().loop)
            _wait_stopped(connection, timeout=10)


# -- the driver ------------------------------------------------------------------------------


class McpDriver:
    """An MCP server over one workspace root and state directory."""

    def __init__(
        self,
        command: str | Sequence[str] | None,
        server_map: ServerMap,
        root: Path,
        state_dir: Path,
        *,
        url: str | None = None,
        shared: SharedConnection | None = None,
    ) -> None:
        self.map = server_map
        self.root = Path(root)
        self.state_dir = Path(state_dir)
        self.url = url
        self.cwd: str | None = None
        if url is None:
            if command is None:
                raise MapError("the MCP driver needs a server command line or a URL")
            self.argv = command_line(command, self.root, self.state_dir)
            # The map may start the server in the workspace (cwd = "{root}"): some resolve
            # a relative path against their own working directory.
            if server_map.cwd:
                self.cwd = command_line([server_map.cwd], self.root, self.state_dir)[0]
            self.capabilities: frozenset[str] = server_map.capabilities | {"process"}
            self._session_prefix = ""
        else:
            self.argv = [url]
            self.capabilities = shared_server_capabilities(server_map)
            # One running server serves every clause: fresh session ids per driver keep
            # its read records and snapshot history apart (as a restarted server would).
            self._session_prefix = f"{secrets.token_hex(6)}-"
        self._loop = _Loop.get()
        self._connection: _Connection | None = None
        self._shared = shared
        self._lock = threading.Lock()
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------------

    def _ready(self) -> _Connection:
        """The running server, started on first use (one start, whichever thread asks first)."""
        with self._lock:
            if self._closed:
                raise ServerError("the MCP driver is closed")
            connection = self._connection
            if self._shared is not None:
                connection = self._shared.get(self._loop)
            elif connection is None:
                connection = _Connection(self.argv, self.map.protocol, self.url, self.cwd)
                self._connection = connection
                self._loop.submit(connection.run())
        try:
            connection.ready.result(timeout=_START_TIMEOUT)
        except concurrent.futures.TimeoutError:
            raise ServerError(f"the server did not start within {_START_TIMEOUT:g} s") from None
        except ServerError as exc:
            raise ServerError(f"{exc}\n{connection.stderr_tail()}".rstrip()) from None
        return connection

    @property
    def name(self) -> str:
        if self.map.name:
            return self.map.name
        fallback = self.url or os.path.basename(self.argv[0])
        return self._ready().server_name or fallback

    @property
    def pid(self) -> int | None:
        """The server's process id (POSIX); starts the server if it is not running."""
        return self._ready().pid()

    def _stop(self, *, wait: bool) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is None:
            return
        connection.stop(self._loop.loop)
        if wait:
            _wait_stopped(connection, timeout=30)
        else:
            # The next clause need not wait for this one's server to exit; the process
            # does, before it ends (atexit).
            _STOPPING.add(connection)
            connection.finished.add_done_callback(lambda _: _stopped(connection))

    def close(self) -> None:
        """Stop the server (stdin closed, then the SDK's terminate/kill escalation)."""
        self._stop(wait=False)
        self._closed = True

    def restart(self) -> None:
        """Stop the server and wait for it; the next call starts a new one (same directories).

        A server reached by URL is not stopped: the driver goes on over its connection.
        """
        self._stop(wait=True)

    def kill(self) -> None:
        """SIGKILL the server's process group: a crash, with no cleanup."""
        if self.url is not None:
            raise ServerError(f"a server reached at {self.url} is not this process's to kill")
        pid = self.pid
        if pid is None:
            raise ServerError("the server's pid is unknown on this platform")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)

    # -- the contract -----------------------------------------------------------------------------

    def open_session(self, session_id: str) -> McpSession:
        return McpSession(self, session_id)

    def recover(self) -> Any:
        return self.call("recover", None, {})

    def tool(self, operation: str, *, live: bool = False) -> ToolMap:
        """The map of ``operation``; with ``live``, the variant the running server lists."""
        tool = self.map.tools.get(operation)
        if tool is None:
            raise NotMapped(f"{self.map.label}: the server has no tool for {operation}")
        if not tool.fallbacks or not live:
            return tool
        variant = tool.variant_for(self._ready().tools)
        return variant if variant is not None else tool

    def call(
        self,
        operation: str,
        session_id: str | None,
        values: dict[str, Any],
        extra: dict[str, Any] | None = None,
    ) -> Any:
        """Call the tool of ``operation`` with the contract's argument values (``extra``:
        arguments already in the tool's names, e.g. a single edit's fields)."""
        tool = self.tool(operation, live=True)
        arguments = {**self._arguments(tool, values), **(extra or {})}
        _require_unicode(arguments, tool.name)
        if session_id is not None and self.map.session_argument and operation != "recover":
            arguments[self.map.session_argument] = self._session_prefix + session_id
        connection = self._ready()
        if tool.name not in connection.tools:
            names = " or ".join(repr(name) for name in tool.names)
            raise NotMapped(f"the server lists no tool {names} (for {operation})")
        future = self._loop.submit(_call_tool(connection, tool.name, arguments))
        try:
            result = future.result(timeout=self.map.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ServerError(f"{tool.name} did not answer within {self.map.timeout:g} s") from None
        except Exception as exc:
            tail = connection.stderr_tail()
            raise ServerError(f"{tool.name} failed: {_leaves(exc)}\n{tail}".rstrip()) from exc
        if result.is_error:
            raise self._error(result)
        return self._result(tool, result)

    def _arguments(self, tool: ToolMap, values: dict[str, Any]) -> dict[str, Any]:
        defaults = OPERATIONS[tool.operation]
        arguments: dict[str, Any] = dict(tool.fixed)
        for name, value in values.items():
            if value is None:
                continue
            target = tool.arguments.get(name)
            if target is None:
                if value == defaults.get(name) or name in tool.ignore:
                    continue
                raise Inexpressible(
                    f"{self.map.label}: the server's {tool.name} has no argument for "
                    f"{name}={value!r}"
                )
            arguments[target] = value
        return arguments

    def edits(self, tool: ToolMap, edits: Sequence[Any]) -> list[dict[str, Any]]:
        items = []
        for edit in edits:
            item: dict[str, Any] = {}
            for name, default in EDIT_FIELDS.items():
                value = edit.get(name) if isinstance(edit, dict) else getattr(edit, name, default)
                target = tool.edit_fields.get(name)
                if target is None:
                    if value is None or value == default:
                        continue
                    raise Inexpressible(
                        f"{self.map.label}: the server's {tool.name} edits have no field for "
                        f"{name}={value!r}"
                    )
                if value is not None:
                    item[target] = value
            items.append(item)
        return items

    # -- reading what came back -------------------------------------------------------------

    def _text(self, result: Any) -> str:
        return "\n".join(
            block.text for block in result.content if getattr(block, "type", "") == "text"
        )

    def _error(self, result: Any) -> Exception:
        from editspec.spec.contract import is_error_code

        text = self._text(result)
        structured = result.structured_content
        code: Any = None
        message, details = text, None
        if self.map.code_field and isinstance(structured, dict):
            with contextlib.suppress(KeyError):
                code = dig(structured, self.map.code_field)
            message = str(structured.get("message", text))
            details = structured.get("details")
        if code is None and self.map.code_pattern is not None:
            found = self.map.code_pattern.search(text)
            code = found.group("code") if found else None
        if code is None:
            rule = next((r for r in self.map.error_rules if r.pattern.search(text)), None)
            code = rule.code if rule else None
        if is_error_code(code):
            return McpToolError(code, message, details)
        # A refusal (isError) without a code from the table is the tool's wrong-code FAIL,
        # as a Python driver's exception without one is (DESIGN §7).
        if code is not None:
            return UncodedToolError(
                f"the server answered with a code outside the table {code!r}: {text}"
            )
        return UncodedToolError(f"the server refused without an error code: {text}")

    def _result(self, tool: ToolMap, result: Any) -> Record:
        text = self._text(result)
        what = f"the {tool.operation} result of {self.map.name or self.argv[0]} ({tool.name})"
        data: Any
        if tool.result == "structured":
            data = result.structured_content
            if data is None:
                data = parse_json_object(text)
        elif tool.result == "json":
            data = parse_json_object(text)
        elif tool.result == "text":
            data = {tool.text_field: text}
        else:
            data = read_lines(tool, text, os.fspath(self.root))
        if not isinstance(data, dict):
            raise ServerError(f"{what} is not an object: {text[:500]!r}")
        fields = dict(data)
        for field, source in tool.fields.items():
            with contextlib.suppress(KeyError):
                fields[field] = dig(data, source)
        record = to_record(fields, what)
        assert isinstance(record, Record)
        return record


def _require_unicode(value: Any, tool: str) -> None:
    """A string that is not Unicode text (a lone surrogate) cannot be sent as JSON by the SDK:
    the clause that needs one is UNSUPPORTED over MCP, not a failure of the server."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Inexpressible(
                f"{tool}: an argument holds a lone surrogate, which MCP's JSON text cannot carry"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _require_unicode(key, tool)
            _require_unicode(item, tool)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _require_unicode(item, tool)


@contextlib.asynccontextmanager
async def _repaired(transport: Any, connection: _Connection) -> Any:
    """The server's messages, with one protocol defect mended and recorded.

    A tool listing whose ``inputSchema`` lacks ``"type": "object"`` (as
    ``@modelcontextprotocol/server-filesystem`` 2025.3.28 sends: ``{"$schema": ...}``
    only) fails the SDK's validation of the whole list, and with it every clause. The
    missing type is added here, at our side of the transport, and the defect is kept in
    ``connection.listing_problem``: the file tools can still be judged, and the report
    can say what the server got wrong.
    """
    import anyio
    from mcp_types import JSONRPCResponse

    async with transport as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def relay() -> None:
            async with send:
                async for message in read_stream:
                    inner = getattr(message, "message", None)
                    if isinstance(inner, JSONRPCResponse):
                        _mend_tool_listing(inner.result, connection)
                    await send.send(message)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            try:
                yield receive, write_stream
            finally:
                group.cancel_scope.cancel()


def _mend_tool_listing(result: dict[str, Any], connection: _Connection) -> None:
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


async def _call_tool(connection: _Connection, name: str, arguments: dict[str, Any]) -> Any:
    if connection.client is None:
        raise ServerError("the server is gone")
    return await connection.client.call_tool(name, arguments)


class McpSession:
    """One session of the server: its id goes with every call (when the map names it)."""

    def __init__(self, driver: McpDriver, session_id: str) -> None:
        self._driver = driver
        self.id = session_id

    def _call(self, operation: str, **values: Any) -> Any:
        return self._driver.call(operation, self.id, values)

    def read(
        self,
        path: str,
        *,
        start_line: int | None = None,
        end_line: int | None = None,
        start_byte: int | None = None,
        max_bytes: int | None = None,
        encoding: str = "auto",
    ) -> Any:
        return self._call(
            "read",
            path=path,
            start_line=start_line,
            end_line=end_line,
            start_byte=start_byte,
            max_bytes=max_bytes,
            encoding=encoding,
        )

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any:
        tool = self._driver.tool("write", live=True)
        values: dict[str, Any] = {
            "path": path,
            "expected_sha256": expected_sha256,
            "message_id": message_id,
        }
        if isinstance(content, str):
            values["content"] = content
        elif "content_base64" in tool.arguments:
            values["content_base64"] = base64.b64encode(bytes(content)).decode("ascii")
        else:
            try:
                values["content"] = bytes(content).decode("utf-8")
            except UnicodeDecodeError:
                raise Inexpressible(
                    f"{self._driver.map.label}: the server's {tool.name} takes text only, and "
                    "these bytes are not UTF-8"
                ) from None
        return self._driver.call("write", self.id, values)

    def edit(
        self,
        path: str,
        edits: Sequence[Any],
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any:
        tool = self._driver.tool("edit", live=True)
        items = self._driver.edits(tool, edits)
        if tool.single_edit:
            if len(items) != 1:
                raise Inexpressible(
                    f"{self._driver.map.label}: the server's {tool.name} takes one edit per "
                    f"call, not {len(items)}"
                )
            values = {"path": path, "expected_sha256": expected_sha256, "message_id": message_id}
            return self._driver.call("edit", self.id, values, extra=items[0])
        return self._call(
            "edit", path=path, edits=items, expected_sha256=expected_sha256, message_id=message_id
        )

    def edit_notebook(
        self,
        path: str,
        cell_id: str | None = None,
        index: int | None = None,
        mode: str = "replace",
        source: str | None = None,
        cell_type: str | None = None,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any:
        return self._call(
            "edit_notebook",
            path=path,
            cell_id=cell_id,
            index=index,
            mode=mode,
            source=source,
            cell_type=cell_type,
            expected_sha256=expected_sha256,
            message_id=message_id,
        )

    def apply_patch(self, patch: str, *, message_id: str | None = None) -> Any:
        return self._call("apply_patch", patch=patch, message_id=message_id)

    def glob(self, pattern: str, *, path: str | None = None, max_results: int | None = None) -> Any:
        return self._call("glob", pattern=pattern, path=path, max_results=max_results)

    def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        include: str | None = None,
        ignore_case: bool = False,
        max_results: int | None = None,
    ) -> Any:
        return self._call(
            "grep",
            pattern=pattern,
            path=path,
            include=include,
            ignore_case=ignore_case,
            max_results=max_results,
        )

    def list_directory(
        self,
        path: str = ".",
        *,
        depth: int = 1,
        include_hidden: bool = False,
        cursor: str | None = None,
        max_entries: int | None = None,
    ) -> Any:
        return self._call(
            "list_directory",
            path=path,
            depth=depth,
            include_hidden=include_hidden,
            cursor=cursor,
            max_entries=max_entries,
        )

    def rewind(self, message_id: str) -> Any:
        return self._call("rewind", message_id=message_id)


class McpDriverFactory:
    """A ``DriverFactory`` for one server command line and map."""

    def __init__(self, command: str, server_map: ServerMap) -> None:
        self.command = command
        self.map = server_map

    def __call__(self, root: Path, state_dir: Path) -> McpDriver:
        return McpDriver(self.command, self.map, root, state_dir)


class McpUrlDriverFactory:
    """A ``DriverFactory`` for one running server at a Streamable HTTP URL, and its map.

    Every driver it builds talks to the same server, over the one root it serves: a
    driver asked for any other root is refused (ERROR), never pointed at the wrong files.
    """

    def __init__(self, url: str, server_map: ServerMap, root: str | Path) -> None:
        self.url = url
        self.map = server_map
        self.root = Path(os.path.realpath(root))
        self._shared = SharedConnection(url, server_map.protocol)

    def __call__(self, root: Path, state_dir: Path) -> McpDriver:
        if Path(os.path.realpath(root)) != self.root:
            raise ServerError(
                f"the server at {self.url} serves {self.root}, not {root}: a clause that needs "
                "a driver over another directory cannot run against a running server"
            )
        return McpDriver(None, self.map, root, state_dir, url=self.url, shared=self._shared)


def shared_server_capabilities(server_map: ServerMap) -> frozenset[str]:
    """What a running server shared by every clause can be tested for.

    Not ``process`` (it is not ours to kill or restart) and not ``journal_layout`` (its
    state directory is its own, not the clause's). Without a session argument its read
    records outlive the clause that made them, so neither read-before-write nor
    snapshots can be judged clause by clause.
    """
    lost = {"process", "journal_layout"}
    if server_map.session_argument is None:
        lost |= {"read_before_write", "snapshots"}
    return server_map.capabilities - lost


def _load_map(map_path: str | None) -> ServerMap:
    import importlib.util

    from editspec.spec.drivers import DriverLoadError

    if importlib.util.find_spec("mcp") is None:
        raise DriverLoadError("the MCP adapter needs the mcp SDK: install editspec[mcp]")
    try:
        return load_map(map_path) if map_path else default_map()
    except (MapError, ValueError) as exc:
        raise DriverLoadError(str(exc)) from exc


def factory_from_options(command: str, map_path: str | None) -> McpDriverFactory:
    """The factory for ``--editspec-mcp=COMMAND [--editspec-mcp-map=FILE]``."""
    from editspec.spec.drivers import DriverLoadError

    server_map = _load_map(map_path)
    try:
        command_line(command, Path("root"), Path("state"))
    except (MapError, ValueError) as exc:
        raise DriverLoadError(str(exc)) from exc
    return McpDriverFactory(command, server_map)


def factory_from_url(url: str, map_path: str | None, *, root: str) -> McpUrlDriverFactory:
    """The factory for ``--editspec-mcp-url=URL --editspec-mcp-root=DIR`` (and a map)."""
    from editspec.spec.drivers import DriverLoadError

    if not url.startswith(("http://", "https://")):
        raise DriverLoadError(f"--mcp-url takes an http:// or https:// URL, not {url!r}")
    return McpUrlDriverFactory(url, _load_map(map_path), root)


__all__ = [
    "FieldNotReported",
    "McpDriver",
    "McpDriverFactory",
    "McpSession",
    "McpToolError",
    "McpUrlDriverFactory",
    "NotMapped",
    "ServerError",
    "factory_from_options",
    "factory_from_url",
    "shared_server_capabilities",
]
