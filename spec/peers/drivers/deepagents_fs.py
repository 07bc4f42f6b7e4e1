"""``deepagents`` ``FilesystemBackend`` behind the driver contract.

    editspec check --driver editspec.spec.peers.drivers.deepagents_fs:virtual_factory
    editspec check --driver editspec.spec.peers.drivers.deepagents_fs:host_factory

The backend (``deepagents.backends.FilesystemBackend(root_dir, virtual_mode)``) has
``read(path, offset, limit)`` (lines, default 2000), ``write``, ``edit(path, old, new,
replace_all)`` (one replacement per call), ``glob``, ``grep`` (literal text, not a
regular expression) and ``ls``; it reports failures as an ``error`` string on the result,
never as an exception. ``virtual_mode=True`` (its default) anchors every path at
``root_dir`` and refuses ``..``, ``~`` and paths that resolve outside it; with
``virtual_mode=False`` absolute paths and ``..`` reach the whole host, as its docstring
says, so that driver does not declare ``confinement``. It keeps no read records, hashes,
journals or snapshots. It writes in place (``O_TRUNC``) through ``os``, in this process:
``python_fs``.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from editspec.spec.peers.drivers._common import (
    NotExpressible,
    Result,
    ToolRefused,
    as_text,
    code_for,
    refuse_arguments,
    refuse_edit_fields,
    relative,
)

TOOL = "deepagents FilesystemBackend"
# Its messages (deepagents/backends/filesystem.py and utils.py), first match wins.
RULES = (
    (r"Path traversal not allowed|outside root directory", "OUTSIDE_WORKSPACE"),
    (r"String not found in file|old_string ends with a newline", "NO_MATCH"),
    (r"appears \d+ times in file", "AMBIGUOUS"),
    (r"old_string cannot be empty", "INVALID_ARGUMENT"),
    (r"Is a directory|not_a_directory", "IS_A_DIRECTORY"),
    (r"not found|path_not_found|No such file", "NOT_FOUND"),
    (r"codec can't decode", "BINARY"),
    (r"exceeds file length", "INVALID_ARGUMENT"),
    (r"\[Errno \d+\]", "IO_ERROR"),
)


def _refused(message: str) -> ToolRefused:
    return ToolRefused(message, code_for(message, RULES))


def _call(method: Any, *args: Any, **kwargs: Any) -> Any:
    """The backend's call; its path refusals are raised as ``ValueError``, not returned."""
    try:
        return method(*args, **kwargs)
    except ValueError as exc:
        raise _refused(str(exc)) from exc


class DeepagentsSession:
    """One session: the backend has none, so every session sees the same backend."""

    def __init__(self, backend: Any, root: Path, virtual: bool) -> None:
        self.backend = backend
        self.root = root
        self.virtual = virtual

    def _given(self, path: str | None) -> str | None:
        """A contract path as the backend takes it: in virtual mode "/" is the root, so an
        absolute path inside the root is given as its virtual path (any other path as is)."""
        if path is None or not self.virtual or not path.startswith("/"):
            return path
        inside = relative(self.root, path)
        return path if inside == path else "/" + inside.removeprefix(".")

    def _report(self, path: str) -> str:
        """A path the backend reported, as the contract's root-relative path."""
        if self.virtual:
            return path.lstrip("/") or "."
        return relative(self.root, path)

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
        given = {"start_byte": start_byte, "max_bytes": max_bytes, "encoding": encoding}
        refuse_arguments(f"{TOOL}.read", given, {"start_byte": None, "max_bytes": None,
                                                 "encoding": "auto"})  # fmt: skip
        arguments: dict[str, int] = {}
        if start_line is not None:
            arguments["offset"] = start_line - 1
        if end_line is not None:
            arguments["limit"] = end_line - (start_line or 1) + 1
        result = _call(self.backend.read, self._given(path), **arguments)
        if result.error:
            raise _refused(result.error)
        data = result.file_data or {}
        fields: dict[str, Any] = {"path": path, "content": data.get("content", "")}
        if data.get("encoding") and data["encoding"] != "utf-8":
            fields["encoding"] = data["encoding"]
        if result.start_line is not None:
            fields["start_line"] = result.start_line
            fields["end_line"] = result.end_line
        if result.total_lines is not None:
            fields["total_lines"] = result.total_lines
            fields["truncated"] = result.next_offset is not None and (
                result.next_offset < result.total_lines
            )
        return Result(f"the read result of {TOOL}", **fields)

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Result:
        given = {"expected_sha256": expected_sha256, "message_id": message_id}
        refuse_arguments(f"{TOOL}.write", given, {"expected_sha256": None, "message_id": None})
        result = _call(self.backend.write, self._given(path), as_text(TOOL, content))
        if result.error:
            raise _refused(result.error)
        return Result(f"the write result of {TOOL}", path=path)

    def edit(
        self,
        path: str,
        edits: Sequence[Any],
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Result:
        given = {"expected_sha256": expected_sha256, "message_id": message_id}
        refuse_arguments(f"{TOOL}.edit", given, {"expected_sha256": None, "message_id": None})
        if len(edits) != 1:
            raise NotExpressible(f"{TOOL}.edit takes one replacement per call, not {len(edits)}")
        spec = edits[0]
        refuse_edit_fields(TOOL, [_without_replace_all(spec)])
        result = _call(
            self.backend.edit,
            self._given(path),
            spec.old_string,
            spec.new_string,
            replace_all=bool(spec.replace_all),
        )
        if result.error:
            raise _refused(result.error)
        replacement = Result(f"a replacement of {TOOL}", count=result.occurrences)
        return Result(f"the edit result of {TOOL}", path=path, replacements=(replacement,))

    def glob(
        self, pattern: str, *, path: str | None = None, max_results: int | None = None
    ) -> Result:
        refuse_arguments(f"{TOOL}.glob", {"max_results": max_results}, {"max_results": None})
        result = _call(self.backend.glob, pattern, path=self._given(path))
        if result.error:
            raise _refused(result.error)
        paths = tuple(self._report(item["path"]) for item in result.matches or ())
        return Result(f"the glob result of {TOOL}", paths=paths, truncated=result.truncated)

    def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        include: str | None = None,
        ignore_case: bool = False,
        max_results: int | None = None,
    ) -> Result:
        refuse_arguments(f"{TOOL}.grep", {"ignore_case": ignore_case}, {"ignore_case": False})
        result = _call(
            self.backend.grep, pattern, path=self._given(path), glob=include, max_count=max_results
        )
        if result.error:
            raise _refused(result.error)
        matches = tuple(
            Result(
                f"a grep match of {TOOL}",
                path=self._report(item["path"]),
                line=item["line"],
                text=item["text"],
            )
            for item in result.matches or ()
        )
        return Result(f"the grep result of {TOOL}", matches=matches, truncated=result.truncated)

    def list_directory(
        self,
        path: str = ".",
        *,
        depth: int = 1,
        include_hidden: bool = False,
        cursor: str | None = None,
        max_entries: int | None = None,
    ) -> Result:
        given = {"depth": depth, "cursor": cursor, "max_entries": max_entries}
        refuse_arguments(f"{TOOL}.ls", given, {"depth": 1, "cursor": None, "max_entries": None})
        result = _call(self.backend.ls, self._given(path) or ".")
        if result.error and result.entries is None:
            raise _refused(result.error)
        entries = []
        for item in result.entries or ():
            where = self._report(item["path"].rstrip("/"))
            fields: dict[str, Any] = {
                "name": where.rsplit("/", 1)[-1],
                "path": where,
                "type": "dir" if item.get("is_dir") else "file",
            }
            if "size" in item:
                fields["size"] = item["size"]
            if "modified_at" in item:
                fields["mtime"] = datetime.datetime.fromisoformat(item["modified_at"]).timestamp()
            entries.append(Result(f"a directory entry of {TOOL}", **fields))
        return Result(f"the listing of {TOOL}", entries=tuple(entries))

    def rewind(self, message_id: str) -> Any:
        raise NotExpressible(f"{TOOL} has no snapshots")

    def apply_patch(self, patch: str, *, message_id: str | None = None) -> Any:
        raise NotExpressible(f"{TOOL} has no patch operation")


class _NoReplaceAll:
    def __init__(self, spec: Any) -> None:
        self.line, self.before, self.after = spec.line, spec.before, spec.after
        self.replace_all = False


def _without_replace_all(spec: Any) -> _NoReplaceAll:
    """The edit's hints alone (replace_all is the backend's own argument)."""
    return _NoReplaceAll(spec)


_COMMON = frozenset({"read", "write", "edit", "glob", "grep", "list_directory", "python_fs"})


class DeepagentsDriver:
    """A ``FilesystemBackend`` over the clause's root."""

    def __init__(self, root: Path, state_dir: Path, *, virtual: bool) -> None:
        from deepagents.backends import FilesystemBackend

        self.root = root
        self.virtual = virtual
        self.name = f"deepagents-filesystem{'-virtual' if virtual else ''}"
        self.capabilities = _COMMON | {"confinement"} if virtual else _COMMON
        self.backend = FilesystemBackend(root_dir=root, virtual_mode=virtual)

    def open_session(self, session_id: str) -> DeepagentsSession:
        return DeepagentsSession(self.backend, self.root, self.virtual)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        return None


def virtual_factory(root: Path, state_dir: Path) -> DeepagentsDriver:
    """``FilesystemBackend(root_dir=root, virtual_mode=True)``."""
    return DeepagentsDriver(root, state_dir, virtual=True)


def host_factory(root: Path, state_dir: Path) -> DeepagentsDriver:
    """``FilesystemBackend(root_dir=root, virtual_mode=False)``: host paths, no confinement."""
    return DeepagentsDriver(root, state_dir, virtual=False)
