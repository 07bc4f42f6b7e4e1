"""Stale detection and per-session read records (``reference/_access.py``, TRACK)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from editspec.reference import Session, ToolError, Workspace
from editspec.reference.guards._access import AccessTracker


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_error(session: Session, path: str, content: str) -> str:
    with pytest.raises(ToolError) as info:
        session.write(path, content)
    return info.value.code


# -- end to end, through Read and Write ------------------------------------------------


def test_same_size_same_mtime_change_is_stale(session: Session, root: Path) -> None:
    target = root / "f.txt"
    target.write_bytes(b"version 1\n")
    session.read("f.txt")
    before = os.stat(target)
    target.write_bytes(b"version 2\n")  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert _write_error(session, "f.txt", "mine\n") == "STALE"
    assert target.read_bytes() == b"version 2\n"


def test_a_bare_touch_is_not_stale(session: Session, root: Path) -> None:
    target = root / "f.txt"
    target.write_bytes(b"same\n")
    session.read("f.txt")
    later = os.stat(target).st_mtime_ns + 5_000_000_000
    os.utime(target, ns=(later, later))
    session.write("f.txt", "mine\n")
    assert target.read_bytes() == b"mine\n"


def test_another_sessions_read_does_not_authorize(workspace: Workspace, root: Path) -> None:
    (root / "f.txt").write_bytes(b"x")
    alice, bob = workspace.session("alice"), workspace.session("bob")
    bob.read("f.txt")
    assert _write_error(alice, "f.txt", "alice") == "NOT_READ"
    bob.write("f.txt", "bob")
    assert (root / "f.txt").read_bytes() == b"bob"


def test_a_partial_read_does_not_authorize(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"1\n2\n3\n")
    session.read("f.txt", start_line=2)
    assert _write_error(session, "f.txt", "x") == "NOT_READ"
    session.read("f.txt", start_byte=0, max_bytes=2)
    assert _write_error(session, "f.txt", "x") == "NOT_READ"
    assert (root / "f.txt").read_bytes() == b"1\n2\n3\n"


def test_a_partial_read_after_a_full_one_keeps_the_authorization(
    session: Session, root: Path
) -> None:
    (root / "f.txt").write_bytes(b"1\n2\n")
    session.read("f.txt")
    session.read("f.txt", start_line=2)
    session.write("f.txt", "ok")
    assert (root / "f.txt").read_bytes() == b"ok"


def test_the_record_is_refreshed_after_the_sessions_own_write(
    session: Session, workspace: Workspace, root: Path
) -> None:
    (root / "f.txt").write_bytes(b"v1")
    session.read("f.txt")
    session.write("f.txt", "v2")
    record = workspace.access.get("s1", str(root / "f.txt"))
    assert record is not None
    assert (record.sha256, record.size, record.full) == (_sha(b"v2"), 2, True)
    assert record.mtime_ns == os.stat(root / "f.txt").st_mtime_ns
    session.write("f.txt", "v3")  # no read needed after its own write
    (root / "f.txt").write_bytes(b"external")
    assert _write_error(session, "f.txt", "v4") == "STALE"
    assert (root / "f.txt").read_bytes() == b"external"


def test_a_write_by_another_session_makes_this_sessions_read_stale(
    workspace: Workspace, root: Path
) -> None:
    (root / "f.txt").write_bytes(b"v1")
    alice, bob = workspace.session("alice"), workspace.session("bob")
    alice.read("f.txt")
    bob.read("f.txt")
    bob.write("f.txt", "bob")
    assert _write_error(alice, "f.txt", "alice") == "STALE"
    assert (root / "f.txt").read_bytes() == b"bob"


def test_reading_again_after_a_stale_error_authorizes(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"v1")
    session.read("f.txt")
    (root / "f.txt").write_bytes(b"v2")
    assert _write_error(session, "f.txt", "x") == "STALE"
    session.read("f.txt")
    session.write("f.txt", "x")
    assert (root / "f.txt").read_bytes() == b"x"


def test_an_alias_shares_the_record_of_its_target(session: Session, root: Path) -> None:
    (root / "real.txt").write_bytes(b"r")
    (root / "alias.txt").symlink_to("real.txt")
    session.read("alias.txt")
    session.write("real.txt", "via the real name")
    assert (root / "real.txt").read_bytes() == b"via the real name"


def test_a_deleted_and_recreated_file_is_stale(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"first")
    session.read("f.txt")
    (root / "f.txt").unlink()
    (root / "f.txt").write_bytes(b"other")
    assert _write_error(session, "f.txt", "x") == "STALE"
    assert (root / "f.txt").read_bytes() == b"other"


# -- the tracker itself ----------------------------------------------------------------


def test_require_fresh_without_a_record_is_not_read() -> None:
    with pytest.raises(ToolError) as info:
        AccessTracker().require_fresh("s", "/k", current_sha256=_sha(b"x"))
    assert info.value.code == "NOT_READ"


def test_require_fresh_compares_hashes_only() -> None:
    tracker = AccessTracker()
    tracker.record_read("s", "/k", sha256=_sha(b"a"), size=1, mtime_ns=1, full=True)
    tracker.require_fresh("s", "/k", current_sha256=_sha(b"a"))
    with pytest.raises(ToolError) as info:
        tracker.require_fresh("s", "/k", current_sha256=_sha(b"b"))
    assert info.value.code == "STALE"


def test_expected_sha256_replaces_the_record() -> None:
    tracker = AccessTracker()
    tracker.require_fresh("s", "/k", current_sha256=_sha(b"a"), expected_sha256=_sha(b"a"))
    with pytest.raises(ToolError) as info:
        tracker.require_fresh("s", "/k", current_sha256=_sha(b"a"), expected_sha256=_sha(b"b"))
    assert info.value.code == "STALE"


def test_a_partial_read_of_new_content_replaces_an_old_full_record() -> None:
    tracker = AccessTracker()
    tracker.record_read("s", "/k", sha256=_sha(b"old"), size=3, mtime_ns=1, full=True)
    tracker.record_read("s", "/k", sha256=_sha(b"new"), size=3, mtime_ns=2, full=False)
    record = tracker.get("s", "/k")
    assert record is not None and not record.full
    with pytest.raises(ToolError) as info:
        tracker.require_fresh("s", "/k", current_sha256=_sha(b"new"))
    assert info.value.code == "NOT_READ"


def test_forget_removes_only_that_sessions_record() -> None:
    tracker = AccessTracker()
    for session_id in ("a", "b"):
        tracker.record_read(session_id, "/k", sha256=_sha(b"x"), size=1, mtime_ns=1, full=True)
    tracker.forget("a", "/k")
    assert tracker.get("a", "/k") is None
    assert tracker.get("b", "/k") is not None
