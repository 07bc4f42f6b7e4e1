"""A fake Agent Client Protocol client: files in memory, a real JSON-RPC peer, faults on demand.

``FakeAcpClient`` plays the editor of a remote workspace. It answers ``fs/read_text_file``
and ``fs/write_text_file`` through the official SDK (``acp.core.ClientSideConnection``)
over a real stream socket: ``connect()`` returns the agent's end, on which an agent (the
engine's ``RemoteWorkspace.over_socket``, or any implementation under test) speaks
newline-delimited JSON-RPC 2.0. The client's loop runs on a thread of its own; its files
and faults may be read and changed from any thread.

Files are kept by absolute path (``root`` + relative name). A missing file is answered
with the protocol's "resource not found" error (-32002), as editors do.

Faults (``ClientFault``), matched against the n-th call of a method (1-based, counted
since ``arm()``; ``through`` extends one fault over a range of calls, ``None`` meaning
only ``at``, ``FOREVER`` every later call). Method ``readback`` counts only the reads
that are read-backs: the first read of a path after a write call for it.

* ``fail``: the call is answered with a JSON-RPC error, and a write stores nothing;
* ``drop`` (write): answered as a success, nothing stored;
* ``garble`` (write): answered as a success, other text stored;
* ``corrupt`` (read): answered with other text than the file holds (nothing changes);
* ``change``: before the call is handled, another writer replaces ``path`` (default:
  the call's own path) with ``text`` (default: the stored text with a marker appended).

``log`` records every call (method, path, call number, outcome), so a test can check
which paths were ever asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Mapping
from typing import Any

import attrs

READ = "read"
WRITE = "write"
READBACK = "readback"
FOREVER = 1 << 62
MARKER = "\n# changed by another writer\n"
STREAM_LIMIT = 64 * 1024 * 1024
DEFAULT_SESSION = "editspec-remote"
_ACTIONS = {
    READ: ("fail", "corrupt", "change"),
    READBACK: ("fail", "corrupt", "change"),
    WRITE: ("fail", "drop", "garble", "change"),
}


@attrs.frozen(kw_only=True)
class ClientFault:
    """One injected fault: ``action`` at the ``at``-th call of ``method`` (through ``through``)."""

    method: str
    at: int
    action: str
    through: int | None = None
    path: str | None = None  # "change": which file (absolute); default the call's path
    text: str | None = None  # "change"/"garble"/"corrupt": the text; default: a marker added

    def __attrs_post_init__(self) -> None:
        if self.method not in _ACTIONS or self.action not in _ACTIONS[self.method]:
            raise ValueError(f"no fault {self.action!r} for {self.method!r} calls")
        if self.at < 1:
            raise ValueError("call numbers start at 1")

    def applies(self, number: int) -> bool:
        last = self.at if self.through is None else self.through
        return self.at <= number <= last


@attrs.frozen(kw_only=True)
class ClientCall:
    method: str
    path: str
    number: int
    outcome: str  # "ok", "missing", or the fault's action


class FakeAcpClient:
    """An ACP client holding text files in memory, reached over a socket. See the module."""

    def __init__(
        self,
        root: str,
        files: Mapping[str, str] | None = None,
        *,
        session_id: str = DEFAULT_SESSION,
    ) -> None:
        self.root = root.rstrip("/") or "/"
        self.session_id = session_id
        self._lock = threading.Lock()
        self._files: dict[str, str] = {}
        self.faults: list[ClientFault] = []
        self.log: list[ClientCall] = []
        self.reads = 0
        self.writes = 0
        self.readbacks = 0
        self._written: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connections: list[Any] = []
        self._writers: list[asyncio.StreamWriter] = []
        for name, text in (files or {}).items():
            self.put(name, text)

    # -- files (any thread) ------------------------------------------------------------

    def absolute(self, name: str) -> str:
        """``name`` relative to the root (or already absolute) as the client keys it."""
        if name.startswith("/"):
            return name
        return f"{self.root.rstrip('/')}/{name}"

    def put(self, name: str, text: str) -> None:
        """Create or replace a file, as the user of the editor would."""
        with self._lock:
            self._files[self.absolute(name)] = text

    def remove(self, name: str) -> None:
        with self._lock:
            self._files.pop(self.absolute(name), None)

    def get(self, name: str) -> str | None:
        with self._lock:
            return self._files.get(self.absolute(name))

    def files(self) -> dict[str, str]:
        """Every file, by absolute path."""
        with self._lock:
            return dict(self._files)

    def relative_files(self) -> dict[str, str]:
        """Every file under the root, by "/"-separated relative name."""
        prefix = self.root.rstrip("/") + "/"
        with self._lock:
            return {
                path[len(prefix) :]: text
                for path, text in self._files.items()
                if path.startswith(prefix)
            }

    # -- faults ------------------------------------------------------------------------

    def arm(self, *faults: ClientFault) -> None:
        """Replace the faults and count calls from zero again."""
        with self._lock:
            self.faults = list(faults)
            self.reads = 0
            self.writes = 0
            self.readbacks = 0
            self._written.clear()

    def paths_asked(self) -> set[str]:
        with self._lock:
            return {call.path for call in self.log}

    def _faults(self, method: str, number: int, path: str) -> ClientFault | None:
        """Apply every matching ``change`` now; return the first other matching fault."""
        chosen: ClientFault | None = None
        for fault in self.faults:
            if fault.method != method or not fault.applies(number):
                continue
            if fault.action == "change":
                self._change(fault, path)
            elif chosen is None:
                chosen = fault
        return chosen

    # -- the protocol (called on the client's loop) --------------------------------------

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> Any:
        # the ACP SDK is optional (editspec[acp]): imported when a client runs
        from acp import ReadTextFileResponse, RequestError

        self._check_session(session_id)
        with self._lock:
            self.reads += 1
            number = self.reads
            fault = self._faults(READ, number, path)
            if path in self._written:
                self._written.discard(path)
                self.readbacks += 1
                fault = self._faults(READBACK, self.readbacks, path) or fault
            if fault is not None and fault.action == "fail":
                self.log.append(ClientCall(method=READ, path=path, number=number, outcome="fail"))
                raise RequestError.internal_error({"details": "injected read failure"})
            stored = self._files.get(path)
            if stored is None:
                self.log.append(
                    ClientCall(method=READ, path=path, number=number, outcome="missing")
                )
                raise RequestError.resource_not_found(path)
            outcome = "ok"
            if fault is not None and fault.action == "corrupt":
                stored = fault.text if fault.text is not None else stored + MARKER
                outcome = "corrupt"
            self.log.append(ClientCall(method=READ, path=path, number=number, outcome=outcome))
        content = _lines(stored, line, limit)
        return ReadTextFileResponse(content=content)

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> Any:
        # the ACP SDK is optional (editspec[acp]): imported when a client runs
        from acp import RequestError, WriteTextFileResponse

        self._check_session(session_id)
        with self._lock:
            self.writes += 1
            number = self.writes
            self._written.add(path)
            fault = self._faults(WRITE, number, path)
            outcome = "ok"
            if fault is not None and fault.action == "fail":
                self.log.append(ClientCall(method=WRITE, path=path, number=number, outcome="fail"))
                raise RequestError.internal_error({"details": "injected write failure"})
            if fault is not None and fault.action == "drop":
                outcome = "drop"
            elif fault is not None and fault.action == "garble":
                self._files[path] = fault.text if fault.text is not None else content + MARKER
                outcome = "garble"
            else:
                self._files[path] = content
            self.log.append(ClientCall(method=WRITE, path=path, number=number, outcome=outcome))
        return WriteTextFileResponse()

    def _check_session(self, session_id: str) -> None:
        # the ACP SDK is optional (editspec[acp]): imported when a client runs
        from acp import RequestError

        if session_id != self.session_id:
            raise RequestError.invalid_params({"sessionId": f"unknown session {session_id!r}"})

    def _change(self, fault: ClientFault, path: str) -> None:
        target = fault.path if fault.path is not None else path
        current = self._files.get(target, "")
        self._files[target] = fault.text if fault.text is not None else current + MARKER

    # -- the connection ------------------------------------------------------------------

    def connect(self) -> socket.socket:
        """A connected socket whose other end this client serves; give it to the agent."""
        # the ACP SDK is optional (editspec[acp]): imported when a client runs
        from acp.core import ClientSideConnection

        loop = self._ensure_loop()
        agent_end, client_end = socket.socketpair()

        async def build() -> Any:
            reader, writer = await asyncio.open_connection(sock=client_end, limit=STREAM_LIMIT)
            self._writers.append(writer)
            return ClientSideConnection(self, writer, reader)

        connection = asyncio.run_coroutine_threadsafe(build(), loop).result(30)
        self._connections.append(connection)
        return agent_end

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="editspec-fake-acp-client", daemon=True
            )
            self._thread.start()
        return self._loop

    def close(self) -> None:
        """Close every connection and stop the client's loop."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        for connection in self._connections:
            future = asyncio.run_coroutine_threadsafe(connection.close(), loop)
            try:
                future.result(30)
            except Exception:  # a connection the agent already dropped
                future.cancel()
        self._connections.clear()

        async def shut() -> None:
            # The socket is closed for certain before the loop stops, so the agent's end
            # sees the end of the stream at once.
            for writer in self._writers:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shut(), loop).result(30)
        self._writers.clear()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
        self._loop = self._thread = None

    def __enter__(self) -> FakeAcpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lines(text: str, line: int | None, limit: int | None) -> str:
    """The protocol's optional range: from 1-based ``line``, at most ``limit`` lines."""
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    stop = len(lines) if limit is None else start + limit
    return "".join(lines[start:stop])
