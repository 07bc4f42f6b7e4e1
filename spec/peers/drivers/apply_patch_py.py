"""``apply-patch-py`` (PyPI) behind the driver contract: a Codex-format patcher.

    editspec check --driver editspec.spec.peers.drivers.apply_patch_py:factory

The package (Python >= 3.13, so it runs in a child process with the interpreter of its
catalog entry: ``_child``) has one call, ``apply_patch(patch_text, workdir)``: it parses the
``*** Begin Patch`` format, applies each file section in turn (``Add File`` writes the file
with ``open("w")``, ``Update File`` reads it, matches each chunk exactly, then ignoring
trailing and surrounding whitespace and Unicode punctuation, then by a weighted similarity
score, and writes it back in place; ``Move to`` writes the new path and removes the old),
and answers the paths it added, modified and deleted. A path is resolved (symlinks
included) and refused when it is absolute or leaves ``workdir``. Every failure is a
``RuntimeError`` with a message. It keeps no read records, hashes, journal or snapshots,
has no read, write or edit of its own, and reports no hashes or diffs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from editspec.spec.peers.drivers._child import ChildError, shared_child
from editspec.spec.peers.drivers._common import (
    NotExpressible,
    Result,
    ToolRefused,
    code_for,
)

TOOL = "apply-patch-py"
PEER = "apply-patch-py"
# Its messages (apply_patch_py/applier.py and parser.py), first match wins.
RULES = (
    (r"Path must be within the workspace", "OUTSIDE_WORKSPACE"),
    (r"Ambiguous context", "AMBIGUOUS"),
    (r"Failed to find expected lines|Failed to find context", "NO_MATCH"),
    (r"No such file or directory|FileNotFoundError", "NOT_FOUND"),
    (
        r"Invalid patch|Empty patch|No files were modified|is not a valid hunk header",
        "PATCH_SYNTAX",
    ),
    (r"IsADirectoryError|Is a directory", "IS_A_DIRECTORY"),
    (r"UnicodeDecodeError|codec can't decode", "BINARY"),
    (r"\[Errno \d+\]", "IO_ERROR"),
)


class ApplyPatchPySession:
    def __init__(self, root: Path) -> None:
        self.root = root

    def apply_patch(self, patch: str, *, message_id: str | None = None) -> Result:
        if message_id is not None:
            raise NotExpressible(f"{TOOL} has no snapshots (message_id)")
        try:
            affected = shared_child(PEER, "apply_patch_py_adapter.py").call(
                "apply", patch=patch, workdir=str(self.root)
            )
        except ChildError as exc:
            raise ToolRefused(exc.message, code_for(exc.message, RULES)) from None
        what = f"a change reported by {TOOL}"
        changes = [
            Result(what, path=path, op=op)
            for key, op in (("modified", "update"), ("added", "add"), ("deleted", "delete"))
            for path in affected[key]
        ]
        return Result(f"the patch result of {TOOL}", changes=tuple(changes))

    def __getattr__(self, name: str) -> Any:
        if name in ("read", "write", "edit", "glob", "grep", "list_directory", "rewind"):

            def missing(*args: Any, **kwargs: Any) -> Any:
                raise NotExpressible(f"{TOOL} has no {name}")

            return missing
        raise AttributeError(name)


class ApplyPatchPyDriver:
    name = "apply-patch-py"
    capabilities = frozenset({"apply_patch", "confinement"})

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = Path(root)

    def open_session(self, session_id: str) -> ApplyPatchPySession:
        return ApplyPatchPySession(self.root)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        return None


def factory(root: Path, state_dir: Path) -> ApplyPatchPyDriver:
    """``apply_patch(patch_text, workdir=root)`` in the package's own interpreter."""
    return ApplyPatchPyDriver(root, state_dir)
