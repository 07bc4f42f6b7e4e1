"""Scenarios of several processes (``Scenario.phases``): the format, the runner, replay.

Also that the single-process format is unchanged: the saved findings load to the same
JSON and still replay to the failure they record.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from editspec.fault_injection import explore, harness, trees
from editspec.fault_injection.faultfs import OpEvent
from editspec.fault_injection.replay import main_replay, replay
from editspec.fault_injection.scenario import (
    FORMAT,
    FORMAT_PROCESSES,
    SESSION,
    Phase,
    Scenario,
)
from tests.fault_injection.recovery_mutants import recovery_trusts_a_retried_fsync
from tests.mutants import durability
from tests.mutants.durability import PINNED_ID, pinned_transaction_id

FINDINGS = sorted((Path(__file__).parent / "findings").glob("*.json"))

ORIGINAL = {"a.txt": trees.Entry.file(b"one\ntwo\n", 0o644)}
PATCH = {
    "call": "apply_patch",
    "session": SESSION,
    "patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** End Patch\n",
}
PATCHED = {"a.txt": trees.Entry.file(b"one\nTWO\n", 0o644)}
READ = {"call": "read", "session": SESSION, "path": "a.txt"}


def crashed_then_recovery_crashed(at: int, recovery_at: int) -> Scenario:
    """A dies at ``at`` in a patch; B, opened next, dies at ``recovery_at`` of its recovery."""
    return Scenario(
        name="two-crashes",
        initial=ORIGINAL,
        phases=(
            Phase(process="A", steps=(READ, {**PATCH, "fault": {"kind": "crash", "at": at}})),
            Phase(process="B", open_fault={"kind": "crash", "at": recovery_at}),
        ),
        expected=(ORIGINAL, PATCHED),
    )


def counted(sandbox: harness.Sandbox, scenario: Scenario, process: str) -> int:
    """Counted operations of ``process``'s last step (or its opening) in a clean run."""
    run = harness.run_phases(sandbox, scenario)
    return len([report for _p, _s, report in run.reports if report.process == process][-1].log)


def test_phases_round_trip_and_a_scenario_without_them_keeps_format_1(tmp_path: Path) -> None:
    phased = crashed_then_recovery_crashed(3, 2)
    saved = phased.save(tmp_path / "phased.json")
    raw = json.loads(saved.read_text())
    assert raw["format"] == FORMAT_PROCESSES and "steps" not in raw
    assert [phase["process"] for phase in raw["phases"]] == ["A", "B"]
    assert Scenario.load(saved) == phased
    assert [(p, s, f["at"]) for p, s, f in phased.faults()] == [(0, 1, 3), (1, None, 2)]

    single = explore.single_write().to_json()
    assert single["format"] == FORMAT and "phases" not in single
    with pytest.raises(ValueError, match="phases need"):
        Scenario.from_json({**raw, "format": FORMAT})


@pytest.mark.parametrize(
    ("phases", "message"),
    [
        ((Phase(process="A", steps=({**PATCH, "fault": {"kind": "crash", "at": 1}},)),
          Phase(process="A", steps=(READ,))), "dead"),
        ((Phase(process="A", resume=True),), "nothing to resume"),
        ((Phase(process="A", steps=({**READ, "pause_after": 1},)),
          Phase(process="A", steps=(READ,))), "paused"),
        ((Phase(process="A", steps=({**READ, "pause_after": 1}, READ)),), "end its phase"),
        ((Phase(process="A", steps=({**PATCH, "fault": {"kind": "power_loss", "point": 0}},)),),
         "single-process"),
        ((Phase(process="A", steps=(READ,)),
          Phase(process="A", open_fault={"kind": "crash", "at": 1})), "already open"),
    ],
)  # fmt: skip
def test_phases_that_cannot_run_are_refused(phases: tuple[Phase, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Scenario(name="bad", phases=phases)
    with pytest.raises(ValueError, match="not both"):
        Scenario(name="bad", steps=(READ,), phases=(Phase(process="A"),))


def test_a_process_crashed_then_a_recovery_crashed_ends_like_the_single_process_fault(
    tmp_path: Path,
) -> None:
    """The phases and the single-process ``recovery_crash`` fault leave the same disk."""
    box = harness.Sandbox(tmp_path / "box")
    single = Scenario(name="single", initial=ORIGINAL, steps=(READ, PATCH))
    base = harness.baseline(box, single)
    total = base.count
    compared = 0
    for at in range(2, total + 1, 4):
        recovery = harness.recovery_count(box, single, at)
        for recovery_at in range(1, recovery + 1, 2):
            phased = crashed_then_recovery_crashed(at, recovery_at)
            verdict = harness.check_phases(box, phased)
            assert verdict.passed, (at, recovery_at, verdict.finding)
            from_phases = box.tree()
            old = harness.check_recovery_crash(box, single, base, at, recovery_at)
            assert old.passed
            assert trees.equal(from_phases, box.tree()), (at, recovery_at)
            compared += 1
    assert compared >= 3


def test_replay_prints_every_process_and_the_fault_of_an_opening(tmp_path: Path) -> None:
    box = harness.Sandbox(tmp_path / "box")
    at = counted(box, Scenario(name="clean", initial=ORIGINAL, phases=(
        Phase(process="A", steps=(READ, PATCH)),)), "A") - 3  # fmt: skip
    recovery_at = 1
    saved = crashed_then_recovery_crashed(at, recovery_at).save(tmp_path / "two.json")
    out = io.StringIO()
    assert main_replay([str(saved)], stdout=out) == 0, out.getvalue()
    printed = out.getvalue()
    assert "2 processes (A, B)" in printed
    assert f"fault: crash at counted operation {at}\n" in printed
    assert f"fault: crash at counted operation {recovery_at} of that recovery" in printed
    assert printed.count("<== injected crash: the process dies here") == 2
    assert "-> crashed: process A is dead" in printed
    assert "-> crashed: process B is dead" in printed
    assert printed.rstrip().endswith("not reproduced: every step matches the model")


def test_a_step_expectation_in_a_phase_is_checked_where_it_stands(tmp_path: Path) -> None:
    wrong = {"a.txt": trees.Entry.file(b"what the model wrongly expects\n")}
    scenario = Scenario(
        name="divergent",
        initial=ORIGINAL,
        phases=(
            Phase(process="A", steps=(READ,)),
            Phase(process="B", steps=(READ, {**PATCH, "expect": [wrong]})),
        ),
        expected=(PATCHED,),
    )
    out = io.StringIO()
    assert replay(scenario.save(tmp_path / "divergent.json"), out) == 1
    printed = out.getvalue()
    assert "FIRST DIVERGENCE at phase 2, step 2" in printed
    assert "what the model wrongly expects" in printed


def _call_number(box: harness.Sandbox, step: Mapping[str, Any], wanted: str, suffix: str) -> int:
    """Which port call of ``step`` (queries counted) is ``wanted`` on a path ending so."""
    events: list[OpEvent] = []
    processes = harness.Processes(box, watch=events.append)
    processes.start(ORIGINAL)
    processes.open("B")
    processes.run("B", READ)
    events.clear()
    processes.run("B", step)
    return next(
        number
        for number, event in enumerate(events, 1)
        if event.record.name == wanted and event.record.paths[-1].endswith(suffix)
    )


def test_a_process_still_paused_at_the_end_is_killed_where_it_waits(tmp_path: Path) -> None:
    box = harness.Sandbox(tmp_path / "box")
    # B stops right after it renamed its stage over a.txt, before its commit record.
    pause = _call_number(box, PATCH, "rename", "a.txt")
    scenario = Scenario(
        name="killed-while-paused",
        initial=ORIGINAL,
        phases=(Phase(process="B", steps=(READ, {**PATCH, "pause_after": pause})),),
        expected=(ORIGINAL,),
    )
    run = harness.run_phases(box, scenario)
    assert run.killed == ("B",)
    assert run.final.restart_error is None
    assert box.tree() == ORIGINAL and not box.journals()  # the half-done patch is undone
    out = io.StringIO()
    assert replay(scenario.save(tmp_path / "killed.json"), out) == 0, out.getvalue()
    assert "process B is killed where it waits" in out.getvalue()


def test_a_process_waiting_for_a_lock_a_paused_one_holds_is_a_deadlock(tmp_path: Path) -> None:
    box = harness.Sandbox(tmp_path / "box")
    pause = _call_number(box, PATCH, "lock_file", ".lock") + 1  # B holds a lock, then pauses
    scenario = Scenario(
        name="deadlock",
        initial=ORIGINAL,
        phases=(
            Phase(process="B", steps=(READ, {**PATCH, "pause_after": pause})),
            Phase(process="A", steps=(READ, PATCH)),
            Phase(process="B", resume=True),
        ),
        expected=(PATCHED,),
    )
    threads = threading.active_count()
    with pytest.raises(harness.Deadlock, match="process A"):
        harness.run_phases(box, scenario, timeout=2.0)
    # Every thread of the scenario ended: the paused process was killed, which let the
    # blocked one through to its own death.
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and thread.daemon:
            thread.join(5)
    assert threading.active_count() == threads


#: Findings the engine has since fixed (README says so), each with the durability mutant
#: that brings the defect back: it must replay clean against the reference, and still
#: reproduce the recorded problems with the mutant.
FIXED: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "commit-fsync-eio-then-power-cut": durability.mutant_named(
        "commit_sync_failure_is_success"
    ).active,
    "recovery-after-commit-fsync-eio-then-power-cut": recovery_trusts_a_retried_fsync,
}


@pytest.mark.parametrize("path", FINDINGS, ids=lambda path: path.stem)
def test_saved_findings_load_unchanged_and_still_replay(path: Path) -> None:
    raw = json.loads(path.read_text())
    assert raw["format"] == FORMAT
    scenario = Scenario.load(path)
    assert scenario.to_json() == raw
    out = io.StringIO()
    if path.stem in FIXED:
        assert replay(path, out) == 0, out.getvalue()
        assert "not reproduced" in out.getvalue()
        out = io.StringIO()
        with FIXED[path.stem]():
            assert replay(path, out) == 1, out.getvalue()
    else:
        assert replay(path, out) == 1, out.getvalue()  # each README entry says it reproduces
    printed = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(printed) if "FIRST DIVERGENCE" in line)
    shown = [line.strip() for line in printed[start + 1 : printed.index("reproduced")]]
    assert shown == [line.strip() for line in raw["problems"]]


def _write(text: bytes) -> dict[str, Any]:
    return {"call": "write", "session": SESSION, "path": "a.txt", "content": text.decode()}


def test_phases_run_in_the_order_written(tmp_path: Path) -> None:
    """The last phase's write is the one on disk; each step's disk is checked where it stands."""
    box = harness.Sandbox(tmp_path / "box")
    first, second = b"written by A\n", b"written by B\n"
    scenario = Scenario(
        name="in-order",
        initial=ORIGINAL,
        phases=(
            Phase(process="A", steps=(READ, {**_write(first), "expect": [
                {"a.txt": trees.Entry.file(first, 0o644)}]})),
            Phase(process="B", steps=(READ, _write(second))),
        ),
        expected=({"a.txt": trees.Entry.file(second, 0o644)},),
    )  # fmt: skip
    verdict = harness.check_phases(box, scenario)
    assert verdict.passed, verdict.finding
    assert (Path(box.root) / "a.txt").read_bytes() == second
    out = io.StringIO()
    assert replay(scenario.save(tmp_path / "in-order.json"), out) == 0, out.getvalue()


TWO = {
    "a.txt": trees.Entry.file(b"one\ntwo\n", 0o644),
    "b.txt": trees.Entry.file(b"three\n", 0o644),
}
PATCH_TWO = {
    "call": "apply_patch",
    "session": SESSION,
    "patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n"
    "*** Update File: b.txt\n@@\n-three\n+THREE\n*** End Patch\n",
}


def test_a_paused_step_stops_exactly_there_while_the_next_phases_run(tmp_path: Path) -> None:
    """Paused between its two renames, B has replaced a.txt and not yet b.txt: A, which
    opened before B took its locks, reads that half-done disk; B resumed finishes the patch."""
    box = harness.Sandbox(tmp_path / "box")
    events: list[OpEvent] = []
    processes = harness.Processes(box, watch=events.append)
    processes.start(TWO)
    processes.open("B")
    processes.run("B", READ)
    processes.run("B", {**READ, "path": "b.txt"})
    events.clear()
    processes.run("B", PATCH_TWO)
    renames = [n for n, e in enumerate(events, 1) if e.record.name == "rename"]
    onto_a = next(n for n in renames if events[n - 1].record.paths[-1].endswith("a.txt"))
    new_a, new_b = trees.Entry.file(b"one\nTWO\n", 0o644), trees.Entry.file(b"THREE\n", 0o644)
    # a.txt replaced; b.txt not yet; both backups and b's stage still beside them (§3).
    half = {
        "a.txt": new_a,
        "b.txt": TWO["b.txt"],
        f".a.txt.{PINNED_ID}.backup": TWO["a.txt"],
        f".b.txt.{PINNED_ID}.backup": TWO["b.txt"],
        f".b.txt.{PINNED_ID}.stage": new_b,
    }
    whole = {"a.txt": new_a, "b.txt": new_b}
    scenario = Scenario(
        name="half-done",
        initial=TWO,
        phases=(
            Phase(process="A", steps=(READ,)),
            Phase(process="B", steps=(READ, {**READ, "path": "b.txt"},
                                      {**PATCH_TWO, "pause_after": onto_a})),
            Phase(process="A", steps=({**READ, "path": "b.txt", "expect": [half]},)),
            Phase(process="B", resume=True),
        ),
        expected=(whole,),
    )  # fmt: skip
    with pinned_transaction_id(PINNED_ID):
        run = harness.run_phases(box, scenario)
        out = io.StringIO()
        assert replay(scenario.save(tmp_path / "half.json"), out) == 0, out.getvalue()
    assert [report.paused for _p, _s, report in run.reports].count(True) == 1
    assert run.killed == () and run.final.restart_error is None
    assert box.tree() == whole and not box.journals()
    assert "process B pauses here, after rename" in out.getvalue()


@pytest.mark.parametrize(
    ("expect", "outcomes", "fails"),
    [
        ([PATCHED], None, False),
        ([ORIGINAL], None, True),  # the disk right after the patch is not the original
        (None, ["STALE"], True),  # the patch succeeds, it does not answer STALE
    ],
)
def test_check_phases_holds_each_step_to_its_own_expectations(
    tmp_path: Path, expect: Any, outcomes: Any, fails: bool
) -> None:
    step: dict[str, Any] = dict(PATCH)
    if expect is not None:
        step["expect"] = expect
    if outcomes is not None:
        step["outcomes"] = outcomes
    scenario = Scenario(
        name="step-expectations",
        initial=ORIGINAL,
        phases=(Phase(process="A", steps=(READ, step)),),
        expected=(PATCHED,),
    )
    verdict = harness.check_phases(harness.Sandbox(tmp_path / "box"), scenario)
    assert (verdict.finding is not None) == fails
    if fails:
        assert verdict.finding is not None
        assert any(problem.startswith("phase 1, step 2: ") for problem in verdict.finding.problems)
