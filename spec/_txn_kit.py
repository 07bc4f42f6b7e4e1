"""A small multi-file scenario for the TXN, RECOV and SNAP clauses, and the tools to rerun it.

The scenario is one patch over a three-file tree that does every kind of change: an update,
a delete, an add into a new directory, and a move with a hunk into another new directory.
Crash clauses run it again and again, each time over a freshly written tree and a freshly
started driver, so every run starts from the same bytes; the tree stays small so that a
clause can try every crash point of the patch in a second or two.

``Names`` (every file and directory under the root, with the bytes of the files) is what
"all-before" and "all-after" compare: a stage, backup or temp file left anywhere under the
root, or a directory the transaction created and left behind, makes a state neither.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from editspec.spec import _calls
from editspec.spec.crash import CrashKit, crash_at
from editspec.spec.fixtures import Disk

BEFORE: Mapping[str, bytes] = {
    "a.txt": b"alpha one\nalpha two\nalpha three\n",
    "b.txt": b"bravo\n",
    "c.txt": b"charlie one\ncharlie two\n",
}

PATCH = (
    "*** Begin Patch\n"
    "*** Update File: a.txt\n"
    "@@\n"
    " alpha one\n"
    "-alpha two\n"
    "+ALPHA TWO\n"
    "*** Delete File: b.txt\n"
    "*** Add File: new/added.txt\n"
    "+added line\n"
    "*** Update File: c.txt\n"
    "*** Move to: moved/c.txt\n"
    "@@\n"
    " charlie one\n"
    "-charlie two\n"
    "+CHARLIE TWO\n"
    "*** End Patch\n"
)

AFTER: Mapping[str, bytes] = {
    "a.txt": b"alpha one\nALPHA TWO\nalpha three\n",
    "new/added.txt": b"added line\n",
    "moved/c.txt": b"charlie one\nCHARLIE TWO\n",
}

#: The names the patch publishes (a rename, replace or link onto one of them publishes).
PUBLISHED_NAMES = frozenset({"a.txt", "added.txt", "c.txt"})

#: Crash and fault loops stop here at the latest (an implementation that never finishes).
MAX_STEPS = 3000


def names(disk: Disk) -> dict[str, bytes | None]:
    """Every name under the root: files with their bytes, directories and others as None."""
    found: dict[str, bytes | None] = {}
    for directory, dirnames, filenames in os.walk(disk.root):
        for name in dirnames + filenames:
            full = os.path.join(directory, name)
            rel = os.path.relpath(full, disk.root).replace(os.sep, "/")
            info = os.lstat(full)
            if stat.S_ISREG(info.st_mode):
                with open(full, "rb") as handle:
                    found[rel] = handle.read()
            else:
                found[rel] = None
    return found


def expected_names(files: Mapping[str, bytes]) -> dict[str, bytes | None]:
    """``names`` of a tree holding exactly ``files`` (their directories included)."""
    found: dict[str, bytes | None] = dict(files)
    for rel in files:
        parts = rel.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            found["/".join(parts[:depth])] = None
    return found


def describe(actual: Mapping[str, bytes | None], *states: Mapping[str, bytes | None]) -> str:
    """What differs between ``actual`` and the closest of ``states``, for a failure message."""
    lines = []
    for index, state in enumerate(states):
        extra = sorted(set(actual) - set(state))
        missing = sorted(set(state) - set(actual))
        changed = sorted(k for k in set(actual) & set(state) if actual[k] != state[k])
        lines.append(f"vs state {index}: extra {extra}, missing {missing}, changed {changed}")
    return "; ".join(lines)


def reset(disk: Disk, files: Mapping[str, bytes]) -> None:
    """Make the root hold exactly ``files`` (everything else under it is removed)."""
    for entry in os.listdir(disk.root):
        full = disk.root / entry
        if full.is_dir() and not full.is_symlink():
            shutil.rmtree(full)
        else:
            full.unlink()
    for rel, data in files.items():
        disk.write(rel, data)
    for rel in AFTER:
        disk.remember(rel)


def read_all(session: Any, files: Mapping[str, bytes]) -> None:
    """A plain full read of each file (no range, no ``max_bytes`` a tool may refuse)."""
    for rel in files:
        session.read(rel)


class Runs:
    """Fresh drivers over a reset tree, for clauses that repeat one operation many times."""

    def __init__(self, disk: Disk, crash: CrashKit) -> None:
        self.disk = disk
        self.crash = crash
        self.before = expected_names(BEFORE)
        self.after = expected_names(AFTER)
        self.driver: Any = None  # the driver of the last ``fresh`` run

    def fresh(self, files: Mapping[str, bytes] = BEFORE, session_id: str = "A") -> Any:
        """A new driver (recovered) over a tree holding ``files``, and a session that read them."""
        driver = self.driver = self.crash.restart()
        driver.recover()
        reset(self.disk, files)
        session = driver.open_session(session_id)
        read_all(session, files)
        return session

    def warm_up(self) -> list[Any]:
        """Run the patch unfaulted twice; the os calls of the second, warm run.

        The first run creates the implementation's state directories and lock files, so
        only the second counts the calls every later run makes.
        """
        self.fresh().apply_patch(PATCH)
        session = self.fresh()
        trace = self.crash.count(lambda: session.apply_patch(PATCH))
        assert names(self.disk) == self.after, "the scenario patch does not give the after tree"
        return trace

    def recovered(self) -> Any:
        """Restart the driver and run recovery; the report."""
        self.driver = self.crash.restart()
        return self.driver.recover()

    def crashed_at(self, step: int, patch: str = PATCH) -> bool:
        """A fresh run of ``patch`` killed at its ``step``-th mutating call; whether it was."""

        session = self.fresh()
        with crash_at(step) as point:
            session.apply_patch(patch)
        return bool(point.crashed)

    def assert_before_or_after(self, where: str) -> str:
        """The root is all-before or all-after, nothing else; which one."""
        actual = names(self.disk)
        if actual == self.before:
            return "before"
        if actual == self.after:
            return "after"
        difference = describe(actual, self.before, self.after)
        raise AssertionError(f"{where}: neither all-before nor all-after: {difference}")


def steps() -> Iterator[int]:
    """1, 2, 3, ... up to ``MAX_STEPS``; a loop that reaches the end fails."""
    yield from range(1, MAX_STEPS + 1)
    raise AssertionError(f"the operation still had mutating calls after {MAX_STEPS} steps")


def publish_index(trace: list[Any], published: frozenset[str] = PUBLISHED_NAMES) -> int | None:
    """1-based index of the first call that puts a file in place under a published name."""
    for call in trace:
        if (
            call.name in ("replace", "rename", "link")
            and len(call.paths) == 2
            and os.path.basename(call.paths[1]) in published
        ):
            return int(call.index)
    return None


def journal_dirs(disk: Disk) -> list[Path]:
    """The per-workspace folders of the journal directory where DESIGN puts it
    (``journal_layout``)."""
    _calls.note("journal_layout")
    top = disk.state_dir / "journal"
    return sorted(path for path in top.iterdir() if path.is_dir()) if top.is_dir() else []


def journals(disk: Disk) -> list[Path]:
    """The journal files in ``journal_dirs``."""
    return sorted(
        path for folder in journal_dirs(disk) for path in folder.glob("*.json") if path.is_file()
    )


def mentions(exc: BaseException, path: str) -> bool:
    """The error names ``path`` in its message or its details."""
    details = getattr(exc, "details", None)
    return path in str(exc) or path in repr(details)
