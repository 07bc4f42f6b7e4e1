"""Codex CLI 0.171.0 apply_patch: a patch whose second file fails has already changed the first.

a.txt is "A\n"; the patch updates a.txt (A -> AA), then updates missing.txt, which does not
exist. The patch fails (exit 1); exit 1 here when a.txt was changed anyway, 0 when it kept
its bytes.
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


(root / "a.txt").write_bytes(b"A\n")
code, output = apply_patch(
    "*** Begin Patch\n*** Update File: a.txt\n@@\n-A\n+AA\n"
    "*** Update File: missing.txt\n@@\n-x\n+y\n*** End Patch"
)
after = (root / "a.txt").read_bytes()
print(f"exit {code}: {output!r}; a.txt is now {after!r}")
sys.exit(1 if code != 0 and after != b"A\n" else 0)
