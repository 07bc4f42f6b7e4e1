"""Gemini CLI core 0.61.0: `replace` on a file with mixed line endings rewrites every one.

The core's own tool registry is built as the CLI builds it (target directory = a temporary
root, approval mode YOLO, LLM correction off; HOME in a temporary directory) by a small
Node script, and its `replace` tool is run on mixed.txt = b"one\\r\\ntwo\\nthree\\r\\nfour\\n"
with old_string "two", new_string "2". Exit 1 when lines the edit did not touch changed
their line endings, 0 when only "two" changed.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("EDITSPEC_PEER_CACHE") or Path.home() / ".cache/editspec/peers")
CORE = (
    Path(sys.argv[1])
    if len(sys.argv) > 1
    else CACHE / "gemini-cli-core/node_modules/@google/gemini-cli-core/dist/index.js"
)
SCRIPT = """
for (const m of ['log', 'info', 'debug', 'warn', 'error']) console[m] = () => {};
const [coreEntry, root] = process.argv.slice(2);
const core = await import('file://' + coreEntry);
const config = new core.Config({ sessionId: 'repro', targetDir: root, cwd: root, debugMode: false,
  model: core.DEFAULT_GEMINI_MODEL, approvalMode: core.ApprovalMode.YOLO,
  usageStatisticsEnabled: false, telemetry: { enabled: false }, interactive: false });
await config.initialize();
await config.refreshAuth(core.AuthType.USE_GEMINI, 'offline', 'http://127.0.0.1:9');
const tool = config.getToolRegistry().getTool('replace');
const signal = new AbortController().signal;
const result = await tool.build({ file_path: 'mixed.txt', instruction: 'rename',
  old_string: 'two', new_string: '2' }).execute({ abortSignal: signal });
process.stdout.write(JSON.stringify(result.error ?? 'ok') + '\\n');
process.exit(0);
"""
base = Path(tempfile.mkdtemp())
root, home = base / "ws", base / "home"
root.mkdir()
home.mkdir()
(root / "mixed.txt").write_bytes(b"one\r\ntwo\nthree\r\nfour\n")
(base / "repro.mjs").write_text(SCRIPT)
done = subprocess.run(
    ["node", str(base / "repro.mjs"), str(CORE), str(root)],
    env={**os.environ, "HOME": str(home)}, capture_output=True, text=True, timeout=300,
)  # fmt: skip
after = (root / "mixed.txt").read_bytes()
print(f"replace answered {done.stdout.strip()}; mixed.txt is now {after!r}")
sys.exit(1 if after != b"one\r\n2\nthree\r\nfour\n" else 0)
