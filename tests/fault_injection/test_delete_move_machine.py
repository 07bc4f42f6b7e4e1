"""DeleteMoveMachine: Delete and Move of files against the model, on disk and in memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from editspec.fault_injection import harness, machines

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
