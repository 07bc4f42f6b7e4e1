"""langchain-community 0.4.2 WriteFileTool: a write that fails destroys the file it replaces.

write_file opens the target with open("w") (truncating it) and then writes; when the write
fails (a full disk, a quota; here a file-size limit) the tool answers "Error: ..." and the
file's old bytes are gone. Exit 1: the old content was lost; exit 0: it is intact.
"""

import importlib.metadata
import resource
import signal
import sys
import tempfile
from pathlib import Path

from langchain_community.agent_toolkits import FileManagementToolkit

print("langchain-community", importlib.metadata.version("langchain-community"))
root = Path(tempfile.mkdtemp())
target = root / "notes.txt"
original = b"keep me\n" * 1000
target.write_bytes(original)
tools = {t.name: t for t in FileManagementToolkit(root_dir=str(root)).get_tools()}
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failing write, not a killed process
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
try:
    answer = tools["write_file"].run({"file_path": "notes.txt", "text": "new text\n" * 1000})
finally:
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
print("write_file answered:", answer)
after = target.read_bytes()
print(f"file was {len(original)} bytes of the old text; after the failed write: {after[:20]!r}"
      f"... ({len(after)} bytes)")  # fmt: skip
sys.exit(1 if after != original else 0)
