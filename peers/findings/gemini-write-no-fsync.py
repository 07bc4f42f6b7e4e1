"""Gemini CLI core 0.61.0: `write_file` answers success before its bytes are on disk.

The core's own tool registry is built as the CLI builds it (target directory = a temporary
root, approval mode YOLO, LLM correction off; HOME in a temporary directory) by a small
Node script, which overwrites notes.txt (10 800 bytes, replaced by 10 800 new ones) through
the tool's own API (build, then execute). The Node process runs under
`strace -f -y -e trace=%file,%desc`, so every call on the file's descriptors is logged with
the file's path. Exit 1 when the tool answered success and its process opened notes.txt
with O_TRUNC, wrote the new bytes into it and closed it with no fsync, fdatasync, sync or
syncfs anywhere; 0 once a sync of the file (or of everything) happens before the answer.
"""

import os
import re
import shutil
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
const tool = config.getToolRegistry().getTool('write_file');
const signal = new AbortController().signal;
const result = await tool.build({ file_path: 'notes.txt', content: 'NEW CONTENT\\n'.repeat(900) })
  .execute({ abortSignal: signal });
process.stdout.write('ANSWER ' + JSON.stringify(result.error ? result.error : result.llmContent)
  + '\\n');
process.exit(0);
"""
if shutil.which("strace") is None or shutil.which("node") is None:
    print("needs node and strace on PATH", file=sys.stderr)
    sys.exit(2)  # not 1: that would say the defect shows
base = Path(tempfile.mkdtemp())
root, home = base / "ws", base / "home"
root.mkdir()
home.mkdir()
target = root / "notes.txt"
NEW = b"NEW CONTENT\n" * 900
target.write_bytes(b"old content, synced long ago\n" * 372 + b"x" * 12)
os.sync()  # the old bytes are on disk before the write starts
(base / "repro.mjs").write_text(SCRIPT)
log = base / "strace.log"
done = subprocess.run(
    ["strace", "-f", "-qq", "-y", "-s", "0", "-e", "trace=%file,%desc,sync,syncfs", "-o", str(log),
     "node", str(base / "repro.mjs"), str(CORE), str(root)],
    env={**os.environ, "HOME": str(home)}, capture_output=True, text=True, timeout=300,
)  # fmt: skip
answer = next((line for line in done.stdout.splitlines() if line.startswith("ANSWER ")), "")
trace = log.read_text(errors="replace").splitlines()
name = re.escape(str(target.resolve()))
opened = [line for line in trace if re.search(rf'open\w*\(.*"{name}".*O_TRUNC', line)]
on_file = [line for line in trace if re.search(rf"\(\d+<{name}>", line) or line in opened]
written = [line for line in on_file if re.search(r"\bp?write\w*\(", line)]
synced = [line for line in on_file if re.search(r"\b(fsync|fdatasync|sync_file_range)\(", line)]
global_sync = [line for line in trace if re.search(r"\b(sync|syncfs)\(", line)]
print(f"write_file answered: {answer[len('ANSWER ') :][:120]}")
print(f"notes.txt now holds the new bytes (in the page cache): {target.read_bytes() == NEW}")
print("its calls on notes.txt, in order (strace -y):")
for line in on_file:
    print("   ", re.sub(r"^\d+\s+", "", line)[:140])
print(f"opened with O_TRUNC: {len(opened)}, writes: {len(written)}, "
      f"fsync/fdatasync of it: {len(synced)}, sync/syncfs: {len(global_sync)}")  # fmt: skip
defect = (
    "Successfully overwrote file" in answer
    and target.read_bytes() == NEW
    and opened
    and written
    and not synced
    and not global_sync
)
sys.exit(1 if defect else 0)
