"""Power cuts for the WRITE and TXN clauses: every state the ordered model allows.

The implementation's calls during the last step are recorded as the durability model's
trace: for a ``python_fs`` driver, its ``os`` calls as the suite intercepts them
(``editspec.fault_injection.ostrace``); for a ``process`` driver (an MCP server in any
language), its system calls as strace shows them (``editspec.fault_injection.
process_power``). Every state a power cut can leave after any prefix of those calls is
then written to disk: file data written since the file's last fsync lost (whole, or past
a 4 KiB block) and entry operations since their directory's last fsync lost as a suffix,
in issue order (ext4's ordered mode). A fresh driver opens each one (``recover()`` when
it declares ``recovery``; a server is started on it and asked to recover when its map
has the tool), and the disk is compared with the trees before and after the step.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from editspec.fault_injection import driver_power, harness, process_power, strace_kill, trees
from editspec.fault_injection.scenario import Scenario
from editspec.spec import _calls

#: The reason a clause gives when a driver can be neither intercepted nor traced (the
#: plugin reports a skip with this prefix as UNSUPPORTED).
NEITHER = "UNSUPPORTED: the driver declares neither python_fs nor process"


def crash_capability(factory: Callable[[Path, Path], object], base: Path) -> str | None:
    """``python_fs`` or ``process``: how the suite records the driver's calls (or None)."""
    probe_root, probe_state = base / "probe-ws", base / "probe-state"
    probe_root.mkdir(parents=True)
    probe_state.mkdir()
    driver: Any = factory(probe_root, probe_state)
    try:
        capabilities = frozenset(getattr(driver, "capabilities", ()))
    finally:
        driver.close()
        shutil.rmtree(probe_root, ignore_errors=True)
        shutil.rmtree(probe_state, ignore_errors=True)
    if "python_fs" in capabilities:
        return "python_fs"
    if "process" in capabilities:
        return "process"
    return None


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
    A driver with neither ``python_fs`` nor ``process`` is skipped as UNSUPPORTED; a
    server where strace cannot trace is skipped with the reason.
    """

    scenario = Scenario(
        name="power cut",
        initial={path: trees.Entry.file(data, 0o644) for path, data in initial.items()},
        steps=tuple(steps),
    )
    kind = crash_capability(factory, base)
    if kind is None:
        pytest.skip(NEITHER)
    _log_steps(kind, steps)
    if kind == "process":
        return _process_problems(factory, base, scenario, only)
    return _driver_problems(factory, base, scenario, only)


def _log_steps(kind: str, steps: Sequence[Mapping[str, Any]]) -> None:
    """Tell the call log what the harness does with the driver (the audit's evidence): each
    step's operation, the crash capability used, and the restart after every cut."""
    _calls.note(kind)
    _calls.note("restart")
    for step in steps:
        path = step.get("path")
        _calls.record(
            str(step["call"]),
            step.get("session"),
            (path,) if isinstance(path, str) else (),
            {},
            None,
        )


def _driver_problems(
    factory: Callable[[Path, Path], object], base: Path, scenario: Any, only: str | None
) -> tuple[int, list[str]]:

    sandbox = harness.Sandbox(base)
    clean = driver_power.driver_baseline(factory, sandbox, scenario)
    if not clean.outcome.ok:
        raise AssertionError(f"the step failed without a power cut: {clean.outcome}")
    report = driver_power.check_driver_power_loss(
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


def _process_problems(
    factory: Any, base: Path, scenario: Any, only: str | None
) -> tuple[int, list[str]]:

    reason = strace_kill.strace_unavailable()
    if reason is not None:
        pytest.skip(f"strace cannot trace the server here: {reason}")
    if getattr(factory, "command", None) is None or getattr(factory, "map", None) is None:
        pytest.skip(
            "the driver declares process but is not an MCP server started from a command "
            "line: strace needs the command to start it under"
        )
    server = process_power.Server.of(factory)
    clean = process_power.process_baseline(server, scenario, str(base / "power-run"))
    if not clean.outcome.ok:
        raise AssertionError(f"the step failed without a power cut: {clean.outcome}")
    try:
        states, bounded = process_power.process_states(clean)
    except process_power.Unmodeled as exc:  # judged neither way: the model cannot replay it
        pytest.skip(f"the power-loss model cannot replay what the server did: {exc}")

    def ignore(path: str) -> bool:
        if only is not None:
            return path != only
        return bool(harness.stray_temp_files({path: trees.Entry.dir()}))

    report = process_power.check_process_power_loss(
        server, clean, states, ignore=ignore, stop_after=3, truncated=bounded
    )
    calls = len(clean.recording.ops)
    problems = [
        f"{failure.state.describe()} (of {calls} calls, answered after "
        f"{clean.returned_at}):\n  " + "\n  ".join(failure.problems)
        for failure in report.failures
    ]
    return report.states, problems
