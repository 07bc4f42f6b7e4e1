"""Scenarios through any Python driver: its ``os`` calls crashed, failed or cut by power loss.

``DriverRunner`` is ``runner.Runner`` for an implementation reached only through the
driver contract (DESIGN §2) that declares ``python_fs``: it runs in this process, so
``osfaults.OsInterceptor`` sees every call it makes to ``os`` and ``open``.
A scenario that names a driver (``Scenario.driver``, ``"module:factory"``) is run with
one by ``checks.make_runner``, so the explorer's checks (``harness.baseline``,
``check_crash``, ``check_recovery_crash``, ``check_power_state``) and ``editspec
replay`` serve it exactly as they serve the reference. What differs:

* counted operations are the driver's *mutating* ``os`` calls (``OsInterceptor``), not
  the reference's port operations;
* a restart is a fresh driver over the same root and state directory, on which
  ``recover()`` is called when it declares ``recovery`` (as after a real restart);
  a crashed driver is dead and is never called or closed again;
* the power-loss trace is ``ostrace.OsTraceRecorder``'s; a trace with calls the model
  cannot replay is refused (``ValueError``).

``watch(call, outcome)`` sees each counted call once its block has ended, in order,
with ``"ok"``, ``"crash"`` or ``"fail:<errno name>"``.
"""

from __future__ import annotations

import errno as _errno
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from editspec.contract.drivers import load_factory
from editspec.fault_injection import runner, trees
from editspec.fault_injection.faultfs import SimulatedCrash
from editspec.fault_injection.osfaults import OsInterceptor
from editspec.fault_injection.ostrace import OsTraceRecorder
from editspec.fault_injection.powerloss import TraceOp, materialize, state_of_fault
from editspec.fault_injection.scenario import DriverWorkspace, Outcome, perform

__all__ = ["DriverRunner", "OsWatch", "driver_factory"]

#: What a runner's ``watch`` receives: an ``OsCall`` and how it ended.
OsWatch = Callable[[Any, str], None]

_FACTORIES: dict[str, Callable[[Path, Path], Any]] = {}


def driver_factory(spec: str) -> Callable[[Path, Path], Any]:
    """The ``DriverFactory`` named ``module:factory`` (loaded once per process)."""
    if spec not in _FACTORIES:
        _FACTORIES[spec] = load_factory(spec)
    return _FACTORIES[spec]


class DriverRunner:
    """Drive one Python driver through steps, injecting each step's fault at the os level."""

    def __init__(
        self,
        sandbox: runner.Sandbox,
        driver: str | Callable[[Path, Path], Any],
        *,
        watch: OsWatch | None = None,
        on_restart: Callable[[str], None] | None = None,
    ) -> None:
        self.sandbox = sandbox
        if isinstance(driver, str):
            self.spec, self.factory = driver, driver_factory(driver)
        else:
            self.spec = f"{driver.__module__}:{driver.__qualname__}"
            self.factory = driver
        self.capabilities: frozenset[str] = frozenset()
        self.watch = watch
        self.on_restart = on_restart
        self.driver: Any = None
        self.workspace: DriverWorkspace | None = None
        self.last_trace: tuple[TraceOp, ...] = ()  # of the last power-loss step
        self.last_log: tuple[Any, ...] = ()  # the port's records: a driver has none
        self.last_recorder: OsTraceRecorder | None = None  # of the last ``record``

    # -- drivers ---------------------------------------------------------------------

    def _intercepted(self, **plan: Any) -> Any:

        return OsInterceptor(**plan)

    def _show(self, interceptor: Any) -> None:
        if self.watch is None:
            return
        for call in interceptor.trace:
            outcome = "ok"
            if interceptor.crashed and call.index == interceptor.crash_at:
                outcome = "crash"
            elif interceptor.fail_at is not None and (
                call.index == interceptor.fail_at
                or (interceptor.fail_later and call.index > interceptor.fail_at)
            ):
                outcome = f"fail:{_errno.errorcode.get(interceptor.fail_errno, 'EIO')}"
            self.watch(call, outcome)

    def _drop(self) -> None:
        """Close the live driver, if any (a crashed one is dead: it is never called again)."""
        driver, self.driver, self.workspace = self.driver, None, None
        if driver is not None:
            driver.close()

    def _open(self) -> Any:
        driver = self.factory(Path(self.sandbox.root), Path(self.sandbox.state_dir))
        capabilities = frozenset(getattr(driver, "capabilities", ()))
        if "python_fs" not in capabilities:
            driver.close()
            raise ValueError(
                f"{self.spec} does not declare python_fs: its calls may not go through "
                "this process's os module, so no fault injected there would reach them"
            )
        self.capabilities = capabilities
        if "recovery" in capabilities:
            try:
                driver.recover()
            except Exception:  # a failed recovery (a crash in it is no Exception: dead)
                driver.close()
                raise
        return driver

    def start(self, initial: Mapping[str, trees.Entry]) -> None:
        self._drop()
        self.sandbox.reset(initial)
        self.restart("start")

    def restart(self, why: str, crash_at: int | None = None) -> None:
        """A fresh driver that recovers, as a new process would; it may crash at a call.

        Raises ``SimulatedCrash`` when ``crash_at`` was reached during the opening.
        """
        if self.on_restart is not None:
            self.on_restart(why)
        self._drop()
        if crash_at is None and self.watch is None:
            self.driver = self._open()
        else:
            opened: Any = None
            with self._intercepted(crash_at=crash_at) as interceptor:
                opened = self._open()
            self._show(interceptor)
            if interceptor.crashed:
                raise SimulatedCrash(f"the recovery crashed at its mutating call {crash_at}")
            self.driver = opened
        self.workspace = DriverWorkspace(self.driver)

    def _restart_checked(self, why: str) -> runner.StepReport:
        try:
            self.restart(why)
        except Exception as exc:  # recovery that raises is a finding, reported by the caller
            self.driver = self.workspace = None
            return runner.StepReport(None, restart_error=f"{type(exc).__name__}: {exc}")
        return runner.StepReport(None)

    def close(self) -> None:
        self._drop()

    @property
    def checks_journals(self) -> bool:
        """Journals are looked for where DESIGN puts them only if the driver says it does."""
        return "journal_layout" in self.capabilities

    # -- steps -----------------------------------------------------------------------

    def _perform(self, step: Mapping[str, Any]) -> Outcome:
        return perform(self.workspace, step, self.sandbox.root)

    def run(self, step: Mapping[str, Any]) -> runner.StepReport:
        assert self.workspace is not None
        fault = step.get("fault")
        if fault is None:
            if self.watch is None or step["call"] in ("external_write", "external_delete"):
                return runner.StepReport(self._perform(step))
            with self._intercepted() as interceptor:
                outcome = self._perform(step)
            self._show(interceptor)
            return runner.StepReport(outcome)
        kind = fault["kind"]
        if kind == "fail":
            with self._intercepted(
                fail_at=int(fault["at"]), fail_errno=getattr(_errno, fault["errno"])
            ) as interceptor:
                outcome = self._perform(step)
            self._show(interceptor)
            return runner.StepReport(outcome)
        if kind == "power_loss":
            return self._power_loss(step, fault)
        if kind not in ("crash", "recovery_crash"):
            raise ValueError(f"unknown fault kind {kind!r}")
        crash_outcome: Outcome | None = None
        with self._intercepted(crash_at=int(fault["at"])) as interceptor:
            crash_outcome = self._perform(step)
        self._show(interceptor)
        if not interceptor.crashed:
            return runner.StepReport(crash_outcome)
        self.driver = self.workspace = None  # dead: never closed
        recovery_crashed = False
        if kind == "recovery_crash":
            try:
                self.restart("crash", crash_at=int(fault["recovery_at"]))
            except SimulatedCrash:
                recovery_crashed = True
                self.driver = self.workspace = None
        report = self._restart_checked("crash during recovery" if recovery_crashed else "crash")
        return attrs.evolve(report, crashed=True, recovery_crashed=recovery_crashed)

    def _power_loss(self, step: Mapping[str, Any], fault: Mapping[str, Any]) -> runner.StepReport:
        recorder = OsTraceRecorder([self.sandbox.root, self.sandbox.state_dir])
        plan: dict[str, Any] = {}
        if "fail_at" in fault:  # an I/O error first; the failed call is not in the trace
            plan = {"fail_at": int(fault["fail_at"]), "fail_errno": getattr(_errno, fault["errno"])}
        with self._intercepted(**plan) as interceptor:
            recorder.start(interceptor)
            try:
                outcome = self._perform(step)
            finally:
                recorder.stop()
        self._show(interceptor)
        if recorder.unmodeled:
            raise ValueError(
                "the power-loss model cannot replay this trace: " + ", ".join(recorder.unmodeled)
            )
        self._drop()  # the power went: nothing the process does next reaches the disk
        self.last_trace = tuple(recorder.ops)
        state = state_of_fault(recorder.image, recorder.ops, fault)
        materialize(state, recorder.roots)
        return attrs.evolve(self._restart_checked("power loss"), outcome=outcome, power_state=state)

    def clean(self, step: Mapping[str, Any]) -> tuple[Outcome, int]:
        """Run ``step`` without a fault; its outcome and how many mutating calls it made."""
        with self._intercepted() as interceptor:
            outcome = self._perform(step)
        self._show(interceptor)
        return outcome, int(interceptor.mutations)

    def cut_power(self, state: Any) -> runner.StepReport:
        """The power goes (the live driver with it); ``state`` is what the disk kept."""
        self._drop()
        materialize(state, [self.sandbox.root, self.sandbox.state_dir])
        return self._restart_checked("power loss")

    def record(self, step: Mapping[str, Any]) -> runner.Recorded:
        """Run ``step`` without a fault, recording its os-level trace (``last_recorder``)."""
        recorder = self.last_recorder = OsTraceRecorder([self.sandbox.root, self.sandbox.state_dir])
        with self._intercepted() as interceptor:
            recorder.start(interceptor)
            try:
                outcome = self._perform(step)
            finally:
                recorder.stop()
        if recorder.unmodeled:
            raise ValueError(
                "the power-loss model cannot replay this trace: " + ", ".join(recorder.unmodeled)
            )
        return runner.Recorded(outcome, interceptor.mutations, recorder.image, tuple(recorder.ops))

    def recovery_count(self, step: Mapping[str, Any], at: int) -> int:
        """Crash ``step`` at mutating call ``at``; the mutating calls of the recovery."""
        with self._intercepted(crash_at=at) as interceptor:
            self._perform(step)
        if not interceptor.crashed:
            return 0
        self.driver = self.workspace = None
        with self._intercepted() as counting:
            self.driver = self._open()
        self.workspace = DriverWorkspace(self.driver)
        return int(counting.mutations)
