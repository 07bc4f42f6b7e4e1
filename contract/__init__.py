"""The conformance contract: what the suite knows about an implementation (DESIGN §2).

This is the project's most stable surface. ``Driver`` and ``Session`` are structural
(``typing.Protocol``): an implementation needs no base class, only these methods and
results with these attribute names. Change any of it only with a bump of
``CONTRACT_VERSION``.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

CONTRACT_VERSION = "1.4"  # 1.1: open_remote_session (remote_acp), edit_notebook (notebook),
# and the journal_layout capability; 1.2: grep's deadline= and cancel= (grep_cancel);
# 1.3: Driver.seal_journal of a driver that declares journal_layout (JournalDriver), and
# WriteResult.warnings (DESIGN §2); 1.4: Session.delete and Session.manifest (delete),
# Session.move (move)

# -- capabilities and profiles ---------------------------------------------------

CAPABILITY_DESCRIPTIONS: Mapping[str, str] = {
    "read": "Session.read: whole files, line and byte ranges, encodings, binary detection",
    "write": "Session.write: create and replace whole files atomically",
    "edit": "Session.edit: string replacements with the matching cascade",
    "confinement": "paths are confined to the workspace root, symlinks included",
    "read_before_write": "replacing a file needs a full read in the same session (NOT_READ)",
    "stale_detection": "a file changed since the session read it is refused (STALE)",
    "cas": "expected_sha256 stands in for a read (compare-and-swap)",
    "apply_patch": "Session.apply_patch: multi-file patches, all or nothing",
    "recovery": "Driver.recover: journaled transactions survive crashes",
    "snapshots": "message_id snapshots and Session.rewind",
    "glob": "Session.glob",
    "grep": "Session.grep",
    "grep_cancel": "Session.grep also takes deadline= (a time.monotonic() value) and cancel= "
    "(a threading.Event); a passed deadline or a set token ends the search with CANCELLED",
    "list_directory": "Session.list_directory",
    "python_fs": "a Python implementation in this process: faults are injected at the os level",
    "process": "a separate process the suite may kill and restart",
    "journal_layout": "journals live where DESIGN puts them: "
    "<state_dir>/journal/<sha256(canonical root)[:16]>/<txn-id>.json, and "
    "Driver.seal_journal(data) recomputes a crafted journal's checksum (JournalDriver)",
    "remote_acp": "files reached only through an ACP client's read/write text methods",
    "notebook": "cell-level edits of .ipynb files",
    "delete": "Session.delete(path, kind=, expected_sha256=, manifest_sha256=, message_id=) "
    "and Session.manifest(path): a stated kind, a fresh read or manifest, restorable",
    "move": "Session.move(source, destination, expected_sha256=, manifest_sha256=, "
    "message_id=): never over an existing path; atomic, or reported atomic=False",
}
CAPABILITIES: frozenset[str] = frozenset(CAPABILITY_DESCRIPTIONS)

# Clause id prefixes, in catalog order (DESIGN §4).
AREAS: tuple[str, ...] = (
    "PATH",
    "READ",
    "WRITE",
    "TRACK",
    "EDIT",
    "PATCH",
    "TXN",
    "RECOV",
    "SNAP",
    "GLOB",
    "GREP",
    "LIST",
    "LOCK",
    "LIMIT",
    "REMOTE",
    "NB",
    "DEL",
    "MOVE",
)


@attrs.frozen(kw_only=True)
class Profile:
    """A named set of capabilities; ``any_of`` profiles need one of them, not all."""

    name: str
    capabilities: frozenset[str]
    any_of: bool = False

    def supported_by(self, capabilities: frozenset[str]) -> bool:
        if self.any_of:
            return bool(self.capabilities & capabilities)
        return self.capabilities <= capabilities


_CORE = frozenset({"read", "write", "edit", "confinement"})
_GUARDED = _CORE | {"read_before_write", "stale_detection", "cas"}
_TRANSACTIONAL = _GUARDED | {"apply_patch", "recovery"}
_SEARCH = frozenset({"glob", "grep", "list_directory"})
_CRASH = frozenset({"python_fs", "process"})

PROFILES: Mapping[str, Profile] = {
    profile.name: profile
    for profile in (
        Profile(name="Core", capabilities=_CORE),
        Profile(name="Guarded", capabilities=_GUARDED),
        Profile(name="Transactional", capabilities=_TRANSACTIONAL),
        Profile(name="Rewindable", capabilities=_TRANSACTIONAL | {"snapshots"}),
        Profile(name="Search", capabilities=_SEARCH),
        Profile(name="Crash-testable", capabilities=_CRASH, any_of=True),
        Profile(name="Remote", capabilities=frozenset({"remote_acp"})),
        Profile(name="Notebook", capabilities=frozenset({"notebook"})),
    )
}


def profile_for(requires: frozenset[str]) -> str:
    """The profile a clause counts toward, derived from the capabilities it needs."""
    if "remote_acp" in requires:
        return "Remote"
    if "notebook" in requires:
        return "Notebook"
    if requires & _CRASH:
        return "Crash-testable"
    if requires & _SEARCH:
        return "Search"
    for name in ("Core", "Guarded", "Transactional", "Rewindable"):
        if requires <= PROFILES[name].capabilities:
            return name
    return "Rewindable"


def supported_profiles(capabilities: frozenset[str]) -> list[str]:
    return [name for name, profile in PROFILES.items() if profile.supported_by(capabilities)]


# -- error codes -------------------------------------------------------------------

#: An optional key of an error's ``details``: up to three existing root-relative paths the
#: caller probably meant, on a NOT_FOUND for a path (and the reference's Write STALE for a
#: file ``expected_sha256`` names that is not there). No clause requires it; the reference
#: gives it for every tool that takes a path, files for a file and directories for a
#: directory, and ``editspec serve`` repeats it in the error text.
DID_YOU_MEAN = "did_you_mean"


def error_codes() -> frozenset[str]:
    """The closed set of ``code`` strings (the reference's table, DESIGN §2)."""
    # imported on first use: the pytest plugin loads this module before coverage starts
    from editspec.reference import ERROR_CODES

    return ERROR_CODES


def is_error_code(value: object) -> bool:
    return isinstance(value, str) and value in error_codes()


# -- results (attribute names the suite may check) -----------------------------------

RESULT_FIELDS: Mapping[str, tuple[str, ...]] = {
    "ReadResult": (
        "path",
        "content",
        "start_line",
        "end_line",
        "total_bytes",
        "total_lines",
        "sha256",
        "encoding",
        "newline",
        "bom",
        "truncated",
        "mime",
        "preview_hex",
    ),
    "WriteResult": (
        "path",
        "operation",
        "old_sha256",
        "new_sha256",
        "bytes_written",
        "newline",
        "diff",
        "snapshot_created",
        "warnings",
    ),
    "EditResult": (
        "path",
        "operation",
        "old_sha256",
        "new_sha256",
        "bytes_written",
        "newline",
        "diff",
        "snapshot_created",
        "replacements",
        "warnings",
    ),
    "Replacement": ("count", "matched_by", "line"),
    "PatchResult": ("changes", "snapshot_created"),
    "FileChange": ("path", "op", "move_to", "old_sha256", "new_sha256", "diff"),
    "GlobResult": ("paths", "truncated", "total_matches"),
    "GrepResult": ("matches", "truncated", "files_searched"),
    "GrepMatch": ("path", "line", "column", "text"),
    "ListResult": ("entries", "next_cursor", "truncated"),
    "ListEntry": ("name", "path", "type", "size", "mtime", "symlink_target"),
    "RewindResult": ("restored",),
    "RestoredFile": ("path", "action"),
    "RecoveryReport": ("rolled_back", "rolled_forward", "cleaned"),
    "NotebookResult": (
        "path",
        "mode",
        "cell_id",
        "index",
        "cell_type",
        "old_sha256",
        "new_sha256",
        "bytes_written",
        "diff",
        "snapshot_created",
    ),
    "ManifestResult": ("path", "items", "manifest_sha256"),
    "ManifestItem": ("path", "type", "size", "sha256"),
    "DeleteResult": ("path", "kind", "items", "restore_ref"),
    "MoveResult": ("path", "move_to", "atomic", "steps"),
    "MoveStep": ("step", "outcome"),
}


class EditSpec(Protocol):
    """One replacement; the suite passes ``editspec.reference.EditSpec`` instances."""

    @property
    def old_string(self) -> str: ...
    @property
    def new_string(self) -> str: ...
    @property
    def replace_all(self) -> bool: ...
    @property
    def line(self) -> int | None: ...
    @property
    def before(self) -> str | None: ...
    @property
    def after(self) -> str | None: ...


@runtime_checkable
class Session(Protocol):
    """One agent session: its own read records and snapshot history."""

    def read(
        self,
        path: str,
        *,
        start_line: int | None = None,
        end_line: int | None = None,
        start_byte: int | None = None,
        max_bytes: int | None = None,
        encoding: str = "auto",
    ) -> Any: ...

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any: ...

    def edit(
        self,
        path: str,
        edits: Sequence[EditSpec],
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any: ...

    def apply_patch(self, patch: str, *, message_id: str | None = None) -> Any: ...

    def glob(
        self, pattern: str, *, path: str | None = None, max_results: int | None = None
    ) -> Any: ...

    def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        include: str | None = None,
        ignore_case: bool = False,
        max_results: int | None = None,
    ) -> Any: ...

    def list_directory(
        self,
        path: str = ".",
        *,
        depth: int = 1,
        include_hidden: bool = False,
        cursor: str | None = None,
        max_entries: int | None = None,
    ) -> Any: ...

    def rewind(self, message_id: str) -> Any: ...


class DeletingSession(Protocol):
    """What a session of a driver that declares ``delete`` adds (contract 1.4; DEL-*)."""

    def manifest(self, path: str) -> Any: ...

    def delete(
        self,
        path: str,
        *,
        kind: str,
        expected_sha256: str | None = None,
        manifest_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any: ...


class MovingSession(Protocol):
    """What a session of a driver that declares ``move`` adds (contract 1.4; MOVE-*)."""

    def move(
        self,
        source: str,
        destination: str,
        *,
        expected_sha256: str | None = None,
        manifest_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any: ...


@runtime_checkable
class Driver(Protocol):
    """An implementation under test, bound to one workspace root and state directory."""

    name: str
    capabilities: frozenset[str]

    def open_session(self, session_id: str) -> Session: ...

    def recover(self) -> Any: ...

    def close(self) -> None: ...


@runtime_checkable
class RemoteDriver(Protocol):
    """What a driver that declares ``remote_acp`` adds (contract 1.1; REMOTE-* clauses).

    ``channel`` is a connected stream socket; its peer is an Agent Client Protocol client
    (newline-delimited JSON-RPC 2.0) that answers ``fs/read_text_file`` and
    ``fs/write_text_file`` for ``acp_session_id`` and holds the files under ``root`` (an
    absolute path in the client's terms). The driver speaks as the agent on it, owns it
    from this call on, and closes it in ``close()``. The returned session reaches its
    files only through those two calls; each call of this method gets its own channel.
    A failed remote change raises an error whose ``details["files"]`` lists every file of
    the change as ``{"path", "state"}``, ``state`` one of ``REMOTE_FILE_STATES``.
    """

    def open_remote_session(
        self, session_id: str, *, channel: socket.socket, acp_session_id: str, root: str
    ) -> Session: ...


REMOTE_FILE_STATES: tuple[str, ...] = ("untouched", "restored", "not_restored", "unknown")


@runtime_checkable
class JournalDriver(Protocol):
    """What a driver that declares ``journal_layout`` adds (contract 1.3; RECOV-011/012).

    ``seal_journal(data)`` returns the journal bytes ``data`` with the implementation's
    checksum recomputed, every other field kept as it is (valid or not). The suite alters
    a journal (an unknown version, a path outside the root) and seals it, so that
    recovery's version and path checks decide, not the checksum. It is a pure function
    of ``data``: the suite may call it on a driver whose last operation was interrupted.
    A driver that declares ``journal_layout`` without it fails those clauses (the
    capability promises the hook).
    """

    def seal_journal(self, data: bytes) -> bytes: ...


NOTEBOOK_MODES: tuple[str, ...] = ("replace", "insert", "delete")
"""``Session.edit_notebook(path, *, cell_id=None, index=None, mode="replace", source=None,
cell_type=None, expected_sha256=None, message_id=None)`` of a driver that declares
``notebook`` (contract 1.1; NB-* clauses); its result has the fields of
``RESULT_FIELDS["NotebookResult"]``."""


DriverFactory = Callable[[Path, Path], Driver]
"""``(workspace_root, state_dir) -> Driver``."""
