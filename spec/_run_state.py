"""What the plugin keeps for one pytest run: the driver, the phases seen, the report.

``EditspecState`` is registered as a plugin object by ``plugin.pytest_configure``: it
loads and probes the driver on first use, records every phase report's classified
outcome (``record_phase``; an ``xdist`` controller receives them from the workers) and
builds, prints and writes the conformance report at the end of the run (``finish``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from editspec.contract.drivers import DriverSpec, factory_for
from editspec.spec import catalog, report
from editspec.spec.report import worst

#: The key of the classified outcome in a phase report's ``user_properties``.
PROPERTY = "editspec"
#: Seconds between two progress lines when stderr is not a terminal.
PROGRESS_EVERY = 60.0


class EditspecState:
    """Per-run state of the plugin (one per pytest process)."""

    def __init__(self, config: pytest.Config) -> None:

        self.config = config
        self.spec = DriverSpec(
            driver=config.getoption("editspec_driver"),
            mcp=config.getoption("editspec_mcp"),
            mcp_map=config.getoption("editspec_mcp_map"),
            mcp_url=config.getoption("editspec_mcp_url"),
            mcp_root=config.getoption("editspec_mcp_root"),
        )
        self.expectations_path: str | None = config.getoption("editspec_expectations")
        self.expectations: dict[str, Any] = {}
        self.report_paths: list[str] = list(config.getoption("editspec_report") or [])
        self.call_log_dir: str | None = config.getoption("editspec_call_log")

        # On a terminal one line rewritten in place; elsewhere (a log, tox, CI) a plain line
        # every PROGRESS_EVERY seconds, so that a run of many minutes is not silent.
        self.show_progress = bool(config.getoption("editspec_progress"))
        self.progress_in_place = sys.stderr.isatty()
        self.progress_shown = time.monotonic()
        self.total = 0
        self.done = 0
        self._factory: Any = None
        self._info: dict[str, Any] | None = None
        self.phases: dict[str, dict[str, Any]] = {}
        self.started = time.monotonic()
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.report: dict[str, Any] | None = None

    # -- the driver ----------------------------------------------------------------------

    def factory(self) -> Any:
        if self._factory is None:
            self._factory = factory_for(self.spec)
        return self._factory

    def info(self) -> dict[str, Any]:
        """Name and capabilities of the driver, from one probe instance (cached)."""
        if self._info is None:
            base = Path(tempfile.mkdtemp(prefix="editspec-probe-"))
            try:
                (base / "ws").mkdir()
                (base / "state").mkdir()
                # A running server has one root; asking its name touches no file there.
                root = Path(self.spec.mcp_root) if self.spec.mcp_root else base / "ws"
                driver = self.factory()(root, base / "state")
                try:
                    self._info = {
                        "name": str(getattr(driver, "name", "?")),
                        "capabilities": sorted(frozenset(driver.capabilities)),
                        "driver": self.spec.describe(),
                    }
                finally:
                    driver.close()
            finally:
                shutil.rmtree(base, ignore_errors=True)
        return self._info

    # -- hooks of the run (registered as a plugin object) ------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record_phase(self, report)
        if report.when == "teardown":
            self.count_clause_done()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, len(ids))

    def count_clause_done(self) -> None:
        """One clause test finished: the progress line, where it is asked for."""

        if not self.show_progress or is_worker(self.config):
            return
        self.done += 1
        total = max(self.total, self.done)
        if self.progress_in_place:
            sys.stderr.write(f"\reditspec: {self.done}/{total} clause tests run")
            if self.done >= total:
                sys.stderr.write("\r\x1b[K")
        else:
            now = time.monotonic()
            if now - self.progress_shown < PROGRESS_EVERY or self.done >= total:
                return
            self.progress_shown = now
            elapsed = int(now - self.started)
            sys.stderr.write(
                f"editspec: {self.done}/{total} clause tests run "
                f"({elapsed // 60}m{elapsed % 60:02d}s)\n"
            )
        sys.stderr.flush()

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        finish(self)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.report is None:
            return

        terminalreporter.section("editspec conformance")
        verbose = self.config.getoption("verbose") > 0
        for line in report.render_text(self.report, tracebacks=verbose).splitlines():
            terminalreporter.write_line(line)
        unknown = self.report.get("unknown_expectations")
        if unknown:
            terminalreporter.write_line(
                "the expectations name clauses the suite does not have: " + ", ".join(unknown)
            )


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def record_phase(state: EditspecState, report: pytest.TestReport) -> None:
    found = next((value for key, value in report.user_properties if key == PROPERTY), None)
    if not isinstance(found, dict):
        return
    data: dict[str, Any] = found

    phase = state.phases.setdefault(
        report.nodeid,
        {
            "clause": data["clause"],
            "outcomes": [],
            "message": "",
            "kind": None,
            "traceback": "",
            "duration": 0.0,
        },
    )
    phase["duration"] += float(report.duration or 0.0)
    if data["outcome"] is not None:
        before = worst(phase["outcomes"]) if phase["outcomes"] else None
        phase["outcomes"].append(data["outcome"])
        if before is None or worst([before, data["outcome"]]) != before:
            phase["message"] = data["message"]
            phase["kind"] = data.get("kind")
            phase["traceback"] = data.get("traceback", "")


def finish(state: EditspecState) -> None:
    config = state.config
    if is_worker(config) or not state.phases:
        return

    items = []
    for nodeid, phase in state.phases.items():
        outcomes = phase["outcomes"] or [report.ERROR]
        items.append(
            {
                "nodeid": nodeid,
                "clause": phase["clause"],
                "outcome": report.worst(outcomes),
                "kind": phase["kind"],
                "message": phase["message"] or ("" if phase["outcomes"] else "no outcome recorded"),
                "traceback": phase["traceback"],
                "duration": phase["duration"],
            }
        )
    try:
        implementation = state.info()
    except Exception as exc:  # the report still records what ran
        implementation = {
            "name": "?",
            "capabilities": [],
            "driver": state.spec.describe(),
            "probe_error": str(exc),
        }
    built = report.build(
        items,
        implementation=implementation,
        catalog_hash=catalog.catalog_hash(),
        expectations=state.expectations_path,
        duration=time.monotonic() - state.started,
        started=state.started_at,
        workers=int(getattr(config.option, "numprocesses", 0) or 0),
    )
    known = {item.id for item in catalog.load()}
    unknown = sorted(set(state.expectations) - known)
    if unknown:
        built["unknown_expectations"] = unknown
    state.report = built
    for path in state.report_paths:
        write_report(built, Path(path))


def write_report(built: dict[str, Any], path: Path) -> None:

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".md":
        path.write_text(report.render_markdown(built), encoding="utf-8")
    else:
        path.write_text(json.dumps(built, indent=2, sort_keys=False) + "\n", encoding="utf-8")
