"""What a transaction does around its journal: the error a failed publish answers with,
and the snapshot store's hooks (``on_prepared`` records, ``confirm_transaction`` and
``discard_transaction``). No state of a transaction changes here (``_transaction``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._errors import ToolError

if TYPE_CHECKING:
    from editspec.reference._context import WorkspaceContext


def publish_error(exc: Exception) -> ToolError:
    """The ToolError a failed publish step answers with (its errno kept)."""
    if not isinstance(exc, OSError):
        return ToolError(_errors.IO_ERROR, f"publish failed: {exc!r}")
    error = _errors.from_oserror(exc, exc.filename, action="publish")
    if error.code not in (_errors.IO_ERROR, _errors.ALREADY_EXISTS):
        # ENOENT, EISDIR, ... in the middle of a publish come from the environment (a
        # directory removed under us), not from the request. EEXIST stays: a file
        # appeared where an add or a move links its new file (no clobber).
        error = ToolError(_errors.IO_ERROR, error.message, errno=exc.errno, path=exc.filename)
        error.__cause__ = exc
    return error


def discard_snapshots(workspace: WorkspaceContext, txn_id: str, error: BaseException) -> None:
    """Discard a failed transaction's pending snapshots; a failure to is added to the
    ``error`` it failed with, never raised over it."""
    try:
        snapshot_hook(workspace, "discard_transaction", txn_id)
    except Exception as exc:
        if isinstance(error, ToolError):
            error.details["snapshot_discard_error"] = repr(exc)


def snapshot_hook(workspace: WorkspaceContext, name: str, txn_id: str) -> None:
    """Call ``workspace.snapshots.<name>(txn_id)`` if the store provides it."""
    method = getattr(workspace.snapshots, name, None)
    if callable(method):
        method(txn_id)
