"""The whole suite through MCP against ``editspec serve`` agrees with the in-process run.

``editspec check`` runs twice, once with the reference driver in-process and once over
MCP (the adapter of ``editspec.contract.drivers.mcp`` speaking to ``editspec serve`` through
``spec/mcp_maps/editspec.toml``), each with a JSON report. Every clause both drivers can
run must have the same outcome; a clause that needs a capability only one side declares
(``python_fs`` in-process, ``process`` over MCP) must be UNSUPPORTED on the other. A
difference is a bug of the server, of the adapter or of the map: either one loses or
invents behaviour on the way.

Both transports: the stdio run starts an ``editspec serve`` per clause. The clauses that
trace the server for power loss get a cold ``editspec serve``, the very process its client
started; every other clause gets one forked from a parent that has already imported the
SDK (``warm_serve``: the same code on the same wire, without 1.5 s of imports per clause).
The clauses that kill the server (``process``) are UNSUPPORTED in-process, so there is
nothing to agree on: ``tests/mutants/test_zoo.py`` runs them against ``editspec serve``.
Then one
``editspec serve --http`` server is started and ``editspec check --mcp-url`` runs a
third of the clauses through it (every third clause of each area, so every area and
every tool is covered at a fraction of the cost: the clauses share that server's root
and run one at a time), which must agree with the in-process and the stdio run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import editspec.spec
from editspec.spec import audit, catalog
from tests.spec.http_server import start
from tests.spec.warm_serve import Zygote

pytestmark = pytest.mark.slow

MAP = Path(editspec.spec.__file__).resolve().parent / "mcp_maps" / "editspec.toml"
SERVE = f"{sys.executable} -m editspec.spec.cli serve {{root}} --state-dir {{state_dir}}"
WORKERS = "2"
# Clauses that trace the server's system calls for power loss decide at run time (from the
# ``process`` capability) that they need the real process; one missing here shows up as a
# disagreement with the in-process run, never as a silent agreement.
POWER = ("TXN-011", "WRITE-027")


def _check(report: Path, *extra: str, workers: str | None = WORKERS) -> dict[str, Any]:
    command = [sys.executable, "-m", "editspec.spec.cli", "check", "--report", str(report)]
    command += ["-n", workers, *extra] if workers else list(extra)
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    assert report.exists(), (
        f"editspec check exited {done.returncode} without a report\n"
        f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return data


# UNSUPPORTED over MCP for a limit of the way the suite reaches the server, while the
# clause runs in-process: no disagreement.
TRANSPORT_LIMITS = (
    "cannot carry",  # a lone surrogate: MCP's JSON text cannot hold it
    "cannot run against a running server",  # a second root, through one shared server
)


def _inexpressible_over_mcp(items: tuple[dict[str, Any], ...]) -> bool:
    """A clause the transport cannot carry, or that needs what one running server cannot
    give, is UNSUPPORTED over MCP while it runs in-process: no disagreement."""
    return any(
        item["outcome"] == "UNSUPPORTED" and any(why in item["message"] for why in TRANSPORT_LIMITS)
        for item in items
    )


def disagreements(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """Clauses whose outcomes the two reports do not reconcile, one line each."""
    caps = [frozenset(report["implementation"]["capabilities"]) for report in (first, second)]
    by_id = [{item["id"]: item for item in report["clauses"]} for report in (first, second)]
    problems = [f"{cid}: only in the first report" for cid in sorted(set(by_id[0]) - set(by_id[1]))]
    problems += [
        f"{cid}: only in the second report" for cid in sorted(set(by_id[1]) - set(by_id[0]))
    ]
    for cid in sorted(set(by_id[0]) & set(by_id[1])):
        items = (by_id[0][cid], by_id[1][cid])
        requires = frozenset(items[0]["requires"])
        runs = [requires <= cap for cap in caps]
        outcomes = [item["outcome"] for item in items]
        if all(runs):
            if outcomes[0] != outcomes[1] and not _inexpressible_over_mcp(items):
                messages = " | ".join(
                    f"{o}: {i['message'][:300]}" for o, i in zip(outcomes, items, strict=True)
                )
                problems.append(f"{cid}: {outcomes[0]} vs {outcomes[1]} ({messages})")
        else:
            for side, (can_run, outcome) in enumerate(zip(runs, outcomes, strict=True)):
                if not can_run and outcome not in ("UNSUPPORTED", "WITHDRAWN"):
                    problems.append(f"{cid}: run {side + 1} lacks {sorted(requires - caps[side])} "
                                    f"but reports {outcome}")  # fmt: skip
    return problems


def test_reports_that_differ_are_caught() -> None:
    clause = {"id": "X-001", "requires": ["read"], "message": ""}
    base = {"implementation": {"capabilities": ["read"]}}
    passed = {**base, "clauses": [{**clause, "outcome": "PASS"}]}
    failed = {**base, "clauses": [{**clause, "outcome": "FAIL"}]}
    assert disagreements(passed, passed) == []
    assert len(disagreements(passed, failed)) == 1
    crash = {"id": "X-002", "requires": ["python_fs"], "message": "", "outcome": "PASS"}
    lacking = {"implementation": {"capabilities": ["read"]}, "clauses": [crash]}
    having = {"implementation": {"capabilities": ["python_fs"]}, "clauses": [crash]}
    assert len(disagreements(having, lacking)) == 1
    assert (
        disagreements(having, {**lacking, "clauses": [{**crash, "outcome": "UNSUPPORTED"}]}) == []
    )


def http_sample(report: dict[str, Any], every: int = 3) -> list[str]:
    """Every ``every``-th clause id of each area (sorted), the first of each included."""
    areas: dict[str, list[str]] = {}
    for item in report["clauses"]:
        areas.setdefault(item["id"].rpartition("-")[0], []).append(item["id"])
    return sorted(cid for ids in areas.values() for cid in sorted(ids)[::every])


def only(report: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    wanted = set(ids)
    return {**report, "clauses": [item for item in report["clauses"] if item["id"] in wanted]}


def test_the_http_sample_covers_every_area() -> None:
    clauses = [{"id": f"{area}-{n:03d}"} for area in ("READ", "EDIT") for n in range(1, 8)]
    sample = http_sample({"clauses": clauses})
    assert sample == ["EDIT-001", "EDIT-004", "EDIT-007", "READ-001", "READ-004", "READ-007"]


def test_mcp_agrees_with_in_process(tmp_path: Path) -> None:
    logs = tmp_path / "calls"
    in_process = _check(tmp_path / "in-process.json", "--", "--editspec-call-log", str(logs))
    # The in-process run's call log also serves the suite's self-check (DESIGN §7): every
    # clause that passes has its positive controls and requires exactly what it uses.
    requires = {item.id: item.requires for item in catalog.load()}
    problems = audit.run(logs, in_process, requires)
    assert not problems, "editspec audit:\n  " + "\n  ".join(map(str, problems))
    # The clauses that kill the server process run against ``editspec serve`` in
    # tests/mutants/test_zoo.py (each must PASS there, and FAIL for its served mutant);
    # in-process they are UNSUPPORTED, so here they would only be run a second time.
    process_only = sorted(cid for cid, needs in requires.items() if "process" in needs)
    in_process_outcomes = {item["id"]: item["outcome"] for item in in_process["clauses"]}
    assert {in_process_outcomes[cid] for cid in process_only} == {"UNSUPPORTED"}
    in_process = {
        **in_process,
        "clauses": [item for item in in_process["clauses"] if item["id"] not in process_only],
    }
    zygote = Zygote.start(tmp_path)
    try:
        skipped = " or ".join([*process_only, *POWER])
        warm = _check(
            tmp_path / "mcp-warm.json",
            *("--mcp", zygote.command, "--mcp-map", str(MAP), "-k", f"not ({skipped})"),
        )
    finally:
        forked = zygote.stop()
    ran = [item for item in warm["clauses"] if item["outcome"] not in ("UNSUPPORTED", "WITHDRAWN")]
    assert forked >= len(ran), f"{forked} servers forked for {len(ran)} clauses that ran"
    over_mcp = _check(
        tmp_path / "mcp-cold.json",
        *("--mcp", SERVE, "--mcp-map", str(MAP), "-k", " or ".join(POWER)),
    )
    assert sorted(item["id"] for item in over_mcp["clauses"]) == sorted(POWER)
    assert "process" in over_mcp["implementation"]["capabilities"]
    for key in ("name", "capabilities"):
        assert warm["implementation"][key] == over_mcp["implementation"][key], key
    over_mcp = {**over_mcp, "clauses": warm["clauses"] + over_mcp["clauses"]}
    _agree(in_process, over_mcp, "MCP (stdio)")

    # The same clauses through one running server over Streamable HTTP.
    sample = http_sample(over_mcp)
    root = tmp_path / "shared" / "ws"
    root.mkdir(parents=True)
    served = start(root, tmp_path / "shared-state")
    try:
        over_http = _check(
            tmp_path / "http.json",
            *("--mcp-url", served.url, "--mcp-root", str(root), "--mcp-map", str(MAP)),
            *("-k", " or ".join(sample)),
            workers=None,
        )
    finally:
        assert served.stop() == 0
    assert "process" not in over_http["implementation"]["capabilities"]
    assert sorted(item["id"] for item in over_http["clauses"]) == sample
    _agree(only(in_process, sample), over_http, "MCP (Streamable HTTP)")
    problems = disagreements(only(over_mcp, sample), over_http)
    assert not problems, "stdio and HTTP runs disagree:\n  " + "\n  ".join(problems)
    assert list(root.parent.iterdir()) == [root] and not any(root.iterdir())


def _agree(in_process: dict[str, Any], over_mcp: dict[str, Any], label: str) -> None:
    assert over_mcp["implementation"]["name"] == "editspec serve (MCP)"
    compared = [
        item
        for item in over_mcp["clauses"]
        if set(item["requires"]) <= set(in_process["implementation"]["capabilities"])
        and item["outcome"] != "UNSUPPORTED"
    ]
    # The MCP run really ran the suite: most clauses went through the server.
    assert len(compared) >= 0.7 * len(over_mcp["clauses"]), len(compared)
    problems = disagreements(in_process, over_mcp)
    print(f"{label}: {len(compared)} clauses compared, {len(problems)} disagreements")
    assert not problems, f"in-process and {label} runs disagree:\n  " + "\n  ".join(problems)
