"""The plugin's run state: the progress lines of a long run."""

from __future__ import annotations

import io

from editspec.spec import _run_state
from editspec.spec._run_state import EditspecState


class _Config:
    """The options ``EditspecState`` reads, with progress asked for."""

    def getoption(self, name: str):
        return {"editspec_progress": True, "editspec_report": []}.get(name)


def _state(monkeypatch, *, tty: bool) -> tuple[EditspecState, io.StringIO]:
    err = io.StringIO()
    err.isatty = lambda: tty  # type: ignore[method-assign]
    monkeypatch.setattr(_run_state.sys, "stderr", err)
    state = EditspecState(_Config())
    state.total = 5
    return state, err


def test_a_log_gets_a_plain_line_per_period(monkeypatch):
    state, err = _state(monkeypatch, tty=False)
    clock = iter([0.0, 30.0, 61.0, 62.0, 130.0])
    monkeypatch.setattr(_run_state.time, "monotonic", lambda: next(clock))
    state.started = state.progress_shown = 0.0
    for _ in range(4):
        state.count_clause_done()
    # the clauses end at 0, 30, 61 and 62 s: one line, for the third (60 s had passed)
    assert err.getvalue() == "editspec: 3/5 clause tests run (1m01s)\n"
    state.count_clause_done()  # the last clause: the table follows, no line
    assert err.getvalue().count("\n") == 1


def test_a_terminal_gets_one_line_rewritten(monkeypatch):
    state, err = _state(monkeypatch, tty=True)
    for _ in range(5):
        state.count_clause_done()
    text = err.getvalue()
    assert "\n" not in text
    assert text.startswith("\reditspec: 1/5 clause tests run")
    assert text.endswith("\reditspec: 5/5 clause tests run\r\x1b[K")
