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

import concurrent.futures
import contextlib
import importlib.util
import os
import secrets
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from editspec.contract.drivers import DriverLoadError
from editspec.contract.drivers._mcp_arguments import edit_items, tool_arguments
from editspec.contract.drivers._mcp_connection import (
    START_TIMEOUT,
    STOPPING,
    Connection,
    Loop,
    McpToolError,
    ServerError,
    SharedConnection,
    call_tool,
    command_line,
    leaves,
    stopped,
    wait_stopped,
)
from editspec.contract.drivers._mcp_map import (
    FieldNotReported,
    MapError,
    NotMapped,
    Record,
    ServerMap,
    ToolMap,
    default_map,
    load_map,
)
from editspec.contract.drivers._mcp_results import error_of, record_of, require_unicode
from editspec.contract.drivers._mcp_session import McpSession


class OneRootOnly(Exception):
    """A clause needs a driver over another directory than the one a running server
    serves: a limit of testing through one running server, neither the server's failure
    nor the suite's (the clause is UNSUPPORTED, DESIGN §7)."""

    unsupported = True


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
        self._loop = Loop.get()
        self._connection: Connection | None = None
        self._shared = shared
        self._lock = threading.Lock()
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------------

    def _ready(self) -> Connection:
        """The running server, started on first use (one start, whichever thread asks first)."""
        with self._lock:
            if self._closed:
                raise ServerError("the MCP driver is closed")
            connection = self._connection
            if self._shared is not None:
                connection = self._shared.get(self._loop)
            elif connection is None:
                connection = Connection(self.argv, self.map.protocol, self.url, self.cwd)
                self._connection = connection
                self._loop.submit(connection.run())
        try:
            connection.ready.result(timeout=START_TIMEOUT)
        except concurrent.futures.TimeoutError:
            raise ServerError(f"the server did not start within {START_TIMEOUT:g} s") from None
        except ServerError as exc:
            raise ServerError(f"{exc}\n{connection.stderr_tail()}".rstrip()) from None
        return connection

    def start(self) -> None:
        """Start the server now rather than on first use (a clause whose processes race
        from one moment starts them before that moment)."""
        self._ready()

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
            wait_stopped(connection, timeout=30)
        else:
            # The next clause need not wait for this one's server to exit; the process
            # does, before it ends (atexit).
            STOPPING.add(connection)
            connection.finished.add_done_callback(lambda _: stopped(connection))

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

    def call(self, operation: str, session_id: str | None, values: dict[str, Any]) -> Any:
        """Call the tool of ``operation`` with the contract's argument values."""
        tool = self.tool(operation, live=True)
        arguments = self._arguments(tool, values)
        require_unicode(arguments, tool.name)
        if session_id is not None and self.map.session_argument and operation != "recover":
            arguments[self.map.session_argument] = self._session_prefix + session_id
        connection = self._ready()
        if tool.name not in connection.tools:
            names = " or ".join(repr(name) for name in tool.names)
            raise NotMapped(f"the server lists no tool {names} (for {operation})")
        result = self.call_tool(tool.name, arguments)
        if result.is_error:
            raise self._error(result)
        return self._result(tool, result)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """One tool by its own name and arguments, its raw result: for a driver built on
        this one, of a server whose tools no map can express (nested arrays, answers keyed
        by path)."""
        connection = self._ready()
        future = self._loop.submit(call_tool(connection, name, arguments))
        try:
            return future.result(timeout=self.map.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ServerError(f"{name} did not answer within {self.map.timeout:g} s") from None
        except Exception as exc:
            tail = connection.stderr_tail()
            raise ServerError(f"{name} failed: {leaves(exc)}\n{tail}".rstrip()) from exc

    def _error(self, result: Any) -> Exception:
        return error_of(self.map, result)

    def _result(self, tool: ToolMap, result: Any) -> Record:
        return record_of(self.map, tool, result, server=self.argv[0], root=os.fspath(self.root))

    def _arguments(self, tool: ToolMap, values: dict[str, Any]) -> dict[str, Any]:
        return tool_arguments(self.map, tool, values)

    def edits(self, tool: ToolMap, edits: Sequence[Any]) -> list[dict[str, Any]]:
        return edit_items(self.map, tool, edits)


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
    driver asked for any other root is refused (``OneRootOnly``: the clause is
    UNSUPPORTED), never pointed at the wrong files.
    """

    def __init__(self, url: str, server_map: ServerMap, root: str | Path) -> None:
        self.url = url
        self.map = server_map
        self.root = Path(os.path.realpath(root))
        self._shared = SharedConnection(url, server_map.protocol)

    def __call__(self, root: Path, state_dir: Path) -> McpDriver:
        if Path(os.path.realpath(root)) != self.root:
            raise OneRootOnly(
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
    if importlib.util.find_spec("mcp") is None:
        raise DriverLoadError("the MCP adapter needs the mcp SDK: install editspec[mcp]")
    try:
        return load_map(map_path) if map_path else default_map()
    except (MapError, ValueError) as exc:
        raise DriverLoadError(str(exc)) from exc


def factory_from_options(command: str, map_path: str | None) -> McpDriverFactory:
    """The factory for ``--editspec-mcp=COMMAND [--editspec-mcp-map=FILE]``."""
    server_map = _load_map(map_path)
    try:
        command_line(command, Path("root"), Path("state"))
    except (MapError, ValueError) as exc:
        raise DriverLoadError(str(exc)) from exc
    return McpDriverFactory(command, server_map)


def factory_from_url(url: str, map_path: str | None, *, root: str) -> McpUrlDriverFactory:
    """The factory for ``--editspec-mcp-url=URL --editspec-mcp-root=DIR`` (and a map)."""
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
    "OneRootOnly",
    "ServerError",
    "default_map",
    "factory_from_options",
    "factory_from_url",
    "load_map",
    "shared_server_capabilities",
]
