"""``editspec explore``: every crash point and power-loss state of the standard scenarios.

For each standard scenario the last step is the one explored; the steps before it set
the workspace up (reads, earlier writes that give rewind a history). The explorer runs
it once cleanly (``harness.baseline``), then checks, in worker processes:

* a crash at every counted operation of the step, followed by recovery;
* for ``recovery-crash``: also a crash at every operation of that recovery, followed
  by a second recovery;
* every distinct power-loss state of the step's trace under ``--model`` (``ordered``
  by default, or ``strict``), each recovered and checked.

With ``--driver MODULE:FACTORY`` the same scenarios run through any Python driver that
declares ``python_fs`` (DESIGN §2), reached only through the contract: the crash points
are its own mutating ``os`` calls and the power-loss states come from their trace
(``driver_runner``, ``ostrace``). A scenario whose capabilities the driver lacks is
skipped with a message (an error when asked for by name).

Every failure is saved as a scenario (``--out``, default ``editspec-failures/``) that
``editspec replay`` re-runs. It prints a progress bar on stderr and a table on stdout;
the exit status is 1 if anything failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from editspec.contract.drivers import DriverLoadError, mcp_factory
from editspec.fault_injection.driver_runner import driver_factory
from editspec.fault_injection.explore_process import explore_process
from editspec.fault_injection.explore_rows import (
    Progress,
    Row,
    format_table,
    merge_rows,
    parse_shard,
    shard_of,
)
from editspec.fault_injection.explore_run import CleanRunFailed, explore
from editspec.fault_injection.process_power import Unmodeled
from editspec.fault_injection.standard import (
    DEFAULT_LIMITS,
    STANDARD,
    Standard,
    add_delete_move,
    missing_capabilities,
    recovery_crash,
    rewind_five,
    single_write,
    update_ten_files,
)
from editspec.fault_injection.strace_kill import strace_unavailable


def _capabilities_of(
    factory: Callable[[Path, Path], Any], label: str = ""
) -> tuple[str, frozenset[str]]:
    base = tempfile.mkdtemp(prefix="editspec-probe-")
    try:
        os.mkdir(os.path.join(base, "ws"))
        os.mkdir(os.path.join(base, "state"))
        instance = factory(Path(os.path.join(base, "ws")), Path(os.path.join(base, "state")))
        try:
            fallback = label or getattr(factory, "__qualname__", "") or "the driver"
            name = str(getattr(instance, "name", "") or fallback)
            return name, frozenset(instance.capabilities)
        finally:
            instance.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


#: Why each way of injecting faults needs its capability (DESIGN §2).
_REACHED_BY: dict[str, str] = {
    "python_fs": "only an implementation running in this process can be crashed at its os "
    "calls (for a server, use --mcp)",
    "process": "only a separate process can be killed and started again",
}


def _usable_scenarios(
    parser: argparse.ArgumentParser,
    names: list[str],
    requested: bool,
    load: Callable[[], Callable[[Path, Path], Any]],
    runs_here: str,
    err_stream: TextIO,
) -> tuple[str, list[str]]:
    """The driver's name, and the scenarios it has the capabilities for (a usage error for
    a driver that cannot be loaded or faulted, or that lacks what a scenario named needs)."""
    try:
        label, capabilities = _capabilities_of(load())
    except DriverLoadError as exc:
        parser.error(str(exc))
    if runs_here not in capabilities:
        parser.error(f"{label} does not declare {runs_here}: {_REACHED_BY[runs_here]}")
    lacking = {name: missing_capabilities(name, capabilities, runs_here) for name in names}
    if requested and any(lacking.values()):
        parser.error(
            "; ".join(f"{name} needs {', '.join(need)}" for name, need in lacking.items() if need)
        )
    for name, need in lacking.items():
        if need:
            err_stream.write(f"skipping {name}: {label} lacks {', '.join(need)}\n")
    usable = [name for name in names if not lacking[name]]
    if not usable:
        parser.error(f"{label} has the capabilities of no standard scenario")
    return label, usable


def _main_process(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    names: list[str],
    out_stream: TextIO,
    err_stream: TextIO,
) -> int:
    """``explore --mcp``: see ``explore_process``."""
    if args.driver or args.memory:
        parser.error("--mcp explores a server process: not with --driver or --memory")
    if args.no_power and (args.model != "ordered" or args.limit is not None):
        parser.error("--model and --limit are about power loss, which --no-power skips")
    reason = strace_unavailable()
    if reason is not None:
        err_stream.write(f"editspec explore: strace cannot kill a server here: {reason}\n")
        return 2

    def load() -> Any:
        return mcp_factory(args.mcp, args.mcp_map)

    label, names = _usable_scenarios(
        parser, names, bool(args.scenario), load, "process", err_stream
    )
    factory = load()
    how = "killed by strace" if not args.no_kills else ""
    if not args.no_power:
        how += (" and " if how else "") + "traced by strace for power cuts"
    out_stream.write(f"server {args.mcp} ({label}), {how}\n")
    try:
        rows, saved, wall = explore_process(
            names,
            factory,
            jobs=max(1, args.jobs),
            out=args.out,
            progress=err_stream if _bar_wanted(args, err_stream) else None,
            model=args.model,
            limit=args.limit,
            power=not args.no_power,
            kills=not args.no_kills,
            shard=args.shard,
        )
    except (RuntimeError, Unmodeled) as exc:  # the clean run failed, or cannot be modelled
        err_stream.write(f"editspec explore: {exc}\n")
        return 1
    _write_results(args, rows, wall)
    out_stream.write(format_table(rows, "-" if args.no_power else args.model, wall) + "\n")
    out_stream.write(f"wall time {wall:.1f} s with {max(1, args.jobs)} thread(s)\n")
    kills = [path for path in saved if path.endswith("-kills.txt")]
    findings = [path for path in saved if path.endswith(".json")]
    if kills:
        out_stream.write(f"kill reports of the failing scenarios: {', '.join(kills)}\n")
    if findings:
        out_stream.write(
            f"{len(findings)} power-loss finding(s) written to {args.out}/; "
            f"re-run one with: editspec replay {findings[0]}\n"
        )
    return 1 if any(row.failed for row in rows) else 0


def _bar_wanted(args: argparse.Namespace, stream: TextIO) -> bool:
    return not args.no_progress and stream.isatty()


def _write_results(args: argparse.Namespace, rows: Sequence[Row], wall: float) -> None:
    """``--results FILE``: the rows as JSON, for ``--merge`` of shards."""
    if args.results:
        payload = {
            "format": "editspec-explore/1",
            "shard": list(args.shard) if args.shard else None,
            "model": args.model,
            "wall": wall,
            "rows": [row.to_json() for row in rows],
        }
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(json.dumps(payload, indent=2) + "\n")


def _merge(paths: Sequence[str], out_stream: TextIO, err_stream: TextIO) -> int:
    """``--merge FILE...``: one table from the results of several shards."""

    parts, models, shards, wall = [], set(), [], 0.0
    for path in paths:
        payload = json.loads(Path(path).read_text())
        if payload.get("format") != "editspec-explore/1":
            err_stream.write(f"editspec explore: {path} is not an explore result (--results)\n")
            return 2
        parts.append([Row.from_json(row) for row in payload["rows"]])
        models.add(payload.get("model", "ordered"))
        shards.append(tuple(payload["shard"]) if payload.get("shard") else None)
        wall = max(wall, float(payload.get("wall", 0.0)))
    counts = {shard[1] for shard in shards if shard is not None}
    numbers = sorted(shard[0] for shard in shards if shard is not None)
    if len(counts) == 1 and numbers != list(range(1, next(iter(counts)) + 1)):
        err_stream.write(
            f"editspec explore: warning: shards {numbers} of {next(iter(counts))} merged\n"
        )
    rows = merge_rows(parts)
    model = models.pop() if len(models) == 1 else "mixed"
    out_stream.write(format_table(rows, model, wall) + "\n")
    out_stream.write(f"{len(paths)} result file(s) merged; the longest shard took {wall:.1f} s\n")
    return 1 if any(row.failed for row in rows) else 0


def main_explore(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Entry point of ``editspec explore``; returns the exit status."""
    out_stream = stdout if stdout is not None else sys.stdout
    err_stream = stderr if stderr is not None else sys.stderr
    parser = argparse.ArgumentParser(
        prog="editspec explore",
        description="check every crash point and power-loss state of the standard scenarios",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=sorted(STANDARD),
        help="a standard scenario (repeatable; default: all)",
    )
    parser.add_argument(
        "--model",
        choices=("ordered", "strict"),
        default="ordered",
        help="power loss: unsynced directory operations lost as a suffix in order "
        "(ordered, the default) or any subset of them (strict)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes (with --mcp: threads; default: the CPUs)",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="run in memory (pyfakefs) instead of a temporary directory",
    )
    parser.add_argument(
        "--out",
        default="editspec-failures",
        help="directory for failure scenarios (default: %(default)s)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="power-loss states per cut point (default: ordered 4096, strict 64)",
    )
    parser.add_argument(
        "--driver",
        metavar="MODULE:FACTORY",
        default="",
        help="explore this Python DriverFactory (it must declare python_fs) instead of the "
        "reference: crashes and power cuts at its own os calls",
    )
    parser.add_argument(
        "--mcp",
        metavar="COMMAND",
        default="",
        help="explore an MCP server started with this command line ({root} and {state_dir} "
        "are filled in): killed by strace at each file call of each scenario",
    )
    parser.add_argument(
        "--mcp-map", metavar="FILE", help="a TOML map from the contract to the server's tools"
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar on standard error (there is none when it is not a terminal)",
    )
    parser.add_argument(
        "--no-power", action="store_true", help="with --mcp: only the kills, no power cuts"
    )
    parser.add_argument(
        "--no-kills", action="store_true", help="with --mcp: only the power cuts, no kills"
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        type=parse_shard,
        help="run only the K-th of N deterministic slices of the work (a CI matrix job each)",
    )
    parser.add_argument(
        "--results", metavar="FILE", help="also write the rows as JSON (for --merge)"
    )
    parser.add_argument(
        "--merge",
        metavar="FILE",
        nargs="+",
        help="print one table from the --results files of several shards, and exit",
    )
    args = parser.parse_args(argv)
    if args.merge:
        return _merge(args.merge, out_stream, err_stream)
    if not args.mcp and (args.no_power or args.no_kills):
        parser.error("--no-power and --no-kills apply only with --mcp")
    names = args.scenario or list(STANDARD)
    if args.mcp:
        return _main_process(parser, args, names, out_stream, err_stream)
    if args.mcp_map:
        parser.error("--mcp-map applies only with --mcp")
    if args.driver:
        if args.memory:
            parser.error("--memory runs the reference only: a driver is explored on disk")
        label, names = _usable_scenarios(
            parser,
            names,
            bool(args.scenario),
            lambda: driver_factory(args.driver),
            "python_fs",
            err_stream,
        )
        out_stream.write(f"driver {args.driver} ({label})\n")
    try:
        rows, saved, wall = explore(
            names,
            model=args.model,
            jobs=max(1, args.jobs),
            backend="memory" if args.memory else "disk",
            out=args.out,
            progress=None if args.no_progress else err_stream,
            limit=args.limit,
            driver=args.driver,
            shard=args.shard,
        )
    except CleanRunFailed as exc:
        err_stream.write(f"editspec explore: {exc}\n")
        return 1
    _write_results(args, rows, wall)
    out_stream.write(format_table(rows, args.model, wall) + "\n")
    out_stream.write(f"wall time {wall:.1f} s with {max(1, args.jobs)} process(es)\n")
    if saved:
        out_stream.write(
            f"{len(saved)} failure scenario(s) written to {args.out}/; "
            f"re-run one with: editspec replay {saved[0]}\n"
        )
    return 1 if any(row.failed for row in rows) else 0


__all__ = [
    "DEFAULT_LIMITS",
    "STANDARD",
    "CleanRunFailed",
    "Progress",
    "Row",
    "Standard",
    "add_delete_move",
    "explore",
    "format_table",
    "main_explore",
    "merge_rows",
    "missing_capabilities",
    "parse_shard",
    "recovery_crash",
    "rewind_five",
    "shard_of",
    "single_write",
    "update_ten_files",
]

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main_explore())
