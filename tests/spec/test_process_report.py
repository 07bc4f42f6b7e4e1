"""The failure message of a process (kill) clause: what the disk held comes first."""

from __future__ import annotations

import attrs
import pytest

from editspec.spec.test_process import _verdict


@attrs.frozen
class _Judgement:
    state: str
    strays: tuple[str, ...] = ()

    @property
    def atomic(self) -> bool:
        return self.state in ("before", "after")


@attrs.frozen
class _Run:
    judgement: _Judgement | None
    restart_error: str = ""

    @property
    def problems(self) -> tuple[str, ...]:
        out = [f"restart failed: {self.restart_error}"] if self.restart_error else []
        if self.judgement is not None and not self.judgement.atomic:
            out.append(f"{self.judgement.state} file")
        return tuple(out)


@attrs.frozen
class _Report:
    runs: tuple[_Run, ...]

    def format(self) -> str:  # a kill-site table long enough to be cut in any report
        return "\n".join("  write at " + "x" * 400 for _ in self.runs)

    def during(self) -> tuple[_Run, ...]:
        return self.runs


def test_a_failed_kill_report_names_what_the_disk_held_before_the_table() -> None:
    runs = (
        _Run(_Judgement("torn")),
        _Run(_Judgement("torn")),
        _Run(_Judgement("after", strays=("a.tmp",))),
        _Run(None, restart_error="exit 1"),
        _Run(_Judgement("before")),
    )
    with pytest.raises(AssertionError) as failed:
        _verdict(_Report(runs), strays=False)
    first = str(failed.value).splitlines()[0]
    assert first == "4 of 5 kills broke the files (1 restart failed, 1 strays, 2 torn):"


def test_strays_allowed_and_every_kill_atomic_is_no_failure() -> None:
    runs = (_Run(_Judgement("after", strays=("a.tmp",))), _Run(_Judgement("before")))
    _verdict(_Report(runs), strays=True)  # raises nothing: PASS
