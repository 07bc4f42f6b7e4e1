"""Benchmark: Glob and Grep as the tree grows (5 000, 50 000, 500 000 files).

For each size it builds (once; kept in ``--cache``, by default a folder of the system temp
directory, since the largest tree takes minutes to write) a tree of small source files,
100 per directory, every file starting with a ``# file N`` line and one in twenty with a
``TODO``; no ignore files. Then, in interleaved rounds (``pairs.interleave``):

* ``Session.glob("**")`` beside ``rg --files`` (a C walk of the same tree: the floor);
* ``Session.grep("TODO")`` (ripgrep backend) beside bare ``rg -n TODO``.

It prints time per file for each, the medians of per-round ratios to the floors, and the
exponent of time against size fitted over the sizes (1.0: the time per file stays flat).
Memory, each in a fresh process (peak resident size after the call minus the resident
size before it): ``glob("**")`` per file listed, and ``grep("^# file", max_results=1000)``
on each tree, where every file matches (500 000 matches on the largest): the matches it
holds are bounded by ``max_results``; what still grows with the tree is the walk's list of
the candidate files.

    python bench/scale.py [--sizes 5000 50000 500000] [--runs 3] [--cache DIR] [--memory-only]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pairs

from editspec.reference import Limits, Workspace
from editspec.reference.search._grep_rg import find_rg

PER_DIRECTORY = 100
# A grep of the largest tree on a loaded machine can pass the default 60 s deadline.
LIMITS = Limits(grep_seconds=3600.0)
WORDS = ("alpha", "beta", "gamma", "delta", "value", "result", "index", "count", "offset")


def build(root: Path, files: int) -> None:
    """The tree, written once; a ``.complete`` marker says it was finished."""
    marker = root / ".complete"
    if marker.exists():
        return
    started = time.perf_counter()
    for number in range(files):
        directory = root / f"d{number // PER_DIRECTORY // 100}" / f"e{number // PER_DIRECTORY}"
        if number % PER_DIRECTORY == 0:
            directory.mkdir(parents=True, exist_ok=True)
        lines = [f"# file {number}"]
        lines += [
            " ".join(WORDS[(number + k * line) % len(WORDS)] for k in range(6))
            for line in range(8 + number % 12)
        ]
        if number % 20 == 0:
            lines.append("# TODO: revisit")
        (directory / f"f{number}.py").write_text("\n".join(lines) + "\n")
    marker.write_text(str(files))
    print(f"built {files} files in {time.perf_counter() - started:.0f} s under {root}")


def memory(root: Path, what: str) -> dict[str, float]:
    """In a fresh process: peak RSS growth (bytes) of one call, and its result size."""
    script = f"""
import json, resource, sys
from editspec.reference import Limits, Workspace
import tempfile
ws = Workspace({str(root)!r}, tempfile.mkdtemp(), Limits(grep_seconds=3600.0))
s = ws.session("m")
ws.grep_backend = "rg"
s.glob("nothing-matches-this")  # imports and caches warm, nothing held
with open("/proc/self/statm") as statm:  # resident now (the peak so far may be higher)
    before = int(statm.read().split()[1]) * resource.getpagesize()
if {what!r} == "glob":
    count = len(s.glob("**").paths)
else:
    result = s.grep("^# file", max_results=1000)
    count = len(result.matches)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"grown": after - before, "count": count}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(root: Path, rg: str, runs: int) -> dict[str, pairs.Samples]:
    """Glob and Grep on ``root`` beside ripgrep, in interleaved rounds."""
    with tempfile.TemporaryDirectory() as state:
        workspace = Workspace(root, state, LIMITS)
        workspace.grep_backend = "rg"
        session = workspace.session("bench")

        def run(command: list[str]) -> int:
            out = subprocess.run(command, cwd=root, capture_output=True, check=False).stdout
            return out.count(b"\n")

        cases = {
            "glob **": pairs.Case(lambda _run: len(session.glob("**").paths)),
            "rg --files": pairs.Case(lambda _run: run([rg, "--no-config", "--files"])),
            "grep TODO": pairs.Case(lambda _run: len(session.grep("TODO").matches)),
            "rg TODO": pairs.Case(lambda _run: run([rg, "--no-config", "-n", "TODO"])),
        }
        return pairs.interleave(cases, runs)


def exponent(sizes: list[int], times: list[float]) -> float:
    """Least-squares slope of log(time) against log(size)."""
    xs, ys = [math.log(size) for size in sizes], [math.log(value) for value in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 50_000, 500_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--cache", default=os.path.join(tempfile.gettempdir(), "editspec-bench-scale")
    )
    parser.add_argument("--build-only", action="store_true", help="build the trees and stop")
    parser.add_argument("--memory-only", action="store_true", help="skip the timed rounds")
    args = parser.parse_args(argv)
    rg = find_rg()
    if rg is None:
        print("this benchmark needs ripgrep", file=sys.stderr)
        return 2
    for size in args.sizes:
        build(Path(args.cache) / str(size), size)
    if args.build_only:
        return 0
    print(f"Glob and Grep by tree size (median of {args.runs} rounds)\n{pairs.stamp()}")
    rows = []
    for size in [] if args.memory_only else args.sizes:
        root = Path(args.cache) / str(size)
        samples = measure(root, rg, args.runs)
        glob_ratio = pairs.ratio(samples, "glob **", "rg --files")
        grep_ratio = pairs.ratio(samples, "grep TODO", "rg TODO")
        rows.append((size, samples))
        print(
            f"{size:>7} files  glob ** {samples['glob **'].median_wall / size * 1e6:6.2f} us/file"
            f" ({samples['glob **'].result} paths), / rg --files: {glob_ratio.text()}"
        )
        print(
            f"{'':>13}  grep    {samples['grep TODO'].median_wall / size * 1e6:6.2f} us/file"
            f" ({samples['grep TODO'].result} matches), / rg: {grep_ratio.text()}"
        )
    if len(rows) > 1:
        sizes = [size for size, _ in rows]
        for name in ("glob **", "rg --files", "grep TODO", "rg TODO"):
            walls = [samples[name].median_wall for _, samples in rows]
            cpus = [samples[name].median_cpu for _, samples in rows]
            print(
                f"fitted exponent of time against size, {name:10}: wall "
                f"{exponent(sizes, walls):.2f}, cpu {exponent(sizes, cpus):.2f}"
            )
    for size in args.sizes:
        root = Path(args.cache) / str(size)
        glob = memory(root, "glob")
        grep = memory(root, "grep")
        print(
            f"{size:>7} files  memory: glob ** {glob['grown'] / size:7.0f} bytes per file listed"
            f"; grep '^# file' (one match per file) with max_results=1000: "
            f"{grep['grown'] / 1024 / 1024:.1f} MiB ({grep['grown'] / size:.1f} bytes per "
            f"file; {int(grep['count'])} matches returned)"
        )
    print(f"{pairs.stamp()}; peak RSS of this process {peak_mib():.0f} MiB")
    return 0


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    sys.exit(main())
