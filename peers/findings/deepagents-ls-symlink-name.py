"""deepagents 0.7.32 FilesystemBackend (virtual_mode=True).ls names a symlink by its target.

A directory holding a.txt and link -> a.txt lists as "/a.txt" twice and no "/link": the
listing resolves every entry before turning it into a virtual path, so the link's own
name is lost (and glob reports the target's path for a match through the link, too).
Exit 1: "/link" is missing from the listing; exit 0: it is listed.
"""

import importlib.metadata
import os
import sys
import tempfile
from pathlib import Path

from deepagents.backends import FilesystemBackend

print("deepagents", importlib.metadata.version("deepagents"))
root = Path(tempfile.mkdtemp())
(root / "a.txt").write_text("x\n")
os.symlink("a.txt", root / "link")
backend = FilesystemBackend(root_dir=root, virtual_mode=True)
paths = [entry["path"] for entry in backend.ls("/").entries or ()]
print("ls('/') paths:", paths)
print("glob('link') paths:", [entry["path"] for entry in backend.glob("link").matches or ()])
sys.exit(1 if "/link" not in paths else 0)
