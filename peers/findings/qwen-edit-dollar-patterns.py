"""Qwen Code core 0.0.14: `edit` treats `$&`, `$$` and the other replacement patterns of
JavaScript's String.replace in new_string as patterns, so the file gets other text than sent.

The core's own tool registry is built as its CLI builds it (target directory = a temporary
root, approval mode YOLO; HOME in a temporary directory) by a small Node script, and its
`edit` tool replaces "PLACEHOLDER" in price.txt with the literal text `cost: $& and $$5`
through the tool's own API (build, then execute). Exit 1 when the edit answered success and
the file holds other text than the one sent (`$&` became the matched text, `$$` one `$`),
0 when it holds exactly the new_string.
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
    else CACHE / "qwen-code-core/node_modules/@qwen-code/qwen-code-core/dist/index.js"
)
SCRIPT = """
for (const m of ['log', 'info', 'debug', 'warn', 'error']) console[m] = () => {};
const [coreEntry, root] = process.argv.slice(2);
const core = await import('file://' + coreEntry);
const config = new core.Config({ sessionId: 'repro', targetDir: root, cwd: root, debugMode: false,
  model: core.DEFAULT_GEMINI_MODEL, approvalMode: core.ApprovalMode.YOLO,
  usageStatisticsEnabled: false, telemetry: { enabled: false }, interactive: false });
await config.initialize();
const tool = config.getToolRegistry().getTool('edit');
const result = await tool.build({ file_path: root + '/price.txt', old_string: 'PLACEHOLDER',
  new_string: 'cost: $& and $$5' }).execute(new AbortController().signal);
process.stdout.write(JSON.stringify(result.error ? result.error : result.llmContent) + '\\n');
process.exit(0);
"""
base = Path(tempfile.mkdtemp())
root, home = base / "ws", base / "home"
root.mkdir()
home.mkdir()
target = root / "price.txt"
target.write_bytes(b"price = PLACEHOLDER\n")
(base / "repro.mjs").write_text(SCRIPT)
done = subprocess.run(
    ["node", str(base / "repro.mjs"), str(CORE), str(root)],
    env={**os.environ, "HOME": str(home)}, capture_output=True, text=True, timeout=300,
)  # fmt: skip
after = target.read_bytes()
print(f"edit answered {done.stdout.strip()[:100]}; price.txt is now {after!r}")
sent = b"price = cost: $& and $$5\n"
sys.exit(1 if "Successfully modified" in done.stdout and after != sent else 0)
