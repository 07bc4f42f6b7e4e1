"""``editspec explore --mcp COMMAND``: the standard scenarios against a server process.

A server in any language cannot be crashed from inside, so each standard scenario is
run through the MCP adapter with the server under ``strace``:

* **kills**: killed (SIGKILL) at every rename, link, unlink, fsync and write that
  touches a file of the sandbox during its last step (``strace_kill.
  crash_at_every_call``): the call does not happen and nothing after it runs. The server
  is started again, asked to recover when its map has the tool, and the root must then
  hold every file as before or every file as after, with no file of neither tree (a
  temp file left by a single write is only counted, as it is for the reference);
* **power loss**: the last step traced (``strace_record``: every write with its bytes,
  every fsync, rename, link, unlink, mkdir), and every state a power cut can leave under
  the ``--model`` materialised, the server started on it and asked to recover
  (``process_power``): all-before or all-after, and all-after once the server had
  answered.

The server is started plainly and strace attached once the steps before the last are
done (ptrace attach rights are needed), so the counts and the trace start at the step: the
calls a server makes while it starts and answers the earlier steps, on any of its
threads, cannot take a kill meant for the step. A kill point that never hit the step is
not counted. There is no crash of a process's recovery (``-`` in the table).

A failing power-loss state is saved as a scenario naming the server command and map
(``Scenario.server``), which ``editspec replay`` re-runs; the kill report of a failing
scenario (one line per kill: the call it died in and what the disk held after the
restart) is written beside it.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import attrs

from editspec.fault_injection import process_power
from editspec.fault_injection.explore_rows import Progress, Row, shard_of
from editspec.fault_injection.powerloss import Model
from editspec.fault_injection.process_power import Server
from editspec.fault_injection.scenario import DriverWorkspace, Scenario, perform
from editspec.fault_injection.standard import DEFAULT_LIMITS, SINGLE_WRITES, STANDARD
from editspec.fault_injection.strace_kill import (
    FSYNC,
    LINK,
    RENAME,
    UNLINK,
    WRITE,
    ProcessScenario,
    crash_at_every_call,
    mcp_target,
)

__all__ = ["KILLED_AT", "explore_process", "process_scenario", "tally"]


def _killed_at() -> tuple[str, ...]:

    return RENAME + LINK + UNLINK + FSYNC + WRITE


#: The system calls a server is killed at (those that touch a file of the sandbox).
KILLED_AT: tuple[str, ...] = _killed_at()


#: How often a kill that landed on another thread's call is tried again.
RETRIES = 4


def _run(driver: Any, step: Mapping[str, Any]) -> None:
    outcome = perform(DriverWorkspace(driver), step, "")
    if not outcome.ok:
        raise RuntimeError(f"{step['call']} failed: {outcome.code}: {outcome.message}")


def process_scenario(scenario: Scenario) -> Any:
    """``scenario`` as ``strace_kill`` runs it: the steps before the last prepare, the last
    is the operation killed."""

    def prepare(driver: Any) -> None:
        for step in scenario.steps[:-1]:
            _run(driver, step)

    def operation(driver: Any) -> None:
        _run(driver, scenario.steps[-1])

    return ProcessScenario(
        name=scenario.name, initial=scenario.initial, prepare=prepare, operation=operation
    )


def _failed(name: str, run: Any) -> bool:
    """A kill during the step that broke the files (a stray counts but beside a write)."""
    if run.phase != "operation" or run.killed_at is None:
        return False
    strays = bool(run.judgement is not None and run.judgement.strays)
    return bool(run.problems) or (strays and name not in SINGLE_WRITES)


def kill_finding(server: Any, scenario: Scenario, report: Any, run: Any) -> Scenario:
    """A failing kill as a scenario ``editspec replay`` re-runs (``Scenario.server``)."""

    steps = [dict(step) for step in scenario.steps]
    fault = {
        "kind": "kill",
        "step": len(steps) - 1,
        "syscall": run.syscall,
        "when": run.when,
        "description": f"SIGKILL at the {run.when}-th {run.syscall} of a thread"
        + (f": {run.killed_at.describe(report.base)}" if run.killed_at is not None else ""),
    }
    if scenario.name in SINGLE_WRITES:
        fault["strays_allowed"] = True
    steps[-1]["fault"] = fault
    return attrs.evolve(
        scenario,
        name=f"{scenario.name} (killed, {server.name or os.path.basename(server.command[0])})",
        steps=tuple(steps),
        fault=fault,
        count="syscalls",
        expected=(report.before, report.after),
        actual=None,
        problems=tuple(run.problems or (run.judgement.lines if run.judgement else ())),
        server=server.to_json(),
    )


def tally(name: str, runs: Sequence[Any], seconds: float) -> tuple[Row, int]:
    """The table row of a scenario's kill runs, and how many kills missed its step.

    A kill that never came, or came before the step, is no crash point of it. A run
    fails when the disk is neither all-before nor all-after, or (but for a single write,
    whose temp file the reference leaves too) when a file of neither tree is left.
    """
    temps_allowed = name in SINGLE_WRITES
    row = Row(name, process=True, seconds=seconds)
    elsewhere = 0
    for run in runs:
        if run.phase != "operation" or run.killed_at is None:
            elsewhere += 1
            continue
        row.crash_points += 1
        strays = bool(run.judgement is not None and run.judgement.strays)
        if run.problems or (strays and not temps_allowed):
            row.failed += 1
        else:
            row.passed += 1
            row.notes += strays
    return row, elsewhere


def _power(
    name: str,
    scenario: Scenario,
    server: Any,
    row: Row,
    *,
    model: Model,
    limit: int | None,
    shard: tuple[int, int] | None,
    out: str | None,
    progress: TextIO | None,
) -> list[str]:
    """Check every power-loss state of the scenario's last step through the server; add
    the states to ``row``; the finding files written."""

    with process_power.scratch() as base:
        clean = process_power.process_baseline(server, scenario, base)
        if not clean.outcome.ok:
            raise RuntimeError(
                f"the clean run of {name} failed: {clean.outcome.code}: {clean.outcome.message}"
            )
        chosen = DEFAULT_LIMITS[model] if limit is None else limit
        states, bounded = process_power.process_states(clean, model, limit=chosen)
        states = shard_of(states, shard)
        bar = Progress(len(states), progress) if progress is not None else None
        known = set(clean.before) | set(clean.after)

        def strays(path: str) -> bool:  # a single write's temp file is only counted
            return path not in known

        report = process_power.check_process_power_loss(
            server,
            clean,
            states,
            ignore=strays if name in SINGLE_WRITES else None,
            truncated=bounded,
            progress=None if bar is None else (lambda done, failed: bar.advance(1, done, failed)),
        )
        if bar is not None:
            bar.finish()
    row.power_states += report.states
    row.power = True
    row.bounded = row.bounded or bounded
    row.failed += len(report.failures)
    row.passed += report.states - len(report.failures)
    row.notes += report.notes
    row.seconds += report.seconds
    saved: list[str] = []
    if out is not None:
        for number, failure in enumerate(report.failures):
            finding = process_power.power_finding(
                server, scenario, clean, failure, model, strays=name in SINGLE_WRITES
            )
            path = os.path.join(out, f"{name}-power-{model}-{number}.json")
            finding.save(path)
            saved.append(path)
    return saved


def explore_process(
    names: Sequence[str],
    factory: Any,
    *,
    jobs: int = 1,
    out: str | None = "editspec-failures",
    progress: TextIO | None = None,
    model: Model = "ordered",
    limit: int | None = None,
    power: bool = True,
    kills: bool = True,
    shard: tuple[int, int] | None = None,
) -> tuple[list[Row], list[str], float]:
    """Kill the server of ``factory`` (an MCP adapter factory) at every file call of each
    scenario's last step, and check every power-loss state of it; the rows, the files
    written (kill reports, finding scenarios) and the wall time. ``shard`` (K, N): only
    the K-th of N deterministic slices of the kill points and of the states."""

    started = time.perf_counter()
    target = mcp_target(factory.command, factory.map, KILLED_AT, attach=True)
    server = Server.of(factory)
    rows: list[Row] = []
    saved: list[str] = []
    for number, name in enumerate(names, 1):
        built = STANDARD[name].build()
        row = Row(name, process=True)
        if kills:
            if progress is not None:
                progress.write(f"[{number}/{len(names)}] {name}: killing the server at each call\n")
                progress.flush()
            scenario = process_scenario(built)
            with tempfile.TemporaryDirectory(prefix="editspec-kills-") as base:
                report = crash_at_every_call(
                    target,
                    scenario,
                    base=base,
                    jobs=jobs,
                    files_only=True,
                    retries=RETRIES,
                    shard=shard,
                )
            row, elsewhere = tally(name, report.runs, report.seconds)
            if row.failed and out is not None:
                os.makedirs(out, exist_ok=True)
                path = os.path.join(out, f"{name}-kills.txt")
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(report.format() + "\n")
                saved.append(path)
                for run in report.runs:
                    if _failed(name, run):
                        finding = kill_finding(server, built, report, run)
                        path = os.path.join(out, f"{name}-kill-{run.syscall}-{run.when}.json")
                        finding.save(path)
                        saved.append(path)
            if progress is not None:
                progress.write(
                    f"      {row.crash_points} kills during the step, {row.failed} failed; "
                    f"{elsewhere} kill point(s) never hit the step; {report.seconds:.1f} s\n"
                )
                progress.flush()
        if power:
            if progress is not None:
                progress.write(
                    f"[{number}/{len(names)}] {name}: power cuts ({model}), the server "
                    "started on each state\n"
                )
                progress.flush()
            saved += _power(
                name,
                built,
                server,
                row,
                model=model,
                limit=limit,
                shard=shard,
                out=out,
                progress=progress,
            )
        rows.append(row)
    return rows, saved, time.perf_counter() - started
