"""The checks of one faulted step, used by the explorer and by the tests.

A clean ``baseline`` (trees before and after, counted operations, the trace); then
``check_crash`` (crash at op k, recover), ``check_power_state`` (one power-loss state,
recover) and ``check_recovery_crash`` (crash at op k, crash again at op j of the
recovery, recover). Each returns the problems found, as lines; none means it passed.
After recovery the root must equal the tree before the step or the tree after it,
byte for byte (so a leftover stage, backup or temp file is a problem), and no
journal may be left. Once the step has issued its last operation, only the tree
after it is acceptable: a change reported as done must survive a power cut.
``make_runner`` picks the runner of a scenario: the reference's, or a driver's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection.driver_runner import DriverRunner
from editspec.fault_injection.powerloss import (
    Image,
    Model,
    PowerState,
    TraceOp,
    power_loss_states,
)
from editspec.fault_injection.runner import (
    Runner,
    Sandbox,
    StepReport,
)
from editspec.fault_injection.scenario import Outcome, Scenario


def make_runner(
    sandbox: Sandbox,
    driver: str = "",
    *,
    count: str = "mutating",
    watch: Callable[..., None] | None = None,
    on_restart: Callable[[str], None] | None = None,
) -> Any:
    """The reference through its port (counting ``count`` operations), or ``driver``
    (``module:factory``) through the contract: a scenario's ``driver`` and ``count``.

    ``watch`` sees the reference's ``OpEvent``s, or a driver's ``(OsCall, outcome)``s.
    """
    if driver:
        return DriverRunner(sandbox, driver, watch=watch, on_restart=on_restart)
    return Runner(sandbox, count=count, watch=watch, on_restart=on_restart)


@attrs.frozen
class Baseline:
    """A clean run of a scenario's last step."""

    before: trees.Tree
    after: trees.Tree
    outcome: Outcome
    count: int
    image: Image
    trace: tuple[TraceOp, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.trace)

    def acceptable_at(self, point: int) -> tuple[trees.Tree, ...]:
        if point >= len(self.trace):
            return (self.after,)
        return (self.before, self.after)


def _setup(runner: Any, scenario: Scenario) -> None:
    runner.start(scenario.initial)
    for step in scenario.steps[:-1]:
        report = runner.run(step)
        if report.restart_error is not None:
            raise RuntimeError(f"setup step failed to recover: {report.restart_error}")


def baseline(sandbox: Sandbox, scenario: Scenario) -> Baseline:
    """Run ``scenario`` without faults, recording its last step."""
    runner = make_runner(sandbox, scenario.driver, count=scenario.count)
    try:
        _setup(runner, scenario)
        before = sandbox.tree()
        clean = runner.record(scenario.steps[-1])
    finally:
        runner.close()
    return Baseline(before, sandbox.tree(), clean.outcome, clean.count, clean.image, clean.trace)


@attrs.frozen
class Verdict:
    """The result of one check: a failure scenario (None if it passed), and notes."""

    finding: Scenario | None
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.finding is None


def stray_temp_files(tree: Mapping[str, trees.Entry]) -> list[str]:
    """Paths of single-file write temp files (``.<name>.editspec-<hex>.tmp``) in ``tree``."""
    from editspec.reference.port import is_temp_name

    return [path for path in tree if is_temp_name(path.rsplit("/", 1)[-1])]


def check_outcome(
    sandbox: Sandbox,
    report: StepReport,
    acceptable: Sequence[trees.Tree],
    *,
    journals: bool = True,
    failed: bool = False,
) -> tuple[list[str], list[str], trees.Tree]:
    """Problems and notes about the disk after recovery; and the root's tree.

    The temp file of a single-file write interrupted by a crash is not a problem but a
    note: DESIGN §5 requires recovery to leave no stage, backup or journal file, and
    recovery cannot tell such a temp file from one a live writer in another process
    is still filling. Everything else must match byte for byte. With no ``acceptable``
    tree only recovery itself (and, with ``journals``, what it left) is checked;
    ``failed``: the one acceptable tree is the one before a step that answered an error;
    ``journals=False`` is for a disk looked at before any recovery, and for a driver that
    does not keep its journals where DESIGN puts them (no ``journal_layout``).
    """
    problems: list[str] = []
    notes: list[str] = []
    if report.restart_error is not None:
        problems.append(f"recovery failed: {report.restart_error}")
    actual = sandbox.tree()
    strays = stray_temp_files(actual)
    if strays:
        notes.append("stray temp file left: " + ", ".join(strays))
    compared = {path: entry for path, entry in actual.items() if path not in strays}
    if acceptable and not any(trees.equal(tree, compared) for tree in acceptable):
        closest = min(acceptable, key=lambda tree: len(trees.diff(tree, compared)))
        if len(acceptable) > 1:
            problems.append("disk is neither all-before nor all-after:")
        elif failed:
            problems.append("disk is not all-before although the step failed:")
        else:
            problems.append("disk is not all-after although the step had finished:")
        problems.extend("  " + line for line in trees.diff(closest, compared))
    leftovers = sandbox.journals() if journals else []
    if leftovers:
        problems.append("journal left after recovery: " + ", ".join(leftovers))
    return problems, notes, actual


def with_fault(scenario: Scenario, fault: Mapping[str, Any]) -> Scenario:
    steps = list(scenario.steps)
    steps[-1] = {**steps[-1], "fault": {**fault, "step": len(steps) - 1}}
    return attrs.evolve(scenario, steps=tuple(steps), fault=steps[-1]["fault"])


def _faulted(
    sandbox: Sandbox, scenario: Scenario, base: Baseline, fault: Mapping[str, Any]
) -> tuple[Scenario, StepReport, list[str], list[str], trees.Tree]:
    """Run the last step with ``fault`` after a clean setup; the faulted scenario, the
    report, and the problems, notes and tree ``check_outcome`` finds."""
    faulted = with_fault(scenario, fault)
    runner = make_runner(sandbox, scenario.driver, count=scenario.count)
    try:
        _setup(runner, scenario)
        report = runner.run(faulted.steps[-1])
    finally:
        runner.close()
    problems, notes, actual = check_outcome(
        sandbox, report, (base.before, base.after), journals=runner.checks_journals
    )
    return faulted, report, problems, notes, actual


def check_crash(sandbox: Sandbox, scenario: Scenario, base: Baseline, at: int) -> Verdict:
    """Crash at counted operation ``at`` of the last step, recover, check; a failure or None."""
    faulted, report, problems, notes, actual = _faulted(
        sandbox, scenario, base, {"kind": "crash", "at": at}
    )
    if not report.crashed:
        problems.insert(0, f"no crash: the step issued fewer than {at} counted operations")
    return _verdict(faulted, base, (base.before, base.after), actual, problems, notes)


def power_states(
    base: Baseline, model: Model, *, limit: int = 4096
) -> tuple[list[PowerState], bool]:
    """Every distinct power-loss state of the baseline's trace (with its acceptable trees)."""
    during, hit_during = power_loss_states(
        base.image, base.trace, model, points=range(len(base.trace)), limit=limit
    )
    done, hit_done = power_loss_states(
        base.image, base.trace, model, points=[len(base.trace)], limit=limit
    )
    return during + done, hit_during or hit_done


def power_fault(state: PowerState, model: Model) -> dict[str, Any]:
    return {
        "kind": "power_loss",
        "model": model,
        "point": state.point,
        "lost": list(state.lost),
        "cut": [[key, kept] for key, _p, kept, _w in state.cut],
        "description": state.describe(),
    }


def check_power_state(
    sandbox: Sandbox,
    scenario: Scenario,
    base: Baseline,
    state: PowerState,
    model: Model,
) -> Verdict:
    """Materialize one power-loss state of the baseline, recover, check."""
    faulted = with_fault(scenario, power_fault(state, model))
    runner = make_runner(sandbox, scenario.driver, count=scenario.count)
    try:
        report = runner.cut_power(state)
    finally:
        runner.close()
    acceptable = base.acceptable_at(state.point)
    problems, notes, actual = check_outcome(
        sandbox, report, acceptable, journals=runner.checks_journals
    )
    return _verdict(faulted, base, acceptable, actual, problems, notes)


def recovery_count(sandbox: Sandbox, scenario: Scenario, at: int) -> int:
    """How many counted operations recovery issues after a crash at ``at``."""
    runner = make_runner(sandbox, scenario.driver, count=scenario.count)
    try:
        _setup(runner, scenario)
        return int(runner.recovery_count(scenario.steps[-1], at))
    finally:
        runner.close()


def check_recovery_crash(
    sandbox: Sandbox, scenario: Scenario, base: Baseline, at: int, recovery_at: int
) -> Verdict:
    """Crash at ``at``, crash the recovery at its ``recovery_at``-th operation, recover again."""
    fault = {"kind": "recovery_crash", "at": at, "recovery_at": recovery_at}
    faulted, _, problems, notes, actual = _faulted(sandbox, scenario, base, fault)
    return _verdict(faulted, base, (base.before, base.after), actual, problems, notes)


def _verdict(
    faulted: Scenario,
    base: Baseline,
    acceptable: Sequence[trees.Tree],
    actual: trees.Tree,
    problems: list[str],
    notes: list[str],
) -> Verdict:
    if not problems:
        return Verdict(None, tuple(notes))
    finding = attrs.evolve(
        faulted,
        expected=tuple(acceptable),
        actual=actual,
        problems=tuple(problems),
        trace=base.names,
    )
    return Verdict(finding, tuple(notes))
