"""The unified-diff clauses (PATCH-060 to PATCH-069) fail against broken appliers.

The zoo's own test (``test_zoo.py``) requires every mutant to be caught by some MUST
clause of its areas; this one pins which clause catches each mutant of the zoo's unified
block, and shows PATCH-068, a SHOULD, failing against ``unified_should``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SELECTION = "PATCH-06 or PATCH-044"

CAUGHT_BY = {
    "mutant_zoo:unified_strips_cr": {"PATCH-060", "PATCH-061", "PATCH-062", "PATCH-063"},
    "mutant_zoo:unified_ignores_no_newline_marker": {"PATCH-044", "PATCH-062"},
    "mutant_zoo:unified_adds_in_file_newline": {"PATCH-061", "PATCH-069"},
    "mutant_zoo:crlf_transport_adds_lf": {"PATCH-069"},
    "mutant_zoo:unified_copy_as_rename": {"PATCH-065"},
    "mutant_zoo:unified_skips_binary": {"PATCH-066"},
    "mutant_zoo:unified_drops_mode_changes": {"PATCH-067"},
    "unified_should:factory": {"PATCH-068"},
}


def _outcomes(report: Path, driver: str | None) -> dict[str, str]:
    command = [sys.executable, "-m", "editspec.spec.cli", "check", "-k", SELECTION]
    command += ["--report", str(report)] + (["--driver", driver] if driver else [])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert report.exists(), done.stderr[-1500:] or done.stdout[-1500:]
    data = json.loads(report.read_text(encoding="utf-8"))
    return {item["id"]: item["outcome"] for item in data["clauses"]}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _outcomes(tmp_path_factory.mktemp("reference") / "reference.json", None)


@pytest.mark.slow
@pytest.mark.parametrize("driver", sorted(CAUGHT_BY))
def test_each_broken_applier_fails_its_clauses(
    tmp_path: Path, reference: dict[str, str], driver: str
) -> None:
    assert set(reference.values()) == {"PASS"}, reference
    outcomes = _outcomes(tmp_path / "mutant.json", driver)
    failed = {cid for cid, outcome in outcomes.items() if outcome in ("FAIL", "ERROR")}
    assert CAUGHT_BY[driver] <= failed, (driver, outcomes)
