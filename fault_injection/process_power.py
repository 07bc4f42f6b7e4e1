"""Power loss for a server process in any language: strace's trace, every state checked.

A server is started plainly over a sandbox (``ws`` the root, ``state`` its state
directory), the steps before the last are sent, and the image of both directories is
taken. strace then attaches to the server's process tree (``strace_record.attach``), the
last step is sent, strace detaches, and its log becomes the durability model's trace
(``strace_record.StraceRecording``): every write with its bytes and offset, every fsync,
rename, link, unlink, mkdir and rmdir under the two directories.

Every distinct state a power cut can leave after any prefix of that trace (the
``ordered`` model, or ``strict``) is then written to the same paths (``powerloss.
materialize``: absolute paths a journal recorded stay valid), the server is started on
it, asked to recover when its map has the tool, and the root is compared with the tree
before the step and the tree after: either one while the step ran, only the tree after
once it had returned. "Returned" is exact here: the trace position of the server's
last write to its standard output (the answer) splits the trace; a cut after it that
loses the new bytes is a success a power cut undid (WRITE-027). The tree is read while
the recovered server still runs; the server is then killed, so nothing it does on its
way out touches the next state.

A trace with calls the model cannot replay (``StraceRecording.unmodeled``: io_uring, a
shared mmap, ...) is refused (``Unmodeled``) rather than judged.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from editspec.contract.drivers.mcp import McpDriver, default_map, load_map
from editspec.fault_injection import trees
from editspec.fault_injection._durability import Model, PowerState, power_loss_states
from editspec.fault_injection.harness import power_fault
from editspec.fault_injection.powerloss import materialize
from editspec.fault_injection.scenario import DriverWorkspace, Outcome, Scenario, perform
from editspec.fault_injection.strace_record import StraceRecording, attach

__all__ = [
    "ProcessBaseline",
    "ProcessPowerFailure",
    "ProcessPowerReport",
    "Server",
    "Unmodeled",
    "check_process_power_loss",
    "judge_tree",
    "power_finding",
    "process_baseline",
    "process_states",
    "recover_and_capture",
]


class Unmodeled(RuntimeError):
    """The server did something the power-loss model cannot replay."""


@attrs.frozen
class Server:
    """How to start a server: its command line (``{root}``, ``{state_dir}``) and tool map."""

    command: tuple[str, ...]
    server_map: Any  # editspec.contract.drivers._mcp_map.ServerMap
    name: str = ""

    def driver(self, root: str, state_dir: str) -> Any:

        return McpDriver(list(self.command), self.server_map, Path(root), Path(state_dir))

    def to_json(self) -> dict[str, Any]:
        """For a scenario: the running interpreter as ``{python}``, the home directory as
        ``~``, the map's path relative to the current directory when it lies under it (no
        machine paths in findings)."""

        home = os.path.expanduser("~")
        command = [
            "{python}"
            if word == sys.executable
            else "~" + word[len(home) :]
            if home != os.sep and word.startswith(home + os.sep)
            else word
            for word in self.command
        ]
        source = str(getattr(self.server_map, "source", "") or "")
        if source.startswith("<"):
            source = ""
        elif source:
            real, here = os.path.realpath(source), os.path.realpath(os.getcwd())
            if real.startswith(here + os.sep):
                source = os.path.relpath(real, here)
        return {"command": command, "map": source, **({"name": self.name} if self.name else {})}

    @classmethod
    def from_json(cls, value: Mapping[str, Any], *, near: str = "") -> Server:
        """The server a scenario names (its map found as given, else beside ``near``,
        else in the checkout that holds this package)."""

        command = tuple(
            sys.executable if w == "{python}" else os.path.expanduser(str(w))
            for w in value["command"]
        )
        source = str(value.get("map") or "")
        if not source:
            return cls(command, default_map(), str(value.get("name", "")))
        here = Path(__file__).resolve().parents[1]
        for candidate in (Path(source), Path(near) / source, here / source):
            if candidate.is_file():
                return cls(command, load_map(candidate), str(value.get("name", "")))
        raise FileNotFoundError(f"the scenario's MCP map {source} is not found")

    @classmethod
    def of(cls, factory: Any) -> Server:
        """The server of an MCP adapter factory (``factory.command``, ``factory.map``)."""

        command = factory.command
        words = tuple(shlex.split(command) if isinstance(command, str) else command)
        return cls(words, factory.map, getattr(factory.map, "name", "") or "")


def _kill(driver: Any) -> None:
    with contextlib.suppress(Exception):
        driver.kill()
    driver.close()


@attrs.frozen
class ProcessBaseline:
    """A clean run of a scenario's last step through a server, recorded by strace."""

    root: str
    state_dir: str
    before: trees.Tree
    after: trees.Tree
    outcome: Outcome
    recording: StraceRecording
    returned_at: int  # trace operations before the server's answer went out

    def acceptable_at(self, point: int) -> tuple[trees.Tree, ...]:
        if self.outcome.ok and point >= self.returned_at:
            return (self.after,)
        return (self.before, self.after)


def _sandbox(base: str, initial: Mapping[str, trees.Entry]) -> tuple[str, str]:
    root, state_dir = os.path.join(base, "ws"), os.path.join(base, "state")
    for path in (root, state_dir):
        if os.path.lexists(path):
            shutil.rmtree(path)
        os.makedirs(path)
    trees.write(root, initial)
    return os.path.realpath(root), os.path.realpath(state_dir)


def process_baseline(server: Server, scenario: Scenario, base: str) -> ProcessBaseline:
    """Run ``scenario`` through ``server`` in ``base``; its last step traced by strace."""
    root, state_dir = _sandbox(base, scenario.initial)
    driver = server.driver(root, state_dir)
    try:
        pid = driver.pid
        if pid is None:
            raise RuntimeError("the server's pid is unknown: strace cannot attach")
        workspace = DriverWorkspace(driver)
        for step in scenario.steps[:-1]:
            outcome = perform(workspace, step, root)
            if not outcome.ok:
                raise RuntimeError(f"{step['call']} failed: {outcome.code}: {outcome.message}")
        recording = StraceRecording([root, state_dir])
        recording.start()
        before = trees.capture(root)
        tracer = attach(pid, os.path.join(base, "strace.log"))
        try:
            outcome = perform(workspace, scenario.steps[-1], root)
        finally:
            text = tracer.stop()
    finally:
        _kill(driver)
    recording.load(text, pid=pid, cwd=tracer.cwd, umask=tracer.umask)
    answered = [at for at in recording.stdout_writes if at <= len(recording.ops)]
    returned_at = answered[-1] if answered else len(recording.ops)
    return ProcessBaseline(
        root, state_dir, before, trees.capture(root), outcome, recording, returned_at
    )


def process_states(
    base: ProcessBaseline, model: Model = "ordered", *, limit: int = 4096
) -> tuple[list[PowerState], bool]:
    """The distinct power-loss states, and whether ``limit`` bounded them. Those after the
    answer come first: a success a cut undoes is the likeliest failure of a server."""
    if base.recording.unmodeled:
        raise Unmodeled("; ".join(dict.fromkeys(base.recording.unmodeled)))
    ops = base.recording.ops
    cut = min(base.returned_at, len(ops) + 1)
    during, hit = power_loss_states(
        base.recording.image, ops, model, points=range(cut), limit=limit
    )
    done, hit_done = power_loss_states(
        base.recording.image, ops, model, points=range(cut, len(ops) + 1), limit=limit
    )
    return done + during, hit or hit_done


def recover_and_capture(server: Server, root: str, state_dir: str) -> tuple[str, trees.Tree]:
    """Start the server on what the disk holds, ask it to recover if it can; the error and
    the root's tree (read while it runs, before it is killed)."""
    driver = server.driver(root, state_dir)
    error = ""
    try:
        _ = driver.pid  # a server that recovers on start does it now
        if "recover" in server.server_map.tools:
            driver.recover()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}".splitlines()[0]
    tree = trees.capture(root)
    _kill(driver)
    return error, tree


@attrs.frozen
class ProcessPowerFailure:
    state: PowerState
    problems: tuple[str, ...]
    actual: trees.Tree
    acceptable: tuple[trees.Tree, ...]


@attrs.frozen
class ProcessPowerReport:
    states: int
    truncated: bool
    failures: tuple[ProcessPowerFailure, ...]
    notes: int  # states that passed with a stray file beside them
    seconds: float


def judge_tree(
    acceptable: Sequence[trees.Tree],
    actual: trees.Tree,
    ignore: Callable[[str], bool] | None,
) -> tuple[list[str], bool]:
    """Problems, and whether strays were left out (``ignore``) to pass."""
    seen = actual
    if ignore is not None:
        seen = {path: entry for path, entry in actual.items() if not ignore(path)}
    if any(trees.equal(tree, seen) for tree in acceptable):
        return [], seen != actual
    closest = min(acceptable, key=lambda tree: len(trees.diff(tree, seen)))
    return ["disk is neither all-before nor all-after:"] + [
        "  " + line for line in trees.diff(closest, seen)
    ], False


def check_process_power_loss(
    server: Server,
    base: ProcessBaseline,
    states: Sequence[PowerState],
    *,
    ignore: Callable[[str], bool] | None = None,
    stop_after: int | None = None,
    truncated: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ProcessPowerReport:
    """Materialize each state, start the server on it, recover, and judge the root."""
    started = time.perf_counter()
    failures: list[ProcessPowerFailure] = []
    notes = 0
    roots = base.recording.roots
    for number, state in enumerate(states, 1):
        materialize(state, roots)
        error, actual = recover_and_capture(server, base.root, base.state_dir)
        acceptable = base.acceptable_at(state.point)
        problems, stray = judge_tree(acceptable, actual, ignore)
        if error:
            problems.insert(0, f"the restarted server failed: {error}")
        notes += stray and not problems
        if problems:
            failures.append(ProcessPowerFailure(state, tuple(problems), actual, acceptable))
        if progress is not None:
            progress(number, len(failures))
        if stop_after is not None and len(failures) >= stop_after:
            break
    checked = number if states else 0
    return ProcessPowerReport(
        checked, truncated, tuple(failures), notes, time.perf_counter() - started
    )


@contextlib.contextmanager
def scratch(prefix: str = "editspec-power-") -> Iterator[str]:
    """A temporary directory (under the temp dir, as ``materialize`` requires)."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def power_finding(
    server: Server,
    scenario: Scenario,
    base: ProcessBaseline,
    failure: ProcessPowerFailure,
    model: Model,
    *,
    strays: bool = False,
) -> Scenario:
    """A failing state as a scenario ``editspec replay`` re-runs (``Scenario.server``)."""

    steps = [dict(step) for step in scenario.steps]
    steps[-1]["fault"] = {"step": len(steps) - 1, **power_fault(failure.state, model)}
    sandbox = os.path.dirname(base.root) + os.sep  # no temporary paths in a finding
    description = steps[-1]["fault"]["description"].replace(sandbox, "")
    steps[-1]["fault"]["description"] = description
    steps[-1]["fault"]["returned_at"] = base.returned_at
    if strays:
        steps[-1]["fault"]["strays_allowed"] = True  # files of neither tree only counted
    return attrs.evolve(
        scenario,
        name=f"{scenario.name} (power cut, {server.name or os.path.basename(server.command[0])})",
        steps=tuple(steps),
        fault=steps[-1]["fault"],
        count="syscalls",
        trace=tuple(op.name for op in base.recording.ops),
        expected=failure.acceptable,
        actual=failure.actual,
        problems=tuple(line.replace(sandbox, "") for line in failure.problems),
        server=server.to_json(),
    )
