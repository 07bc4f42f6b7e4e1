"""LOCK: concurrent sessions, threads and processes lose no update (DESIGN §4 "Concurrency")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

from editspec.reference import EditSpec
from editspec.spec import MUST, clause, prepare_change, raises_code, run_concurrently, within
from editspec.spec._child import insert_markers, start_now

THREADS = 6
EDITS_PER_THREAD = 4
PROCESSES = 3
EDITS_PER_PROCESS = 12


def _run_threads(workers: list[Callable[[], None]], *, seconds: float = 120) -> None:
    """Start all workers together; a worker that dies fails the clause, and so does one
    still running after ``seconds``."""
    run_concurrently(*workers, timeout=seconds)


def _open_sessions(driver, names: list[str]) -> list:
    """The sessions of a race, opened together before it starts (as LOCK-003's processes
    open theirs before the go signal): the race is between the calls, not between the
    sessions' start-ups, which may take seconds where a session is a process."""
    return run_concurrently(*[lambda name=name: driver.open_session(name) for name in names],
                            timeout=120)  # fmt: skip


def _assert_markers_once(text: str, applied: list[str]) -> None:
    lines = text.splitlines()
    for marker in applied:
        assert lines.count(marker) == 1, f"{marker} appears {lines.count(marker)} times"
    assert lines[-1] == "END"
    assert len(lines) == len(applied) + 1, f"unexpected lines: {sorted(set(lines) - set(applied))}"


@clause(
    "LOCK-001",
    MUST,
    requires={"edit"},
    text="Concurrent edits of one file from many threads and sessions lose no update: each is "
    "applied or rejected as STALE, and the final content holds every applied edit exactly once.",
    rationale="Read-modify-write without a lock around the freshness check and the publish "
    "loses one of two simultaneous edits, silently.",
)
def test_threads_lose_no_edit(driver, disk):
    disk.write("log.txt", "END\n")
    results: list[dict[str, list[str]]] = []

    sessions = _open_sessions(driver, [f"thread-{index}" for index in range(THREADS)])

    def worker(index: int) -> None:
        session = sessions[index]
        markers = [f"t{index}-{n}" for n in range(EDITS_PER_THREAD)]
        results.append(insert_markers(session, "log.txt", markers))

    _run_threads([lambda i=i: worker(i) for i in range(THREADS)])
    errors = [error for result in results for error in result["errors"]]
    assert not errors, errors
    applied = [marker for result in results for marker in result["applied"]]
    assert len(applied) == THREADS * EDITS_PER_THREAD
    _assert_markers_once(disk.read("log.txt").decode(), applied)


@clause(
    "LOCK-002",
    MUST,
    requires={"read", "write", "stale_detection"},
    text="Concurrent read-modify-write cycles with whole-file writes lose no update: a write "
    "computed from an outdated read is STALE.",
    rationale="The lost-update race is the same for Write as for Edit, and more destructive.",
)
def test_threads_lose_no_write(driver, disk):
    disk.write("counter.txt", "")
    first, second = driver.open_session("writer-x"), driver.open_session("writer-y")
    first.read("counter.txt")
    first.write("counter.txt", "x0\n")  # unchanged since the read: accepted
    second.read("counter.txt")
    second.write("counter.txt", "y\n")
    with raises_code("STALE"):  # computed from a read older than the other session's write
        first.write("counter.txt", "x\n")
    assert disk.read("counter.txt") == b"y\n", "the other session's write was lost"
    disk.write("counter.txt", "")
    errors: list[str] = []
    applied: list[str] = []

    sessions = _open_sessions(driver, [f"writer-{index}" for index in range(THREADS)])

    def worker(index: int) -> None:
        session = sessions[index]
        for n in range(EDITS_PER_THREAD):
            marker = f"w{index}-{n}"
            for _ in range(500):
                current = session.read("counter.txt").content
                try:
                    session.write("counter.txt", current + marker + "\n")
                except Exception as exc:
                    if getattr(exc, "code", None) == "STALE":
                        continue
                    errors.append(f"{marker}: {getattr(exc, 'code', type(exc).__name__)}: {exc}")
                    return
                applied.append(marker)
                break
            else:
                errors.append(f"{marker}: still STALE after 500 attempts")

    _run_threads([lambda i=i: worker(i) for i in range(THREADS)])
    assert not errors, errors
    lines = disk.read("counter.txt").decode().splitlines()
    assert sorted(lines) == sorted(applied), "an applied write is missing or doubled"
    assert len(applied) == THREADS * EDITS_PER_THREAD


@clause(
    "LOCK-003",
    MUST,
    requires={"edit"},
    text="Concurrent edits of one file from several processes, each with its own instance of the "
    "implementation over the same root and state directory, lose no update.",
    rationale="In-process locks do not stop a second agent process (or a second IDE window) "
    "from racing the first.",
)
def test_processes_lose_no_edit(
    driver, driver_spec, disk, workspace_root, state_dir, editspec_base
):
    disk.write("shared.txt", "END\n")
    processes = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    go = editspec_base / "go"
    ready = [editspec_base / f"ready-{index}" for index in range(PROCESSES)]
    # Every racer has started before the barrier opens, this process's own too: a server
    # started on first use would otherwise start after it, each seconds apart, and the
    # edits would not race at all.
    start_now(driver)
    for index in range(PROCESSES):
        args = {
            "driver": driver_spec.to_dict(),
            "root": str(workspace_root),
            "state_dir": str(state_dir),
            "session": f"process-{index}",
            "path": "shared.txt",
            "markers": [f"p{index}-{n}" for n in range(EDITS_PER_PROCESS)],
            "ready": str(ready[index]),
            "go": str(go),
        }
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "editspec.spec._child", json.dumps(args)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        )
    deadline = time.monotonic() + 60
    while not all(path.exists() for path in ready) and time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            break
        time.sleep(0.01)
    parent_session = driver.open_session("parent")  # opened before the go, as the children's
    go.touch()
    # This process's own instance races the children.
    parent_markers = [f"parent-{n}" for n in range(EDITS_PER_PROCESS)]
    parent = insert_markers(parent_session, "shared.txt", parent_markers)
    assert not parent["errors"], parent["errors"]
    applied: list[str] = list(parent["applied"])
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode(errors="replace")[-2000:]
        summary = json.loads(out.decode().strip().splitlines()[-1])
        assert not summary["errors"], summary["errors"]
        applied += summary["applied"]
    assert len(applied) == (PROCESSES + 1) * EDITS_PER_PROCESS
    _assert_markers_once(disk.read("shared.txt").decode(), applied)


@clause(
    "LOCK-004",
    MUST,
    requires={"edit"},
    text="Two names of one file (a symlink and its target) share one lock: concurrent edits "
    "through both names lose no update.",
    rationale="Locks keyed by the spelled path let an alias run its read-modify-write beside "
    "the original's.",
)
def test_aliases_share_one_lock(driver, disk, alias):
    disk.write("real.txt", "END\n")
    alias.symlink("link.txt", "real.txt")
    results: list[dict[str, list[str]]] = []

    sessions = _open_sessions(driver, [f"alias-{index}" for index in range(THREADS)])

    def worker(index: int) -> None:
        session = sessions[index]
        name = "link.txt" if index % 2 else "real.txt"
        markers = [f"a{index}-{n}" for n in range(EDITS_PER_THREAD)]
        results.append(insert_markers(session, name, markers))

    _run_threads([lambda i=i: worker(i) for i in range(THREADS)])
    errors = [error for result in results for error in result["errors"]]
    assert not errors, errors
    applied = [marker for result in results for marker in result["applied"]]
    _assert_markers_once(disk.read("real.txt").decode(), applied)
    assert disk.is_symlink("link.txt")


def _patch(first: str, second: str, who: str, old: int, new: int) -> str:
    hunk = f"@@\n-{who}: {old}\n+{who}: {new}\n"
    return (
        "*** Begin Patch\n"
        f"*** Update File: {first}\n{hunk}"
        f"*** Update File: {second}\n{hunk}"
        "*** End Patch\n"
    )


@clause(
    "LOCK-005",
    MUST,
    requires={"apply_patch"},
    text="Multi-file patches that name the same files in opposite orders, applied concurrently, "
    "neither deadlock nor lose an update.",
    rationale="Taking per-file locks in the order a patch lists them deadlocks two patches that "
    "list the files the other way round.",
)
def test_opposite_order_patches_do_not_deadlock(driver, disk):
    for name in ("a.txt", "b.txt"):
        disk.write(name, "x: 0\ny: 0\n")
    rounds = 15
    errors: list[str] = []

    def worker(who: str, first: str, second: str) -> None:
        session = driver.open_session(f"patcher-{who}")
        for n in range(rounds):
            for _ in range(500):
                prepare_change(session, first, second)
                try:
                    session.apply_patch(_patch(first, second, who, n, n + 1))
                except Exception as exc:
                    if getattr(exc, "code", None) == "STALE":
                        continue
                    errors.append(
                        f"{who} round {n}: {getattr(exc, 'code', type(exc).__name__)}: {exc}"
                    )
                    return
                break
            else:
                errors.append(f"{who} round {n}: still STALE after 500 attempts")
                return

    _run_threads(
        [lambda: worker("x", "a.txt", "b.txt"), lambda: worker("y", "b.txt", "a.txt")], seconds=120
    )
    assert not errors, errors
    for name in ("a.txt", "b.txt"):
        assert disk.read(name) == f"x: {rounds}\ny: {rounds}\n".encode(), name


@clause(
    "LOCK-006",
    MUST,
    requires={"write", "read_before_write"},
    text="When several sessions create the same new file at once, exactly one succeeds, the file "
    "holds its content, and the others fail with NOT_READ, STALE or ALREADY_EXISTS.",
    rationale="Two creators that both saw 'does not exist' and both publish make the first "
    "one's file vanish under the second.",
)
def test_concurrent_creates(driver, disk):
    sessions = _open_sessions(driver, [f"creator-{index}" for index in range(THREADS)])
    for round_number in range(5):
        name = f"new-{round_number}.txt"
        outcomes: dict[int, str] = {}

        def worker(index: int, name: str = name, outcomes: dict[int, str] = outcomes) -> None:
            session = sessions[index]
            try:
                session.write(name, f"written by {index}\n")
            except Exception as exc:
                outcomes[index] = str(getattr(exc, "code", None) or f"{type(exc).__name__}: {exc}")
            else:
                outcomes[index] = "ok"

        _run_threads([lambda i=i: worker(i) for i in range(THREADS)])
        winners = [index for index, outcome in outcomes.items() if outcome == "ok"]
        assert len(winners) == 1, f"round {round_number}: {outcomes}"
        losers = {outcome for outcome in outcomes.values() if outcome != "ok"}
        assert losers <= {"NOT_READ", "STALE", "ALREADY_EXISTS"}, outcomes
        assert disk.read(name) == f"written by {winners[0]}\n".encode()
    # A late creator, which has not read the file the winner made, is refused the same way.
    late = driver.open_session("late-creator")
    late.write("own.txt", "a new file needs no read\n")
    assert disk.read("own.txt") == b"a new file needs no read\n"
    with raises_code("NOT_READ"):
        late.write("new-0.txt", "written late\n")
    assert disk.read("new-0.txt").startswith(b"written by ")


@clause(
    "LOCK-007",
    MUST,
    requires={"edit"},
    text="Concurrent edits of different files do not interfere: every one succeeds.",
    rationale="A workspace-wide lock or a shared record turns independent work into spurious "
    "STALE errors.",
)
def test_different_files_do_not_interfere(driver, disk):
    for index in range(THREADS):
        disk.write(f"f{index}.txt", "END\n")
    results: list[dict[str, list[str]]] = []

    sessions = _open_sessions(driver, [f"solo-{index}" for index in range(THREADS)])

    def worker(index: int) -> None:
        session = sessions[index]
        markers = [f"s{index}-{n}" for n in range(EDITS_PER_THREAD)]
        results.append(insert_markers(session, f"f{index}.txt", markers, attempts=1))

    _run_threads([lambda i=i: worker(i) for i in range(THREADS)])
    errors = [error for result in results for error in result["errors"]]
    assert not errors, errors
    for index in range(THREADS):
        expected = [f"s{index}-{n}" for n in range(EDITS_PER_THREAD)]
        assert disk.read(f"f{index}.txt").decode().splitlines() == [*expected, "END"]


@clause(
    "LOCK-008",
    MUST,
    requires={"edit"},
    text="A failed operation releases its locks: after an edit fails with NO_MATCH, another "
    "session edits the same file promptly.",
    rationale="A lock leaked on an error path blocks the file until the process dies.",
)
def test_failure_releases_the_lock(session, other_session, disk):
    disk.write("a.txt", "one\n")
    prepare_change(session, "a.txt")
    session.edit("a.txt", [EditSpec("one", "two")])
    assert disk.read("a.txt") == b"two\n"
    before = disk.snapshot()
    with raises_code("NO_MATCH"):
        session.edit("a.txt", [EditSpec("absent", "x")])
    disk.assert_unchanged(before)

    def other_edits() -> None:
        prepare_change(other_session, "a.txt")
        other_session.edit("a.txt", [EditSpec("two", "2")])

    within(10, other_edits, what="an edit after a failed one")
    assert disk.read("a.txt") == b"2\n"


@clause(
    "LOCK-009",
    MUST,
    requires={"read", "edit", "stale_detection"},
    text="A stale refusal releases its locks: after an edit fails with STALE, another session "
    "edits the same file promptly.",
    rationale="The freshness check runs with the file locked; a refusal that returns early "
    "without unlocking blocks every later writer.",
)
def test_stale_refusal_releases_the_lock(session, other_session, disk, external):
    disk.write("a.txt", "one\n")
    session.read("a.txt")
    session.edit("a.txt", [EditSpec("one", "two")])
    external.write("a.txt", "three\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.edit("a.txt", [EditSpec("three", "3")])
    disk.assert_unchanged(before)

    def other_edits() -> None:
        other_session.read("a.txt")
        other_session.edit("a.txt", [EditSpec("three", "3")])

    within(10, other_edits, what="an edit after a stale refusal")
    assert disk.read("a.txt") == b"3\n"
