"""The explorer's work: a clean run of each scenario, then its crash points and power-loss
states in chunks, checked in worker processes (``explore``), with a progress bar.

Each worker (``_Worker``) keeps one sandbox and the clean baselines of the scenarios it
was given; a chunk is a range of crash points or power-loss states of one scenario.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing.util import Finalize
from typing import Any, TextIO

import attrs

from editspec.fault_injection import harness
from editspec.fault_injection.explore_rows import Progress, Row, shard_of
from editspec.fault_injection.powerloss import Model, PowerState
from editspec.fault_injection.scenario import Scenario
from editspec.fault_injection.standard import DEFAULT_LIMITS, STANDARD
from editspec.reference import FileSystem

_WORKER: _Worker | None = None


@attrs.frozen
class Task:
    scenario: str
    kind: str  # "crash" | "recovery" | "power"
    start: int
    stop: int
    model: str = "ordered"
    limit: int = 4096


@attrs.frozen
class TaskResult:
    task: Task
    checked: int
    failures: tuple[dict[str, Any], ...]  # scenario JSON
    notes: int
    seconds: float


class _Worker:
    """Per-process state: one sandbox, cached baselines and power-loss states."""

    def __init__(self, backend: str, driver: str = "") -> None:
        self.backend = backend
        self.driver = driver
        self.patcher: Any = None
        inner: Callable[[], FileSystem] = FileSystem
        if backend == "memory":
            harness.import_engine()
            # only --memory runs need pyfakefs (imported when one starts)
            from pyfakefs.fake_filesystem_unittest import Patcher

            self.patcher = Patcher()
            self.patcher.setUp()
            os.makedirs(tempfile.gettempdir(), exist_ok=True)
            inner = harness.InMemoryFileSystem
        base = tempfile.mkdtemp(prefix="editspec-explore-")
        self.sandbox = harness.Sandbox(base, inner=inner)
        if backend == "disk":  # also runs at the exit of a worker process
            Finalize(
                self, shutil.rmtree, args=(base,), kwargs={"ignore_errors": True}, exitpriority=10
            )
        self.baselines: dict[str, tuple[Scenario, harness.Baseline]] = {}
        self.states: dict[tuple[str, str, int], tuple[list[PowerState], bool]] = {}

    def baseline(self, name: str) -> tuple[Scenario, harness.Baseline]:
        if name not in self.baselines:
            scenario = attrs.evolve(STANDARD[name].build(), driver=self.driver)
            base = harness.baseline(self.sandbox, scenario)
            if not base.outcome.ok:
                raise CleanRunFailed(
                    f"the clean run of {name} failed: {base.outcome.code}: {base.outcome.message}"
                )
            self.baselines[name] = (scenario, base)
        return self.baselines[name]

    def power_states(self, name: str, model: str, limit: int) -> tuple[list[PowerState], bool]:
        """The scenario's distinct power-loss states, and whether ``limit`` bounded them."""
        key = (name, model, limit)
        if key not in self.states:
            _, base = self.baseline(name)
            self.states[key] = harness.power_states(base, model, limit=limit)  # type: ignore[arg-type]
        return self.states[key]

    def run(self, task: Task) -> TaskResult:
        started = time.perf_counter()
        scenario, base = self.baseline(task.scenario)
        verdicts: list[harness.Verdict] = []
        if task.kind == "crash":
            for at in range(task.start, task.stop):
                verdicts.append(harness.check_crash(self.sandbox, scenario, base, at))
        elif task.kind == "recovery":
            for at in range(task.start, task.stop):
                count = harness.recovery_count(self.sandbox, scenario, at)
                for recovery_at in range(1, count + 1):
                    verdicts.append(
                        harness.check_recovery_crash(self.sandbox, scenario, base, at, recovery_at)
                    )
        else:
            model: Model = task.model  # type: ignore[assignment]
            states, _ = self.power_states(task.scenario, model, task.limit)
            for state in states[task.start : task.stop]:
                verdicts.append(
                    harness.check_power_state(self.sandbox, scenario, base, state, model)
                )
        failures = tuple(v.finding.to_json() for v in verdicts if v.finding is not None)
        notes = sum(1 for v in verdicts if v.notes)
        return TaskResult(task, len(verdicts), failures, notes, time.perf_counter() - started)


class CleanRunFailed(RuntimeError):
    """A scenario's step failed without any fault: there is nothing to explore."""


def _init_worker(backend: str, driver: str = "") -> None:
    global _WORKER
    _WORKER = _Worker(backend, driver)


def _run_task(task: Task) -> TaskResult:
    assert _WORKER is not None
    return _WORKER.run(task)


def _plan_task(
    names: tuple[str, ...], model: Model, limit: int
) -> tuple[list[Task], dict[str, bool]]:
    assert _WORKER is not None
    return plan(names, model, _WORKER, limit=limit)


def _chunks(start: int, stop: int, size: int) -> Iterator[tuple[int, int]]:
    for low in range(start, stop, size):
        yield low, min(stop, low + size)


def plan(
    names: Sequence[str], model: Model, worker: _Worker, *, limit: int, chunk: int = 8
) -> tuple[list[Task], dict[str, bool]]:
    """The work units, and per scenario whether its power-loss states were bounded."""
    tasks: list[Task] = []
    bounded: dict[str, bool] = {}
    for name in names:
        _, base = worker.baseline(name)
        tasks.extend(Task(name, "crash", lo, hi) for lo, hi in _chunks(1, base.count + 1, chunk))
        if STANDARD[name].recovery_crashes:
            tasks.extend(Task(name, "recovery", at, at + 1) for at in range(1, base.count + 1))
        states, bounded[name] = worker.power_states(name, model, limit)
        tasks.extend(
            Task(name, "power", lo, hi, model, limit)
            for lo, hi in _chunks(0, len(states), chunk * 4)
        )
    return tasks, bounded


def explore(
    names: Sequence[str],
    *,
    model: Model = "ordered",
    jobs: int = 1,
    backend: str = "disk",
    out: str | None = "editspec-failures",
    progress: TextIO | None = None,
    limit: int | None = None,
    driver: str = "",
    shard: tuple[int, int] | None = None,
) -> tuple[list[Row], list[str], float]:
    """Run the exploration; return the rows, the saved failure files and the wall time.

    ``driver`` (``module:factory``) explores a Python driver that declares ``python_fs``
    instead of the reference; the names must be scenarios it has the capabilities for
    (``missing_capabilities``).
    """
    started = time.perf_counter()
    if limit is None:
        limit = DEFAULT_LIMITS[model]
    if driver and backend != "disk":
        raise ValueError("a driver is explored on disk only (its os calls are intercepted)")
    # In memory, every run happens in worker processes: pyfakefs patches the process it
    # runs in, and this one still has to write the failure files to the real disk.
    use_pool = jobs > 1 or backend == "memory"
    pool = (
        ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(backend, driver))
        if use_pool
        else None
    )
    if pool is None:
        worker = _worker_here(backend, driver)
        tasks, bounded = plan(names, model, worker, limit=limit)
    else:
        tasks, bounded = pool.submit(_plan_task, tuple(names), model, limit).result()
    tasks = shard_of(tasks, shard)
    rows = {name: Row(name, bounded=bounded[name]) for name in names}
    saved: list[str] = []
    bar = Progress(len(tasks), progress) if progress is not None else None
    states_done = failed_total = 0

    def absorb(result: TaskResult) -> None:
        nonlocal states_done, failed_total
        row = rows[result.task.scenario]
        if result.task.kind == "crash":
            row.crash_points += result.checked
        elif result.task.kind == "recovery":
            row.recovery_crashes += result.checked
        else:
            row.power_states += result.checked
        row.failed += len(result.failures)
        row.passed += result.checked - len(result.failures)
        row.notes += result.notes
        row.seconds += result.seconds
        states_done += result.checked
        failed_total += len(result.failures)
        if out is not None:
            for number, failure in enumerate(result.failures):
                task = result.task
                filename = f"{task.scenario}-{task.kind}-{task.model}-{task.start}-{number}.json"
                path = os.path.join(out, filename)
                Scenario.from_json(failure).save(path)
                saved.append(path)
        if bar is not None:
            bar.advance(1, states_done, failed_total)

    if pool is None:
        for task in tasks:
            absorb(worker.run(task))
    else:
        with pool:
            pending: set[Future[TaskResult]] = {pool.submit(_run_task, t) for t in tasks}
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    absorb(future.result())
    if bar is not None:
        bar.finish()
    return list(rows.values()), sorted(saved), time.perf_counter() - started


def _worker_here(backend: str, driver: str = "") -> _Worker:
    global _WORKER
    if _WORKER is None or (_WORKER.backend, _WORKER.driver) != (backend, driver):
        _WORKER = _Worker(backend, driver)
    return _WORKER
