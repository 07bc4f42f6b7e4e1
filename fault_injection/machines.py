"""Hypothesis state machines: the engine and a pure model in lockstep, with faults.

One ``RuleBasedStateMachine`` per concern (CONVENTIONS "State machines"):

* ``EditSequenceMachine``: reads, writes and edits by two sessions, external writers
  (including a change that keeps size and mtime), crash, I/O errors and power loss
  during a write or an edit;
* ``PatchMachine``: valid and invalid multi-file patches (add, delete, update, move into
  new directories), crash at op k, I/O errors and power loss during a patch;
* ``RewindMachine``: changes with message ids, external changes, rewind (CONFLICT when
  the history is broken), crash and power loss during a rewind or a patch;
* ``DeleteMoveMachine``: Delete and Move of files by two sessions (read first or not,
  onto free or taken paths), crash, I/O errors and power loss during either;
* ``AliasMachine``: a symlink alias and a hard link: tracking and writes through an
  alias, hard links replaced one name at a time, crash during writes;
* ``CaseAliasMachine``: on a case-insensitive file system (pyfakefs emulating macOS),
  two spellings of one file share one read record.

Each machine owns a ``harness.Sandbox`` (a real temporary directory, or an in-memory
one when ``memory`` is set and the test runs under pyfakefs) and a runner: the
reference through its port (``harness.Runner``), or, when ``driver`` names one
(``module:factory``), any ``python_fs`` driver through the contract
(``driver_runner.DriverRunner``: faults at its own ``os`` calls, power cuts from their
trace);
a crash or a power cut is followed by a restart (a fresh workspace recovers) after
which the disk must be exactly the model before or after the operation, and the model
follows whichever it is, minus every session's in-memory read records.
``@invariant``: the disk equals the model, and no journal is left.

Every failure is saved as a scenario (``EDITSPEC_FAILURES`` or
``<tmp>/editspec-failures/<Machine>.json``) that ``editspec replay`` re-runs; the file
is overwritten while Hypothesis shrinks, so it ends as the shortest failing example.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from editspec.fault_injection._machine_base import WorkspaceMachine
from editspec.fault_injection._machine_steps import (
    ERRNOS,
    SESSIONS,
    contents,
    crash_points,
    edit_step,
    fail_points,
    patch_step,
    reads_first,
    write_step,
)
from editspec.fault_injection.model import Model, Prediction

Rule = Callable[..., None]

__all__ = [
    "MACHINES",
    "AliasMachine",
    "CaseAliasMachine",
    "DeleteMoveMachine",
    "EditSequenceMachine",
    "PatchMachine",
    "RewindMachine",
    "WorkspaceMachine",
]


def path_rules(paths: tuple[str, ...]) -> tuple[Rule, Rule, Rule, Rule]:
    """The ``read``, ``write``, ``edit`` and ``crash_during_write`` rules drawing from
    ``paths``: a machine with paths of its own makes its own rules from them (the model
    names each path through the machine's ``model_path``)."""

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths))
    def read(self: WorkspaceMachine, session: str, path: str) -> None:
        WorkspaceMachine.read(self, session, path)

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(paths),
        text=contents,
    )
    def write(self: WorkspaceMachine, session: str, read_first: bool, path: str, text: str) -> None:
        self.write_rule(session, read_first, path, text)

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(paths),
        data=st.data(),
    )
    def edit(
        self: WorkspaceMachine, session: str, read_first: bool, path: str, data: st.DataObject
    ) -> None:
        self.edit_rule(session, read_first, path, data)

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(paths),
        text=contents,
        at=crash_points,
    )
    def crash_during_write(
        self: WorkspaceMachine, session: str, read_first: bool, path: str, text: str, at: float
    ) -> None:
        self.crash_during_write_rule(session, read_first, path, text, at)

    return read, write, edit, crash_during_write


class EditSequenceMachine(WorkspaceMachine):
    """Writes and edits by two sessions against external writers, with faults."""

    write, edit, crash_during_write = path_rules(WorkspaceMachine.paths)[1:]

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(WorkspaceMachine.paths),
        data=st.data(),
        at=crash_points,
    )
    def crash_during_edit(
        self, session: str, read_first: bool, path: str, data: st.DataObject, at: float
    ) -> None:
        self.maybe_read(session, path, read_first)
        old, new = self.draw_edit(data, path)
        self.crash(
            edit_step(session, path, old, new), lambda m: m.edit(session, path, old, new), at
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(WorkspaceMachine.paths),
        text=contents,
        at=fail_points,
        errno_name=st.sampled_from(ERRNOS),
    )
    def io_error_during_write(
        self, session: str, read_first: bool, path: str, text: str, at: float, errno_name: str
    ) -> None:
        self.maybe_read(session, path, read_first)
        self.fail_io(
            write_step(session, path, text),
            lambda m: m.write(session, path, text.encode("utf-8")),
            at,
            errno_name,
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(WorkspaceMachine.paths),
        text=contents,
        data=st.data(),
    )
    def power_loss_during_write(
        self, session: str, read_first: bool, path: str, text: str, data: st.DataObject
    ) -> None:
        self.maybe_read(session, path, read_first)
        self.power_loss(
            write_step(session, path, text),
            lambda m: m.write(session, path, text.encode("utf-8")),
            data,
        )


class PatchMachine(WorkspaceMachine):
    """Multi-file patches, valid and invalid, all or nothing under crashes and cuts."""

    @rule(session=st.sampled_from(SESSIONS), data=st.data())
    def apply_patch(self, session: str, data: st.DataObject) -> None:
        ops = self.prepare_patch(session, data)
        self.engine(patch_step(session, ops), lambda m: m.apply_patch(session, ops))

    @rule(session=st.sampled_from(SESSIONS), data=st.data(), at=crash_points)
    def crash_during_patch(self, session: str, data: st.DataObject, at: float) -> None:
        ops = self.prepare_patch(session, data)
        self.crash(patch_step(session, ops), lambda m: m.apply_patch(session, ops), at)

    @rule(
        session=st.sampled_from(SESSIONS),
        data=st.data(),
        at=fail_points,
        errno_name=st.sampled_from(ERRNOS),
    )
    def io_error_during_patch(
        self, session: str, data: st.DataObject, at: float, errno_name: str
    ) -> None:
        ops = self.prepare_patch(session, data)
        self.fail_io(
            patch_step(session, ops), lambda m: m.apply_patch(session, ops), at, errno_name
        )

    @rule(session=st.sampled_from(SESSIONS), data=st.data())
    def power_loss_during_patch(self, session: str, data: st.DataObject) -> None:
        ops = self.prepare_patch(session, data)
        self.power_loss(patch_step(session, ops), lambda m: m.apply_patch(session, ops), data)


# -- delete and move ---------------------------------------------------------------------------


def _predict_delete(model: Model, session: str, path: str) -> Prediction:
    if path not in model.files:
        return Prediction.error("NOT_FOUND")
    # A file delete has the preconditions of a patch's Delete File (DEL-002).
    return model.apply_patch(session, [{"op": "delete", "path": path}])


def _predict_move(model: Model, session: str, path: str, dest: str) -> Prediction:
    if path not in model.files:
        return Prediction.error("NOT_FOUND")
    errors = set()
    if dest in model.files or dest in model.dirs:
        errors.add("ALREADY_EXISTS")
    fresh = model.freshness(session, path)
    if fresh != "ok":
        errors.add(fresh)
    if errors:
        return Prediction(frozenset(errors))
    data = model.files.pop(path)  # one rename: the inode and its bytes travel
    model.remember(session, path, None)
    parts = dest.split("/")[:-1]
    model.dirs.update("/".join(parts[: depth + 1]) for depth in range(len(parts)))
    model.files[dest] = data
    model.remember(session, dest, data)
    return Prediction.ok()


class DeleteMoveMachine(WorkspaceMachine):
    """Delete and Move of files: preconditions, no clobber, all or nothing under crashes,
    injected I/O errors and power cuts (a cut after the call returned keeps its change).

    No rewind rule here: Delete and Move record their snapshots under message ids of
    their own (``delete-…``, ``move-…``), which the model's history does not know."""

    paths: ClassVar[tuple[str, ...]] = ("a.txt", "b.txt", "d/c.txt", "d/e.txt", "n/m/f.txt")

    @rule(session=st.sampled_from(SESSIONS), read_first=reads_first, path=st.sampled_from(paths))
    def delete(self, session: str, read_first: bool, path: str) -> None:
        self.maybe_read(session, path, read_first)
        self.engine(
            {"call": "delete", "session": session, "path": path, "kind": "file"},
            lambda m: _predict_delete(m, session, path),
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(paths),
        dest=st.sampled_from(paths),
    )
    def move(self, session: str, read_first: bool, path: str, dest: str) -> None:
        self.maybe_read(session, path, read_first)
        if path == dest:
            return
        self.engine(
            {"call": "move", "session": session, "path": path, "dest": dest},
            lambda m: _predict_move(m, session, path, dest),
        )

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths), at=crash_points)
    def crash_during_delete(self, session: str, path: str, at: float) -> None:
        self.maybe_read(session, path, True)
        self.crash(
            {"call": "delete", "session": session, "path": path, "kind": "file"},
            lambda m: _predict_delete(m, session, path),
            at,
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(paths),
        dest=st.sampled_from(paths),
        at=crash_points,
    )
    def crash_during_move(self, session: str, path: str, dest: str, at: float) -> None:
        self.maybe_read(session, path, True)
        if path == dest:
            return
        self.crash(
            {"call": "move", "session": session, "path": path, "dest": dest},
            lambda m: _predict_move(m, session, path, dest),
            at,
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(paths),
        dest=st.sampled_from(paths),
        at=fail_points,
        errno_name=st.sampled_from(ERRNOS),
    )
    def io_error_during_move(
        self, session: str, path: str, dest: str, at: float, errno_name: str
    ) -> None:
        self.maybe_read(session, path, True)
        if path == dest:
            return
        self.fail_io(
            {"call": "move", "session": session, "path": path, "dest": dest},
            lambda m: _predict_move(m, session, path, dest),
            at,
            errno_name,
        )

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths), data=st.data())
    def power_loss_during_delete(self, session: str, path: str, data: st.DataObject) -> None:
        self.maybe_read(session, path, True)
        self.power_loss(
            {"call": "delete", "session": session, "path": path, "kind": "file"},
            lambda m: _predict_delete(m, session, path),
            data,
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(paths),
        dest=st.sampled_from(paths),
        data=st.data(),
    )
    def power_loss_during_move(
        self, session: str, path: str, dest: str, data: st.DataObject
    ) -> None:
        self.maybe_read(session, path, True)
        if path == dest:
            return
        self.power_loss(
            {"call": "move", "session": session, "path": path, "dest": dest},
            lambda m: _predict_move(m, session, path, dest),
            data,
        )


# -- snapshots and rewind ---------------------------------------------------------------------


class RewindMachine(WorkspaceMachine):
    """Changes with message ids, rewinds, conflicts; crashes and cuts during rewind."""

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0

    def next_message(self) -> str:
        self.counter += 1
        return f"m{self.counter}"

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(WorkspaceMachine.paths),
        text=contents,
    )
    def write(self, session: str, read_first: bool, path: str, text: str) -> None:
        self.maybe_read(session, path, read_first)
        message = self.next_message()
        self.engine(
            write_step(session, path, text, message),
            lambda m: m.write(session, path, text.encode("utf-8"), message),
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        read_first=reads_first,
        path=st.sampled_from(WorkspaceMachine.paths),
        data=st.data(),
    )
    def edit(self, session: str, read_first: bool, path: str, data: st.DataObject) -> None:
        self.maybe_read(session, path, read_first)
        old, new = self.draw_edit(data, path)
        message = self.next_message()
        self.engine(
            edit_step(session, path, old, new, message),
            lambda m: m.edit(session, path, old, new, message),
        )

    @rule(session=st.sampled_from(SESSIONS), data=st.data())
    def apply_patch(self, session: str, data: st.DataObject) -> None:
        ops = self.prepare_patch(session, data)
        message = self.next_message()
        self.engine(
            patch_step(session, ops, message), lambda m: m.apply_patch(session, ops, message)
        )

    @rule(session=st.sampled_from(SESSIONS), data=st.data(), at=crash_points)
    def crash_during_patch(self, session: str, data: st.DataObject, at: float) -> None:
        ops = self.prepare_patch(session, data)
        message = self.next_message()
        self.crash(
            patch_step(session, ops, message), lambda m: m.apply_patch(session, ops, message), at
        )

    def draw_rewind(self, data: st.DataObject) -> tuple[str, str]:
        """A session with a history, and one of the messages it recorded changes for."""
        sessions = sorted(s for s, records in self.model.history.items() if records)
        session = data.draw(st.sampled_from(sessions), label="session")
        messages = sorted(
            {r.message for r in self.model.history[session]}, key=lambda m: int(m[1:])
        )
        return session, data.draw(st.sampled_from(messages), label="message")

    def _rewind_step(self, session: str, message: str) -> dict[str, Any]:
        return {"call": "rewind", "session": session, "message_id": message}

    def has_history(self) -> bool:
        return any(self.model.history.values())

    @precondition(has_history)
    @rule(data=st.data())
    def rewind(self, data: st.DataObject) -> None:
        session, message = self.draw_rewind(data)
        self.engine(self._rewind_step(session, message), lambda m: m.rewind(session, message))

    @precondition(has_history)
    @rule(data=st.data(), at=crash_points)
    def crash_during_rewind(self, data: st.DataObject, at: float) -> None:
        session, message = self.draw_rewind(data)
        self.crash(self._rewind_step(session, message), lambda m: m.rewind(session, message), at)

    @precondition(has_history)
    @rule(data=st.data())
    def power_loss_during_rewind(self, data: st.DataObject) -> None:
        session, message = self.draw_rewind(data)
        self.power_loss(
            self._rewind_step(session, message), lambda m: m.rewind(session, message), data
        )


# -- aliasing -------------------------------------------------------------------------------


class AliasMachine(WorkspaceMachine):
    """A symlink alias (``link.txt`` -> ``a.txt``) and a hard link (``hard.txt`` = ``b.txt``)."""

    paths: ClassVar[tuple[str, ...]] = ("a.txt", "b.txt", "link.txt", "hard.txt", "d/c.txt")

    @initialize()
    def make_aliases(self) -> None:
        root = self.sandbox.root
        with open(os.path.join(root, "b.txt"), "wb") as handle:
            handle.write(b"sigma\nomega\n")
        os.symlink("a.txt", os.path.join(root, "link.txt"))
        os.link(os.path.join(root, "b.txt"), os.path.join(root, "hard.txt"))
        self.model.files["b.txt"] = self.model.files["hard.txt"] = b"sigma\nomega\n"
        self.model.links["link.txt"] = "a.txt"
        self.model.hard.append({"b.txt", "hard.txt"})
        self.steps.append({"call": "external_write", "path": "b.txt", "content": b"sigma\nomega\n"})
        self.steps.append({"call": "symlink", "path": "link.txt", "target": "a.txt"})
        self.steps.append(
            {
                "call": "hardlink",
                "path": "hard.txt",
                "target": "b.txt",
                "expect": [self.model.tree()],
            }
        )

    read, write, edit, crash_during_write = path_rules(paths)

    @invariant()
    def links_stay_what_they_were(self) -> None:
        link = os.path.join(self.sandbox.root, "link.txt")
        if not os.path.islink(link):
            self.fail(None, ["link.txt is no longer a symlink (a write replaced the link)"])


class CaseAliasMachine(WorkspaceMachine):
    """Case-insensitive file systems: ``A.txt`` and ``a.txt`` name one file (pyfakefs only)."""

    memory = True
    paths: ClassVar[tuple[str, ...]] = ("a.txt", "A.TXT", "d/c.txt", "D/C.txt")

    def model_path(self, path: str) -> str:
        return _fold(path)

    read, write, edit, crash_during_write = path_rules(paths)


def _fold(path: str) -> str:
    """The spelling the file has on disk (the model names files as they were created)."""
    return {"A.TXT": "a.txt", "D/C.txt": "d/c.txt"}.get(path, path)


MACHINES: tuple[type[WorkspaceMachine], ...] = (
    EditSequenceMachine,
    PatchMachine,
    RewindMachine,
    AliasMachine,
    CaseAliasMachine,
    DeleteMoveMachine,
)
