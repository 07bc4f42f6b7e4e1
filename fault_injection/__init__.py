"""editspec.fault_injection: crashes, I/O errors and power loss injected at the engine's fs port.

``FaultyFileSystem`` wraps ``editspec.reference.FileSystem`` to count, log, crash
(``CrashAt``) and fail (``FailAt``) its operations deterministically; pass it to
``Workspace(root, state_dir, fs=...)``. ``powerloss`` derives the states a power cut
can leave from a recorded trace, and ``ostrace`` records that trace at the ``os`` level
for any Python implementation (``python_fs``); ``harness`` runs scenarios with faults
(of one process, or several in phases) and checks recovery; ``machines`` holds the
Hypothesis state machines; ``explore`` and ``replay`` are the ``editspec explore`` and
``editspec replay`` commands (``explore.main_explore``, ``replay.main_replay``).
"""

from editspec.fault_injection.faultfs import (
    CrashAt,
    FailAt,
    FaultPlan,
    FaultyFileSystem,
    OpEvent,
    OpRecord,
    SimulatedCrash,
    count_operations,
)
from editspec.fault_injection.scenario import Scenario

__all__ = [
    "CrashAt",
    "FailAt",
    "FaultPlan",
    "FaultyFileSystem",
    "OpEvent",
    "OpRecord",
    "Scenario",
    "SimulatedCrash",
    "count_operations",
]
