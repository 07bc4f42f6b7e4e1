"""The power-loss model: recorded traces, the states a cut can leave, materialization, checks."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from editspec.fault_injection import FaultyFileSystem, trees
from editspec.fault_injection.powerloss import (
    PowerState,
    TraceChanged,
    TraceRecorder,
    capture_image,
    check_power_loss,
    materialize,
    power_loss_states,
    rebuild_state,
    simulate,
    states_at,
)
from editspec.reference import FileSystem

OLD = b"old\n"
NEW = b"new contents\n"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "target.txt").write_bytes(OLD)
    return tmp_path


def record(base: Path, run: Callable[[FileSystem, Path], None]) -> TraceRecorder:
    root = base / "ws"
    fs = FaultyFileSystem()
    recorder = TraceRecorder([root])
    recorder.start(fs)
    run(fs, root)
    recorder.stop()
    return recorder


def replace(
    fs: FileSystem,
    root: Path,
    *,
    fsync_file: bool = True,
    fsync_dir: bool = True,
    data: bytes = NEW,
) -> None:
    temp, target = str(root / "target.txt.tmp"), str(root / "target.txt")
    fd = fs.create_exclusive(temp)
    fs.write(fd, data)
    if fsync_file:
        fs.fsync(fd)
    fs.close(fd)
    fs.rename(temp, target)
    if fsync_dir:
        fs.fsync_dir(str(root))


def root_trees(states: list[PowerState], root: Path) -> list[trees.Tree]:
    return [trees.without_modes(state.tree(str(root))) for state in states]


def files(**contents: bytes) -> trees.Tree:
    return {name.replace("_", "."): trees.Entry.file(data) for name, data in contents.items()}


def test_the_model_replays_the_trace_to_what_is_on_disk(base: Path) -> None:
    def run(fs: FileSystem, root: Path) -> None:
        fs.mkdir(str(root / "d"))
        fd = fs.create_exclusive(str(root / "d" / "a"), 0o640)
        fs.write(fd, b"x" * 5000)
        fs.write(fd, b"y" * 10)
        fs.fchmod(fd, 0o604)
        fs.close(fd)
        fs.link(str(root / "d" / "a"), str(root / "d" / "b"))
        fs.rename(str(root / "d" / "a"), str(root / "d" / "b"))  # two links of one file: no-op
        fs.rename(str(root / "target.txt"), str(root / "d" / "moved"))
        fs.unlink(str(root / "d" / "b"))

    recorder = record(base, run)
    root = str(base / "ws")
    modelled = simulate(recorder.image, recorder.ops).volatile_state(len(recorder.ops))
    assert modelled.tree(root) == trees.capture(root)
    assert set(trees.capture(root)) == {"d", "d/a", "d/moved"}


def test_a_write_without_fsync_then_rename_can_lose_the_data(base: Path) -> None:
    recorder = record(base, lambda fs, root: replace(fs, root, fsync_file=False))
    root = base / "ws"
    states, truncated = states_at(recorder.image, recorder.ops, len(recorder.ops))
    assert not truncated
    outcomes = root_trees(states, root)
    assert files(target_txt=b"") in outcomes  # the rename survived, the data did not
    assert files(target_txt=NEW) in outcomes


def test_a_correct_atomic_replace_is_all_before_or_all_after_once_the_temp_is_ignored(
    base: Path,
) -> None:
    recorder = record(base, replace)
    root = base / "ws"
    states, _ = power_loss_states(recorder.image, recorder.ops)
    seen = []
    for tree in root_trees(states, root):
        tree.pop("target.txt.tmp", None)
        seen.append(tree[("target.txt")].data)
    assert set(seen) == {OLD, NEW}
    # Once the directory is synced, only the new file can survive.
    final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    assert root_trees(final, root) == [files(target_txt=NEW)]


def test_without_the_directory_fsync_the_rename_itself_can_be_lost(base: Path) -> None:
    recorder = record(base, lambda fs, root: replace(fs, root, fsync_dir=False))
    final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    outcomes = root_trees(final, base / "ws")
    assert files(target_txt=NEW) in outcomes
    assert files(target_txt=OLD, target_txt_tmp=NEW) in outcomes


def test_unsynced_data_is_cut_at_4_kib_boundaries(base: Path) -> None:
    def run(fs: FileSystem, root: Path) -> None:
        fd = fs.create_exclusive(str(root / "big"))
        fs.write(fd, b"a" * 10000)
        fs.close(fd)
        fs.fsync_dir(str(root))

    recorder = record(base, run)
    final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    sizes = sorted(len(tree["big"].data) for tree in root_trees(final, base / "ws"))
    assert sizes == [0, 4096, 8192, 10000]


def test_data_synced_before_more_writes_keeps_its_prefix(base: Path) -> None:
    def run(fs: FileSystem, root: Path) -> None:
        fd = fs.create_exclusive(str(root / "f"))
        fs.write(fd, b"a" * 5000)
        fs.fsync(fd)
        fs.write(fd, b"b" * 4000)
        fs.close(fd)
        fs.fsync_dir(str(root))

    recorder = record(base, run)
    final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    sizes = sorted(len(tree["f"].data) for tree in root_trees(final, base / "ws"))
    assert sizes == [5000, 8192, 9000]


def test_an_append_to_an_existing_file_keeps_its_synced_bytes_and_a_prefix(base: Path) -> None:
    root = base / "ws"
    (root / "f").write_bytes(b"a" * 4000)  # before the trace: in the image, durable
    fs = FaultyFileSystem()
    recorder = TraceRecorder([root])
    recorder.start(fs)
    fd = fs.open_append(str(root / "f"))
    fs.write(fd, b"b" * 5000)
    unsynced, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    fs.fsync(fd)
    fs.close(fd)
    recorder.stop()
    kept = sorted(tree["f"].data for tree in root_trees(unsynced, root))
    # The old bytes are never touched; the new ones survive whole or up to a 4 KiB step.
    assert kept == [b"a" * 4000, b"a" * 4000 + b"b" * 96, b"a" * 4000 + b"b" * 4192,
                    b"a" * 4000 + b"b" * 5000]  # fmt: skip
    synced, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    assert [tree["f"].data for tree in root_trees(synced, root)] == [b"a" * 4000 + b"b" * 5000]


def _failing(plan_at: int) -> FaultyFileSystem:
    from editspec.fault_injection import FailAt

    return FaultyFileSystem(plan=FailAt(plan_at, errno.EIO))


def test_a_failed_directory_fsync_is_not_retried_into_durability(base: Path) -> None:
    """What a failed fsync_dir covered may be lost even after a later one succeeds (the
    kernel may have dropped it); what was done after the failure is made durable."""
    root = base / "ws"
    fs = _failing(3)  # create, close, fsync_dir <- EIO
    recorder = TraceRecorder([root])
    recorder.start(fs)
    fs.close(fs.create_exclusive(str(root / "first")))
    with pytest.raises(OSError):
        fs.fsync_dir(str(root))
    fs.fsync_dir(str(root))  # a plain retry
    fs.close(fs.create_exclusive(str(root / "second")))
    fs.fsync_dir(str(root))
    recorder.stop()
    assert [op.failed for op in recorder.ops if op.name == "fsync_dir"] == [True, False, False]
    for model in ("ordered", "strict"):
        final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops), model)
        names = {frozenset(state.tree(str(root))) - {"target.txt"} for state in final}
        assert names == {frozenset({"first", "second"}), frozenset({"second"})}, model


def test_a_rename_back_after_a_failed_fsync_leaves_the_old_name_in_every_state(
    base: Path,
) -> None:
    """The undo of a rename whose sync failed: whether the first rename survives or not,
    the second one (synced) leaves the file at its old name; a rename of a name that did
    not survive does not happen."""
    root = base / "ws"
    (root / "tree").mkdir()
    (root / "tree" / "leaf.txt").write_bytes(NEW)  # in the image: durable
    fs = _failing(2)  # rename, fsync_dir <- EIO
    recorder = TraceRecorder([root])
    recorder.start(fs)
    fs.rename(str(root / "tree"), str(root / "moved"))
    with pytest.raises(OSError):
        fs.fsync_dir(str(root))
    fs.rename(str(root / "moved"), str(root / "tree"))
    fs.fsync_dir(str(root))
    recorder.stop()
    expected = {
        **files(target_txt=OLD),
        "tree": trees.Entry.dir(),
        "tree/leaf.txt": trees.Entry.file(NEW),
    }
    for model in ("ordered", "strict"):
        final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops), model)
        assert len(final) == 2, model  # the first rename lost, or kept
        for tree in root_trees(final, root):
            assert tree == expected, model


def test_a_failed_file_fsync_is_not_retried_into_durability(base: Path) -> None:
    root = base / "ws"
    fs = _failing(3)  # create, write, fsync <- EIO
    recorder = TraceRecorder([root])
    recorder.start(fs)
    fd = fs.create_exclusive(str(root / "f"))
    fs.write(fd, b"data")
    with pytest.raises(OSError):
        fs.fsync(fd)
    fs.fsync(fd)
    fs.close(fd)
    fs.fsync_dir(str(root))
    recorder.stop()
    final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    assert sorted(tree["f"].data for tree in root_trees(final, root)) == [b"", b"data"]


def test_ordered_loses_a_suffix_and_strict_any_subset(base: Path) -> None:
    def run(fs: FileSystem, root: Path) -> None:
        for name in ("a", "b"):
            fs.mkdir(str(root / name))

    recorder = record(base, run)
    root = base / "ws"
    point = len(recorder.ops)

    def names(model: str) -> set[frozenset[str]]:
        states, _ = states_at(recorder.image, recorder.ops, point, model)  # type: ignore[arg-type]
        return {frozenset(state.tree(str(root))) - {"target.txt"} for state in states}

    assert names("ordered") == {frozenset({"a", "b"}), frozenset({"a"}), frozenset()}
    assert names("strict") == names("ordered") | {frozenset({"b"})}


def test_a_lost_mkdir_takes_its_synced_contents_with_it(base: Path) -> None:
    def run(fs: FileSystem, root: Path) -> None:
        fs.mkdir(str(root / "d"))
        fd = fs.create_exclusive(str(root / "d" / "f"))
        fs.write(fd, b"data")
        fs.fsync(fd)
        fs.close(fd)
        fs.fsync_dir(str(root / "d"))

    recorder = record(base, run)
    final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    outcomes = {frozenset(t) for t in root_trees(final, base / "ws")}
    assert outcomes == {frozenset({"target.txt", "d", "d/f"}), frozenset({"target.txt"})}


def test_a_rename_between_two_links_of_one_file_is_modelled_as_nothing(base: Path) -> None:
    def run(fs: FileSystem, root: Path) -> None:
        fs.link(str(root / "target.txt"), str(root / "backup"))
        fs.fsync_dir(str(root))
        fs.rename(str(root / "backup"), str(root / "target.txt"))

    recorder = record(base, run)
    assert os.path.exists(base / "ws" / "backup")  # the POSIX trap, on the real disk
    final, _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    assert [sorted(t) for t in root_trees(final, base / "ws")] == [["backup", "target.txt"]]


def test_materialize_rebuilds_the_state_with_hard_links(base: Path) -> None:
    def run(fs: FileSystem, root: Path) -> None:
        fs.link(str(root / "target.txt"), str(root / "backup"))
        fs.fsync_dir(str(root))

    recorder = record(base, run)
    root = base / "ws"
    (state,), _ = states_at(recorder.image, recorder.ops, len(recorder.ops))
    (root / "stray").write_bytes(b"removed by materialize")
    materialize(state, recorder.roots)
    assert sorted(os.listdir(root)) == ["backup", "target.txt"]
    assert os.stat(root / "backup").st_ino == os.stat(root / "target.txt").st_ino
    assert (root / "backup").read_bytes() == OLD


def test_materialize_refuses_to_wipe_outside_the_temp_directory() -> None:
    image = capture_image([])
    state = PowerState(0, (), (), image.entries, {}, {})
    with pytest.raises(ValueError):
        materialize(state, [os.path.expanduser("~")])


def test_the_state_directory_is_part_of_the_image(base: Path) -> None:
    state_dir = base / "state"
    (state_dir / "journal").mkdir(parents=True)
    (state_dir / "journal" / "t.json").write_bytes(b"{}")
    image = capture_image([str(base / "ws"), str(state_dir)])
    assert str(state_dir / "journal" / "t.json") in image.entries


def _check(base: Path, recorder: TraceRecorder, recover: Callable[[str], None]) -> list[str]:
    root, state_dir = str(base / "ws"), str(base / "state")
    before, after = files(target_txt=OLD), files(target_txt=NEW)
    both = (before, after)
    done = len(recorder.ops)

    def open_workspace(root: str, state_dir: str) -> object:
        recover(root)
        return object()

    report = check_power_loss(
        recorder,
        root=root,
        state_dir=state_dir,
        acceptable_at=lambda point: (after,) if point == done else both,
        open_workspace=open_workspace,
    )
    assert report.states > 0
    return [line for failure in report.failures for line in failure.problems]


def test_the_checker_reports_a_temp_file_that_recovery_leaves(base: Path) -> None:
    (base / "state").mkdir()
    recorder = record(base, replace)
    recorder_roots = list(recorder.roots)
    assert recorder_roots == [str((base / "ws").resolve())]
    problems = _check(base, recorder, lambda root: None)
    assert any("unexpected file" in line and "target.txt.tmp" in line for line in problems)

    def remove_temp(root: str) -> None:
        temp = os.path.join(root, "target.txt.tmp")
        if os.path.exists(temp):
            os.unlink(temp)

    assert _check(base, recorder, remove_temp) == []


def test_the_checker_reports_lost_data_after_a_missing_fsync(base: Path) -> None:
    (base / "state").mkdir()
    recorder = record(base, lambda fs, root: replace(fs, root, fsync_file=False))
    problems = _check(base, recorder, lambda root: None)
    assert any(
        "target.txt: expected file" in line and "found file 0 bytes" in line for line in problems
    )


def test_a_state_can_be_rebuilt_from_its_description(base: Path) -> None:
    def run(fs: FileSystem, root: Path) -> None:
        replace(fs, root, fsync_file=False, fsync_dir=False, data=b"z" * 9000)
        fs.mkdir(str(root / "d"))

    recorder = record(base, run)
    states, _ = power_loss_states(recorder.image, recorder.ops, "strict")
    assert len(states) > 5
    for state in states:
        rebuilt = rebuild_state(
            recorder.image,
            recorder.ops,
            state.point,
            state.lost,
            {key: kept for key, _path, kept, _written in state.cut},
        )
        assert rebuilt.key() == state.key()
    with pytest.raises(TraceChanged, match="no file created as op:99"):
        rebuild_state(recorder.image, recorder.ops, 1, (), {"op:99": 0})
    # A lost operation must be an entry operation its directory had not synced by then:
    # anything else names a state the model never allows (a trace that has changed).
    entry_ops = [op.position for op in recorder.ops if op.name in ("rename", "mkdir")]
    data_ops = [op.position for op in recorder.ops if op.name in ("write", "close")]
    end = len(recorder.ops)
    rebuild_state(recorder.image, recorder.ops, end, entry_ops, {})  # nothing was synced
    with pytest.raises(TraceChanged, match="no unsynced entry operations"):
        rebuild_state(recorder.image, recorder.ops, end, data_ops[:1], {})
    with pytest.raises(TraceChanged, match="no unsynced entry operations"):
        rebuild_state(recorder.image, recorder.ops, entry_ops[0], entry_ops[:1], {})


def _stray_temp(relative: str) -> bool:
    from editspec.reference.tools._atomic import is_temp_name

    return is_temp_name(relative.rsplit("/", 1)[-1])


class _SkipsDirSync(FaultyFileSystem):
    """Seen from the engine: its directory fsyncs never reach the recorded port."""

    def fsync_dir(self, path: str) -> None:
        return None


@pytest.mark.parametrize("model", ["ordered", "strict"])
@pytest.mark.parametrize("broken", [False, True], ids=["engine", "engine-without-dir-fsync"])
def test_every_power_loss_state_of_a_workspace_write_recovers(
    base: Path, model: str, broken: bool
) -> None:
    from editspec.reference import Workspace

    root, state_dir = base / "ws", base / "state"
    state_dir.mkdir()
    before = trees.capture(root)
    fs = FaultyFileSystem()
    workspace = Workspace(root, state_dir, fs=_SkipsDirSync(fs) if broken else fs)
    session = workspace.session("s1")
    session.read("target.txt")
    recorder = TraceRecorder([root, state_dir])
    recorder.start(fs)
    session.write("target.txt", "new contents\n" * 500)  # more than one 4 KiB block
    recorder.stop()
    after = trees.capture(root)
    done = len(recorder.ops)
    report = check_power_loss(
        recorder,
        root=str(root),
        state_dir=str(state_dir),
        acceptable_at=lambda point: (after,) if point == done else (before, after),
        model=model,  # type: ignore[arg-type]
        ignore=_stray_temp,
    )
    assert report.states > 3 and not report.truncated
    if broken:
        # The rename is never made durable: a cut after the write returned loses it.
        assert report.failures
        assert all(f.state.point == done for f in report.failures)
    else:
        assert report.failures == ()
