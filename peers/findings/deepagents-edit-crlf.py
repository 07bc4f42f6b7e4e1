"""deepagents 0.7.32 FilesystemBackend.edit rewrites every CRLF line ending of the file as LF.

Exit 1: the lines the edit did not touch lost their CR; exit 0: only "b" became "B".
"""

import importlib.metadata
import sys
import tempfile
from pathlib import Path

from deepagents.backends import FilesystemBackend

print("deepagents", importlib.metadata.version("deepagents"))
root = Path(tempfile.mkdtemp())
target = root / "crlf.txt"
target.write_bytes(b"a\r\nb\r\nc\r\n")
backend = FilesystemBackend(root_dir=root, virtual_mode=True)
print(backend.edit("/crlf.txt", "b", "B"))
after = target.read_bytes()
print("on disk after replacing 'b' with 'B':", after)
sys.exit(1 if after != b"a\r\nB\r\nc\r\n" else 0)
