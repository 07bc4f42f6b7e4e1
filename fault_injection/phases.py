"""Scenarios of several processes (``Scenario.phases``): one ``Workspace`` per process.

``Processes`` runs phases: one ``Workspace`` and ``FaultyFileSystem`` per process, a
step that pauses (``pause_after``) in a thread of its own waiting inside its n-th port
call, ``Deadlock`` when a process waits longer than the timeout for a paused one;
``run_phases`` / ``check_phases`` run a phased scenario and its final recovery.
"""

from __future__ import annotations

import errno as _errno
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection.checks import Verdict, check_outcome
from editspec.fault_injection.faultfs import (
    CrashAt,
    FailAt,
    FaultyFileSystem,
    OpEvent,
    OpRecord,
    SimulatedCrash,
)
from editspec.fault_injection.runner import (
    Sandbox,
    StepReport,
)
from editspec.fault_injection.scenario import Outcome, Scenario, perform
from editspec.reference import Workspace


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
