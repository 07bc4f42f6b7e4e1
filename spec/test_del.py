"""DEL: deleting a file, an empty directory or a whole tree, restorably (file-io-design §9).

Delete has stronger preconditions than a write: the caller states what it deletes
(``kind``: ``file``, ``empty_dir`` or ``tree``), a file needs a full read in the session or
``expected_sha256``, and a tree needs the ``manifest_sha256`` that ``manifest`` returned,
so nothing added since is deleted unseen. A tree goes as one transaction; what is
deleted is kept behind ``restore_ref``, which ``rewind`` takes.
"""

from __future__ import annotations

import os

from editspec.spec import MUST, clause, prepare_change, raises_code
from editspec.spec.fixtures import sha256

TEXT = "keep me\nor not\n"


def _tree(disk, base: str = "pkg") -> dict[str, bytes]:
    files = {
        f"{base}/a.py": b"print('a')\n",
        f"{base}/sub/b.py": b"print('b')\r\n",
        f"{base}/sub/deeper/c.bin": bytes(range(256)),
    }
    for path, data in files.items():
        disk.write(path, data)
    return files


def _delete_read_file(session, disk, path: str = "control.txt") -> None:
    """A positive control: a file the session has read is deleted."""
    disk.write(path, "control\n")
    prepare_change(session, path)
    session.delete(path, kind="file")
    assert not disk.exists(path), f"control: delete({path!r}, kind='file') left the file"


@clause(
    "DEL-001",
    MUST,
    requires={"delete"},
    text="Deleting a file this session has read (kind 'file') removes exactly that file; "
    "the result names it and its kind, and every other file stays byte for byte.",
    rationale="A delete tool that leaves the file, or takes a neighbour with it, is worse "
    "than none: the agent goes on believing the tree is what it asked for.",
)
def test_delete_file(session, disk):
    disk.write("a.txt", TEXT)
    disk.write("b.txt", "neighbour\n")
    prepare_change(session, "a.txt")
    result = session.delete("a.txt", kind="file")
    assert not disk.exists("a.txt")
    assert disk.read("b.txt") == b"neighbour\n"
    assert result.path == "a.txt"
    assert result.kind == "file"


@clause(
    "DEL-002",
    MUST,
    requires={"read", "delete", "read_before_write"},
    text="Deleting a file this session has not read in full (and for which no "
    "expected_sha256 is given) fails with NOT_READ, and the file stays.",
    rationale="An agent that never saw a file's content cannot know what it throws away; "
    "the same rule as for replacing it.",
)
def test_delete_unread_file_is_refused(session, disk):
    _delete_read_file(session, disk)
    disk.write("a.txt", TEXT)
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.delete("a.txt", kind="file")
    disk.assert_unchanged(before)


@clause(
    "DEL-003",
    MUST,
    requires={"delete", "cas"},
    text="expected_sha256 stands in for a read: the file's current hash deletes it, any "
    "other hash fails with STALE and the file stays.",
    rationale="A host that knows the file's hash (from a listing or an earlier run) deletes "
    "it exactly when it is still that file, and never a newer version.",
)
def test_delete_with_expected_sha256(session, disk):
    disk.write("control.txt", "control\n")
    session.delete("control.txt", kind="file", expected_sha256=sha256("control\n"))
    assert not disk.exists("control.txt"), "control: the matching hash did not delete"
    disk.write("a.txt", TEXT)
    before = disk.snapshot()
    with raises_code("STALE"):
        session.delete("a.txt", kind="file", expected_sha256=sha256("something else\n"))
    disk.assert_unchanged(before)


@clause(
    "DEL-004",
    MUST,
    requires={"delete"},
    text="The stated kind must match the disk: 'file' for a directory fails with "
    "IS_A_DIRECTORY or INVALID_ARGUMENT, 'empty_dir' for a directory that holds entries and "
    "'tree' for a file with INVALID_ARGUMENT; nothing is deleted.",
    rationale="A model that means to delete a stale build file must not remove a directory "
    "that happens to have that name; stating the kind makes the intent checkable.",
)
def test_stated_kind_must_match(session, disk):
    disk.mkdir("empty")
    session.delete("empty", kind="empty_dir")
    assert not disk.exists("empty"), "control: an empty directory was not deleted"
    _tree(disk)
    disk.write("a.txt", TEXT)
    prepare_change(session, "a.txt")
    before = disk.snapshot()
    with raises_code("IS_A_DIRECTORY", "INVALID_ARGUMENT"):
        session.delete("pkg", kind="file")
    with raises_code("INVALID_ARGUMENT"):
        session.delete("pkg", kind="empty_dir")
    with raises_code("INVALID_ARGUMENT"):
        session.delete("a.txt", kind="tree", manifest_sha256="0" * 64)
    disk.assert_unchanged(before)


@clause(
    "DEL-005",
    MUST,
    requires={"delete"},
    text="A tree is deleted only with the manifest_sha256 of a manifest taken before: with "
    "it the whole tree goes and the result lists every entry; after an entry was added, "
    "changed or removed since, the delete fails with STALE and nothing is deleted.",
    rationale="Deleting a directory an agent listed a minute ago must not take the file "
    "the user saved into it since: that file was never seen by anyone who decided.",
)
def test_tree_needs_a_fresh_manifest(session, disk):
    files = _tree(disk, "old")
    listing = session.manifest("old")
    result = session.delete("old", kind="tree", manifest_sha256=listing.manifest_sha256)
    assert not disk.exists("old"), "control: the tree was not deleted"
    listed = {item.path for item in result.items}
    assert {path.removeprefix("old/") for path in files} <= listed, listed
    _tree(disk)
    listing = session.manifest("pkg")
    disk.write("pkg/sub/new.txt", "saved by the user\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.delete("pkg", kind="tree", manifest_sha256=listing.manifest_sha256)
    disk.assert_unchanged(before)
    listing = session.manifest("pkg")
    disk.write("pkg/a.py", "print('changed')\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.delete("pkg", kind="tree", manifest_sha256=listing.manifest_sha256)
    disk.assert_unchanged(before)


@clause(
    "DEL-006",
    MUST,
    requires={"delete"},
    text="Deleting a tree without a manifest_sha256 fails with INVALID_ARGUMENT and nothing "
    "is deleted.",
    rationale="A recursive delete with no statement of what the caller saw is the "
    "'rm -rf' no agent should be able to type by accident.",
)
def test_tree_without_manifest_is_refused(session, disk):
    _tree(disk, "old")
    listing = session.manifest("old")
    session.delete("old", kind="tree", manifest_sha256=listing.manifest_sha256)
    assert not disk.exists("old"), "control: the tree was not deleted"
    _tree(disk)
    before = disk.snapshot()
    with raises_code("INVALID_ARGUMENT"):
        session.delete("pkg", kind="tree")
    disk.assert_unchanged(before)


@clause(
    "DEL-007",
    MUST,
    requires={"delete", "snapshots"},
    text="What a delete removes is restorable: rewind(restore_ref) brings back every deleted "
    "file with its exact bytes, for a file and for a tree.",
    rationale="A deletion the agent regrets (or the user rejects) must be undoable like "
    "any edit; a delete that keeps nothing is the one irreversible tool call.",
)
def test_deleted_content_is_restorable(session, disk):
    disk.write("a.txt", TEXT)
    prepare_change(session, "a.txt")
    single = session.delete("a.txt", kind="file", message_id="m1")
    assert single.restore_ref, "a file delete reported no restore_ref"
    session.rewind(single.restore_ref)
    assert disk.read("a.txt") == TEXT.encode()
    files = _tree(disk)
    listing = session.manifest("pkg")
    whole = session.delete("pkg", kind="tree", manifest_sha256=listing.manifest_sha256)
    assert not disk.exists("pkg")
    assert whole.restore_ref, "a tree delete reported no restore_ref"
    session.rewind(whole.restore_ref)
    for path, data in files.items():
        assert disk.read(path) == data, f"{path} was not restored exactly"


@clause(
    "DEL-008",
    MUST,
    requires={"delete", "recovery", "python_fs"},
    text="A crash at any step of deleting a tree, followed by recovery, leaves the tree "
    "all-before (every file with its bytes) or all-after (none of it), never part of it.",
    rationale="A killed agent halfway through removing a package leaves a tree that imports "
    "half a module; the tree delete is one transaction, like a patch.",
)
def test_crash_during_tree_delete(disk, crash):
    warm = crash.restart().open_session("A")
    disk.write("warm/x.txt", "x")
    warm.delete("warm", kind="tree", manifest_sha256=warm.manifest("warm").manifest_sha256)

    def prepared():
        live = crash.restart().open_session("A")
        files = _tree(disk)
        return live, files, live.manifest("pkg").manifest_sha256

    live, files, digest = prepared()
    steps = len(crash.count(lambda: live.delete("pkg", kind="tree", manifest_sha256=digest)))
    assert steps > 0
    sides = {"before": 0, "after": 0}
    for step in range(1, steps + 1):
        live, files, digest = prepared()
        with crash.at(step):
            live.delete("pkg", kind="tree", manifest_sha256=digest)
        crash.restart().recover()
        present = {path: disk.read(path) for path in files if disk.exists(path)}
        if present:
            assert present == files, f"crash at step {step}: part of the tree is left: {present}"
            sides["before"] += 1
        else:
            assert not disk.exists("pkg"), f"crash at step {step}: empty directories left"
            sides["after"] += 1
        if disk.exists("pkg"):
            again = crash.restart().open_session("A")
            again.delete("pkg", kind="tree", manifest_sha256=again.manifest("pkg").manifest_sha256)
    assert sides["after"] > 0, f"no crash point reached the end: {sides}"


@clause(
    "DEL-009",
    MUST,
    requires={"read", "delete", "recovery", "python_fs"},
    text="A crash at any step of deleting a file, followed by recovery, leaves the file with "
    "its bytes or no file, and no stage, backup or temp file under the root.",
    rationale="A delete that goes through a journal must leave no side files a later glob "
    "shows the agent as real ones.",
)
def test_crash_during_file_delete(disk, crash):
    warm = crash.restart().open_session("A")
    disk.write("warm.txt", "x")
    prepare_change(warm, "warm.txt")
    warm.delete("warm.txt", kind="file")
    probe = crash.restart().open_session("A")
    disk.write("a.txt", TEXT)
    prepare_change(probe, "a.txt")
    steps = len(crash.count(lambda: probe.delete("a.txt", kind="file")))
    assert steps > 0
    for step in range(1, steps + 1):
        live = crash.restart().open_session("A")
        disk.write("a.txt", TEXT)
        prepare_change(live, "a.txt")
        with crash.at(step):
            live.delete("a.txt", kind="file")
        crash.restart().recover()
        if disk.exists("a.txt"):
            assert disk.read("a.txt") == TEXT.encode(), f"crash at step {step}: torn file"
        disk.assert_no_leftovers()


@clause(
    "DEL-010",
    MUST,
    requires={"delete", "confinement", "cas"},
    text="Delete is confined like every tool: a path outside the root fails with "
    "OUTSIDE_WORKSPACE and the file there stays.",
    rationale="A new tool is a new way out of the workspace; 'rm ../../.ssh/id_rsa' must be "
    "refused by the delete tool too.",
)
def test_delete_is_confined(session, disk):
    disk.write("control.txt", "control\n")
    session.delete("control.txt", kind="file", expected_sha256=sha256("control\n"))
    assert not disk.exists("control.txt"), "control: an inside file was not deleted"
    disk.write("absolute.txt", "control\n")  # the same through an absolute path inside
    session.delete(
        str(disk.root / "absolute.txt"), kind="file", expected_sha256=sha256("control\n")
    )
    assert not disk.exists("absolute.txt"), "control: an inside file named absolutely stayed"
    victim = disk.outside / "victim.txt"
    victim.write_text("outside\n")
    with raises_code("OUTSIDE_WORKSPACE"):
        session.delete("../outside/victim.txt", kind="file", expected_sha256=sha256("outside\n"))
    with raises_code("OUTSIDE_WORKSPACE"):
        session.delete(str(victim), kind="file", expected_sha256=sha256("outside\n"))
    assert victim.read_text() == "outside\n"


@clause(
    "DEL-011",
    MUST,
    requires={"delete", "cas"},
    text="Deleting a path that does not exist fails with NOT_FOUND (never a success).",
    rationale="A success for a file that was never there hides a wrong path the agent "
    "meant: the real file stays and the agent believes it is gone.",
)
def test_delete_missing_is_not_found(session, disk):
    disk.write("control.txt", "control\n")
    session.delete("control.txt", kind="file", expected_sha256=sha256("control\n"))
    assert not disk.exists("control.txt"), "control: an existing file was not deleted"
    with raises_code("NOT_FOUND"):
        session.delete("missing.txt", kind="file", expected_sha256=sha256("x"))


@clause(
    "DEL-012",
    MUST,
    requires={"delete", "snapshots"},
    text="rewind(restore_ref) of a tree delete brings back the whole tree: its empty "
    "directories (the tree's own directory included) and its symlinks, each pointing where "
    "it pointed, as well as its files.",
    rationale="A package whose empty data/ directory or whose symlinked config does not come "
    "back is not the package that was deleted; a rewind that restores files only leaves "
    "imports and builds broken.",
)
def test_tree_rewind_restores_directories_and_symlinks(session, disk, alias, symlinks):
    files = _tree(disk)
    disk.mkdir("pkg/empty")
    disk.mkdir("pkg/sub/also-empty")
    alias.symlink("pkg/link.py", "a.py")
    alias.symlink("pkg/sub/dangling", "missing-on-purpose")
    listing = session.manifest("pkg")
    deleted = session.delete("pkg", kind="tree", manifest_sha256=listing.manifest_sha256)
    assert not disk.exists("pkg"), "control: the tree was not deleted"
    assert deleted.restore_ref, "a tree delete reported no restore_ref"
    session.rewind(deleted.restore_ref)
    for path, data in files.items():
        assert disk.read(path) == data, f"{path} was not restored exactly"
    for directory in ("pkg/empty", "pkg/sub/also-empty"):
        real = disk.path(directory)
        assert real.is_dir() and not real.is_symlink(), f"{directory} did not come back"
        assert list(real.iterdir()) == [], f"{directory} came back with entries in it"
    for link, target in (("pkg/link.py", "a.py"), ("pkg/sub/dangling", "missing-on-purpose")):
        real = disk.path(link)
        assert real.is_symlink(), f"{link} did not come back as a symlink"
        assert os.readlink(real) == target, f"{link} points to {os.readlink(real)!r}"
