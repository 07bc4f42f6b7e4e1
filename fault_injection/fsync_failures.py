"""An fsync that fails, then a power cut: is the answer the step gave still true?

An injected ``FailAt`` on an fsync (or any call) of a scenario's last step, the step's
trace recorded with the failed fsync in it (``TraceRecorder`` keeps it, and the model
never lets a later fsync make what it covered durable), then every state a power cut
can leave, each recovered by a fresh workspace. What is acceptable depends on what the
step answered: during the step, all-before or all-after; once it has returned, only
all-after for a success, only all-before for an error (DESIGN §2: a failed operation
leaves every file as it was), and either for NEEDS_RECOVERY, which claims neither.

``check_fsync_failure`` returns the outcome, the number of states and one
``checks.Verdict`` finding per failing state: a scenario with a ``power_loss`` fault
carrying ``fail_at``, which ``editspec replay`` re-runs.

``check_recovered_after_kill`` is the same question asked of recovery: the step is
killed (``crash_at``, optionally after a failed call), so it answers nothing; fresh
workspaces recover before any power cut (one of them may have a call fail), their
calls recorded into the step's trace, so the model knows what an fsync that failed
before them covered; then the power is cut at every point from the kill on. Each
state, recovered once more, must be all-before or all-after, and once the last
recovery has returned, what it left: a recovery that finished on the strength of a
retried fsync (a record it read from the page cache, "committed" only there) is
caught.
"""

from __future__ import annotations

import errno as _errno
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection.checks import (
    Baseline,
    baseline,
    check_outcome,
    make_runner,
    power_fault,
    with_fault,
)
from editspec.fault_injection.faultfs import FailAt, errno_name
from editspec.fault_injection.powerloss import (
    Model,
    PowerState,
    TraceOp,
    TraceRecorder,
    power_loss_states,
)
from editspec.fault_injection.runner import FaultedRun, Sandbox
from editspec.fault_injection.scenario import Outcome, Scenario, perform

#: Picks the counted index of the call to fail from a clean run's trace.
Pick = Callable[[Sequence[TraceOp]], int]


def fsync_dir_after(renamed: Callable[[TraceOp], bool], *, last: bool = False) -> Pick:
    """The first fsync_dir after the (first or ``last``) rename that ``renamed`` accepts."""

    def pick(trace: Sequence[TraceOp]) -> int:
        renames = [op for op in trace if op.name == "rename" and renamed(op)]
        if not renames:
            raise ValueError("the step issues no such rename")
        chosen = renames[-1] if last else renames[0]
        return next(op.index for op in trace[chosen.position + 1 :] if op.name == "fsync_dir")

    return pick


def fsync_dir_after_op(name: str) -> Pick:
    """The first fsync_dir after the first ``name`` operation (``link``, ``rmdir``, ...)."""

    def pick(trace: Sequence[TraceOp]) -> int:
        first = next(op for op in trace if op.name == name)
        return next(op.index for op in trace[first.position + 1 :] if op.name == "fsync_dir")

    return pick


def fsync_dir_after_unlink_of(suffix: str) -> Pick:
    """The first fsync_dir of the unlinked path's directory after the unlink of the path
    ending in ``suffix`` (a file Move's commit point: the fsync that makes it durable)."""

    def pick(trace: Sequence[TraceOp]) -> int:
        unlink = next(op for op in trace if op.name == "unlink" and op.paths[0].endswith(suffix))
        directory = os.path.dirname(unlink.paths[0])
        return next(
            op.index
            for op in trace[unlink.position + 1 :]
            if op.name == "fsync_dir" and op.paths[0] == directory
        )

    return pick


def committed_rename(op: TraceOp) -> bool:
    """The rename that makes a transaction's journal ``committed`` (its commit point)."""
    return ".committed." in op.paths[0] and op.paths[1].endswith(".json")


#: The fsync that makes a transaction's commit record durable.
COMMIT_RECORD_FSYNC: Pick = fsync_dir_after(committed_rename)

#: Extra problems in a recovered state, given the step's answer.
Judge = Callable[[Sandbox, Outcome], list[str]]

#: An answer that claims nothing about the disk: recovery decides.
UNDECIDED = frozenset({"NEEDS_RECOVERY"})


@attrs.frozen
class FsyncFailure:
    """What ``check_fsync_failure`` found."""

    outcome: Outcome
    states: int
    truncated: bool
    findings: tuple[Scenario, ...]
    trace: tuple[TraceOp, ...]  # the faulted step's, the failed call included

    @property
    def passed(self) -> bool:
        return not self.findings


def acceptable_after(base: Baseline, outcome: Outcome) -> tuple[trees.Tree, ...]:
    """The trees a power cut after the step's last call may leave, given its answer."""
    if outcome.ok:
        return (base.after,)
    if outcome.code in UNDECIDED:
        return (base.before, base.after)
    return (base.before,)


def check_fsync_failure(
    sandbox: Sandbox,
    scenario: Scenario,
    at: int,
    *,
    errno: int = _errno.EIO,
    model: Model = "ordered",
    limit: int = 4096,
    stop_after: int | None = None,
    during: bool = True,
    judge: Judge | None = None,
) -> FsyncFailure:
    """Fail counted call ``at`` of the last step, then cut the power at every point
    (``during=False``: only after its last call, where its answer is judged).

    ``judge(sandbox, outcome)``: more problems, looked for in each recovered state after
    the last call (what the answer claims beyond the root's bytes, a snapshot say)."""
    base = baseline(sandbox, scenario)
    runner = make_runner(sandbox, count=scenario.count)
    try:
        runner.start(scenario.initial)
        for step in scenario.steps[:-1]:
            runner.run(step)
        recorder = TraceRecorder([sandbox.root, sandbox.state_dir])
        recorder.start(runner.fs)
        runner.fs.arm(FailAt(at, errno))
        try:
            outcome = perform(runner.workspace, scenario.steps[-1], sandbox.root)
        finally:
            runner.fs.arm(None)
            recorder.stop()
    finally:
        runner.close()
    trace = tuple(recorder.ops)
    done = acceptable_after(base, outcome)
    findings: list[Scenario] = []
    total, truncated = 0, False
    failed = not outcome.ok and outcome.code not in UNDECIDED
    groups: Sequence[tuple[range | list[int], tuple[trees.Tree, ...], bool]] = (
        (range(len(trace) if during else 0), (base.before, base.after), False),
        ([len(trace)], done, True),
    )
    for points, acceptable, returned in groups:
        states, hit = power_loss_states(recorder.image, trace, model, points=points, limit=limit)
        truncated = truncated or hit
        for state in states:
            total += 1
            finding = _check_state(
                sandbox,
                scenario,
                state,
                Fault(model, at, errno),
                acceptable,
                failed=returned and failed,
                extra=(lambda box: judge(box, outcome)) if returned and judge else None,
            )
            if finding is not None:
                findings.append(attrs.evolve(finding, trace=tuple(op.name for op in trace)))
                if stop_after is not None and len(findings) >= stop_after:
                    return FsyncFailure(outcome, total, truncated, tuple(findings), trace)
    return FsyncFailure(outcome, total, truncated, tuple(findings), trace)


@attrs.frozen
class Fault:
    """What was injected: the call that failed, its errno, and the power-loss model."""

    model: Model
    at: int
    errno: int


def _check_state(
    sandbox: Sandbox,
    scenario: Scenario,
    state: PowerState,
    fault: Fault,
    acceptable: tuple[trees.Tree, ...],
    *,
    failed: bool,
    extra: Callable[[Sandbox], list[str]] | None,
    injected: Mapping[str, Any] | None = None,
) -> Scenario | None:
    runner = make_runner(sandbox, count=scenario.count)
    try:
        report = runner.cut_power(state)
    finally:
        runner.close()
    problems, _notes, actual = check_outcome(
        sandbox, report, acceptable, journals=runner.checks_journals, failed=failed
    )
    if extra is not None and report.restart_error is None:
        problems.extend(extra(sandbox))
    if not problems:
        return None
    if injected is None:
        injected = {"fail_at": fault.at, "errno": errno_name(fault.errno)}
    return attrs.evolve(
        with_fault(scenario, {**power_fault(state, fault.model), **injected}),
        expected=acceptable,
        actual=actual,
        problems=tuple(problems),
    )


def check_recoveries_then_power_cut(
    sandbox: Sandbox,
    scenario: Scenario,
    fault: Mapping[str, Any],
    *,
    model: Model = "ordered",
    limit: int = 4096,
    stop_after: int | None = None,
) -> tuple[FaultedRun, FsyncFailure]:
    """Run the last step with ``fault`` (``fail_at`` and ``fail_again_at`` failing, the
    process killed at ``crash_at`` or exiting after its answer; then ``recoveries``, see
    ``Runner.record_faulted``), and cut the power at every point from the end of its
    process on; the recorded run and the verdict (a killed step's ``outcome`` is the
    clean run's). A killed step answered nothing: all-before or all-after; otherwise
    what its answer allows (``acceptable_after``); once the last recovery has returned,
    only what it left."""
    base = baseline(sandbox, scenario)
    run = recorded_run(sandbox, scenario, fault)
    left = sandbox.tree()
    if run.errors:
        raise ValueError(f"a recovery without a fault failed: {'; '.join(run.errors)}")
    answered = (
        (base.before, base.after) if run.outcome is None else acceptable_after(base, run.outcome)
    )
    # Once the last recovery has returned, its result must be what a cut leaves.
    done = tuple(tree for tree in answered if trees.equal(tree, left)) or answered
    assert run.ended_at is not None
    end = len(run.trace)
    judged: list[tuple[PowerState, tuple[trees.Tree, ...]]] = []
    truncated = False
    for points, acceptable in ((range(run.ended_at, end), answered), ([end], done)):
        states, hit = power_loss_states(run.image, run.trace, model, points=points, limit=limit)
        truncated = truncated or hit
        judged.extend((state, acceptable) for state in states)
    failed = run.outcome is not None and not run.outcome.ok and run.outcome.code not in UNDECIDED
    findings: list[Scenario] = []
    for state, acceptable in judged:
        finding = _check_state(
            sandbox,
            scenario,
            state,
            Fault(model, 0, _errno.EIO),
            acceptable,
            failed=failed and len(acceptable) == 1,
            extra=None,
            injected=fault,
        )
        if finding is not None:
            findings.append(attrs.evolve(finding, trace=tuple(op.name for op in run.trace)))
            if stop_after is not None and len(findings) >= stop_after:
                break
    outcome = run.outcome if run.outcome is not None else base.outcome
    return run, FsyncFailure(outcome, len(judged), truncated, tuple(findings), run.trace)


def recorded_run(sandbox: Sandbox, scenario: Scenario, fault: Mapping[str, Any]) -> FaultedRun:
    """Run ``scenario`` with ``fault`` on its last step up to the power cut, recording it
    and its later recoveries; ``ValueError`` if no recovery followed (the step was not
    killed, and the fault lists no ``recoveries``)."""
    runner = make_runner(sandbox, count=scenario.count)
    try:
        runner.start(scenario.initial)
        for step in scenario.steps[:-1]:
            runner.run(step)
        run: FaultedRun = runner.record_faulted(scenario.steps[-1], fault)
    finally:
        runner.close()
    if run.ended_at is None:
        raise ValueError(f"the step was not killed at {fault.get('crash_at')} and no recovery ran")
    return run
