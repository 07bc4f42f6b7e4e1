"""Edit: string replacements in one file, all or nothing (DESIGN §4 "Edit").

The flow, and where each failure is raised:

1. The arguments: the edits are EditSpecs or mappings with the same keys, at least one
   (INVALID_ARGUMENT); the path is resolved and confined (OUTSIDE_WORKSPACE, ...);
   notebooks are UNSUPPORTED.
2. Under the lock of the file's canonical key: the bytes are read (NOT_FOUND,
   IS_A_DIRECTORY, TOO_LARGE), the session must have read them in full at their
   current hash or give ``expected_sha256`` (NOT_READ, STALE), and they must decode
   as text (BINARY).
3. In memory: every edit is matched and applied in order on the result of the one
   before (``_matching``: NO_MATCH, AMBIGUOUS, NO_CHANGE); the new text is encoded
   like the old one (encoding, BOM; line breaks are the matching's business).
4. ``_write.replace_locked`` publishes atomically after a byte-for-byte re-check of the
   old bytes, records the snapshot (best effort) and the session's new access record.

An empty ``old_string`` creates a missing file, or fills an existing empty one.
Nothing touches the disk before step 4, so any failure leaves the file as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import EditResult, EditSpec, Replacement
from editspec.reference._store import FilesSession
from editspec.reference._supports import (
    refuse_text_notebook,
    snapshot_message,
    snapshot_warning,
)
from editspec.reference.text import _text
from editspec.reference.text._diff import unified_diff
from editspec.reference.tools import _edit_text
from editspec.reference.tools._write import (
    check_expected_sha256,
    check_message_id,
    refuse_non_file,
)

_RESOLVE_ATTEMPTS = 3


def edit(
    session: FilesSession,
    path: str,
    edits: Sequence[EditSpec],
    *,
    expected_sha256: str | None = None,
    message_id: str | None = None,
) -> EditResult:
    """Apply string replacements to one file, all or nothing. Spec: EDIT-*, TRACK-*, WRITE-*."""
    workspace = session.workspace
    store = workspace.store
    specs = _edit_text.coerce_edits(edits, max_edits=workspace.limits.edits_per_call)
    expected = check_expected_sha256(expected_sha256)
    message = check_message_id(message_id)
    for _ in range(_RESOLVE_ATTEMPTS):
        target = store.resolve(path)
        _refuse_notebook(session, target)
        with store.hold([target.canonical_key]):
            locked = store.resolve(path)
            if locked.canonical_key != target.canonical_key:
                continue  # a link changed between resolution and locking: start over
            return _edit_locked(session, locked, specs, expected, message)
    raise ToolError(
        _errors.STALE, f"{path} kept changing where it leads while it was being edited", path=path
    )


def _refuse_notebook(session: FilesSession, target: Any) -> None:
    if not session.workspace.supports.binary:
        refuse_text_notebook(target.logical_relative)
        return
    for name in (target.logical_relative, target.relative):
        if name.lower().endswith(_edit_text.NOTEBOOK_SUFFIX):
            raise ToolError(
                _errors.UNSUPPORTED,
                f"{target.logical_relative} is a Jupyter notebook; edit its cells with "
                "Session.edit_notebook (notebook editing) instead of replacing text in its JSON",
                path=target.logical_relative,
            )


def _edit_locked(
    session: FilesSession,
    target: Any,
    specs: Sequence[EditSpec],
    expected_sha256: str | None,
    message_id: str | None,
) -> EditResult:
    workspace = session.workspace
    store = workspace.store
    shown = target.logical_relative
    refuse_non_file(target)
    old_bytes = store.read_for_edit(target)
    old_digest: Callable[[], str] | None = None
    if old_bytes is None:
        _edit_text.require_creation(shown, specs, expected_sha256)
    else:
        _edit_text.check_edit_size(workspace.limits, shown, len(old_bytes), "is")
        old_digest = store.sha256_later(target, old_bytes)
    # The in-memory edit runs while the old bytes are hashed; its failures are raised
    # only after the freshness check, which comes first (NOT_READ/STALE, then the rest).
    plan: _Plan | None = None
    failure: ToolError | None = None
    try:
        plan = _plan(session, target, old_bytes, specs)
    except ToolError as error:
        failure = error
    old_sha256 = None
    if old_digest is not None:
        old_sha256 = old_digest()
        workspace.access.require_fresh(
            session.id,
            target.canonical_key,
            current_sha256=old_sha256,
            expected_sha256=expected_sha256,
            display_path=shown,
        )
    if failure is not None:
        raise failure
    assert plan is not None
    workspace.hooks.run_validators(shown, "edit", old_bytes, plan.new_bytes)
    # The new bytes are hashed while they are written; the hash is asked for after.
    snapshot_created, write_warnings = store.replace(
        session.id,
        target,
        old_bytes,
        plan.new_bytes,
        message_id=snapshot_message(workspace.supports, message_id),
        new_sha256=plan.new_digest,
        operation="edit",
    )
    new_sha256 = plan.new_digest()
    return EditResult(
        path=shown,
        operation=_edit_text.OPERATION,
        old_sha256=old_sha256,
        new_sha256=new_sha256,
        bytes_written=len(plan.new_bytes),
        newline=plan.newline,
        diff=plan.diff,
        snapshot_created=snapshot_created,
        replacements=plan.replacements,
        warnings=plan.warnings + write_warnings + snapshot_warning(workspace.supports, message_id),
        backup_ref=message_id if snapshot_created else None,
    )


@attrs.frozen(kw_only=True)
class _Plan:
    """An edit computed in memory: what to write and what to report."""

    new_bytes: bytes
    new_digest: Callable[[], str]
    replacements: tuple[Replacement, ...]
    diff: str
    newline: str
    warnings: tuple[str, ...]


def _plan(
    session: FilesSession,
    target: Any,
    old_bytes: bytes | None,
    specs: Sequence[EditSpec],
) -> _Plan:
    """Decode, apply every edit, encode and describe the change; no disk access."""
    workspace = session.workspace
    store = workspace.store
    shown = target.logical_relative
    decoded: _text.DecodedText | None = None
    text = ""
    if old_bytes is not None:
        decoded = store.decode(target, old_bytes)
        if decoded is None:
            raise ToolError(
                _errors.BINARY, f"{shown} is a binary file; it cannot be edited as text", path=shown
            )
        text = decoded.text
    lines = store.line_index(target, old_bytes) if old_bytes is not None else None
    edited = _edit_text.apply_specs(
        shown, text, specs, decoded.newline if decoded is not None else None, lines
    )
    new_bytes = store.encode_text(edited.text, decoded)
    _edit_text.check_edit_size(workspace.limits, shown, len(new_bytes), "would be")
    new_digest = store.sha256_later(target, new_bytes)
    diff = unified_diff(
        shown,
        text,
        edited.text,
        old_exists=old_bytes is not None,
        known_prefix=edited.unchanged_prefix,
        known_suffix=edited.unchanged_suffix,
        known_prefix_newlines=edited.prefix_newlines,
    )
    newline = _edit_text.newline_after(text, decoded, edited)
    # The next read or edit of these bytes finds their text here instead of decoding.
    store.remember_text(
        target,
        new_bytes,
        _text.DecodedText(
            text=edited.text,
            encoding=decoded.encoding if decoded is not None else _text.UTF8,
            bom=decoded.bom if decoded is not None else False,
            newline=newline,
            line_breaks=_edit_text.line_breaks_after(text, decoded, edited),
        ),
        lines=(
            lines.after_edit(text, edited.text, edited.unchanged_prefix, edited.unchanged_suffix)
            if lines is not None
            else None
        ),
        # A decoded text holds no U+0000, so only the new strings could bring one.
        nul_free=decoded is not None and not any("\0" in spec.new_string for spec in specs),
    )
    return _Plan(
        new_bytes=new_bytes,
        new_digest=new_digest,
        replacements=edited.replacements,
        diff=diff,
        newline=newline,
        warnings=_edit_text.growth_warning(
            workspace.limits, shown, len(old_bytes or b""), len(new_bytes)
        ),
    )
