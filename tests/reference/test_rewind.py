"""rewind: per-session restore of every file changed from a message on, as one transaction."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from editspec.fault_injection import CrashAt, FaultyFileSystem, SimulatedCrash
from editspec.reference import EditSpec, Session, ToolError, Workspace
from tests.reference.txn_helpers import SIDE_OR_TEMP_FILE, leftovers, write

Files = dict[str, bytes]


# -- helpers -------------------------------------------------------------------------------


def files(root: Path) -> Files:
    """Every regular file under ``root`` with its bytes (directories are not compared)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def mode(root: Path, relative: str) -> int:
    return os.stat(root / relative).st_mode & 0o7777


def patch(*sections: str) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


INITIAL: Files = {"keep.txt": b"keep\n", "a.txt": b"a0\n", "b.txt": b"b0\n", "c.txt": b"c0\n"}


def five_messages(root: Path, session: Session) -> list[Files]:
    """Five messages mixing write, edit and patch; the files before each and after the last.

    m1 creates and modifies (write); m2 edits two files; m3 deletes, moves into new nested
    directories with a change, and adds (patch); m4 recreates the deleted file (write) and
    edits; m5 updates, deletes and updates the moved file (patch).
    """
    for path, data in INITIAL.items():
        write(root, path, data)
    os.chmod(root / "c.txt", 0o640)
    for path in INITIAL:
        session.read(path)
    states = [files(root)]
    session.write("new.txt", "n1\n", message_id="m1")
    session.write("a.txt", "a1\n", message_id="m1")
    states.append(files(root))
    session.edit("a.txt", [EditSpec("a1", "a2")], message_id="m2")
    session.edit("b.txt", [EditSpec("b0", "b1")], message_id="m2")
    states.append(files(root))
    session.apply_patch(
        patch(
            "*** Delete File: c.txt\n",
            "*** Update File: b.txt\n*** Move to: dir/sub/b.txt\n@@\n-b1\n+b2\n",
            "*** Add File: d.txt\n+d3\n",
        ),
        message_id="m3",
    )
    states.append(files(root))
    session.write("c.txt", "c4\n", message_id="m4")
    session.edit("new.txt", [EditSpec("n1", "n4")], message_id="m4")
    states.append(files(root))
    session.apply_patch(
        patch(
            "*** Update File: a.txt\n@@\n-a2\n+a5\n",
            "*** Delete File: new.txt\n",
            "*** Update File: dir/sub/b.txt\n@@\n-b2\n+b5\n",
        ),
        message_id="m5",
    )
    states.append(files(root))
    return states


@pytest.fixture
def ws(root: Path, state_dir: Path) -> Workspace:
    return Workspace(root, state_dir)


@pytest.fixture
def s1(ws: Workspace) -> Session:
    return ws.session("s1")


def fails_unchanged(ws: Workspace, root: Path, code: str, action: Callable[[], object]) -> None:
    before = files(root)
    history = ws.snapshots.history("s1")
    with pytest.raises(ToolError) as info:
        action()
    assert info.value.code == code, info.value
    assert files(root) == before
    assert ws.snapshots.history("s1") == history
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []


# -- restoring -----------------------------------------------------------------------------


def test_the_scenario_does_what_it_says(root: Path, s1: Session) -> None:
    states = five_messages(root, s1)
    assert states[5] == {
        "keep.txt": b"keep\n",
        "a.txt": b"a5\n",
        "c.txt": b"c4\n",
        "d.txt": b"d3\n",
        "dir/sub/b.txt": b"b5\n",
    }
    assert len({tuple(sorted(state.items())) for state in states}) == 6


@pytest.mark.parametrize("message", [1, 2, 3, 4, 5])
def test_rewind_restores_the_files_before_the_message(
    root: Path, ws: Workspace, s1: Session, message: int
) -> None:
    states = five_messages(root, s1)
    result = s1.rewind(f"m{message}")
    assert files(root) == states[message - 1]
    assert result.transaction_id
    changed = {
        path
        for path in set(states[5]) | set(states[message - 1])
        if states[5].get(path) != states[message - 1].get(path)
    }
    assert {restored.path for restored in result.restored} == changed
    for restored in result.restored:
        before, now = states[message - 1].get(restored.path), states[5].get(restored.path)
        expected = "deleted" if before is None else "recreated" if now is None else "restored"
        assert restored.action == expected
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []
    # A second rewind to the same message has nothing left to do.
    assert s1.rewind(f"m{message}").restored == ()
    assert files(root) == states[message - 1]


def test_rewind_to_the_first_message_restores_the_initial_tree(root: Path, s1: Session) -> None:
    five_messages(root, s1)
    result = s1.rewind("m1")
    assert files(root) == INITIAL
    actions = {restored.path: restored.action for restored in result.restored}
    assert actions == {
        "a.txt": "restored",
        "b.txt": "recreated",  # the move is undone
        "c.txt": "restored",  # deleted in m3, recreated in m4: restored from c4
        "d.txt": "deleted",
        "dir/sub/b.txt": "deleted",
    }


def test_recreated_file_gets_its_mode_back(root: Path, s1: Session) -> None:
    five_messages(root, s1)
    s1.rewind("m4")  # c.txt did not exist before m4
    assert not (root / "c.txt").exists()
    s1.rewind("m3")  # c.txt existed, mode 0640, before m3
    assert (root / "c.txt").read_bytes() == b"c0\n"
    assert mode(root, "c.txt") == 0o640


def test_rewinds_step_back_one_message_at_a_time(root: Path, s1: Session) -> None:
    states = five_messages(root, s1)
    for message in (5, 4, 3, 2, 1):
        s1.rewind(f"m{message}")
        assert files(root) == states[message - 1]


def test_rewind_after_new_changes_undoes_them_too(root: Path, s1: Session) -> None:
    states = five_messages(root, s1)
    s1.rewind("m4")
    s1.write("a.txt", "a6\n", message_id="m6")
    s1.write("e.txt", "e6\n", message_id="m6")
    assert files(root)["a.txt"] == b"a6\n"
    s1.rewind("m4")  # m4's place in the timeline is before m6
    assert files(root) == states[3]
    s1.write("a.txt", "a7\n", message_id="m7")
    s1.rewind("m2")
    assert files(root) == states[1]


def test_restored_files_count_as_read(root: Path, ws: Workspace, s1: Session) -> None:
    five_messages(root, s1)
    s1.rewind("m2")
    # This session may change the restored files at once ...
    s1.edit("a.txt", [EditSpec("a1", "again")])
    s1.apply_patch(patch("*** Update File: b.txt\n@@\n-b0\n+bb\n"))
    # ... deleted names are forgotten, other sessions must read first.
    assert ws.access.get("s1", str(root / "d.txt")) is None
    with pytest.raises(ToolError) as info:
        ws.session("s2").edit("c.txt", [EditSpec("c0", "x")])
    assert info.value.code == "NOT_READ"


def test_a_message_with_only_failed_writes_leaves_nothing_to_undo(
    root: Path, ws: Workspace, s1: Session
) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    s1.write("a.txt", "b\n", message_id="m1")
    with pytest.raises(ToolError):
        s1.edit("a.txt", [EditSpec("zzz", "y")], message_id="m2")
    assert [r.message_id for r in ws.snapshots.history("s1").live] == ["m1"]
    s1.rewind("m1")
    assert files(root) == {"a.txt": b"a\n"}


# -- refusing ------------------------------------------------------------------------------


def test_unknown_message_is_not_found(root: Path, ws: Workspace, s1: Session) -> None:
    five_messages(root, s1)
    fails_unchanged(ws, root, "NOT_FOUND", lambda: s1.rewind("m99"))


def test_bad_message_id(root: Path, ws: Workspace, s1: Session) -> None:
    fails_unchanged(ws, root, "INVALID_ARGUMENT", lambda: s1.rewind(""))


def test_another_session_cannot_rewind_these_changes(
    root: Path, ws: Workspace, s1: Session
) -> None:
    five_messages(root, s1)
    other = ws.session("s2")
    fails_unchanged(ws, root, "NOT_FOUND", lambda: other.rewind("m1"))
    # The other session's own history covers only its own changes.
    other.read("keep.txt")
    other.write("keep.txt", "s2 was here\n", message_id="m1")
    other.rewind("m1")
    assert (root / "keep.txt").read_bytes() == b"keep\n"
    assert (root / "a.txt").read_bytes() == b"a5\n"  # s1's change stands


def test_external_change_after_the_last_change_is_a_conflict(
    root: Path, ws: Workspace, s1: Session
) -> None:
    states = five_messages(root, s1)
    write(root, "c.txt", b"someone else\n")  # last changed by s1 in m4
    for message in ("m1", "m3", "m4"):
        fails_unchanged(ws, root, "CONFLICT", lambda m=message: s1.rewind(m))  # type: ignore[misc]
    # A rewind that does not cover the file is not concerned.
    s1.rewind("m5")
    assert files(root) == {**states[4], "c.txt": b"someone else\n"}


def test_external_deletion_and_recreation_are_conflicts(
    root: Path, ws: Workspace, s1: Session
) -> None:
    five_messages(root, s1)
    os.unlink(root / "d.txt")  # created in m3, deleted by someone else
    fails_unchanged(ws, root, "CONFLICT", lambda: s1.rewind("m3"))
    write(root, "d.txt", b"d3\n")
    write(root, "new.txt", b"reappeared\n")  # deleted in m5, recreated by someone else
    fails_unchanged(ws, root, "CONFLICT", lambda: s1.rewind("m4"))


def test_a_gap_in_the_history_is_a_conflict(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a0\n")
    s1.read("a.txt")
    s1.write("a.txt", "a1\n", message_id="m1")
    s1.write("a.txt", "unrecorded\n")  # no message: no snapshot
    s1.write("a.txt", "a3\n", message_id="m3")
    fails_unchanged(ws, root, "CONFLICT", lambda: s1.rewind("m1"))
    # From m3 on the history is whole.
    s1.rewind("m3")
    assert (root / "a.txt").read_bytes() == b"unrecorded\n"


def test_a_gap_by_another_session_is_a_conflict(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a0\n")
    s1.read("a.txt")
    s1.write("a.txt", "a1\n", message_id="m1")
    other = ws.session("s2")
    other.read("a.txt")
    other.write("a.txt", "s2\n", message_id="x1")
    s1.read("a.txt")
    s1.write("a.txt", "a2\n", message_id="m2")
    fails_unchanged(ws, root, "CONFLICT", lambda: s1.rewind("m1"))


def test_a_conflict_on_one_file_changes_no_other(root: Path, ws: Workspace, s1: Session) -> None:
    five_messages(root, s1)
    write(root, "dir/sub/b.txt", b"external\n")
    fails_unchanged(ws, root, "CONFLICT", lambda: s1.rewind("m1"))
    assert (root / "a.txt").read_bytes() == b"a5\n"


def test_a_file_replaced_by_a_directory_is_a_conflict(
    root: Path, ws: Workspace, s1: Session
) -> None:
    five_messages(root, s1)
    os.unlink(root / "d.txt")
    (root / "d.txt").mkdir()
    fails_unchanged(ws, root, "CONFLICT", lambda: s1.rewind("m3"))


@pytest.mark.parametrize("interference", ["modify", "delete", "create"])
def test_a_change_between_check_and_commit_is_a_conflict(
    root: Path, ws: Workspace, s1: Session, monkeypatch: pytest.MonkeyPatch, interference: str
) -> None:
    """The locked re-verification inside the transaction catches what the check missed."""
    from editspec.reference.snapshots import _rewind

    five_messages(root, s1)
    real_check = _rewind._check_file
    victim = {"modify": "a.txt", "delete": "a.txt", "create": "b.txt"}[interference]

    def check_then_interfere(session: Session, relative: str, entries: object) -> object:
        restore = real_check(session, relative, entries)  # type: ignore[arg-type]
        if relative == victim:
            if interference == "modify":
                write(root, victim, b"meanwhile\n")
            elif interference == "delete":
                os.unlink(root / victim)
            else:
                write(root, victim, b"appeared\n")  # the rewind recreates b.txt
        return restore

    monkeypatch.setattr(_rewind, "_check_file", check_then_interfere)
    history = ws.snapshots.history("s1")
    with pytest.raises(ToolError) as info:
        s1.rewind("m1")
    assert info.value.code == "CONFLICT"
    expected = {
        "modify": {"a.txt": b"meanwhile\n"},
        "delete": {},
        "create": {"a.txt": b"a5\n", "b.txt": b"appeared\n"},
    }[interference]
    now = files(root)
    assert {k: v for k, v in now.items() if k in ("a.txt", "b.txt")} == expected
    assert now["dir/sub/b.txt"] == b"b5\n"  # nothing else was restored
    assert ws.snapshots.history("s1") == history
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []


# -- crashes -------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_crash_at_any_step_of_a_rewind_recovers_all_before_or_all_after(
    tmp_path: Path,
) -> None:
    """Crash at every port operation of a rewind over five messages, then recover."""
    root, state = tmp_path / "ws", tmp_path / "state"
    template_root, template_state = tmp_path / "template-ws", tmp_path / "template-state"
    root.mkdir()
    states = five_messages(root, Workspace(root, state).session("s1"))
    # The workspace's state is keyed by its root's path: every run restores this copy
    # at the same paths.
    shutil.copytree(root, template_root, symlinks=True)
    shutil.copytree(state, template_state, symlinks=True)

    def fresh_copy() -> None:
        for live, template in ((root, template_root), (state, template_state)):
            shutil.rmtree(live)
            shutil.copytree(template, live, symlinks=True)

    probe = FaultyFileSystem()
    Workspace(root, state, fs=probe)
    probe.arm(None)
    Workspace(root, state, fs=probe).session("s1").rewind("m1")
    total = probe.count
    assert files(root) == states[0]
    assert total > 20
    outcomes: dict[str, int] = {"before": 0, "after": 0}
    for n in range(1, total + 1):
        fresh_copy()
        fs = FaultyFileSystem()
        ws = Workspace(root, state, fs=fs)
        fs.arm(CrashAt(n))
        with pytest.raises(SimulatedCrash):
            ws.session("s1").rewind("m1")
        recovered = Workspace(root, state)  # recovers on open
        now = files(root)
        assert now in (states[5], states[0]), f"crash at operation {n}: {now}"
        assert leftovers(recovered, SIDE_OR_TEMP_FILE) == [], f"crash at operation {n}"
        session = recovered.session("s1")
        if now == states[0]:
            outcomes["after"] += 1
            # The history moved with the disk: nothing is left to rewind.
            assert session.rewind("m1").restored == (), f"crash at operation {n}"
        else:
            outcomes["before"] += 1
            # The history is intact: the rewind simply runs again.
            session.rewind("m1")
        assert files(root) == states[0], f"crash at operation {n}"
    assert outcomes["before"] and outcomes["after"]


def test_changes_that_cancel_out_only_move_the_history(
    root: Path, ws: Workspace, s1: Session
) -> None:
    write(root, "a.txt", b"a0\n")
    s1.read("a.txt")
    s1.write("a.txt", "a1\n", message_id="m1")
    s1.write("a.txt", "a0\n", message_id="m2")
    result = s1.rewind("m1")
    assert result.restored == ()
    assert files(root) == {"a.txt": b"a0\n"}
    assert ws.snapshots.history("s1").live == ()
    assert s1.rewind("m2").restored == ()
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []


@pytest.mark.slow
@pytest.mark.parametrize("model", ["ordered", "strict"])
def test_a_power_cut_during_a_rewind_recovers_all_before_or_all_after(
    tmp_path: Path, model: str
) -> None:
    """Every state a power cut can leave (unsynced data and entries lost) recovers whole,
    and the history agrees with the disk: after, nothing is left to rewind; before,
    the rewind runs again."""
    from editspec.fault_injection import trees
    from editspec.fault_injection.powerloss import TraceRecorder, check_power_loss

    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    five_messages(root, Workspace(root, state).session("s1"))
    before = trees.capture(root)
    fs = FaultyFileSystem()
    ws = Workspace(root, state, fs=fs)
    recorder = TraceRecorder([root, state])
    recorder.start(fs)
    ws.session("s1").rewind("m1")
    recorder.stop()
    after = trees.capture(root)
    done = len(recorder.ops)

    def open_workspace(root_dir: str, state_dir: str) -> Workspace:
        recovered = Workspace(root_dir, state_dir)
        now = trees.capture(root_dir)
        session = recovered.session("s1")
        if trees.equal(now, after):
            restored = session.rewind("m1").restored
            assert restored == (), f"the history did not move with the disk: {restored}"
        elif trees.equal(now, before):
            session.rewind("m1")
            assert trees.equal(trees.capture(root_dir), after), "the history moved alone"
        return recovered

    report = check_power_loss(
        recorder,
        root=str(root),
        state_dir=str(state),
        acceptable_at=lambda point: (after,) if point == done else (before, after),
        model=model,  # type: ignore[arg-type]
        open_workspace=open_workspace,
    )
    assert report.states > 10
    assert not report.truncated
    assert [failure.problems for failure in report.failures] == []


# -- the port failing under a rewind ----------------------------------------------------------


class _FailingFor(FaultyFileSystem):
    """A port whose ``method`` fails with EIO for ``a.txt`` while ``armed``."""

    def __init__(self, method: str) -> None:
        super().__init__()
        self.failing = method
        self.failing_armed = False

    def _check(self, method: str, path: object) -> None:
        if self.failing_armed and method == self.failing and str(path).endswith("a.txt"):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))

    def lstat(self, path: str) -> os.stat_result:
        self._check("lstat", path)
        return super().lstat(path)

    def stat(self, path: str) -> os.stat_result:
        self._check("stat", path)
        return super().stat(path)

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        self._check("read_bytes", path)
        return super().read_bytes(path, offset=offset, limit=limit)


def _changed_a(tmp_path: Path, method: str) -> tuple[Path, _FailingFor, Session]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(b"a0\n")
    fs = _FailingFor(method)
    session = Workspace(root, tmp_path / "state", fs=fs).session("s1")
    session.read("a.txt")
    session.write("a.txt", "a1\n", message_id="m1")
    return root, fs, session


@pytest.mark.parametrize("method", ["lstat", "read_bytes"])
def test_a_file_the_port_cannot_inspect_is_an_io_error(tmp_path: Path, method: str) -> None:
    root, fs, session = _changed_a(tmp_path, method)
    fs.failing_armed = True
    with pytest.raises(ToolError) as caught:
        session.rewind("m1")
    assert caught.value.code == "IO_ERROR" and caught.value.details["errno"] == errno.EIO
    assert (root / "a.txt").read_bytes() == b"a1\n"
    fs.failing_armed = False
    session.rewind("m1")  # nothing was consumed by the failed attempt
    assert (root / "a.txt").read_bytes() == b"a0\n"


def test_a_failing_stat_after_the_restore_keeps_the_file_read(tmp_path: Path) -> None:
    root, fs, session = _changed_a(tmp_path, "stat")
    fs.failing_armed = True
    result = session.rewind("m1")
    fs.failing_armed = False
    assert [(item.path, item.action) for item in result.restored] == [("a.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"a0\n"
    session.write("a.txt", "a2\n")  # counted as read at its restored hash
    assert (root / "a.txt").read_bytes() == b"a2\n"


def test_a_directory_turned_into_a_link_is_a_conflict(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "other").mkdir()
    (root / "pkg" / "f.txt").write_bytes(b"f0\n")
    (root / "other" / "f.txt").write_bytes(b"f1\n")
    session = Workspace(root, tmp_path / "state").session("s1")
    session.read("pkg/f.txt")
    session.write("pkg/f.txt", "f1\n", message_id="m1")
    shutil.rmtree(root / "pkg")
    (root / "pkg").symlink_to("other")  # pkg/f.txt now leads to other/f.txt, same bytes
    with pytest.raises(ToolError) as caught:
        session.rewind("m1")
    assert caught.value.code == "CONFLICT"
    assert (root / "other" / "f.txt").read_bytes() == b"f1\n"
