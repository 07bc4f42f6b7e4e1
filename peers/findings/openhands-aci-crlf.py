"""openhands-aci 0.3.3 OHEditor: one str_replace in a CRLF file rewrites all its line endings.

The editor reads the file in text mode (universal newlines: "\\r\\n" becomes "\\n") and
writes the new text back the same way, so every line of a Windows file changes. Exit 1:
the CRLF endings are gone; exit 0: they are kept.
"""

import importlib.metadata
import sys
import tempfile
from pathlib import Path

from openhands_aci.editor import OHEditor

print("openhands-aci", importlib.metadata.version("openhands-aci"))
root = Path(tempfile.mkdtemp())
target = root / "win.txt"
target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
OHEditor(workspace_root=str(root))(
    command="str_replace", path=str(target), old_str="two", new_str="TWO"
)
after = target.read_bytes()
print("before: b'one\\r\\ntwo\\r\\nthree\\r\\n'  after:", after)
sys.exit(1 if b"\r\n" not in after else 0)
