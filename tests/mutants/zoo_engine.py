"""Engine mutants for the clauses about crashes, recovery, journals, locks and snapshots.

Each is the reference engine with one step of its protocol left out or done carelessly,
as ``mutant_zoo.py``'s are; the durability mutants of ``durability.py`` (context
managers the explorer hunts with) are registered here too, as ``dur_<name>``, so the
suite's own crash and power-loss clauses must catch them as well.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import durability
from mutant_zoo import Mutant, _replace, register

from editspec.reference import (
    RecoveryReport,
    _journal,
    _locks,
    _recovery,
    _rollback,
    _snapshots,
    _transaction,
    _workspace,
    _write,
)

# The MUST clauses each mutant must fail (and the reference passes).
TARGETS: dict[str, tuple[str, ...]] = {}


def _engine(name: str, defect: str, areas: tuple[str, ...], install: Any) -> None:
    register(
        Mutant(
            name=name, defect=defect, areas=areas, install=install, clauses=TARGETS.get(name, ())
        )
    )


for _mutant in durability.MUTANTS:
    register(
        Mutant(
            name=f"dur_{_mutant.name}",
            defect=_mutant.defect[0].upper() + _mutant.defect[1:] + ".",
            areas=("TXN", "RECOV", "WRITE", "SNAP"),
            context=_mutant.active,
            clauses=TARGETS.get(f"dur_{_mutant.name}", ()),
        )
    )


@contextlib.contextmanager
def _no_lock(self: Any, keys: Any) -> Iterator[None]:
    yield


def _no_locks() -> None:
    _replace(_locks.LockTable, "hold", _no_lock)
    _replace(_write, "_verifier", lambda workspace, target, old_bytes: lambda: None)


_engine(
    "no_locks",
    "No per-file lock is taken and nothing is re-checked before the rename: concurrent "
    "writers race.",
    ("LOCK", "TXN"),
    _no_locks,
)


def _recover_nothing() -> None:
    _replace(_recovery, "_recover", lambda workspace: RecoveryReport())


_engine(
    "recovery_does_nothing",
    "recover() reports success and leaves interrupted transactions as they are.",
    ("RECOV", "TXN", "SNAP", "WRITE"),
    _recover_nothing,
)


def _no_recover_on_start() -> None:
    original = _workspace.Workspace.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **{**kwargs, "recover": False})

    _replace(_workspace.Workspace, "__init__", init)
    _replace(_workspace.Workspace, "_has_journals", lambda self: False)


_engine(
    "no_recovery_on_start",
    "A workspace opened over an interrupted transaction does not recover it first.",
    ("RECOV",),
    _no_recover_on_start,
)


def _trust_journals() -> None:
    def decode(data: bytes, *, root: str, txn_id: Any = None, where: str = "") -> Any:
        import json

        body = json.loads(data.decode("utf-8", "replace"))
        body.pop("checksum", None)
        entries = tuple(_journal._decode_entry(item, body["txn_id"]) for item in body["files"])
        return _journal.JournalRecord(
            version=_journal.VERSION,
            txn_id=body["txn_id"],
            state=body["state"],
            root=root,
            entries=entries,
        )

    _replace(_journal, "decode", decode)
    _replace(_journal, "check_relative", lambda path: str(path))


_engine(
    "journal_trusted",
    "A journal is used as it reads: no checksum, version or path check.",
    ("RECOV",),
    _trust_journals,
)


def _rollback_nothing() -> None:
    def roll_back(fs: Any, root: str, record: Any, *, owned: Any = None) -> list[str]:
        return []

    _replace(_rollback, "roll_back", roll_back)
    _replace(_transaction, "roll_back", roll_back)


_engine(
    "rollback_does_nothing",
    "A failed or interrupted transaction is not rolled back: what was published stays.",
    ("TXN", "RECOV", "SNAP"),
    _rollback_nothing,
)


def _not_sticky() -> None:
    _replace(_workspace.Workspace, "mark_needs_recovery", lambda self, reason: None)


_engine(
    "failure_not_sticky",
    "After a rollback that could not finish, the workspace goes on accepting changes.",
    ("RECOV",),
    _not_sticky,
)


def _no_snapshots() -> None:
    _replace(_snapshots.SnapshotStore, "record", lambda self, *args, **kwargs: False)


_engine(
    "snapshots_not_recorded",
    "No snapshot is ever recorded, whatever the result says.",
    ("SNAP",),
    _no_snapshots,
)
