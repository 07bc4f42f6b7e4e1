"""apply-patch-py 0.4.1: a moved file loses its permission bits (a 0600 file becomes 0644).

An Update File with Move to writes the new path with a fresh open("w") (the process
umask's mode) and removes the old file, so a private file becomes world-readable at its
new path. Exit 1: the mode changed; exit 0: it is kept.
"""

import asyncio
import importlib.metadata
import os
import stat
import sys
import tempfile
from pathlib import Path

from apply_patch_py import apply_patch

print("apply-patch-py", importlib.metadata.version("apply-patch-py"))
os.umask(0o022)  # the common default
root = Path(tempfile.mkdtemp())
(root / "secret.env").write_bytes(b"TOKEN=abc\nMODE=dev\n")
os.chmod(root / "secret.env", 0o600)
patch = """*** Begin Patch
*** Update File: secret.env
*** Move to: private/secret.env
@@
 TOKEN=abc
-MODE=dev
+MODE=prod
*** End Patch
"""
asyncio.run(apply_patch(patch, root))
mode = stat.S_IMODE((root / "private" / "secret.env").stat().st_mode)
print(f"secret.env was 0o600; private/secret.env after the move is {oct(mode)}")
sys.exit(1 if mode != 0o600 else 0)
