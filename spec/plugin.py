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

import json
import sys
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from editspec.contract.drivers import DriverLoadError
from editspec.spec import _calls, expectations
from editspec.spec._assertions import from_implementation
from editspec.spec._classify import UNSUPPORTED_PREFIX, WITHDRAWN_PREFIX, classify, traceback_text
from editspec.spec._clauses import clause_of
from editspec.spec._run_state import PROPERTY, EditspecState, is_worker
from editspec.spec._shared_root import SharedRootError, check_exclusive


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


_STATE = pytest.StashKey[EditspecState]()


def state_of(config: pytest.Config) -> EditspecState:
    return config.stash[_STATE]


def pytest_configure(config: pytest.Config) -> None:

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

    if getattr(config.option, "numprocesses", None) or is_worker(config):
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

    log = _calls.begin()
    for name in getattr(item, "fixturenames", ()):
        log.note(f"fixture:{name}")
    if found.withdrawn is not None:
        pytest.skip(f"{WITHDRAWN_PREFIX} {found.withdrawn}")
    if found.requires:
        try:
            declared = frozenset(state_of(item.config).info()["capabilities"])
        except DriverLoadError as exc:
            raise pytest.UsageError(str(exc)) from exc
        missing = sorted(found.requires - declared)
        if missing:
            pytest.skip(f"{UNSUPPORTED_PREFIX} the driver does not declare {', '.join(missing)}")


# -- classification -------------------------------------------------------------------------


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
            "traceback": traceback_text(report) if report.failed else "",
        }
        report.user_properties = [*report.user_properties, (PROPERTY, data)]
    return report


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:

    log = _calls.end()
    if log is None or _CALL_LOG_CONFIG is None:
        return
    state = state_of(_CALL_LOG_CONFIG)
    if not state.call_log_dir:
        return

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
