"""Write: create or replace a whole file, atomically (DESIGN §4 "Write", "Stale detection").

The order of a write, each step under the canonical key's lock:

1. resolve the path (confinement; an alias and its target share one key, hence one lock);
2. resolve again under the lock: if the path now leads elsewhere, start over;
3. read the current bytes; an existing file needs a full fresh read by this session or a
   matching ``expected_sha256`` (NOT_READ / STALE, the hash is authoritative);
4. snapshot the before-state when a ``message_id`` is given (best effort, reported);
5. publish with ``_atomic`` (exclusive temp, fsync, byte-for-byte re-verification of the
   old content just before the rename, rename, fsync the directory); the mode is kept;
6. update the session's access record to the new hash, so the next change needs no read.

``replace_locked`` (steps 4-6) is shared with Edit, which holds the lock itself.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from collections.abc import Callable
from typing import Any

from editspec.reference import _errors
from editspec.reference._arguments import MESSAGE_ID_CHARS, check_text
from editspec.reference._context import SessionContext, WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._results import WriteResult
from editspec.reference._store import FilesSession, Target
from editspec.reference._supports import snapshot_message, snapshot_warning
from editspec.reference.paths._paths import DIR, OTHER, WorkspacePath, is_within
from editspec.reference.snapshots._records import SnapshotEntry
from editspec.reference.text._diff import unified_diff
from editspec.reference.text._text import (
    NONE,
    UTF8,
    DecodedText,
    decode,
    encode,
    sha256_hex,
    sha256_later,
)
from editspec.reference.tools._atomic import atomic_create, atomic_replace

_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_RESOLVE_ATTEMPTS = 3
_NEW_DIRECTORY_MODE = 0o777  # filtered by the umask, as mkdir(1) does


# -- argument checks (caller errors, raised before any side effect) ---------------------


def check_expected_sha256(expected_sha256: object) -> str | None:
    """Validate an ``expected_sha256`` argument; return it lower-cased."""
    if expected_sha256 is None:
        return None
    if not isinstance(expected_sha256, str) or not _SHA256.match(expected_sha256):
        raise ToolError(_errors.INVALID_ARGUMENT, "expected_sha256 must be 64 hexadecimal digits")
    return expected_sha256.lower()


def check_message_id(message_id: object) -> str | None:
    """Validate a ``message_id`` argument (None, or a non-empty string)."""
    if message_id is None:
        return None
    if not isinstance(message_id, str) or not message_id:
        raise ToolError(_errors.INVALID_ARGUMENT, "message_id must be a non-empty string")
    check_text("message_id", message_id, max_chars=MESSAGE_ID_CHARS)
    return message_id


def _content_bytes(content: object) -> bytes | str:
    if isinstance(content, str):
        return content
    if isinstance(content, (bytes, bytearray, memoryview)):
        return bytes(content)
    raise ToolError(
        _errors.INVALID_ARGUMENT,
        f"content must be str or bytes, not {type(content).__name__}",
    )


def content_text(content: object) -> str:
    """Text to write where the service holds text: bytes only when they are UTF-8 text."""
    if isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
        decoded = decode(data)
        if decoded is None or decoded.encoding != UTF8 or decoded.bom:
            raise ToolError(
                _errors.UNSUPPORTED,
                "a remote workspace holds text only: binary content (or text that is not "
                "UTF-8 without a BOM) cannot be written through the client",
                size=len(data),
            )
        return decoded.text
    if not isinstance(content, str):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"content must be str or bytes, not {type(content).__name__}",
        )
    return content


def _encode_like(content: str | bytes, old: bytes | None) -> bytes:
    """Bytes are written as given; text keeps an existing file's encoding and BOM."""
    if isinstance(content, bytes):
        return content
    like: DecodedText | None = decode(old) if old else None
    if like is not None and (like.bom or like.encoding != "utf-8"):
        return encode(content, like)
    return encode(content, None)


# -- diffs and display -----------------------------------------------------------------


def describe_change(
    relative: str,
    old: bytes | None,
    new: bytes | None,
    *,
    decode: Callable[[bytes], DecodedText | None] = decode,
) -> tuple[str, str]:
    """``(diff, newline)`` of a change: a unified diff of the texts, or a binary notice."""
    old_text = decode(old) if old is not None else None
    new_text = decode(new) if new is not None else None
    newline = new_text.newline if new_text is not None else NONE
    if (old is not None and old_text is None) or (new is not None and new_text is None):
        if old == new:
            return "", newline
        return f"Binary files a/{relative} and b/{relative} differ\n", newline
    diff = unified_diff(
        relative,
        old_text.text if old_text is not None else "",
        new_text.text if new_text is not None else "",
        old_exists=old is not None,
        new_exists=new is not None,
    )
    return diff, newline


# -- the locked core, shared with Edit -------------------------------------------------


def _missing_directories(workspace: WorkspaceContext, directory: str) -> list[str]:
    """Directories to create for ``directory``, top first; never the root or above it."""
    fs = workspace.fs
    missing: list[str] = []
    current = directory
    while current != workspace.root and not fs.lexists(current):
        if not is_within(current, workspace.root):  # resolve() confined it; keep it so
            raise ToolError(_errors.OUTSIDE_WORKSPACE, f"{current} is outside the workspace")
        missing.append(current)
        current = os.path.dirname(current)
    return list(reversed(missing))


def _create_parents(workspace: WorkspaceContext, target: WorkspacePath) -> list[str]:
    created: list[str] = []
    try:
        for directory in _missing_directories(workspace, os.path.dirname(target.real)):
            workspace.fs.mkdir(directory, _NEW_DIRECTORY_MODE)
            created.append(directory)
            # Durable in its parent before anything goes into it: a power cut that loses
            # the directory loses the new file with it, after its success was reported.
            workspace.fs.fsync_dir(os.path.dirname(directory))
    except OSError as exc:
        _remove_directories(workspace, created)
        raise _errors.from_oserror(exc, target.logical_relative, action="create directory") from exc
    return created


def _remove_directories(workspace: WorkspaceContext, created: list[str]) -> None:
    """Undo ``_create_parents`` after a failed create (best effort, deepest first; each
    removal synced in its parent, so a power cut after the error brings none back)."""
    for directory in reversed(created):
        try:
            workspace.fs.rmdir(directory)
            workspace.fs.fsync_dir(os.path.dirname(directory))
        except OSError:
            return


def _verifier(
    workspace: WorkspaceContext, target: WorkspacePath, old_bytes: bytes
) -> Callable[[], None]:
    def verify() -> None:
        # TRACK: the check is repeated inside the critical section, byte for byte.
        try:
            current = workspace.fs.read_bytes_unless(target.real, old_bytes)
        except OSError as exc:
            raise ToolError(
                _errors.STALE,
                f"{target.logical_relative} changed on disk while it was being written",
                path=target.logical_relative,
                errno=exc.errno,
            ) from exc
        if current != old_bytes:
            raise ToolError(
                _errors.STALE,
                f"{target.logical_relative} changed on disk while it was being written; "
                "read it again",
                path=target.logical_relative,
                current_sha256=sha256_hex(current),
                expected_sha256=sha256_hex(old_bytes),
            )

    return verify


def _snapshot(
    session: SessionContext,
    message_id: str,
    entry: SnapshotEntry,
) -> tuple[str | None, tuple[str, ...]]:
    """Record the before-state as a pending snapshot; return its id (None if it failed)."""
    transaction_id = f"w{secrets.token_hex(16)}"
    try:
        session.workspace.snapshots.record(
            session.id, message_id, [entry], transaction_id=transaction_id
        )
    except Exception as exc:  # best effort for write and edit (DESIGN §4 SNAP)
        return None, (f"no snapshot was recorded for {entry.relative}: {exc}",)
    return transaction_id, ()


def _settle_snapshot(
    session: SessionContext, transaction_id: str | None, *, published: bool
) -> tuple[bool, tuple[str, ...]]:
    """Confirm the pending snapshot after a publish, or discard it after a failure."""
    if transaction_id is None:
        return False, ()
    store = session.workspace.snapshots
    try:
        if published:
            store.confirm_transaction(transaction_id)
        else:
            store.discard_transaction(transaction_id)
    except Exception as exc:
        return False, (f"the snapshot could not be {'kept' if published else 'removed'}: {exc}",)
    return published, ()


def replace_locked(
    session: SessionContext,
    target: WorkspacePath,
    old_bytes: bytes | None,
    new_bytes: bytes,
    *,
    message_id: str | None,
    new_sha256: str | Callable[[], str] | None = None,
    operation: str = "write",
) -> tuple[bool, tuple[str, ...]]:
    """Publish ``new_bytes`` at ``target`` with its key lock already held.

    ``old_bytes`` is the content the caller planned against (checked fresh by it); the
    disk is re-verified byte for byte just before the rename (STALE otherwise). None
    creates the file, with its missing parent directories, and never clobbers one that
    appeared meanwhile (STALE). Records the snapshot (best effort) when ``message_id`` is
    given, keeps the mode bits, and updates the session's access record. Returns
    ``(snapshot_created, warnings)``. ``new_sha256``: the hash of ``new_bytes`` when the
    caller has it, or a function that returns it (``_text.sha256_later``), asked only
    when the hash is needed, so a large file is hashed while it is written. Spec:
    WRITE-*, TRACK-*, SNAP-*, PATH-* (hard links).
    """
    digest = sha256_later(new_bytes) if new_sha256 is None else new_sha256
    new_hash: Callable[[], str] = digest if callable(digest) else (lambda: digest)
    workspace = session.workspace
    fs = workspace.fs
    warnings: list[str] = []
    mode: int | None = None
    if old_bytes is not None:
        try:
            st = fs.lstat(target.real)
        except OSError as exc:
            raise ToolError(
                _errors.STALE,
                f"{target.logical_relative} changed on disk while it was being written",
                path=target.logical_relative,
                errno=exc.errno,
            ) from exc
        mode = stat.S_IMODE(st.st_mode)
        if st.st_nlink > 1:
            warnings.append(
                f"{target.logical_relative} had {st.st_nlink} hard links; only this path "
                "now has the new content, the other links keep the old one"
            )
    transaction_id: str | None = None
    if message_id is not None:
        entry = SnapshotEntry(
            relative=target.relative,
            existed=old_bytes is not None,
            before=old_bytes,
            after_sha256=new_hash(),
            mode=mode,
        )
        transaction_id, snapshot_warnings = _snapshot(session, message_id, entry)
        warnings.extend(snapshot_warnings)
    created: list[str] = []
    try:
        if old_bytes is None:
            created = _create_parents(workspace, target)
            publish_warnings = atomic_create(fs, target.real, new_bytes)
        else:
            verify = _verifier(workspace, target, old_bytes)
            publish_warnings = atomic_replace(
                fs, target.real, new_bytes, mode=mode, verify=verify, previous=old_bytes
            )
    except Exception as exc:
        if isinstance(exc, ToolError) and exc.code == _errors.NEEDS_RECOVERY:
            # Published, but not durably, and not undone durably either.
            workspace.mark_needs_recovery(f"{target.logical_relative}: {exc.message}")
        _remove_directories(workspace, created)
        _settle_snapshot(session, transaction_id, published=False)
        raise
    warnings.extend(publish_warnings)
    snapshot_created, settle_warnings = _settle_snapshot(session, transaction_id, published=True)
    warnings.extend(settle_warnings)
    try:
        mtime_ns = fs.lstat(target.real).st_mtime_ns
    except OSError:
        mtime_ns = 0  # diagnostics only: the hash is what freshness compares
    workspace.access.record_write(
        session.id,
        target.canonical_key,
        sha256=new_hash(),
        size=len(new_bytes),
        mtime_ns=mtime_ns,
    )
    return snapshot_created, tuple(warnings)


# -- Write -----------------------------------------------------------------------------


def refuse_non_file(target: Target) -> None:
    """IS_A_DIRECTORY for a directory, INVALID_ARGUMENT for a fifo, socket or device."""
    if target.kind == DIR:
        raise ToolError(
            _errors.IS_A_DIRECTORY,
            f"{target.logical_relative} is a directory",
            path=target.logical_relative,
        )
    if target.kind == OTHER:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{target.logical_relative} is not a regular file",
            path=target.logical_relative,
        )


def write(
    session: FilesSession,
    path: str,
    content: str | bytes,
    *,
    expected_sha256: str | None = None,
    message_id: str | None = None,
) -> WriteResult:
    """Create or replace a whole file atomically. Spec: WRITE-*, TRACK-*, PATH-*, SNAP-*.

    ``str`` content is encoded as UTF-8, or, when it replaces a text file with a BOM or
    in UTF-16, in that file's encoding and BOM; newlines are written as given. ``bytes``
    are written as they are (to a service that holds text only, when they are UTF-8
    text: REMOTE-*). Creating needs no read; replacing needs a full fresh read in this
    session or a matching ``expected_sha256``.
    """
    workspace = session.workspace
    store = workspace.store
    data = _content_bytes(content) if workspace.supports.binary else content_text(content)
    if isinstance(data, str):
        encode(data, None)  # a lone surrogate is INVALID_ARGUMENT before any lock or disk access
    expected = check_expected_sha256(expected_sha256)
    message = check_message_id(message_id)
    for _ in range(_RESOLVE_ATTEMPTS):
        target = store.resolve(path)
        refuse_non_file(target)
        if isinstance(path, str) and path.endswith(("/", os.sep)):
            raise ToolError(
                _errors.IS_A_DIRECTORY,
                f"{path} ends with a separator: it names a directory, not a file",
                path=path,
            )
        with store.hold([target.canonical_key]):
            locked = store.resolve(path)
            if locked.canonical_key != target.canonical_key:
                continue  # a link changed between resolution and locking: start over
            return _write_locked(session, locked, data, expected, message)
    raise ToolError(
        _errors.STALE,
        f"{path} kept changing where it leads while it was being written",
        path=path,
    )


def _write_locked(
    session: FilesSession,
    target: Any,
    content: str | bytes,
    expected_sha256: str | None,
    message_id: str | None,
) -> WriteResult:
    workspace = session.workspace
    store = workspace.store
    shown = target.logical_relative
    old = store.read_for_write(target)
    old_sha = check_fresh(session, target, old, expected_sha256)
    if isinstance(content, str) and not workspace.supports.binary:
        new = store.encode_text(content, None)  # the text as the service holds it
    else:
        new = _encode_like(content, old)
    # The host's validators see the whole new content before anything is published.
    workspace.hooks.run_validators(shown, "write", old, new)
    snapshot_created, warnings = store.replace(
        session.id,
        target,
        old,
        new,
        message_id=snapshot_message(workspace.supports, message_id),
        new_sha256=None,
        operation="write",
    )
    diff, newline = describe_change(shown, old, new, decode=store.text_of)
    return WriteResult(
        path=shown,
        operation="create" if old is None else "replace",
        old_sha256=old_sha,
        new_sha256=sha256_hex(new),
        bytes_written=len(new),
        newline=newline,
        diff=diff,
        snapshot_created=snapshot_created,
        warnings=warnings + snapshot_warning(workspace.supports, message_id),
        # The previous bytes are restorable through rewind(message_id) (evidence).
        backup_ref=message_id if snapshot_created and old is not None else None,
    )


def check_fresh(
    session: FilesSession, target: Any, old: bytes | None, expected_sha256: str | None
) -> str | None:
    """The hash of ``old`` once this session may replace it (NOT_READ, STALE). Spec: TRACK-*."""
    shown = target.logical_relative
    if old is None:
        if expected_sha256 is not None:
            raise ToolError(
                _errors.STALE,
                f"{shown} does not exist, so it does not have the expected sha256",
                path=shown,
                expected_sha256=expected_sha256,
                current_sha256=None,
            )
        return None
    old_sha = sha256_hex(old)
    session.workspace.access.require_fresh(
        session.id,
        target.canonical_key,
        current_sha256=old_sha,
        expected_sha256=expected_sha256,
        display_path=shown,
    )
    return old_sha
