"""The editspec pytest plugin (registered through the ``pytest11`` entry point).

It is loaded in every pytest run of an environment where editspec is installed, so it
stays inert until a clause runs: options are registered, but the driver is loaded, the
capabilities probed and the report built only for items that carry a clause.

* Options: ``--editspec-driver=module:factory`` (default: the reference engine),
  ``--editspec-mcp="COMMAND"`` with ``--editspec-mcp-map=FILE``,
  ``--editspec-mcp-url=URL`` with ``--editspec-mcp-root=DIR`` (a running server, whose
  one root the clauses share: ``editspec.spec._shared_root``),
  ``--editspec-expectations=FILE``, ``--editspec-report=PATH`` (``.json`` or ``.md``,
  repeatable).
* A clause whose ``requires`` the driver does not declare is skipped with a reason that
  starts with ``UNSUPPORTED:``; an expected failure becomes a strict ``xfail``.
* Each phase report carries the clause and its classified outcome in
  ``user_properties``, so the controller of an ``xdist`` run builds the report from the
  workers' reports alone.

The fixtures clauses use live in ``spec/conftest.py`` (they apply to the suite's own
modules only).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Generator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

PROPERTY = "editspec"
_UNSUPPORTED_PREFIX = "UNSUPPORTED:"
_WITHDRAWN_PREFIX = "WITHDRAWN:"
_XPASS_STRICT = "[XPASS(strict)]"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("editspec", "editspec conformance suite")
    group.addoption(
        "--editspec-driver",
        metavar="MODULE:FACTORY",
        help="the implementation under test: a DriverFactory (default: the reference engine)",
    )
    group.addoption(
        "--editspec-mcp",
        metavar="COMMAND",
        help="test an MCP server started with this command line instead of a Python driver",
    )
    group.addoption(
        "--editspec-mcp-map",
        metavar="FILE",
        help="a TOML map from the contract's operations to the MCP server's tools",
    )
    group.addoption(
        "--editspec-mcp-url",
        metavar="URL",
        help="test an MCP server already running over Streamable HTTP at this URL",
    )
    group.addoption(
        "--editspec-mcp-root",
        metavar="DIR",
        help="with --editspec-mcp-url: the workspace root that server serves, an empty "
        "directory alone in its parent (the suite empties it between clauses)",
    )
    group.addoption(
        "--editspec-expectations",
        metavar="FILE",
        help="known failures of the implementation (TOML keyed by clause id), applied strictly",
    )
    group.addoption(
        "--editspec-progress",
        action="store_true",
        help="show how many clauses have run on stderr (when it is a terminal)",
    )
    group.addoption(
        "--editspec-call-log",
        metavar="DIR",
        help="write each clause's driver calls to DIR/<worker>.jsonl (for the self-check)",
    )
    group.addoption(
        "--editspec-report",
        metavar="PATH",
        action="append",
        default=[],
        help="write the conformance report to PATH (.json or .md); may be repeated",
    )


class EditspecState:
    """Per-run state of the plugin (one per pytest process)."""

    def __init__(self, config: pytest.Config) -> None:
        from editspec.spec.drivers import DriverSpec

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
        import sys

        self.show_progress = bool(config.getoption("editspec_progress")) and sys.stderr.isatty()
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
            from editspec.spec.drivers import factory_for

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
        _record_phase(self, report)
        if report.when == "teardown":
            self._progress()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, len(ids))

    def _progress(self) -> None:
        import sys

        if not self.show_progress or _is_worker(self.config):
            return
        self.done += 1
        total = max(self.total, self.done)
        sys.stderr.write(f"\reditspec: {self.done}/{total} clause tests run")
        if self.done >= total:
            sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        _finish(self)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.report is None:
            return
        from editspec.spec import report

        terminalreporter.section("editspec conformance")
        verbose = self.config.getoption("verbose") > 0
        for line in report.render_text(self.report, tracebacks=verbose).splitlines():
            terminalreporter.write_line(line)
        unknown = self.report.get("unknown_expectations")
        if unknown:
            terminalreporter.write_line(
                "the expectations name clauses the suite does not have: " + ", ".join(unknown)
            )


_STATE = pytest.StashKey[EditspecState]()


def state_of(config: pytest.Config) -> EditspecState:
    return config.stash[_STATE]


def pytest_configure(config: pytest.Config) -> None:
    from editspec.spec.drivers import DriverLoadError

    config.addinivalue_line(
        "markers",
        "editspec_clause(id, level, requires): the clause a conformance test checks "
        "(added by the editspec plugin; select with -m editspec_clause or -k CLAUSE-ID)",
    )
    global _CALL_LOG_CONFIG
    # pytest removes old temporary directories with a recursive rmtree; a careless tool
    # under test can leave a tree there thousands of levels deep (PATH-062 makes one), which
    # would end every later session in a RecursionError.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    state = EditspecState(config)
    config.stash[_STATE] = state
    _CALL_LOG_CONFIG = config
    config.pluginmanager.register(state, "editspec-state")
    for path in state.report_paths:
        if Path(path).suffix not in (".json", ".md"):
            raise pytest.UsageError(f"--editspec-report: {path} must end in .json or .md")
    if state.expectations_path:
        from editspec.spec import expectations

        try:
            state.expectations = expectations.load(state.expectations_path)
        except expectations.ExpectationsError as exc:
            raise pytest.UsageError(str(exc)) from exc
    named = (state.spec.driver, state.spec.mcp, state.spec.mcp_map, state.spec.mcp_url)
    if any(named) or state.spec.mcp_root:
        # Named explicitly: a typo is a usage error now, not 150 errors later.
        try:
            state.factory()
        except DriverLoadError as exc:
            raise pytest.UsageError(str(exc)) from exc
    if state.spec.mcp_root is not None:
        _check_shared_root(config, Path(state.spec.mcp_root))


def _check_shared_root(config: pytest.Config, root: Path) -> None:
    """One running server's root: clauses take turns in it, in one process."""
    from editspec.spec._shared_root import SharedRootError, check_exclusive

    if getattr(config.option, "numprocesses", None) or _is_worker(config):
        raise pytest.UsageError(
            "--editspec-mcp-url: the clauses share the server's one workspace root, so they "
            "run one at a time (no -n)"
        )
    try:
        check_exclusive(root)
    except SharedRootError as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_report_header(config: pytest.Config) -> str | None:
    state = config.stash.get(_STATE, None)
    if state is None or not (state.spec.driver or state.spec.mcp or state.spec.mcp_url):
        return None
    return f"editspec driver: {state.spec.describe()}"


def _clause(item: pytest.Item) -> Any:
    from editspec.spec._clauses import clause_of

    return clause_of(getattr(item, "obj", None))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = state_of(config)
    for item in items:
        found = _clause(item)
        if found is None:
            continue
        item.add_marker(
            pytest.mark.editspec_clause(
                found.id, level=found.level, requires=sorted(found.requires)
            )
        )
        item.extra_keyword_matches.update({found.id, found.area, found.level})
        item.user_properties.append(("clause", found.id))
        expectation = state.expectations.get(found.id)
        if expectation is not None and found.withdrawn is None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=expectation.reason))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    found = _clause(item)
    if found is None:
        return
    from editspec.spec import _calls

    log = _calls.begin()
    for name in getattr(item, "fixturenames", ()):
        log.note(f"fixture:{name}")
    if found.withdrawn is not None:
        pytest.skip(f"{_WITHDRAWN_PREFIX} {found.withdrawn}")
    if found.requires:
        from editspec.spec.drivers import DriverLoadError

        try:
            declared = frozenset(state_of(item.config).info()["capabilities"])
        except DriverLoadError as exc:
            raise pytest.UsageError(str(exc)) from exc
        missing = sorted(found.requires - declared)
        if missing:
            pytest.skip(f"{_UNSUPPORTED_PREFIX} the driver does not declare {', '.join(missing)}")


# -- classification -------------------------------------------------------------------------


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


def _exception_outcome(
    excinfo: pytest.ExceptionInfo[BaseException] | None,
) -> tuple[str, str, str | None]:
    """(outcome, message, kind) for an exception raised while a clause ran (DESIGN §7)."""
    from editspec.spec import _assertions
    from editspec.spec.contract import is_error_code
    from editspec.spec.report import ERROR, FAIL, INCONCLUSIVE, UNSUPPORTED

    if excinfo is None:
        return FAIL, "", _assertions.WRONG_BEHAVIOUR
    exc = excinfo.value
    kind: str | None = None
    if isinstance(exc, _assertions.Inconclusive):
        outcome, message = INCONCLUSIVE, str(exc)
    elif getattr(exc, "unsupported", False):
        # The tool has no way to take what the clause passes (its map says so).
        outcome, message = UNSUPPORTED, f"{_UNSUPPORTED_PREFIX} {exc}"
    elif isinstance(exc, AssertionError) or _assertions.is_missing_field(exc):
        outcome, kind = FAIL, _assertions.failure_kind(excinfo)
        message = str(exc) if isinstance(exc, _assertions.ClauseFailure) else excinfo.exconly()
        if _assertions.is_missing_field(exc) and not isinstance(exc, AssertionError):
            message = f"the result lacks the field {getattr(exc, 'name', '?')!r}: {exc}"
    elif _assertions.is_test_outcome(exc):
        outcome, kind = FAIL, _assertions.WRONG_BEHAVIOUR
        message = str(getattr(exc, "msg", None) or exc)
    elif _assertions.from_implementation(exc):
        # The tool refused (with a code or without one) where the clause expected success.
        outcome, kind = FAIL, _assertions.WRONG_CODE
        code = getattr(exc, "code", None)
        if is_error_code(code):
            message = f"unexpected error {exc}"
        else:
            message = f"the implementation raised {type(exc).__name__} without an error code: {exc}"
    else:
        outcome, message = ERROR, f"{type(exc).__name__}: {exc}"
    if len(message) > 2000:
        message = message[:2000] + " ..."
    return outcome, message, kind


def _traceback_text(report: pytest.TestReport) -> str:
    text = str(report.longrepr or "")
    return text if len(text) <= 20000 else text[:20000] + "\n..."


def classify(
    report: pytest.TestReport, call: pytest.CallInfo[None]
) -> tuple[str | None, str, str | None]:
    """(outcome, message, kind) one phase contributes to its clause (None: nothing to say)."""
    from editspec.spec import report as outcomes

    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:
        if report.skipped:
            return outcomes.XFAIL, f"expected failure: {wasxfail}", None
        return outcomes.XPASS, f"passed, but the expectations list it: {wasxfail}", None
    if report.skipped:
        reason = _skip_reason(report)
        if reason.startswith(_UNSUPPORTED_PREFIX):
            return outcomes.UNSUPPORTED, reason, None
        if reason.startswith(_WITHDRAWN_PREFIX):
            return outcomes.WITHDRAWN, reason, None
        return outcomes.SKIPPED, reason, None
    if report.passed:
        return (outcomes.PASS, "", None) if report.when == "call" else (None, "", None)
    if report.when == "call" and _XPASS_STRICT in str(report.longrepr):
        reason = str(report.longrepr).replace(_XPASS_STRICT, "").strip()
        return outcomes.XPASS, f"passed, but the expectations list it: {reason}", None
    outcome, message, kind = _exception_outcome(call.excinfo)
    if report.when == "setup" and outcome == outcomes.FAIL and kind is not None:
        # The driver failed while the clause's fixtures were built (the factory, a first
        # session): the implementation's own failure, reported as such.
        return outcome, f"setup failed: {message}", kind
    if report.when != "call":
        # A fixture of the suite failed (or the driver could not be closed).
        if outcome == outcomes.INCONCLUSIVE:
            return outcome, message, None
        return outcomes.ERROR, f"{report.when} failed: {message}", None
    return outcome, message, kind


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A clause's worker thread that dies fails the clause (never a warning)."""
    if _clause(item) is None:
        return (yield)
    died: list[BaseException] = []
    previous = threading.excepthook

    def collect(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            died.append(args.exc_value)

    threading.excepthook = collect
    try:
        result = yield
    finally:
        threading.excepthook = previous
    if died:
        from editspec.spec._assertions import from_implementation

        first = died[0]
        prefix = "a worker thread of the clause died"
        if from_implementation(first) or isinstance(first, AssertionError):
            raise first
        raise RuntimeError(f"{prefix}: {type(first).__name__}: {first}") from first
    return result


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    found = _clause(item)
    if found is not None:
        _CLAUSE_OF_NODE[item.nodeid] = found.id
        outcome, message, kind = classify(report, call)
        data = {
            "clause": {
                "id": found.id,
                "level": found.level,
                "area": found.area,
                "profile": found.profile,
                "requires": sorted(found.requires),
                "text": found.text,
            },
            "outcome": outcome,
            "kind": kind,
            "message": message,
            "traceback": _traceback_text(report) if report.failed else "",
        }
        report.user_properties = [*report.user_properties, (PROPERTY, data)]
    return report


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    from editspec.spec import _calls

    log = _calls.end()
    if log is None or _CALL_LOG_CONFIG is None:
        return
    state = state_of(_CALL_LOG_CONFIG)
    if not state.call_log_dir:
        return
    import json

    worker = getattr(_CALL_LOG_CONFIG, "workerinput", {}).get("workerid", "main")
    target = Path(state.call_log_dir) / f"{worker}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    line = {
        "nodeid": nodeid,
        "clause": _CLAUSE_OF_NODE.pop(nodeid, None),
        "calls": [call.to_dict() for call in log.calls],
        "features": sorted(log.features),
    }
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


_CALL_LOG_CONFIG: pytest.Config | None = None
_CLAUSE_OF_NODE: dict[str, str] = {}


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _record_phase(state: EditspecState, report: pytest.TestReport) -> None:
    found = next((value for key, value in report.user_properties if key == PROPERTY), None)
    if not isinstance(found, dict):
        return
    data: dict[str, Any] = found
    from editspec.spec.report import worst

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


def _finish(state: EditspecState) -> None:
    config = state.config
    if _is_worker(config) or not state.phases:
        return
    from editspec.spec import catalog, report

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
        _write_report(built, Path(path))


def _write_report(built: dict[str, Any], path: Path) -> None:
    import json

    from editspec.spec import report

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".md":
        path.write_text(report.render_markdown(built), encoding="utf-8")
    else:
        path.write_text(json.dumps(built, indent=2, sort_keys=False) + "\n", encoding="utf-8")
