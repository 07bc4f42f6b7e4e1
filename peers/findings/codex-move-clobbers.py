"""Codex CLI 0.171.0 apply_patch: '*** Move to:' onto a file that exists overwrites it.

dst.txt holds "destination: keep me\n"; the patch updates src.txt and moves it to dst.txt.
Exit 1 when the patch succeeded and dst.txt lost its bytes, 0 when it was refused and both
files kept theirs.
"""

import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("EDITSPEC_PEER_CACHE") or Path.home() / ".cache/editspec/peers")
TRIPLE = {"x86_64": "x86_64-unknown-linux-musl", "aarch64": "aarch64-unknown-linux-musl"}
PACKAGE = {"x86_64": "codex-linux-x64", "aarch64": "codex-linux-arm64"}
CODEX = (
    Path(sys.argv[1])
    if len(sys.argv) > 1
    else CACHE
    / "codex-apply-patch/node_modules/@openai"
    / PACKAGE[platform.machine()]
    / "vendor"
    / TRIPLE[platform.machine()]
    / "bin/codex"
)
root = Path(tempfile.mkdtemp())


def apply_patch(patch):
    """Codex's executable started as apply_patch (its arg0 dispatch), in the root."""
    done = subprocess.run(["apply_patch", patch], executable=CODEX, cwd=root,
                          capture_output=True, text=True)  # fmt: skip
    return done.returncode, (done.stdout + done.stderr).strip()


(root / "src.txt").write_bytes(b"source\n")
(root / "dst.txt").write_bytes(b"destination: keep me\n")
code, output = apply_patch(
    "*** Begin Patch\n*** Update File: src.txt\n*** Move to: dst.txt\n@@\n-source\n+moved\n"
    "*** End Patch"
)
tree = {path.name: path.read_bytes() for path in sorted(root.iterdir())}
print(f"exit {code}: {output!r}; the root now holds {tree!r}")
sys.exit(1 if tree.get("dst.txt") != b"destination: keep me\n" else 0)
