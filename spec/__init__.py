"""editspec.spec: the executable specification of file tools for coding agents.

Every test in this package is one numbered clause (``@clause("EDIT-004", MUST, ...)``).
The suite reaches an implementation only through the driver contract (``Driver``,
``Session``; DESIGN §2) and runs against the reference engine unless told otherwise::

    editspec check --driver mypackage.tools:factory --report report.md
    pytest --pyargs editspec.spec --editspec-driver=mypackage.tools:factory
"""

from __future__ import annotations

import importlib
from typing import Any

from editspec.contract import (
    CAPABILITIES,
    CONTRACT_VERSION,
    PROFILES,
    Driver,
    DriverFactory,
    Profile,
    Session,
)
from editspec.spec._calls import setup
from editspec.spec._clauses import MAY, MUST, SHOULD, Clause, ClauseDefinitionError, clause

# Imported on first use, not to dodge a cycle (fault_injection imports nothing of spec):
# they pull in fault_injection and the engine, which the pytest plugin (loaded by every
# pytest run, before coverage starts) must not import; and the assertions pull in pytest,
# which `editspec serve` (started hundreds of times by the kill clauses) does not need.
_LAZY = {
    "Inconclusive": "editspec.spec._assertions",
    "MissingField": "editspec.spec._assertions",
    "UncodedError": "editspec.spec._assertions",
    "Unsafe": "editspec.spec._assertions",
    "WrongBehaviour": "editspec.spec._assertions",
    "WrongCode": "editspec.spec._assertions",
    "assert_fields": "editspec.spec._assertions",
    "inconclusive": "editspec.spec._assertions",
    "raises_any_code": "editspec.spec._assertions",
    "raises_code": "editspec.spec._assertions",
    "run_concurrently": "editspec.spec._assertions",
    "within": "editspec.spec._assertions",
    "prepare_change": "editspec.spec.fixtures",
    "crash_at": "editspec.spec.crash",
    "fail_at": "editspec.spec.crash",
    "fail_from": "editspec.spec.crash",
    "call_at": "editspec.spec.crash",
    "count_mutations": "editspec.spec.crash",
    "SimulatedCrash": "editspec.spec.crash",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "CAPABILITIES",
    "CONTRACT_VERSION",
    "MAY",
    "MUST",
    "PROFILES",
    "SHOULD",
    "Clause",
    "ClauseDefinitionError",
    "Driver",
    "DriverFactory",
    "Inconclusive",
    "MissingField",
    "Profile",
    "Session",
    "SimulatedCrash",
    "UncodedError",
    "Unsafe",
    "WrongBehaviour",
    "WrongCode",
    "assert_fields",
    "call_at",
    "clause",
    "count_mutations",
    "crash_at",
    "fail_at",
    "fail_from",
    "inconclusive",
    "prepare_change",
    "raises_any_code",
    "raises_code",
    "run_concurrently",
    "setup",
    "within",
]
