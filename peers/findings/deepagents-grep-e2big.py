"""deepagents 0.7.32 FilesystemBackend.grep raises OSError for a long pattern (ripgrep's argv).

With ripgrep (`rg`) on PATH, the pattern goes to rg as a command-line argument; a 1 MB
pattern exceeds the kernel's argument limit and the OSError (E2BIG) escapes grep, whose
docstring promises a "non-throwing" search that reports failures in GrepResult.error.
Exit 1: grep raised; exit 0: it returned a result; exit 2: no rg on PATH (cannot show).
"""

import importlib.metadata
import shutil
import sys
import tempfile
from pathlib import Path

from deepagents.backends import FilesystemBackend

print("deepagents", importlib.metadata.version("deepagents"))
if shutil.which("rg") is None:
    print("ripgrep (rg) is not on PATH: the code under test does not run")
    sys.exit(2)
root = Path(tempfile.mkdtemp())
(root / "a.txt").write_text("needle\n")
backend = FilesystemBackend(root_dir=root, virtual_mode=True)
print("positive control:", backend.grep("needle").matches)
try:
    result = backend.grep("x" * 1_000_000)
except OSError as exc:
    print("grep(a 1 MB pattern) raised", repr(exc))
    sys.exit(1)
print("grep(a 1 MB pattern) returned error:", result.error)
sys.exit(0)
