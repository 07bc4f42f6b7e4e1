"""Four processes apply overlapping patches to the same files at once.

Every patch either commits or is rejected as STALE; nobody deadlocks; and the final
tree is the result of some serial order of the committed patches: for every file the
committed changes form one unbroken chain of hashes from its first content to its
last, and the chains of all files agree on one order (the "happened before" graph
they define has no cycle). Workers open their own ``Workspace`` while the others are
mid-transaction, so the recovery each open runs must wait for them, not undo them.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections import defaultdict
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from tests.reference.txn_helpers import SIDE_FILE

FILES = ["a.txt", "b.txt", "sub/c.txt", "sub/deeper/d.txt"]
WORKERS = 4
ROUNDS = 12

WORKER = r"""
import json, os, random, sys, time
from editspec.reference import ToolError, Workspace

root, state, go = sys.argv[1], sys.argv[2], sys.argv[5]
worker, rounds, files = int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[6])
rng = random.Random(worker)
while not os.path.exists(go):
    time.sleep(0.005)
workspace = Workspace(root, state)  # recovers on open, while others may be committing
session = workspace.session(f"worker-{worker}")
for i in range(rounds):
    chosen = rng.sample(files, rng.randint(1, 3))  # unsorted: the engine sorts its locks
    sections = []
    try:
        for path in chosen:
            text = session.read(path).content
            last = text.splitlines()[-1]
            sections.append(f"*** Update File: {path}\n@@\n {last}\n+w{worker}-{i} {path}\n")
        time.sleep(rng.random() * 0.01)  # widen the window between read and apply
        result = session.apply_patch("*** Begin Patch\n" + "".join(sections) + "*** End Patch\n")
    except ToolError as exc:
        print(json.dumps({"worker": worker, "round": i, "status": exc.code}), flush=True)
        continue
    changes = {c.path: [c.old_sha256, c.new_sha256] for c in result.changes}
    print(json.dumps({"worker": worker, "round": i, "status": "applied", "changes": changes}),
          flush=True)
"""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.slow
def test_concurrent_patches_from_processes_serialize(root: Path, state_dir: Path) -> None:
    for path in FILES:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(f"start of {path}\n".encode())
    initial = {path: sha((root / path).read_bytes()) for path in FILES}
    go = state_dir.parent / "go"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(root),
                str(state_dir),
                str(worker),
                str(ROUNDS),
                str(go),
                json.dumps(FILES),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(WORKERS)
    ]
    time.sleep(0.2)
    go.touch()
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=240)  # a deadlock fails here
            assert proc.returncode == 0, err
            outputs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    events = [json.loads(line) for out in outputs for line in out.splitlines()]
    assert len(events) == WORKERS * ROUNDS
    statuses = {event["status"] for event in events}
    assert statuses <= {"applied", "STALE"}, statuses
    applied = [event for event in events if event["status"] == "applied"]
    assert applied, "no patch committed at all"

    # Per file, the committed changes chain from the initial hash to the final one.
    final = {path: sha((root / path).read_bytes()) for path in FILES}
    by_old: dict[str, dict[str, int]] = defaultdict(dict)
    for index, event in enumerate(applied):
        for path, (old, _new) in event["changes"].items():
            assert old not in by_old[path], f"two committed changes of {path} from one state"
            by_old[path][old] = index
    order = TopologicalSorter[int]()
    for index in range(len(applied)):
        order.add(index)
    for path in FILES:
        current, previous, seen = initial[path], None, 0
        while current in by_old[path]:
            index = by_old[path][current]
            if previous is not None:
                order.add(index, previous)  # the file says: previous happened before index
            previous, current = index, applied[index]["changes"][path][1]
            seen += 1
        assert current == final[path], (
            f"{path}: the chain of committed changes does not end on disk"
        )
        assert seen == len(by_old[path]), f"{path}: a committed change is not on the chain"
    try:
        serial = list(order.static_order())
    except CycleError as exc:  # pragma: no cover - the failure being tested for
        pytest.fail(f"no serial order explains the final tree: {exc}")
    assert sorted(serial) == list(range(len(applied)))

    # Replaying the serial order reproduces every file's content, line for line.
    lines = {path: [f"start of {path}"] for path in FILES}
    for index in serial:
        event = applied[index]
        for path in event["changes"]:
            lines[path].append(f"w{event['worker']}-{event['round']} {path}")
    for path in FILES:
        assert (root / path).read_text().splitlines() == lines[path]

    leftovers = [p.name for p in root.rglob("*") if SIDE_FILE.search(p.name)]
    journal = [p for p in (state_dir / "journal").rglob("*") if p.is_file()]
    assert leftovers == [] and journal == []
    stale = sum(1 for event in events if event["status"] == "STALE")
    print(f"\n    {len(applied)} patches committed, {stale} rejected as STALE", end="")
