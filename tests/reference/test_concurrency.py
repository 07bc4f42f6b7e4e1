"""Concurrent edits of one file lose no update (DESIGN §4 "Concurrency", LOCK-*).

Each worker, in its own session, reads the file, then appends one unique token line
after the last line it saw (old_string = that line). An edit is either applied or
rejected as STALE; the final file must then be one chain ``start -> t1 -> t2 -> ...``
in which every applied token appears exactly once, right after the line it anchored
on: that is exactly the result of applying the applied edits serially in that order.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from editspec.reference import EditSpec, Session, ToolError, Workspace

START = "start"
THREADS = 8
EDITS_PER_THREAD = 50


def token(worker: int, index: int) -> str:
    return f"<w{worker:02d}:{index:03d}>"


def append_after_last_line(session: Session, name: str, new_line: str) -> str | None:
    """One attempt: read, then edit. The anchor it used, or None when rejected as STALE."""
    content = session.read(name, max_bytes=1 << 24).content
    last = content.splitlines()[-1]
    try:
        session.edit(name, [EditSpec(last + "\n", f"{last}\n{new_line}\n")])
    except ToolError as error:
        if error.code != "STALE":
            raise
        return None
    return last


def check_serial(final: bytes, applied: dict[str, str], rejected: set[str]) -> None:
    """``final`` is the serial application of ``applied`` (token -> anchor) in some order."""
    lines = final.decode().split("\n")
    assert lines[-1] == "", "the file ends with a newline"
    lines = lines[:-1]
    assert lines[0] == START
    chain = lines[1:]
    assert len(chain) == len(set(chain)), "a token was applied twice"
    assert set(chain) == set(applied), "an applied edit is missing, or a phantom one appeared"
    assert not set(chain) & rejected, "an edit reported as STALE reached the file"
    for previous, current in zip(lines, chain, strict=False):
        assert applied[current] == previous, f"{current} was applied after {previous}"


def test_threads_through_two_aliases_lose_no_update(root: Path, state_dir: Path) -> None:
    real = root / "shared.txt"
    real.write_bytes(f"{START}\n".encode())
    (root / "alias.txt").symlink_to("shared.txt")
    workspace = Workspace(root, state_dir)
    applied: dict[str, str] = {}
    rejected: set[str] = set()
    failures: list[BaseException] = []
    record = threading.Lock()
    barrier = threading.Barrier(THREADS)

    def worker(number: int) -> None:
        session = workspace.session(f"thread-{number}")
        name = "alias.txt" if number % 2 else "shared.txt"
        try:
            barrier.wait()
            for index in range(EDITS_PER_THREAD):
                new_line = token(number, index)
                anchor = append_after_last_line(session, name, new_line)
                with record:
                    if anchor is None:
                        rejected.add(new_line)
                    else:
                        applied[new_line] = anchor
        except BaseException as exc:  # surfaced below, with the thread's traceback
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(number,)) for number in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert len(applied) + len(rejected) == THREADS * EDITS_PER_THREAD
    assert applied, "no edit was applied at all"
    check_serial(real.read_bytes(), applied, rejected)
    assert (root / "alias.txt").is_symlink()
    assert sorted(path.name for path in root.iterdir()) == ["alias.txt", "shared.txt"]


_CHILD = """
import json, sys
from editspec.reference import EditSpec, ToolError, Workspace

root, state_dir, name, worker, count = sys.argv[1:6]
session = Workspace(root, state_dir).session(f"process-{worker}")
applied, rejected = {}, []
for index in range(int(count)):
    new_line = f"<p{int(worker):02d}:{index:03d}>"
    last = session.read(name, max_bytes=1 << 24).content.splitlines()[-1]
    try:
        session.edit(name, [EditSpec(last + "\\n", f"{last}\\n{new_line}\\n")])
    except ToolError as error:
        if error.code != "STALE":
            raise
        rejected.append(new_line)
    else:
        applied[new_line] = last
print(json.dumps({"applied": applied, "rejected": rejected}))
"""


def test_processes_through_two_aliases_lose_no_update(root: Path, state_dir: Path) -> None:
    real = root / "shared.txt"
    real.write_bytes(f"{START}\n".encode())
    (root / "alias.txt").symlink_to("shared.txt")
    processes, count = 3, 30
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _CHILD,
                str(root),
                str(state_dir),
                "alias.txt" if worker % 2 else "shared.txt",
                str(worker),
                str(count),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(processes)
    ]
    applied: dict[str, str] = {}
    rejected: set[str] = set()
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        report = json.loads(out)
        applied.update(report["applied"])
        rejected.update(report["rejected"])
    assert len(applied) + len(rejected) == processes * count
    assert applied
    check_serial(real.read_bytes(), applied, rejected)
