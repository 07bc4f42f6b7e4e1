"""``editspec serve --http``: the reference engine over Streamable HTTP, through the SDK's client.

A real server process on a free loopback port: tools listed, a file read and edited
through the official ``mcp`` client, the bytes on disk checked; Host and Origin checks
(DNS rebinding protection) refuse a foreign page before any tool runs; the body guard
slot refuses a body without the transport seeing it.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from editspec.spec._serve_http import (
    RequestBodyGuard,
    accept_every_body,
    parse_address,
    security_settings,
)
from tests.spec.http_server import Served, start

pytest.importorskip("mcp")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = tmp_path / "ws"
    root.mkdir()
    handle = start(root, tmp_path / "state")
    yield handle
    assert handle.stop() == 0  # SIGTERM is a clean shutdown


def _tool_session(url: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    async def run() -> dict[str, Any]:
        async with Client(url) as client:
            listed = await client.list_tools()
            results: list[Any] = []
            for name, args in calls:
                try:
                    results.append(await client.call_tool(name, args))
                except MCPError as exc:  # a protocol error, not a tool result
                    results.append(exc)
            return {"tools": [tool.name for tool in listed.tools], "results": results}

    return anyio.run(run)


def test_tools_are_listed_and_an_edit_lands_on_disk(served: Served) -> None:
    (served.root / "a.txt").write_bytes(b"alpha\r\nbeta\r\n")
    edit = {"path": "a.txt", "edits": [{"old_string": "beta", "new_string": "gamma"}]}
    calls = [("edit", edit), ("read", {"path": "a.txt"}), ("edit", edit), ("no_such_tool", {})]
    done = _tool_session(served.url, calls)

    assert {"read", "write", "edit", "apply_patch", "glob", "grep"} <= set(done["tools"])
    refused, read, edited, unknown = done["results"]
    assert getattr(unknown, "code", None) == -32602, unknown  # JSON-RPC invalid params
    assert refused.is_error and refused.structured_content["code"] == "NOT_READ"
    assert refused.content[0].text.startswith("NOT_READ: ")
    assert "Read the whole file with read" in refused.content[0].text
    assert not read.is_error and read.structured_content["newline"] == "crlf"
    assert read.content[0].text.splitlines()[1:] == ["     1\talpha", "     2\tbeta"]
    assert not edited.is_error, edited.content[0].text
    assert edited.structured_content["replacements"][0]["count"] == 1
    assert edited.content[0].text.startswith("edited a.txt: 1 replacement at line 2 (exact)")
    # The bytes on disk: the edit landed, and the file kept its CRLF line endings.
    assert (served.root / "a.txt").read_bytes() == b"alpha\r\ngamma\r\n"


def _post(url: str, headers: dict[str, str]) -> int:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    try:
        connection.putrequest("POST", parts.path, skip_host="Host" in headers)
        for name, value in {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Content-Length": str(len(body)),
            **headers,
        }.items():
            connection.putheader(name, value)
        connection.endheaders(body.encode())
        return connection.getresponse().status
    finally:
        connection.close()


def test_a_foreign_host_or_origin_is_refused(served: Served) -> None:
    port = urlsplit(served.url).port
    assert _post(served.url, {"Host": f"evil.example:{port}"}) == 421
    assert _post(served.url, {"Origin": "http://evil.example"}) == 403
    # Positive control: the same request from a loopback origin gets through the checks.
    assert _post(served.url, {"Origin": f"http://localhost:{port}"}) not in (403, 421)


def test_an_allowed_origin_gets_through(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    handle = start(root, tmp_path / "state", "--allow-origin", "https://ide.example")
    try:
        assert _post(handle.url, {"Origin": "https://ide.example"}) not in (403, 421)
        assert _post(handle.url, {"Origin": "https://other.example"}) == 403
    finally:
        assert handle.stop() == 0


def test_addresses_are_parsed_loopback_by_default() -> None:
    assert parse_address("8123") == parse_address("127.0.0.1:8123")
    assert parse_address("8123").is_loopback
    v6 = parse_address("[::1]:0")
    assert (v6.host, v6.port, v6.url_host, v6.is_loopback) == ("::1", 0, "[::1]", True)
    assert not parse_address("0.0.0.0:80").is_loopback
    for wrong in ("", "host:", "127.0.0.1:70000", "x:y"):
        with pytest.raises(ValueError):
            parse_address(wrong)


def test_a_non_loopback_address_accepts_only_its_own_and_the_named_hosts() -> None:
    settings = security_settings(
        parse_address("0.0.0.0:80"), allow_hosts=["files.internal", "[::1]:80"]
    )
    assert settings.enable_dns_rebinding_protection
    assert settings.allowed_hosts == ["0.0.0.0:*", "files.internal", "files.internal:*", "[::1]:80"]
    assert settings.allowed_origins == []  # no loopback origins for a public address
    loopback = security_settings(parse_address("8000"), allow_origins=["https://ide.example"])
    assert "localhost:*" in loopback.allowed_hosts
    assert loopback.allowed_origins[-1] == "https://ide.example"


def test_serve_refuses_origins_without_http(tmp_path: Path) -> None:
    serve = [sys.executable, "-m", "editspec.spec.cli", "serve", os.fspath(tmp_path)]
    done = subprocess.run(
        [*serve, "--allow-origin", "https://ide.example"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "only with --http" in done.stderr


def _through_guard(guard: Any, chunks: list[bytes]) -> tuple[list[bytes], list[dict[str, Any]]]:
    """Send one POST in ``chunks`` through the guard; what the app read, what was sent."""
    seen: list[bytes] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            seen.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def run() -> None:
        messages = [
            {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
            for index, chunk in enumerate(chunks)
        ]

        async def receive() -> dict[str, Any]:
            return messages.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await RequestBodyGuard(app, guard)({"type": "http", "method": "POST"}, receive, send)

    anyio.run(run)
    return seen, sent


def test_the_body_guard_sees_the_whole_body_and_can_refuse_it() -> None:
    bodies: list[bytes] = []

    def refuse_batches(body: bytes) -> str | None:
        bodies.append(body)
        return "batches are refused" if body.startswith(b"[") else None

    seen, sent = _through_guard(refuse_batches, [b'[{"jsonrpc":', b'"2.0"}]'])
    assert bodies == [b'[{"jsonrpc":"2.0"}]'] and seen == []
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["error"]["message"] == "batches are refused"

    seen, sent = _through_guard(refuse_batches, [b'{"jsonrpc":', b'"2.0"}'])
    assert b"".join(seen) == b'{"jsonrpc":"2.0"}' and sent[0]["status"] == 200
    seen, sent = _through_guard(accept_every_body, [b"{}"])
    assert seen == [b"{}"] and sent[0]["status"] == 200
