"""The explorer's results: one ``Row`` per scenario, shards and merges of them, the
table printed at the end and the progress bar drawn while they fill.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any, TextIO

import attrs


@attrs.define
class Row:
    scenario: str
    crash_points: int = 0
    recovery_crashes: int = 0
    power_states: int = 0
    passed: int = 0
    failed: int = 0
    notes: int = 0
    seconds: float = 0.0
    bounded: bool = False
    process: bool = False  # a server traced by strace: no crash of its recovery
    power: bool = False  # a process row whose power-loss states were checked

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Row:
        return cls(**value)

    @property
    def checked(self) -> int:
        return self.passed + self.failed


def shard_of(items: Sequence[Any], shard: tuple[int, int] | None) -> list[Any]:
    """The K-th of N deterministic, interleaved slices of ``items`` (all of them without
    a shard): every item is in exactly one shard, and the shards are about equal."""
    if shard is None:
        return list(items)
    number, count = shard
    return list(items[number - 1 :: count])


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N), 1 <= K <= N."""
    try:
        number, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shard is K/N, not {text!r}") from None
    if not 1 <= number <= count:
        raise argparse.ArgumentTypeError(f"a shard K/N needs 1 <= K <= N, not {text!r}")
    return number, count


def merge_rows(parts: Sequence[Sequence[Row]]) -> list[Row]:
    """Rows of several shards of one exploration, summed per scenario (first-seen order)."""
    merged: dict[str, Row] = {}
    for rows in parts:
        for row in rows:
            into = merged.setdefault(row.scenario, Row(row.scenario, process=row.process))
            for field in ("crash_points", "recovery_crashes", "power_states", "passed"):
                setattr(into, field, getattr(into, field) + getattr(row, field))
            into.failed += row.failed
            into.notes += row.notes
            into.seconds += row.seconds
            into.bounded = into.bounded or row.bounded
            into.power = into.power or row.power
    return list(merged.values())


class Progress:
    """A plain-text progress bar on a stream (stderr), drawn only when it is a terminal."""

    def __init__(self, total: int, stream: TextIO, *, width: int = 30) -> None:
        self.total, self.done, self.stream, self.width = total, 0, stream, width
        self.started = time.perf_counter()
        self.interactive = stream.isatty()
        self._last = -1.0

    def advance(self, tasks: int, states: int, failed: int) -> None:
        self.done += tasks
        if not self.interactive:
            return  # a bar is for a person at a terminal; a log gets the table only
        now = time.perf_counter()
        self._last = now
        filled = self.width * self.done // max(self.total, 1)
        rate = states / max(now - self.started, 1e-9)
        line = (
            f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} tasks, "
            f"{states} states, {failed} failed, {rate:.0f}/s"
        )
        self.stream.write("\r" + line)
        self.stream.flush()

    def finish(self) -> None:
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()


def _rate(checked: int, seconds: float) -> str:
    if not seconds:
        return "-"
    rate = checked / seconds
    return f"{rate:.1f}" if rate < 10 else f"{rate:.0f}"


def format_table(rows: Sequence[Row], model: str, wall: float) -> str:
    header = (
        "scenario",
        "crash points",
        "recovery crashes",
        f"power-loss ({model})" if model != "-" else "power-loss",
        "passed",
        "failed",
        "stray temps",
        "states/s",
    )
    body: list[tuple[str, ...]] = [
        (
            row.scenario,
            str(row.crash_points),
            "-" if row.process else str(row.recovery_crashes),
            "-"
            if row.process and not row.power
            else f"{row.power_states}{' (bounded)' if row.bounded else ''}",
            str(row.passed),
            str(row.failed),
            str(row.notes),
            _rate(row.checked, row.seconds),
        )
        for row in rows
    ]
    total_checked = sum(row.checked for row in rows)
    processes = bool(rows) and all(row.process for row in rows)

    def total(field: str) -> str:
        if processes and field == "recovery_crashes":
            return "-"
        if processes and field == "power_states" and not any(row.power for row in rows):
            return "-"
        return str(sum(getattr(row, field) for row in rows))

    fields = ("crash_points", "recovery_crashes", "power_states", "passed", "failed", "notes")
    body.append(("total", *(total(f) for f in fields), _rate(total_checked, wall)))
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]

    def fmt(line: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(header), rule, *(fmt(line) for line in body[:-1]), rule, fmt(body[-1])])
