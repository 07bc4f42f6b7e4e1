"""Retention of quarantined trees (``transactions/_quarantine``): what is purged, when,
and that rewind does not need what was purged. Every check looks at the disk."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from editspec.fault_injection import CrashAt, FaultyFileSystem, SimulatedCrash
from editspec.reference import Limits, Workspace
from editspec.reference.transactions import _intents, _quarantine


def _quarantined(workspace: Workspace) -> list[str]:
    directory = _intents.quarantine_dir(workspace)
    if not os.path.isdir(directory):
        return []
    return sorted(name for name in os.listdir(directory) if not name.endswith(".json"))


def _delete(workspace: Workspace, name: str, message_id: str) -> str:
    root = Path(workspace.root)
    (root / name / "sub").mkdir(parents=True)
    (root / name / "sub" / "f.txt").write_bytes(f"{name}\n".encode())
    os.symlink("sub/f.txt", root / name / "link")
    session = workspace.session("s")
    digest = session.manifest(name).manifest_sha256
    result = session.delete(name, kind="tree", manifest_sha256=digest, message_id=message_id)
    assert result.quarantine is not None
    return os.path.basename(result.quarantine)


def test_beyond_the_count_the_oldest_trees_are_purged(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    limits = Limits(quarantine_trees=2)
    workspace = Workspace(tmp_path / "root", tmp_path / "state", limits=limits)
    ids = []
    for index in range(3):
        ids.append(_delete(workspace, f"pkg{index}", f"m{index}"))
        time.sleep(0.002)  # ids carry milliseconds: three deletes, three times
    assert _quarantined(workspace) == sorted(ids[1:])
    directory = Path(_intents.quarantine_dir(workspace))
    assert (directory / ids[2] / "sub" / "f.txt").read_bytes() == b"pkg2\n"
    assert os.readlink(directory / ids[2] / "link") == "sub/f.txt"
    # The purged tree's delete is still rewound: the snapshot keeps what it needs.
    workspace.session("s").rewind("m0")
    root = tmp_path / "root"
    assert (root / "pkg0" / "sub" / "f.txt").read_bytes() == b"pkg0\n"
    assert os.readlink(root / "pkg0" / "link") == "sub/f.txt"


def test_trees_past_their_age_are_purged_at_recovery(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    workspace = Workspace(tmp_path / "root", tmp_path / "state")
    old = _delete(workspace, "old", "m0")
    assert _quarantined(workspace) == [old]
    # Within the age, a new workspace (its constructor recovers, then purges) keeps it.
    Workspace(tmp_path / "root", tmp_path / "state")
    assert _quarantined(workspace) == [old]
    # Past it, the next purge removes it, and only it.
    later = time.time() + workspace.limits.quarantine_seconds + 60  # type: ignore[operator]
    directory = Path(_intents.quarantine_dir(workspace))
    (directory / "notes.txt").write_bytes(b"not a tree of ours\n")
    assert _quarantine.purge(workspace, now=later) == [old]
    assert _quarantined(workspace) == ["notes.txt"]
    assert (directory / "notes.txt").read_bytes() == b"not a tree of ours\n"


def test_no_bound_keeps_everything(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    limits = Limits(quarantine_trees=None, quarantine_seconds=None)
    workspace = Workspace(tmp_path / "root", tmp_path / "state", limits=limits)
    ids = [_delete(workspace, f"pkg{index}", f"m{index}") for index in range(2)]
    assert _quarantine.purge(workspace, now=time.time() + 10**9) == []
    assert _quarantined(workspace) == sorted(ids)


def test_a_tree_whose_delete_is_unsettled_is_never_purged(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    fs = FaultyFileSystem()
    limits = Limits(quarantine_trees=0)
    workspace = Workspace(tmp_path / "root", tmp_path / "state", limits=limits, fs=fs)
    root = tmp_path / "root"
    (root / "pkg").mkdir()
    (root / "pkg" / "f.txt").write_bytes(b"f\n")
    session = workspace.session("s")
    digest = session.manifest("pkg").manifest_sha256
    session.delete("pkg", kind="tree", manifest_sha256=digest)  # the state dirs, the blob
    assert _quarantined(workspace) == []  # quarantine_trees=0: purged right away
    (root / "pkg").mkdir()
    (root / "pkg" / "f.txt").write_bytes(b"f\n")
    fs.arm()
    session.delete("pkg", kind="tree", manifest_sha256=digest)
    rename = next(op.index for op in fs.log if op.name == "rename" and op.paths[0].endswith("/pkg"))
    (root / "pkg").mkdir()
    (root / "pkg" / "f.txt").write_bytes(b"f\n")
    fs.arm(CrashAt(rename + 1))  # the tree is in the quarantine, its intent unsettled
    with pytest.raises(SimulatedCrash):
        session.delete("pkg", kind="tree", manifest_sha256=digest)
    (name,) = _quarantined(workspace)
    fs.crashed = False  # revive the port only to call purge on this workspace directly
    fs.disarm()
    assert _quarantine.purge(workspace, now=time.time() + 10**9) == []
    assert (Path(_intents.quarantine_dir(workspace)) / name / "f.txt").read_bytes() == b"f\n"
    # Recovery settles the intent first; the purge after it then applies the rule.
    Workspace(root, tmp_path / "state", limits=limits)
    assert _quarantined(workspace) == []
