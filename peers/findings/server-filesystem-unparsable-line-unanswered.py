"""server-filesystem 2026.8.31 (and 2025.3.28): a request line that is not JSON gets no answer.

The server is started over stdio on an empty root. After the handshake, a ping whose
params hold a raw control character in a string (U+0001, which JSON forbids unescaped)
is sent, then a valid ping. The MCP SDK's stdio transport (StdioServerTransport,
@modelcontextprotocol/sdk) hands the parse error to onerror and writes nothing, so the
first line is never answered: JSON-RPC 2.0 answers it with error -32700 and a null id.
The server goes on: the valid ping after it is answered. Exit 1: the line got no answer
within 10 s; exit 0: it was answered.

Usage: python server-filesystem-unparsable-line-unanswered.py [ENTRY]  (ENTRY: another
release's dist/index.js, e.g. 2025.3.28's)
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CACHE = Path(os.environ.get("EDITSPEC_PEER_CACHE") or Path.home() / ".cache/editspec/peers")
ENTRY = (
    Path(sys.argv[1])
    if len(sys.argv) > 1
    else CACHE
    / "server-filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
)
root = Path(tempfile.mkdtemp())
server = subprocess.Popen(
    ["node", str(ENTRY), str(root)], cwd=root,
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
)  # fmt: skip


def send(line: bytes) -> None:
    server.stdin.write(line + b"\n")
    server.stdin.flush()


def answer(seconds: float):
    """The next message from the server, or None after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([server.stdout], [], [], deadline - time.monotonic())
        if ready:
            line = server.stdout.readline()
            return json.loads(line) if line else None
    return None


send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "repro", "version": "0"}}}).encode())  # fmt: skip
print("initialize:", "answered" if answer(60) else "no answer")
send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
send(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
print("positive control, a valid ping:", answer(10))
send(b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"s":"a\x01b"}}')
unparsable = answer(10)
print("a ping with a raw control character in a string:", unparsable or "no answer in 10 s")
send(b'{"jsonrpc":"2.0","id":4,"method":"ping"}')
print("then a valid ping:", answer(10))
server.stdin.close()
server.wait(timeout=20)
sys.exit(1 if unparsable is None else 0)
