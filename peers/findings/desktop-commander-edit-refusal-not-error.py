"""Desktop Commander 0.2.52: edit_block answers a refused edit as a successful tool call.

The server is started as in desktop-commander-dangling-symlink-write.py (node, its own
config file under a temporary HOME: allowedDirectories = [the root], telemetry off). An
edit_block whose old_string is not in the file, and one whose old_string occurs twice,
change nothing, and the answer's text says so, but the MCP result has no isError: a client
that checks isError (the protocol's way to report a failed tool call) is told the edit was
made. Exit 1: a refusal came back without isError; exit 0: both were flagged.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("EDITSPEC_PEER_CACHE") or Path.home() / ".cache/editspec/peers")
ENTRY = (
    Path(sys.argv[1])
    if len(sys.argv) > 1
    else (CACHE / "desktop-commander/node_modules/@wonderwhy-er/desktop-commander/dist/index.js")
)
base = Path(tempfile.mkdtemp())
root, home = base / "ws", base / "home"
for directory in (root, home / ".claude-server-commander"):
    directory.mkdir(parents=True)
config = {"allowedDirectories": [str(root)], "telemetryEnabled": False}
(home / ".claude-server-commander" / "config.json").write_text(json.dumps(config))
target = root / "a.py"
target.write_text("x = 1\ny = 1\nz = 0\n")

server = subprocess.Popen(
    ["node", str(ENTRY), "--no-onboarding"], cwd=root, env={**os.environ, "HOME": str(home)},
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
)  # fmt: skip


def call(ident, method, params):
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method,
                                   "params": params}) + "\n")  # fmt: skip
    server.stdin.flush()
    while True:
        message = json.loads(server.stdout.readline())
        if message.get("id") == ident:
            return message


call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "repro", "version": "0"}})  # fmt: skip
server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
server.stdin.flush()
unflagged = 0
control = call(2, "tools/call", {"name": "edit_block", "arguments": {
    "file_path": str(target), "old_string": "z = 0", "new_string": "z = 9"}})  # fmt: skip
print("positive control (one match):", json.dumps(control["result"])[:120])
for ident, old in ((3, "q = 7"), (4, "= 1")):  # not in the file; in it twice
    answer = call(ident, "tools/call", {"name": "edit_block", "arguments": {
        "file_path": str(target), "old_string": old, "new_string": "w = 0"}})["result"]  # fmt: skip
    text = " ".join(block.get("text", "") for block in answer.get("content", []))
    print(f"edit_block old_string={old!r}: isError={answer.get('isError', False)}: {text[:90]!r}")
    unflagged += not answer.get("isError", False)
server.stdin.close()
server.wait(timeout=20)
print("file after:", target.read_bytes())
sys.exit(1 if unflagged else 0)
