"""openhands-aci 0.3.3 OHEditor: viewing a binary file crashes with NameError.

OHEditor.validate_file asks binaryornot.is_binary(); for bytes whose encoding detection
answers None, binaryornot 0.4.4 falls into its Python 2 branch, unicode(...), and the
NameError comes out of the editor instead of its "File appears to be binary" ToolError.
Exit 1: an exception other than ToolError escaped; exit 0: the editor refused cleanly.
"""

import importlib.metadata
import sys
import tempfile
from pathlib import Path

from openhands_aci.editor import OHEditor
from openhands_aci.editor.exceptions import ToolError

print("openhands-aci", importlib.metadata.version("openhands-aci"))
print("binaryornot", importlib.metadata.version("binaryornot"))
root = Path(tempfile.mkdtemp())
image = root / "image.png"
image.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
editor = OHEditor(workspace_root=str(root))
for command, extra in (("view", {}), ("str_replace", {"old_str": "IHDR", "new_str": "X"})):
    try:
        editor(command=command, path=str(image), **extra)
        print(command, "succeeded")
    except ToolError as exc:
        print(command, "refused (ToolError):", exc)
    except Exception as exc:
        print(command, f"crashed: {type(exc).__name__}: {exc}")
        sys.exit(1)
sys.exit(0)
