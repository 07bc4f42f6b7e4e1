"""``editspec replay`` for a finding of a server process: the power cut rebuilt from a
fresh strace trace.

A scenario that names a server (``Scenario.server``: its command line and MCP map) is
re-run as ``explore --mcp`` found it: the server is started over a fresh sandbox, the
steps before the last are sent, the last is sent with strace attached
(``process_power.process_baseline``), and the saved cut (the point, the entry operations
lost, the bytes kept of each file cut short, files named by the operation that created
them) is rebuilt from this new trace. A cut the new trace cannot rebuild (the server now
issues other calls) is refused: exit status 2, as for a Python finding. Otherwise every
system call the step made under the roots is printed with the trace operations it
became, the cut point, the lost operations and the cut files marked; the state is
written to disk, the server started on it and asked to recover, and the root compared
with this run's trees before and after the step (only after, once the server had
answered). Exit status 1 if the failure reproduces, 0 if the disk is now acceptable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

from editspec.fault_injection import process_power
from editspec.fault_injection._durability import TraceChanged, rebuild_state
from editspec.fault_injection.explore_process import KILLED_AT, RETRIES, process_scenario
from editspec.fault_injection.powerloss import materialize
from editspec.fault_injection.scenario import Scenario, describe_step
from editspec.fault_injection.strace_kill import kill_once, mcp_target

__all__ = ["replay_server"]


def _marks(position: int, fault: Mapping[str, Any]) -> str:
    lost = set(fault.get("lost", ()))
    cut = {key: kept for key, kept in fault.get("cut", ())}
    note = ""
    if position in lost:
        note += "   <== lost: its directory was not synced"
    key = f"op:{position}"
    if key in cut:
        kept = cut[key]
        note += (
            "   <== the file it made lost its new bytes"
            if kept < 0
            else f"   <== the file it made keeps {kept} bytes"
        )
    return note


def _print_calls(
    out: TextIO, base: process_power.ProcessBaseline, fault: Mapping[str, Any], scratch: str
) -> None:
    point = int(fault["point"])
    recording = base.recording
    shown_cut = False
    out.write(
        f"    the step's system calls under the roots ({len(recording.ops)} trace operations; "
        f"the server answered after {base.returned_at}):\n"
    )
    for positions, text in recording.describe_calls(scratch):
        if not shown_cut and positions and positions[0] >= point:
            out.write("      ---- power cut here: nothing below reached the disk ----\n")
            shown_cut = True
        where = ",".join(str(p) for p in positions)
        marks = "".join(_marks(p, fault) for p in positions)
        out.write(f"      [{where:<5}] {text}{marks}\n")
    if not shown_cut:
        out.write("      ---- power cut here, after the last call ----\n")


def replay_server(scenario: Scenario, base: str, out: TextIO, *, near: str = "") -> int:
    """Re-run a server scenario's power cut (see the module); the exit status."""
    assert scenario.server is not None
    server = process_power.Server.from_json(scenario.server, near=near)
    out.write(
        f"  server {' '.join(server.command)} (map {scenario.server.get('map') or 'default'})\n"
    )
    fault = scenario.steps[-1].get("fault")
    if fault is None or fault.get("kind") not in ("power_loss", "kill"):
        out.write(
            "  a server scenario replays a power cut or a kill of its last step; "
            "this one has neither\n"
        )
        return 2
    plain = tuple({k: v for k, v in step.items() if k != "fault"} for step in scenario.steps)
    clean_scenario = Scenario(name=scenario.name, initial=scenario.initial, steps=plain)
    for number, step in enumerate(plain, 1):
        out.write(f"  step {number}/{len(plain)}: {describe_step(step)}\n")
    if fault["kind"] == "kill":
        return _replay_kill(server, clean_scenario, fault, base, out)
    out.write(
        f"    fault: power cut ({fault.get('model', 'ordered')} model) after "
        f"{fault['point']} trace operations\n"
    )
    baseline = process_power.process_baseline(server, clean_scenario, base)
    out.write(
        f"    -> {baseline.outcome.code}"
        + (f": {baseline.outcome.message}" if baseline.outcome.message else "")
        + "\n"
    )
    names = tuple(op.name for op in baseline.recording.ops)
    if scenario.trace and names != tuple(scenario.trace):
        out.write(
            "    warning: the server now issues a different sequence of operations than "
            "when this scenario was recorded\n"
        )
    if baseline.recording.unmodeled:
        out.write(f"  cannot replay: {'; '.join(baseline.recording.unmodeled)}\n")
        return 2
    try:
        state = rebuild_state(
            baseline.recording.image,
            baseline.recording.ops,
            int(fault["point"]),
            fault.get("lost", ()),
            {key: kept for key, kept in fault.get("cut", ())},
            strict=True,
        )
    except TraceChanged as exc:
        out.write(
            "  cannot replay the last step: it now issues a different sequence of "
            f"operations, and the saved power cut names some it no longer has ({exc})\n"
        )
        return 2
    _print_calls(out, baseline, fault, base)
    out.write("    -- the state written to disk; the server started on it, asked to recover --\n")
    materialize(state, baseline.recording.roots)
    error, actual = process_power.recover_and_capture(server, baseline.root, baseline.state_dir)
    acceptable = baseline.acceptable_at(state.point)
    known = set(baseline.before) | set(baseline.after)
    ignore = (lambda path: path not in known) if fault.get("strays_allowed") else None
    problems, strays = process_power.judge_tree(acceptable, actual, ignore)
    if error:
        problems.insert(0, f"the restarted server failed: {error}")
    if problems:
        out.write("  FIRST DIVERGENCE after the power cut and the restart:\n")
        for line in problems:
            out.write(f"    {line}\n")
        out.write("reproduced\n")
        return 1
    if strays:
        out.write("    note: a file of neither tree is left beside them (only counted)\n")
    out.write("    disk matches the model\n")
    out.write("not reproduced: every step matches the model\n")
    return 0


def _replay_kill(
    server: process_power.Server,
    scenario: Scenario,
    fault: Mapping[str, Any],
    base: str,
    out: TextIO,
) -> int:
    """Kill the server at the saved call of the last step again, restart, and judge."""

    syscall, when = str(fault["syscall"]), int(fault["when"])
    out.write(f"    fault: SIGKILL at the {when}-th {syscall} of a thread (strace inject)\n")
    target = mcp_target(server.command, server.server_map, KILLED_AT, attach=True)
    *_, run = kill_once(target, process_scenario(scenario), base, syscall, when, retries=RETRIES)
    if run.phase != "operation" or run.killed_at is None or run.log is None:
        out.write(
            "  cannot replay: the kill did not land inside the step this time (another "
            "thread's call was counted first, or the step makes fewer such calls now)\n"
        )
        return 2
    out.write("    the step's calls under the sandbox, as the killed run made them:\n")
    for call in run.log.calls:
        if base not in call.args:
            continue
        mark = ""
        if call is run.killed_at or (
            call.tid == run.killed_at.tid
            and call.name == run.killed_at.name
            and call.ordinal == run.killed_at.ordinal
        ):
            mark = "   <== killed here: the call did not happen, nothing after it ran"
        out.write(f"      {call.describe(base)}{mark}\n")
    out.write("    -- restart: the server started again and asked to recover --\n")
    assert run.judgement is not None
    problems = list(run.problems)
    if run.judgement.strays and not fault.get("strays_allowed"):
        problems.extend(line for line in run.judgement.lines if "stray" in line)
    if problems:
        out.write("  FIRST DIVERGENCE after the kill and the restart:\n")
        for line in dict.fromkeys(problems):
            out.write(f"    {line}\n")
        out.write("reproduced\n")
        return 1
    out.write(f"    disk is all-{run.judgement.state}\n")
    out.write("not reproduced: every step matches the model\n")
    return 0
