"""deepagents 0.7.32 FilesystemBackend.read of a whitespace-only file returns a reminder text.

The backend's read returns "raw (unformatted) content" and leaves the empty-file reminder to
the middleware (utils.slice_read_response); FilesystemBackend.read puts the reminder in place
of the file's content itself. Exit 1: the content is not the file's; exit 0: it is.
"""

import importlib.metadata
import sys
import tempfile
from pathlib import Path

from deepagents.backends import FilesystemBackend

print("deepagents", importlib.metadata.version("deepagents"))
root = Path(tempfile.mkdtemp())
(root / "blank.txt").write_bytes(b"\n\n  \n")
backend = FilesystemBackend(root_dir=root, virtual_mode=True)
result = backend.read("/blank.txt")
content = (result.file_data or {}).get("content")
print("read('/blank.txt') content:", repr(content))
sys.exit(1 if content != "\n\n  \n" else 0)
