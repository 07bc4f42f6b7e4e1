"""Running scenarios: a sandbox on disk, steps with faults, restarts, and the checks.

* ``Sandbox``: a base directory with the workspace root (``ws``) and its state
  directory (``state``), reset to a scenario's initial tree between runs.
* ``Runner``: drives one ``Workspace`` through a scenario's steps. A step may carry a
  fault; after a crash or a power cut the runner *restarts*: it opens a fresh
  ``Workspace`` over the same directories, whose constructor runs recovery, exactly
  as a new process would. In-memory state (read records) does not survive a restart.
* The checks of one faulted step, used by the explorer and by the tests: a clean
  ``baseline`` (trees before and after, counted operations, the trace); then
  ``check_crash`` (crash at op k, recover), ``check_power_state`` (one power-loss state,
  recover) and ``check_recovery_crash`` (crash at op k, crash again at op j of the
  recovery, recover). Each returns the problems found, as lines; none means it passed.
  After recovery the root must equal the tree before the step or the tree after it,
  byte for byte (so a leftover stage, backup or temp file is a problem), and no
  journal may be left. Once the step has issued its last operation, only the tree
  after it is acceptable: a change reported as done must survive a power cut.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import importlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection.faultfs import (
    CrashAt,
    FailAt,
    FaultPlan,
    FaultyFileSystem,
    OpEvent,
    OpRecord,
    SimulatedCrash,
)
from editspec.fault_injection.powerloss import (
    Image,
    Model,
    PowerState,
    TraceOp,
    TraceRecorder,
    journal_leftovers,
    materialize,
    power_loss_states,
    rebuild_state,
)
from editspec.fault_injection.scenario import Outcome, Scenario, perform
from editspec.reference import FileSystem, Workspace

FileSystemFactory = Callable[[], FileSystem]
WorkspaceFactory = Callable[[str, str, FileSystem], Workspace]

#: The engine modules that touch files: imported before an in-memory file system (pyfakefs)
#: starts to patch, so that its patch reaches them.
ENGINE_MODULES = (
    "tools._read",
    "tools._write",
    "tools._edit",
    "patch._patch",
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

    def _faulty(self, plan: FaultPlan | None = None) -> FaultyFileSystem:
        fs = FaultyFileSystem(self.sandbox.inner(), plan, count=self.count)  # type: ignore[arg-type]
        if self.watch is not None:
            fs.observers.append(self.watch)
        return fs

    def start(self, initial: Mapping[str, trees.Entry]) -> None:
        self.sandbox.reset(initial)
        self.restart("start")

    def restart(self, why: str, plan: FaultPlan | None = None) -> None:
        """Open a fresh workspace (recovery runs in its constructor), as a new process."""
        if self.on_restart is not None:
            self.on_restart(why)
        self.workspace = None
        self.fs = self._faulty(plan)
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
            recorder = TraceRecorder([self.sandbox.root, self.sandbox.state_dir])
            recorder.start(self.fs)
            # Optionally an I/O error first ("fail_at", "errno"): the failed call is not
            # in the trace, so the power cut sees whatever it did not make durable.
            if "fail_at" in fault:
                self.fs.arm(FailAt(int(fault["fail_at"]), getattr(_errno, fault["errno"])))
            else:
                self.fs.arm(None)
            outcome = perform(self.workspace, step, self.sandbox.root)
            self.last_log = tuple(self.fs.log)
            self.fs.arm(None)
            recorder.stop()
            self.last_trace = tuple(recorder.ops)
            cut = {str(key): int(kept) for key, kept in fault.get("cut", ())}
            state = rebuild_state(
                recorder.image, recorder.ops, int(fault["point"]), fault.get("lost", ()), cut
            )
            materialize(state, recorder.roots)
            return attrs.evolve(
                self._restart_checked("power loss"), outcome=outcome, power_state=state
            )
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
class Recorded:
    """A clean run of one step: its outcome, counted operations and power-loss trace."""

    outcome: Outcome
    count: int
    image: Image
    trace: tuple[TraceOp, ...]


def make_runner(
    sandbox: Sandbox,
    driver: str = "",
    *,
    count: str = "mutating",
    watch: Callable[..., None] | None = None,
    on_restart: Callable[[str], None] | None = None,
) -> Any:
    """The reference through its port (counting ``count`` operations), or ``driver``
    (``module:factory``) through the contract: a scenario's ``driver`` and ``count``.

    ``watch`` sees the reference's ``OpEvent``s, or a driver's ``(OsCall, outcome)``s.
    """
    if driver:
        from editspec.fault_injection.driver_runner import DriverRunner

        return DriverRunner(sandbox, driver, watch=watch, on_restart=on_restart)
    return Runner(sandbox, count=count, watch=watch, on_restart=on_restart)


# -- the checks of one faulted step ------------------------------------------------------


@attrs.frozen
class Baseline:
    """A clean run of a scenario's last step."""

    before: trees.Tree
    after: trees.Tree
    outcome: Outcome
    count: int
    image: Image
    trace: tuple[TraceOp, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.trace)

    def acceptable_at(self, point: int) -> tuple[trees.Tree, ...]:
        if point >= len(self.trace):
            return (self.after,)
        return (self.before, self.after)


def _setup(runner: Any, scenario: Scenario) -> None:
    runner.start(scenario.initial)
    for step in scenario.steps[:-1]:
        report = runner.run(step)
        if report.restart_error is not None:
            raise RuntimeError(f"setup step failed to recover: {report.restart_error}")


def baseline(sandbox: Sandbox, scenario: Scenario) -> Baseline:
    """Run ``scenario`` without faults, recording its last step."""
    runner = make_runner(sandbox, scenario.driver, count=scenario.count)
    try:
        _setup(runner, scenario)
        before = sandbox.tree()
        clean = runner.record(scenario.steps[-1])
    finally:
        runner.close()
    return Baseline(before, sandbox.tree(), clean.outcome, clean.count, clean.image, clean.trace)


@attrs.frozen
class Verdict:
    """The result of one check: a failure scenario (None if it passed), and notes."""

    finding: Scenario | None
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.finding is None


def stray_temp_files(tree: Mapping[str, trees.Entry]) -> list[str]:
    """Paths of single-file write temp files (``.<name>.editspec-<hex>.tmp``) in ``tree``."""
    from editspec.reference.tools._atomic import is_temp_name

    return [path for path in tree if is_temp_name(path.rsplit("/", 1)[-1])]


def check_outcome(
    sandbox: Sandbox,
    report: StepReport,
    acceptable: Sequence[trees.Tree],
    *,
    journals: bool = True,
) -> tuple[list[str], list[str], trees.Tree]:
    """Problems and notes about the disk after recovery; and the root's tree.

    The temp file of a single-file write interrupted by a crash is not a problem but a
    note: DESIGN §5 requires recovery to leave no stage, backup or journal file, and
    recovery cannot tell such a temp file from one a live writer in another process
    is still filling. Everything else must match byte for byte. With no ``acceptable``
    tree only recovery itself (and, with ``journals``, what it left) is checked;
    ``journals=False`` is for a disk looked at before any recovery, and for a driver that
    does not keep its journals where DESIGN puts them (no ``journal_layout``).
    """
    problems: list[str] = []
    notes: list[str] = []
    if report.restart_error is not None:
        problems.append(f"recovery failed: {report.restart_error}")
    actual = sandbox.tree()
    strays = stray_temp_files(actual)
    if strays:
        notes.append("stray temp file left: " + ", ".join(strays))
    compared = {path: entry for path, entry in actual.items() if path not in strays}
    if acceptable and not any(trees.equal(tree, compared) for tree in acceptable):
        closest = min(acceptable, key=lambda tree: len(trees.diff(tree, compared)))
        problems.append(
            "disk is neither all-before nor all-after:"
            if len(acceptable) > 1
            else "disk is not all-after although the step had finished:"
        )
        problems.extend("  " + line for line in trees.diff(closest, compared))
    leftovers = sandbox.journals() if journals else []
    if leftovers:
        problems.append("journal left after recovery: " + ", ".join(leftovers))
    return problems, notes, actual


def with_fault(scenario: Scenario, fault: Mapping[str, Any]) -> Scenario:
    steps = list(scenario.steps)
    steps[-1] = {**steps[-1], "fault": {**fault, "step": len(steps) - 1}}
    return attrs.evolve(scenario, steps=tuple(steps), fault=steps[-1]["fault"])


def _faulted(
    sandbox: Sandbox, scenario: Scenario, base: Baseline, fault: Mapping[str, Any]
) -> tuple[Scenario, StepReport, list[str], list[str], trees.Tree]:
    """Run the last step with ``fault`` after a clean setup; the faulted scenario, the
    report, and the problems, notes and tree ``check_outcome`` finds."""
    faulted = with_fault(scenario, fault)
    runner = make_runner(sandbox, scenario.driver, count=scenario.count)
    try:
        _setup(runner, scenario)
        report = runner.run(faulted.steps[-1])
    finally:
        runner.close()
    problems, notes, actual = check_outcome(
        sandbox, report, (base.before, base.after), journals=runner.checks_journals
    )
    return faulted, report, problems, notes, actual


def check_crash(sandbox: Sandbox, scenario: Scenario, base: Baseline, at: int) -> Verdict:
    """Crash at counted operation ``at`` of the last step, recover, check; a failure or None."""
    faulted, report, problems, notes, actual = _faulted(
        sandbox, scenario, base, {"kind": "crash", "at": at}
    )
    if not report.crashed:
        problems.insert(0, f"no crash: the step issued fewer than {at} counted operations")
    return _verdict(faulted, base, (base.before, base.after), actual, problems, notes)


def power_states(
    base: Baseline, model: Model, *, limit: int = 4096
) -> tuple[list[PowerState], bool]:
    """Every distinct power-loss state of the baseline's trace (with its acceptable trees)."""
    during, hit_during = power_loss_states(
        base.image, base.trace, model, points=range(len(base.trace)), limit=limit
    )
    done, hit_done = power_loss_states(
        base.image, base.trace, model, points=[len(base.trace)], limit=limit
    )
    return during + done, hit_during or hit_done


def power_fault(state: PowerState, model: Model) -> dict[str, Any]:
    return {
        "kind": "power_loss",
        "model": model,
        "point": state.point,
        "lost": list(state.lost),
        "cut": [[key, kept] for key, _p, kept, _w in state.cut],
        "description": state.describe(),
    }


def check_power_state(
    sandbox: Sandbox,
    scenario: Scenario,
    base: Baseline,
    state: PowerState,
    model: Model,
) -> Verdict:
    """Materialize one power-loss state of the baseline, recover, check."""
    faulted = with_fault(scenario, power_fault(state, model))
    runner = make_runner(sandbox, scenario.driver, count=scenario.count)
    try:
        report = runner.cut_power(state)
    finally:
        runner.close()
    acceptable = base.acceptable_at(state.point)
    problems, notes, actual = check_outcome(
        sandbox, report, acceptable, journals=runner.checks_journals
    )
    return _verdict(faulted, base, acceptable, actual, problems, notes)


def recovery_count(sandbox: Sandbox, scenario: Scenario, at: int) -> int:
    """How many counted operations recovery issues after a crash at ``at``."""
    runner = make_runner(sandbox, scenario.driver, count=scenario.count)
    try:
        _setup(runner, scenario)
        return int(runner.recovery_count(scenario.steps[-1], at))
    finally:
        runner.close()


def check_recovery_crash(
    sandbox: Sandbox, scenario: Scenario, base: Baseline, at: int, recovery_at: int
) -> Verdict:
    """Crash at ``at``, crash the recovery at its ``recovery_at``-th operation, recover again."""
    fault = {"kind": "recovery_crash", "at": at, "recovery_at": recovery_at}
    faulted, _, problems, notes, actual = _faulted(sandbox, scenario, base, fault)
    return _verdict(faulted, base, (base.before, base.after), actual, problems, notes)


def _verdict(
    faulted: Scenario,
    base: Baseline,
    acceptable: Sequence[trees.Tree],
    actual: trees.Tree,
    problems: list[str],
    notes: list[str],
) -> Verdict:
    if not problems:
        return Verdict(None, tuple(notes))
    finding = attrs.evolve(
        faulted,
        expected=tuple(acceptable),
        actual=actual,
        problems=tuple(problems),
        trace=base.names,
    )
    return Verdict(finding, tuple(notes))


# -- several processes ---------------------------------------------------------------------


class Deadlock(RuntimeError):
    """A process of a scenario waited longer than the timeout (for one a paused one holds)."""


@attrs.frozen
class PhaseReport:
    """What happened to one step (or to the opening) of a process in a phased scenario."""

    process: str
    outcome: Outcome | None  # None: it crashed, or it paused
    crashed: bool = False
    paused: bool = False
    open_error: str | None = None  # the opening's recovery raised
    log: tuple[OpRecord, ...] = ()  # its counted port calls, the injected fault included


class _Thread:
    """A step running in its own thread, so that it can pause while other processes go on."""

    def __init__(self, target: Callable[[], Outcome | None]) -> None:
        self.stopped = threading.Event()  # paused, or finished
        self.ended = threading.Event()
        self.resume = threading.Event()
        self.result: Outcome | None = None
        self.error: BaseException | None = None
        self.crashed = False
        self.paused = False
        self._target = target
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.result = self._target()
        except SimulatedCrash:
            self.crashed = True
        except BaseException as exc:  # reported in the main thread
            self.error = exc
        finally:
            self.paused = False
            self.stopped.set()
            self.ended.set()

    def pause(self) -> None:
        """Called in the step's thread: stop here until ``resume`` is set."""
        self.paused = True
        self.stopped.set()
        self.resume.wait()
        self.paused = False


class _Process:
    def __init__(self, name: str, fs: FaultyFileSystem) -> None:
        self.name = name
        self.fs = fs
        self.workspace: Workspace | None = None
        self.alive = True
        self.running: _Thread | None = None  # a paused step
        self.calls = 0  # port calls of the current step (for pause_after)
        self.pause_after: int | None = None


class Processes:
    """Several processes over one sandbox, one acting at a time (``scenario.Phase``).

    Each process is a ``Workspace`` with its own ``FaultyFileSystem`` (so its own fault
    plan, counter and descriptors; a crash closes them and releases its locks). A step
    that pauses runs in a thread of its own, which waits inside the port call after
    which it pauses; every step runs in a thread while one is paused, so a process that
    blocks on a lock the paused one holds is reported (``Deadlock``) instead of hanging.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        count: str = "mutating",
        watch: Callable[[OpEvent], None] | None = None,
        on_pause: Callable[[str, OpEvent], None] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.sandbox = sandbox
        self.count = count
        self.watch = watch
        self.on_pause = on_pause
        self.timeout = timeout
        self.processes: dict[str, _Process] = {}

    def start(self, initial: Mapping[str, trees.Entry]) -> None:
        self.sandbox.reset(initial)

    def _paused(self) -> bool:
        return any(p.running is not None for p in self.processes.values())

    def _call(self, process: _Process, target: Callable[[], Outcome | None]) -> _Thread | None:
        """Run ``target`` here, or in a thread when it may pause or meet a paused process."""
        if process.pause_after is None and not self._paused():
            runner = _Thread(target)
            runner._run()
            return runner
        runner = _Thread(target)
        process.running = runner
        runner.thread.start()
        if not runner.stopped.wait(self.timeout):
            self.kill_all()
            raise Deadlock(
                f"process {process.name} did not finish or pause within {self.timeout:g} s: "
                "it waits for something a paused process holds"
            )
        return runner

    def _observer(self, process: _Process) -> Callable[[OpEvent], None]:
        def observe(event: OpEvent) -> None:
            if self.watch is not None:
                self.watch(event)
            if process.pause_after is None:
                return
            process.calls += 1
            if process.calls == process.pause_after and process.running is not None:
                process.pause_after = None
                if self.on_pause is not None:
                    self.on_pause(process.name, event)
                process.running.pause()

        return observe

    def open(self, name: str, open_fault: Mapping[str, Any] | None = None) -> PhaseReport:
        """Open process ``name``: a fresh workspace, whose constructor recovers."""
        plan = CrashAt(int(open_fault["at"])) if open_fault is not None else None
        fs = FaultyFileSystem(self.sandbox.inner(), plan, count=self.count)  # type: ignore[arg-type]
        process = _Process(name, fs)
        fs.observers.append(self._observer(process))
        self.processes[name] = process

        def construct() -> Outcome | None:
            process.workspace = self.sandbox.open_workspace(
                self.sandbox.root, self.sandbox.state_dir, fs
            )
            return Outcome("ok")

        try:
            done = self._call(process, construct)
        finally:
            process.running = None
        assert done is not None
        log = tuple(fs.log)
        fs.arm(None)
        if done.crashed:
            process.alive = False
            return PhaseReport(name, None, crashed=True, log=log)
        if done.error is not None:
            process.alive = False
            error = f"{type(done.error).__name__}: {done.error}"
            return PhaseReport(name, None, open_error=error, log=log)
        return PhaseReport(name, done.result, log=log)

    def run(self, name: str, step: Mapping[str, Any]) -> PhaseReport:
        """Run one step in process ``name`` (opened first if it is new), with its fault."""
        if name not in self.processes:
            opened = self.open(name)
            if opened.outcome is None:
                return opened
        process = self.processes[name]
        if not process.alive or process.workspace is None:
            raise RuntimeError(f"process {name} is dead")
        fault = step.get("fault")
        if fault is None:
            process.fs.arm(None)
        elif fault["kind"] == "crash":
            process.fs.arm(CrashAt(int(fault["at"])))
        elif fault["kind"] == "fail":
            process.fs.arm(FailAt(int(fault["at"]), getattr(_errno, fault["errno"])))
        else:
            raise ValueError(f"a {fault['kind']!r} fault needs a single-process scenario")
        process.calls = 0
        process.pause_after = int(step["pause_after"]) if "pause_after" in step else None
        workspace = process.workspace
        done = self._call(process, lambda: perform(workspace, step, self.sandbox.root))
        assert done is not None
        if done.paused:
            return PhaseReport(name, None, paused=True)
        process.running = None
        process.pause_after = None
        return self._ended(process, done)

    def resume(self, name: str) -> PhaseReport:
        """Let the paused step of ``name`` go on, and wait for it to end."""
        process = self.processes[name]
        running = process.running
        if running is None:
            raise RuntimeError(f"process {name} is not paused")
        running.stopped.clear()
        running.resume.set()
        if not running.stopped.wait(self.timeout):
            self.kill_all()
            raise Deadlock(f"process {name} did not finish within {self.timeout:g} s once resumed")
        process.running = None
        return self._ended(process, running)

    def _ended(self, process: _Process, done: _Thread) -> PhaseReport:
        log = tuple(process.fs.log)
        process.fs.disarm()
        if done.error is not None:
            raise done.error
        if done.crashed:
            process.alive = False
            return PhaseReport(process.name, None, crashed=True, log=log)
        return PhaseReport(process.name, done.result, log=log)

    def kill_all(self) -> list[str]:
        """Kill every process still paused, where it waits; return their names."""
        killed = []
        for process in self.processes.values():
            running = process.running
            if running is None:
                continue
            process.fs._die()  # its next port call raises: a dead process does nothing more
            running.resume.set()
            running.ended.wait(self.timeout)
            process.running = None
            process.alive = False
            killed.append(process.name)
        return killed

    def recover(self) -> StepReport:
        """After the phases: kill what is paused, then a fresh workspace recovers."""
        self.kill_all()
        fs = FaultyFileSystem(self.sandbox.inner(), count=self.count)  # type: ignore[arg-type]
        if self.watch is not None:
            fs.observers.append(self.watch)
        try:
            self.sandbox.open_workspace(self.sandbox.root, self.sandbox.state_dir, fs)
        except Exception as exc:  # recovery that raises is a finding
            return StepReport(None, restart_error=f"{type(exc).__name__}: {exc}")
        return StepReport(None)


@attrs.frozen
class PhasesRun:
    """The reports of a phased scenario, in order, and its final recovery."""

    reports: tuple[tuple[int, int | None, PhaseReport], ...]  # (phase, step or None, report)
    final: StepReport
    killed: tuple[str, ...] = ()
    # Where a finished step departed from its own "outcomes" or "expect", in order.
    divergences: tuple[str, ...] = ()


def step_problems(sandbox: Sandbox, step: Mapping[str, Any], report: PhaseReport) -> list[str]:
    """How a step of a phase departs from what it expects (outcome, then disk)."""
    allowed = step.get("outcomes")
    if allowed and report.outcome is not None and report.outcome.code not in allowed:
        return [
            f"the engine answered {report.outcome.code}; the model expects one of "
            f"{', '.join(allowed)}"
        ]
    expected = step.get("expect")
    if expected is None:
        return []
    problems, _notes, _actual = check_outcome(
        sandbox, StepReport(report.outcome), expected, journals=False
    )
    return problems


def run_phases(
    sandbox: Sandbox,
    scenario: Scenario,
    *,
    watch: Callable[[OpEvent], None] | None = None,
    timeout: float = 30.0,
) -> PhasesRun:
    """Run every phase of ``scenario``, then the final recovery.

    Each step that finishes (at once, or when its process resumes) is held to its own
    ``"outcomes"`` and ``"expect"`` right then, before the next phase touches the disk.
    """
    processes = Processes(sandbox, count=scenario.count, watch=watch, timeout=timeout)
    processes.start(scenario.initial)
    reports: list[tuple[int, int | None, PhaseReport]] = []
    divergences: list[str] = []
    waiting: dict[str, tuple[str, Mapping[str, Any]]] = {}

    def held_to(where: str, step: Mapping[str, Any], report: PhaseReport) -> None:
        divergences.extend(
            f"{where}: {problem}" for problem in step_problems(sandbox, step, report)
        )

    for number, phase in enumerate(scenario.phases):
        if phase.resume:
            report = processes.resume(phase.process)
            reports.append((number, None, report))
            where, step = waiting.pop(phase.process)
            held_to(where, step, report)
        elif phase.process not in processes.processes:
            opened = processes.open(phase.process, phase.open_fault)
            reports.append((number, None, opened))
            if opened.outcome is None:
                continue
        for index, step in enumerate(phase.steps):
            report = processes.run(phase.process, step)
            reports.append((number, index, report))
            where = f"phase {number + 1}, step {index + 1}"
            if report.paused:
                waiting[phase.process] = (where, step)
            else:
                held_to(where, step, report)
    killed = tuple(processes.kill_all())
    return PhasesRun(tuple(reports), processes.recover(), killed, tuple(divergences))


def check_phases(sandbox: Sandbox, scenario: Scenario, *, timeout: float = 30.0) -> Verdict:
    """Run a phased scenario and check the disk after its final recovery; a failure or None."""
    run = run_phases(sandbox, scenario, timeout=timeout)
    problems, notes, actual = check_outcome(sandbox, run.final, scenario.expected)
    problems = [*run.divergences, *problems]
    if not problems:
        return Verdict(None, tuple(notes))
    finding = attrs.evolve(scenario, actual=actual, problems=tuple(problems))
    return Verdict(finding, tuple(notes))
