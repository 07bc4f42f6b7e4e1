"""apply-patch-py 0.4.1: `*** Move to:` onto an existing file overwrites it without a word.

An Update File with Move to writes the patched text to the destination with open("w")
whether or not a file is there, then removes the source: the destination's own content is
lost and the answer reports success. Exit 1: the destination was overwritten; exit 0: the
move was refused and both files are intact.
"""

import asyncio
import importlib.metadata
import sys
import tempfile
from pathlib import Path

from apply_patch_py import apply_patch

print("apply-patch-py", importlib.metadata.version("apply-patch-py"))
root = Path(tempfile.mkdtemp())
(root / "src.txt").write_bytes(b"source\n")
(root / "dst.txt").write_bytes(b"destination: keep me\n")
patch = """*** Begin Patch
*** Update File: src.txt
*** Move to: dst.txt
@@
-source
+moved
*** End Patch
"""
try:
    print("answer:", asyncio.run(apply_patch(patch, root)))
except Exception as exc:  # the fix: the move is refused
    print("refused:", exc)
tree = {path.name: path.read_bytes() for path in sorted(root.iterdir())}
print("tree after the patch:", tree)
sys.exit(1 if tree.get("dst.txt") != b"destination: keep me\n" else 0)
