"""Recovery with its republication undone: the engine before recovery made the record it
acts on durable itself.

``recovery_trusts_a_retried_fsync`` replaces ``_transaction._republish`` for the length of
a ``with`` block: a ``preparing`` or ``committed`` record is acted on as read, after one
more fsync of the journal directory, which a record renamed in before an fsync that
failed is not made durable by. A ``revoked`` one is still written again as
``preparing``, as it was then. The fixed finding
``findings/recovery-after-commit-fsync-eio-then-power-cut.json`` reproduces with it, and
``test_fsync_failures`` shows its check catching it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from editspec.reference._context import WorkspaceContext
from editspec.reference.transactions import _transaction
from editspec.reference.transactions._journal import REVOKED, JournalRecord
from tests.mutants.durability import replaced


@contextlib.contextmanager
def recovery_trusts_a_retried_fsync() -> Iterator[None]:
    """Recovery fsyncs the journal directory again and trusts the record it read."""
    original = _transaction._republish

    def republish(workspace: WorkspaceContext, record: JournalRecord) -> JournalRecord:
        if record.state == REVOKED:
            return original(workspace, record)
        workspace.fs.fsync_dir(workspace.journal_dir)
        return record

    with replaced(_transaction, "_republish", republish):
        yield
