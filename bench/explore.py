"""Benchmark the fault-injection explorer: states checked per second, in memory and on disk.

    python bench/explore.py [--scenario NAME ...] [--jobs N] [--rounds 3] [--skip-full]

For each backend (a temporary directory on disk; pyfakefs in memory; and ``driver``: the
reference on disk reached only through the driver contract, its ``os`` calls intercepted
and traced, as ``editspec explore --driver`` runs any Python implementation) it checks every
ordered power-loss state and every crash point of the chosen scenarios (default:
``update-10-files`` and ``add-delete-move``) in one process, and times, per scenario in
``--rounds`` interleaved rounds (``pairs.interleave``; the crash points once):

- **check**: what the explorer does per state: write the state (or re-run the setup and
  crash), open a fresh workspace (recovery), capture and compare the tree;
- **floor**: the harness alone for the same power-loss states: write the state and
  capture the tree, with no workspace opened; the least any exploration must do.

A ``process`` row does the same through a real server, ``editspec serve`` over MCP
(unless ``--skip-process``, or where strace cannot trace): its last step traced by strace
(``process_power``), every ordered power-loss state written, the server started on it and
asked to recover, the root captured; the floor writes and captures the same states with no
server (timed once, not in rounds). Its scenario is ``--process-scenario`` (default
``single-write``: a server start per state makes larger ones slow); it has no crash-point
column (kills are ``strace_kill``'s).

It prints states per second for both and the median of the per-round ratios check/floor
time with their range (wall; and CPU), then (unless
``--skip-full``) the wall time of a full ``editspec explore`` of every standard scenario
(ordered model) with ``--jobs`` processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import pairs

from editspec.fault_injection import explore, explore_run, harness, trees
from editspec.fault_injection.powerloss import materialize

#: The reference engine reached only through the driver contract, as ``--driver`` runs it.
REFERENCE_DRIVER = "editspec.contract.drivers.reference:factory"


def measure(
    backend: str, names: Sequence[str], driver: str = "", rounds: int = 3
) -> dict[str, float]:
    """Run in a worker process (pyfakefs patches the process it runs in).

    Per scenario, the floor and the checks of its power-loss states run in interleaved
    rounds (``pairs.interleave``); a round's ratio is its checks' time over its floor's,
    summed over the scenarios."""
    worker = explore_run._Worker(backend, driver)
    box = worker.sandbox
    power_states = crash_points = 0
    crash_seconds = 0.0
    failed = 0
    check_walls = [0.0] * rounds
    floor_walls = [0.0] * rounds
    check_cpus = [0.0] * rounds
    floor_cpus = [0.0] * rounds
    for name in names:
        scenario, base = worker.baseline(name)
        states, _ = worker.power_states(name, "ordered", explore.DEFAULT_LIMITS["ordered"])
        failures: list[int] = []

        def floor(_run: int, states: Sequence[object] = states) -> object:
            for state in states:
                materialize(state, [box.root, box.state_dir])
                trees.capture(box.root)
            return None

        def check(
            _run: int,
            states: Sequence[object] = states,
            scenario: object = scenario,
            base: object = base,
            failures: list[int] = failures,
        ) -> object:
            count = 0
            for state in states:
                verdict = harness.check_power_state(box, scenario, base, state, "ordered")
                count += not verdict.passed
            failures.append(count)
            return None

        samples = pairs.interleave(
            {"floor": pairs.Case(floor), "check": pairs.Case(check)}, rounds, warmup=0
        )
        for index in range(rounds):
            check_walls[index] += samples["check"].wall[index]
            floor_walls[index] += samples["floor"].wall[index]
            check_cpus[index] += samples["check"].cpu[index]
            floor_cpus[index] += samples["floor"].cpu[index]
        failed += max(failures)
        power_states += len(states)
        started = time.perf_counter()
        for at in range(1, base.count + 1):
            failed += not harness.check_crash(box, scenario, base, at).passed
        crash_seconds += time.perf_counter() - started
        crash_points += base.count
    ratios = [check / floor for check, floor in zip(check_walls, floor_walls, strict=True)]
    cpu_ratios = [check / floor for check, floor in zip(check_cpus, floor_cpus, strict=True)]
    return {
        "power_states": power_states,
        "crash_points": crash_points,
        "check_rate": power_states / statistics.median(check_walls),
        "floor_rate": power_states / statistics.median(floor_walls),
        "ratio": statistics.median(ratios),
        "ratio_low": min(ratios),
        "ratio_high": max(ratios),
        "cpu_ratio": statistics.median(cpu_ratios),
        "crash_rate": crash_points / crash_seconds,
        "failed": failed,
    }


SERVE = ("{python}", "-m", "editspec.spec.cli", "serve", "{root}", "--state-dir", "{state_dir}")


def measure_process(name: str) -> dict[str, float]:
    """States per second through ``editspec serve`` (strace's trace), and the floor."""
    from pathlib import Path

    import editspec.spec
    from editspec.contract.drivers._mcp_map import load_map
    from editspec.fault_injection import process_power

    maps = Path(editspec.spec.__file__).resolve().parent / "mcp_maps"
    command = tuple(sys.executable if word == "{python}" else word for word in SERVE)
    server = process_power.Server(command, load_map(maps / "editspec.toml"))
    scenario = explore.STANDARD[name].build()
    with process_power.scratch() as base:
        clean = process_power.process_baseline(server, scenario, base)
        states, _ = process_power.process_states(clean)
        roots = clean.recording.roots
        started = time.perf_counter()
        for state in states:
            materialize(state, roots)
            trees.capture(clean.root)
        floor = time.perf_counter() - started
        known = set(clean.before) | set(clean.after)
        report = process_power.check_process_power_loss(
            server, clean, states, ignore=lambda path: path not in known
        )
    return {
        "power_states": len(states),
        "check_rate": len(states) / report.seconds,
        "floor_rate": len(states) / floor,
        "failed": len(report.failures),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", action="append", choices=sorted(explore.STANDARD))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-full", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per scenario")
    parser.add_argument("--skip-process", action="store_true")
    parser.add_argument(
        "--process-scenario", default="single-write", choices=sorted(explore.STANDARD)
    )
    args = parser.parse_args(argv)
    names = args.scenario or ["update-10-files", "add-delete-move"]
    print(f"scenarios: {', '.join(names)}; {args.rounds} interleaved rounds\n{pairs.stamp()}")
    print(
        f"{'backend':<8} {'power states':>12} {'check/s':>9} {'floor/s':>9} "
        f"{'check/floor time: wall (range), cpu':>36} {'crash pts':>9} {'crash/s':>8} {'failed':>6}"
    )
    status = 0
    for label, backend, driver in (
        ("memory", "memory", ""),
        ("disk", "disk", ""),
        ("driver", "disk", REFERENCE_DRIVER),
    ):
        with ProcessPoolExecutor(max_workers=1) as pool:
            result = pool.submit(measure, backend, names, driver, args.rounds).result()
        ratio = (
            f"{result['ratio']:.2f}x ({result['ratio_low']:.2f}-{result['ratio_high']:.2f}), "
            f"{result['cpu_ratio']:.2f}x"
        )
        print(
            f"{label:<8} {int(result['power_states']):>12} {result['check_rate']:>9.0f} "
            f"{result['floor_rate']:>9.0f} {ratio:>36} {int(result['crash_points']):>9} "
            f"{result['crash_rate']:>8.0f} {int(result['failed']):>6}"
        )
        status |= bool(result["failed"])
    if not args.skip_process:
        from editspec.fault_injection.strace_kill import strace_unavailable

        reason = strace_unavailable()
        if reason is not None:
            print(f"process  skipped: strace cannot trace here: {reason}")
        else:
            result = measure_process(args.process_scenario)
            ratio = result["floor_rate"] / result["check_rate"]
            print(
                f"{'process':<8} {int(result['power_states']):>12} {result['check_rate']:>9.2f} "
                f"{result['floor_rate']:>9.0f} {ratio:>6.0f}x {'-':>9} {'-':>8} "
                f"{int(result['failed']):>6}   ({args.process_scenario}, editspec serve)"
            )
            status |= bool(result["failed"])
    if not args.skip_full:
        rows, _saved, wall = explore.explore(list(explore.STANDARD), jobs=args.jobs, out=None)
        checked = sum(row.checked for row in rows)
        print(
            f"full exploration (ordered, disk, {args.jobs} processes): {checked} states in "
            f"{wall:.1f} s ({checked / wall:.0f} states/s), "
            f"{sum(row.failed for row in rows)} failed"
        )
    print(pairs.stamp())
    return status


if __name__ == "__main__":
    sys.exit(main())
