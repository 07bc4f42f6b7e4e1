"""The machinery shared by the state machines in ``machines``: strategies, the base machine.

``WorkspaceMachine`` owns a ``harness.Sandbox`` and a ``harness.Runner``, a pure ``Model``,
and the recorded steps of the run. ``engine`` runs a step without a fault and compares
the outcome with the model's prediction; ``crash``, ``fail_io`` and ``power_loss`` run it
with a fault, restart (a fresh workspace recovers) and ``settle`` the model on the tree
the disk holds, which must be the model's before or after. Every failure is saved as a
replayable scenario before the assertion is raised.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from editspec.fault_injection import harness, trees
from editspec.fault_injection._machine_steps import (
    SESSIONS,
    WORDS,
    contents,
    draw_patch,
    edit_step,
    write_step,
)
from editspec.fault_injection.model import Model, Prediction
from editspec.fault_injection.powerloss import states_at
from editspec.fault_injection.scenario import Scenario, perform
from editspec.reference import FileSystem


def failure_dir() -> str:
    return os.environ.get("EDITSPEC_FAILURES") or os.path.join(
        tempfile.gettempdir(), "editspec-failures"
    )


class WorkspaceMachine(RuleBasedStateMachine):
    """Shared machinery: sandbox, runner, model, faults, recording, invariants."""

    memory: ClassVar[bool] = False
    #: Set by tests that run a machine under pyfakefs: writing a failure scenario pauses
    #: it, so the file lands on the real disk.
    active_patcher: ClassVar[Any] = None
    #: How a (re)started process opens its workspace; a test may substitute a broken one.
    open_workspace: ClassVar[harness.WorkspaceFactory] = staticmethod(harness.open_workspace)
    initial_files: ClassVar[Mapping[str, bytes]] = {
        "a.txt": b"alpha\ngamma\n",
        "d/c.txt": b"delta\nomega\ndelta\n",
    }
    initial_dirs: ClassVar[frozenset[str]] = frozenset({"d"})
    paths: ClassVar[tuple[str, ...]] = ("a.txt", "b.txt", "d/c.txt", "d/e.txt")
    #: ``module:factory`` of a ``python_fs`` driver to drive through the contract instead
    #: of the reference through its port (``driver_runner``); faults then count its
    #: mutating ``os`` calls.
    driver: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()
        self.base = tempfile.mkdtemp(prefix="editspec-machine-")
        self.sandbox = harness.Sandbox(
            self.base,
            inner=harness.InMemoryFileSystem if self.memory else FileSystem,
            workspace=type(self).open_workspace,
        )
        self.runner = harness.make_runner(self.sandbox, self.driver)
        self.model = Model(files=dict(self.initial_files), dirs=set(self.initial_dirs))
        self.initial = self.model.tree()
        self.steps: list[dict[str, Any]] = []
        self.typical: dict[str, int] = {}  # counted operations of a clean run, per call
        self.runner.start(self.initial)

    def teardown(self) -> None:
        self.runner.close()
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
        actual = trees.without_modes(self.sandbox.tree())
        pause: Any = contextlib.nullcontext()
        if WorkspaceMachine.active_patcher is not None:
            # only machines run under pyfakefs need it (imported when one is)
            from pyfakefs.fake_filesystem_unittest import Pause

            pause = Pause(WorkspaceMachine.active_patcher)
        # The file lands on the real disk, and the versions are read from it: importlib's
        # metadata caches the paths it looks at, which must not be pyfakefs's.
        with pause:
            scenario = Scenario(
                name=type(self).__name__,
                description=f"shrunk failure of the {type(self).__name__} state machine",
                initial=self.initial,
                steps=tuple(steps),
                expected=tuple(expected),
                actual=actual,
                problems=tuple(problems),
                driver=self.driver,
            )
            path = os.path.join(failure_dir(), f"{type(self).__name__}.json")
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
        outcome, count = self.runner.clean(step)
        if outcome.ok:
            self.typical[step["call"]] = max(self.typical.get(step["call"], 0), count)
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
        clean = self.runner.record(step)
        outcome = clean.outcome
        if outcome.code not in prediction.codes:
            self.fail(
                step,
                [
                    f"{step['call']} returned {outcome.code}; the model expects "
                    f"one of {sorted(prediction.codes)}"
                ],
                prediction_codes=prediction.codes,
            )
        point = data.draw(st.integers(0, len(clean.trace)), label="power cut after")
        states, _ = states_at(clean.image, clean.trace, point, model, limit=64)  # type: ignore[arg-type]
        state = data.draw(st.sampled_from(states), label="power-loss state")
        faulted = {
            **step,
            "fault": {
                **harness.power_fault(state, model),  # type: ignore[arg-type]
                "step": len(self.steps),
            },
        }
        report = self.runner.cut_power(state)
        done = after if outcome.ok else before
        if point >= len(clean.trace):
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

    def model_path(self, path: str) -> str:
        """The name the model keeps a path under (case folding, see CaseAliasMachine)."""
        return path

    def draw_edit(self, data: st.DataObject, path: str) -> tuple[str, str]:
        """An old and a new string: usually a line of the file, now and then one it lacks."""
        key = self.model.canonical(self.model_path(path))
        present = self.model.files.get(key, b"").decode("utf-8").splitlines()
        candidates = [*sorted(set(present)), "zulu"] if present else [*WORDS, "zulu"]
        old = data.draw(st.sampled_from(candidates), label="old line")
        new = data.draw(st.sampled_from(WORDS), label="new line")
        return old + "\n", new + "\n"

    def maybe_read(self, session: str, path: str, read_first: bool) -> None:
        """Read ``path`` first (a separate recorded step) when asked and when it exists."""
        if read_first and self.model.canonical(self.model_path(path)) in self.model.files:
            self.read(session, path)

    def write_rule(self, session: str, read_first: bool, path: str, text: str) -> None:
        """The body of a machine's ``write`` rule (its paths are the machine's own)."""
        self.maybe_read(session, path, read_first)
        self.engine(
            write_step(session, path, text),
            lambda m: m.write(session, self.model_path(path), text.encode("utf-8")),
        )

    def edit_rule(self, session: str, read_first: bool, path: str, data: st.DataObject) -> None:
        """The body of a machine's ``edit`` rule."""
        self.maybe_read(session, path, read_first)
        old, new = self.draw_edit(data, path)
        self.engine(
            edit_step(session, path, old, new),
            lambda m: m.edit(session, self.model_path(path), old, new),
        )

    def crash_during_write_rule(
        self, session: str, read_first: bool, path: str, text: str, at: float
    ) -> None:
        """The body of a machine's ``crash_during_write`` rule."""
        self.maybe_read(session, path, read_first)
        self.crash(
            write_step(session, path, text),
            lambda m: m.write(session, self.model_path(path), text.encode("utf-8")),
            at,
        )

    # -- shared rules --------------------------------------------------------------------

    @rule(session=st.sampled_from(SESSIONS), path=st.sampled_from(paths))
    def read(self, session: str, path: str) -> None:
        step = {"call": "read", "session": session, "path": path}
        self.engine(step, lambda m: m.read(session, self.model_path(path)))

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
        leftovers = self.sandbox.journals() if self.runner.checks_journals else []
        if leftovers:
            self.fail(None, ["a journal is left after the operation: " + ", ".join(leftovers)])
