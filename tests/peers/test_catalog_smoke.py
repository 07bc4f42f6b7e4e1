"""The catalog machinery end to end on one PyPI peer: install it with pip into a peer cache,
run a few clauses through its Python driver with that cache on PYTHONPATH, and read the
verdicts from the report (langchain-community's FileManagementToolkit: few dependencies,
a small driver)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_a_pypi_peer_installs_and_runs_through_its_driver(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    # the user's peer cache unless told otherwise: a second run does not install again
    out = tmp_path / "out"
    clauses = "PATH-001 or PATH-003 or PATH-019 or WRITE-001 or WRITE-003 or READ-011"
    run = subprocess.run(
        [sys.executable, "-m", "editspec.spec.cli", "peers", "run",
         "langchain-file-management", "--out", str(out), "-n", "0", "-k", clauses],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    report = out / "reports" / "langchain-file-management.json"
    assert report.is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    # the run says how long it took, and keeps it for the matrix
    assert "-- langchain-file-management: " in run.stdout
    timing = json.loads((out / "reports" / "langchain-file-management.timing.json").read_text())
    assert set(timing["steps"]) == {"install", "suite"} and timing["total"] > 0
    data = json.loads(report.read_text())
    assert data["implementation"]["name"] == "langchain-file-management"
    records = {r["id"]: r for r in data["clauses"]}
    assert records["PATH-001"]["outcome"] == "PASS"  # an inside read through its read_file
    assert records["PATH-003"]["outcome"] == "PASS"  # root_dir confines '..'
    assert records["WRITE-003"]["outcome"] == "PASS"
    # it reports no hashes or operation: the driver makes none up
    assert (records["WRITE-001"]["outcome"], records["WRITE-001"]["kind"]) == (
        "FAIL",
        "missing-field",
    )
    # a NUL byte escapes as ValueError (peers/findings/langchain-path-exceptions.md)
    assert (records["PATH-019"]["outcome"], records["PATH-019"]["kind"]) == ("FAIL", "wrong-code")
    # a binary file: read_file answers "Error: 'utf-8' codec can't decode ...", a refusal
    assert (records["READ-011"]["outcome"], records["READ-011"]["kind"]) == ("FAIL", "wrong-code")
