"""``editspec explore``: every crash point and power-loss state of the standard scenarios.

For each standard scenario the last step is the one explored; the steps before it set
the workspace up (reads, earlier writes that give rewind a history). The explorer runs
it once cleanly (``harness.baseline``), then checks, in worker processes:

* a crash at every counted operation of the step, followed by recovery;
* for ``recovery-crash``: also a crash at every operation of that recovery, followed
  by a second recovery;
* every distinct power-loss state of the step's trace under ``--model`` (``ordered``
  by default, or ``strict``), each recovered and checked.

With ``--driver MODULE:FACTORY`` the same scenarios run through any Python driver that
declares ``python_fs`` (DESIGN §2), reached only through the contract: the crash points
are its own mutating ``os`` calls and the power-loss states come from their trace
(``driver_runner``, ``ostrace``). A scenario whose capabilities the driver lacks is
skipped with a message (an error when asked for by name).

Every failure is saved as a scenario (``--out``, default ``editspec-failures/``) that
``editspec replay`` re-runs. It prints a progress bar on stderr and a table on stdout;
the exit status is 1 if anything failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any, TextIO

import attrs

from editspec.fault_injection import harness, trees
from editspec.fault_injection.powerloss import Model, PowerState
from editspec.fault_injection.scenario import SESSION, Scenario
from editspec.reference import FileSystem

# -- the standard scenarios ------------------------------------------------------------


def _file(text: str) -> trees.Entry:
    return trees.Entry.file(text.encode("utf-8"), 0o644)


def _lines(name: str, count: int = 6) -> str:
    return "".join(f"{name} line {n}\n" for n in range(1, count + 1))


def _read(path: str) -> dict[str, Any]:
    return {"call": "read", "session": SESSION, "path": path}


def single_write() -> Scenario:
    old = b"the old contents\n"
    return Scenario(
        name="single-write",
        description="replace one file with Write (atomic replace, no journal)",
        initial={"notes.txt": trees.Entry.file(old, 0o644)},
        steps=(
            {
                "call": "write",
                "session": SESSION,
                "path": "notes.txt",
                "content": "the new contents, longer than before\n",
                "expected_sha256": hashlib.sha256(old).hexdigest(),
            },
        ),
    )


def update_ten_files() -> Scenario:
    paths = [f"{d}/file{n}.txt" for d in ("src", "lib", "docs") for n in range(1, 4)] + ["top.txt"]
    initial = {path: _file(_lines(path)) for path in paths}
    hunks = []
    for path in paths:
        hunks.append(
            f"*** Update File: {path}\n@@\n {path} line 2\n-{path} line 3\n+{path} LINE THREE\n"
        )
    patch = "*** Begin Patch\n" + "".join(hunks) + "*** End Patch\n"
    return Scenario(
        name="update-10-files",
        description="one ApplyPatch updating 10 files across 3 directories",
        initial=initial,
        steps=(
            *(_read(path) for path in paths),
            {"call": "apply_patch", "session": SESSION, "patch": patch, "message_id": "m1"},
        ),
    )


def add_delete_move() -> Scenario:
    initial = {
        "keep.txt": _file(_lines("keep")),
        "old/gone.txt": _file(_lines("gone")),
        "old/moving.txt": _file(_lines("moving")),
    }
    patch = (
        "*** Begin Patch\n"
        "*** Add File: new/deep/added.txt\n+added line 1\n+added line 2\n"
        "*** Delete File: old/gone.txt\n"
        "*** Update File: old/moving.txt\n*** Move to: moved/here/moving.txt\n"
        "@@\n moving line 1\n-moving line 2\n+moving line TWO\n"
        "*** End Patch\n"
    )
    return Scenario(
        name="add-delete-move",
        description="one ApplyPatch: add into new directories, delete, move into new ones",
        initial=initial,
        steps=(
            _read("old/gone.txt"),
            _read("old/moving.txt"),
            {"call": "apply_patch", "session": SESSION, "patch": patch, "message_id": "m1"},
        ),
    )


def rewind_five() -> Scenario:
    initial = {"a.txt": _file(_lines("a")), "b.txt": _file(_lines("b"))}
    steps: list[dict[str, Any]] = [_read("a.txt"), _read("b.txt")]
    for n in range(1, 6):
        steps.append(
            {
                "call": "write",
                "session": SESSION,
                "path": "a.txt",
                "content": _lines("a") + f"a change {n}\n",
                "message_id": f"m{n}",
            }
        )
        if n % 2 == 1:
            steps.append(
                {
                    "call": "write",
                    "session": SESSION,
                    "path": f"new{n}.txt",
                    "content": f"created at message {n}\n",
                    "message_id": f"m{n}",
                }
            )
    steps.append(
        {
            "call": "write",
            "session": SESSION,
            "path": "b.txt",
            "content": "b rewritten\n",
            "message_id": "m5",
        }
    )
    steps.append({"call": "rewind", "session": SESSION, "message_id": "m1"})
    return Scenario(
        name="rewind-5",
        description="rewind over 5 messages: restore 2 files, delete 3 created ones",
        initial=initial,
        steps=tuple(steps),
    )


def recovery_crash() -> Scenario:
    initial = {"one.txt": _file(_lines("one")), "two.txt": _file(_lines("two"))}
    patch = (
        "*** Begin Patch\n"
        "*** Update File: one.txt\n@@\n one line 1\n-one line 2\n+one line TWO\n"
        "*** Delete File: two.txt\n"
        "*** Add File: sub/three.txt\n+three\n"
        "*** End Patch\n"
    )
    return Scenario(
        name="recovery-crash",
        description="a 3-file patch crashed at every step, its recovery crashed at every step",
        initial=initial,
        steps=(
            _read("one.txt"),
            _read("two.txt"),
            {"call": "apply_patch", "session": SESSION, "patch": patch, "message_id": "m1"},
        ),
    )


def delete_tree() -> Scenario:
    initial = {
        "keep.txt": _file(_lines("keep")),
        "build/out.txt": _file(_lines("out")),
        "build/sub/deep.txt": _file(_lines("deep")),
    }
    tree = [
        ["out.txt", "file", hashlib.sha256(_lines("out").encode()).hexdigest()],
        ["sub", "dir", None],
        ["sub/deep.txt", "file", hashlib.sha256(_lines("deep").encode()).hexdigest()],
    ]
    body = json.dumps({"path": "build", "items": tree}, sort_keys=True, separators=(",", ":"))
    return Scenario(
        name="delete-tree",
        description="Delete of a 2-file tree: one rename into the quarantine, restorable",
        initial=initial,
        steps=(
            {
                "call": "delete",
                "session": SESSION,
                "path": "build",
                "kind": "tree",
                # the reference's manifest hash (``_manifest.manifest_hash``) of that tree
                "manifest_sha256": hashlib.sha256(body.encode("ascii")).hexdigest(),
                "message_id": "m1",
            },
        ),
    )


def move_file() -> Scenario:
    text = _lines("moving")
    return Scenario(
        name="move-file",
        description="Move of one file into new directories: one rename, never a clobber",
        initial={"keep.txt": _file(_lines("keep")), "old/moving.txt": _file(text)},
        steps=(
            {
                "call": "move",
                "session": SESSION,
                "path": "old/moving.txt",
                "dest": "new/deep/moving.txt",
                "expected_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "message_id": "m1",
            },
        ),
    )


@attrs.frozen
class Standard:
    build: Callable[[], Scenario]
    requires: frozenset[str]  # the capabilities a driver needs for it (DESIGN §2)
    recovery_crashes: bool = False


_PATCH_NEEDS = frozenset({"read", "read_before_write", "apply_patch"})
STANDARD: dict[str, Standard] = {
    "single-write": Standard(single_write, frozenset({"write", "cas"})),
    "update-10-files": Standard(update_ten_files, _PATCH_NEEDS),
    "add-delete-move": Standard(add_delete_move, _PATCH_NEEDS),
    "rewind-5": Standard(rewind_five, frozenset({"read", "write", "snapshots"})),
    "recovery-crash": Standard(recovery_crash, _PATCH_NEEDS, recovery_crashes=True),
    "delete-tree": Standard(delete_tree, frozenset({"delete"})),
    "move-file": Standard(move_file, frozenset({"move", "cas"})),
}


def missing_capabilities(
    name: str, capabilities: frozenset[str], runs_here: str = "python_fs"
) -> list[str]:
    """What a driver lacks for standard scenario ``name`` (``runs_here`` included: how
    faults reach it, ``python_fs`` or ``process``)."""
    return sorted((STANDARD[name].requires | {runs_here}) - capabilities)


#: Power-loss states enumerated per cut point, by model. The ordered model is never
#: bounded by this in the standard scenarios; "strict" is exhaustive only for small
#: traces: beyond the bound it covers the ordered states, then every single lost
#: entry operation, then every pair, and so on, and the table marks the row.
DEFAULT_LIMITS: dict[str, int] = {"ordered": 4096, "strict": 64}

# -- work units ------------------------------------------------------------------------------


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


_WORKER: _Worker | None = None


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


# -- planning, running, reporting ------------------------------------------------------------


@attrs.define
class Row:
    scenario: str
    crash_points: int = 0
    recovery_crashes: int = 0
    power_states: int = 0
    passed: int = 0
    failed: int = 0
    notes: int = 0
    seconds: float = 0.0
    bounded: bool = False
    process: bool = False  # a server traced by strace: no crash of its recovery
    power: bool = False  # a process row whose power-loss states were checked

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Row:
        return cls(**value)

    @property
    def checked(self) -> int:
        return self.passed + self.failed


def shard_of(items: Sequence[Any], shard: tuple[int, int] | None) -> list[Any]:
    """The K-th of N deterministic, interleaved slices of ``items`` (all of them without
    a shard): every item is in exactly one shard, and the shards are about equal."""
    if shard is None:
        return list(items)
    number, count = shard
    return list(items[number - 1 :: count])


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N), 1 <= K <= N."""
    try:
        number, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shard is K/N, not {text!r}") from None
    if not 1 <= number <= count:
        raise argparse.ArgumentTypeError(f"a shard K/N needs 1 <= K <= N, not {text!r}")
    return number, count


def merge_rows(parts: Sequence[Sequence[Row]]) -> list[Row]:
    """Rows of several shards of one exploration, summed per scenario (first-seen order)."""
    merged: dict[str, Row] = {}
    for rows in parts:
        for row in rows:
            into = merged.setdefault(row.scenario, Row(row.scenario, process=row.process))
            for field in ("crash_points", "recovery_crashes", "power_states", "passed"):
                setattr(into, field, getattr(into, field) + getattr(row, field))
            into.failed += row.failed
            into.notes += row.notes
            into.seconds += row.seconds
            into.bounded = into.bounded or row.bounded
            into.power = into.power or row.power
    return list(merged.values())


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


class Progress:
    """A plain-text progress bar on a stream (stderr), drawn only when it is a terminal."""

    def __init__(self, total: int, stream: TextIO, *, width: int = 30) -> None:
        self.total, self.done, self.stream, self.width = total, 0, stream, width
        self.started = time.perf_counter()
        self.interactive = stream.isatty()
        self._last = -1.0

    def advance(self, tasks: int, states: int, failed: int) -> None:
        self.done += tasks
        if not self.interactive:
            return  # a bar is for a person at a terminal; a log gets the table only
        now = time.perf_counter()
        self._last = now
        filled = self.width * self.done // max(self.total, 1)
        rate = states / max(now - self.started, 1e-9)
        line = (
            f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} tasks, "
            f"{states} states, {failed} failed, {rate:.0f}/s"
        )
        self.stream.write("\r" + line)
        self.stream.flush()

    def finish(self) -> None:
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()


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


def _capabilities_of(
    factory: Callable[[Path, Path], Any], label: str = ""
) -> tuple[str, frozenset[str]]:
    base = tempfile.mkdtemp(prefix="editspec-probe-")
    try:
        os.mkdir(os.path.join(base, "ws"))
        os.mkdir(os.path.join(base, "state"))
        instance = factory(Path(os.path.join(base, "ws")), Path(os.path.join(base, "state")))
        try:
            fallback = label or getattr(factory, "__qualname__", "") or "the driver"
            name = str(getattr(instance, "name", "") or fallback)
            return name, frozenset(instance.capabilities)
        finally:
            instance.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _rate(checked: int, seconds: float) -> str:
    if not seconds:
        return "-"
    rate = checked / seconds
    return f"{rate:.1f}" if rate < 10 else f"{rate:.0f}"


def format_table(rows: Sequence[Row], model: str, wall: float) -> str:
    header = (
        "scenario",
        "crash points",
        "recovery crashes",
        f"power-loss ({model})" if model != "-" else "power-loss",
        "passed",
        "failed",
        "stray temps",
        "states/s",
    )
    body: list[tuple[str, ...]] = [
        (
            row.scenario,
            str(row.crash_points),
            "-" if row.process else str(row.recovery_crashes),
            "-"
            if row.process and not row.power
            else f"{row.power_states}{' (bounded)' if row.bounded else ''}",
            str(row.passed),
            str(row.failed),
            str(row.notes),
            _rate(row.checked, row.seconds),
        )
        for row in rows
    ]
    total_checked = sum(row.checked for row in rows)
    processes = bool(rows) and all(row.process for row in rows)

    def total(field: str) -> str:
        if processes and field == "recovery_crashes":
            return "-"
        if processes and field == "power_states" and not any(row.power for row in rows):
            return "-"
        return str(sum(getattr(row, field) for row in rows))

    fields = ("crash_points", "recovery_crashes", "power_states", "passed", "failed", "notes")
    body.append(("total", *(total(f) for f in fields), _rate(total_checked, wall)))
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]

    def fmt(line: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(header), rule, *(fmt(line) for line in body[:-1]), rule, fmt(body[-1])])


#: Why each way of injecting faults needs its capability (DESIGN §2).
_REACHED_BY: dict[str, str] = {
    "python_fs": "only an implementation running in this process can be crashed at its os "
    "calls (for a server, use --mcp)",
    "process": "only a separate process can be killed and started again",
}


def _usable_scenarios(
    parser: argparse.ArgumentParser,
    names: list[str],
    requested: bool,
    load: Callable[[], Callable[[Path, Path], Any]],
    runs_here: str,
    err_stream: TextIO,
) -> tuple[str, list[str]]:
    """The driver's name, and the scenarios it has the capabilities for (a usage error for
    a driver that cannot be loaded or faulted, or that lacks what a scenario named needs)."""
    from editspec.spec.drivers import DriverLoadError

    try:
        label, capabilities = _capabilities_of(load())
    except DriverLoadError as exc:
        parser.error(str(exc))
    if runs_here not in capabilities:
        parser.error(f"{label} does not declare {runs_here}: {_REACHED_BY[runs_here]}")
    lacking = {name: missing_capabilities(name, capabilities, runs_here) for name in names}
    if requested and any(lacking.values()):
        parser.error(
            "; ".join(f"{name} needs {', '.join(need)}" for name, need in lacking.items() if need)
        )
    for name, need in lacking.items():
        if need:
            err_stream.write(f"skipping {name}: {label} lacks {', '.join(need)}\n")
    usable = [name for name in names if not lacking[name]]
    if not usable:
        parser.error(f"{label} has the capabilities of no standard scenario")
    return label, usable


def _main_process(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    names: list[str],
    out_stream: TextIO,
    err_stream: TextIO,
) -> int:
    """``explore --mcp``: see ``explore_process``."""
    if args.driver or args.memory:
        parser.error("--mcp explores a server process: not with --driver or --memory")
    if args.no_power and (args.model != "ordered" or args.limit is not None):
        parser.error("--model and --limit are about power loss, which --no-power skips")
    from editspec.fault_injection.explore_process import explore_process
    from editspec.fault_injection.strace_kill import strace_unavailable
    from editspec.spec.drivers import mcp_factory

    reason = strace_unavailable()
    if reason is not None:
        err_stream.write(f"editspec explore: strace cannot kill a server here: {reason}\n")
        return 2

    def load() -> Any:
        return mcp_factory(args.mcp, args.mcp_map)

    label, names = _usable_scenarios(
        parser, names, bool(args.scenario), load, "process", err_stream
    )
    factory = load()
    how = "killed by strace" if not args.no_kills else ""
    if not args.no_power:
        how += (" and " if how else "") + "traced by strace for power cuts"
    out_stream.write(f"server {args.mcp} ({label}), {how}\n")
    from editspec.fault_injection.process_power import Unmodeled

    try:
        rows, saved, wall = explore_process(
            names,
            factory,
            jobs=max(1, args.jobs),
            out=args.out,
            progress=err_stream if _bar_wanted(args, err_stream) else None,
            model=args.model,
            limit=args.limit,
            power=not args.no_power,
            kills=not args.no_kills,
            shard=args.shard,
        )
    except (RuntimeError, Unmodeled) as exc:  # the clean run failed, or cannot be modelled
        err_stream.write(f"editspec explore: {exc}\n")
        return 1
    _write_results(args, rows, wall)
    out_stream.write(format_table(rows, "-" if args.no_power else args.model, wall) + "\n")
    out_stream.write(f"wall time {wall:.1f} s with {max(1, args.jobs)} thread(s)\n")
    kills = [path for path in saved if path.endswith("-kills.txt")]
    findings = [path for path in saved if path.endswith(".json")]
    if kills:
        out_stream.write(f"kill reports of the failing scenarios: {', '.join(kills)}\n")
    if findings:
        out_stream.write(
            f"{len(findings)} power-loss finding(s) written to {args.out}/; "
            f"re-run one with: editspec replay {findings[0]}\n"
        )
    return 1 if any(row.failed for row in rows) else 0


def _bar_wanted(args: argparse.Namespace, stream: TextIO) -> bool:
    return not args.no_progress and stream.isatty()


def _write_results(args: argparse.Namespace, rows: Sequence[Row], wall: float) -> None:
    """``--results FILE``: the rows as JSON, for ``--merge`` of shards."""
    if args.results:
        import json

        payload = {
            "format": "editspec-explore/1",
            "shard": list(args.shard) if args.shard else None,
            "model": args.model,
            "wall": wall,
            "rows": [row.to_json() for row in rows],
        }
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(json.dumps(payload, indent=2) + "\n")


def _merge(paths: Sequence[str], out_stream: TextIO, err_stream: TextIO) -> int:
    """``--merge FILE...``: one table from the results of several shards."""
    import json

    parts, models, shards, wall = [], set(), [], 0.0
    for path in paths:
        payload = json.loads(Path(path).read_text())
        if payload.get("format") != "editspec-explore/1":
            err_stream.write(f"editspec explore: {path} is not an explore result (--results)\n")
            return 2
        parts.append([Row.from_json(row) for row in payload["rows"]])
        models.add(payload.get("model", "ordered"))
        shards.append(tuple(payload["shard"]) if payload.get("shard") else None)
        wall = max(wall, float(payload.get("wall", 0.0)))
    counts = {shard[1] for shard in shards if shard is not None}
    numbers = sorted(shard[0] for shard in shards if shard is not None)
    if len(counts) == 1 and numbers != list(range(1, next(iter(counts)) + 1)):
        err_stream.write(
            f"editspec explore: warning: shards {numbers} of {next(iter(counts))} merged\n"
        )
    rows = merge_rows(parts)
    model = models.pop() if len(models) == 1 else "mixed"
    out_stream.write(format_table(rows, model, wall) + "\n")
    out_stream.write(f"{len(paths)} result file(s) merged; the longest shard took {wall:.1f} s\n")
    return 1 if any(row.failed for row in rows) else 0


def main_explore(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Entry point of ``editspec explore``; returns the exit status."""
    out_stream = stdout if stdout is not None else sys.stdout
    err_stream = stderr if stderr is not None else sys.stderr
    parser = argparse.ArgumentParser(
        prog="editspec explore",
        description="check every crash point and power-loss state of the standard scenarios",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=sorted(STANDARD),
        help="a standard scenario (repeatable; default: all)",
    )
    parser.add_argument(
        "--model",
        choices=("ordered", "strict"),
        default="ordered",
        help="power loss: unsynced directory operations lost as a suffix in order "
        "(ordered, the default) or any subset of them (strict)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes (with --mcp: threads; default: the CPUs)",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="run in memory (pyfakefs) instead of a temporary directory",
    )
    parser.add_argument(
        "--out",
        default="editspec-failures",
        help="directory for failure scenarios (default: %(default)s)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="power-loss states per cut point (default: ordered 4096, strict 64)",
    )
    parser.add_argument(
        "--driver",
        metavar="MODULE:FACTORY",
        default="",
        help="explore this Python DriverFactory (it must declare python_fs) instead of the "
        "reference: crashes and power cuts at its own os calls",
    )
    parser.add_argument(
        "--mcp",
        metavar="COMMAND",
        default="",
        help="explore an MCP server started with this command line ({root} and {state_dir} "
        "are filled in): killed by strace at each file call of each scenario",
    )
    parser.add_argument(
        "--mcp-map", metavar="FILE", help="a TOML map from the contract to the server's tools"
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar on standard error (there is none when it is not a terminal)",
    )
    parser.add_argument(
        "--no-power", action="store_true", help="with --mcp: only the kills, no power cuts"
    )
    parser.add_argument(
        "--no-kills", action="store_true", help="with --mcp: only the power cuts, no kills"
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        type=parse_shard,
        help="run only the K-th of N deterministic slices of the work (a CI matrix job each)",
    )
    parser.add_argument(
        "--results", metavar="FILE", help="also write the rows as JSON (for --merge)"
    )
    parser.add_argument(
        "--merge",
        metavar="FILE",
        nargs="+",
        help="print one table from the --results files of several shards, and exit",
    )
    args = parser.parse_args(argv)
    if args.merge:
        return _merge(args.merge, out_stream, err_stream)
    if not args.mcp and (args.no_power or args.no_kills):
        parser.error("--no-power and --no-kills apply only with --mcp")
    names = args.scenario or list(STANDARD)
    if args.mcp:
        return _main_process(parser, args, names, out_stream, err_stream)
    if args.mcp_map:
        parser.error("--mcp-map applies only with --mcp")
    if args.driver:
        if args.memory:
            parser.error("--memory runs the reference only: a driver is explored on disk")
        from editspec.fault_injection.driver_runner import driver_factory

        label, names = _usable_scenarios(
            parser,
            names,
            bool(args.scenario),
            lambda: driver_factory(args.driver),
            "python_fs",
            err_stream,
        )
        out_stream.write(f"driver {args.driver} ({label})\n")
    try:
        rows, saved, wall = explore(
            names,
            model=args.model,
            jobs=max(1, args.jobs),
            backend="memory" if args.memory else "disk",
            out=args.out,
            progress=None if args.no_progress else err_stream,
            limit=args.limit,
            driver=args.driver,
            shard=args.shard,
        )
    except CleanRunFailed as exc:
        err_stream.write(f"editspec explore: {exc}\n")
        return 1
    _write_results(args, rows, wall)
    out_stream.write(format_table(rows, args.model, wall) + "\n")
    out_stream.write(f"wall time {wall:.1f} s with {max(1, args.jobs)} process(es)\n")
    if saved:
        out_stream.write(
            f"{len(saved)} failure scenario(s) written to {args.out}/; "
            f"re-run one with: editspec replay {saved[0]}\n"
        )
    return 1 if any(row.failed for row in rows) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main_explore())
