"""apply-patch-py 0.4.1: a patch that fails half way leaves its earlier files changed.

apply_patch(patch, workdir) applies the file sections one after another, each written in
place; when a later section fails (its context is not in the file) it raises RuntimeError,
and the sections before it stay applied. Exit 1: a failed patch changed a file; exit 0: it
changed nothing.
"""

import asyncio
import importlib.metadata
import sys
import tempfile
from pathlib import Path

from apply_patch_py import apply_patch

print("apply-patch-py", importlib.metadata.version("apply-patch-py"))
root = Path(tempfile.mkdtemp())
(root / "a.txt").write_bytes(b"A\n")
(root / "b.txt").write_bytes(b"b\n")
patch = """*** Begin Patch
*** Update File: a.txt
@@
-A
+AA
*** Update File: b.txt
@@
-this line is not in b.txt
+B
*** End Patch
"""
try:
    asyncio.run(apply_patch(patch, root))
    print("apply_patch succeeded")
except RuntimeError as exc:
    print("apply_patch failed:", str(exc).splitlines()[0])
after = (root / "a.txt").read_bytes()
print("a.txt before: b'A\\n', after the failed patch:", after)
sys.exit(1 if after != b"A\n" else 0)
