"""``editspec explore --driver``: any Python driver crashed and cut at its own os calls.

The drivers are reached only through the driver contract, by name (``module:factory``):
the reference engine as a driver must pass every state of the scenarios it runs; writers
of their own, careless or atomic, are caught or pass as they deserve; every durability
mutant of the reference is caught through the driver too, and each failure saved as a
scenario replays to the same failure through that driver, and to none once the engine
is sound again.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import attrs
import pytest

from editspec.fault_injection import explore, harness
from editspec.fault_injection.driver_runner import DriverRunner
from editspec.fault_injection.replay import replay
from editspec.fault_injection.scenario import Scenario
from tests.mutants import durability

REFERENCE = "editspec.contract.drivers.reference:factory"
DRIVERS = "tests.fault_injection.python_drivers"
OPAQUE = f"{DRIVERS}:OpaqueReference"


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = explore.main_explore(argv, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def row(table: str, name: str) -> list[str]:
    return next(line for line in table.splitlines() if line.startswith(name)).split()


def test_the_reference_as_a_driver_passes_every_crash_and_power_loss_state(
    tmp_path: Path,
) -> None:
    failures = tmp_path / "failures"
    status, table, _ = run(
        [
            *("--driver", REFERENCE, "--scenario", "single-write", "--scenario", "add-delete-move"),
            *("-j", "1", "--out", str(failures), "--no-progress"),
        ]
    )
    assert status == 0, table
    for name in ("single-write", "add-delete-move"):
        cells = row(table, name)
        scenario = attrs.evolve(explore.STANDARD[name].build(), driver=REFERENCE)
        base = harness.baseline(harness.Sandbox(tmp_path / name), scenario)
        # one crash point per mutating os call of the step, every power-loss state checked
        assert cells[1] == str(base.count) and base.count > 3
        assert int(cells[3]) == len(harness.power_states(base, "ordered")[0]) > 3
        assert cells[5] == "0"
    assert not failures.exists()


def test_worker_processes_load_the_driver_and_find_the_same_failures(tmp_path: Path) -> None:
    found = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"failures-{jobs}"
        status, table, _ = run(
            [
                *("--driver", f"{DRIVERS}:Careless", "--scenario", "single-write"),
                *("-j", jobs, "--out", str(out), "--no-progress"),
            ]
        )
        assert status == 1, table
        found[jobs] = (row(table, "single-write")[1:6], sorted(p.name for p in out.iterdir()))
    assert found["1"] == found["2"]


def test_recovery_is_crashed_at_each_of_its_own_os_calls(tmp_path: Path) -> None:
    box = harness.Sandbox(tmp_path / "box")
    scenario = attrs.evolve(explore.recovery_crash(), driver=REFERENCE)
    base = harness.baseline(box, scenario)
    counts = [harness.recovery_count(box, scenario, at) for at in range(1, base.count + 1)]
    assert max(counts) > 0  # a crash mid-patch leaves a journal whose recovery writes
    for at in (1, base.count // 2, base.count):
        for recovery_at in range(1, counts[at - 1] + 1):
            verdict = harness.check_recovery_crash(box, scenario, base, at, recovery_at)
            assert verdict.passed, verdict.finding and verdict.finding.problems


def test_a_careless_writer_is_caught_and_the_failure_replays_through_it(tmp_path: Path) -> None:
    failures = tmp_path / "failures"
    status, table, err = run(
        ["--driver", f"{DRIVERS}:Careless", "-j", "1", "--out", str(failures), "--no-progress"]
    )
    assert status == 1
    # it can only write: the patch and rewind scenarios are skipped, saying why
    assert "skipping update-10-files" in err and "lacks apply_patch" in err
    assert "skipping rewind-5" in err and "snapshots" in err
    assert row(table, "single-write")[5] != "0"
    saved = sorted(failures.glob("*.json"))
    crash = next(path for path in saved if "-crash-" in path.name)
    recorded = json.loads(crash.read_text())
    assert recorded["driver"] == f"{DRIVERS}:Careless"
    # the file was truncated in place and the process died before the new bytes
    assert recorded["actual"]["notes.txt"]["text"] == ""
    out = io.StringIO()
    assert replay(crash, out) == 1
    printed = out.getvalue()
    assert "counted operations are its mutating os calls" in printed
    assert "<== injected crash" in printed
    assert "FIRST DIVERGENCE" in printed


def test_an_atomic_writer_whose_temp_files_stay_outside_the_root_passes(tmp_path: Path) -> None:
    status, table, _ = run(
        [
            *("--driver", f"{DRIVERS}:AtomicOutsideTheRoot", "--scenario", "single-write"),
            *("-j", "1", "--out", str(tmp_path / "failures"), "--no-progress"),
        ]
    )
    assert status == 0, table
    cells = row(table, "single-write")
    assert int(cells[1]) >= 4 and int(cells[3]) >= 4 and cells[5] == "0"


def test_journals_are_looked_for_only_where_a_driver_says_it_keeps_them(tmp_path: Path) -> None:
    from editspec.fault_injection import driver_power
    from tests.fault_injection.python_drivers import (
        LeavesAJournal,
        LeavesAJournalWhereDesignPutsThem,
    )

    scenario = explore.single_write()
    for driver, journals_checked in (
        (LeavesAJournal, False),
        (LeavesAJournalWhereDesignPutsThem, True),
    ):
        name = f"{DRIVERS}:{driver.__name__}"
        status, table, _ = run(
            [
                *("--driver", name, "--scenario", "single-write"),
                *("-j", "1", "--out", str(tmp_path / driver.__name__), "--no-progress"),
            ]
        )
        assert status == (1 if journals_checked else 0), table
        box = harness.Sandbox(tmp_path / f"box-{driver.__name__}")
        report = driver_power.check_driver_power_loss(driver, box, scenario)
        problems = [line for failure in report.failures for line in failure.problems]
        assert report.states > 1
        if journals_checked:
            assert problems and all("journal left" in line for line in problems), problems
        else:
            assert not problems, problems


def test_a_writer_that_leaves_its_temp_file_in_the_root_is_caught(tmp_path: Path) -> None:
    status, _, _ = run(
        [
            *("--driver", f"{DRIVERS}:Atomic", "--scenario", "single-write"),
            *("-j", "1", "--out", str(tmp_path / "failures"), "--no-progress"),
        ]
    )
    assert status == 1
    problems = [
        line
        for path in (tmp_path / "failures").glob("*-crash-*.json")
        for line in json.loads(path.read_text())["problems"]
    ]
    assert any(".tmp-" in line for line in problems), problems


EXPLORER_MUTANTS = [mutant for mutant in durability.MUTANTS if not mutant.special]


@pytest.mark.parametrize("mutant", EXPLORER_MUTANTS, ids=lambda mutant: mutant.name)
def test_every_durability_mutant_is_caught_through_the_driver_and_replays(
    tmp_path: Path, mutant: durability.Mutant
) -> None:
    scenario = attrs.evolve(mutant.scenario(), driver=OPAQUE)
    caught = durability.hunt(mutant, scenario)
    assert caught is not None, f"{mutant.name} survives every os-level check of its driver"
    assert caught.finding.driver == OPAQUE
    assert len(caught.finding.steps) <= 50
    saved = caught.finding.save(tmp_path / f"{mutant.name}.json")
    assert Scenario.load(saved).to_json() == caught.finding.to_json()
    with mutant.active():
        assert replay(saved, io.StringIO()) == 1, f"{mutant.name}: the replay does not reproduce"
    # Once the engine is sound the failure is gone; a saved power cut may name
    # operations the sound engine no longer issues, and then it cannot be rebuilt.
    healed = io.StringIO()
    status = replay(saved, healed)
    if caught.check.startswith("power:") and status == 2:
        assert "cannot replay step" in healed.getvalue()
    else:
        assert status == 0, healed.getvalue()


def test_a_step_that_fails_without_a_fault_is_reported_not_explored(tmp_path: Path) -> None:
    status, _, err = run(
        [
            *("--driver", f"{DRIVERS}:Refusing", "--scenario", "single-write"),
            *("-j", "1", "--out", str(tmp_path / "failures"), "--no-progress"),
        ]
    )
    assert status == 1
    assert "the clean run of single-write failed: STALE" in err
    assert not (tmp_path / "failures").exists()


def test_the_explorer_refuses_what_it_cannot_crash(tmp_path: Path) -> None:
    out = str(tmp_path / "failures")
    with pytest.raises(SystemExit) as refused:
        run(["--driver", "no.such.module:factory", "--out", out])
    assert refused.value.code == 2
    with pytest.raises(SystemExit):
        run(["--driver", REFERENCE, "--memory", "--out", out])
    with pytest.raises(SystemExit):  # asked for by name, a scenario it cannot run
        run(["--driver", f"{DRIVERS}:Careless", "--scenario", "update-10-files", "--out", out])
    with pytest.raises(SystemExit):
        run(["--driver", f"{DRIVERS}:Elsewhere", "--out", out])
    box = harness.Sandbox(tmp_path / "box")
    with pytest.raises(ValueError, match="python_fs"):
        DriverRunner(box, f"{DRIVERS}:Elsewhere").start({})
    assert not os.path.exists(out)
