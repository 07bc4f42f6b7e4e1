"""Codex CLI 0.171.0 apply_patch: '*** Add File:' on a file that exists overwrites it.

keep.txt holds "precious\n"; the patch adds keep.txt with "new\n". Exit 1 when the patch
succeeded and keep.txt lost its bytes, 0 when it was refused and the file kept them.
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


(root / "keep.txt").write_bytes(b"precious\n")
code, output = apply_patch("*** Begin Patch\n*** Add File: keep.txt\n+new\n*** End Patch")
after = (root / "keep.txt").read_bytes()
print(f"exit {code}: {output!r}; keep.txt is now {after!r}")
sys.exit(1 if after != b"precious\n" else 0)
