"""deepagents 0.7.32 FilesystemBackend.edit: an edit whose write fails leaves the file cut short.

The edit truncates the file in place (O_TRUNC) before writing the new text; when the write
fails (here: a file-size limit, as a full disk would), the error is reported and the old
content is gone. Exit 1: the file lost its bytes; exit 0: the file is unchanged.
"""

import importlib.metadata
import resource
import signal
import sys
import tempfile
from pathlib import Path

from deepagents.backends import FilesystemBackend

print("deepagents", importlib.metadata.version("deepagents"))
root = Path(tempfile.mkdtemp())
target = root / "big.txt"
original = b"x" * 9000 + b"\nold\n"
target.write_bytes(original)
backend = FilesystemBackend(root_dir=root, virtual_mode=True)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failing write, not a killed process
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
try:
    result = backend.edit("/big.txt", "old", "new")
finally:
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
print("edit result:", result)
after = target.read_bytes()
print(f"file was {len(original)} bytes, is {len(after)} bytes after the failed edit")
sys.exit(1 if after != original else 0)
