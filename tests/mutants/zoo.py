"""The whole zoo: every mutant and broken driver, one driver that is each in turn, a runner.

``MUTANTS`` gathers the mutants of ``mutant_zoo.py``, ``broken_drivers.py`` and every
``zoo_*.py`` module beside them; a mutant that names no clauses of its own gets those of
``targets.TARGETS``. ``zoo:factory`` is a ``DriverFactory`` that builds, for
each clause, the mutant a plan assigns to it (the JSON file named by ``$EDITSPEC_ZOO_PLAN``
maps a clause's test, as ``test_x.py::test_name``, to a mutant name; pytest names the
running test in ``$PYTEST_CURRENT_TEST``), and the reference for a clause the plan does not
name. So one ``editspec check`` process runs many (clause, mutant) pairs: the mutant of the
previous clause is deactivated (its engine replacements undone) before the next one is
activated. ``zoo:<name>`` is the factory of one mutant.

``run_pairs`` runs (clause, mutant) pairs in rounds (a clause at most once per round),
each round split over parallel processes, and the reference over the same clauses; a pair
*catches* when the clause FAILs for the mutant and PASSes for the reference. ERROR is
never a catch.

    python tests/mutants/zoo.py power [--out FILE]      run every declared pair, write the table
    python tests/mutants/zoo.py try NAME... [--clauses ID,...] [--areas AREA,...]
    python tests/mutants/zoo.py serve NAME ROOT [--state-dir DIR]   (an MCP server)
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import broken_drivers  # noqa: E402,F401
import mutant_zoo  # noqa: E402

for _module in sorted(HERE.glob("zoo_*.py")):
    importlib.import_module(_module.stem)

from targets import TARGETS  # noqa: E402

MUTANTS = mutant_zoo.MUTANTS
for _name, _mutant in list(MUTANTS.items()):
    if not _mutant.clauses and _name in TARGETS:
        MUTANTS[_name] = attrs.evolve(_mutant, clauses=TARGETS[_name])
Mutant = mutant_zoo.Mutant
PLAN_ENV = "EDITSPEC_ZOO_PLAN"
POWER_FILE = HERE / "power.json"
FORMAT = "editspec-zoo-power/1"

# The MUST clauses that need a server process (the ``process`` capability, which the
# in-process reference driver does not declare): they run over MCP, against ``editspec
# serve`` and against ``zoo.py serve SERVED_MUTANT``, an MCP server with the mutant active.
SERVED_MUTANT = "in_place_publish"
SERVED: dict[str, str] = {
    "WRITE-026": "a server killed while it replaces a file",
    "TXN-010": "a server killed while it applies a patch",
    "EDIT-050": "a server killed while it edits a file",
    "WRITE-040": "a server killed while it creates a file",
    "SNAP-040": "a server killed while it rewinds a patch",
    "RECOV-040": "a server killed mid-patch, then started again",
    "LIMIT-032": "a server sent request lines it cannot parse",
}
# What the served mutant's failure must say (the clause fails it for this reason, not any).
SERVED_SIGN: dict[str, str] = {"WRITE-026": "torn", "EDIT-050": "torn", "WRITE-040": "torn"}
# A served clause whose defect ``SERVED_MUTANT`` does not have is served by its own mutant
# (which names the clause in its ``clauses``; the in-process pairs skip served clauses).
SERVED_BY: dict[str, str] = {
    "WRITE-040": "create_in_place",
    "SNAP-040": "commit_in_place",
    "RECOV-040": "no_recovery_on_start",
    "LIMIT-032": "unguarded_stdio",
}


def served_mutant(cid: str) -> str:
    """The mutant ``zoo.py serve`` runs for the served clause ``cid``."""
    return SERVED_BY.get(cid, SERVED_MUTANT)


# -- the driver that is every mutant in turn ---------------------------------------------------

_PLANS: dict[str, dict[str, str]] = {}


def _plan() -> dict[str, str]:
    path = os.environ.get(PLAN_ENV)
    if not path:
        return {}
    if path not in _PLANS:
        _PLANS[path] = json.loads(Path(path).read_text(encoding="utf-8"))
    return _PLANS[path]


def current_test() -> str:
    """The running clause's test as ``test_x.py::name`` ("" outside a test)."""
    running = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    return running.rsplit("/", 1)[-1]


def factory(root: Path, state_dir: Path) -> Any:
    """The mutant the plan assigns to the running clause (the reference if none)."""
    name = _plan().get(current_test())
    if name is None:
        mutant_zoo.deactivate()
        from editspec.contract.drivers.reference import ReferenceDriver

        return ReferenceDriver(root, state_dir)
    return MUTANTS[name].build(root, state_dir)


def __getattr__(name: str) -> Any:
    if name in MUTANTS:
        return MUTANTS[name].build
    raise AttributeError(name)


# -- clauses ----------------------------------------------------------------------------------


def must_clauses() -> dict[str, str]:
    """Every live MUST clause: id -> its test (``test_x.py::name``)."""
    from editspec.spec.catalog import load

    return {
        item.id: f"{Path(item.source).name}::{item.function}"
        for item in load()
        if item.level == "MUST" and item.withdrawn is None
    }


def area_clauses(areas: Iterable[str]) -> list[str]:
    wanted = tuple(f"{area}-" for area in areas)
    return sorted(cid for cid in must_clauses() if cid.startswith(wanted))


def declared_pairs(mutants: Iterable[Mutant] | None = None) -> list[tuple[str, str]]:
    """(clause, mutant) for every clause each mutant must fail (its areas if it names none)."""
    pairs = []
    for mutant in mutants if mutants is not None else MUTANTS.values():
        for cid in mutant.clauses or area_clauses(mutant.areas):
            if cid not in SERVED:  # those run over MCP (``run_served``)
                pairs.append((cid, mutant.name))
    return pairs


# -- running ----------------------------------------------------------------------------------


def is_catch(outcome: str, reference: str | None) -> bool:
    """A pair catches only by a FAIL of a clause the reference PASSes (never by an ERROR)."""
    return outcome == "FAIL" and reference == "PASS"


def _check(
    clauses: Sequence[str], plan: dict[str, str] | None, scratch: Path, tag: str
) -> dict[str, dict[str, Any]]:
    """Run ``clauses`` with the plan (None: the reference); id -> the report's record."""
    report = scratch / f"{tag}.json"
    command = [sys.executable, "-m", "editspec.spec.cli", "check"]
    command += ["-k", " or ".join(clauses), "--report", str(report)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [env.get("PYTHONPATH")])])
    if plan is not None:
        plan_file = scratch / f"{tag}.plan.json"
        plan_file.write_text(json.dumps(plan), encoding="utf-8")
        env[PLAN_ENV] = str(plan_file)
        command += ["--driver", "zoo:factory"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1500)
    if not report.exists():
        why = (done.stderr or done.stdout).strip()[-2000:]
        return {cid: {"outcome": "NO-REPORT", "message": why} for cid in clauses}
    data = json.loads(report.read_text(encoding="utf-8"))
    return {item["id"]: item for item in data["clauses"] if item["id"] in set(clauses)}


def _rounds(pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The pairs as rounds: clause -> mutant, each clause at most once per round."""
    rounds: list[dict[str, str]] = []
    for cid, name in pairs:
        for one in rounds:
            if cid not in one:
                one[cid] = name
                break
        else:
            rounds.append({cid: name})
    return rounds


def _chunks(items: Sequence[str], count: int) -> list[list[str]]:
    return [list(items[i::count]) for i in range(count) if items[i::count]]


def run_pairs(
    pairs: Sequence[tuple[str, str]], *, processes: int = 2, scratch: Path | None = None
) -> dict[str, Any]:
    """Run every pair and the reference over the same clauses: the power record."""
    tests = must_clauses()
    unknown = sorted({cid for cid, _ in pairs if cid not in tests})
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="editspec-zoo-") as tmp:
        work = scratch or Path(tmp)
        clauses = sorted({cid for cid, _ in pairs if cid in tests})
        jobs: list[tuple[str, list[str], dict[str, str] | None]] = [
            (f"reference-{i}", chunk, None) for i, chunk in enumerate(_chunks(clauses, processes))
        ]
        for r, one in enumerate(_rounds([(c, m) for c, m in pairs if c in tests])):
            ids = sorted(one)
            for i, chunk in enumerate(_chunks(ids, processes)):
                plan = {tests[cid]: one[cid] for cid in chunk}
                jobs.append((f"round{r}-{i}", chunk, plan))
        jobs.sort(key=lambda job: -len(job[1]))
        with ThreadPoolExecutor(max_workers=processes) as pool:
            done = list(pool.map(lambda job: (job, _check(job[1], job[2], work, job[0])), jobs))
    reference: dict[str, str] = {}
    outcomes: dict[tuple[str, str], dict[str, Any]] = {}
    for (_tag, _chunk, plan), records in done:
        for cid, record in records.items():
            if plan is None:
                reference[cid] = record["outcome"]
            else:
                outcomes[(cid, plan[tests[cid]])] = record
    rows = []
    for cid, name in pairs:
        record = outcomes.get((cid, name), {"outcome": "NOT-RUN", "message": ""})
        rows.append(
            {
                "clause": cid,
                "mutant": name,
                "outcome": record["outcome"],
                "reference": reference.get(cid, "NOT-RUN"),
                "caught": is_catch(record["outcome"], reference.get(cid)),
                "message": str(record.get("message", ""))[:300],
            }
        )
    return {
        "format": FORMAT,
        "duration": round(time.monotonic() - started, 1),
        "unknown_clauses": unknown,
        "pairs": rows,
    }


def _served_command(name: str | None) -> str:
    python = sys.executable
    if name is None:
        return f"{python} -m editspec.spec.cli serve {{root}} --state-dir {{state_dir}}"
    return f"{python} {HERE / 'zoo.py'} serve {name} {{root}} --state-dir {{state_dir}}"


def _mcp_check(clauses: Sequence[str], name: str | None, report: Path) -> dict[str, dict[str, str]]:
    map_file = HERE.parents[1] / "spec" / "mcp_maps" / "editspec.toml"
    command = [sys.executable, "-m", "editspec.spec.cli", "check", "-k", " or ".join(clauses)]
    command += ["--mcp", _served_command(name), "--mcp-map", str(map_file)]
    command += ["--report", str(report)]
    subprocess.run(command, capture_output=True, text=True, timeout=1500)
    if not report.exists():
        return {cid: {"outcome": "NO-REPORT", "message": ""} for cid in clauses}
    data = json.loads(report.read_text(encoding="utf-8"))
    return {
        item["id"]: {"outcome": item["outcome"], "message": item.get("message", "")}
        for item in data["clauses"]
    }


def run_served(clauses: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The ``SERVED`` clauses over MCP, for the reference's server and each served mutant."""
    clauses = sorted(SERVED if clauses is None else clauses)
    names = sorted({served_mutant(cid) for cid in clauses})
    with (
        tempfile.TemporaryDirectory(prefix="editspec-zoo-served-") as tmp,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        runs = {
            name: pool.submit(
                _mcp_check,
                [cid for cid in clauses if name is None or served_mutant(cid) == name],
                name,
                Path(tmp) / f"{name}.json",
            )
            for name in (None, *names)
        }
        outcomes = {name: run.result() for name, run in runs.items()}
    missing = {"outcome": "NOT-RUN", "message": ""}
    rows = []
    for cid in clauses:
        record = outcomes[served_mutant(cid)].get(cid, missing)
        reference = outcomes[None].get(cid, missing)
        rows.append(
            {
                "clause": cid,
                "mutant": served_mutant(cid),
                "outcome": record["outcome"],
                "reference": reference["outcome"],
                "caught": is_catch(record["outcome"], reference["outcome"]),
                "message": f"over MCP (zoo.py serve): {record['message'][:300]}",
                "reference_message": reference["message"][:300],
            }
        )
    return rows


def power_table(record: dict[str, Any]) -> dict[str, list[str]]:
    """Clause id -> the mutants that catch it, from a power record."""
    table: dict[str, list[str]] = {}
    for row in record["pairs"]:
        if row["caught"]:
            table.setdefault(row["clause"], []).append(row["mutant"])
    return {cid: sorted(names) for cid, names in sorted(table.items())}


def write_power(record: dict[str, Any], path: Path) -> None:
    """The power file ``editspec catalog --power`` reads: per clause, the mutants failing it."""
    data = {
        "format": FORMAT,
        "command": "python tests/mutants/zoo.py power",
        "duration": record["duration"],
        "clauses": power_table(record),
        "served": {cid: served_mutant(cid) for cid in SERVED},
        "mutants": {
            name: {"defect": MUTANTS[name].defect}
            for name in sorted({row["mutant"] for row in record["pairs"]})
            if name in MUTANTS
        },
    }
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


# -- command line -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zoo.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    power = commands.add_parser("power", help="run every declared pair, write the power file")
    power.add_argument("--out", default=str(POWER_FILE))
    power.add_argument("-n", type=int, default=2, help="parallel processes")
    power.add_argument(
        "--served-only", action="store_true", help="run only the served pairs, into --out"
    )
    trying = commands.add_parser("try", help="which clauses do these mutants fail?")
    trying.add_argument("names", nargs="+")
    trying.add_argument("--clauses", default="")
    trying.add_argument("--areas", default="")
    trying.add_argument("-n", type=int, default=2)
    serve = commands.add_parser("serve", help="editspec serve, with one engine mutant active")
    serve.add_argument("name")
    serve.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "serve":
        mutant = MUTANTS[args.name]
        if mutant.wrap is not None or mutant.per_workspace is not None:
            parser.error(f"{args.name} is not an engine mutant: it cannot be served")
        mutant_zoo.activate(mutant)
        from editspec.spec import serve as served

        return served.main(args.rest)
    if args.command == "power":
        if args.served_only:  # refresh the served pairs of an existing power file
            old = json.loads(Path(args.out).read_text(encoding="utf-8"))
            kept = [
                {"clause": cid, "mutant": name, "caught": True}
                for cid, names in old["clauses"].items()
                if cid not in SERVED
                for name in names
            ]
            record = {"duration": old["duration"], "pairs": kept}
        else:
            record = run_pairs(declared_pairs(), processes=args.n)
        record["pairs"] += run_served()
        write_power(record, Path(args.out))
        lost = [row for row in record["pairs"] if not row["caught"]]
        for row in lost:  # fmt: skip
            print(f"NOT CAUGHT {row['clause']} by {row['mutant']}: {row['outcome']} "
                  f"(reference {row['reference']}) {row['message'][:120]}")  # fmt: skip
        print(f"{len(record['pairs']) - len(lost)}/{len(record['pairs'])} pairs caught in "
              f"{record['duration']} s; written to {args.out}")  # fmt: skip
        return 1 if lost else 0
    pairs = []
    for name in args.names:
        mutant = MUTANTS[name]
        ids = [c for c in args.clauses.split(",") if c]
        ids = ids or (area_clauses(args.areas.split(",")) if args.areas else [])
        pairs += [(cid, name) for cid in ids or mutant.clauses or area_clauses(mutant.areas)]
    record = run_pairs(pairs, processes=args.n)
    for row in record["pairs"]:
        if row["caught"] or os.environ.get("ZOO_VERBOSE"):
            print(f"{row['mutant']} {row['clause']} {row['outcome']} {row['message'][:100]!r}")
    print(f"{sum(r['caught'] for r in record['pairs'])}/{len(record['pairs'])} caught "
          f"in {record['duration']} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
