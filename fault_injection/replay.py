"""``editspec replay SCENARIO.json``: re-run a saved failure, one file-system operation at a time.

The scenario's initial tree is written to a fresh temporary sandbox (``ws`` is the
workspace root, ``state`` its state directory), and its steps are run through the
reference engine with each step's fault injected (``harness.Runner``), or through the
Python driver the scenario names (``driver_runner.DriverRunner``). Every port
operation is printed as it happens, with its counter and outcome (for a driver, each
mutating ``os`` call, once the block it ran in has ended); the injected fault is
marked; a restart (a fresh workspace, whose constructor recovers) is announced and its
operations printed too. For a power cut the step's trace is printed with the cut point,
the entry operations that were lost and the files whose data was cut.

After each step that has an expectation (``"expect"`` on the step, or the scenario's
``expected`` trees for the last step), the disk is compared with it, and a step that lists
the outcomes the model allows (``"outcomes"``) must end in one of them; the first
divergence is printed as a diff and the replay stops there. Exit status: 1 if the
failure reproduces, 0 if every step now matches, 2 if a saved power cut cannot be
rebuilt because the step now issues other operations than those it names.

A scenario that names a server process (``"server"``) is replayed by
``replay_process``: the server started, the steps sent, the saved power cut rebuilt from
a fresh strace trace (exit 2 if it cannot be), and the system calls printed with the
lost ones marked.

A scenario of several processes (``phases``) is replayed phase by phase: each phase
names its process, a process's opening (a fresh workspace, recovering) prints its
operations, a step that pauses says after which call, and a resumed step prints the
rest of its operations where it resumes. After the last phase, a process still paused
is killed and a fresh workspace recovers; the disk is then compared with ``expected``.
Exit status 2 if the phases cannot run (a process waits for a lock a paused one holds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from editspec.fault_injection import harness
from editspec.fault_injection.faultfs import OpEvent
from editspec.fault_injection.powerloss import PowerState, TraceChanged, TraceOp
from editspec.fault_injection.replay_process import replay_server
from editspec.fault_injection.scenario import Outcome, Scenario, describe_step, versions


class _Printer:
    def __init__(self, out: TextIO, base: str, *, verbose: bool = False) -> None:
        self.out = out
        self.base = base
        self.live = True
        self.verbose = verbose

    def path(self, path: str) -> str:
        if path.startswith(self.base + os.sep):
            return os.path.relpath(path, self.base)
        return path

    def event(self, event: OpEvent) -> None:
        if not self.live:
            return
        record = event.record
        if not self.verbose and not event.counted:
            return  # queries and locks only with --verbose
        counter = f"#{record.index:<3}" if record.index else "    "
        paths = " -> ".join(self.path(p) for p in record.paths)
        size = f" {record.nbytes} bytes" if record.name == "write" else ""
        marker = ""
        if record.outcome == "crash":
            marker = "   <== injected crash: the process dies here"
        elif record.outcome.startswith("fail:"):
            marker = f"   <== injected {record.outcome[5:]}"
        elif record.outcome != "ok":
            marker = f"   ({record.outcome[6:]})"
        self.out.write(f"      {counter} {record.name:<16} {paths}{size}{marker}\n")

    def os_call(self, call: Any, outcome: str) -> None:
        """A driver's mutating ``os`` call (``OsCall``), as the port's operations print."""
        if not self.live:
            return
        paths = " -> ".join(self.path(p) for p in call.paths) if call.paths else call.detail
        marker = ""
        if outcome == "crash":
            marker = "   <== injected crash: the process dies here"
        elif outcome.startswith("fail:"):
            marker = f"   <== injected {outcome[5:]}"
        self.out.write(f"      #{call.index:<3} {call.name:<16} {paths}{marker}\n")

    def restart(self, why: str) -> None:
        if self.live and why != "start":
            self.out.write(f"    -- restart after {why}: a fresh workspace recovers --\n")


def _fault_text(fault: Mapping[str, Any]) -> str:
    kind = fault["kind"]
    if kind == "crash":
        return f"crash at counted operation {fault['at']}"
    if kind == "fail":
        return f"{fault['errno']} at counted operation {fault['at']}"
    if kind == "recovery_crash":
        return (
            f"crash at counted operation {fault['at']}, then a crash at operation "
            f"{fault['recovery_at']} of the recovery"
        )
    point = fault["point"]
    if isinstance(point, Mapping):
        where = f"before the last {point['before_last']} of *{point.get('path_suffix', '')}"
    else:
        where = f"after {point} operations"
    parts = (
        [f"{fault['errno']} at counted operation {fault['fail_at']}"] if "fail_at" in fault else []
    )
    if "crash_at" in fault:
        parts.append(f"the process killed at counted operation {fault['crash_at']}")
        for number, recovery in enumerate(fault.get("recoveries", [{}]), 1):
            failing = (
                f" ({recovery['errno']} at its counted operation {recovery['fail_at']})"
                if "fail_at" in recovery
                else ""
            )
            parts.append(f"recovery {number} in a fresh workspace{failing}")
    cut = f"power cut ({fault.get('model', 'ordered')} model) {where}"
    return ", then ".join([*parts, f"a {cut}"]) if parts else cut


def _print_power_trace(
    out: TextIO,
    printer: _Printer,
    trace: Sequence[TraceOp],
    fault: Mapping[str, Any],
    state: PowerState | None = None,
    marks: Sequence[tuple[int, str]] = (),
) -> None:
    # The state rebuilt for this run, if there is one: a fault may name its cut without
    # positions ("end", "unsynced"), and the state says which operations those are.
    point = state.point if state is not None else int(fault["point"])
    lost = set(state.lost if state is not None else fault.get("lost", ()))
    cut = {key: kept for key, kept in fault.get("cut", ())}
    for op in trace:
        for _position, text in (mark for mark in marks if mark[0] == op.position):
            out.write(f"      ---- {text} ----\n")
        if op.position == point:
            out.write("      ---- power cut here: nothing below reached the disk ----\n")
        paths = " -> ".join(printer.path(p) for p in op.paths)
        size = f" {len(op.data)} bytes" if op.name == "write" else ""
        note = ""
        if op.position in lost:
            note = "   <== lost: its directory was not synced"
        key = f"op:{op.position}"
        if key in cut:
            note += f"   <== data cut to {cut[key]} bytes"
        if op.failed:
            note += "   <== failed: what it covered may never reach the disk"
        out.write(f"      [{op.position:<3}] {op.name:<16} {paths}{size}{note}\n")
    if point >= len(trace):
        out.write("      ---- power cut here, after the last operation ----\n")


def replay(path: str | os.PathLike[str], out: TextIO = sys.stdout, *, verbose: bool = False) -> int:
    """Re-run the scenario at ``path``, printing every operation; 1 if the failure reproduces."""
    scenario = Scenario.load(path)
    out.write(f"scenario {scenario.name}")
    if scenario.description:
        out.write(f": {scenario.description}")
    out.write("\n")
    recorded = scenario.versions
    now = versions()
    out.write(
        f"  recorded with editspec {recorded.get('editspec', '?')}, Python "
        f"{recorded.get('python', '?')}; replaying with editspec {now['editspec']}, "
        f"Python {now['python']}\n"
    )
    for line in scenario.problems:
        out.write(f"  recorded problem: {line}\n")
    base = tempfile.mkdtemp(prefix="editspec-replay-")
    try:
        if scenario.server is not None:
            return replay_server(scenario, base, out, near=os.path.dirname(os.path.abspath(path)))
        return _replay(scenario, base, out, verbose=verbose)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _outcome_text(outcome: Outcome) -> str:
    return f"    -> {outcome.code}" + (f": {outcome.message}" if outcome.message else "") + "\n"


def _divergence(out: TextIO, where: str, problems: Sequence[str]) -> int:
    out.write(f"  FIRST DIVERGENCE {where}:\n")
    for line in problems:
        out.write(f"    {line}\n")
    out.write("reproduced\n")
    return 1


def _report_text(report: harness.PhaseReport) -> str:
    if report.paused:
        return f"    -> paused: process {report.process} waits while the next phases run\n"
    if report.crashed:
        return f"    -> crashed: process {report.process} is dead\n"
    if report.open_error is not None:
        return f"    !! recovery failed: {report.open_error}\n"
    assert report.outcome is not None
    return _outcome_text(report.outcome)


def _replay_phases(scenario: Scenario, base: str, out: TextIO, *, verbose: bool) -> int:
    sandbox = harness.Sandbox(base)
    printer = _Printer(out, sandbox.base, verbose=verbose)

    def paused(name: str, event: OpEvent) -> None:
        record = event.record
        paths = " -> ".join(printer.path(p) for p in record.paths)
        out.write(
            f"      ---- process {name} pauses here, after {record.name} {paths} "
            f"({record.outcome}) ----\n"
        )

    processes = harness.Processes(
        sandbox, count=scenario.count, watch=printer.event, on_pause=paused
    )
    names = list(dict.fromkeys(phase.process for phase in scenario.phases))
    out.write(f"  sandbox {sandbox.base} (ws = workspace root, state = state directory)\n")
    out.write(f"  initial tree: {len(scenario.initial)} entries\n")
    out.write(
        f"  {len(names)} processes ({', '.join(names)}), each a workspace of its own over "
        "the same root and state directory\n"
    )
    processes.start(scenario.initial)
    waiting: dict[str, tuple[int, Mapping[str, Any]]] = {}  # paused: (phase number, step)
    total = len(scenario.phases)
    try:
        for number, phase in enumerate(scenario.phases, 1):
            name = phase.process
            out.write(
                f"  phase {number}/{total}: process {name}"
                + (f": {phase.description}" if phase.description else "")
                + "\n"
            )
            if phase.resume:
                started, step = waiting.pop(name)
                out.write(f"    process {name} resumes its step of phase {started}\n")
                report = processes.resume(name)
                out.write(_report_text(report))
                problems = harness.step_problems(sandbox, step, report)
                if problems:
                    return _divergence(out, f"at phase {number}", problems)
            elif name not in processes.processes:
                out.write(f"    process {name} opens: a fresh workspace recovers\n")
                if phase.open_fault is not None:
                    out.write(f"    fault: {_fault_text(phase.open_fault)} of that recovery\n")
                report = processes.open(name, phase.open_fault)
                if report.outcome is None:
                    out.write(_report_text(report))
                if report.open_error is not None:
                    return _divergence(
                        out, f"at phase {number}", [f"recovery failed: {report.open_error}"]
                    )
            for index, step in enumerate(phase.steps):
                out.write(f"    step {index + 1}/{len(phase.steps)}: {describe_step(step)}\n")
                fault = step.get("fault")
                if fault is not None:
                    out.write(f"      fault: {_fault_text(fault)}\n")
                if "pause_after" in step:
                    out.write(
                        f"      pause: after its port call {step['pause_after']} (queries "
                        "included), while the next phases run\n"
                    )
                report = processes.run(name, step)
                out.write(_report_text(report))
                if report.paused:
                    waiting[name] = (number, step)
                    continue
                problems = harness.step_problems(sandbox, step, report)
                if problems:
                    return _divergence(out, f"at phase {number}, step {index + 1}", problems)
        for name in processes.kill_all():
            out.write(f"  process {name} is killed where it waits\n")
    except harness.Deadlock as exc:
        out.write(f"  !! the phases cannot run: {exc}\n")
        return 2
    out.write("  after the last phase: a fresh workspace recovers\n")
    final = processes.recover()
    if final.restart_error is not None:
        out.write(f"    !! recovery failed: {final.restart_error}\n")
    problems, notes, _actual = harness.check_outcome(sandbox, final, scenario.expected)
    for note in notes:
        out.write(f"    note: {note}\n")
    if problems:
        return _divergence(out, "after the final recovery", problems)
    out.write("    disk matches the model\n")
    out.write("not reproduced: every step matches the model\n")
    return 0


def _replay(scenario: Scenario, base: str, out: TextIO, *, verbose: bool) -> int:
    if scenario.phases:
        return _replay_phases(scenario, base, out, verbose=verbose)
    sandbox = harness.Sandbox(base)
    printer = _Printer(out, sandbox.base, verbose=verbose)
    runner = harness.make_runner(
        sandbox,
        scenario.driver,
        count=scenario.count,
        watch=printer.os_call if scenario.driver else printer.event,
        on_restart=printer.restart,
    )
    out.write(f"  sandbox {sandbox.base} (ws = workspace root, state = state directory)\n")
    if scenario.driver:
        out.write(f"  driver {scenario.driver}: counted operations are its mutating os calls\n")
    try:
        return _replay_steps(scenario, sandbox, printer, runner, out)
    finally:
        runner.close()


def _replay_steps(
    scenario: Scenario, sandbox: harness.Sandbox, printer: _Printer, runner: Any, out: TextIO
) -> int:
    out.write(f"  initial tree: {len(scenario.initial)} entries\n")
    printer.live = False
    runner.start(scenario.initial)
    printer.live = True
    total = len(scenario.steps)
    for number, step in enumerate(scenario.steps):
        fault = step.get("fault")
        headline = f"  step {number + 1}/{total}: {describe_step(step)}"
        if fault is not None:
            headline += f"\n    fault: {_fault_text(fault)}"
        out.write(headline + "\n")
        if fault is not None and fault["kind"] == "power_loss":
            printer.live = False
        try:
            report = runner.run(step)
        except TraceChanged as exc:
            out.write(
                f"  cannot replay step {number + 1}: it now issues a different sequence of "
                f"operations, and the saved power cut names some it no longer has ({exc})\n"
            )
            return 2
        printer.live = True
        if fault is not None and fault["kind"] == "power_loss":
            recorded = scenario.trace if "fail_at" not in fault else ()  # a clean run's
            if recorded and tuple(op.name for op in runner.last_trace) != recorded:
                out.write(
                    "    warning: the engine now issues a different sequence of "
                    "operations than when this scenario was recorded\n"
                )
            for record in runner.last_log:
                if record.outcome.startswith("fail:"):
                    paths = " -> ".join(printer.path(p) for p in record.paths)
                    where = (
                        "in the trace below as failed"
                        if record.name in ("fsync", "fsync_dir")
                        else "not in the trace below"
                    )
                    out.write(
                        f"      #{record.index:<3} {record.name:<16} {paths}   <== injected "
                        f"{record.outcome[5:]}: {where}\n"
                    )
            _print_power_trace(
                out,
                printer,
                runner.last_trace,
                fault,
                report.power_state,
                getattr(runner, "last_marks", ()),
            )
            out.write("    -- restart after the power cut: a fresh workspace recovers --\n")
        if report.outcome is not None:
            out.write(
                f"    -> {report.outcome.code}"
                + (f": {report.outcome.message}" if report.outcome.message else "")
                + "\n"
            )
        elif report.crashed:
            out.write(
                "    -> crashed"
                + (" (and its recovery crashed)" if report.recovery_crashed else "")
                + "\n"
            )
        if report.restart_error is not None:
            out.write(f"    !! recovery failed: {report.restart_error}\n")
        allowed = step.get("outcomes")
        if allowed and report.outcome is not None and report.outcome.code not in allowed:
            out.write(f"  FIRST DIVERGENCE at step {number + 1}:\n")
            out.write(
                f"    the engine answered {report.outcome.code}; the model expects one of "
                f"{', '.join(allowed)}\n"
            )
            out.write("reproduced\n")
            return 1
        expected = step.get("expect")
        expect_if = step.get("expect_if")
        answer = report.outcome
        if expect_if is not None and answer is not None:
            # The disk must be what the answer says: all-after for a success, all-before
            # for an error, either for NEEDS_RECOVERY (as the scenario lists them).
            expected = expect_if.get(answer.code)
            if expected is None:
                out.write(f"  FIRST DIVERGENCE at step {number + 1}:\n")
                out.write(
                    f"    the engine answered {answer.code}; the scenario accepts "
                    f"{', '.join(sorted(expect_if))}\n"
                )
                out.write("reproduced\n")
                return 1
        if expected is None and number == total - 1 and scenario.expected:
            expected = list(scenario.expected)
        if expected is None and report.restart_error is None:
            continue
        problems, notes, _actual = harness.check_outcome(
            sandbox,
            report,
            expected or [],
            journals=runner.checks_journals,
            failed=answer is not None and not answer.ok,
        )
        for note in notes:
            out.write(f"    note: {note}\n")
        if problems:
            out.write(f"  FIRST DIVERGENCE at step {number + 1}:\n")
            for line in problems:
                out.write(f"    {line}\n")
            out.write("reproduced\n")
            return 1
        out.write("    disk matches the model\n")
    out.write("not reproduced: every step matches the model\n")
    return 0


def main_replay(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None) -> int:
    """Entry point of ``editspec replay SCENARIO.json``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="editspec replay", description="re-run a saved fault-injection scenario"
    )
    parser.add_argument("scenario", help="a scenario JSON file written by explore or the machines")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print queries (lstat, read_bytes, ...) and locks",
    )
    args = parser.parse_args(argv)
    return replay(args.scenario, stdout if stdout is not None else sys.stdout, verbose=args.verbose)
