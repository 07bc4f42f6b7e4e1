"""``openhands-aci`` ``OHEditor`` (OpenHands' file editor) behind the driver contract.

    editspec check --driver editspec.spec.peers.drivers.openhands_aci:factory

The editor (Python >= 3.12, so it runs in a child process with the interpreter of its
catalog entry: ``_child``) is one callable, ``OHEditor(workspace_root=...)(command=...,
path=...)``, with the commands of Anthropic's text-editor tool: ``view`` (a file as ``cat
-n`` output: a header line, then each line as its number in six columns, a tab and the
text; a ``view_range`` of lines; a directory two levels deep), ``create`` (a new file only:
an existing one is refused), ``str_replace`` (one exact, unique ``old_str``; when none
matches, it tries again with both strings stripped of surrounding whitespace), ``insert``
and ``undo_edit``. Paths must be absolute; ``workspace_root`` only serves to suggest one for
a relative path, so the tool has no confinement and the driver declares none (a relative
path of the contract is given as the absolute path under the root). Every refusal is a
``ToolError`` with a message. It reads and writes in text mode (``open(path, "w")``), in
place, and keeps no hashes or read records; its undo history is not per message, so
``rewind`` is not mapped. Its directory view has a fixed depth and no hidden entries, so
``list_directory`` is not declared.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from editspec.spec.peers.drivers._child import ChildError, shared_child
from editspec.spec.peers.drivers._common import (
    NotExpressible,
    Result,
    ToolRefused,
    as_text,
    code_for,
    inside,
    refuse_arguments,
    refuse_edit_fields,
    relative,
)

TOOL = "openhands-aci OHEditor"
PEER = "openhands-aci"
ADAPTER = "openhands_aci_adapter.py"
# Its messages (openhands_aci/editor/editor.py and exceptions.py), first match wins.
RULES = (
    (r"did not appear verbatim", "NO_MATCH"),
    (r"Multiple occurrences of old_str", "AMBIGUOUS"),
    (r"`new_str` and `old_str` must be different", "NO_CHANGE"),
    (r"File already exists at", "ALREADY_EXISTS"),
    (r"does not exist\. Please provide a valid path", "NOT_FOUND"),
    (r"is a directory and only the `view` command", "IS_A_DIRECTORY"),
    (r"File appears to be binary", "BINARY"),
    (r"File is too large", "TOO_LARGE"),
    (r"Invalid `view_range`|Invalid `path`|should be an absolute path", "INVALID_ARGUMENT"),
    (r"Is a directory", "IS_A_DIRECTORY"),
    (r"No such file or directory", "NOT_FOUND"),
    (r"codec can't decode", "BINARY"),
    (r"\[Errno \d+\]", "IO_ERROR"),
)
_VIEW_HEADER = re.compile(r"^(?:NOTE: [^\n]*\n)?Here's the result of running `cat -n` on [^\n]*:\n")
_NUMBERED = re.compile(r"^ *\d+\t(.*)$")
_IDS = itertools.count()


def view_content(output: str) -> str | None:
    """The text a ``cat -n`` view shows, its numbers taken off (None: not such a view).

    The editor numbers each piece of the text split at "\\n" and ends the view with "\\n",
    so the pieces joined with "\\n" are the text it read.
    """
    header = _VIEW_HEADER.match(output)
    if header is None or not output.endswith("\n"):
        return None
    pieces = []
    for line in output[header.end() : -1].split("\n"):
        numbered = _NUMBERED.match(line)
        if numbered is None:  # a truncation notice, or not a file view
            return None
        pieces.append(numbered.group(1))
    return "\n".join(pieces)


class OpenHandsSession:
    def __init__(self, driver: OpenHandsDriver) -> None:
        self.driver = driver

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
        refuse_arguments(f"{TOOL} view", {"start_byte": start_byte, "max_bytes": max_bytes,
                         "encoding": encoding}, {"start_byte": None, "max_bytes": None,
                         "encoding": "auto"})  # fmt: skip
        arguments: dict[str, Any] = {}
        if start_line is not None or end_line is not None:
            arguments["view_range"] = [start_line or 1, end_line or -1]
        answer = self.driver.command("view", path, **arguments)
        content = view_content(answer.get("output") or "")
        fields = {"path": self.driver.reported(answer, path)}
        if content is not None:
            fields["content"] = content
        return Result(f"the view result of {TOOL}", **fields)

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Result:
        refuse_arguments(f"{TOOL} create", {"expected_sha256": expected_sha256,
                         "message_id": message_id}, {"expected_sha256": None,
                         "message_id": None})  # fmt: skip
        answer = self.driver.command("create", path, file_text=as_text(TOOL, content))
        return Result(
            f"the create result of {TOOL}",
            path=self.driver.reported(answer, path),
            message=answer.get("output"),
        )

    def edit(
        self,
        path: str,
        edits: Sequence[Any],
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Result:
        refuse_arguments(f"{TOOL} str_replace", {"expected_sha256": expected_sha256,
                         "message_id": message_id}, {"expected_sha256": None,
                         "message_id": None})  # fmt: skip
        refuse_edit_fields(f"{TOOL} str_replace", edits)
        if len(edits) != 1:
            raise NotExpressible(f"{TOOL} str_replace takes one edit per call, not {len(edits)}")
        (spec,) = edits
        old, new = getattr(spec, "old_string", None), getattr(spec, "new_string", None)
        if isinstance(spec, dict):
            old, new = spec.get("old_string"), spec.get("new_string")
        answer = self.driver.command("str_replace", path, old_str=old, new_str=new)
        return Result(
            f"the str_replace result of {TOOL}",
            path=self.driver.reported(answer, path),
            message=answer.get("output"),
        )

    def __getattr__(self, name: str) -> Any:
        if name in ("apply_patch", "glob", "grep", "list_directory", "rewind"):

            def missing(*args: Any, **kwargs: Any) -> Any:
                raise NotExpressible(f"{TOOL} has no {name}")

            return missing
        raise AttributeError(name)


class OpenHandsDriver:
    name = "openhands-aci"
    capabilities = frozenset({"read", "write", "edit"})

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = Path(root)
        self.editor = f"editor-{next(_IDS)}"
        self.child = shared_child(PEER, ADAPTER)
        self.child.call("open", editor=self.editor, root=str(self.root))

    def command(self, command: str, path: str, **arguments: Any) -> dict[str, Any]:
        try:
            answer = self.child.call(
                "call", editor=self.editor, command=command, path=inside(self.root, path),
                **arguments,
            )  # fmt: skip
        except ChildError as exc:
            raise ToolRefused(exc.message, code_for(exc.message, RULES)) from None
        assert isinstance(answer, dict)
        return answer

    def reported(self, answer: dict[str, Any], given: str) -> str:
        """The path the tool's result names, relative to the root when inside it."""
        path = answer.get("path")
        return relative(self.root, path) if isinstance(path, str) else given

    def open_session(self, session_id: str) -> OpenHandsSession:
        return OpenHandsSession(self)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        if self.child.alive:
            self.child.call("close", editor=self.editor)


def factory(root: Path, state_dir: Path) -> OpenHandsDriver:
    """``OHEditor(workspace_root=root)`` in the package's own interpreter."""
    return OpenHandsDriver(root, state_dir)
