"""What clauses use besides the driver: the real disk, external writers, aliases, crashes.

Every clause gets a fresh layout under its own temporary directory::

    <base>/ws        the workspace root given to the driver
    <base>/state     the driver's state directory (never inspected by clauses)
    <base>/outside   a directory outside the root, for escape attempts

``Disk`` reads and prepares real bytes, and remembers every name the clause itself
created or the implementation reported, so ``leftovers()`` can name the files nobody
accounts for (temp, stage and backup files). ``Disk.snapshot()`` covers everything under
``<base>`` except the state directory, so an escape anywhere next to the root shows.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from editspec.contract import Driver, DriverFactory
from editspec.spec import _calls
from editspec.spec._assertions import WrongCode, mark_from_implementation

_LONGEST_PATH = 4096  # bytes: Linux PATH_MAX


def sha256(data: bytes | str) -> str:
    """Hex sha256 of bytes (a str is taken as its UTF-8 encoding)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


@attrs.frozen(kw_only=True)
class Entry:
    """One name on disk in a snapshot."""

    kind: str  # "file" | "dir" | "symlink" | "other"
    data: bytes | None = None  # file bytes
    mode: int | None = None  # permission bits of files and directories
    target: str | None = None  # symlink target


@attrs.frozen
class Snapshot:
    """Every name under the clause's base directory (state directory excluded)."""

    entries: dict[str, Entry]


class Disk:
    """The real file system around the workspace, seen without the driver."""

    def __init__(self, base: Path, root: Path, state_dir: Path, outside: Path) -> None:
        self.base = base
        self.root = root
        self.state_dir = state_dir
        self.outside = outside
        self._known: set[str] = set()

    # -- paths ---------------------------------------------------------------------------

    def path(self, rel: str) -> Path:
        """The absolute path of ``rel`` (relative to the root; may climb out with ``..``)."""
        return self.root / rel

    def _base_relative(self, path: Path) -> str | None:
        absolute = os.path.normpath(os.path.join(self.root, path))
        try:
            relative = os.path.relpath(absolute, self.base)
        except ValueError:
            return None
        if relative == os.curdir or relative.startswith(os.pardir):
            return None
        return relative.replace(os.sep, "/")

    def remember(self, path: str | os.PathLike[str]) -> None:
        """Count ``path`` (and what it resolves to) as accounted for by leftovers()."""
        name = os.fspath(path)
        try:
            too_long = len(os.fsencode(name)) > _LONGEST_PATH
        except UnicodeEncodeError:  # not a name any file system holds (PATH-060)
            return
        if too_long:  # nor beyond PATH_MAX (PATH-061); resolving it would take seconds
            return
        candidate = Path(name)
        for variant in (candidate, Path(os.path.realpath(self.root / candidate))):
            relative = self._base_relative(variant)
            if relative is not None:
                self._known.add(relative)

    # -- reading -------------------------------------------------------------------------

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def exists(self, rel: str) -> bool:
        """Anything at that name (a dangling symlink included)."""
        return os.path.lexists(self.root / rel)

    def is_symlink(self, rel: str) -> bool:
        return (self.root / rel).is_symlink()

    def mode(self, rel: str) -> int:
        return stat.S_IMODE(os.stat(self.root / rel).st_mode)

    def tree(self) -> dict[str, bytes]:
        """Every regular file under the root by "/"-separated path; links are not followed."""
        files: dict[str, bytes] = {}
        for directory, dirnames, filenames in os.walk(self.root):
            for name in filenames:
                full = os.path.join(directory, name)
                if stat.S_ISREG(os.lstat(full).st_mode):
                    rel = os.path.relpath(full, self.root).replace(os.sep, "/")
                    with open(full, "rb") as handle:
                        files[rel] = handle.read()
            dirnames.sort()
        return files

    # -- preparing -----------------------------------------------------------------------

    def write(self, rel: str, data: bytes | str, *, mode: int | None = None) -> Path:
        """Create or overwrite ``rel`` with exactly these bytes (a str is written as UTF-8)."""
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(_as_bytes(data))
        if mode is not None:
            os.chmod(target, mode)
        self.remember(rel)
        return target

    def mkdir(self, rel: str) -> Path:
        target = self.root / rel
        target.mkdir(parents=True, exist_ok=True)
        return target

    # -- snapshots and leftovers -----------------------------------------------------------

    def snapshot(self) -> Snapshot:
        entries: dict[str, Entry] = {}
        for directory, dirnames, filenames in os.walk(self.base):
            if Path(directory) == self.base:
                dirnames[:] = [d for d in dirnames if self.base / d != self.state_dir]
            for name in [*dirnames, *filenames]:
                full = os.path.join(directory, name)
                rel = os.path.relpath(full, self.base).replace(os.sep, "/")
                entries[rel] = _entry(full)
        return Snapshot(entries)

    def assert_unchanged(self, before: Snapshot) -> None:
        """Nothing under the base changed: same names, bytes, modes and link targets."""
        after = self.snapshot()
        problems = differences(before, after)
        assert not problems, "the disk changed:\n  " + "\n  ".join(problems)

    def leftovers(self) -> list[str]:
        """Files and links that neither the clause created nor the implementation reported."""
        found = []
        for rel, entry in self.snapshot().entries.items():
            if entry.kind != "dir" and rel not in self._known:
                found.append(rel)
        return sorted(found)

    def assert_no_leftovers(self) -> None:
        extra = self.leftovers()
        assert not extra, f"files nobody accounts for (temp/stage/backup?): {extra}"


def _entry(full: str) -> Entry:
    info = os.lstat(full)
    if stat.S_ISLNK(info.st_mode):
        return Entry(kind="symlink", target=os.readlink(full))
    if stat.S_ISDIR(info.st_mode):
        return Entry(kind="dir", mode=stat.S_IMODE(info.st_mode))
    if stat.S_ISREG(info.st_mode):
        with open(full, "rb") as handle:
            return Entry(kind="file", data=handle.read(), mode=stat.S_IMODE(info.st_mode))
    return Entry(kind="other")


def differences(before: Snapshot, after: Snapshot) -> list[str]:
    """Every path whose entry differs between two snapshots, as a line of a report."""
    problems = []
    for rel in sorted(set(before.entries) | set(after.entries)):
        old, new = before.entries.get(rel), after.entries.get(rel)
        if old == new:
            continue
        if old is None:
            problems.append(f"added {rel} ({new.kind if new else '?'})")
        elif new is None:
            problems.append(f"removed {rel}")
        elif old.kind != new.kind:
            problems.append(f"{rel} changed from {old.kind} to {new.kind}")
        elif old.data != new.data:
            problems.append(f"{rel} changed content ({_short(old.data)} -> {_short(new.data)})")
        elif old.mode != new.mode:
            problems.append(f"{rel} changed mode {old.mode or 0:#o} -> {new.mode or 0:#o}")
        else:
            problems.append(f"{rel} changed link target {old.target!r} -> {new.target!r}")
    return problems


def _short(data: bytes | None) -> str:
    if data is None:
        return "-"
    text = repr(data[:40])
    return f"{text}{'...' if len(data) > 40 else ''} ({len(data)} bytes)"


class External:
    """Changes made behind the driver's back (another editor, a build, git)."""

    def __init__(self, disk: Disk) -> None:
        self._disk = disk

    def write(self, rel: str, data: bytes | str) -> None:
        """Overwrite in place (same inode), as an editor saving without rename would."""
        target = self._disk.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "r+b" if target.exists() else "wb") as handle:
            payload = _as_bytes(data)
            handle.write(payload)
            handle.truncate(len(payload))
        self._disk.remember(rel)

    def modify_same_size_same_mtime(self, rel: str, data: bytes | str) -> None:
        """Change the bytes but keep the size and restore atime/mtime to the nanosecond."""
        target = self._disk.root / rel
        payload = _as_bytes(data)
        before = os.stat(target)
        if len(payload) != before.st_size:
            raise ValueError("modify_same_size_same_mtime needs data of the file's current size")
        with open(target, "r+b") as handle:
            handle.write(payload)
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(target)
        assert after.st_mtime_ns == before.st_mtime_ns and after.st_size == before.st_size

    def touch(self, rel: str) -> None:
        """Move the mtime forward by seconds; the bytes stay the same."""
        target = self._disk.root / rel
        before = os.stat(target)
        later = max(before.st_mtime_ns, time.time_ns()) + 5_000_000_000
        os.utime(target, ns=(before.st_atime_ns, later))

    def delete(self, rel: str) -> None:
        os.unlink(self._disk.root / rel)


class Alias:
    """Second names for files: symlinks (targets may lie outside the root) and hard links."""

    def __init__(self, disk: Disk) -> None:
        self._disk = disk
        self.outside = disk.outside

    def symlink(self, rel_link: str, target: str | os.PathLike[str]) -> Path:
        """Create ``rel_link`` pointing at ``target``, stored verbatim (relative to its dir)."""
        link = self._disk.root / rel_link
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.fspath(target), link)
        self._disk.remember(rel_link)
        return link

    def hardlink(self, rel_link: str, rel_target: str) -> Path:
        link = self._disk.root / rel_link
        link.parent.mkdir(parents=True, exist_ok=True)
        os.link(self._disk.root / rel_target, link)
        self._disk.remember(rel_link)
        return link


# -- the driver under test, with the names it reports remembered -------------------------

_PATH_METHODS = ("write", "edit")
_REPORTING_METHODS = ("write", "edit", "apply_patch", "rewind", "edit_notebook", "move")
OPERATIONS = (
    "read",
    "write",
    "edit",
    "apply_patch",
    "glob",
    "grep",
    "list_directory",
    "rewind",
    "edit_notebook",
    "why_ignored",
    "manifest",
    "delete",
    "move",
)


def _observed(op: str, session: str | None, method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` with its call logged and its exceptions marked as the implementation's."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            result = method(*args, **kwargs)
        except BaseException as exc:
            mark_from_implementation(exc)
            _calls.record(op, session, args, kwargs, exc)
            raise
        _calls.record(op, session, args, kwargs, None)
        return result

    return call


class RecordingSession:
    """A session proxy: tells ``Disk`` which paths the implementation wrote, logs each call
    and marks each exception as the implementation's (DESIGN §7: a refusal is a verdict,
    not an error of the suite)."""

    def __init__(
        self,
        inner: Any,
        disk: Disk,
        *,
        session_id: str | None = None,
        capabilities: frozenset[str] = frozenset(),
        remote: bool = False,
    ) -> None:
        self._inner = inner
        self._disk = disk
        self.session_id = session_id
        self.driver_capabilities = capabilities
        self._prefix = "remote:" if remote else ""

    @property
    def inner(self) -> Any:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in OPERATIONS or not callable(attribute):
            return attribute
        observed = _observed(self._prefix + name, self.session_id, attribute)
        if name not in _REPORTING_METHODS:
            return observed

        def call(*args: Any, **kwargs: Any) -> Any:
            if name in _PATH_METHODS and args and isinstance(args[0], str) and "\0" not in args[0]:
                self._disk.remember(args[0])
            result = observed(*args, **kwargs)
            for path in _reported_paths(result):
                self._disk.remember(path)
            return result

        return call


def _reported_paths(result: object) -> Iterator[str]:
    # A result without these lists (or with None) reports no paths; what it lacks is for the
    # clause that reads it to judge, never an error of the suite here.
    changes = _items(getattr(result, "changes", ()))
    restored = _items(getattr(result, "restored", ()))
    for holder in (result, *changes, *restored):
        for field in ("path", "move_to"):
            value = getattr(holder, field, None)
            if isinstance(value, str) and "\0" not in value:
                yield value


def _items(value: object) -> tuple[object, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return ()


def prepare_change(session: Any, *paths: str) -> None:
    """Make ``paths`` changeable by this session, as the driver needs it (setup, not asserted).

    A driver with read-before-write needs a full read first; one without it needs
    nothing, and so a clause about Edit or Write does not require Read. The read is a
    plain ``read(path)``: no range, no ``max_bytes`` a tool may refuse.
    """
    capabilities = getattr(session, "driver_capabilities", frozenset())
    if "read_before_write" not in capabilities and "stale_detection" not in capabilities:
        return
    with _calls.setup():
        for path in paths:
            session.read(path)


class RecordingDriver:
    """A driver proxy whose sessions are ``RecordingSession``s; everything else delegates."""

    def __init__(self, inner: Driver, disk: Disk) -> None:
        self._inner = inner
        self._disk = disk

    @property
    def inner(self) -> Driver:
        return self._inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset(self._inner.capabilities)

    def open_session(self, session_id: str) -> RecordingSession:
        try:
            inner = self._inner.open_session(session_id)
        except BaseException as exc:
            mark_from_implementation(exc)
            raise
        return RecordingSession(
            inner, self._disk, session_id=session_id, capabilities=self.capabilities
        )

    def open_remote_session(self, session_id: str, **kwargs: Any) -> RecordingSession:
        method = getattr(self._inner, "open_remote_session", None)
        if method is None:
            raise WrongCode(
                "the driver declares remote_acp but has no open_remote_session(session_id, *, "
                "channel, acp_session_id, root)"
            )
        opener = _observed("open_remote_session", session_id, method)
        return RecordingSession(
            opener(session_id, **kwargs),
            self._disk,
            session_id=session_id,
            capabilities=self.capabilities,
            remote=True,
        )

    def recover(self) -> Any:
        report = _observed("recover", None, self._inner.recover)()
        for path in getattr(report, "cleaned", ()) or ():
            if isinstance(path, str):
                self._disk.remember(path)
        return report

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class DriverHandle:
    """Owns the driver of one clause across restarts; closes the live one at the end."""

    def __init__(self, factory: DriverFactory, disk: Disk) -> None:
        self._factory = factory
        self._disk = disk
        self.current = self._start()

    def _start(self) -> RecordingDriver:
        return RecordingDriver(self._factory(self._disk.root, self._disk.state_dir), self._disk)

    def restart(self, *, close: bool = True) -> RecordingDriver:
        """A new driver over the same root and state; the old one is closed unless it 'died'."""
        _calls.note("restart")
        old = self.current
        if hasattr(old.inner, "restart") and close:
            old.inner.restart()
            return old
        if close:
            old.close()
        self.current = self._start()
        return self.current

    def close(self) -> None:
        self.current.close()
