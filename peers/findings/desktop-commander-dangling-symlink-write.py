"""Desktop Commander 0.2.52: write_file through a dangling symlink creates a file outside
its allowed directories.

The server is started with node (its dist/index.js: argv[1], else the editspec peer cache's
desktop-commander install) and a config file of its own under a temporary HOME:
allowedDirectories = [the root], telemetryEnabled = false. Inside the root, config.txt is
a symlink to <outside>/planted.txt, which does not exist yet. write_file("config.txt")
must be refused; exit 1 when outside/planted.txt was created, 0 when it was not.
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
root, outside, home = base / "ws", base / "outside", base / "home"
for directory in (root, outside, home / ".claude-server-commander"):
    directory.mkdir(parents=True)
config = {"allowedDirectories": [str(root)], "telemetryEnabled": False}
(home / ".claude-server-commander" / "config.json").write_text(json.dumps(config))
(root / "inside.txt").write_text("kept\n")
os.symlink(outside / "planted.txt", root / "config.txt")  # dangling: the target is missing

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
version = call(2, "tools/call", {"name": "get_config", "arguments": {}})
print("server config:", json.dumps(version.get("result", {}))[:200])
control = call(3, "tools/call", {"name": "write_file", "arguments": {
    "path": str(root / "new.txt"), "content": "inside\n", "mode": "rewrite"}})  # fmt: skip
print("positive control write_file(new.txt):", json.dumps(control["result"])[:160])
answer = call(4, "tools/call", {"name": "write_file", "arguments": {
    "path": str(root / "config.txt"), "content": "planted\n", "mode": "rewrite"}})  # fmt: skip
print("write_file(config.txt -> outside/planted.txt):", json.dumps(answer.get("result"))[:200])
server.stdin.close()
server.wait(timeout=20)
planted = outside / "planted.txt"
print(
    "outside/planted.txt exists:",
    planted.exists(),
    planted.read_bytes() if planted.exists() else b"",
)
sys.exit(1 if planted.exists() else 0)
