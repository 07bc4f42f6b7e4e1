"""apply_patch: plan in memory, commit as one transaction, snapshots and access records."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from editspec.fault_injection import FailAt, FaultyFileSystem
from editspec.reference import Limits, Session, ToolError, Workspace
from tests.reference.txn_helpers import SIDE_OR_TEMP_FILE, leftovers, write

from .patch_render import render_codex, render_unified

# -- helpers -------------------------------------------------------------------------------


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree(root: Path) -> dict[str, bytes | str | None]:
    """Every file (bytes), directory (None) and symlink (its target) under ``root``."""
    found: dict[str, bytes | str | None] = {}
    for directory, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(directory, name)
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[relative] = os.readlink(path)
            elif path.is_dir():
                found[relative] = None
            else:
                found[relative] = path.read_bytes()
    return dict(sorted(found.items()))


def patch(*sections: str) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


def history_messages(ws: Workspace, session_id: str = "s1") -> list[str]:
    return [record.message_id for record in ws.snapshots.history(session_id).live]


def fails_unchanged(
    ws: Workspace, code: str, action: Callable[[], object], root: Path
) -> ToolError:
    """``action`` raises ``code`` and leaves every byte and every directory as it was."""
    before = tree(root)
    with pytest.raises(ToolError) as info:
        action()
    assert info.value.code == code, info.value
    assert tree(root) == before
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []
    return info.value


@pytest.fixture
def ws(root: Path, state_dir: Path) -> Workspace:
    return Workspace(root, state_dir)


@pytest.fixture
def s1(ws: Workspace) -> Session:
    return ws.session("s1")


# -- the four operations -----------------------------------------------------------------


def test_add_update_delete_and_move_in_one_patch(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "upd.txt", b"alpha\nbeta\ngamma\n")
    write(root, "del.txt", b"doomed\n")
    write(root, "mv.txt", b"one\ntwo\n")
    for name in ("upd.txt", "del.txt", "mv.txt"):
        s1.read(name)
    result = s1.apply_patch(
        patch(
            "*** Add File: new/deep/added.txt\n+fresh\n+lines\n",
            "*** Update File: upd.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n",
            "*** Delete File: del.txt\n",
            "*** Update File: mv.txt\n*** Move to: far/away/moved.txt\n@@\n one\n-two\n+zwei\n",
        )
    )
    assert tree(root) == {
        "far": None,
        "far/away": None,
        "far/away/moved.txt": b"one\nzwei\n",
        "new": None,
        "new/deep": None,
        "new/deep/added.txt": b"fresh\nlines\n",
        "upd.txt": b"alpha\nBETA\ngamma\n",
    }
    by_path = {change.path: change for change in result.changes}
    assert [change.path for change in result.changes] == [
        "new/deep/added.txt",
        "upd.txt",
        "del.txt",
        "mv.txt",
    ]
    added, updated, deleted, moved = (
        by_path[p] for p in ("new/deep/added.txt", "upd.txt", "del.txt", "mv.txt")
    )
    assert (added.op, added.old_sha256, added.new_sha256) == ("add", None, sha(b"fresh\nlines\n"))
    assert "+fresh" in added.diff
    assert updated.op == "update"
    assert (updated.old_sha256, updated.new_sha256) == (
        sha(b"alpha\nbeta\ngamma\n"),
        sha(b"alpha\nBETA\ngamma\n"),
    )
    assert "-beta\n+BETA\n" in updated.diff
    assert (deleted.op, deleted.new_sha256) == ("delete", None)
    assert deleted.old_sha256 == sha(b"doomed\n")
    assert "-doomed" in deleted.diff
    assert (moved.op, moved.move_to) == ("move", "far/away/moved.txt")
    assert moved.new_sha256 == sha(b"one\nzwei\n")
    assert "+zwei" in moved.diff
    assert result.transaction_id
    assert result.snapshot_created is False
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []


def test_pure_move_keeps_bytes_and_mode(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "bin.dat", b"\x00\x01\x02binary")
    os.chmod(root / "bin.dat", 0o751)
    s1.read("bin.dat")
    result = s1.apply_patch(patch("*** Update File: bin.dat\n*** Move to: sub/bin.dat\n"))
    assert tree(root) == {"sub": None, "sub/bin.dat": b"\x00\x01\x02binary"}
    assert os.stat(root / "sub" / "bin.dat").st_mode & 0o7777 == 0o751
    assert result.changes[0].old_sha256 == result.changes[0].new_sha256


def test_update_keeps_the_file_mode(root: Path, s1: Session) -> None:
    write(root, "run.sh", b"#!/bin/sh\necho a\n")
    os.chmod(root / "run.sh", 0o755)
    s1.read("run.sh")
    s1.apply_patch(patch("*** Update File: run.sh\n@@\n-echo a\n+echo b\n"))
    assert (root / "run.sh").read_bytes() == b"#!/bin/sh\necho b\n"
    assert os.stat(root / "run.sh").st_mode & 0o7777 == 0o755


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        (b"a\r\nb\r\nc\r\n", b"a\r\nB\r\nc\r\n"),  # CRLF kept, also on the new line
        (b"\xef\xbb\xbfa\nb\nc\n", b"\xef\xbb\xbfa\nB\nc\n"),  # UTF-8 BOM kept
        (b"a\nb\nc", b"a\nB\nc"),  # no final newline stays so
        (b"\xef\xbb\xbfa\r\nb\r\nc", b"\xef\xbb\xbfa\r\nB\r\nc"),  # all three at once
        (
            "a\nb\nc\n".encode("utf-16"),  # UTF-16 with BOM stays UTF-16
            "a\nB\nc\n".encode("utf-16"),
        ),
    ],
)
def test_text_format_is_kept(root: Path, s1: Session, original: bytes, expected: bytes) -> None:
    write(root, "f.txt", original)
    s1.read("f.txt")
    s1.apply_patch(patch("*** Update File: f.txt\n@@\n a\n-b\n+B\n c\n"))
    assert (root / "f.txt").read_bytes() == expected


def test_unified_diff_goes_through_the_same_plan(root: Path, s1: Session) -> None:
    write(root, "u.txt", b"1\n2\n3\n")
    s1.read("u.txt")
    diff = "--- a/u.txt\n+++ b/u.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n"
    result = s1.apply_patch(diff)
    assert (root / "u.txt").read_bytes() == b"1\ntwo\n3\n"
    assert result.changes[0].op == "update"


def test_written_files_count_as_read_afterwards(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    write(root, "gone.txt", b"x\n")
    s1.read("a.txt")
    s1.read("gone.txt")
    s1.apply_patch(
        patch(
            "*** Update File: a.txt\n@@\n-a\n+b\n",
            "*** Add File: n.txt\n+n\n",
            "*** Delete File: gone.txt\n",
        )
    )
    # No re-read needed for the session's own results ...
    s1.apply_patch(
        patch(
            "*** Update File: a.txt\n@@\n-b\n+c\n",
            "*** Update File: n.txt\n*** Move to: m.txt\n@@\n-n\n+m\n",
        )
    )
    assert (root / "a.txt").read_bytes() == b"c\n"
    assert (root / "m.txt").read_bytes() == b"m\n"
    # ... and a name that was deleted or moved away is forgotten.
    assert ws.access.get("s1", str(root / "gone.txt")) is None
    assert ws.access.get("s1", str(root / "n.txt")) is None
    write(root, "n.txt", b"someone else's\n")
    fails_unchanged(ws, "NOT_READ", lambda: s1.apply_patch(patch("*** Delete File: n.txt\n")), root)
    # Another session's read does not count for this one.
    fails_unchanged(
        ws,
        "NOT_READ",
        lambda: ws.session("s2").apply_patch(patch("*** Update File: a.txt\n@@\n-c\n+d\n")),
        root,
    )


# -- every failure leaves the disk as it was ---------------------------------------------


def test_syntax_error(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    fails_unchanged(ws, "PATCH_SYNTAX", lambda: s1.apply_patch("*** Begin Patch\nnonsense\n"), root)


def test_patch_over_the_size_limit(root: Path, state_dir: Path) -> None:
    ws = Workspace(root, state_dir, Limits(patch_bytes=64))
    session = ws.session("s1")
    text = patch("*** Add File: big.txt\n" + "+x\n" * 40)
    fails_unchanged(ws, "TOO_LARGE", lambda: session.apply_patch(text), root)


def test_file_over_the_size_limit(root: Path, state_dir: Path) -> None:
    ws = Workspace(root, state_dir, Limits(edit_file_bytes=100))
    session = ws.session("s1")
    write(root, "big.txt", b"line\n" * 30)
    write(root, "small.txt", b"a\n")
    session.read("small.txt")
    fails_unchanged(
        ws,
        "TOO_LARGE",
        lambda: session.apply_patch(
            patch(
                "*** Update File: small.txt\n@@\n-a\n+b\n",
                "*** Update File: big.txt\n@@\n-line\n+LINE\n line\n",
            )
        ),
        root,
    )
    # growing a small file past the limit is refused too
    fails_unchanged(
        ws,
        "TOO_LARGE",
        lambda: session.apply_patch(patch("*** Update File: small.txt\n@@\n-a\n" + "+b\n" * 60)),
        root,
    )


def test_transaction_over_its_limit(root: Path, state_dir: Path) -> None:
    ws = Workspace(root, state_dir, Limits(transaction_bytes=50))
    session = ws.session("s1")
    text = patch(*(f"*** Add File: f{i}.txt\n+{'x' * 20}\n" for i in range(3)))
    fails_unchanged(ws, "TOO_LARGE", lambda: session.apply_patch(text), root)


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd-editspec", "sub/../../x"])
def test_paths_outside_the_workspace(root: Path, ws: Workspace, s1: Session, path: str) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    fails_unchanged(
        ws,
        "OUTSIDE_WORKSPACE",
        lambda: s1.apply_patch(
            patch("*** Update File: a.txt\n@@\n-a\n+b\n", f"*** Add File: {path}\n+x\n")
        ),
        root,
    )


def test_move_outside_the_workspace(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    fails_unchanged(
        ws,
        "OUTSIDE_WORKSPACE",
        lambda: s1.apply_patch(patch("*** Update File: a.txt\n*** Move to: ../a.txt\n")),
        root,
    )


def test_symlink_escaping_the_root(root: Path, ws: Workspace, s1: Session, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    fails_unchanged(
        ws,
        "OUTSIDE_WORKSPACE",
        lambda: s1.apply_patch(patch("*** Add File: link/evil.txt\n+x\n")),
        root,
    )
    assert list(outside.iterdir()) == []


def test_add_on_an_existing_file(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    fails_unchanged(
        ws, "ALREADY_EXISTS", lambda: s1.apply_patch(patch("*** Add File: a.txt\n+b\n")), root
    )


def test_move_onto_an_existing_file(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    write(root, "b.txt", b"b\n")
    s1.read("a.txt")
    fails_unchanged(
        ws,
        "ALREADY_EXISTS",
        lambda: s1.apply_patch(patch("*** Update File: a.txt\n*** Move to: b.txt\n")),
        root,
    )


@pytest.mark.parametrize(
    "section", ["*** Delete File: missing.txt\n", "*** Update File: missing.txt\n@@\n-a\n+b\n"]
)
def test_missing_file(root: Path, ws: Workspace, s1: Session, section: str) -> None:
    write(root, "a.txt", b"a\n")
    fails_unchanged(ws, "NOT_FOUND", lambda: s1.apply_patch(patch(section)), root)


def test_directory_is_not_a_file(root: Path, ws: Workspace, s1: Session) -> None:
    (root / "d").mkdir()
    fails_unchanged(
        ws, "IS_A_DIRECTORY", lambda: s1.apply_patch(patch("*** Delete File: d\n")), root
    )


def test_same_path_twice(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    text = patch("*** Update File: a.txt\n@@\n-a\n+b\n", "*** Delete File: a.txt\n")
    fails_unchanged(ws, "INVALID_ARGUMENT", lambda: s1.apply_patch(text), root)


def test_same_file_twice_through_an_alias(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    (root / "alias.txt").symlink_to("a.txt")
    s1.read("a.txt")
    text = patch("*** Update File: a.txt\n@@\n-a\n+b\n", "*** Update File: alias.txt\n@@\n-a\n+c\n")
    fails_unchanged(ws, "INVALID_ARGUMENT", lambda: s1.apply_patch(text), root)


def test_move_onto_its_own_path(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    text = patch("*** Update File: a.txt\n*** Move to: a.txt\n@@\n-a\n+b\n")
    fails_unchanged(ws, "INVALID_ARGUMENT", lambda: s1.apply_patch(text), root)


def test_update_needs_a_read(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    write(root, "b.txt", b"b\n")
    s1.read("a.txt")
    text = patch("*** Update File: a.txt\n@@\n-a\n+A\n", "*** Update File: b.txt\n@@\n-b\n+B\n")
    fails_unchanged(ws, "NOT_READ", lambda: s1.apply_patch(text), root)


@pytest.mark.parametrize(
    "section",
    [
        "*** Delete File: a.txt\n",
        "*** Update File: a.txt\n*** Move to: b.txt\n",
        "*** Update File: a.txt\n@@\n-a\n+b\n",
    ],
)
def test_every_changed_file_needs_a_full_read(
    root: Path, ws: Workspace, s1: Session, section: str
) -> None:
    write(root, "a.txt", b"a\nmore\n")
    s1.read("a.txt", start_line=1, end_line=1)  # partial
    fails_unchanged(ws, "NOT_READ", lambda: s1.apply_patch(patch(section)), root)


def test_stale_read(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    stat_before = os.stat(root / "a.txt")
    write(root, "a.txt", b"z\n")  # same size
    os.utime(root / "a.txt", ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))
    fails_unchanged(
        ws, "STALE", lambda: s1.apply_patch(patch("*** Update File: a.txt\n@@\n-z\n+b\n")), root
    )


def test_binary_file(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "img.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    s1.read("img.png")
    fails_unchanged(
        ws, "BINARY", lambda: s1.apply_patch(patch("*** Update File: img.png\n@@\n-a\n+b\n")), root
    )


def test_notebook(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "nb.ipynb", b'{\n "cells": []\n}\n')
    s1.read("nb.ipynb")
    error = fails_unchanged(
        ws,
        "UNSUPPORTED",
        lambda: s1.apply_patch(patch('*** Update File: nb.ipynb\n@@\n-{\n+[\n "cells": []\n')),
        root,
    )
    assert "notebook" in error.message


def test_context_that_does_not_match(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    write(root, "b.txt", b"b\n")
    s1.read("a.txt")
    s1.read("b.txt")
    text = patch("*** Update File: a.txt\n@@\n-a\n+A\n", "*** Update File: b.txt\n@@\n-nope\n+B\n")
    fails_unchanged(ws, "NO_MATCH", lambda: s1.apply_patch(text), root)


def test_a_file_changed_during_the_plan_is_stale(root: Path, ws: Workspace, s1: Session) -> None:
    """The re-verification under the locks catches a change after the plan was made."""
    from editspec.reference.patch import _patch

    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    real_plan = _patch.plan

    def plan_then_interfere(session: Session, ops: object) -> object:
        planned = real_plan(session, ops)  # type: ignore[arg-type]
        write(root, "a.txt", b"external\n")
        return planned

    _patch.plan = plan_then_interfere  # type: ignore[assignment]
    try:
        with pytest.raises(ToolError) as info:
            s1.apply_patch(patch("*** Update File: a.txt\n@@\n-a\n+b\n"))
    finally:
        _patch.plan = real_plan
    assert info.value.code == "STALE"
    assert tree(root) == {"a.txt": b"external\n"}
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []


# -- snapshots -------------------------------------------------------------------------


def test_snapshot_with_message_id(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    write(root, "b.txt", b"b\n")
    s1.read("a.txt")
    s1.read("b.txt")
    result = s1.apply_patch(
        patch(
            "*** Update File: a.txt\n@@\n-a\n+A\n",
            "*** Update File: b.txt\n*** Move to: c.txt\n",
            "*** Add File: d.txt\n+d\n",
        ),
        message_id="m1",
    )
    assert result.snapshot_created is True
    (record,) = ws.snapshots.history("s1").live
    assert record.message_id == "m1"
    assert record.transaction_id == result.transaction_id
    entries = {(e.relative, e.existed, e.before_sha256, e.after_sha256) for e in record.entries}
    assert entries == {
        ("a.txt", True, sha(b"a\n"), sha(b"A\n")),
        ("b.txt", True, sha(b"b\n"), None),
        ("c.txt", False, None, sha(b"b\n")),
        ("d.txt", False, None, sha(b"d\n")),
    }
    assert ws.snapshots.read_blob("s1", sha(b"a\n")) == b"a\n"
    assert ws.snapshots.pending_transactions() == frozenset()


def test_no_snapshot_without_message_id(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    result = s1.apply_patch(patch("*** Update File: a.txt\n@@\n-a\n+A\n"))
    assert result.snapshot_created is False
    assert history_messages(ws) == []


def test_a_failed_plan_records_no_snapshot(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    fails_unchanged(
        ws,
        "NO_MATCH",
        lambda: s1.apply_patch(patch("*** Update File: a.txt\n@@\n-x\n+A\n"), message_id="m1"),
        root,
    )
    assert history_messages(ws) == []


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO])
def test_a_snapshot_failure_aborts_the_patch(root: Path, state_dir: Path, error: int) -> None:
    """Any failure while creating the snapshots aborts before anything is published."""
    write(root, "a.txt", b"a\n")
    write(root, "b.txt", b"b\n")
    text = patch("*** Update File: a.txt\n@@\n-a\n+A\n", "*** Delete File: b.txt\n")
    probe = FaultyFileSystem()
    ws = Workspace(root, state_dir / "probe", fs=probe)
    session = ws.session("s1")
    session.read("a.txt")
    session.read("b.txt")
    probe.arm(None)
    session.apply_patch(text, message_id="m1")
    first_journal_op = min(
        op.index for op in probe.log if any("/journal/" in path for path in op.paths)
    )
    snapshot_ops = [
        op.index
        for op in probe.log
        if op.index < first_journal_op and any("/snapshots/" in path for path in op.paths)
    ]
    assert len(snapshot_ops) > 5
    write(root, "a.txt", b"a\n")
    write(root, "b.txt", b"b\n")
    for n in snapshot_ops:
        fs = FaultyFileSystem()
        ws = Workspace(root, state_dir / f"fail{n}", fs=fs)
        session = ws.session("s1")
        session.read("a.txt")
        session.read("b.txt")
        fs.arm(FailAt(n, error))
        before = tree(root)
        with pytest.raises(ToolError) as info:
            session.apply_patch(text, message_id="m1")
        assert info.value.code == "IO_ERROR"
        assert tree(root) == before
        assert leftovers(ws, SIDE_OR_TEMP_FILE) == []
        assert history_messages(ws) == []
        assert ws.snapshots.pending_transactions() == frozenset()
        temps = [p.name for p in (state_dir / f"fail{n}").rglob(".tmp-*")]
        assert temps == [], f"failure at operation {n} left {temps}"


def test_a_failed_confirm_is_finished_by_recovery(root: Path, state_dir: Path) -> None:
    """The snapshot is confirmed after the commit point; if that fails, recovery does it."""
    write(root, "a.txt", b"a\n")
    text = patch("*** Update File: a.txt\n@@\n-a\n+A\n")
    probe = FaultyFileSystem()
    ws = Workspace(root, state_dir / "probe", fs=probe)
    ws.session("s1").read("a.txt")
    probe.arm(None)
    ws.session("s1").apply_patch(text, message_id="m1")
    confirm_ops = [
        op.index
        for op in probe.log
        if op.name == "rename" and "/_pending/" in op.paths[0] and "/_pending/" not in op.paths[1]
    ]
    assert len(confirm_ops) == 1
    write(root, "a.txt", b"a\n")
    fs = FaultyFileSystem()
    ws = Workspace(root, state_dir / "run", fs=fs)
    session = ws.session("s1")
    session.read("a.txt")
    fs.arm(FailAt(confirm_ops[0], errno.EIO))
    result = session.apply_patch(text, message_id="m1")
    assert (root / "a.txt").read_bytes() == b"A\n"  # committed: the change stands
    assert result.snapshot_created is True
    assert history_messages(ws) == []  # not confirmed yet ...
    with pytest.raises(ToolError) as info:
        session.write("a.txt", "refused until recovery\n")
    assert info.value.code == "NEEDS_RECOVERY"
    fs.disarm()
    report = ws.recover()
    assert report.rolled_forward == (result.transaction_id,)
    assert history_messages(ws) == ["m1"]  # ... and confirmed by recovery
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []
    session.rewind("m1")
    assert (root / "a.txt").read_bytes() == b"a\n"


# -- round trip against an independent renderer ------------------------------------------

_LINE = st.text(alphabet="abcxyz =(){}", min_size=0, max_size=8)
_TEXT = st.lists(_LINE, min_size=0, max_size=8).map(lambda lines: "".join(f"{x}\n" for x in lines))


@given(
    old=st.dictionaries(st.sampled_from(["a.txt", "b.txt", "d/c.txt", "e.txt"]), _TEXT, max_size=4),
    new=st.dictionaries(
        st.sampled_from(["a.txt", "b.txt", "d/c.txt", "f/g.txt"]), _TEXT, max_size=4
    ),
    move=st.booleans(),
    unified=st.booleans(),
)
def test_round_trip(
    tmp_path_factory: pytest.TempPathFactory,
    old: dict[str, str],
    new: dict[str, str],
    move: bool,
    unified: bool,
) -> None:
    """A rendered patch turns the disk from ``old`` into ``new``; rewind turns it back."""
    moves: dict[str, str] = {}
    if move and old:
        source = min(old)
        new = {
            **{p: t for p, t in new.items() if p != source},
            "m/moved.txt": new.get(source, old[source]),
        }
        moves = {source: "m/moved.txt"}
    assume(any(old.get(p) != new.get(p) for p in set(old) | set(new)))
    base = tmp_path_factory.mktemp("rt")
    root = base / "ws"
    root.mkdir()
    for path, text in old.items():
        write(root, path, text.encode())
    ws = Workspace(root, base / "state")
    session = ws.session("s1")
    for path in old:
        session.read(path)
    render = render_unified if unified else render_codex
    session.apply_patch(render(old, new, moves=moves), message_id="m1")
    files = {p: data for p, data in tree(root).items() if isinstance(data, bytes)}
    assert files == {path: text.encode() for path, text in new.items()}
    session.rewind("m1")
    files = {p: data for p, data in tree(root).items() if isinstance(data, bytes)}
    assert files == {path: text.encode() for path, text in old.items()}
    assert leftovers(ws, SIDE_OR_TEMP_FILE) == []


def test_update_through_a_symlink_changes_the_target_and_keeps_the_link(
    root: Path, ws: Workspace, s1: Session
) -> None:
    write(root, "real.txt", b"a\n")
    (root / "alias.txt").symlink_to("real.txt")
    s1.read("alias.txt")
    result = s1.apply_patch(patch("*** Update File: alias.txt\n@@\n-a\n+b\n"))
    assert (root / "real.txt").read_bytes() == b"b\n"
    assert os.readlink(root / "alias.txt") == "real.txt"
    assert result.changes[0].path == "alias.txt"


@pytest.mark.parametrize(
    "section", ["*** Delete File: alias.txt\n", "*** Update File: alias.txt\n*** Move to: x.txt\n"]
)
def test_delete_or_move_of_a_symlink_is_refused(
    root: Path, ws: Workspace, s1: Session, section: str
) -> None:
    write(root, "real.txt", b"a\n")
    (root / "alias.txt").symlink_to("real.txt")
    s1.read("alias.txt")
    fails_unchanged(ws, "UNSUPPORTED", lambda: s1.apply_patch(patch(section)), root)


def test_paths_through_a_linked_directory_are_fine(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "real/f.txt", b"a\n")
    (root / "linked").symlink_to("real")
    s1.read("linked/f.txt")
    s1.apply_patch(patch("*** Delete File: linked/f.txt\n"))
    assert tree(root) == {"linked": "real", "real": None}


def test_bad_arguments(root: Path, ws: Workspace, s1: Session) -> None:
    write(root, "a.txt", b"a\n")
    s1.read("a.txt")
    text = patch("*** Update File: a.txt\n@@\n-a\n+b\n")
    fails_unchanged(ws, "INVALID_ARGUMENT", lambda: s1.apply_patch(b"x"), root)  # type: ignore[arg-type]
    fails_unchanged(ws, "INVALID_ARGUMENT", lambda: s1.apply_patch(text, message_id=""), root)
