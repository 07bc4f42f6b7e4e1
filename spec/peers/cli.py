"""``editspec peers``: the catalog of real implementations, their runs and the matrix.

    editspec peers list
    editspec peers run NAME... [--out DIR] [--cache DIR] [-n N] [--no-explore] [-k EXPR]
    editspec peers matrix [NAME...] [--out DIR] [--cache DIR] [-n N] [--no-explore]
                          [--reuse]

``run`` installs what is missing (npm or pip, into the peer cache), runs the suite against
each implementation without its expectations, so that every cell of the matrix shows the
real outcome and kind, then compares the outcomes with the expectations file: a listed
clause that now passes, or a failing MUST clause that is not listed, is a change the
expectations must record (exit 1). Reports go to ``DIR/reports/NAME.json``; where the
catalog says the tool can be crashed, ``editspec explore --mcp`` runs too and its summary
goes to ``DIR/reports/NAME.explore.txt``. ``matrix`` runs (or, with ``--reuse``, reads)
every report and writes ``DIR/matrix.html``, ``matrix.md`` and ``matrix.json``.

Each run says how long it took (install, suite, crash explorer, with the load average at
its start) when it ends, and keeps that in ``DIR/reports/NAME.timing.json`` for the
matrix; ``matrix`` ends with every entry's time and the total.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from editspec.contract.drivers.mcp import load_map
from editspec.fault_injection.standard import missing_capabilities
from editspec.spec import expectations
from editspec.spec.peers import matrix
from editspec.spec.peers.catalog import CatalogError, Peer, cache_dir, load_catalog

EXIT_OK = 0
EXIT_CHANGED = 1
EXIT_USAGE = 2
#: The crash explorer's scenarios for a catalog peer, in order of preference: one write,
#: what any writer can do (with ``expected_sha256``, or after a read where a tool has no
#: compare-and-swap); the first the peer's map fits runs.
EXPLORE_SCENARIOS = ("single-write", "plain-write")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="editspec peers", description="real implementations: the catalog and the matrix"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="the catalog: names, versions, how each is reached")
    for name, help_text in (
        ("run", "install and run the suite against the named implementations"),
        ("matrix", "run the whole catalog (or the named ones) and write the matrix"),
    ):
        action = actions.add_parser(name, help=help_text)
        action.add_argument("names", nargs="*" if name == "matrix" else "+", metavar="NAME")
        action.add_argument("--out", default="editspec-peers", help="output directory")
        action.add_argument("--cache", help="install directory (default: the peer cache)")
        action.add_argument("-n", dest="workers", default="2", help="pytest-xdist workers")
        action.add_argument("-k", dest="keyword", help="select clauses (pytest -k)")
        action.add_argument(
            "--no-explore", action="store_true", help="do not run the crash explorer"
        )
        if name == "matrix":
            action.add_argument(
                "--reuse", action="store_true", help="use the reports already in --out"
            )
    return parser


def main_peers(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    try:
        catalog = load_catalog()
    except CatalogError as exc:
        print(f"editspec peers: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.action == "list":
        for peer in catalog.values():
            where = f"{peer.registry} {peer.package}" if peer.registry else "this checkout"
            print(f"{peer.name:<30} {peer.version:<14} {peer.kind:<9} {where}")
            if peer.notes:
                print(f"{'':<30} {peer.notes}")
        return EXIT_OK
    names = list(args.names) or list(catalog)
    unknown = [name for name in names if name not in catalog]
    if unknown:
        print(f"editspec peers: not in the catalog: {', '.join(unknown)}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out)
    cache = cache_dir(args.cache)
    status = EXIT_OK
    entries = []
    for name in names:
        peer = catalog[name]
        reused = args.action == "matrix" and args.reuse and _report_path(out, name).is_file()
        if reused:
            entry = _entry(peer, out, cache)
        else:
            entry, changed = run_peer(peer, out, cache, args)
            status = max(status, changed)
        entries.append(entry)
    if args.action == "matrix":
        for line in timing_lines(entries):
            print(line)
        written = write_matrix(entries, out)
        for path in written:
            print(f"written: {path}")
    return status


def _report_path(out: Path, name: str) -> Path:
    return out / "reports" / f"{name}.json"


def reproduce_command(peer: Peer) -> str:
    return f"editspec peers run {peer.name}"


def run_peer(
    peer: Peer, out: Path, cache: Path, args: argparse.Namespace
) -> tuple[dict[str, Any], int]:
    """Install, run the suite (and the explorer), compare with the expectations."""
    report = _report_path(out, peer.name)
    report.parent.mkdir(parents=True, exist_ok=True)
    clock = _Stopwatch(_timing_path(out, peer.name))
    print(f"== {peer.name} {peer.version}", flush=True)
    try:
        peer.install(cache, log=lambda line: print(line, flush=True))
    except CatalogError as exc:
        print(f"{peer.name}: {exc}", file=sys.stderr)
        clock.lap("install")
        return {**_entry(peer, out, cache), "error": str(exc)}, EXIT_CHANGED
    clock.lap("install")
    command = [sys.executable, "-m", "editspec.spec.cli", "check", *peer.check_arguments(cache)]
    command += ["--report", str(report), "-n", str(args.workers)]
    if args.keyword:
        command += ["-k", args.keyword]
    report.unlink(missing_ok=True)
    subprocess.run(command, env=peer.environment(cache))
    clock.lap("suite")
    if not report.is_file():
        message = "the suite did not produce a report"
        print(f"{peer.name}: {message}", file=sys.stderr)
        return {**_entry(peer, out, cache), "error": message}, EXIT_CHANGED
    changed = EXIT_OK
    if peer.expectations_path is not None and not args.keyword:
        problems = compare_with_expectations(
            json.loads(report.read_text(encoding="utf-8")), peer.expectations_path
        )
        for problem in problems:
            print(f"{peer.name}: {problem}")
        if problems:
            changed = EXIT_CHANGED
    if peer.crash and peer.kind == "mcp" and not args.no_explore:
        _explore(peer, out, cache)
        clock.lap("explore")
    print(f"-- {peer.name}: {clock.summary()}", flush=True)
    return _entry(peer, out, cache), changed


class _Stopwatch:
    """The seconds of each step of one run, written to its timing file after each step."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.started = self.last = time.monotonic()
        self.record: dict[str, Any] = {"load_average": _load_average(), "steps": {}}
        path.unlink(missing_ok=True)

    def lap(self, step: str) -> None:
        now = time.monotonic()
        self.record["steps"][step] = round(now - self.last, 1)
        self.record["total"] = round(now - self.started, 1)
        self.last = now
        self.path.write_text(json.dumps(self.record) + "\n", encoding="utf-8")

    def summary(self) -> str:
        return timing_text(self.record)


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 1)
    except (AttributeError, OSError):  # pragma: no cover - a platform without it
        return None


def _timing_path(out: Path, name: str) -> Path:
    return out / "reports" / f"{name}.timing.json"


def _duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


def timing_text(record: dict[str, Any]) -> str:
    """``4m10s (install 1m02s, suite 3m08s; load average 3.1 at the start)``."""
    steps = ", ".join(f"{step} {_duration(s)}" for step, s in record.get("steps", {}).items())
    load = record.get("load_average")
    where = f"; load average {load} at the start" if load is not None else ""
    return f"{_duration(record.get('total', 0.0))} ({steps}{where})"


def timing_lines(entries: Sequence[dict[str, Any]]) -> list[str]:
    """Every entry's time, and the total of those that were run now or before."""
    timed = [entry for entry in entries if entry.get("timing")]
    if not timed:
        return []
    lines = ["times:"]
    lines += [f"  {entry['name']:<30} {timing_text(entry['timing'])}" for entry in timed]
    total = sum(entry["timing"].get("total", 0.0) for entry in timed)
    lines.append(f"  {'total':<30} {_duration(total)} ({len(timed)} of {len(entries)} entries)")
    return lines


def compare_with_expectations(report: dict[str, Any], path: Path) -> list[str]:
    """What the expectations no longer describe: a listed clause that does not fail, a
    failing MUST clause that is not listed."""

    listed = expectations.load(path)
    problems = []
    for record in report["clauses"]:
        failing = record["outcome"] in ("FAIL", "ERROR")
        if record["id"] in listed and not failing and record["outcome"] != "INCONCLUSIVE":
            problems.append(
                f"{record['id']} is listed in {path.name} but is {record['outcome']} now "
                f"({listed[record['id']].reason.splitlines()[0][:80]})"
            )
        elif failing and record["id"] not in listed and record["level"] == "MUST":
            problems.append(
                f"{record['id']} {record['outcome']} {record.get('kind') or ''} is not listed "
                f"in {path.name}: {(record.get('message') or '').splitlines()[:1]}"
            )
    return problems


#: The first line of an explore file when no standard scenario fits the tool.
EXPLORE_NOT_RUN = "not run"


def explore_lacks(peer: Peer) -> dict[str, list[str]]:
    """What each crash explorer scenario needs that the peer's map does not declare."""
    assert peer.map_path is not None
    # its map's capabilities, as the MCP adapter declares them (over stdio: "process")
    capabilities = load_map(peer.map_path).capabilities | {"process"}
    return {name: missing_capabilities(name, capabilities, "process") for name in EXPLORE_SCENARIOS}


def explore_scenario(peer: Peer) -> str | None:
    """The first crash explorer scenario the peer's map fits; None when none does."""
    return next((name for name, lacking in explore_lacks(peer).items() if not lacking), None)


def _explore(peer: Peer, out: Path, cache: Path) -> None:
    assert peer.map_path is not None
    target = out / "reports" / f"{peer.name}.explore.txt"
    scenario = explore_scenario(peer)
    if scenario is None:
        needs = "; ".join(
            f"{name} needs {', '.join(lacking)}" for name, lacking in explore_lacks(peer).items()
        )
        target.write_text(
            f"{EXPLORE_NOT_RUN}\n{needs}, which {peer.map_path.name} does not declare\n",
            encoding="utf-8",
        )
        print(f"{peer.name}: crash explorer not run: {needs}")
        return
    command = [sys.executable, "-m", "editspec.spec.cli", "explore", "--mcp",
               peer.server_command(cache), "--mcp-map", str(peer.map_path),
               "--scenario", scenario, "--no-progress",
               "--out", str(out / "explore" / peer.name)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=peer.environment(cache))
    target.write_text(
        f"exit {done.returncode}\n{done.stdout}{done.stderr[-4000:]}", encoding="utf-8"
    )


def _explore_summary(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if first == EXPLORE_NOT_RUN:
        return {"exit": None, "summary": f"crash explorer: not run ({rest.strip()})", "output": []}
    code = int(first.split()[1]) if first.startswith("exit ") else -1
    lines = [line for line in rest.splitlines() if line.strip()]
    verdict = (
        "no failed kill"
        if code == 0
        else ("kills that broke the files" if code == 1 else "could not run")
    )
    return {"exit": code, "summary": f"crash explorer: {verdict}", "output": lines[-12:]}


def _entry(peer: Peer, out: Path, cache: Path) -> dict[str, Any]:
    report = _report_path(out, peer.name)
    data = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else None
    return {
        "name": peer.name,
        "title": peer.title,
        "version": peer.version,
        "notes": peer.notes,
        "command": reproduce_command(peer),
        "report": data,
        "explore": _explore_summary(out / "reports" / f"{peer.name}.explore.txt"),
        "timing": _timing(_timing_path(out, peer.name)),
        "error": None if data is not None else "no report",
    }


def _timing(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def write_matrix(entries: Sequence[dict[str, Any]], out: Path) -> list[Path]:

    built = matrix.build(entries)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "matrix.html", out / "matrix.md", out / "matrix.json"]
    paths[0].write_text(matrix.render_html(built), encoding="utf-8")
    paths[1].write_text(matrix.render_markdown(built), encoding="utf-8")
    paths[2].write_text(json.dumps(built, indent=1) + "\n", encoding="utf-8")
    return paths
