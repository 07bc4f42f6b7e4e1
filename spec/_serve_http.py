"""``editspec serve --http [HOST:]PORT``: the MCP server over Streamable HTTP.

The official SDK's Streamable HTTP transport (its session manager, served by uvicorn)
at ``http://HOST:PORT/mcp``. The host is ``127.0.0.1`` unless one is named: the tools
read and change files, and there is no authentication, so reaching them from another
machine is a choice the caller makes explicitly (and is warned about).

DNS rebinding protection is the SDK's ``TransportSecuritySettings``, always on: the
``Host`` header must name the address served (the loopback names for a loopback
address), and a request with an ``Origin`` header must come from a loopback origin or
one given with ``--allow-origin``. A refused request never reaches the engine.

A guard over the raw body of every POST request sits before the SDK sees it:
``build_http_app(..., body_guard=...)`` takes a ``BodyGuard`` (the bytes in; out, a
reason to refuse, the JSON-RPC error response to send, or ``None`` to pass the body on).
A refused body is answered with HTTP 400 and a JSON-RPC error, and no tool runs. The
default is ``jsonrpc_body_guard``, the request guard of stdio (``_jsonrpc_guard``), so
that a body the SDK would drop or misread (a lone surrogate escape, which its parser turns
into another string; an ``id`` of ``1.5`` or ``true``, taken for a notification and run
unanswered) gets the same answer as on stdio. A body over ``MAX_MESSAGE_BYTES`` is not
read further: HTTP 413 with a ``-32700`` error.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from typing import Any

import attrs

from editspec.spec._jsonrpc_guard import (
    MAX_MESSAGE_BYTES,
    PARSE_ERROR,
    Rejected,
    check_message,
    error_response,
)

MCP_PATH = "/mcp"
DEFAULT_HOST = "127.0.0.1"
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

BodyGuard = Callable[[bytes], "str | dict[str, Any] | None"]
"""A check of a POST body before the MCP transport parses it: a reason to refuse (answered
as an invalid request), the JSON-RPC error response to send, or None to pass it on."""


def accept_every_body(body: bytes) -> str | dict[str, Any] | None:
    """A ``BodyGuard`` that lets every body go on to the SDK's own parsing."""
    return None


def jsonrpc_body_guard(body: bytes) -> str | dict[str, Any] | None:
    """The default ``BodyGuard``: the request guard's answer for a body it refuses."""
    checked = check_message(body)
    return checked.response if isinstance(checked, Rejected) else None


@attrs.frozen(kw_only=True)
class HttpAddress:
    """Where to listen: a host (name or address) and a port (0: any free port)."""

    host: str
    port: int

    @property
    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_address(text: str) -> HttpAddress:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT``; ValueError says what is wrong."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = DEFAULT_HOST, text
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        host = DEFAULT_HOST
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"--http takes [HOST:]PORT with a port from 0 to 65535, not {text!r}")
    return HttpAddress(host=host, port=int(port_text))


def security_settings(
    address: HttpAddress, *, allow_hosts: Sequence[str] = (), allow_origins: Sequence[str] = ()
) -> Any:
    """The SDK's DNS rebinding protection for ``address`` (Host and Origin checks)."""
    from mcp.server.transport_security import TransportSecuritySettings

    if address.is_loopback:
        hosts = [f"{name}:*" for name in _LOOPBACK_NAMES]
        origins = [f"http://{name}:*" for name in _LOOPBACK_NAMES]
    else:
        hosts, origins = [f"{address.url_host}:*"], []
    for host in allow_hosts:
        hosts += [host] if ":" in host.lstrip("[").rpartition("]")[2] else [host, f"{host}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[*origins, *allow_origins],
    )


class RequestBodyGuard:
    """ASGI middleware: ``guard`` sees each POST body whole before the transport does."""

    def __init__(
        self, app: ASGIApp, guard: BodyGuard, *, max_bytes: int = MAX_MESSAGE_BYTES
    ) -> None:
        self.app = app
        self.guard = guard
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            more = bool(message.get("more_body", False))
            if size > self.max_bytes:  # not read further: memory stays bounded
                too_large = f"message too large: over {self.max_bytes} bytes"
                error = error_response(None, PARSE_ERROR, too_large, max_bytes=self.max_bytes)
                await _refuse(send, error, status=413)
                return
        body = b"".join(chunks)
        problem = self.guard(body)
        if problem is not None:
            await _refuse(send, problem)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _refuse(send: Send, problem: str | dict[str, Any], *, status: int = 400) -> None:
    error = (
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": problem}}
        if isinstance(problem, str)
        else problem
    )
    payload = json.dumps(error, ensure_ascii=True).encode("ascii")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def build_http_app(
    server: Any,
    address: HttpAddress,
    *,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    body_guard: BodyGuard = jsonrpc_body_guard,
) -> ASGIApp:
    """The ASGI application: the body guard, then ``server``'s Streamable HTTP app at /mcp."""
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security_settings(
            address, allow_hosts=allow_hosts, allow_origins=allow_origins
        ),
        host=address.host,
    )
    return RequestBodyGuard(app, body_guard)


def _listen(address: HttpAddress) -> socket.socket:
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    infos = socket.getaddrinfo(address.host, address.port, family, socket.SOCK_STREAM)
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(infos[0][4])
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(
    server: Any,
    address: HttpAddress,
    *,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    body_guard: BodyGuard = jsonrpc_body_guard,
) -> None:
    """Serve ``server`` (an SDK ``Server``) until SIGINT or SIGTERM; the URL goes to stderr."""
    import uvicorn

    app = build_http_app(
        server,
        address,
        allow_hosts=allow_hosts,
        allow_origins=allow_origins,
        body_guard=body_guard,
    )
    sock = _listen(address)
    port = sock.getsockname()[1]
    if not address.is_loopback:
        print(
            f"editspec serve: warning: {address.host} is not a loopback address: whoever "
            f"reaches port {port} can read and change the files this server serves "
            "(there is no authentication)",
            file=sys.stderr,
        )
    print(
        f"editspec serve: MCP over Streamable HTTP at http://{address.url_host}:{port}{MCP_PATH}",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    with sock, _sigterm_returns():
        await uvicorn.Server(config).serve(sockets=[sock])


@contextlib.contextmanager
def _sigterm_returns() -> Iterator[None]:
    """uvicorn shuts down on SIGTERM, then raises it again for the handler it found.

    That handler is this no-op, so the process goes on to close the workspace (its
    locks and journal directory) and exits 0 rather than dying of the signal.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
