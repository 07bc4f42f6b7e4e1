"""langchain-community 0.4.2 file tools raise on a path with a NUL byte or a symlink loop.

Every failure of the file-management tools is answered as an "Error: ..." string; a path
with an embedded NUL byte (ValueError) or through a symlink loop (RuntimeError, Python <=
3.12) escapes get_validated_relative_path and the tool raises instead.
Exit 1: a tool raised; exit 0: both were answered with "Error: ...".
"""

import importlib.metadata
import os
import sys
import tempfile
from pathlib import Path

from langchain_community.agent_toolkits import FileManagementToolkit

print("langchain-community", importlib.metadata.version("langchain-community"))
root = Path(tempfile.mkdtemp())
(root / "a.txt").write_text("x\n")
os.symlink("loop2", root / "loop1")
os.symlink("loop1", root / "loop2")
read = {t.name: t for t in FileManagementToolkit(root_dir=str(root)).get_tools()}["read_file"]
print("positive control:", repr(read.run({"file_path": "a.txt"})))
raised = False
for path in ("a\x00.txt", "loop1"):
    try:
        print(f"read_file({path!r}) answered:", repr(read.run({"file_path": path})))
    except Exception as exc:  # which exception escapes is the finding
        print(f"read_file({path!r}) raised {type(exc).__name__}: {exc}")
        raised = True
sys.exit(1 if raised else 0)
