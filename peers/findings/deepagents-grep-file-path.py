"""deepagents 0.7.32 FilesystemBackend.grep(path=<a file>) searches the file's whole directory.

Run with deepagents 0.7.32 importable and no ripgrep (`rg`) on PATH (the backend then uses
its Python search). Exit 1: matches from other files came back; exit 0: only the named file.
"""

import importlib.metadata
import os
import shutil
import sys
import tempfile
from pathlib import Path

from deepagents.backends import FilesystemBackend

print("deepagents", importlib.metadata.version("deepagents"))
if shutil.which("rg"):
    # the Python fallback is the code under test; hide ripgrep from the backend
    os.environ["PATH"] = os.pathsep.join(
        d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "rg").exists()
    )
root = Path(tempfile.mkdtemp())
(root / "a.py").write_text("needle = 1\n")
(root / "b.py").write_text("needle = 2\n")
backend = FilesystemBackend(root_dir=root, virtual_mode=True)
result = backend.grep("needle", path="/a.py")
paths = sorted({match["path"] for match in result.matches or ()})
print("grep('needle', path='/a.py') matched in:", paths)
sys.exit(1 if paths != ["/a.py"] else 0)
