"""Gemini CLI core 0.61.0: two `replace` calls run in parallel on one file lose an update.

The core's own tool registry is built as the CLI builds it (target directory = a temporary
root, approval mode YOLO, LLM correction off; HOME in a temporary directory) by a small
Node script; ten `replace` calls, each changing a different line of lines.txt, are executed
concurrently through the tool's own API (build, then execute), and every one reports
success. Exit 1 when some of the ten changes are missing from the file, 0 when all landed.
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
const results = await Promise.all([...Array(10).keys()].map((i) =>
  tool.build({ file_path: 'lines.txt', instruction: 'change one line',
    old_string: `line ${i}\\n`, new_string: `LINE ${i}\\n` }).execute({ abortSignal: signal })));
process.stdout.write(results.filter((r) => !r.error).length + ' of 10 succeeded\\n');
process.exit(0);
"""
base = Path(tempfile.mkdtemp())
root, home = base / "ws", base / "home"
root.mkdir()
home.mkdir()
(root / "lines.txt").write_bytes(b"".join(b"line %d\n" % i for i in range(10)))
(base / "repro.mjs").write_text(SCRIPT)
done = subprocess.run(
    ["node", str(base / "repro.mjs"), str(CORE), str(root)],
    env={**os.environ, "HOME": str(home)}, capture_output=True, text=True, timeout=300,
)  # fmt: skip
after = (root / "lines.txt").read_bytes()
landed = sum(1 for i in range(10) if b"LINE %d\n" % i in after)
print(f"replace: {done.stdout.strip()}; {landed} of the 10 changes are in lines.txt: {after!r}")
sys.exit(1 if landed < 10 and "10 of 10" in done.stdout else 0)
