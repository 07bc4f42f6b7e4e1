"""The grep worker: a deadline or a cancel token stops a regex that backtracks without end.

Every pattern here slips past ``_grep_query``'s syntactic check (it is not a quantifier
nested in another with nothing between them) and keeps Python's ``re`` busy for far longer
than any test runs on its line: exponentially (overlapping alternatives inside a repeat)
or polynomially (``a*a*a*a*a*a*b``, ``(.*?,){11}P``, ``foo.*bar`` on a long line). Each line
holds the pattern's required literals, so no prefilter skips it: the regex really runs.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from editspec.reference import ToolError, Workspace
from editspec.reference.search import _grep_rg, _grep_worker
from editspec.reference.search._grep_query import compile_query

HAVE_RG = _grep_rg.find_rg() is not None
BACKENDS = ["python", pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="no rg"))]

EVIL = [
    (r"(a|aa)+$", "a" * 40 + "b"),
    (r"(a|a?)+$", "a" * 40 + "b"),
    (r"(?:a|a?)+b", "a" * 40 + "cb"),
    (r"(\d+|\w+)+$", "1" * 40 + "!"),
    (r"^(a|b|ab)*c", "ab" * 40 + "xc"),
    (r"(a|ab|b)+c", "ab" * 30 + "xc"),
    (r"((a)|(b)|(ab))+c", "ab" * 30 + "xc"),
    (r"(x|x\s?)+y", "x" * 40 + "zy"),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "a" * 40 + "!"),
    (r"^(a?){30}a{30}$", "a" * 30),
    (r"a*a*a*a*a*a*b", "a" * 500 + "cb"),
    (r"(.*?,){11}P", "1," * 40 + "xP"),
    (r"foo.*bar", "bar" + "foo" * 300_000),
]
DEADLINE = 0.5
MARGIN = 15.0
"""Generous: the machine may be loaded; a hang is unbounded, so any bound tells them apart."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, workspace: Workspace) -> str:
    workspace.grep_backend = request.param
    return str(request.param)


@pytest.mark.parametrize(("pattern", "line"), EVIL, ids=[p for p, _ in EVIL])
def test_a_backtracking_pattern_ends_cancelled_at_its_deadline(
    root: Path, session: Any, backend: str, pattern: str, line: str
) -> None:
    compile_query(pattern)  # the syntactic check lets it through: only the deadline is left
    data = (line + "\nneedle\n").encode()
    (root / "evil.txt").write_bytes(data)
    assert [m.line for m in session.grep("needle").matches] == [2]  # positive control
    started = time.monotonic()
    with pytest.raises(ToolError) as caught:
        session.grep(pattern, deadline=started + DEADLINE)
    elapsed = time.monotonic() - started
    assert caught.value.code == "CANCELLED", caught.value
    assert elapsed < DEADLINE + MARGIN, f"{pattern!r} took {elapsed:.1f} s"
    assert (root / "evil.txt").read_bytes() == data
    # The worker that was stopped mid-match is gone; the next grep gets a fresh one.
    assert [m.line for m in session.grep("need+le").matches] == [2]


def test_a_cancel_token_stops_a_regex_mid_match(root: Path, session: Any, backend: str) -> None:
    (root / "evil.txt").write_text("a" * 40 + "b\n")
    token = threading.Event()
    timer = threading.Timer(0.3, token.set)
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(ToolError) as caught:
            session.grep(r"(a|aa)+$", cancel=token, deadline=started + 3600)
    finally:
        timer.cancel()
    assert caught.value.code == "CANCELLED"
    assert time.monotonic() - started < 0.3 + MARGIN


def test_a_grep_without_a_deadline_gets_the_limit(root: Path, state_dir: Path) -> None:
    from editspec.reference import Limits

    (root / "evil.txt").write_text("a" * 40 + "b\n")
    workspace = Workspace(root, state_dir, Limits(grep_seconds=0.5))
    started = time.monotonic()
    with pytest.raises(ToolError) as caught:
        workspace.session("s").grep(r"(a|aa)+$")
    assert caught.value.code == "CANCELLED"
    assert time.monotonic() - started < 0.5 + MARGIN


def test_an_idle_worker_that_died_is_replaced(root: Path, session: Any) -> None:
    (root / "a.txt").write_text("needle\n")
    assert len(session.grep("needle").matches) == 1
    pool = _grep_worker._POOL
    with pool._lock:
        idle = list(pool._idle)
    assert idle, "a worker is kept for the next call"
    for worker in idle:
        worker.process.kill()
        worker.process.wait()
    assert len(session.grep("needle").matches) == 1


def test_no_worker_outlives_a_stopped_call(root: Path, session: Any) -> None:
    (root / "evil.txt").write_text("a" * 40 + "b\n")
    with pytest.raises(ToolError):
        session.grep(r"(a|aa)+$", deadline=time.monotonic() + DEADLINE)
    workers = _worker_children()
    # What is left are idle workers (the one started to replace the killed one): none of
    # them is still matching, and none is a zombie nobody reaped.
    assert len(workers) <= _grep_worker.IDLE_WORKERS
    for state, cpu_seconds in workers:
        assert state in "SR", state
        assert cpu_seconds < DEADLINE, "the stopped worker is still matching"


def _worker_children() -> list[tuple[str, float]]:
    """(state, CPU seconds) of every grep worker this process started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) != os.getpid() or b"_grep_child" not in command:
            continue
        found.append((fields[0], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")))
    return found


def test_the_worker_answers_files_and_lines_as_the_backend_would() -> None:
    from editspec.reference.search import _grep_child

    queries: dict[tuple[str, bool], Any] = {}
    files = [("a.txt", b"one\nneedle two\n"), ("bin", b"needle\0"), ("b.txt", b"NEEDLE\n")]
    assert _grep_child.answer(("files", "ne+dle", True, files), queries) == [
        ("a.txt", 2, 1, "needle two"),
        ("b.txt", 1, 1, "NEEDLE"),
    ]
    assert _grep_child.answer(("lines", "d+l", False, ["needle", "no", "xddl"]), queries) == [
        4,
        0,
        2,
    ]
    for number in range(_grep_child.KEPT_QUERIES + 1):  # the cache of compiled patterns
        _grep_child.answer(("lines", f"x{number}", False, ["x1"]), queries)
    assert len(queries) <= _grep_child.KEPT_QUERIES


def test_a_request_the_worker_cannot_answer_is_an_io_error() -> None:
    with pytest.raises(ToolError) as caught:
        _grep_worker._call(("lines", "(", False, ["x"]), lambda: None)
    assert caught.value.code == "IO_ERROR"
    assert "grep worker failed" in caught.value.message


def test_what_the_worker_runs_matches_line_by_line() -> None:
    from editspec.reference.search._grep_py import search_bytes

    def found(pattern: str, data: bytes) -> list[tuple[int, int, str]]:
        query = compile_query(pattern)
        return [(m.line, m.column, m.text) for m in search_bytes(query, data, "f")]

    # No required literal: every line is tried; CR before LF is not part of the line.
    assert found(r"\d$", b"a1\r\nb\nc2") == [(1, 2, "a1"), (3, 2, "c2")]
    assert found(r"^$", b"\xef\xbb\xbf\n\nx\n") == [(1, 1, ""), (2, 1, "")]
    # A required literal: only lines around it; CRLF kept out of the text.
    assert found("ne+dle", b"x\r\nneedle\r\n") == [(2, 1, "needle")]
    assert found("needle", b"nothing here\n") == []  # the byte filter rejects the file
    assert found("needle", b"\xef\xbb\xbfneedle") == [(1, 1, "needle")]


def test_concurrent_greps_each_get_a_worker(root: Path, session: Any) -> None:
    (root / "a.txt").write_text("needle\n")
    results: list[int] = []

    def grep() -> None:
        results.append(len(session.grep("ne+dle").matches))

    threads = [threading.Thread(target=grep) for _ in range(_grep_worker.IDLE_WORKERS + 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert results == [1] * len(threads)
    assert len(_grep_worker._POOL._idle) <= _grep_worker.IDLE_WORKERS
