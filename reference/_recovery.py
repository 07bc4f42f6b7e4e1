"""Crash recovery. STUB: replaced by the transaction work."""

from __future__ import annotations

from typing import TYPE_CHECKING

from editspec.reference._results import RecoveryReport

if TYPE_CHECKING:
    from editspec.reference._workspace import Workspace


def recover(workspace: Workspace) -> RecoveryReport:
    return RecoveryReport()
