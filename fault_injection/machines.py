"""Hypothesis state machines: the engine and a pure model in lockstep, with faults.

One ``RuleBasedStateMachine`` per concern (CONVENTIONS "State machines"):

* ``EditSequenceMachine``: reads, writes and edits by two sessions, external writers
  (including a change that keeps size and mtime), crash, I/O errors and power loss
  during a write or an edit;
* ``PatchMachine``: valid and invalid multi-file patches (add, delete, update, move into
  new directories), crash at op k, I/O errors and power loss during a patch;
* ``RewindMachine``: changes with message ids, external changes, rewind (CONFLICT when
  the history is broken), crash and power loss during a rewind or a patch;
* ``AliasMachine``: a symlink alias and a hard link: tracking and writes through an
  alias, hard links replaced one name at a time, crash during writes;
* ``CaseAliasMachine``: on a case-insensitive file system (pyfakefs emulating macOS),
  two spellings of one file share one read record.

Each machine owns a ``harness.Sandbox`` (a real temporary directory, or an in-memory
one when ``memory`` is set and the test runs under pyfakefs) and a ``harness.Runner``;
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
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from editspec.fault_injection import harness, trees
from editspec.fault_injection.model import Model, Prediction
from editspec.fault_injection.powerloss import TraceRecorder, materialize, states_at
from editspec.fault_injection.scenario import Scenario, perform
from editspec.reference import FileSystem

WORDS = ("alpha", "gamma", "delta", "omega", "sigma")  # same length: same-size rewrites
SESSIONS = ("s1", "s2")
ERRNOS = ("ENOSPC", "EIO", "EACCES", "EXDEV", "EROFS")

lines = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)
contents = st.one_of(
    lines.map(lambda words: "".join(w + "\n" for w in words)),
    # Now and then a file larger than a 4 KiB block, so power cuts can tear its data.
    st.tuples(st.sampled_from(WORDS), st.integers(700, 1000)).map(lambda t: (t[0] + "\n") * t[1]),
)
# Where a fault lands, as a fraction of the operations the same call issued last time it
# ran cleanly in this machine (``WorkspaceMachine.point``), so faults spread over the
# whole publish instead of bunching at its first operations.
crash_points = st.floats(min_value=0.0, max_value=1.0, exclude_max=True)
fail_points = crash_points


def failure_dir() -> str:
    return os.environ.get("EDITSPEC_FAILURES") or os.path.join(
        tempfile.gettempdir(), "editspec-failures"
    )


#: Set by tests that run a machine under pyfakefs: writing a failure scenario pauses it,
#: so the file lands on the real disk.
ACTIVE_PATCHER: Any = None


class WorkspaceMachine(RuleBasedStateMachine):
    """Shared machinery: sandbox, runner, model, faults, recording, invariants."""

    memory: ClassVar[bool] = False
    #: How a (re)started process opens its workspace; a test may substitute a broken one.
    open_workspace: ClassVar[harness.WorkspaceFactory] = staticmethod(harness.open_workspace)
    initial_files: ClassVar[Mapping[str, bytes]] = {
        "a.txt": b"alpha\ngamma\n",
        "d/c.txt": b"delta\nomega\ndelta\n",
    }
    initial_dirs: ClassVar[frozenset[str]] = frozenset({"d"})
    paths: ClassVar[tuple[str, ...]] = ("a.txt", "b.txt", "d/c.txt", "d/e.txt")

    def __init__(self) -> None:
        super().__init__()
        self.base = tempfile.mkdtemp(prefix="editspec-machine-")
        self.sandbox = harness.Sandbox(
            self.base,
            inner=harness.InMemoryFileSystem if self.memory else FileSystem,
            workspace=type(self).open_workspace,
        )
        self.runner = harness.Runner(self.sandbox)
        self.model = Model(files=dict(self.initial_files), dirs=set(self.initial_dirs))
        self.initial = self.model.tree()
        self.steps: list[dict[str, Any]] = []
        self.typical: dict[str, int] = {}  # counted operations of a clean run, per call
        self.runner.start(self.initial)

    def teardown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    # -- recording and failing ---------------------------------------------------------

    def fail(
        self,
        step: Mapping[str, Any] | None,
        problems: Sequence[str],
        expected: Sequence[trees.Tree] = (),
        prediction_codes: frozenset[str] | None = None,
    ) -> None:
        steps = [*self.steps, *([dict(step)] if step is not None else [])]
        if step is not None and prediction_codes is not None:
            steps[-1]["outcomes"] = sorted(prediction_codes)
        scenario = Scenario(
            name=type(self).__name__,
            description=f"shrunk failure of the {type(self).__name__} state machine",
            initial=self.initial,
            steps=tuple(steps),
            expected=tuple(expected),
            actual=trees.without_modes(self.sandbox.tree()),
            problems=tuple(problems),
        )
        path = os.path.join(failure_dir(), f"{type(self).__name__}.json")
        if ACTIVE_PATCHER is not None:
            from pyfakefs.fake_filesystem_unittest import Pause

            with Pause(ACTIVE_PATCHER):
                scenario.save(path)
        else:
            scenario.save(path)
        raise AssertionError("\n".join([*problems, f"scenario saved: {path}"]))

    def disk(self) -> trees.Tree:
        actual = trees.without_modes(self.sandbox.tree())
        strays = set(harness.stray_temp_files(actual))
        return {path: entry for path, entry in actual.items() if path not in strays}

    def point(self, call: str, fraction: float) -> int:
        """The counted operation a fault hits: ``fraction`` of a typical clean run."""
        return 1 + int(fraction * self.typical.get(call, 40))

    # -- driving the engine -------------------------------------------------------------

    def engine(self, step: dict[str, Any], predict: Callable[[Model], Prediction]) -> None:
        """Run ``step`` without a fault; the engine's outcome must be one the model allows."""
        after = self.model.copy()
        prediction = predict(after)
        assert self.runner.workspace is not None and self.runner.fs is not None
        self.runner.fs.arm(None)
        outcome = perform(self.runner.workspace, step, self.sandbox.root)
        if outcome.ok:
            self.typical[step["call"]] = max(
                self.typical.get(step["call"], 0), self.runner.fs.count
            )
        event(f"{step['call']}: {outcome.code}")
        if outcome.code not in prediction.codes:
            self.fail(
                step,
                [
                    f"{step['call']} returned {outcome.code} ({outcome.message}); "
                    f"the model expects one of {sorted(prediction.codes)}"
                ],
                prediction_codes=prediction.codes,
            )
        if outcome.ok:
            self.model = after
        self.steps.append(
            {**step, "expect": [self.model.tree()], "outcomes": sorted(prediction.codes)}
        )

    def crash(
        self, step: dict[str, Any], predict: Callable[[Model], Prediction], fraction: float
    ) -> None:
        """Crash ``step`` at one of its counted operations, restart, and settle the model."""
        at = self.point(step["call"], fraction)
        before, after = self.model, self.model.copy()
        prediction = predict(after)
        if self.indistinguishable(before, after):
            self.engine(step, predict)
            return
        faulted = {**step, "fault": {"kind": "crash", "step": len(self.steps), "at": at}}
        report = self.runner.run(faulted)
        event(f"crash during {step['call']}: " + ("crashed" if report.crashed else "no crash"))
        if not report.crashed:
            assert report.outcome is not None
            if report.outcome.code not in prediction.codes:
                self.fail(
                    faulted,
                    [
                        f"{step['call']} returned {report.outcome.code}; "
                        f"the model expects one of {sorted(prediction.codes)}"
                    ],
                    prediction_codes=prediction.codes,
                )
            if report.outcome.ok:
                self.model = after
            self.steps.append({**faulted, "expect": [self.model.tree()]})
            return
        self.settle(faulted, report, before, after if prediction.succeeds else before)

    def fail_io(
        self,
        step: dict[str, Any],
        predict: Callable[[Model], Prediction],
        fraction: float,
        errno_name: str,
    ) -> None:
        """An injected I/O error: an error leaves everything as before; success, as after."""
        at = self.point(step["call"], fraction)
        after = self.model.copy()
        prediction = predict(after)
        faulted = {
            **step,
            "fault": {"kind": "fail", "step": len(self.steps), "at": at, "errno": errno_name},
        }
        report = self.runner.run(faulted)
        assert report.outcome is not None
        assert self.runner.workspace is not None
        event(f"{errno_name} during {step['call']}: {report.outcome.code}")
        self.runner.workspace.recover()  # a rollback that could not finish is finished here
        self.steps.append(faulted)
        self.steps.append({"call": "recover"})
        if report.outcome.ok:
            if not prediction.succeeds:
                self.fail(
                    None,
                    [f"{step['call']} succeeded; the model expects {sorted(prediction.codes)}"],
                )
            self.model = after
        self.check_disk([self.model.tree()], "after an injected error and recover()")
        self.steps[-1]["expect"] = [self.model.tree()]

    def power_loss(
        self,
        step: dict[str, Any],
        predict: Callable[[Model], Prediction],
        data: st.DataObject,
        model: str = "ordered",
    ) -> None:
        """Run ``step`` cleanly, cut the power at a drawn point, restart, settle the model."""
        before, after = self.model, self.model.copy()
        prediction = predict(after)
        if self.indistinguishable(before, after):
            self.engine(step, predict)
            return
        fs = self.runner.fs
        assert fs is not None and self.runner.workspace is not None
        recorder = TraceRecorder([self.sandbox.root, self.sandbox.state_dir])
        recorder.start(fs)
        fs.arm(None)
        outcome = perform(self.runner.workspace, step, self.sandbox.root)
        recorder.stop()
        if outcome.code not in prediction.codes:
            self.fail(
                step,
                [
                    f"{step['call']} returned {outcome.code}; the model expects "
                    f"one of {sorted(prediction.codes)}"
                ],
                prediction_codes=prediction.codes,
            )
        point = data.draw(st.integers(0, len(recorder.ops)), label="power cut after")
        states, _ = states_at(recorder.image, recorder.ops, point, model, limit=64)  # type: ignore[arg-type]
        state = data.draw(st.sampled_from(states), label="power-loss state")
        materialize(state, recorder.roots)
        faulted = {
            **step,
            "fault": {
                **harness.power_fault(state, model),  # type: ignore[arg-type]
                "step": len(self.steps),
            },
        }
        report = self.runner._restart_checked("power loss")
        done = after if outcome.ok else before
        if point >= len(recorder.ops):
            self.settle(faulted, report, done, done)
        else:
            self.settle(faulted, report, before, done)

    @staticmethod
    def indistinguishable(before: Model, after: Model) -> bool:
        """The disk cannot tell whether a change that moves only the history happened.

        (A rewind that restores nothing still marks records as undone.) After a fault the
        model could not know which history the engine kept, so such steps run unfaulted.
        """
        return before.tree() == after.tree() and before.history != after.history

    def settle(
        self, step: dict[str, Any], report: harness.StepReport, before: Model, after: Model
    ) -> None:
        """After a restart the disk is all-before or all-after; the model follows it."""
        acceptable = [before.tree(), after.tree()]
        if report.restart_error is not None:
            self.fail(step, [f"recovery failed: {report.restart_error}"], acceptable)
        disk = self.disk()
        fault = step["fault"]["kind"]
        if trees.equal(disk, acceptable[1]):
            self.model = after.copy()
            event(
                f"{fault} during {step['call']}: recovered to "
                + ("after" if acceptable[0] != acceptable[1] else "unchanged")
            )
        elif trees.equal(disk, acceptable[0]):
            self.model = before.copy()
            event(f"{fault} during {step['call']}: recovered to before")
        else:
            closest = min(acceptable, key=lambda tree: len(trees.diff(tree, disk)))
            self.fail(
                step,
                [
                    "after recovery the disk is neither all-before nor all-after:",
                    *("  " + line for line in trees.diff(closest, disk)),
                ],
                acceptable,
            )
        self.model.forget_all_reads()
        self.steps.append({**step, "expect": acceptable})

    def check_disk(self, acceptable: Sequence[trees.Tree], when: str) -> None:
        disk = self.disk()
        if not any(trees.equal(disk, tree) for tree in acceptable):
            self.fail(
                None,
                [
                    f"{when}: the disk differs from the model:",
                    *("  " + line for line in trees.diff(acceptable[0], disk)),
                ],
                acceptable,
            )

    def prepare_patch(self, session: str, data: st.DataObject) -> list[dict[str, str]]:
        """Draw a patch; usually read its existing files first, as an agent would."""
        ops = draw_patch(data, self.model)
        if data.draw(st.sampled_from((True,) * 9 + (False,)), label="read first"):
            for path in sorted({op["path"] for op in ops if op["path"] in self.model.files}):
                self.read(session, path)
        return ops

    # -- shared rules --------------------------------------------------------------------

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths))
    def read(self, session: str, path: str) -> None:
        step = {"call": "read", "session": session, "path": path}
        self.engine(step, lambda m: m.read(session, path))

    @precondition(lambda self: bool(self.model.files))
    @rule(data=st.data(), keep_size_and_mtime=st.booleans())
    def external_write(self, data: st.DataObject, keep_size_and_mtime: bool) -> None:
        path = data.draw(st.sampled_from(sorted(self.model.files)), label="path")
        old = self.model.files[self.model.canonical(path)]
        if keep_size_and_mtime:
            # Same size, same mtime: only the content hash can tell (TRACK).
            words = old.decode("utf-8").splitlines()
            index = data.draw(st.integers(0, len(words) - 1), label="line")
            words[index] = data.draw(st.sampled_from(WORDS), label="word")
            new = "".join(w + "\n" for w in words).encode("utf-8")
        else:
            new = data.draw(contents, label="content").encode("utf-8")
        step = {
            "call": "external_write",
            "path": path,
            "content": new,
            "keep_mtime": keep_size_and_mtime,
        }
        harness_outcome = perform(self.runner.workspace, step, self.sandbox.root)
        assert harness_outcome.ok
        self.model.external_write(path, new)
        self.steps.append({**step, "expect": [self.model.tree()]})

    @invariant()
    def disk_matches_model(self) -> None:
        self.check_disk([self.model.tree()], "invariant")

    @invariant()
    def no_journal_is_left(self) -> None:
        leftovers = self.sandbox.journals()
        if leftovers:
            self.fail(None, ["a journal is left after the operation: " + ", ".join(leftovers)])


# -- edit sequences ---------------------------------------------------------------------------


def _write_step(session: str, path: str, text: str, message: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"call": "write", "session": session, "path": path, "content": text}
    if message is not None:
        step["message_id"] = message
    return step


def _edit_step(
    session: str, path: str, old: str, new: str, message: str | None = None
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "call": "edit",
        "session": session,
        "path": path,
        "edits": [{"old_string": old, "new_string": new}],
    }
    if message is not None:
        step["message_id"] = message
    return step


edit_words = st.tuples(st.sampled_from((*WORDS, "zulu")), st.sampled_from(WORDS))


class EditSequenceMachine(WorkspaceMachine):
    """Writes and edits by two sessions against external writers, with faults."""

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(WorkspaceMachine.paths),
        text=contents,
    )
    def write(self, session: str, path: str, text: str) -> None:
        self.engine(
            _write_step(session, path, text), lambda m: m.write(session, path, text.encode("utf-8"))
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(WorkspaceMachine.paths),
        words=edit_words,
    )
    def edit(self, session: str, path: str, words: tuple[str, str]) -> None:
        old, new = words[0] + "\n", words[1] + "\n"
        self.engine(_edit_step(session, path, old, new), lambda m: m.edit(session, path, old, new))

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(WorkspaceMachine.paths),
        text=contents,
        at=crash_points,
    )
    def crash_during_write(self, session: str, path: str, text: str, at: float) -> None:
        self.crash(
            _write_step(session, path, text),
            lambda m: m.write(session, path, text.encode("utf-8")),
            at,
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(WorkspaceMachine.paths),
        words=edit_words,
        at=crash_points,
    )
    def crash_during_edit(self, session: str, path: str, words: tuple[str, str], at: float) -> None:
        old, new = words[0] + "\n", words[1] + "\n"
        self.crash(
            _edit_step(session, path, old, new), lambda m: m.edit(session, path, old, new), at
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(WorkspaceMachine.paths),
        text=contents,
        at=fail_points,
        errno_name=st.sampled_from(ERRNOS),
    )
    def io_error_during_write(
        self, session: str, path: str, text: str, at: float, errno_name: str
    ) -> None:
        self.fail_io(
            _write_step(session, path, text),
            lambda m: m.write(session, path, text.encode("utf-8")),
            at,
            errno_name,
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(WorkspaceMachine.paths),
        text=contents,
        data=st.data(),
    )
    def power_loss_during_write(
        self, session: str, path: str, text: str, data: st.DataObject
    ) -> None:
        self.power_loss(
            _write_step(session, path, text),
            lambda m: m.write(session, path, text.encode("utf-8")),
            data,
        )


# -- patches ---------------------------------------------------------------------------------


def patch_text(ops: Sequence[Mapping[str, str]]) -> str:
    parts = ["*** Begin Patch\n"]
    for op in ops:
        if op["op"] == "add":
            body = "".join("+" + line + "\n" for line in op["content"].splitlines())
            parts.append(f"*** Add File: {op['path']}\n{body}")
        elif op["op"] == "delete":
            parts.append(f"*** Delete File: {op['path']}\n")
        else:
            move = f"*** Move to: {op['dest']}\n" if op["op"] == "move" else ""
            parts.append(f"*** Update File: {op['path']}\n{move}@@\n-{op['old']}\n+{op['new']}\n")
    parts.append("*** End Patch\n")
    return "".join(parts)


PATCH_PATHS = ("a.txt", "b.txt", "d/c.txt", "d/e.txt", "n/f.txt", "n/m/g.txt")


def draw_patch(data: st.DataObject, model: Model) -> list[dict[str, str]]:
    """Patch operations that are valid against ``model``, now and then deliberately not."""
    ops: list[dict[str, str]] = []
    used: set[str] = set()
    for _ in range(data.draw(st.integers(1, 3), label="files")):
        existing = [p for p in PATCH_PATHS if p in model.files and p not in used]
        absent = [p for p in PATCH_PATHS if p not in model.files and p not in used]
        kinds = (["add"] if absent else []) + (["delete", "update", "move"] if existing else [])
        kind = data.draw(st.sampled_from(kinds), label="op")
        if kind == "move" and len(absent) == 0:
            kind = "update"
        if kind == "add":
            path = data.draw(st.sampled_from(absent), label="path")
            text = data.draw(lines.map(lambda words: "".join(w + "\n" for w in words)))
            ops.append({"op": "add", "path": path, "content": text})
            used.add(path)
            continue
        path = data.draw(st.sampled_from(existing), label="path")
        used.add(path)
        if kind == "delete":
            ops.append({"op": "delete", "path": path})
            continue
        old = data.draw(
            st.sampled_from(model.files[path].decode("utf-8").splitlines()), label="old"
        )
        new = data.draw(st.sampled_from([w for w in (*WORDS, "kappa") if w != old]), label="new")
        op = {"op": kind, "path": path, "old": old, "new": new}
        if kind == "move":
            op["dest"] = data.draw(st.sampled_from(absent), label="dest")
            used.add(op["dest"])
        ops.append(op)
    # One in five patches is broken on purpose: it must fail and change nothing.
    breakage = data.draw(
        st.sampled_from(("none",) * 4 + ("add-existing", "delete-missing", "twice", "no-match")),
        label="breakage",
    )
    if breakage == "add-existing" and model.files:
        ops.append({"op": "add", "path": sorted(model.files)[0], "content": "x\n"})
    elif breakage == "delete-missing":
        ops.append({"op": "delete", "path": "missing.txt"})
    elif breakage == "twice":
        ops.append(dict(ops[0]))
    elif breakage == "no-match":
        updates = [op for op in ops if op["op"] in ("update", "move")]
        if updates:
            updates[0]["old"] = "zulu"
    return ops


def _patch_step(
    session: str, ops: Sequence[Mapping[str, str]], message: str | None = None
) -> dict[str, Any]:
    step: dict[str, Any] = {"call": "apply_patch", "session": session, "patch": patch_text(ops)}
    if message is not None:
        step["message_id"] = message
    return step


class PatchMachine(WorkspaceMachine):
    """Multi-file patches, valid and invalid, all or nothing under crashes and cuts."""

    @rule(session=st.sampled_from(SESSIONS), data=st.data())
    def apply_patch(self, session: str, data: st.DataObject) -> None:
        ops = self.prepare_patch(session, data)
        self.engine(_patch_step(session, ops), lambda m: m.apply_patch(session, ops))

    @rule(session=st.sampled_from(SESSIONS), data=st.data(), at=crash_points)
    def crash_during_patch(self, session: str, data: st.DataObject, at: float) -> None:
        ops = self.prepare_patch(session, data)
        self.crash(_patch_step(session, ops), lambda m: m.apply_patch(session, ops), at)

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
            _patch_step(session, ops), lambda m: m.apply_patch(session, ops), at, errno_name
        )

    @rule(session=st.sampled_from(SESSIONS), data=st.data())
    def power_loss_during_patch(self, session: str, data: st.DataObject) -> None:
        ops = self.prepare_patch(session, data)
        self.power_loss(_patch_step(session, ops), lambda m: m.apply_patch(session, ops), data)


# -- snapshots and rewind ---------------------------------------------------------------------


class RewindMachine(WorkspaceMachine):
    """Changes with message ids, rewinds, conflicts; crashes and cuts during rewind."""

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0

    def next_message(self) -> str:
        self.counter += 1
        return f"m{self.counter}"

    def maybe_read(self, session: str, path: str, data: st.DataObject) -> None:
        if path in self.model.files and data.draw(
            st.sampled_from((True,) * 4 + (False,)), label="read first"
        ):
            self.read(session, path)

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(WorkspaceMachine.paths),
        text=contents,
        data=st.data(),
    )
    def write(self, session: str, path: str, text: str, data: st.DataObject) -> None:
        self.maybe_read(session, path, data)
        message = self.next_message()
        self.engine(
            _write_step(session, path, text, message),
            lambda m: m.write(session, path, text.encode("utf-8"), message),
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(WorkspaceMachine.paths),
        words=edit_words,
        data=st.data(),
    )
    def edit(self, session: str, path: str, words: tuple[str, str], data: st.DataObject) -> None:
        self.maybe_read(session, path, data)
        old, new = words[0] + "\n", words[1] + "\n"
        message = self.next_message()
        self.engine(
            _edit_step(session, path, old, new, message),
            lambda m: m.edit(session, path, old, new, message),
        )

    @rule(session=st.sampled_from(SESSIONS), data=st.data())
    def apply_patch(self, session: str, data: st.DataObject) -> None:
        ops = self.prepare_patch(session, data)
        message = self.next_message()
        self.engine(
            _patch_step(session, ops, message), lambda m: m.apply_patch(session, ops, message)
        )

    @rule(session=st.sampled_from(SESSIONS), data=st.data(), at=crash_points)
    def crash_during_patch(self, session: str, data: st.DataObject, at: float) -> None:
        ops = self.prepare_patch(session, data)
        message = self.next_message()
        self.crash(
            _patch_step(session, ops, message), lambda m: m.apply_patch(session, ops, message), at
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

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths))
    def read(self, session: str, path: str) -> None:
        step = {"call": "read", "session": session, "path": path}
        self.engine(step, lambda m: m.read(session, path))

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths), text=contents)
    def write(self, session: str, path: str, text: str) -> None:
        self.engine(
            _write_step(session, path, text), lambda m: m.write(session, path, text.encode("utf-8"))
        )

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths), words=edit_words)
    def edit(self, session: str, path: str, words: tuple[str, str]) -> None:
        old, new = words[0] + "\n", words[1] + "\n"
        self.engine(_edit_step(session, path, old, new), lambda m: m.edit(session, path, old, new))

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(paths),
        text=contents,
        at=crash_points,
    )
    def crash_during_write(self, session: str, path: str, text: str, at: float) -> None:
        self.crash(
            _write_step(session, path, text),
            lambda m: m.write(session, path, text.encode("utf-8")),
            at,
        )

    @invariant()
    def links_stay_what_they_were(self) -> None:
        link = os.path.join(self.sandbox.root, "link.txt")
        if not os.path.islink(link):
            self.fail(None, ["link.txt is no longer a symlink (a write replaced the link)"])


class CaseAliasMachine(WorkspaceMachine):
    """Case-insensitive file systems: ``A.txt`` and ``a.txt`` name one file (pyfakefs only)."""

    memory = True
    paths: ClassVar[tuple[str, ...]] = ("a.txt", "A.TXT", "d/c.txt", "D/C.txt")

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths))
    def read(self, session: str, path: str) -> None:
        step = {"call": "read", "session": session, "path": path}
        self.engine(step, lambda m: m.read(session, _fold(path)))

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths), text=contents)
    def write(self, session: str, path: str, text: str) -> None:
        self.engine(
            _write_step(session, path, text),
            lambda m: m.write(session, _fold(path), text.encode("utf-8")),
        )

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths), words=edit_words)
    def edit(self, session: str, path: str, words: tuple[str, str]) -> None:
        old, new = words[0] + "\n", words[1] + "\n"
        self.engine(
            _edit_step(session, path, old, new), lambda m: m.edit(session, _fold(path), old, new)
        )

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(paths),
        text=contents,
        at=crash_points,
    )
    def crash_during_write(self, session: str, path: str, text: str, at: float) -> None:
        self.crash(
            _write_step(session, path, text),
            lambda m: m.write(session, _fold(path), text.encode("utf-8")),
            at,
        )


def _fold(path: str) -> str:
    """The spelling the file has on disk (the model names files as they were created)."""
    return {"A.TXT": "a.txt", "D/C.txt": "d/c.txt"}.get(path, path)


MACHINES: tuple[type[WorkspaceMachine], ...] = (
    EditSequenceMachine,
    PatchMachine,
    RewindMachine,
    AliasMachine,
    CaseAliasMachine,
)
