"""Outcomes say what happened (DESIGN §7), shown on a small suite of fake clauses.

Each fake clause produces one situation: a suite bug, a fault the harness could not
inject, a worker thread that dies, the implementation refusing or lacking a field, a
wrong code, wrong bytes on disk. The suite runs in a subprocess with the editspec plugin
and its JSON report is read back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from editspec.contract.drivers._mcp_map import FieldNotReported, NotMapped
from editspec.contract.drivers.mcp import ServerError
from editspec.spec._assertions import MissingField

FAKE_SUITE = """
import threading
from types import SimpleNamespace

import pytest

from editspec.reference import ToolError
from editspec.spec import MUST, clause, inconclusive, raises_code
from editspec.spec._assertions import mark_from_implementation


def _implementation_raises(exc):
    mark_from_implementation(exc)
    raise exc


def _clause(number):
    return clause(f"READ-{number}", MUST, text="A fake clause.", rationale="A test of outcomes.")


@_clause(901)
def test_suite_bug():
    {}["missing"]


@_clause(902)
def test_no_fault_landed():
    inconclusive("no kill landed inside the operation")


@_clause(903)
def test_worker_thread_dies():
    def worker():
        _implementation_raises(RuntimeError("session B broke"))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()


@_clause(904)
def test_refused_where_success_was_expected():
    _implementation_raises(ToolError("NOT_FOUND", "no such file"))


@_clause(905)
def test_uncoded_refusal():
    with raises_code("OUTSIDE_WORKSPACE"):
        _implementation_raises(PermissionError(13, "denied"))


@_clause(906)
def test_wrong_code():
    with raises_code("OUTSIDE_WORKSPACE"):
        _implementation_raises(ToolError("NOT_FOUND", "dangling link"))


@_clause(907)
def test_refusal_that_did_not_happen():
    with raises_code("OUTSIDE_WORKSPACE"):
        pass


@_clause(908)
def test_missing_result_field():
    result = SimpleNamespace(path="a.txt")
    assert result.sha256


@_clause(909)
def test_wrong_bytes(tmp_path):
    class Disk:
        def read(self, name):
            return b"old"

    disk = Disk()
    assert disk.read("a.txt") == b"new"


@_clause(910)
def test_wrong_value():
    result = SimpleNamespace(total_lines=2)
    assert result.total_lines == 3


@_clause(911)
def test_passes():
    assert True


@_clause(912)
def test_an_argument_the_tool_cannot_take():
    from editspec.contract.drivers._mcp_map import Inexpressible

    raise Inexpressible("the server's read_file has no argument for start_line=2")
"""


def _run(tmp_path: Path) -> dict[str, dict[str, object]]:
    suite = tmp_path / "test_fake_outcomes.py"
    suite.write_text(textwrap.dedent(FAKE_SUITE))
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(suite), "-c", os.devnull, "--rootdir",
         str(tmp_path), "-p", "no:cacheprovider", "-q", "-p", "no:randomly",
         "--editspec-report", str(report)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.exists(), done.stdout + done.stderr
    data = json.loads(report.read_text())
    return {record["id"]: record for record in data["clauses"]}


def test_every_outcome_says_what_happened(tmp_path):
    records = _run(tmp_path)
    seen = {cid: (r["outcome"], r.get("kind")) for cid, r in records.items()}
    assert seen == {
        "READ-901": ("ERROR", None),  # the suite's own bug: no verdict
        "READ-902": ("INCONCLUSIVE", None),
        "READ-903": ("FAIL", "wrong-code"),  # a dying worker fails the clause
        "READ-904": ("FAIL", "wrong-code"),
        "READ-905": ("FAIL", "wrong-code"),  # a refusal without a code
        "READ-906": ("FAIL", "wrong-code"),
        "READ-907": ("FAIL", "unsafe"),  # the call had to be refused and was not
        "READ-908": ("FAIL", "missing-field"),
        "READ-909": ("FAIL", "unsafe"),
        "READ-910": ("FAIL", "wrong-behaviour"),
        "READ-911": ("PASS", None),
        "READ-912": ("UNSUPPORTED", None),  # the tool cannot take a line range
    }
    assert "KeyError" in str(records["READ-901"]["message"])
    assert "session B broke" in str(records["READ-903"]["message"])
    assert "sha256" in str(records["READ-908"]["message"])
    assert records["READ-909"]["traceback"], "a FAIL keeps its traceback in the JSON report"


def test_the_mcp_adapter_scores_a_missing_field_as_a_python_driver_does():
    assert issubclass(FieldNotReported, MissingField)
    assert issubclass(FieldNotReported, AttributeError)
    assert getattr(NotMapped("x"), "suite_error", False)  # a map problem is the suite's ERROR
    assert ServerError("died").kind == "wrong-behaviour"


@pytest.mark.parametrize("verbose", [False, True])
def test_a_run_against_a_careless_tool_is_short(tmp_path, verbose):
    here = Path(__file__).resolve().parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(here), *(p for p in sys.path if p)])
    command = [sys.executable, "-m", "editspec.spec.cli", "check", "--driver",
               "toy_driver:factory", "-k", "PATH- or READ-"]  # fmt: skip
    if verbose:
        command.append("-v")
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    failing = [line for line in lines if " FAIL " in line or " ERROR " in line]
    assert failing, done.stdout
    if verbose:
        assert "Traceback" in done.stdout or "def test_" in done.stdout
        return
    # The table, then one line per clause not conforming; nothing from pytest itself.
    assert len(lines) <= len(failing) + 15, done.stdout
    assert not [line for line in lines if line.startswith(("FAILED", "configfile", "E  "))]
    assert "Traceback" not in done.stdout and "def test_" not in done.stdout
