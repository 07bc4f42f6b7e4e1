"""apply-patch-py 0.4.1: updating one line of a CRLF file rewrites every line ending as LF.

The applier reads the file in text mode (universal newlines: "\\r\\n" becomes "\\n") and
writes it back joined with "\\n", so every untouched line changes. Exit 1: the file's CRLF
endings are gone; exit 0: they are kept.
"""

import asyncio
import importlib.metadata
import sys
import tempfile
from pathlib import Path

from apply_patch_py import apply_patch

print("apply-patch-py", importlib.metadata.version("apply-patch-py"))
root = Path(tempfile.mkdtemp())
(root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
patch = "*** Begin Patch\n*** Update File: win.txt\n@@\n one\n-two\n+TWO\n three\n*** End Patch\n"
asyncio.run(apply_patch(patch, root))
after = (root / "win.txt").read_bytes()
print("before: b'one\\r\\ntwo\\r\\nthree\\r\\n'  after:", after)
sys.exit(1 if b"\r\n" not in after else 0)
