"""Codex CLI 0.171.0 apply_patch: context that matches in two places is applied at the first.

g.txt holds the same two lines twice; the patch's hunk (context "x", "-y", "+z") matches at
lines 1-2 and 3-4 and has no '@@' header to choose. Exit 1 when the patch succeeded (and
changed the first copy), 0 when it was refused as ambiguous with the file unchanged.
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


(root / "g.txt").write_bytes(b"x\ny\nx\ny\n")
code, output = apply_patch("*** Begin Patch\n*** Update File: g.txt\n@@\n x\n-y\n+z\n*** End Patch")
after = (root / "g.txt").read_bytes()
print(f"exit {code}: {output!r}; g.txt is now {after!r}")
sys.exit(1 if code == 0 else 0)
