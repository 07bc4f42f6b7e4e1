"""Crash any process: an MCP server killed at its n-th call of a system call (DESIGN §5).

Servers written in any language cannot be crashed from inside, as the engine's fs port
or ``spec.crash`` do for Python. ``strace`` can: ``-e inject=SYSCALL:signal=KILL:when=N``
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

``strace_unavailable()`` says why this cannot run here (no strace, ptrace refused, or
signal injection unsupported), after running ``strace -f true`` once.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import attrs

from editspec.contract.drivers.mcp import McpDriver
from editspec.fault_injection import trees

#: System calls worth a kill, grouped by what they do. ``?`` lets strace skip a name the
#: architecture does not have (aarch64 has no plain ``rename``).
RENAME = ("rename", "renameat", "renameat2")
FSYNC = ("fsync", "fdatasync")
WRITE = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
LINK = ("link", "linkat")
UNLINK = ("unlink", "unlinkat")
CHMOD = ("chmod", "fchmod", "fchmodat")

_WAIT_FOR_LOG = 15.0


# -- can strace kill here? --------------------------------------------------------------


@lru_cache(maxsize=1)
def strace_unavailable() -> str | None:
    """Why strace cannot kill a process on this machine, or None when it can."""
    strace = shutil.which("strace")
    if strace is None:
        return "strace is not installed (apt-get install strace)"
    try:
        done = subprocess.run(
            [strace, "-f", "-o", os.devnull, "true"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace -f true failed: {exc}"
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return f"strace cannot trace here (ptrace refused?): {reason[0]}"
    # The shell's `cd` is one chdir: a kill there proves signal injection works.
    try:
        done = subprocess.run(
            [strace, "-f", "-o", os.devnull, "-e", "inject=chdir:signal=KILL", "sh", "-c", "cd /"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace signal injection failed: {exc}"
    if done.returncode not in (-signal.SIGKILL, 128 + signal.SIGKILL):
        return f"strace cannot inject a signal here: exit status {done.returncode} {done.stderr}"
    return None


def strace_options(
    log: str | os.PathLike[str],
    syscalls: Sequence[str],
    *,
    kill: tuple[str, int] | None = None,
) -> list[str]:
    """strace and its options: follow threads, trace ``syscalls``, maybe kill at one."""
    words = ["strace", "-f", "-y", "-s", "24", "-o", os.fspath(log)]
    words += ["-e", "trace=" + ",".join(f"?{name}" for name in syscalls)]
    if kill is not None:
        name, when = kill
        if when < 1:
            raise ValueError(f"when must be >= 1, not {when}")
        words += ["-e", f"inject={name}:signal=KILL:when={when}"]
    return words


def strace_prefix(
    log: str | os.PathLike[str],
    syscalls: Sequence[str],
    *,
    kill: tuple[str, int] | None = None,
) -> list[str]:
    """The words to put before a command to run it under strace (see ``strace_options``)."""
    return [*strace_options(log, syscalls, kill=kill), "--"]


# -- reading the log --------------------------------------------------------------------


@attrs.frozen
class TracedCall:
    """One call strace logged: its thread, its ordinal among that thread's calls of ``name``."""

    tid: int
    name: str
    ordinal: int
    args: str
    result: str  # what it returned, "?" if it never did (the process died in it)

    def describe(self, base: str = "") -> str:
        args = self.args.replace(base + os.sep, "") if base else self.args
        return f"{self.name}({args}) = {self.result}  [thread {self.tid}, #{self.ordinal}]"


@attrs.frozen
class StraceLog:
    """The calls of one run, in the order they were entered; and whether SIGKILL ended it."""

    calls: tuple[TracedCall, ...]
    killed: bool
    complete: bool  # the log ends with its process's exit or death

    def counts(self) -> dict[str, int]:
        """Calls per system call, over all threads."""
        out: dict[str, int] = {}
        for call in self.calls:
            out[call.name] = out.get(call.name, 0) + 1
        return out

    def per_thread_max(self) -> dict[str, int]:
        """Per system call, the most calls one thread made (the range of ``when=N``)."""
        out: dict[str, int] = {}
        for call in self.calls:
            out[call.name] = max(out.get(call.name, 0), call.ordinal)
        return out

    def find(self, name: str, ordinal: int) -> TracedCall | None:
        """The first call that was the ``ordinal``-th ``name`` of its thread."""
        return next((c for c in self.calls if c.name == name and c.ordinal == ordinal), None)


_LINE = re.compile(
    r"^(?P<tid>\d+)\s+(?:"
    r"<\.\.\. (?P<resumed>\w+) resumed>(?P<tail>.*)"
    r"|(?P<event>\+\+\+ .* \+\+\+|--- .* ---)"
    r"|(?P<name>\w+)\((?P<rest>.*))$"
)
_RESULT = re.compile(r"\)\s+= (?P<result>.*)$")


def _split_result(text: str) -> tuple[str, str | None]:
    """``args) = result`` -> (args, result); an unfinished call has no result yet."""
    if text.endswith("<unfinished ...>"):
        return text[: -len("<unfinished ...>")].rstrip(), None
    found = _RESULT.search(text)
    if found is None:
        return text, None
    return text[: found.start()], found.group("result").strip()


def parse_strace_log(text: str) -> StraceLog:
    """The calls of an ``strace -f -o`` log (one line per call, threads interleaved)."""
    calls: list[dict[str, Any]] = []
    open_calls: dict[int, int] = {}  # tid -> index of its unfinished call
    ordinals: dict[tuple[int, str], int] = {}
    killed = complete = False
    first_tid: int | None = None
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        tid = int(match.group("tid"))
        if first_tid is None:
            first_tid = tid
        if match.group("event") is not None:
            event = match.group("event")
            if "killed by SIGKILL" in event:
                killed = True
            if event.startswith("+++"):
                complete = True
            continue
        if match.group("resumed") is not None:
            index = open_calls.pop(tid, None)
            if index is not None:
                args, result = _split_result(match.group("tail"))
                calls[index]["args"] += args
                calls[index]["result"] = result or "?"
            continue
        name = match.group("name")
        key = (tid, name)
        ordinals[key] = ordinals.get(key, 0) + 1
        args, result = _split_result(match.group("rest"))
        calls.append(
            {"tid": tid, "name": name, "ordinal": ordinals[key], "args": args, "result": result}
        )
        if result is None:
            open_calls[tid] = len(calls) - 1
    return StraceLog(
        tuple(
            TracedCall(c["tid"], c["name"], c["ordinal"], c["args"], c["result"] or "?")
            for c in calls
        ),
        killed,
        complete,
    )


# -- judging the disk ------------------------------------------------------------------------


@attrs.frozen
class Judgement:
    """The workspace after a crash and a restart, compared with the trees before and after."""

    state: str  # "before" | "after" | "mixed" | "torn" | "mode"
    torn: tuple[str, ...] = ()  # paths holding neither their old nor their new bytes
    mode: tuple[str, ...] = ()  # right bytes, wrong permission bits
    old: tuple[str, ...] = ()  # paths as before (when the change had new ones)
    new: tuple[str, ...] = ()  # paths as after
    strays: tuple[str, ...] = ()  # paths in neither tree
    lines: tuple[str, ...] = ()

    @property
    def atomic(self) -> bool:
        return self.state in ("before", "after")


def _same(a: trees.Entry | None, b: trees.Entry | None, *, modes: bool = True) -> bool:
    if a is None or b is None:
        return a is b
    if not modes:
        a, b = attrs.evolve(a, mode=None), attrs.evolve(b, mode=None)
    return trees.equal({"x": a}, {"x": b})


def judge(before: trees.Tree, after: trees.Tree, actual: trees.Tree) -> Judgement:
    """Is ``actual`` all-before or all-after, file by file? Strays are listed apart."""
    changed = sorted(
        path
        for path in before.keys() | after.keys()
        if not _same(before.get(path), after.get(path))
    )
    torn, mode, old, new, lines = [], [], [], [], []
    for path in changed:
        got, was, will = actual.get(path), before.get(path), after.get(path)
        if _same(got, was):
            old.append(path)
        elif _same(got, will):
            new.append(path)
        elif _same(got, was, modes=False) or _same(got, will, modes=False):
            mode.append(path)
            assert got is not None
            lines.append(f"{path}: the right bytes with mode {got.mode:o}")
        else:
            torn.append(path)
            found = "missing" if got is None else got.describe()
            want = " or ".join(
                "absent" if entry is None else entry.describe() for entry in (was, will)
            )
            lines.append(f"{path}: torn: expected {want}, found {found}")
    unchanged = [p for p in before.keys() & after.keys() if p not in changed]
    for path in sorted(unchanged):
        if not _same(actual.get(path), before[path]):
            torn.append(path)
            lines.append(f"{path}: an untouched file changed: {trees.diff(before, actual)[:1]}")
    strays = sorted(set(actual) - set(before) - set(after))
    lines.extend(f"{path}: stray {actual[path].describe()}" for path in strays)
    if torn:
        state = "torn"
    elif mode:
        state = "mode"
    elif old and new:
        state = "mixed"
        lines.append(f"mixed: {', '.join(old)} old; {', '.join(new)} new")
    else:
        state = "after" if new else "before"
    return Judgement(
        state, tuple(torn), tuple(mode), tuple(old), tuple(new), tuple(strays), tuple(lines)
    )


# -- targets, scenarios and runs -------------------------------------------------------------

Operation = Callable[[Any], object]  # given the MCP driver (``McpDriver``)


@attrs.frozen(kw_only=True)
class ProcessTarget:
    """An MCP server to kill: its command (with ``{root}``/``{state_dir}``), map, calls.

    ``attach``: start the server plainly and attach strace (``-p``, all threads) once
    ``prepare`` is done, so counting starts at the operation. For servers whose threads
    make many of the traced calls while starting (Node's libuv pool reads modules and
    signals an eventfd with ``write`` after each task): started under strace, nearly
    every ``when=N`` would kill them before the operation. Needs ptrace attach rights.
    """

    name: str
    command: tuple[str, ...]
    server_map: Any  # editspec.contract.drivers._mcp_map.ServerMap
    syscalls: tuple[str, ...]
    attach: bool = False


@attrs.frozen(kw_only=True)
class ProcessScenario:
    """An initial tree, calls that prepare (same server), and the operation to crash."""

    name: str
    initial: trees.Tree
    operation: Operation
    prepare: Operation | None = None


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


def mcp_target(
    command: str | Sequence[str],
    server_map: Any,
    syscalls: Sequence[str],
    *,
    name: str | None = None,
    attach: bool = False,
) -> ProcessTarget:
    """The target for an MCP server command line (a string is split as a shell would)."""
    words = tuple(shlex.split(command) if isinstance(command, str) else command)
    label = name or getattr(server_map, "name", "") or os.path.basename(words[0])
    return ProcessTarget(
        name=label, command=words, server_map=server_map, syscalls=tuple(syscalls), attach=attach
    )


def patch_scenario(count: int) -> ProcessScenario:
    """One patch that updates ``count`` files (some in a subdirectory), each read first."""
    names = [f"pkg/mod{n}.py" if n % 2 else f"mod{n}.py" for n in range(count)]
    initial = {
        name: f"# {name}\nVALUE = {n}\n\ndef f():\n    return VALUE\n"
        for n, name in enumerate(names)
    }
    patch = (
        "*** Begin Patch\n"
        + "".join(
            f"*** Update File: {name}\n@@\n # {name}\n-VALUE = {n}\n+VALUE = {n * 10 + 1}\n"
            for n, name in enumerate(names)
        )
        + "*** End Patch\n"
    )

    def prepare(driver: Any) -> None:
        session = driver.open_session("s1")
        for name in names:
            session.read(name)

    def operation(driver: Any) -> None:
        driver.open_session("s1").apply_patch(patch)

    return ProcessScenario(
        name=f"{count}-file patch", initial=files(initial), prepare=prepare, operation=operation
    )


def replace_scenario(path: str, old: str, new: str) -> ProcessScenario:
    """``write`` over an existing file, read first."""

    def prepare(driver: Any) -> None:
        driver.open_session("s1").read(path)

    def operation(driver: Any) -> None:
        driver.open_session("s1").write(path, new)

    return ProcessScenario(
        name=f"write over {path} ({len(old)} -> {len(new)} bytes)",
        initial=files({path: old}),
        prepare=prepare,
        operation=operation,
    )


def files(contents: Mapping[str, bytes | str], mode: int | None = 0o644) -> trees.Tree:
    """A tree of regular files (``str`` as UTF-8)."""
    return {
        path: trees.Entry.file(data.encode("utf-8") if isinstance(data, str) else data, mode)
        for path, data in contents.items()
    }


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
