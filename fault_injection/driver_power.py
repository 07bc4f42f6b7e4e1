"""A Python driver under the power-loss model, seen only through the driver contract.

``check_driver_power_loss(factory, sandbox, scenario)`` runs a scenario's steps through
a driver (its last step recorded by ``ostrace.OsTraceRecorder``), then materializes
every power-loss state, opens a fresh driver over it (``recover()`` when it has the
``recovery`` capability) and checks the disk as the reference's checks do: all-before
or all-after, no journal left.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from editspec.fault_injection import checks, trees
from editspec.fault_injection.driver_runner import DriverRunner
from editspec.fault_injection.ostrace import OsTraceRecorder
from editspec.fault_injection.powerloss import (
    Model,
    PowerLossReport,
    check_power_loss,
)
from editspec.fault_injection.runner import Sandbox
from editspec.fault_injection.scenario import Outcome, Scenario

__all__ = ["DriverBaseline", "DriverFactory", "check_driver_power_loss", "driver_baseline"]


#: ``factory(root, state_dir)``, the driver contract's ``DriverFactory``.
DriverFactory = Callable[[Path, Path], Any]


def _reopen(factory: DriverFactory) -> Callable[[str, str], object]:
    def open_driver(root: str, state_dir: str) -> object:
        driver = factory(Path(root), Path(state_dir))
        if "recovery" in getattr(driver, "capabilities", ()):
            driver.recover()
        return driver

    return open_driver


@attrs.frozen
class DriverBaseline:
    """A clean run of a scenario's last step through a driver, recorded at the os level."""

    before: trees.Tree
    after: trees.Tree
    outcome: Outcome
    recorder: OsTraceRecorder
    capabilities: frozenset[str] = frozenset()

    def acceptable_at(self, point: int) -> tuple[trees.Tree, ...]:
        if point >= len(self.recorder.ops):
            return (self.after,)
        return (self.before, self.after)


def driver_baseline(factory: DriverFactory, sandbox: Sandbox, scenario: Scenario) -> DriverBaseline:
    """Run ``scenario`` through a fresh driver; record its last step's ``os`` calls."""
    runner = DriverRunner(sandbox, factory)
    try:
        runner.start(scenario.initial)
        for step in scenario.steps[:-1]:
            runner.run(step)
        before = sandbox.tree()
        clean = runner.record(scenario.steps[-1])
    finally:
        runner.close()
    assert runner.last_recorder is not None
    return DriverBaseline(
        before, sandbox.tree(), clean.outcome, runner.last_recorder, runner.capabilities
    )


def check_driver_power_loss(
    factory: DriverFactory,
    sandbox: Sandbox,
    scenario: Scenario,
    model: Model = "ordered",
    *,
    limit: int = 4096,
    stop_after: int | None = None,
    baseline: DriverBaseline | None = None,
    ignore: Callable[[str], bool] | None = None,
    journals: bool | None = None,
) -> PowerLossReport:
    """Every power-loss state of the scenario's last step, through ``factory``'s driver.

    Each state is materialized in the sandbox, a fresh driver recovers, and the root
    must be all-before or all-after (all-after once the step returned), with no journal
    left under ``<state_dir>/journal`` (checked when ``journals``; by default when the
    driver declares ``journal_layout``). ``ignore(relative_path)`` leaves paths out of
    the comparison: by default the temp file of an interrupted single-file write, named
    as the reference names it (as ``checks.check_outcome`` does); a driver naming its
    temp files otherwise says how.
    """
    clean = baseline if baseline is not None else driver_baseline(factory, sandbox, scenario)

    def stray(path: str) -> bool:
        return bool(checks.stray_temp_files({path: trees.Entry.dir()}))

    return check_power_loss(
        clean.recorder,
        root=sandbox.root,
        state_dir=sandbox.state_dir,
        acceptable_at=clean.acceptable_at,
        model=model,
        open_workspace=_reopen(factory),
        limit=limit,
        stop_after=stop_after,
        ignore=stray if ignore is None else ignore,
        journals="journal_layout" in clean.capabilities if journals is None else journals,
    )
