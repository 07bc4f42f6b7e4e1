"""Running scenarios: a sandbox on disk, steps with faults, and restarts.

* ``Sandbox``: a base directory with the workspace root (``ws``) and its state
  directory (``state``), reset to a scenario's initial tree between runs.
* ``Runner``: drives one ``Workspace`` through a scenario's steps. A step may carry a
  fault; after a crash or a power cut the runner *restarts*: it opens a fresh
  ``Workspace`` over the same directories, whose constructor runs recovery, exactly
  as a new process would. In-memory state (read records) does not survive a restart.
* ``InMemoryFileSystem``: the port for runs under pyfakefs.

The checks of a faulted step are in ``checks``, runs of several processes in ``phases``;
``harness`` gathers all three.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import importlib
import itertools
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection.faultfs import (
    CrashAt,
    FailAt,
    FaultPlan,
    FaultyFileSystem,
    Observer,
    OpEvent,
    OpRecord,
    SimulatedCrash,
)
from editspec.fault_injection.powerloss import (
    Image,
    PowerState,
    TraceOp,
    TraceRecorder,
    journal_leftovers,
    materialize,
    state_of_fault,
)
from editspec.fault_injection.scenario import Outcome, perform
from editspec.reference import FileSystem, Workspace

FileSystemFactory = Callable[[], FileSystem]
WorkspaceFactory = Callable[[str, str, FileSystem], Workspace]

#: The engine modules that touch files: imported before an in-memory file system (pyfakefs)
#: starts to patch, so that its patch reaches them.
ENGINE_MODULES = (
    "tools._read",
    "tools._write",
    "tools._edit",
    "tools._disk",
    "patch._patch",
    "patch._patch_commit",
    "snapshots._rewind",
    "transactions._transaction",
    "transactions._recovery",
    "transactions._journal",
    "snapshots._snapshots",
    "tools._atomic",
    "paths._paths",
    "text._text",
    "text._diff",
)


def import_engine() -> None:
    """Import every module of ``ENGINE_MODULES`` (before an in-memory file system patches)."""
    for name in ENGINE_MODULES:
        importlib.import_module(f"editspec.reference.{name}")


def open_workspace(root: str, state_dir: str, fs: FileSystem) -> Workspace:
    """A fresh reference workspace; its constructor runs recovery."""
    return Workspace(root, state_dir, fs=fs)


class InMemoryFileSystem(FileSystem):
    """The port as the engine uses it under pyfakefs (which has no ``dir_fd`` support).

    pyfakefs's ``os.open`` (6.x) applies its ``mode`` argument to a file that already
    exists, so a plain read (default mode 0o777 & ~umask) would change the file's
    permission bits; real kernels never do. The read restores them, so comparisons of
    modes in memory mean what they mean on disk.
    """

    def __init__(self) -> None:
        super().__init__(secure_walk=False)

    def rename_noreplace(self, src: str, dst: str) -> None:
        # pyfakefs has no renameat2, and a real one would act on the real disk.
        raise OSError(_errno.ENOSYS, "no renameat2 in memory", src)

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        with _modes_kept([path]):
            return super().read_bytes(path, offset=offset, limit=limit)

    def read_bytes_unless(self, path: str, known: bytes) -> bytes:
        with _modes_kept([path]):
            return super().read_bytes_unless(path, known)

    def read_files(
        self, directory: str, names: Iterable[str], *, limit: int | None = None
    ) -> Iterator[tuple[str, bytes | OSError]]:
        wanted = list(names)
        with _modes_kept([os.path.join(directory, name) for name in wanted]):
            results = list(super().read_files(directory, wanted, limit=limit))
        return iter(results)


@contextlib.contextmanager
def _modes_kept(paths: Sequence[str]) -> Iterator[None]:
    modes = {}
    for path in paths:
        with contextlib.suppress(OSError):
            modes[path] = os.lstat(path).st_mode
    try:
        yield
    finally:
        for path, mode in modes.items():
            with contextlib.suppress(OSError):
                if os.lstat(path).st_mode != mode:
                    os.chmod(path, stat.S_IMODE(mode))


def arm_step(fs: FaultyFileSystem, fault: Mapping[str, Any]) -> None:
    """Arm ``fs`` for a ``power_loss`` fault's step: the errors of ``fail_at`` and of
    each of ``fail_again_at`` (counted from the same start, the same ``errno``), then the
    kill at ``crash_at``; any of them, or none."""
    plans: list[FaultPlan] = []
    if "fail_at" in fault:
        number = getattr(_errno, fault["errno"])
        at = [int(fault["fail_at"]), *map(int, fault.get("fail_again_at", ()))]
        plans.extend(FailAt(n, number) for n in at)
    if "crash_at" in fault:
        plans.append(CrashAt(int(fault["crash_at"])))
    if any(later.n <= earlier.n for earlier, later in itertools.pairwise(plans)):
        raise ValueError(f"the faults of a step must come in order: {plans}")
    fs.arm(plans.pop(0) if plans else None)

    def next_plan(event: OpEvent) -> None:
        # Never removed from the observers: they are being iterated over.
        if event.record.outcome.startswith("fail:") and plans:
            fs.plan = plans.pop(0)

    fs.observers.append(next_plan)


def _require_disposable(path: str) -> None:
    temp = os.path.realpath(tempfile.gettempdir())
    real = os.path.realpath(path)
    if os.path.commonpath([temp, real]) != temp or real == temp:
        raise ValueError(f"refusing to wipe {path}: sandboxes live under {temp}")


class Sandbox:
    """A workspace root and its state directory under one disposable base directory."""

    def __init__(
        self,
        base: str | os.PathLike[str],
        *,
        inner: FileSystemFactory = FileSystem,
        workspace: WorkspaceFactory = open_workspace,
    ) -> None:
        os.makedirs(base, exist_ok=True)
        self.base = os.path.realpath(os.fspath(base))
        self.root = os.path.join(self.base, "ws")
        self.state_dir = os.path.join(self.base, "state")
        self.inner = inner
        self.open_workspace = workspace

    def reset(self, initial: Mapping[str, trees.Entry]) -> None:
        for directory in (self.root, self.state_dir):
            _require_disposable(directory)
            if os.path.lexists(directory):
                shutil.rmtree(directory)
            os.makedirs(directory)
        trees.write(self.root, initial)

    def tree(self) -> trees.Tree:
        return trees.capture(self.root)

    def journals(self) -> list[str]:
        return journal_leftovers(self.state_dir)


@attrs.frozen
class StepReport:
    """What happened to one step: its outcome (None if it crashed) and the fault's effect."""

    outcome: Outcome | None
    crashed: bool = False
    recovery_crashed: bool = False
    power_state: PowerState | None = None
    restart_error: str | None = None


class Runner:
    """Drive one workspace through steps, injecting each step's fault."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        count: str = "mutating",
        watch: Callable[[OpEvent], None] | None = None,
        on_restart: Callable[[str], None] | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.count = count
        self.watch = watch
        self.on_restart = on_restart
        self.fs: FaultyFileSystem | None = None
        self.workspace: Workspace | None = None
        self.last_trace: tuple[TraceOp, ...] = ()  # of the last power-loss step
        self.last_log: tuple[OpRecord, ...] = ()  # its counted calls, refused ones included
        self.last_marks: tuple[tuple[int, str], ...] = ()  # (trace position, what happens)

    def _faulty(
        self, plan: FaultPlan | None = None, observers: Sequence[Observer] = ()
    ) -> FaultyFileSystem:
        fs = FaultyFileSystem(self.sandbox.inner(), plan, count=self.count)  # type: ignore[arg-type]
        if self.watch is not None:
            fs.observers.append(self.watch)
        fs.observers.extend(observers)
        return fs

    def start(self, initial: Mapping[str, trees.Entry]) -> None:
        self.sandbox.reset(initial)
        self.restart("start")

    def restart(
        self, why: str, plan: FaultPlan | None = None, observers: Sequence[Observer] = ()
    ) -> None:
        """Open a fresh workspace (recovery runs in its constructor), as a new process;
        ``observers`` see its calls from the first (a recorder of its recovery)."""
        if self.on_restart is not None:
            self.on_restart(why)
        self.workspace = None
        self.fs = self._faulty(plan, observers)
        self.workspace = self.sandbox.open_workspace(
            self.sandbox.root, self.sandbox.state_dir, self.fs
        )

    def run(self, step: Mapping[str, Any]) -> StepReport:
        assert self.fs is not None and self.workspace is not None
        fault = step.get("fault")
        if fault is None:
            return StepReport(perform(self.workspace, step, self.sandbox.root))
        kind = fault["kind"]
        if kind == "fail":
            number = getattr(_errno, fault["errno"])
            self.fs.arm(FailAt(int(fault["at"]), number))
            outcome = perform(self.workspace, step, self.sandbox.root)
            self.fs.arm(None)
            return StepReport(outcome)
        if kind == "power_loss":
            return self._power_loss(step, fault)
        if kind not in ("crash", "recovery_crash"):
            raise ValueError(f"unknown fault kind {kind!r}")
        self.fs.arm(CrashAt(int(fault["at"])))
        crash_outcome: Outcome | None = None
        with contextlib.suppress(SimulatedCrash):
            crash_outcome = perform(self.workspace, step, self.sandbox.root)
        recovery_crashed = False
        if crash_outcome is None and kind == "recovery_crash":
            try:
                self.restart("crash", CrashAt(int(fault["recovery_at"])))
            except SimulatedCrash:
                recovery_crashed = True
        if crash_outcome is not None:
            self.fs.arm(None)  # the plan's point was never reached
            return StepReport(crash_outcome)
        report = self._restart_checked("crash during recovery" if recovery_crashed else "crash")
        return attrs.evolve(report, crashed=True, recovery_crashed=recovery_crashed)

    def _power_loss(self, step: Mapping[str, Any], fault: Mapping[str, Any]) -> StepReport:
        recorded = self.record_faulted(step, fault)
        state = state_of_fault(recorded.image, recorded.trace, fault)
        materialize(state, [self.sandbox.root, self.sandbox.state_dir])
        report = self._restart_checked("power loss")
        if recorded.errors and report.restart_error is None:
            report = attrs.evolve(report, restart_error="; ".join(recorded.errors))
        crashed = recorded.outcome is None
        return attrs.evolve(report, outcome=recorded.outcome, power_state=state, crashed=crashed)

    def record_faulted(self, step: Mapping[str, Any], fault: Mapping[str, Any]) -> FaultedRun:
        """Run ``step`` with a ``power_loss`` fault's failures and kill (``arm_step``) up
        to the cut, recording its trace. If it is killed (or the fault lists
        ``recoveries``: the process exits after its answer), each of ``recoveries`` (by
        default one) is a fresh workspace that recovers, its ``fail_at`` call failing,
        their calls recorded into the same trace: processes started after the first
        ended and before the power goes, over the same page cache."""
        assert self.fs is not None and self.workspace is not None
        recorder = TraceRecorder([self.sandbox.root, self.sandbox.state_dir])
        recorder.start(self.fs)
        # A failed fsync is in the trace as failed (what it covered stays lossy), any
        # other failed call is not.
        arm_step(self.fs, fault)
        outcome: Outcome | None = None
        with contextlib.suppress(SimulatedCrash):
            outcome = perform(self.workspace, step, self.sandbox.root)
        self.last_log = tuple(self.fs.log)
        self.fs.arm(None)
        recorder.stop()
        marks: list[tuple[int, str]] = []
        errors: list[str] = []
        if outcome is None or "recoveries" in fault:
            ended = "is killed" if outcome is None else f"answers {outcome.code} and exits"
            marks.append((len(recorder.ops), f"the process {ended} here"))
            errors = self._recover_recorded(recorder, fault.get("recoveries", [{}]), marks)
        self.last_marks = tuple(marks)
        self.last_trace = tuple(recorder.ops)
        return FaultedRun(outcome, recorder.image, self.last_trace, self.last_marks, tuple(errors))

    def _recover_recorded(
        self,
        recorder: TraceRecorder,
        recoveries: Sequence[Mapping[str, Any]],
        marks: list[tuple[int, str]],
    ) -> list[str]:
        """Open a workspace per ``recoveries`` entry, recording its calls; the errors of
        those that were to succeed (an entry with ``fail_at`` may fail)."""
        errors: list[str] = []
        for number, recovery in enumerate(recoveries, 1):
            plan = None
            if "fail_at" in recovery:
                plan = FailAt(int(recovery["fail_at"]), getattr(_errno, recovery["errno"]))
            marks.append((len(recorder.ops), f"recovery {number}: a fresh workspace opens"))
            try:
                self.restart(f"crash (recovery {number} of {len(recoveries)})", plan, [recorder])
            except Exception as exc:  # expected of a recovery with an injected failure
                self.workspace = None
                if plan is None:
                    errors.append(f"recovery {number} before the power cut: {exc}")
            finally:
                if self.fs is not None:
                    self.fs.observers.remove(recorder)
        return errors

    def _restart_checked(self, why: str) -> StepReport:
        try:
            self.restart(why)
        except Exception as exc:  # recovery that raises is a finding, reported by the caller
            self.workspace = None
            return StepReport(None, restart_error=f"{type(exc).__name__}: {exc}")
        return StepReport(None)

    def clean(self, step: Mapping[str, Any]) -> tuple[Outcome, int]:
        """Run ``step`` without a fault; its outcome and how many operations it counted."""
        assert self.fs is not None and self.workspace is not None
        self.fs.arm(None)
        return perform(self.workspace, step, self.sandbox.root), self.fs.count

    def cut_power(self, state: PowerState) -> StepReport:
        """The power goes: ``state`` is what the disk kept; a fresh workspace recovers."""
        materialize(state, [self.sandbox.root, self.sandbox.state_dir])
        return self._restart_checked("power loss")

    def record(self, step: Mapping[str, Any]) -> Recorded:
        """Run ``step`` without a fault, recording its trace for the power-loss model."""
        assert self.fs is not None and self.workspace is not None
        recorder = TraceRecorder([self.sandbox.root, self.sandbox.state_dir])
        recorder.start(self.fs)
        self.fs.arm(None)
        try:
            outcome = perform(self.workspace, step, self.sandbox.root)
        finally:
            recorder.stop()
        return Recorded(outcome, self.fs.count, recorder.image, tuple(recorder.ops))

    def recovery_count(self, step: Mapping[str, Any], at: int) -> int:
        """Crash ``step`` at counted operation ``at``; the counted operations of the recovery."""
        assert self.fs is not None
        self.fs.arm(CrashAt(at))
        with contextlib.suppress(SimulatedCrash):
            perform(self.workspace, step, self.sandbox.root)
        self.restart("crash")
        assert self.fs is not None
        return self.fs.count

    def close(self) -> None:
        """Nothing to release: a workspace holds no descriptor between calls."""

    @property
    def checks_journals(self) -> bool:
        """Whether a journal left under ``<state_dir>/journal`` is a problem: always here."""
        return True


@attrs.frozen
class FaultedRun:
    """A step run with a ``power_loss`` fault up to the cut (``Runner.record_faulted``)."""

    outcome: Outcome | None  # None: it was killed ("crash_at")
    image: Image
    trace: tuple[TraceOp, ...]  # the step's calls, then those of the recoveries
    marks: tuple[tuple[int, str], ...]  # where its process ended, where each recovery began
    errors: tuple[str, ...]  # recoveries without an injected failure that raised

    @property
    def ended_at(self) -> int | None:
        """The trace position where the step's process ended (None: no recovery followed)."""
        return self.marks[0][0] if self.marks else None


@attrs.frozen
class Recorded:
    """A clean run of one step: its outcome, counted operations and power-loss trace."""

    outcome: Outcome
    count: int
    image: Image
    trace: tuple[TraceOp, ...]
