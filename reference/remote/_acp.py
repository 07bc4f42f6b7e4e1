"""The ``FileService`` of an Agent Client Protocol client (its two ``fs/*_text_file`` calls).

When an agent runs inside an editor, the files live in the editor: the agent may only
ask the client to read or write a whole text file (ACP ``fs/read_text_file`` and
``fs/write_text_file``, absolute paths, text content). The official Python SDK
(package ``agent-client-protocol``, module ``acp``; the ``acp`` extra) speaks the
protocol; this module adapts its asynchronous agent-side connection to the engine's
synchronous ``FileService``:

* ``AcpFileService(connection, acp_session_id, loop=...)``: ``connection`` is anything
  with the SDK's agent-side ``read_text_file`` / ``write_text_file`` coroutines (an
  ``acp.core.AgentSideConnection``), running on ``loop`` in another thread. Each call
  is submitted to that loop and waited for, at most ``timeout`` seconds. A call from the
  loop's own thread would wait for itself: it is refused (INVALID_ARGUMENT); an agent
  that handles a prompt on the loop calls the engine through ``asyncio.to_thread``.
* ``AcpChannel.over_socket(sock)``: a connected stream socket whose peer is an ACP
  client, given an ``AgentSideConnection`` on an event loop of its own thread.

Error mapping: the client's "resource not found" (JSON-RPC -32002) is NOT_FOUND; any
other JSON-RPC error, a closed connection, a malformed answer or a timeout is IO_ERROR
(``details``: ``rpc_code``, ``service``). A client whose capabilities say it cannot
read (or write) text files gets every such call refused as UNSUPPORTED, before
anything is sent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._supports import WHOLE_TEXT, Supports

T = TypeVar("T")

RESOURCE_NOT_FOUND = -32002  # the JSON-RPC code ACP clients answer for a missing file
DEFAULT_TIMEOUT = 30.0
STREAM_LIMIT = 64 * 1024 * 1024  # one NDJSON message holds a whole file


def _run(loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[T]], timeout: float) -> T:
    """Run ``make()`` on ``loop`` (another thread's) and wait for its value."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            "a remote session waits for the client's answer; call it from a worker thread "
            "(asyncio.to_thread), not from the event loop that runs the ACP connection",
        )
    if loop.is_closed():
        raise ToolError(_errors.IO_ERROR, "the ACP connection's event loop is closed")

    async def call() -> T:
        return await make()

    future = asyncio.run_coroutine_threadsafe(call(), loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"the client did not answer within {timeout:g} s") from None


class AcpFileService:
    """``FileService`` through an ACP client's ``fs/read_text_file`` and ``fs/write_text_file``."""

    kind = "acp"
    #: ``fs/read_text_file`` and ``fs/write_text_file``: no rename, no fsync, no journal.
    supports: Supports = WHOLE_TEXT

    def __init__(
        self,
        connection: Any,
        acp_session_id: str,
        *,
        loop: asyncio.AbstractEventLoop,
        timeout: float = DEFAULT_TIMEOUT,
        client_capabilities: Any = None,
    ) -> None:
        if not isinstance(acp_session_id, str) or not acp_session_id:
            raise ToolError(
                _errors.INVALID_ARGUMENT, "the ACP session id must be a non-empty string"
            )
        self.connection = connection
        self.acp_session_id = acp_session_id
        self.loop = loop
        self.timeout = timeout
        fs_capabilities = getattr(client_capabilities, "fs", None)
        self.can_read = client_capabilities is None or bool(
            getattr(fs_capabilities, "read_text_file", False)
        )
        self.can_write = client_capabilities is None or bool(
            getattr(fs_capabilities, "write_text_file", False)
        )

    def read_text(self, path: str) -> str:
        """The whole text the client holds for ``path``. Spec: REMOTE-*."""
        if not self.can_read:
            raise ToolError(
                _errors.UNSUPPORTED,
                "the ACP client does not offer fs/read_text_file",
                path=path,
                service=self.kind,
            )
        response = self._call(
            "read",
            path,
            lambda: self.connection.read_text_file(session_id=self.acp_session_id, path=path),
        )
        content = getattr(response, "content", None)
        if not isinstance(content, str):
            raise ToolError(
                _errors.IO_ERROR,
                f"the ACP client answered fs/read_text_file for {path} without text content",
                path=path,
                service=self.kind,
            )
        return content

    def write_text(self, path: str, text: str) -> None:
        """Ask the client to replace (or create) ``path`` with ``text``. Spec: REMOTE-*."""
        if not self.can_write:
            raise ToolError(
                _errors.UNSUPPORTED,
                "the ACP client does not offer fs/write_text_file",
                path=path,
                service=self.kind,
            )
        self._call(
            "write",
            path,
            lambda: self.connection.write_text_file(
                session_id=self.acp_session_id, path=path, content=text
            ),
        )

    def _call(self, action: str, path: str, make: Callable[[], Awaitable[T]]) -> T:
        from acp import RequestError

        try:
            return _run(self.loop, make, self.timeout)
        except ToolError:
            raise
        except RequestError as exc:
            if exc.code == RESOURCE_NOT_FOUND:
                raise ToolError(
                    _errors.NOT_FOUND, f"{path} does not exist", path=path, service=self.kind
                ) from exc
            raise ToolError(
                _errors.IO_ERROR,
                f"the ACP client could not {action} {path}: {exc} (JSON-RPC {exc.code})",
                path=path,
                rpc_code=exc.code,
                service=self.kind,
            ) from exc
        except (
            OSError,
            EOFError,
            ValueError,
            RuntimeError,
            concurrent.futures.CancelledError,
        ) as exc:
            # A closed connection (ConnectionError), a timeout, a malformed answer
            # (pydantic's ValidationError is a ValueError): the client's state is unknown.
            raise ToolError(
                _errors.IO_ERROR,
                f"the ACP client could not {action} {path}: {type(exc).__name__}: {exc}",
                path=path,
                service=self.kind,
            ) from exc


class _NoAgentMethods:
    """The agent side of a channel that only asks: every request to it is method-not-found."""


class AcpChannel:
    """An agent-side ACP connection served by an event loop on a thread of its own."""

    def __init__(
        self,
        connection: Any,
        loop: asyncio.AbstractEventLoop,
        thread: threading.Thread | None = None,
    ) -> None:
        self.connection = connection
        self.loop = loop
        self._thread = thread
        self._closed = False

    @classmethod
    def over_socket(cls, sock: socket.socket) -> AcpChannel:
        """Speak ACP, as the agent, over a connected stream socket (its peer is the client)."""
        from acp.core import AgentSideConnection

        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="editspec-acp", daemon=True)
        thread.start()

        async def build() -> Any:
            reader, writer = await asyncio.open_connection(sock=sock, limit=STREAM_LIMIT)
            agent: Any = _NoAgentMethods()
            return AgentSideConnection(agent, writer, reader)

        try:
            connection = asyncio.run_coroutine_threadsafe(build(), loop).result(DEFAULT_TIMEOUT)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        return cls(connection, loop, thread)

    def file_service(
        self,
        acp_session_id: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        client_capabilities: Any = None,
    ) -> AcpFileService:
        return AcpFileService(
            self.connection,
            acp_session_id,
            loop=self.loop,
            timeout=timeout,
            client_capabilities=client_capabilities,
        )

    def close(self) -> None:
        """Close the connection; stop the loop when this channel started it."""
        if self._closed:
            return
        self._closed = True
        if not self.loop.is_closed() and self.loop.is_running():
            close = getattr(self.connection, "close", None)
            if close is not None:
                future = asyncio.run_coroutine_threadsafe(close(), self.loop)
                try:
                    future.result(DEFAULT_TIMEOUT)
                except Exception:  # closing a broken connection: nothing left to do
                    future.cancel()
        if self._thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(DEFAULT_TIMEOUT)
            self.loop.close()
