"""Running scenarios and checking them: one import for the explorer, replay and the tests.

* ``runner``: ``Sandbox`` (``ws/`` + ``state/`` under a temp dir), ``Runner`` (steps
  with faults; a restart is a fresh ``Workspace``), ``InMemoryFileSystem`` (pyfakefs).
* ``checks``: ``make_runner`` (the reference's runner, or a driver's), ``baseline`` and
  the checks of one faulted step (``check_crash``, ``check_power_state``,
  ``check_recovery_crash``).
* ``phases``: scenarios of several processes (``Processes``, ``run_phases``,
  ``check_phases``).
"""

from __future__ import annotations

from editspec.fault_injection.checks import (
    Baseline,
    Verdict,
    baseline,
    check_crash,
    check_outcome,
    check_power_state,
    check_recovery_crash,
    make_runner,
    power_fault,
    power_states,
    recovery_count,
    stray_temp_files,
    with_fault,
)
from editspec.fault_injection.phases import (
    Deadlock,
    PhaseReport,
    PhasesRun,
    Processes,
    check_phases,
    run_phases,
    step_problems,
)
from editspec.fault_injection.runner import (
    ENGINE_MODULES,
    FileSystemFactory,
    InMemoryFileSystem,
    Recorded,
    Runner,
    Sandbox,
    StepReport,
    WorkspaceFactory,
    import_engine,
    open_workspace,
)

__all__ = [
    "ENGINE_MODULES",
    "Baseline",
    "Deadlock",
    "FileSystemFactory",
    "InMemoryFileSystem",
    "PhaseReport",
    "PhasesRun",
    "Processes",
    "Recorded",
    "Runner",
    "Sandbox",
    "StepReport",
    "Verdict",
    "WorkspaceFactory",
    "baseline",
    "check_crash",
    "check_outcome",
    "check_phases",
    "check_power_state",
    "check_recovery_crash",
    "import_engine",
    "make_runner",
    "open_workspace",
    "power_fault",
    "power_states",
    "recovery_count",
    "run_phases",
    "step_problems",
    "stray_temp_files",
    "with_fault",
]
