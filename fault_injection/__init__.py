"""editspec.fault_injection: crashes, I/O errors and power loss injected at the engine's fs port.

``FaultyFileSystem`` wraps ``editspec.reference.FileSystem`` to count, log, crash
(``CrashAt``) and fail (``FailAt``) its operations deterministically; pass it to
``Workspace(root, state_dir, fs=...)``.
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

__all__ = [
    "CrashAt",
    "FailAt",
    "FaultPlan",
    "FaultyFileSystem",
    "OpEvent",
    "OpRecord",
    "SimulatedCrash",
    "count_operations",
]
