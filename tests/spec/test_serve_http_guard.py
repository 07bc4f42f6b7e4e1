"""``editspec serve --http``: every POSTed body that is not valid JSON-RPC gets a JSON-RPC error.

Over real HTTP, against a server process: the inputs that stdio's request guard answers
(``_jsonrpc_guard``) are POSTed raw, in a session that works (positive control: a ping and
a tool call answered before and after), and each must come back as a JSON-RPC error with
the guard's code (``-32700`` parse error, ``-32600`` invalid request) and, when the
request's ``id`` is valid, that ``id``; nothing they name is created on disk.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from editspec.spec._jsonrpc_guard import MAX_MESSAGE_BYTES
from tests.spec.http_server import Served, start

pytest.importorskip("mcp")

PROTOCOL = "2025-06-18"


class Connection:
    """Raw POSTs to one server, in one initialized MCP session."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self.session_id: str | None = None

    def post(self, body: bytes) -> tuple[int, Any]:
        """POST ``body``; the status and the JSON-RPC message answered (None: no body)."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Content-Length": str(len(body)),
            "MCP-Protocol-Version": PROTOCOL,
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        try:
            connection.request("POST", self.path, body=body, headers=headers)
            response = connection.getresponse()
            self.session_id = response.getheader("mcp-session-id") or self.session_id
            text = response.read().decode("utf-8")
            return response.status, _message(text, response.getheader("content-type") or "")
        finally:
            connection.close()

    def call(self, message: dict[str, Any]) -> tuple[int, Any]:
        return self.post(json.dumps(message).encode())


def _message(text: str, content_type: str) -> Any:
    if not text.strip():
        return None
    if content_type.startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        data = [item for item in data if item]
        return json.loads(data[-1]) if data else None
    return json.loads(text)


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[tuple[Connection, Served]]:
    root = tmp_path / "ws"
    root.mkdir()
    served = start(root, tmp_path / "state")
    try:
        link = Connection(served.url)
        status, answer = link.call(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "guard-test", "version": "0"},
                },
            }
        )
        assert status == 200 and "result" in answer, answer
        status, _ = link.call({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202
        yield link, served
    finally:
        assert served.stop() == 0


def _write(path: str, request_id: Any = 7) -> dict[str, Any]:
    arguments = {"path": path, "content": "x\n"}
    params = {"name": "write", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _deep(levels: int) -> bytes:
    nested = "[" * levels + "]" * levels
    return ('{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":' + nested + "}}").encode()


HOSTILE: list[tuple[str, bytes, int, Any]] = [
    # (what, body, JSON-RPC error code, the id the answer must carry)
    ("lone surrogate escape", json.dumps(_write("\ud800.txt")).encode(), -32600, 7),
    (
        "raw control character",
        json.dumps(_write("ctl.txt")).replace("ctl", "c\x01tl").encode(),
        -32700,
        None,
    ),
    ("leading zero", b'{"jsonrpc":"2.0","id":01,"method":"ping"}', -32700, None),
    ("hex number", b'{"jsonrpc":"2.0","id":0x10,"method":"ping"}', -32700, None),
    ("nesting 300 deep", _deep(300), -32600, 9),
    ("nesting 100 deep", _deep(100), -32600, 9),
    ("id 1.5", json.dumps(_write("fraction.txt", 1.5)).encode(), -32600, None),
    ("id true", json.dumps(_write("bool.txt", True)).encode(), -32600, None),
    ("batch", json.dumps([_write("batch.txt")]).encode(), -32600, None),
    ("not UTF-8", b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"\xff"}}', -32700, None),
    ("NaN", b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":NaN}}', -32700, None),
]


def test_every_hostile_body_gets_a_jsonrpc_error(connection: tuple[Connection, Served]) -> None:
    link, served = connection
    # Positive control: a valid request is answered, and a tool call lands on disk.
    assert link.call({"jsonrpc": "2.0", "id": 1, "method": "ping"}) == (
        200,
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    )
    status, answer = link.call(_write("ok.txt", 2))
    assert status == 200 and answer["id"] == 2 and not answer["result"]["isError"], answer
    assert (served.root / "ok.txt").read_bytes() == b"x\n"
    before = sorted(p.name for p in served.root.iterdir())
    for what, body, code, request_id in HOSTILE:
        status, answer = link.post(body)
        assert status == 400, (what, status, answer)
        assert answer is not None, f"{what}: no answer"
        assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code, (what, answer)
        assert answer["id"] == request_id, (what, answer)
        assert len(json.dumps(answer)) < 2048, f"{what}: a {len(json.dumps(answer))}-byte answer"
    assert sorted(p.name for p in served.root.iterdir()) == before, "a refused call ran"
    # The session still works after all of them.
    assert link.call({"jsonrpc": "2.0", "id": 3, "method": "ping"})[1]["id"] == 3


def test_an_oversized_body_is_refused_unread(connection: tuple[Connection, Served]) -> None:
    link, served = connection
    assert link.call({"jsonrpc": "2.0", "id": 1, "method": "ping"})[0] == 200  # control
    padding = "y" * (MAX_MESSAGE_BYTES + 1024)
    status, answer = link.post(json.dumps(_write("big.txt") | {"pad": padding}).encode())
    assert status == 413, status
    assert answer["error"]["code"] == -32700 and answer["id"] is None, answer
    assert not (served.root / "big.txt").exists()
    assert link.call({"jsonrpc": "2.0", "id": 4, "method": "ping"})[1]["id"] == 4
