"""Claude Code 2.1.332: an Edit of a file with mixed line endings rewrites every one.

Claude Code's own Read and Edit run through its agent loop (``claude -p``, stream-json)
with editspec's scripted model on loopback (no real model, no network; see
spec/peers/drivers/claude_code.py). mixed.txt is b"one\\r\\ntwo\\nthree\\r\\nfour\\n"; it is
read, then Edit("two" -> "2") runs. Exit 1 when lines the edit did not touch changed their
line endings, 0 when only "two" changed.
"""

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
target = root / "mixed.txt"
target.write_bytes(b"one\r\ntwo\nthree\r\nfour\n")
driver = claude_code.factory(root, base / "state")
try:
    session = driver.open_session("A")
    session.read("mixed.txt")
    try:
        answer = session.edit("mixed.txt", [Edit("two", "2")]).message
    except ToolRefused as refused:
        print(f"refused: {refused}")
        sys.exit(0)
finally:
    driver.close()
after = target.read_bytes()
print(f"Edit answered {answer!r}; mixed.txt is now {after!r}")
sys.exit(1 if after != b"one\r\n2\nthree\r\nfour\n" else 0)
