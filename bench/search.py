"""Benchmark: Glob and Grep on a large tree, against ripgrep and git in the same run.

It generates a tree (default 50 000 files in 2 000 directories, with nested .gitignore
files, ignored build directories, a few binary files; a git repository, so that both
ripgrep and git apply the ignore files) in a temporary directory and times, as the
median of several interleaved runs after one warm-up:

* bare ``rg PATTERN`` at the root (ripgrep's own walk and ignore rules): the floor for Grep;
* ``Session.grep`` with the ripgrep backend and with the Python backend;
* ``git ls-files --others --exclude-standard``: the floor for Glob;
* ``Session.glob("**")`` (the same listing as git's, plus directories, sorted by mtime)
  and ``Session.glob("**/*.py")``.

Targets: Grep with ripgrep within 1.3x of bare rg, the Python backend within 5x of rg,
Glob within 3x of git ls-files. Exit status 1 when one is missed.

    python bench/search.py [--files 50000] [--dirs 2000] [--runs 5] [--pattern TODO]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from editspec.reference import Workspace
from editspec.reference.search._grep_rg import find_rg

TARGETS = {"grep rg / rg": 1.3, "grep python / rg": 5.0, "glob ** / git": 3.0}
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "value",
    "result",
    "index",
    "count",
    "offset",
    "buffer",
    "parse",
    "render",
    "request",
    "response",
    "handler",
    "config",
    "module",
    "import",
    "return",
    "self",
    "def",
    "class",
]
ROOT_IGNORE = "*.log\n!important.log\nbuild/\n__pycache__/\n*.tmp\n/dist/\n"
NESTED_IGNORES = (
    "*.gen.py\n!keep.gen.py\n",
    "/local/\ncache*/\n",
    "*.tmp\n!keep.tmp\n*.bak\n",
    "# generated\nout/\n",
)
EXTENSIONS = (".py", ".py", ".py", ".md", ".txt", ".js", ".log", ".tmp", ".gen.py", ".json")


def generate(root: Path, files: int, dirs: int, seed: int = 7) -> None:
    """A deterministic source-like tree under ``root``."""
    rnd = random.Random(seed)
    directories = [""]
    while len(directories) < dirs:
        parent = rnd.choice(directories[-300:])
        if parent.count("/") >= 6:
            parent = ""
        name = rnd.choice(["src", "lib", "pkg", "core", "util", "tests", "docs", "api"])
        if rnd.random() < 0.03:
            name = rnd.choice(["build", "__pycache__", "local", "cache1", "out"])
        directory = f"{parent}/{name}{len(directories)}".lstrip("/")
        if rnd.random() < 0.04:
            directory = f"{parent}/{name}".lstrip("/")
        if directory in directories:
            continue
        directories.append(directory)
        (root / directory).mkdir(parents=True, exist_ok=True)
    for number in range(files):
        directory = root / directories[number % len(directories)]
        name = f"f{number}{rnd.choice(EXTENSIONS)}"
        if rnd.random() < 0.01:
            data = bytes(rnd.randrange(256) for _ in range(512)) + b"\0TODO"
        else:
            lines = [
                "    " * rnd.randrange(3) + " ".join(rnd.choice(WORDS) for _ in range(7))
                for _ in range(rnd.randrange(10, 60))
            ]
            if rnd.random() < 0.05:
                lines[rnd.randrange(len(lines))] += "  # TODO: revisit"
            data = ("\n".join(lines) + "\n").encode()
        (directory / name).write_bytes(data)
    (root / ".gitignore").write_text(ROOT_IGNORE)
    for directory in directories[1:]:
        if rnd.random() < 0.1:
            (root / directory / ".gitignore").write_text(rnd.choice(NESTED_IGNORES))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(action: Callable[[], object]) -> tuple[float, float, object]:
    """Wall time, CPU time (this process and the processes it waited for), result."""
    wall, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    result = action()
    return (
        time.perf_counter() - wall,
        time.process_time() - cpu + _children_cpu() - children,
        result,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--dirs", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pattern", default="TODO")
    parser.add_argument("--dir", help="where to generate the tree (default: a temp dir)")
    args = parser.parse_args()
    rg = find_rg()
    git = shutil.which("git")
    if rg is None or git is None:
        print("this benchmark needs ripgrep and git", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="editspec-bench-search-", dir=args.dir))
    try:
        root = base / "tree"
        started = time.perf_counter()
        generate(root, args.files, args.dirs)
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        subprocess.run([git, "init", "-q"], cwd=root, check=True, env=env)
        print(
            f"tree: {args.files} files in {args.dirs} directories under {root} "
            f"({time.perf_counter() - started:.1f} s to generate)"
        )
        workspace = Workspace(root, base / "state")
        session = workspace.session("bench")

        def bare_rg() -> object:
            out = subprocess.run(
                [rg, "--no-config", "-n", args.pattern], cwd=root, capture_output=True, check=False
            ).stdout
            return out.count(b"\n")

        def git_ls() -> object:
            out = subprocess.run(
                [
                    git,
                    "-c",
                    f"core.excludesFile={os.devnull}",
                    "ls-files",
                    "-z",
                    "--others",
                    "--exclude-standard",
                ],
                cwd=root,
                capture_output=True,
                check=True,
                env=env,
            ).stdout
            return out.count(b"\0")

        def grep(backend: str) -> Callable[[], object]:
            def run() -> object:
                workspace.grep_backend = backend
                result = session.grep(args.pattern)
                assert result.backend == backend
                return len(result.matches)

            return run

        def glob(pattern: str) -> Callable[[], object]:
            return lambda: len(session.glob(pattern).paths)

        cases: dict[str, Callable[[], object]] = {
            "rg (bare)": bare_rg,
            "grep, rg backend": grep("rg"),
            "grep, python backend": grep("python"),
            "git ls-files -o": git_ls,
            "glob **": glob("**"),
            "glob **/*.py": glob("**/*.py"),
        }
        first: dict[str, float] = {}
        counts: dict[str, object] = {}
        walls: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        for name, action in cases.items():  # the first call of each: caches still cold
            first[name], _cpu, counts[name] = timed(action)
        for _ in range(args.runs):
            for name, action in cases.items():
                wall, cpu, _result = timed(action)
                walls[name].append(wall)
                cpus[name].append(cpu)
        wall = {name: statistics.median(values) for name, values in walls.items()}
        cpu = {name: statistics.median(values) for name, values in cpus.items()}
        print(f"\n{'case':24} {'first':>9} {'wall':>9} {'cpu':>9}  result")
        for name in cases:
            print(
                f"{name:24} {first[name] * 1000:7.1f}ms {wall[name] * 1000:7.1f}ms "
                f"{cpu[name] * 1000:7.1f}ms  {counts[name]}"
            )
        pairs = {
            "grep rg / rg": ("grep, rg backend", "rg (bare)"),
            "grep python / rg": ("grep, python backend", "rg (bare)"),
            "glob ** / git": ("glob **", "git ls-files -o"),
            "glob **/*.py / git": ("glob **/*.py", "git ls-files -o"),
        }
        print(f"\n{'ratio (medians)':24} {'wall':>7} {'cpu':>7}  target (wall)")
        failed = False
        for label, (engine, floor) in pairs.items():
            ratio = wall[engine] / wall[floor]
            cpu_ratio = cpu[engine] / cpu[floor]
            target = TARGETS.get(label)
            verdict = "" if target is None else ("ok" if ratio <= target else "MISSED")
            failed |= verdict == "MISSED"
            goal = f"{target}x {verdict}" if target else ""
            print(f"{label:24} {ratio:6.2f}x {cpu_ratio:6.2f}x  {goal}")
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"\n{os.cpu_count()} CPUs, load average {load:.1f} during the run")
        return 1 if failed else 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
