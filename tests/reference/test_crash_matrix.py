"""Crash and I/O-error matrices over a transaction's publish and over its recovery.

Every counted file-system operation of ``commit`` is in turn (a) the crash point of a
run, after which a fresh workspace recovers; (b) the crash point, and then every
operation of the recovery is the crash point of a second run, after which another
recovery runs; (c) the failure point for each injected errno. The disk is compared
byte for byte (and mode) with the state before or after, and no stage file, backup or
journal may be left.

Which state is right: the commit point is the rename of the journal to ``committed``.
A crash *at* it (the rename does not happen) or before it recovers to all-before; a
crash after it to all-after. An injected error before the commit point is rolled back
in-process and the call raises (all-before, with nothing left and no recovery needed).
The commit record is durable once the journal directory is fsynced after that rename:
an error at that fsync revokes the commit (its revocation appended to the record's own
file, then an in-process rollback), so the call raises IO_ERROR with all-before. An
error after it cannot undo the change -- the commit record is durable, and so are the
files -- so the call succeeds with all-after; any cleanup it could not do is left to
the next recovery. Raising there would report a failure for a change that stands, which
the error contract forbids.

Durability is not under test here (the power-loss model is): ``fsync`` is a no-op in the
inner file system so the matrix stays fast; the wrapper still counts and faults it.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from editspec.fault_injection import CrashAt, FailAt, FaultyFileSystem, OpEvent, SimulatedCrash
from editspec.reference import FileSystem, ToolError, Workspace
from editspec.reference.snapshots._snapshots import _TEMP_PREFIX as SNAPSHOT_TEMP_PREFIX
from editspec.reference.transactions._plan import PlannedChange
from editspec.reference.transactions._transaction import commit
from tests.reference.txn_helpers import SIDE_FILE, wpath

ERRNOS = (errno.ENOSPC, errno.EIO, errno.EACCES, errno.EXDEV, errno.EROFS)

State = tuple[dict[str, tuple[bytes, int]], frozenset[str]]


class NoSync(FileSystem):
    """Real operations without the wait for the disk, and without the per-call walk from
    ``/`` (symlink races are not under test here), so thousands of runs take seconds."""

    def __init__(self) -> None:
        super().__init__(secure_walk=False)

    def fsync(self, fd: int) -> None:
        return None

    def fsync_dir(self, path: str) -> None:
        return None


def new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@attrs.frozen
class Scenario:
    name: str
    before: dict[str, tuple[bytes, int]]
    after: dict[str, tuple[bytes, int]]
    after_dirs: frozenset[str]
    changes: Callable[[Workspace], list[PlannedChange]]
    #: None: ``commit`` the changes directly; else the call that makes them.
    through: Callable[[Workspace], object] | None = None

    def operate(self, ws: Workspace) -> object:
        if self.through is not None:
            return self.through(ws)
        return commit(ws, self.changes(ws))

    @property
    def before_dirs(self) -> frozenset[str]:
        return frozenset(
            "/".join(path.split("/")[:i])
            for path in self.before
            for i in range(1, path.count("/") + 1)
        )


def ten_file_update() -> Scenario:
    names = [f"d{i % 3}/f{i}.txt" for i in range(10)]
    before = {
        name: (f"old {name}\n".encode() * (i + 1), 0o644 if i % 2 else 0o600)
        for i, name in enumerate(names)
    }
    after = {
        name: (f"new {name}\r\n".encode() * (10 - i), before[name][1])
        for i, name in enumerate(names)
    }

    def changes(ws: Workspace) -> list[PlannedChange]:
        return [
            PlannedChange(
                op="update",
                target=wpath(ws, name),
                old_bytes=before[name][0],
                new_bytes=after[name][0],
            )
            for name in names
        ]

    return Scenario(
        "10-file update in 3 dirs", before, after, frozenset({"d0", "d1", "d2"}), changes
    )


def add_delete_move() -> Scenario:
    mode = new_file_mode()
    before = {
        "src/m.txt": (b"to be moved\n", 0o640),
        "src/stay.txt": (b"untouched\n", 0o644),
        "old/gone.txt": (b"to be deleted\n", 0o644),
        "top.txt": (b"top v1\n", 0o644),
    }
    after = {
        "src/stay.txt": before["src/stay.txt"],
        "old/..keep": (b"", mode),
        "top.txt": (b"top v2\n", 0o644),
        "new/a/b/c.txt": (b"added deep\n", mode),
        "new/a/x/y/m.txt": (b"moved and changed\n", 0o640),
        "new/z.txt": (b"added\n", mode),
    }
    del after["old/..keep"]

    def changes(ws: Workspace) -> list[PlannedChange]:
        return [
            PlannedChange(op="add", target=wpath(ws, "new/a/b/c.txt"), new_bytes=b"added deep\n"),
            PlannedChange(
                op="delete", target=wpath(ws, "old/gone.txt"), old_bytes=b"to be deleted\n"
            ),
            PlannedChange(
                op="move",
                target=wpath(ws, "src/m.txt"),
                move_to=wpath(ws, "new/a/x/y/m.txt"),
                old_bytes=b"to be moved\n",
                new_bytes=b"moved and changed\n",
            ),
            PlannedChange(
                op="update",
                target=wpath(ws, "top.txt"),
                old_bytes=b"top v1\n",
                new_bytes=b"top v2\n",
            ),
            PlannedChange(op="add", target=wpath(ws, "new/z.txt"), new_bytes=b"added\n"),
        ]

    return Scenario(
        "add + delete + move into new nested dirs",
        before,
        after,
        frozenset({"src", "old", "new", "new/a", "new/a/b", "new/a/x", "new/a/x/y"}),
        changes,
    )


PATCH = """*** Begin Patch
*** Add File: new/a/b/c.txt
+added deep
*** Delete File: old/gone.txt
*** Update File: src/m.txt
*** Move to: new/a/x/y/m.txt
@@
-to be moved
+moved and changed
*** Update File: top.txt
@@
-top v1
+top v2
*** Add File: new/z.txt
+added
*** End Patch
"""


SESSION_NUMBERS = itertools.count()


def through_apply_patch() -> Scenario:
    """The same change made by ``Session.apply_patch``: snapshots are created before the
    journal (``on_prepared``) and confirmed after the commit point."""

    def apply(ws: Workspace) -> object:
        # A new session each run: its snapshot blobs are written afresh every time (they
        # are content-addressed per session), so every run counts the same operations.
        session = ws.session(f"agent-{next(SESSION_NUMBERS)}")
        for path in ("src/m.txt", "old/gone.txt", "top.txt"):
            session.read(path)
        return session.apply_patch(PATCH, message_id="m1")

    return attrs.evolve(
        add_delete_move(), name="the same through Session.apply_patch", through=apply
    )


SCENARIOS = [ten_file_update(), add_delete_move(), through_apply_patch()]


# -- the harness -----------------------------------------------------------------------------


class Lab:
    """One root and state directory per matrix, reset to the scenario's "before" tree
    between runs (cheaper than a fresh directory per run on a slow disk)."""

    def __init__(self, base: Path, scenario: Scenario) -> None:
        self.root, self.state = base / "ws", base / "state"
        self.root.mkdir()
        self.state.mkdir()
        self.scenario = scenario
        self.reset()
        # Warm up: the lock, journal and snapshot directories now exist, so every later
        # run of the same operation counts the same operations.
        ws = Workspace(self.root, self.state, fs=NoSync())
        scenario.operate(ws)
        self.reset()

    def reset(self) -> None:
        before = self.scenario.before
        for path in sorted(self.root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            relative = path.relative_to(self.root).as_posix()
            if path.is_dir() and not path.is_symlink():
                if relative not in self.scenario.before_dirs:
                    path.rmdir()
            elif relative not in before:
                path.unlink()
        for relative, (data, mode) in before.items():
            path = self.root / relative
            try:
                info = path.lstat()
                if stat.S_IMODE(info.st_mode) == mode and path.read_bytes() == data:
                    continue  # rolled back: the original file is in place
                path.unlink()
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
            # A new file rather than a truncated one: ext4 flushes truncated files on close.
            path.write_bytes(data)
            path.chmod(mode)

    def fresh(self, scenario: Scenario) -> tuple[Path, Path]:
        assert scenario is self.scenario
        return self.root, self.state

    def done(self, root: Path) -> None:
        self.reset()


def disk_state(root: Path) -> State:
    files: dict[str, tuple[bytes, int]] = {}
    directories: set[str] = set()
    for path in root.rglob("*"):
        relative = path.relative_to(root).as_posix()
        if path.is_dir():
            directories.add(relative)
        else:
            files[relative] = (path.read_bytes(), stat.S_IMODE(path.lstat().st_mode))
    return files, frozenset(directories)


def leftovers(root: Path, state: Path) -> list[str]:
    found = [p.name for p in root.rglob("*") if SIDE_FILE.search(p.name)]
    journal = state / "journal"
    if journal.exists():
        found += [p.name for p in journal.rglob("*") if p.is_file()]
    return found


def assert_state(root: Path, state: Path, scenario: Scenario, *, after: bool, where: str) -> None:
    expected: State = (
        (scenario.after, scenario.after_dirs) if after else (scenario.before, scenario.before_dirs)
    )
    assert disk_state(root) == expected, f"{where}: not all-{'after' if after else 'before'}"
    assert leftovers(root, state) == [], where
    # a transaction that did not commit leaves no snapshot that could count
    pending = Workspace(root, state, fs=NoSync(), recover=False).snapshots.pending_transactions()
    assert pending == frozenset(), where


def faulty_workspace(
    root: Path, state: Path, *, recover: bool = True
) -> tuple[Workspace, FaultyFileSystem]:
    fs = FaultyFileSystem(NoSync())
    return Workspace(root, state, fs=fs, recover=recover), fs


def measure(lab: Lab, scenario: Scenario) -> tuple[int, int]:
    """(operations counted by one commit, index of its commit point)."""
    root, state = lab.fresh(scenario)
    ws, fs = faulty_workspace(root, state)
    fs.arm(None)
    scenario.operate(ws)
    assert_state(root, state, scenario, after=True, where="fault-free run")
    commit_point = next(
        op.index
        for op in fs.log
        if op.name == "rename" and op.paths[1].endswith(".json") and ".committed." in op.paths[0]
    )
    lab.done(root)
    return fs.count, commit_point


def crash_publish(lab: Lab, scenario: Scenario, n: int) -> tuple[Path, Path]:
    root, state = lab.fresh(scenario)
    ws, fs = faulty_workspace(root, state)
    fs.arm(CrashAt(n))
    with pytest.raises(SimulatedCrash):
        scenario.operate(ws)
    return root, state


@pytest.fixture
def lab(tmp_path: Path, scenario: Scenario) -> Iterator[Lab]:
    yield Lab(tmp_path, scenario)


def report(capsys: pytest.CaptureFixture[str], text: str) -> None:
    with capsys.disabled():
        print(f"\n    {text}", end="")


# -- the matrices ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_crash_at_every_publish_operation(
    lab: Lab, scenario: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    total, commit_point = measure(lab, scenario)
    assert total > commit_point > 10
    outcomes = {False: 0, True: 0}
    for n in range(1, total + 1):
        root, state = crash_publish(lab, scenario, n)
        report_ = Workspace(root, state, fs=NoSync()).recover  # opening recovers
        assert report_ is not None
        after = n > commit_point
        assert_state(root, state, scenario, after=after, where=f"crash at op {n}/{total}")
        outcomes[after] += 1
        lab.done(root)
    assert outcomes == {False: commit_point, True: total - commit_point}
    report(
        capsys,
        f"{scenario.name}: {total} crash points "
        f"({commit_point} all-before, {total - commit_point} all-after)",
    )


def crashed_state(root: Path, state: Path) -> tuple[object, ...]:
    """What recovery sees after a crash, with the (random) transaction id taken out:
    every entry of the root with its bytes, mode and which names share an inode, and
    the journal directory's names, sizes and states, and the pending snapshot records."""
    txn = re.compile(r"[0-9a-f]{32}")
    inodes: dict[tuple[int, int], int] = {}
    entries: list[tuple[object, ...]] = []
    for path in sorted(root.rglob("*")):
        name = txn.sub("TXN", path.relative_to(root).as_posix())
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode):
            entries.append((name, "dir"))
            continue
        group = inodes.setdefault((info.st_dev, info.st_ino), len(inodes))
        entries.append((name, path.read_bytes(), stat.S_IMODE(info.st_mode), group))
    random = re.compile(r"[0-9a-f]{8,}")  # ids, session hashes, temp-name suffixes
    for path in sorted(state.rglob("*")):
        if not path.is_file() or "locks" in path.parts or path.suffix == ".lock":
            continue
        name = random.sub("H", path.relative_to(state).as_posix())
        if "journal" in path.parts:
            data = path.read_bytes()
            phase = next((s for s in ("preparing", "committed") if s.encode() in data), "")
            entries.append((name, len(data), phase))
        elif "_pending" in path.parts and not path.name.startswith(SNAPSHOT_TEMP_PREFIX):
            # Pending snapshot records: recovery confirms or discards them by name. The
            # rest of the store (earlier runs' history, blobs, torn temp files) is not
            # an input of recovery: it never reads or removes it.
            entries.append((name,))
    return tuple(entries)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_crash_at_every_recovery_operation(
    lab: Lab, scenario: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    """For every distinct state a publish crash leaves (recovery sees only the disk, so
    two crash points that leave the same disk need one recovery matrix), crash the
    recovery at each of its operations, then recover again."""
    total, commit_point = measure(lab, scenario)
    runs = 0
    seen: set[tuple[object, ...]] = set()
    for n in range(1, total + 1):
        root, state = crash_publish(lab, scenario, n)
        crashed = crashed_state(root, state)
        after = n > commit_point
        if (crashed, after) in seen:
            lab.done(root)
            continue
        seen.add((crashed, after))
        ws, fs = faulty_workspace(root, state, recover=False)
        fs.arm(None)
        ws.recover()
        recovery_ops = fs.count
        assert_state(root, state, scenario, after=after, where=f"crash at {n}, clean recovery")
        lab.done(root)
        for m in range(1, recovery_ops + 1):
            root, state = crash_publish(lab, scenario, n)
            ws, fs = faulty_workspace(root, state, recover=False)
            fs.arm(CrashAt(m))
            with pytest.raises(SimulatedCrash):
                ws.recover()
            Workspace(root, state, fs=NoSync())  # the next open recovers again
            assert_state(
                root,
                state,
                scenario,
                after=after,
                where=f"crash at {n}, recovery crash at {m}/{recovery_ops}",
            )
            lab.done(root)
            runs += 1
    assert runs > total
    report(
        capsys,
        f"{scenario.name}: {runs} recovery crash points over {len(seen)} "
        f"distinct crashed states (of {total} publish crash points)",
    )


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_fail_with_each_errno_at_every_operation(
    lab: Lab, scenario: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    total, commit_point = measure(lab, scenario)
    runs = 0
    for code in ERRNOS:
        for n in range(1, total + 1):
            root, state = lab.fresh(scenario)
            ws, fs = faulty_workspace(root, state)
            fs.arm(FailAt(n, code))
            where = f"{errno.errorcode[code]} at op {n}/{total}"
            if n <= commit_point + 1:  # up to the fsync that makes the commit record durable
                with pytest.raises(ToolError) as caught:
                    scenario.operate(ws)
                assert caught.value.code == "IO_ERROR", where
                assert caught.value.details["errno"] == code, where
                # rolled back in-process: nothing left, no recovery needed
                assert_state(root, state, scenario, after=False, where=where)
                ws.ensure_writable()
            else:
                scenario.operate(ws)
                files, directories = disk_state(root)
                visible = {k: v for k, v in files.items() if not SIDE_FILE.search(k)}
                assert (visible, directories) == (scenario.after, scenario.after_dirs), where
                Workspace(root, state, fs=NoSync())  # the next open removes what is left
                assert_state(root, state, scenario, after=True, where=where)
            assert fs.open_descriptors() == {}, where
            lab.done(root)
            runs += 1
    report(
        capsys, f"{scenario.name}: {runs} errno points ({len(ERRNOS)} errnos x {total} operations)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS[1:2], ids=lambda s: s.name)
def test_crash_during_the_in_process_rollback(
    lab: Lab, scenario: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error before the commit point starts a rollback; the process then dies at
    each operation of that rollback. The next open must finish it: all-before. An error
    at the fsync after the commit rename starts a revocation, then the rollback: a death
    before the revocation is written leaves the record committed (all-after), any later
    one all-before. (The scenario with every kind of change and new directories; the
    10-file update only repeats one kind.)"""
    _, commit_point = measure(lab, scenario)
    runs = 0
    for n in range(1, commit_point + 2):
        root, state = lab.fresh(scenario)
        ws, fs = faulty_workspace(root, state)
        fs.arm(FailAt(n, errno.EIO))
        with pytest.raises(ToolError):
            scenario.operate(ws)
        rollback_ops = fs.count - n
        lab.done(root)
        for m in range(1, rollback_ops + 1):
            root, state = lab.fresh(scenario)
            ws, fs = faulty_workspace(root, state)
            fs.arm(FailAt(n, errno.EIO))

            def crash_later(event: OpEvent, m: int = m, fs: FaultyFileSystem = fs) -> None:
                if event.record.outcome.startswith("fail:"):
                    fs.plan = CrashAt(event.record.index + m)

            fs.observers.append(crash_later)
            with pytest.raises(SimulatedCrash):
                scenario.operate(ws)
            with pytest.raises(ToolError) as refused:
                ws.ensure_writable()  # this process must not go on publishing
            assert refused.value.code == "NEEDS_RECOVERY"
            Workspace(root, state, fs=NoSync())
            # open_append, write: the revocation is not on disk yet; the commit stands.
            unrevoked = n == commit_point + 1 and m <= 2
            assert_state(
                root,
                state,
                scenario,
                after=unrevoked,
                where=f"EIO at op {n}, crash at rollback op {m}/{rollback_ops}",
            )
            lab.done(root)
            runs += 1
    assert runs > commit_point
    report(capsys, f"{scenario.name}: {runs} crash points inside in-process rollbacks")
