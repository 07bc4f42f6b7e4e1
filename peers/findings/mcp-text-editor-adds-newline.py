"""mcp-text-editor 1.2.2: create_text_file and patch_text_file_contents add a newline the
caller did not write.

The handlers are called as the server calls them (handlers.CreateTextFileHandler and
PatchTextFileContentsHandler, whose run_tool is what the MCP tools await). Contents
without a final newline are written with one ("abc" becomes "abc\\n"), so a file that must
not end with a newline cannot be written, and the hash the tool returns is of bytes the
caller never sent. Exit 1: a newline was added; exit 0: the bytes are as given.
"""

import asyncio
import importlib.metadata
import json
import sys
import tempfile
from pathlib import Path

from mcp_text_editor.handlers import CreateTextFileHandler, PatchTextFileContentsHandler

print("mcp-text-editor", importlib.metadata.version("mcp-text-editor"))
root = Path(tempfile.mkdtemp())
new = root / "token.txt"
answer = asyncio.run(CreateTextFileHandler().run_tool({"file_path": str(new), "contents": "abc"}))
print("create_text_file(contents='abc'):", json.loads(answer[0].text)["result"], new.read_bytes())
existing = root / "line.txt"
existing.write_text("old\n")
file_hash = __import__("hashlib").sha256(b"old\n").hexdigest()
patch = {"start": 1, "end": None, "contents": "new", "range_hash": file_hash}
asyncio.run(PatchTextFileContentsHandler().run_tool(
    {"file_path": str(existing), "file_hash": file_hash, "patches": [patch]}))  # fmt: skip
print("patch_text_file_contents(contents='new'):", existing.read_bytes())
sys.exit(1 if new.read_bytes() != b"abc" or existing.read_bytes() != b"new" else 0)
