"""deepagents 0.7.32 FilesystemBackend (virtual_mode=True) refuses a file whose name holds "..".

"v1..2.txt" is inside the root and traverses nothing, yet every operation refuses it as
"Path traversal not allowed" (any ".." substring is refused), and read() raises the
ValueError instead of returning ReadResult(error=...). Exit 1: the inside file cannot be
read; exit 0: its content comes back.
"""

import importlib.metadata
import sys
import tempfile
from pathlib import Path

from deepagents.backends import FilesystemBackend

print("deepagents", importlib.metadata.version("deepagents"))
root = Path(tempfile.mkdtemp())
(root / "v1..2.txt").write_text("release notes\n")
backend = FilesystemBackend(root_dir=root, virtual_mode=True)
try:
    result = backend.read("/v1..2.txt")
except ValueError as exc:
    print("read('/v1..2.txt') raised ValueError:", exc)
    sys.exit(1)
content = (result.file_data or {}).get("content")
print("read('/v1..2.txt'):", repr(content), result.error)
sys.exit(0 if content == "release notes\n" else 1)
