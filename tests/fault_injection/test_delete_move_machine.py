"""DeleteMoveMachine: Delete and Move of files against the model, on disk and in memory,
with crashes, I/O errors and power cuts; and every crash and power state of a delete and
a move, exhaustively."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from editspec.fault_injection import harness, machines, standard
from editspec.fault_injection.scenario import Scenario
from tests.mutants import durability

STEPS = settings(stateful_step_count=20)
IN_MEMORY = settings(
    stateful_step_count=20, max_examples=max(5, settings.default.max_examples // 3)
)


@pytest.fixture
def failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EDITSPEC_FAILURES", str(tmp_path))
    return tmp_path


@pytest.fixture
def in_memory(failures: Path) -> Iterator[object]:
    from pyfakefs.fake_filesystem_unittest import Patcher

    harness.import_engine()
    with Patcher() as patcher:
        machines.WorkspaceMachine.active_patcher = patcher
        try:
            yield patcher
        finally:
            machines.WorkspaceMachine.active_patcher = None


def test_delete_move_machine_on_disk(failures: Path) -> None:
    run_state_machine_as_test(machines.DeleteMoveMachine, settings=STEPS)


def test_delete_move_machine_in_memory(in_memory: object) -> None:
    variant = type("DeleteMoveMachineInMemory", (machines.DeleteMoveMachine,), {"memory": True})
    run_state_machine_as_test(variant, settings=IN_MEMORY)


@pytest.mark.parametrize(
    "scenario",
    [standard.delete_tree, standard.move_file, durability.move_tool_one],
    ids=lambda build: build().name,
)
def test_every_crash_and_power_state_of_delete_and_move_is_all_or_nothing(
    scenario: Callable[[], Scenario],
) -> None:
    """Exhaustive where the machine's power rule draws: a crash at every port operation,
    every power-loss state (ordered, then any subset) and a crash at every operation of
    every recovery; each recovers to all-before or all-after, and a cut after the call
    returned keeps its change. The same hunt catches ``move_link_unsynced``
    (``tests/mutants/test_durability_mutants.py``)."""
    reference = durability.Mutant(
        name="reference", defect="", active=contextlib.nullcontext, scenario=scenario
    )
    caught = durability.hunt(reference)
    assert caught is None, (caught.check, caught.finding.problems) if caught else None
