"""``mcp-text-editor`` (PyPI) behind the driver contract, over MCP.

    editspec check --driver editspec.spec.peers.drivers.mcp_text_editor:factory

The server (Python >= 3.13: started with the interpreter of its catalog entry's venv, one
per driver, in the workspace root) edits text by line ranges with hashes for conflict
detection. ``get_text_file_contents(files=[{file_path, ranges: [{start, end}]}])`` answers
JSON keyed by path: per file its ``file_hash`` (sha256 of the decoded text) and per range
``content``, ``start``, ``end``, ``range_hash`` and ``total_lines``.
``create_text_file(file_path, contents)`` makes a new file (an existing one is refused);
``patch_text_file_contents(file_path, file_hash, patches=[{start, end, contents,
range_hash}])`` replaces lines when both hashes match what is on disk, and answers
``{"result": "ok" | "error", "reason": ...}`` as a normal (not ``isError``) result. Paths
must be absolute; it has no workspace root (no confinement).

How the driver uses it, as an agent does: a full read returns the file's hash and the
session keeps it; ``write`` of an existing file is one patch of the whole file (start 1,
end null) whose ``file_hash`` and ``range_hash`` are that hash, or the caller's
``expected_sha256`` (the hash of the whole file is also the hash of the range "all of it").
A session that has not read the file gives the empty hash, which the tool refuses for an
existing file. It has no string-replacement edit (``edit`` is not declared), no patch in
the Codex format, and keeps no snapshots.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from editspec.contract.drivers.mcp import McpDriver, load_map
from editspec.spec.peers.drivers._child import peer_python
from editspec.spec.peers.drivers._common import (
    NotExpressible,
    Result,
    ToolRefused,
    as_text,
    code_for,
    inside,
    refuse_arguments,
)

TOOL = "mcp-text-editor"
PEER = "mcp-text-editor"
SETTINGS = Path(__file__).resolve().parents[2] / "mcp_maps" / "mcp-text-editor.toml"
# Its messages (mcp_text_editor/text_editor.py, utils.py and handlers/), first match wins.
RULES = (
    (r"FileHash mismatch|Content range hash mismatch", "STALE"),
    (r"Cannot treat existing file as new|Empty hash provided for existing file", "NOT_READ"),
    (r"File already exists", "ALREADY_EXISTS"),
    (r"File not found|File does not exist|No such file", "NOT_FOUND"),
    (r"Is a directory|IsADirectoryError|path points to a directory", "IS_A_DIRECTORY"),
    (r"Path traversal not allowed", "OUTSIDE_WORKSPACE"),
    (r"null byte|Empty patch contents|File path cannot be empty", "INVALID_ARGUMENT"),
    (r"Failed to decode|codec can't decode|UnicodeDecodeError", "BINARY"),
    (r"\[Errno \d+\]", "IO_ERROR"),
)


def _key(path: str) -> str:
    """The file a hash belongs to: an agent holds the hash of the file it read, whichever
    name (a symlink inside the root) it reaches it by."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _text(result: Any) -> str:
    return "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")


class TextEditorSession:
    def __init__(self, driver: TextEditorDriver) -> None:
        self.driver = driver
        self.hashes: dict[str, str] = {}  # real path -> the file_hash of its last full read

    def read(
        self,
        path: str,
        *,
        start_line: int | None = None,
        end_line: int | None = None,
        start_byte: int | None = None,
        max_bytes: int | None = None,
        encoding: str = "auto",
    ) -> Result:
        refuse_arguments(f"{TOOL} get_text_file_contents", {"start_byte": start_byte,
                         "max_bytes": max_bytes, "encoding": encoding}, {"start_byte": None,
                         "max_bytes": None, "encoding": "auto"})  # fmt: skip
        target = inside(self.driver.root, path)
        whole = start_line is None and end_line is None
        ranges = [{"start": start_line or 1, "end": end_line}]
        answer = self.driver.json_call(
            "get_text_file_contents", files=[{"file_path": target, "ranges": ranges}]
        )
        entry = answer.get(target)
        if not isinstance(entry, dict) or not entry.get("ranges"):
            raise ToolRefused(f"no entry for {target} in its answer: {answer}", None)
        (found,) = entry["ranges"][:1]
        if whole and isinstance(entry.get("file_hash"), str):
            self.hashes[_key(target)] = entry["file_hash"]
        return Result(
            f"the read result of {TOOL} (get_text_file_contents)",
            path=path,
            content=found.get("content"),
            sha256=entry.get("file_hash"),
            start_line=found.get("start"),
            end_line=found.get("end"),
            total_lines=found.get("total_lines"),
        )

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Result:
        refuse_arguments(f"{TOOL} write", {"message_id": message_id}, {"message_id": None})
        text = as_text(TOOL, content)
        target = inside(self.driver.root, path)
        known = expected_sha256 if expected_sha256 is not None else self.hashes.get(_key(target))
        answer: dict[str, Any] = {}
        if known is None:  # as an agent that has no hash for it: a new file
            tool = "create_text_file"
            try:
                answer = self.driver.json_call(tool, file_path=target, contents=text)
            except ToolRefused as exc:
                if getattr(exc, "code", None) != "ALREADY_EXISTS":
                    raise
        if not answer:  # a file it has a hash for, or one that exists: the empty hash
            tool = "patch_text_file_contents"
            whole = {"start": 1, "end": None, "contents": text, "range_hash": known or ""}
            answer = self.driver.json_call(
                tool, file_path=target, file_hash=known or "", patches=[whole]
            )
        if answer.get("result") != "ok":
            reason = str(answer.get("reason"))
            raise ToolRefused(reason, code_for(reason, RULES))
        if isinstance(answer.get("file_hash"), str):
            self.hashes[_key(target)] = answer["file_hash"]
        return Result(
            f"the write result of {TOOL} ({tool})",
            path=path,
            new_sha256=answer.get("file_hash"),
        )

    def __getattr__(self, name: str) -> Any:
        if name in ("edit", "apply_patch", "glob", "grep", "list_directory", "rewind"):

            def missing(*args: Any, **kwargs: Any) -> Any:
                raise NotExpressible(f"{TOOL} has no {name}")

            return missing
        raise AttributeError(name)


class TextEditorDriver:
    name = "mcp-text-editor"
    capabilities = frozenset({"read", "write", "read_before_write", "stale_detection", "cas"})

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = Path(root)
        command = [str(peer_python(PEER)), "-c", "from mcp_text_editor import run; run()"]
        self.server = McpDriver(command, load_map(SETTINGS), self.root, Path(state_dir))
        self._lock = threading.Lock()

    def json_call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The tool's JSON answer; a refusal (``isError``) raised with its code."""
        result = self.server.call_tool(tool, arguments)
        text = _text(result)
        if result.is_error:
            raise ToolRefused(text, code_for(text, RULES))
        try:
            answer = json.loads(text)
        except ValueError:
            raise ToolRefused(f"an answer that is not JSON: {text[:300]}", None) from None
        if not isinstance(answer, dict):
            raise ToolRefused(f"an answer that is not an object: {text[:300]}", None)
        return answer

    def open_session(self, session_id: str) -> TextEditorSession:
        return TextEditorSession(self)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        self.server.close()


def factory(root: Path, state_dir: Path) -> TextEditorDriver:
    """The mcp-text-editor server in its own venv, reached over MCP."""
    return TextEditorDriver(root, state_dir)
