"""Crash any process: an MCP server killed at its n-th call of a system call (DESIGN §5).

Servers written in any language cannot be crashed from inside, as the engine's fs port
or ``osfaults`` do for Python. ``strace`` can: ``-e inject=SYSCALL:signal=KILL:when=N``
delivers SIGKILL on *entry* to the N-th call, so that call does not happen and nothing
after it runs (the kernel skips a system call whose task has a fatal signal pending at
its entry stop) -- exactly a crash point.

Theory of operation:

* strace counts the calls that ``when=N`` refers to **per system call and per tracee**
  (a tracee is a thread, ``-f`` follows them all). ``rename,fsync:when=3`` would fire at
  the third rename *or* the third fsync of *any* thread. So each run injects one system
  call, and N goes from 1 to the largest count of that call in one thread of a clean run.
* ``crash_at_every_call`` first runs the scenario cleanly under ``strace -f -e trace=...``
  (no injection) and parses the log: every traced call with its thread and its ordinal
  in that thread (``parse_strace_log``). The tree after that run is the "after" tree;
  the "before" tree is the initial one as ``prepare`` leaves it (run once by a server
  that is not traced).
* Then, for each system call and each N: a fresh workspace (the scenario's initial
  tree), the server started under strace through the MCP adapter
  (``editspec.contract.drivers.mcp``), ``prepare`` (e.g. the reads that authorize a write),
  then the operation; the connection is expected to die. The run's strace log says where
  the process died: before the operation was issued, during it, or not at all (a
  multi-threaded server may spread its calls differently over its threads from one run
  to the next, so a kill point is located from the log of the run that hit it).
* The server is then started again *without* strace over the same directories, asked
  to recover when its tool map has a ``recover`` tool (``editspec serve`` does), and
  stopped. The workspace root is then compared with the trees before and after, file by
  file (``judge``): every file old or new and all on one side (``before`` / ``after``),
  some old and some new (``mixed``: not atomic across files), a file holding neither
  (``torn``), the right bytes with the wrong permission bits (``mode``), and files that
  are in neither tree (strays: temp or stage files left behind).

``strace_inject`` holds what strace needs (``strace_unavailable()`` says why it cannot
run here) and reads a clean run's log; ``kill_judge`` compares the trees;
``kill_scenarios`` builds targets and the standard process scenarios.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from editspec.contract.drivers.mcp import McpDriver
from editspec.fault_injection import trees
from editspec.fault_injection.kill_judge import Judgement, judge
from editspec.fault_injection.kill_scenarios import (
    ProcessScenario,
    ProcessTarget,
    files,
    mcp_target,
    patch_scenario,
    replace_scenario,
)
from editspec.fault_injection.strace_inject import (
    CHMOD,
    FSYNC,
    LINK,
    RENAME,
    UNLINK,
    WRITE,
    StraceLog,
    TracedCall,
    parse_strace_log,
    strace_options,
    strace_prefix,
    strace_unavailable,
)

_WAIT_FOR_LOG = 15.0


# -- targets, scenarios and runs -------------------------------------------------------------


@attrs.frozen
class KillRun:
    """One run killed (or not) at the ``when``-th ``syscall`` of a thread."""

    syscall: str
    when: int
    phase: str  # "operation" | "prepare" (died before the operation) | "none" (not killed)
    killed_at: TracedCall | None
    judgement: Judgement | None
    error: str = ""  # what the operation raised (a dead connection, normally)
    restart_error: str = ""
    log: StraceLog | None = attrs.field(default=None, eq=False, repr=False)  # of this run

    @property
    def problems(self) -> tuple[str, ...]:
        out = [f"restart failed: {self.restart_error}"] if self.restart_error else []
        if self.judgement is not None and not self.judgement.atomic:
            out.extend(self.judgement.lines)
        return tuple(out)


@attrs.frozen
class KillReport:
    target: str
    scenario: str
    clean: StraceLog
    before: trees.Tree
    after: trees.Tree
    runs: tuple[KillRun, ...]
    seconds: float
    base: str = ""

    def during(self) -> tuple[KillRun, ...]:
        """The runs killed while the operation was running."""
        return tuple(run for run in self.runs if run.phase == "operation")

    def states(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for run in self.during():
            assert run.judgement is not None
            out[run.judgement.state] = out.get(run.judgement.state, 0) + 1
        return out

    def format(self) -> str:
        """A table: one line per run, the kill site and what the disk held afterwards."""
        head = f"{self.target}: {self.scenario}: clean run "
        head += ", ".join(f"{n} {name}" for name, n in sorted(self.clean.counts().items()))
        lines = [head]
        for run in self.runs:
            site = run.killed_at.describe(self.base) if run.killed_at is not None else "-"
            state = run.judgement.state if run.judgement is not None else "-"
            strays = len(run.judgement.strays) if run.judgement is not None else 0
            lines.append(
                f"  {run.syscall:<10} when={run.when:<3} {run.phase:<9} {state:<6} "
                f"strays={strays} at {site}"
            )
            lines.extend(f"      {problem}" for problem in run.problems)
        lines.append(f"  states after a kill during the operation: {self.states()}")
        lines.append(f"  {len(self.runs)} runs in {self.seconds:.1f} s")
        return "\n".join(lines)


class _Sandbox:
    """``ws`` (the root) and ``state`` under a fresh directory, and a strace log path."""

    def __init__(self, base: Path, name: str, initial: trees.Tree) -> None:
        self.dir = base / name
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.root = self.dir / "ws"
        self.state_dir = self.dir / "state"
        self.root.mkdir(parents=True)
        self.state_dir.mkdir()
        self.log = self.dir / "strace.log"
        trees.write(self.root, initial)


def _driver(command: Sequence[str], target: ProcessTarget, box: _Sandbox) -> Any:

    return McpDriver(list(command), target.server_map, box.root, box.state_dir)


def _stop(driver: Any, pid: int | None) -> None:
    """Stop the server, wait for it, and make sure nothing of its process group lingers."""
    with contextlib.suppress(Exception):
        driver.restart()
    driver.close()
    if pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _read_log(path: Path, *, wait: bool = True) -> StraceLog:
    deadline = time.monotonic() + (_WAIT_FOR_LOG if wait else 0)
    while True:
        text = path.read_text(errors="replace") if path.exists() else ""
        log = parse_strace_log(text)
        if log.complete or time.monotonic() >= deadline:
            return log
        time.sleep(0.05)


def _attach(box: _Sandbox, target: ProcessTarget, kill: tuple[str, int] | None, pid: int) -> Any:
    """strace attached to every thread of ``pid``; returns once it says it is attached."""
    words = [*strace_options(box.log, target.syscalls, kill=kill), "-p", str(pid)]
    tracer = subprocess.Popen(
        words,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert tracer.stderr is not None
    said = tracer.stderr.readline()
    if "attached" not in said:
        tracer.kill()
        tracer.wait()
        raise RuntimeError(f"strace could not attach to {pid}: {said.strip()}")
    return tracer


def _detach(tracer: Any) -> None:
    """Let strace go (SIGINT detaches it) if the server outlived it; wait for it."""
    if tracer.poll() is None:
        tracer.send_signal(signal.SIGINT)
    try:
        tracer.wait(timeout=_WAIT_FOR_LOG)
    except subprocess.TimeoutExpired:
        tracer.kill()
        tracer.wait()
    tracer.stderr.close()


def _traced_run(
    target: ProcessTarget,
    scenario: ProcessScenario,
    box: _Sandbox,
    kill: tuple[str, int] | None,
) -> tuple[str, str, StraceLog]:
    """Run the scenario under strace; the phase reached, the error raised, the log."""
    if target.attach:
        command = list(target.command)
    else:
        command = [*strace_prefix(box.log, target.syscalls, kill=kill), *target.command]
    driver = _driver(command, target, box)
    phase, error, pid, tracer = "prepare", "", None, None
    try:
        pid = driver.pid
        if scenario.prepare is not None:
            scenario.prepare(driver)
        if target.attach:
            if pid is None:
                raise RuntimeError("the server's pid is unknown: cannot attach strace")
            tracer = _attach(box, target, kill, pid)
        phase = "operation"
        scenario.operation(driver)
        phase = "returned"
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}".splitlines()[0]
    finally:
        if tracer is not None:
            # Detach before stopping, so the server's exit is not traced.
            _detach(tracer)
        _stop(driver, pid)
    return phase, error, _read_log(box.log, wait=tracer is None)


def _restart_and_recover(target: ProcessTarget, box: _Sandbox) -> tuple[str, trees.Tree]:
    """Start the server without strace, ask it to recover if it can; the error and the tree.

    The tree is read once recovery has answered, while the server still runs (nothing is
    in flight then); the server is stopped without waiting for it to exit.
    """
    driver = _driver(target.command, target, box)
    error = ""
    try:
        _ = driver.pid  # starting is the first recovery of a server that recovers on start
        if "recover" in target.server_map.tools:
            driver.recover()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    tree = trees.capture(box.root)
    driver.close()
    return error, tree


def _prepared_tree(target: ProcessTarget, scenario: ProcessScenario, base: Path) -> trees.Tree:
    """The tree the operation starts from: the initial one, changed by ``prepare`` (run by
    a server that is not traced)."""
    box = _Sandbox(base, "before", scenario.initial)
    if scenario.prepare is not None:
        driver = _driver(target.command, target, box)
        try:
            scenario.prepare(driver)
        finally:
            _stop(driver, driver.pid)
    return trees.capture(box.root)


def _kill_run(
    target: ProcessTarget,
    scenario: ProcessScenario,
    before: trees.Tree,
    after: trees.Tree,
    base: Path,
    syscall: str,
    when: int,
) -> KillRun:
    box = _Sandbox(base, f"{syscall}-{when}", scenario.initial)
    reached, error, log = _traced_run(target, scenario, box, (syscall, when))
    site = log.find(syscall, when) if log.killed else None
    if not log.killed:
        phase = "none"
    elif reached == "prepare":
        phase = "prepare"
    else:
        phase = "operation"
    restart_error, actual = _restart_and_recover(target, box)
    judgement = judge(before, after, actual)
    if not restart_error:
        shutil.rmtree(box.dir, ignore_errors=True)
    return KillRun(syscall, when, phase, site, judgement, error, restart_error, log)


def kill_once(
    target: ProcessTarget,
    scenario: ProcessScenario,
    base: str | os.PathLike[str],
    syscall: str,
    when: int,
    *,
    retries: int = 0,
) -> tuple[trees.Tree, trees.Tree, KillRun]:
    """The trees before and after a clean run, and one run killed at the ``when``-th
    ``syscall`` of a thread (``replay`` of a kill finding), run again up to ``retries``
    times while the kill lands on no call under ``base``."""
    scratch = Path(base)
    before = _prepared_tree(target, scenario, scratch)
    box = _Sandbox(scratch, "clean", scenario.initial)
    reached, error, _ = _traced_run(target, scenario, box, None)
    if reached != "returned":
        raise RuntimeError(f"the clean run of {scenario.name} failed: {error}")
    after = trees.capture(box.root)
    run = until_landed(
        lambda: _kill_run(target, scenario, before, after, scratch, syscall, when),
        scratch,
        retries,
    )
    return before, after, run


def until_landed(kill: Callable[[], KillRun], under: Path, retries: int) -> KillRun:
    """``kill()``, again up to ``retries`` times while its kill landed on no call that
    names a path under ``under`` (another thread's call counted first)."""
    run = kill()
    for _ in range(retries):
        if run.killed_at is not None and os.fspath(under) in run.killed_at.args:
            break
        run = kill()
    return run


def _spread(items: Sequence[tuple[str, int]], count: int) -> list[tuple[str, int]]:
    """At most ``count`` of ``items``, evenly spaced, the first and the last included."""
    if count >= len(items):
        return list(items)
    if count <= 1:
        return list(items[:count])
    picked = (items[round(i * (len(items) - 1) / (count - 1))] for i in range(count))
    return list(dict.fromkeys(picked))


def kill_points(
    log: StraceLog,
    syscalls: Sequence[str],
    *,
    at_most: Mapping[tuple[str, ...], int] | None = None,
    under: str | os.PathLike[str] | None = None,
) -> list[tuple[str, int]]:
    """The ``(system call, when)`` pairs to kill at, from a clean run's log.

    ``under``: only the calls whose arguments name a path under that directory (``-y``
    shows the path of every descriptor), so the writes to a file count and the writes to
    the MCP pipe do not. ``at_most``: for a group of system calls, at most that many
    points, spread evenly from the group's first call to its last (in the log's order).
    """
    prefix = os.fspath(under) if under is not None else None
    found: list[tuple[str, int]] = []
    for call in log.calls:
        if call.name in syscalls and (prefix is None or prefix in call.args):
            found.append((call.name, call.ordinal))
    points = list(dict.fromkeys(found))
    for group, count in (at_most or {}).items():
        members = [point for point in points if point[0] in group]
        keep = set(_spread(members, count))
        points = [point for point in points if point[0] not in group or point in keep]
    return points


def crash_at_every_call(
    target: ProcessTarget,
    scenario: ProcessScenario,
    *,
    base: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    syscalls: Sequence[str] | None = None,
    at_most: Mapping[tuple[str, ...], int] | None = None,
    files_only: bool = False,
    retries: int = 0,
    shard: tuple[int, int] | None = None,
) -> KillReport:
    """Kill ``target`` at every call of ``syscalls`` (default: the target's) during
    ``scenario``'s operation, restart and recover it, and judge the disk after each.

    The clean run must succeed; its log gives the kill points (see the module doc).
    ``at_most`` and ``files_only`` sample them (``kill_points``): without them, every
    ``when=N`` up to the most calls one thread made. With ``files_only``, a run whose
    kill landed on a call that names no file of its sandbox (another thread's call
    counted first: a write to the MCP pipe, say) is run again, up to ``retries`` times.
    ``shard`` (K, N): only every N-th kill point from the K-th (the clean run is the same
    in every shard, so the shards cover the points once between them).
    """
    reason = strace_unavailable()
    if reason is not None:
        raise RuntimeError(reason)
    started = time.perf_counter()
    scratch = Path(base) if base is not None else Path(tempfile.mkdtemp(prefix="editspec-kill-"))
    scratch.mkdir(parents=True, exist_ok=True)
    before = _prepared_tree(target, scenario, scratch)
    box = _Sandbox(scratch, "clean", scenario.initial)
    reached, error, clean = _traced_run(target, scenario, box, None)
    if reached != "returned":
        raise RuntimeError(f"the clean run of {scenario.name} failed: {error}")
    after = trees.capture(box.root)
    wanted = tuple(syscalls) if syscalls is not None else target.syscalls
    if at_most is None and not files_only:
        ranges = clean.per_thread_max()
        points = [(name, when) for name in wanted for when in range(1, ranges.get(name, 0) + 1)]
    else:
        points = kill_points(clean, wanted, at_most=at_most, under=box.dir if files_only else None)
    if shard is not None:
        points = points[shard[0] - 1 :: shard[1]]

    def run_at(point: tuple[str, int]) -> KillRun:
        return until_landed(
            lambda: _kill_run(target, scenario, before, after, scratch, *point),
            scratch,
            retries if files_only else 0,
        )

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        runs = list(pool.map(run_at, points))
    return KillReport(
        target.name,
        scenario.name,
        clean,
        before,
        after,
        tuple(runs),
        time.perf_counter() - started,
        os.fspath(scratch),
    )


__all__ = [
    "CHMOD",
    "FSYNC",
    "LINK",
    "RENAME",
    "UNLINK",
    "WRITE",
    "Judgement",
    "KillReport",
    "KillRun",
    "ProcessScenario",
    "ProcessTarget",
    "StraceLog",
    "TracedCall",
    "crash_at_every_call",
    "files",
    "judge",
    "kill_once",
    "kill_points",
    "mcp_target",
    "parse_strace_log",
    "patch_scenario",
    "replace_scenario",
    "strace_options",
    "strace_prefix",
    "strace_unavailable",
]
