"""Power cuts for the WRITE and TXN clauses: every state the ordered model allows.

A ``python_fs`` driver is run through the contract with its ``os`` calls recorded
(``editspec.fault_injection.ostrace``). Every state a power cut can leave after any
prefix of the last step's calls is then written to disk: file data written since the
file's last fsync lost (whole, or past a 4 KiB block) and entry operations since their
directory's last fsync lost as a suffix, in issue order (ext4's ordered mode). A fresh
driver opens each one (``recover()`` when it declares ``recovery``), and the disk is
compared with the trees before and after the step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def power_cut_problems(
    factory: Callable[[Path, Path], object],
    base: Path,
    initial: Mapping[str, bytes],
    steps: Sequence[Mapping[str, Any]],
    *,
    only: str | None = None,
) -> tuple[int, list[str]]:
    """How many states were checked, and a description of each that failed.

    ``only``: compare just this path (whatever else is under the root is not judged).
    """
    from editspec.fault_injection import harness, ostrace, trees
    from editspec.fault_injection.scenario import Scenario

    scenario = Scenario(
        name="power cut",
        initial={path: trees.Entry.file(data, 0o644) for path, data in initial.items()},
        steps=tuple(steps),
    )
    sandbox = harness.Sandbox(base)
    clean = ostrace.driver_baseline(factory, sandbox, scenario)
    if not clean.outcome.ok:
        raise AssertionError(f"the step failed without a power cut: {clean.outcome}")
    report = ostrace.check_driver_power_loss(
        factory,
        sandbox,
        scenario,
        "ordered",
        baseline=clean,
        stop_after=3,
        ignore=None if only is None else (lambda path: path != only),
    )
    calls = len(clean.recorder.ops)
    problems = [
        f"{failure.state.describe()} (of {calls}):\n  " + "\n  ".join(failure.problems)
        for failure in report.failures
    ]
    return report.states, problems
