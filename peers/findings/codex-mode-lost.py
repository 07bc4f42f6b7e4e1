"""Codex CLI 0.171.0 apply_patch: a moved file loses its mode bits (0600 becomes 0644).

secret.env is created with mode 0600 (umask 022); the patch updates it with '*** Move to:
private/secret.env'. Exit 1 when the moved file's mode is no longer 0600, 0 when it was kept.
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


os.umask(0o022)
secret = root / "secret.env"
secret.write_bytes(b"TOKEN=old\n")
secret.chmod(0o600)
code, output = apply_patch(
    "*** Begin Patch\n*** Update File: secret.env\n*** Move to: private/secret.env\n"
    "@@\n-TOKEN=old\n+TOKEN=new\n*** End Patch"
)
moved = root / "private" / "secret.env"
mode = moved.stat().st_mode & 0o777
print(f"exit {code}: {output!r}; private/secret.env is mode {mode:o}, {moved.read_bytes()!r}")
sys.exit(1 if code == 0 and mode != 0o600 else 0)
