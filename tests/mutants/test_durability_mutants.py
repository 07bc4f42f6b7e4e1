"""Every durability mutant is caught, and its failure file reproduces it (DESIGN §5).

For each mutant of ``tests/mutants/durability.py`` the explorer's checks run with the
mutant active (crash points, power loss ordered then strict, crashes during recovery)
until one fails. The failure must come from a short scenario (at most 50 steps, and a
last step of at most 50 port operations), its scenario file must replay to the same
failure with the mutant active, and the same file must pass against the reference.

Two mutants are beyond the explorer (see the module's docstring), each with the check
that catches it, and a scenario file that replays its failure too: two processes that
die in turn in one directory (``hunt_stacked``, a scenario of two processes), and a
symlink squatting on a stage name (``squatted_stage``, a scenario replayed with the
transaction id pinned).
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from pathlib import Path

import pytest

from editspec.fault_injection import harness
from editspec.fault_injection.replay import replay
from editspec.fault_injection.scenario import FORMAT_PROCESSES, Scenario
from tests.mutants import durability
from tests.mutants.durability import MUTANTS, Mutant, normalized

EXPLORED = [mutant for mutant in MUTANTS if not mutant.special]
MAX_STEPS = 50

_SANDBOX_PATH = re.compile(r"\S*/(ws|state)/")


def replayed_problems(output: str) -> list[str]:
    """The problem lines ``editspec replay`` printed after the first divergence."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "FIRST DIVERGENCE" in line)
    end = lines.index("reproduced", start)
    return lines[start + 1 : end]


def comparable(lines: list[str] | tuple[str, ...]) -> list[str]:
    """Problems without what differs between two sandboxes (their paths, random ids)."""
    return normalized([_SANDBOX_PATH.sub(r"<\1>/", line) for line in lines])


def test_the_zoo_has_the_mutants_the_design_names() -> None:
    names = {mutant.name for mutant in MUTANTS}
    assert len(names) == len(MUTANTS) >= 8
    assert all(mutant.fail is not None for mutant in MUTANTS if mutant.special == "fsync_failure")
    assert {
        "no_stage_fsync",
        "no_directory_fsync",
        "journal_after_renames",
        "journal_not_fsynced",
        "recovery_drops_journal_first",
        "journals_oldest_first",
        "stage_without_excl",
        "move_by_copy",
    } <= names


@pytest.mark.parametrize("mutant", EXPLORED, ids=lambda mutant: mutant.name)
def test_the_explorer_catches_the_mutant_and_its_scenario_replays(
    mutant: Mutant, tmp_path: Path
) -> None:
    caught = durability.hunt(mutant)
    assert caught is not None, f"{mutant.name} survives the explorer: {mutant.defect}"
    finding = caught.finding
    print(
        f"{mutant.name}: caught by {caught.check} after {caught.checked} checks; "
        f"{len(finding.steps)} steps, last step {caught.trace} port operations"
    )
    assert len(finding.steps) <= MAX_STEPS and caught.trace <= MAX_STEPS
    assert finding.problems and finding.fault is not None
    saved = finding.save(tmp_path / f"{mutant.name}.json")

    out = io.StringIO()
    with mutant.active():
        assert replay(saved, out) == 1, out.getvalue()
    assert comparable(replayed_problems(out.getvalue())) == comparable(finding.problems), (
        out.getvalue()
    )

    if finding.fault["kind"] == "power_loss":
        # A power-loss state names files by the operation that created them, so it only
        # means something for the operations it was recorded with: the mutant's. Those
        # differ from the reference's (a dropped fsync, a moved journal), which the
        # explorer checks in every state of its own.
        with tempfile.TemporaryDirectory() as base:
            reference = harness.baseline(harness.Sandbox(base), mutant.scenario())
        assert reference.names != finding.trace
        return
    clean = io.StringIO()
    assert replay(saved, clean) == 0, f"the reference fails this scenario:\n{clean.getvalue()}"


def test_stacked_crashes_catch_recovery_that_settles_the_oldest_journal_first(
    tmp_path: Path,
) -> None:
    # The reference survives A's crash at every one of its operations, with B dying at
    # its commit after building on what A left.
    assert durability.hunt_stacked(str(tmp_path / "reference")) is None
    mutant = durability.mutant_named("journals_oldest_first")
    with mutant.active():
        caught = durability.hunt_stacked(str(tmp_path / "mutant"))
    assert caught is not None, "recovery settling the oldest journal first survives"
    finding = caught.finding
    steps = sum(len(phase.steps) for phase in finding.phases)
    assert len(finding.phases) == 3 and steps <= MAX_STEPS and caught.trace <= MAX_STEPS
    # A's rollback found its directory still holding B's file and left it; B's rollback
    # then emptied it: an empty directory nobody made, after recovery.
    assert "+ new: unexpected dir" in [line.strip() for line in finding.problems], finding.problems
    saved = finding.save(tmp_path / "stacked-crashes.json")
    assert json.loads(saved.read_text())["format"] == FORMAT_PROCESSES
    assert Scenario.load(saved).to_json() == finding.to_json()

    out = io.StringIO()
    with mutant.active():
        assert replay(saved, out) == 1, out.getvalue()
    printed = out.getvalue()
    assert comparable(replayed_problems(printed)) == comparable(finding.problems), printed
    assert "FIRST DIVERGENCE after the final recovery" in printed
    # Each phase's operations, as they happen, with both injected crashes marked.
    assert printed.count("<== injected crash: the process dies here") == 2, printed
    order = [
        "phase 1/3: process B",
        "---- process B pauses here, after listdir state/journal/",
        "phase 2/3: process A",
        "-> crashed: process A is dead",
        "phase 3/3: process B",
        "process B resumes its step of phase 1",
        "-> crashed: process B is dead",
        "after the last phase: a fresh workspace recovers",
    ]
    positions = [printed.index(line) for line in order]
    assert positions == sorted(positions), printed

    clean = io.StringIO()
    assert replay(saved, clean) == 0, f"the reference fails this scenario:\n{clean.getvalue()}"


def test_a_squatted_stage_catches_a_stage_opened_without_o_excl(tmp_path: Path) -> None:
    scenario = durability.squatted_stage()
    assert len(scenario.steps) <= MAX_STEPS
    saved = scenario.save(tmp_path / "squatted-stage.json")
    with durability.pinned_transaction_id(durability.PINNED_ID):
        clean = io.StringIO()
        assert replay(saved, clean) == 0, clean.getvalue()
        out = io.StringIO()
        with durability.stage_without_excl():
            assert replay(saved, out) == 1, out.getvalue()
    problems = replayed_problems(out.getvalue())
    # The stage followed the link: the patch "succeeds" (the model expects a refusal),
    # b.txt took a.txt's new bytes and a.txt became the planted link.
    assert any(
        "answered ok" in line or ("b.txt" in line and "BETA" in line) for line in problems
    ), out.getvalue()


FSYNC_FAILURES = [mutant for mutant in MUTANTS if mutant.special == "fsync_failure"]


@pytest.mark.parametrize("mutant", FSYNC_FAILURES, ids=lambda mutant: mutant.name)
def test_a_failed_fsync_then_a_power_cut_catches_the_mutant_and_replays(
    mutant: Mutant, tmp_path: Path
) -> None:
    """EIO at the mutant's fsync, then every power-loss state: one of them makes its
    answer false, and the scenario saved for it replays to the same problems."""
    finding = durability.hunt_fsync_failure(mutant)
    assert finding is not None, f"{mutant.name} survives: {mutant.defect}"
    assert finding.fault is not None and finding.fault["errno"] == "EIO"
    assert finding.problems[0].startswith("disk is")  # bytes on disk, not the answer alone
    saved = finding.save(tmp_path / f"{mutant.name}.json")
    out = io.StringIO()
    with mutant.active():
        assert replay(saved, out) == 1, out.getvalue()
    assert comparable(replayed_problems(out.getvalue())) == comparable(finding.problems)
