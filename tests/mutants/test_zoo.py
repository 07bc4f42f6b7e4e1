"""The suite must catch every mutant of the zoo (``mutant_zoo.py``) on a MUST clause.

Each mutant runs in its own ``editspec check`` process, limited to the MUST clauses of
the areas that concern it (``-k``), with a JSON report; the unmutated reference runs
the same clauses once, as the baseline. A mutant is caught by the clauses that PASS for
the reference and FAIL (or ERROR) for it. The table of which clauses catch which mutant
is printed; a mutant that survives is a hole in the specification, to be closed with a
clause in ``spec/test_<area>.py``.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from editspec.spec.contract import AREAS

HERE = Path(__file__).resolve().parent
FAILED = ("FAIL", "ERROR")


def _zoo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutant_zoo", HERE / "mutant_zoo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutant_zoo", module)
    spec.loader.exec_module(module)
    return module


ZOO = _zoo()


def _selection(areas: tuple[str, ...]) -> str:
    # "EDIT-" matches the clause ids EDIT-001...; "EDIT" alone would match test names too.
    ids = " or ".join(f"{area}-" for area in areas)
    return f"({ids}) and MUST"


def _check(report: Path, selection: str, driver: str | None) -> dict[str, Any] | str:
    """Run the selected clauses; the JSON report, or why there is none."""
    command = [sys.executable, "-m", "editspec.spec.cli", "check", "-k", selection]
    command += ["--report", str(report)]
    if driver is not None:
        command += ["--driver", driver]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if not report.exists():
        return f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-1500:]}"
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return data


def _outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {item["id"]: item["outcome"] for item in report["clauses"]}


def test_the_zoo_is_well_formed() -> None:
    assert len(ZOO.MUTANTS) >= 15
    for name, mutant in ZOO.MUTANTS.items():
        assert mutant.name == name
        assert callable(getattr(ZOO, name)), f"mutant_zoo:{name} is not a factory"
        assert mutant.defect.endswith("."), name
        assert set(mutant.areas) <= set(AREAS), f"{name}: unknown areas {mutant.areas}"
        assert (mutant.install is None) != (mutant.per_workspace is None), name


@pytest.mark.slow
def test_every_mutant_is_caught(tmp_path: Path) -> None:
    mutants = list(ZOO.MUTANTS.values())
    areas = sorted({area for mutant in mutants for area in mutant.areas})
    workers = max(2, min(4, os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        baseline_run = pool.submit(
            _check, tmp_path / "reference.json", _selection(tuple(areas)), None
        )
        runs = {
            mutant.name: pool.submit(
                _check,
                tmp_path / f"{mutant.name}.json",
                _selection(mutant.areas),
                f"mutant_zoo:{mutant.name}",
            )
            for mutant in mutants
        }
        baseline = baseline_run.result()
        results = {name: run.result() for name, run in runs.items()}
    assert isinstance(baseline, dict), f"the reference run failed: {baseline}"
    passing = {cid for cid, outcome in _outcomes(baseline).items() if outcome == "PASS"}

    table: list[str] = []
    survivors: list[str] = []
    for mutant in mutants:
        result = results[mutant.name]
        if isinstance(result, str):
            caught: list[str] = []
            note = f"no report ({result})"
        else:
            outcomes = _outcomes(result)
            caught = sorted(cid for cid, outcome in outcomes.items()
                            if outcome in FAILED and cid in passing)  # fmt: skip
            note = f"{len(outcomes)} clauses run"
        table.append(f"{mutant.name:<32} {', '.join(caught) or 'SURVIVED'}  [{note}]")
        if not caught:
            survivors.append(f"{mutant.name}: {mutant.defect} ({note})")
    print("\nmutant zoo: mutant, caught by (MUST clauses that pass for the reference)")
    print("\n".join(table))
    assert not survivors, "mutants the suite does not catch:\n  " + "\n  ".join(survivors)
