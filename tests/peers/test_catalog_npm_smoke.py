"""The catalog machinery end to end on one npm peer: install from the registry into a peer
cache, run a few clauses through its map, and build the matrix from the report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_an_npm_peer_installs_runs_and_joins_the_matrix(tmp_path):
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH: the npm peer cannot be installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env.setdefault("EDITSPEC_PEER_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    clauses = "PATH-001 or PATH-003 or PATH-008 or READ-002"
    run = subprocess.run(
        [sys.executable, "-m", "editspec.spec.cli", "peers", "run", "server-filesystem",
         "--out", str(out), "-n", "0", "--no-explore", "-k", clauses],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    report = out / "reports" / "server-filesystem.json"
    assert report.is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    records = {r["id"]: r for r in json.loads(report.read_text())["clauses"]}
    assert records["PATH-001"]["outcome"] == "PASS"
    assert records["PATH-003"]["outcome"] == "PASS"  # it confines '..'
    assert records["PATH-008"]["outcome"] == "PASS"  # fixed since CVE-2025-53110
    assert (records["READ-002"]["outcome"], records["READ-002"]["kind"]) == (
        "FAIL",
        "missing-field",  # it reports no sha256
    )
    matrix = subprocess.run(
        [sys.executable, "-m", "editspec.spec.cli", "peers", "matrix", "server-filesystem",
         "--out", str(out), "--reuse"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert matrix.returncode == 0, matrix.stdout + matrix.stderr
    page = (out / "matrix.html").read_text()
    assert "@modelcontextprotocol/server-filesystem" in page and "2026.8.31" in page
