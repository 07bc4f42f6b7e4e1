"""The state machines, on a real temporary directory and in memory (pyfakefs).

Example counts come from the Hypothesis profile (tests/conftest.py); each machine only
bounds its run length, since every step touches the disk. The in-memory runs use a third
of the profile's examples: pyfakefs is slower per operation than a tmpfs.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from editspec.fault_injection import harness, machines
from editspec.fault_injection.replay import replay
from editspec.reference import FileSystem, Workspace

STEPS = settings(stateful_step_count=20)
IN_MEMORY = settings(
    stateful_step_count=20, max_examples=max(5, settings.default.max_examples // 3)
)


@pytest.fixture
def failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Failure scenarios go to the test's own temporary directory."""
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


def in_memory_variant(machine: type[machines.WorkspaceMachine]) -> type[machines.WorkspaceMachine]:
    return type(f"{machine.__name__}InMemory", (machine,), {"memory": True})


ON_BOTH = [
    machines.EditSequenceMachine,
    machines.PatchMachine,
    machines.RewindMachine,
    machines.AliasMachine,
]


@pytest.mark.parametrize("machine", ON_BOTH, ids=lambda m: m.__name__)
@pytest.mark.slow
def test_machine_on_disk(machine: type[machines.WorkspaceMachine], failures: Path) -> None:
    run_state_machine_as_test(machine, settings=STEPS)


@pytest.mark.parametrize("machine", ON_BOTH, ids=lambda m: m.__name__)
@pytest.mark.slow
def test_machine_in_memory(machine: type[machines.WorkspaceMachine], in_memory: object) -> None:
    run_state_machine_as_test(in_memory_variant(machine), settings=IN_MEMORY)


@pytest.mark.slow
def test_case_aliasing_on_a_case_insensitive_file_system(in_memory: object) -> None:
    from pyfakefs.fake_filesystem import OSType

    in_memory.fs.os = OSType.MACOS  # type: ignore[attr-defined]
    run_state_machine_as_test(machines.CaseAliasMachine, settings=IN_MEMORY)


def _without_recovery(root: str, state_dir: str, fs: FileSystem) -> Workspace:
    return Workspace(root, state_dir, fs=fs, recover=False)


class PatchMachineWithoutRecovery(machines.PatchMachine):
    """A broken engine: a restarted process never recovers interrupted transactions."""

    open_workspace = staticmethod(_without_recovery)


def test_the_patch_machine_catches_an_engine_that_does_not_recover(failures: Path) -> None:
    with pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(
            PatchMachineWithoutRecovery,
            # Finding it is the point; shrinking a long trace would dominate the run.
            settings=settings(STEPS, max_examples=200, database=None, phases=(Phase.generate,)),
        )
    message = str(caught.value)
    symptoms = ("neither all-before nor all-after", "journal", "differs from the model")
    assert any(symptom in message for symptom in symptoms), message
    saved = failures / "PatchMachineWithoutRecovery.json"
    assert saved.exists()
    # The failure replays against the real engine, which does recover; a power cut among
    # the steps may name operations the real engine's trace does not have (replay then
    # says it cannot rebuild that cut, and exits 2).
    out = io.StringIO()
    status = replay(saved, out)
    assert status == 0 or (status == 2 and "cannot replay step" in out.getvalue())
    assert "injected crash" in out.getvalue() or "power cut" in out.getvalue()


# -- any Python driver, through the contract ------------------------------------------------

REFERENCE_DRIVER = "editspec.contract.drivers.reference:factory"
OPAQUE = "tests.fault_injection.python_drivers:OpaqueReference"


def through(
    machine: type[machines.WorkspaceMachine], driver: str
) -> type[machines.WorkspaceMachine]:
    return type(f"{machine.__name__}ThroughDriver", (machine,), {"driver": driver})


@pytest.mark.parametrize("machine", ON_BOTH, ids=lambda m: m.__name__)
@pytest.mark.slow
def test_machine_through_the_driver_contract(
    machine: type[machines.WorkspaceMachine], failures: Path
) -> None:
    """The reference reached only as a driver: faults at its own os calls, power cuts
    from their trace, restarts as fresh drivers that recover."""
    run_state_machine_as_test(through(machine, REFERENCE_DRIVER), settings=IN_MEMORY)


def test_the_patch_machine_catches_a_durability_mutant_through_its_driver(
    failures: Path,
) -> None:
    from tests.mutants import durability

    mutant = durability.mutant_named("journal_after_renames")
    machine = through(machines.PatchMachine, OPAQUE)
    with mutant.active(), pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(
            machine,
            settings=settings(STEPS, max_examples=200, database=None, phases=(Phase.generate,)),
        )
    assert "neither all-before nor all-after" in str(caught.value), str(caught.value)[:600]
    saved = failures / f"{machine.__name__}.json"
    out = io.StringIO()
    with mutant.active():
        assert replay(saved, out) == 1, out.getvalue()
    assert "counted operations are its mutating os calls" in out.getvalue()
    # The sound engine passes the same steps, unless a power cut among them names
    # operations its trace does not have (replay then says it cannot rebuild the cut).
    healed = io.StringIO()
    status = replay(saved, healed)
    assert status == 0 or (status == 2 and "cannot replay step" in healed.getvalue())
