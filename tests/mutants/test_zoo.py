"""Every MUST clause can fail: the zoo's mutants and broken drivers (DESIGN §7).

The zoo (``zoo.py`` gathers ``mutant_zoo.py``, ``broken_drivers.py`` and ``zoo_*.py``) holds
broken implementations, each with the MUST clauses it must fail (``Mutant.clauses``).

* ``test_the_zoo_is_well_formed``: every mutant still applies (each engine name it replaces
  exists: a mutant whose target vanished is an error of the zoo, never a catch), names
  only live MUST clauses, and deactivating it puts the reference back exactly.
* ``test_every_must_clause_has_a_mutant``: every live MUST clause is named by a mutant;
  those that need a server process (``zoo.SERVED``) are run over MCP against a served
  mutant (``test_process_clauses_catch_a_served_mutant``).
* ``test_every_mutant_is_caught``: every (clause, mutant) pair runs, many pairs per
  ``editspec check`` process (``zoo:factory`` is each pair's mutant in turn), and the
  reference runs the same clauses: each pair must FAIL for the mutant while the clause
  PASSes for the reference. An ERROR is never a catch; it is reported as a zoo error.

``python tests/mutants/zoo.py power`` runs the same pairs and writes ``power.json``, which
``editspec catalog --power tests/mutants/power.json`` prints clause by clause.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from editspec.contract import AREAS

HERE = Path(__file__).resolve().parent


def _zoo() -> ModuleType:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module("zoo")


ZOO = _zoo()

SERVED = ZOO.SERVED


def _reference_state() -> dict[str, dict[str, Any]]:
    import editspec.reference as package

    state = {}
    for name, module in sorted(sys.modules.items()):
        if name.startswith(package.__name__ + ".") and module is not None:
            state[name] = dict(vars(module))
            for attr, value in vars(module).items():
                if isinstance(value, type) and value.__module__ == name:
                    state[f"{name}.{attr}"] = dict(vars(value))
    return state


def test_the_zoo_is_well_formed() -> None:
    clauses = ZOO.must_clauses()
    assert len(ZOO.MUTANTS) >= 30
    before = _reference_state()
    problems = []
    for name, mutant in ZOO.MUTANTS.items():
        assert mutant.name == name
        assert mutant.defect.endswith("."), name
        assert set(mutant.areas) <= set(AREAS), f"{name}: unknown areas {mutant.areas}"
        ways = (mutant.install, mutant.per_workspace, mutant.context, mutant.wrap)
        assert any(way is not None for way in ways), f"{name} installs no defect"
        unknown = [cid for cid in mutant.clauses if cid not in clauses]
        if unknown:
            problems.append(f"{name} names clauses that are not live MUST clauses: {unknown}")
        try:
            ZOO.mutant_zoo.activate(mutant)
        except Exception as exc:  # an engine name it replaces is gone
            problems.append(f"{name} no longer applies: {type(exc).__name__}: {exc}")
        finally:
            ZOO.mutant_zoo.deactivate()
    assert not problems, "zoo errors:\n  " + "\n  ".join(problems)
    after = _reference_state()
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert not changed, f"deactivated mutants left the reference changed: {changed}"


def test_a_mutant_whose_target_vanished_is_a_zoo_error() -> None:
    broken = ZOO.Mutant(
        name="vanished",
        defect="Replaces a function the engine no longer has.",
        areas=("EDIT",),
        install=lambda: ZOO.mutant_zoo._replace(ZOO.mutant_zoo._edit, "no_such_name", None),
    )
    with pytest.raises(AttributeError, match="out of date"):
        ZOO.mutant_zoo.activate(broken)
    ZOO.mutant_zoo.deactivate()


def test_every_must_clause_has_a_mutant() -> None:
    named = {cid for mutant in ZOO.MUTANTS.values() for cid in mutant.clauses}
    clauses = ZOO.must_clauses()
    missing = sorted(set(clauses) - named - set(SERVED))
    assert not missing, (
        "MUST clauses that no mutant of tests/mutants/ must fail (add one, with the clause "
        f"in its clauses=...): {missing}"
    )
    assert set(SERVED) <= set(clauses)
    for cid in SERVED:  # a served mutant changes the engine (``zoo.py serve`` runs it)
        served = ZOO.MUTANTS[ZOO.served_mutant(cid)]
        assert served.wrap is None and served.per_workspace is None, served.name


def test_only_a_fail_is_a_catch() -> None:
    rows = {
        "FAIL": True,
        "ERROR": False,
        "PASS": False,
        "UNSUPPORTED": False,
        "NO-REPORT": False,
        "INCONCLUSIVE": False,
    }
    for outcome, caught in rows.items():
        assert ZOO.is_catch(outcome, "PASS") is caught, outcome
    assert not ZOO.is_catch("FAIL", "FAIL")
    assert not ZOO.is_catch("FAIL", "ERROR")


@pytest.mark.slow
def test_every_mutant_is_caught() -> None:
    workers = max(2, min(4, os.cpu_count() or 2))
    record = ZOO.run_pairs(ZOO.declared_pairs(), processes=workers)
    lost = [row for row in record["pairs"] if not row["caught"]]
    errors = [row for row in lost if row["outcome"] not in ("PASS", "FAIL")]
    table = ZOO.power_table(record)
    print(f"\nmutant zoo: {len(record['pairs'])} pairs in {record['duration']} s")
    for cid, names in table.items():
        print(f"{cid:<11} {', '.join(names)}")
    report = [
        f"{row['clause']} / {row['mutant']}: {row['outcome']} (reference {row['reference']}) "
        f"{row['message'][:200]}"
        for row in lost
    ]
    assert not errors, "zoo errors (an ERROR is never a catch):\n  " + "\n  ".join(report)
    assert not lost, "pairs the suite no longer catches:\n  " + "\n  ".join(report)
    uncaught = sorted(set(ZOO.must_clauses()) - set(table) - set(SERVED))
    assert not uncaught, f"MUST clauses no mutant fails: {uncaught}"


@pytest.mark.slow
def test_process_clauses_catch_a_served_mutant() -> None:
    rows = ZOO.run_served()
    assert {row["clause"] for row in rows} == set(SERVED)
    # The reference's server passes every process clause (this is the suite's only run of
    # them against ``editspec serve``; the agreement test leaves them to this one).
    failing = [(row["clause"], row["reference"], row["reference_message"]) for row in rows]
    failing = [row for row in failing if row[1] != "PASS"]
    assert not failing, f"editspec serve does not pass its process clauses: {failing}"
    lost = [row for row in rows if not row["caught"]]
    assert not lost, f"process clauses a served mutant passes: {lost}"
    for row in rows:
        sign = ZOO.SERVED_SIGN.get(row["clause"])
        assert sign is None or sign in row["message"], (row["clause"], sign, row["message"])


def test_catalog_power_lists_each_must_clause_and_fails_on_an_uncovered_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from editspec.spec import catalog
    from editspec.spec.cli import main

    clauses = ZOO.must_clauses()
    covered = {cid: ["some_mutant"] for cid in clauses}
    lines, uncovered = catalog.power_report(catalog.load(), {"clauses": covered})
    assert len(lines) == len(clauses) and not uncovered
    first = sorted(clauses)[0]
    del covered[first]
    power = tmp_path / "power.json"
    power.write_text(json.dumps({"clauses": covered}), encoding="utf-8")
    assert main(["catalog", "--power", str(power)]) == 1
    out, err = capsys.readouterr()
    assert f"{first:<10}   0  NONE" in out
    assert first in err
    assert main(["catalog", "--power", str(tmp_path / "missing.json")]) == 2
