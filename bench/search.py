"""Benchmark: Glob and Grep on a large tree, against ripgrep and git in the same run.

It generates a tree (default 50 000 files in 2 000 directories, with nested .gitignore
files, ignored build directories, a few binary files; a git repository, so that both
ripgrep and git apply the ignore files) in a temporary directory and times, in
interleaved rounds after one warm-up (``pairs.interleave``):

* bare ``rg PATTERN`` at the root (ripgrep's own walk and ignore rules): the floor for Grep;
* ``Session.grep`` with the ripgrep backend and with the Python backend;
* ``git ls-files --others --exclude-standard``: the floor for Glob;
* ``Session.glob("**")`` (the same listing as git's, plus directories, sorted by mtime)
  and ``Session.glob("**/*.py")``.

Targets: Grep with ripgrep within 1.3x of bare rg, the Python backend within 5x of rg,
Glob within 3x of git ls-files, each on the median of the per-round wall-clock ratios
(printed with their range and the CPU ratios). Exit status 1 when one is missed.

    python bench/search.py [--files 50000] [--dirs 2000] [--runs 7] [--pattern TODO]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pairs

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--dirs", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=7)
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
        print(pairs.stamp())
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
        samples = pairs.interleave(
            {name: pairs.Case(lambda _run, act=action: act()) for name, action in cases.items()},
            args.runs,
        )
        print(f"\n{'case':24} {'first':>9} {'wall':>9} {'cpu':>9}  result")
        for name, entry in samples.items():
            print(
                f"{name:24} {entry.first_wall * 1000:7.1f}ms {entry.median_wall * 1000:7.1f}ms "
                f"{entry.median_cpu * 1000:7.1f}ms  {entry.result}"
            )
        ratios = {
            "grep rg / rg": ("grep, rg backend", "rg (bare)"),
            "grep python / rg": ("grep, python backend", "rg (bare)"),
            "glob ** / git": ("glob **", "git ls-files -o"),
            "glob **/*.py / git": ("glob **/*.py", "git ls-files -o"),
        }
        print(f"\n{'median of per-round ratios (range)':24}")
        failed = False
        for label, (engine, floor) in ratios.items():
            value = pairs.ratio(samples, engine, floor)
            target = TARGETS.get(label)
            goal = f"target {target}x: {pairs.verdict(value, target)}" if target else ""
            failed |= "MISSED" in goal
            print(f"{label:20} {value.text()}  {goal}")
        print(pairs.stamp())
        return 1 if failed else 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
