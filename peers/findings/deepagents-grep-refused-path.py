"""deepagents 0.7.32 FilesystemBackend.grep answers "no matches" for a path it refuses.

In virtual mode "sub/.." (inside the root) is refused as traversal; grep turns the refusal
into GrepResult(matches=[]) with no error, so the caller is told the text is absent.
Exit 1: an empty, error-free result; exit 0: an error, or the inside match.
"""

import importlib.metadata
import sys
import tempfile
from pathlib import Path

from deepagents.backends import FilesystemBackend

print("deepagents", importlib.metadata.version("deepagents"))
root = Path(tempfile.mkdtemp())
(root / "inside.txt").write_text("needle\n")
(root / "sub").mkdir()
backend = FilesystemBackend(root_dir=root, virtual_mode=True)
print("positive control grep('needle', path='/'):", backend.grep("needle", path="/").matches)
result = backend.grep("needle", path="sub/..")
print("grep('needle', path='sub/..'):", result)
sys.exit(1 if not result.matches and not result.error else 0)
