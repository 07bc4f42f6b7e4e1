"""Verdicts of the search, notebook, remote and process clauses on tools built differently.

Each clause changed for DESIGN §7 is run through ``editspec check`` against small broken
implementations and must FAIL there, while the reference passes it:

* a driver started in the wrong directory (its root is another directory, and so is the
  root of its remote sessions): the positive controls of the negative clauses fail, so
  a refusal for the wrong reason cannot pass them;
* a driver that reports a cut at the boundary (truncated when the number of matches
  equals the limit): the boundary checks of GLOB-018, GREP-007 and LIST-007;
* a server (``editspec serve`` with its publishing replaced, started through the MCP
  adapter and killed by strace) that publishes nothing at all, for which no kill can land
  inside the operation: the kill clauses are INCONCLUSIVE, never FAIL and never PASS.

The kill clauses' broken servers (one that creates files in place, one that replaces them
in place, one that publishes patches and rewinds file by file in place, one that recovers
only when asked) are the zoo's served mutants: ``tests/mutants/test_zoo.py``
(``test_process_clauses_catch_a_served_mutant``) runs each against its clauses, checks why
it fails them, and checks that ``editspec serve`` passes every one.

The driver factories and the server mutants live in this module: the subprocess finds it
on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from editspec.contract.drivers.reference import ReferenceDriver

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]
MAP = CHECKOUT / "spec" / "mcp_maps" / "editspec.toml"

# -- drivers built differently ----------------------------------------------------------------


class WrongRootDriver(ReferenceDriver):
    """The reference started in another directory: relative paths resolve elsewhere, and
    its remote sessions take another root than the client's."""

    name = "wrong-root"

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.elsewhere = Path(state_dir) / "elsewhere"
        self.elsewhere.mkdir(parents=True, exist_ok=True)
        (self.elsewhere / "sub").mkdir(exist_ok=True)
        super().__init__(self.elsewhere, Path(state_dir) / "state")

    def open_remote_session(self, session_id: str, **kwargs: Any) -> Any:
        kwargs["root"] = str(self.elsewhere)
        return super().open_remote_session(session_id, **kwargs)


def wrong_root_factory(root: Path, state_dir: Path) -> WrongRootDriver:
    return WrongRootDriver(root, state_dir)


class _BoundarySession:
    """A session that says a result was cut whenever it holds exactly the limit."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def glob(self, pattern: str, **options: Any) -> Any:
        result = self._inner.glob(pattern, **options)
        if len(result.paths) == options.get("max_results"):
            return attrs.evolve(result, truncated=True)
        return result

    def grep(self, pattern: str, **options: Any) -> Any:
        result = self._inner.grep(pattern, **options)
        if len(result.matches) == options.get("max_results"):
            return attrs.evolve(result, truncated=True)
        return result

    def list_directory(self, path: str, **options: Any) -> Any:
        result = self._inner.list_directory(path, **options)
        if len(result.entries) == options.get("max_entries"):
            return attrs.evolve(result, truncated=True)
        return result


class BoundaryDriver(ReferenceDriver):
    name = "cut-at-the-limit"

    def open_session(self, session_id: str) -> Any:
        return _BoundarySession(super().open_session(session_id))


def boundary_factory(root: Path, state_dir: Path) -> BoundaryDriver:
    return BoundaryDriver(root, state_dir)


# -- servers built differently (installed by the script ``serve_mutant`` writes) ----------------


def _publish_nothing() -> None:
    from editspec.reference.tools import _write

    def nothing(fs: Any, real_path: str, data: bytes, **options: Any) -> tuple[str, ...]:
        return ()

    _write.atomic_replace = nothing  # type: ignore[assignment]
    _write.atomic_create = nothing  # type: ignore[assignment]


SERVER_MUTANTS = {"publish_nothing": _publish_nothing}


def install_server_mutant(name: str) -> None:
    SERVER_MUTANTS[name]()


def serve_mutant(tmp_path: Path, name: str) -> str:
    """The command line of ``editspec serve`` with the mutant ``name`` installed."""
    script = tmp_path / f"serve_{name}.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import test_verdicts_c\n"
        "test_verdicts_c.install_server_mutant(sys.argv[1])\n"
        "from editspec.spec.serve import main\n"
        "sys.exit(main(sys.argv[2:]))\n"
    )
    return f"{sys.executable} {script} {name} {{root}} --state-dir {{state_dir}}"


SERVE = f"{sys.executable} -m editspec.spec.cli serve {{root}} --state-dir {{state_dir}}"

# -- running the suite ------------------------------------------------------------------------


def check(tmp_path: Path, selection: str, *target: str, parallel: bool = False) -> dict[str, Any]:
    """``editspec check -k selection`` against ``target``; the JSON report's records by id."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *(p for p in sys.path if p)])
    report = tmp_path / f"report-{len(list(tmp_path.glob('report-*.json')))}.json"
    words = [sys.executable, "-m", "editspec.spec.cli", "check", *target, "-k", selection]
    words += ["--report", str(report)] + (["-n", "2"] if parallel else [])
    done = subprocess.run(
        words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    records = json.loads(report.read_text())["clauses"]
    return {record["id"]: record for record in records}


def outcomes(records: dict[str, Any]) -> dict[str, str]:
    return {clause: record["outcome"] for clause, record in records.items()}


def needs_strace() -> None:
    from editspec.fault_injection import strace_kill

    reason = strace_kill.strace_unavailable()
    if reason is not None:
        pytest.skip(f"strace cannot kill processes here: {reason}")
    pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to serve over MCP")


def mcp(command: str) -> tuple[str, ...]:
    return ("--mcp", command, "--mcp-map", str(MAP))


# -- positive controls ------------------------------------------------------------------------

CONTROLLED = (
    "GLOB-020",
    "GREP-008",
    "GREP-014",
    "GREP-019",
    "GREP-020",
    "LIST-010",
    "LIST-012",
    "LIST-016",
    "NB-007",
    "NB-008",
    "NB-009",
    "NB-011",
    "NB-016",
    "REMOTE-003",
    "REMOTE-004",
    "REMOTE-005",
    "REMOTE-007",
    "REMOTE-009",
    "REMOTE-010",
    "REMOTE-011",
    "REMOTE-012",
    "REMOTE-013",
    "REMOTE-014",
    "REMOTE-015",
    "REMOTE-016",
    "REMOTE-018",
)


@pytest.mark.slow
def test_a_tool_started_in_the_wrong_directory_fails_every_negative_clause(tmp_path):
    selection = " or ".join(CONTROLLED)
    wrong = check(tmp_path, selection, "--driver", "test_verdicts_c:wrong_root_factory")
    assert set(wrong) == set(CONTROLLED)
    assert {c: o for c, o in outcomes(wrong).items() if o != "FAIL"} == {}
    reference = check(tmp_path, selection, parallel=True)
    assert {c: o for c, o in outcomes(reference).items() if o != "PASS"} == {}


def test_a_cut_reported_at_the_limit_fails_the_boundary_clauses(tmp_path):
    selection = "GLOB-018 or GREP-007 or LIST-007"
    cut = check(tmp_path, selection, "--driver", "test_verdicts_c:boundary_factory")
    assert outcomes(cut) == {"GLOB-018": "FAIL", "GREP-007": "FAIL", "LIST-007": "FAIL"}
    assert {record["kind"] for record in cut.values()} == {"wrong-behaviour"}
    reference = check(tmp_path, selection)
    assert set(outcomes(reference).values()) == {"PASS"}


# -- kill clauses -----------------------------------------------------------------------------


def test_no_kill_inside_the_operation_is_inconclusive():
    """The verdict of a kill report with no run killed during the operation (here: no
    kill point at all) is INCONCLUSIVE, whatever else the report holds."""
    from editspec.fault_injection.strace_kill import KillReport, parse_strace_log
    from editspec.spec import Inconclusive
    from editspec.spec.test_process import _verdict

    empty = KillReport("server", "scenario", parse_strace_log(""), {}, {}, (), 0.0)
    with pytest.raises(Inconclusive, match="no kill landed inside the operation"):
        _verdict(empty, strays=False)
    with pytest.raises(Inconclusive):
        _verdict(empty, strays=True)


@pytest.mark.slow
def test_a_server_whose_operation_makes_no_such_call_is_inconclusive(tmp_path):
    needs_strace()
    records = check(
        tmp_path, "WRITE-026 or WRITE-040", *mcp(serve_mutant(tmp_path, "publish_nothing"))
    )
    assert outcomes(records) == {"WRITE-026": "INCONCLUSIVE", "WRITE-040": "INCONCLUSIVE"}
    for record in records.values():
        assert "no kill landed inside the operation" in record["message"]
