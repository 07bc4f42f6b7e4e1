"""Desktop Commander 0.2.52: read_file drops the file's final newline (and its CRLFs), so
writing back what was read changes the file.

The server is started as in desktop-commander-dangling-symlink-write.py (node, its own
config file under a temporary HOME: allowedDirectories = [the root], telemetry off).
read_file's text after its "[Reading N lines ...]" header and blank line is compared with
the file's bytes; then write_file writes that text back. Exit 1: the read text differs
from the file or the round trip changed it; exit 0: both are exact.
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
original = b"first\r\nsecond\r\nlast\n"
target = root / "notes.txt"
target.write_bytes(original)

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
answer = call(2, "tools/call", {"name": "read_file", "arguments": {"path": str(target)}})
text = answer["result"]["content"][0]["text"]
header, _, content = text.partition("\n\n")
print("read_file header:", header)
print("file bytes:   ", original)
print("read content: ", content.encode())
call(3, "tools/call", {"name": "write_file", "arguments": {
    "path": str(target), "content": content, "mode": "rewrite"}})  # fmt: skip
server.stdin.close()
server.wait(timeout=20)
after = target.read_bytes()
print("after writing back what was read:", after)
sys.exit(1 if content.encode() != original or after != original else 0)
