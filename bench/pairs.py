"""Interleaved timing shared by every benchmark: ABAB runs, the median of per-pair ratios.

On a shared machine the load changes from one second to the next, so the time of one run
says little and two medians taken a minute apart say less. Each benchmark here names its
cases (the engine and its floor, or several of each); :func:`interleave` runs them in
rounds, one run of each case per round, the order reversed every other round (A B, B A,
A B, ...) so that neither side always runs first in a warm or a cold cache; and
:func:`ratio` divides, round by round, the engine's time by the floor's from the same
round. The figure reported is the median of these per-round ratios, with their range,
for wall-clock time and for CPU time (the process's own, its threads included, plus the
child processes it waited for; or a case's own CPU clock, such as a server process's).
A pass/fail line uses the median of the wall-clock ratios.
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


def process_cpu() -> float:
    """CPU seconds of this process (all threads) and of the children it waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@dataclass
class Case:
    """One thing to time. ``setup`` runs before each run, untimed; ``cpu`` is its CPU clock."""

    run: Callable[[int], object]
    setup: Callable[[int], object] | None = None
    cpu: Callable[[], float] = process_cpu


@dataclass
class Samples:
    """The times of one case, one entry per timed round."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    first_wall: float = 0.0
    result: object = None

    @property
    def median_wall(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)


def interleave(cases: Mapping[str, Case], runs: int, warmup: int = 1) -> dict[str, Samples]:
    """Run every case once per round, ``warmup`` untimed rounds then ``runs`` timed ones.

    The order of the cases is reversed every other round. The first call of each case
    (cold caches) is kept as ``first_wall``; its result as ``result``.
    """
    samples = {name: Samples() for name in cases}
    names = list(cases)
    for round_ in range(warmup + runs):
        order = names if round_ % 2 == 0 else names[::-1]
        for name in order:
            case = cases[name]
            if case.setup is not None:
                case.setup(round_)
            wall, cpu = time.perf_counter(), case.cpu()
            result = case.run(round_)
            wall, cpu = time.perf_counter() - wall, case.cpu() - cpu
            entry = samples[name]
            if round_ == 0:
                entry.first_wall, entry.result = wall, result
            if round_ >= warmup:
                entry.wall.append(wall)
                entry.cpu.append(cpu)
    return samples


@dataclass(frozen=True)
class Ratio:
    """Per-round ratios engine / floor, wall-clock and CPU."""

    wall: tuple[float, ...]
    cpu: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)

    def text(self) -> str:
        return (
            f"wall {self.median:5.2f}x ({min(self.wall):.2f}-{max(self.wall):.2f})  "
            f"cpu {self.median_cpu:5.2f}x ({min(self.cpu):.2f}-{max(self.cpu):.2f})"
        )


def ratio(samples: Mapping[str, Samples], engine: str, floor: str) -> Ratio:
    """The ratios of ``engine`` to ``floor``, each round's engine time over that round's floor."""
    a, b = samples[engine], samples[floor]
    return Ratio(
        wall=tuple(x / y for x, y in zip(a.wall, b.wall, strict=True)),
        cpu=tuple(x / y if y > 0 else float("inf") for x, y in zip(a.cpu, b.cpu, strict=True)),
    )


def verdict(value: Ratio, target: float) -> str:
    """The pass/fail word of a ratio against its target: on the median of wall ratios."""
    return "ok" if value.median <= target else "MISSED"


def load() -> str:
    """The load average, for the line every benchmark prints with its figures."""
    if not hasattr(os, "getloadavg"):
        return "load unknown"
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def stamp() -> str:
    """Date and load: printed at the start and at the end of every benchmark."""
    return f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {load()}"
