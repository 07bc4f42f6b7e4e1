"""Claude Code 2.1.332: an edit of a file changed behind its back is applied without a word
when the change kept the file's size and modification time.

Claude Code's own Read and Edit run through its agent loop (``claude -p``, stream-json)
with editspec's scripted model on loopback (no real model, no network; see
spec/peers/drivers/claude_code.py). a.txt holds "value = 1\\n"; it is read; another writer
changes it to "value = 2\\n" (same size) and restores its mtime; then Edit("value" ->
"VALUE") runs. For a change that moves the mtime the same Edit answers with a note that
the file "had been modified on disk since you last read it"; here the answer has no such
note. Exit 1 when the edit applied on the changed file without the note, 0 when it was
refused or noted.
"""

import os
import sys
import tempfile
from pathlib import Path

from editspec.spec.peers.drivers import claude_code
from editspec.spec.peers.drivers._common import ToolRefused


class Edit:
    def __init__(self, old, new):
        self.old_string, self.new_string = old, new
        self.replace_all, self.line, self.before, self.after = False, None, None, None


base = Path(tempfile.mkdtemp())
root = base / "ws"
root.mkdir()
target = root / "a.txt"
target.write_bytes(b"value = 1\n")
driver = claude_code.factory(root, base / "state")
try:
    session = driver.open_session("A")
    session.read("a.txt")
    before = target.stat()
    target.write_bytes(b"value = 2\n")  # another writer: same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    try:
        answer = session.edit("a.txt", [Edit("value", "VALUE")]).message
    except ToolRefused as refused:
        print(f"refused: {refused}")
        sys.exit(0)
finally:
    driver.close()
print(f"Edit answered {answer!r}; a.txt is now {target.read_bytes()!r}")
sys.exit(1 if "modified on disk" not in answer else 0)
