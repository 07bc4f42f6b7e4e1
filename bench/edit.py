"""Benchmark: a one-line Edit of a large file, against a floor measured in the same run.

For each file (1 MiB and 10 MiB, LF and CRLF) it times, as the median of several runs:

* the engine: ``Session.read`` of the whole file, then ``Session.edit`` of one line
  (resolution, locks, freshness check, decoding, matching, diff, atomic replace with
  re-verification, access record), through the public API;
* the floor, timed in alternation with the engine (``pairs.interleave``): what any
  correct one-line edit must do at least: read the bytes, decode, one ``str.replace``,
  encode, write a temp file beside the target, fsync, rename.

and prints the median of the per-round ratios engine / floor with their range, wall-clock
and CPU. Target (median of wall ratios): the 10 MiB edit within 2.0x of its floor.

    python bench/edit.py [--runs 9] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import pairs

from editspec.reference import EditSpec, Workspace

MiB = 1024 * 1024
TARGET_RATIO = 2.0
SIZES = (1 * MiB, 10 * MiB)
NEWLINES = (("lf", "\n"), ("crlf", "\r\n"))


def make_text(size: int, newline: str) -> tuple[str, str]:
    """About ``size`` bytes of code-like lines; returns (text, the unique line to edit)."""
    lines: list[str] = []
    total = 0
    number = 0
    while True:
        line = f"    value_{number:07d} = compute(alpha, beta, {number % 97}) + offset  # note"
        if total + len(line) + len(newline) > size:
            break
        lines.append(line)
        total += len(line) + len(newline)
        number += 1
    target = f"    value_{number // 2:07d} = compute(alpha, beta, {(number // 2) % 97}) + offset"
    return newline.join(lines) + newline, target


def floor_edit(path: str, old: str, new: str) -> None:
    """The least a correct edit does: read, replace once, write a temp, fsync, rename."""
    with open(path, "rb") as source:
        data = source.read()
    text = data.decode("utf-8").replace(old, new, 1)
    temp = f"{path}.floor-tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(text.encode("utf-8"))
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def bench_one(directory: str, size: int, style: str, newline: str, runs: int) -> float:
    text, line = make_text(size, newline)
    edited = line.replace("compute(", "recompute(")
    data = text.encode()
    name = f"bench-{size // MiB}mib-{style}.py"
    floor_path = os.path.join(directory, "floor-" + name)
    engine_root = os.path.join(directory, "ws")
    os.makedirs(engine_root, exist_ok=True)
    with open(floor_path, "wb") as out:
        out.write(data)
    with open(os.path.join(engine_root, name), "wb") as out:
        out.write(data)
    del text, data  # only the files hold the content: neither side inherits a warm copy

    def floor(run: int) -> None:
        old, new = (line, edited) if run % 2 == 0 else (edited, line)
        floor_edit(floor_path, old, new)

    workspace = Workspace(engine_root, os.path.join(directory, "state"))
    session = workspace.session("bench")

    def engine(run: int) -> None:
        old, new = (line, edited) if run % 2 == 0 else (edited, line)
        read = session.read(name, max_bytes=size * 2)
        assert not read.truncated
        result = session.edit(name, [EditSpec(old, new)])
        assert result.replacements[0].count == 1

    samples = pairs.interleave({"floor": pairs.Case(floor), "engine": pairs.Case(engine)}, runs)
    value = pairs.ratio(samples, "engine", "floor")
    print(
        f"{size // MiB:>4} MiB {style:<5} floor {samples['floor'].median_wall * 1000:8.1f} ms   "
        f"engine {samples['engine'].median_wall * 1000:8.1f} ms   {value.text()}"
    )
    os.unlink(floor_path)
    return value.median


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="timed rounds (median of ratios)")
    parser.add_argument("--dir", default=None, help="where to put the files (default: a temp dir)")
    args = parser.parse_args(argv)
    print(
        f"one-line Edit vs floor (median of {args.runs} per-round ratios, range in brackets; "
        f"target <= {TARGET_RATIO}x at 10 MiB)\n{pairs.stamp()}"
    )
    worst_large = 0.0
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="editspec-bench-") as directory:
        for size in SIZES:
            for style, newline in NEWLINES:
                ratio = bench_one(directory, size, style, newline, args.runs)
                if size == max(SIZES):
                    worst_large = max(worst_large, ratio)
    verdict = "meets" if worst_large <= TARGET_RATIO else "misses"
    print(f"10 MiB: worst ratio {worst_large:.2f}x, {verdict} the {TARGET_RATIO}x target")
    print(pairs.stamp())
    return 0 if worst_large <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
