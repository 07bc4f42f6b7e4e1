"""Fixtures of the conformance suite: a fresh workspace and driver for every clause.

These names are a contract for everyone who writes clauses: ``driver``,
``workspace_root``, ``state_dir``, ``outside``, ``session`` (id "A"), ``other_session``
(id "B"), ``disk``, ``external``, ``alias``, ``symlinks``, ``restart``, ``crash``,
``driver_factory`` and ``driver_spec``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from editspec.contract.drivers import DriverSpec
from editspec.spec._shared_root import release, reset
from editspec.spec.crash import CrashKit
from editspec.spec.fixtures import (
    Alias,
    Disk,
    DriverHandle,
    External,
    RecordingDriver,
    RecordingSession,
)
from editspec.spec.plugin import state_of


def _shared_root(request: pytest.FixtureRequest) -> Path | None:
    """The running server's root when the clauses share one (``--editspec-mcp-url``)."""
    root = state_of(request.config).spec.mcp_root
    return None if root is None else Path(os.path.realpath(root))


@pytest.fixture
def editspec_base(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """The clause's private directory (its real path: no symlink in any component).

    With a shared root, its parent: the directory the suite has to itself.
    """
    shared = _shared_root(request)
    if shared is None:
        yield Path(os.path.realpath(tmp_path))
        return
    reset(shared)
    yield shared.parent
    release(shared)


@pytest.fixture
def workspace_root(request: pytest.FixtureRequest, editspec_base: Path) -> Path:
    shared = _shared_root(request)
    if shared is not None:
        return shared
    root = editspec_base / "ws"
    root.mkdir()
    return root


@pytest.fixture
def state_dir(request: pytest.FixtureRequest, editspec_base: Path, tmp_path: Path) -> Path:
    # A shared server keeps its own state directory; the clause's stays out of the base.
    state = (tmp_path if _shared_root(request) else editspec_base) / "state"
    state.mkdir()
    return state


@pytest.fixture
def outside(editspec_base: Path) -> Path:
    """A directory next to the root, outside it."""
    path = editspec_base / "outside"
    path.mkdir(exist_ok=True)  # a shared root's reset made it, empty
    return path


@pytest.fixture
def disk(editspec_base: Path, workspace_root: Path, state_dir: Path, outside: Path) -> Disk:
    return Disk(editspec_base, workspace_root, state_dir, outside)


@pytest.fixture
def external(disk: Disk) -> External:
    return External(disk)


@pytest.fixture
def alias(disk: Disk) -> Alias:
    return Alias(disk)


@pytest.fixture
def symlinks(editspec_base: Path) -> None:
    """A precondition: the file system makes symlinks (the clause is skipped where it cannot)."""
    probe = editspec_base / ".symlink-probe"
    try:
        os.symlink("target", probe)
    except (OSError, NotImplementedError):
        pytest.skip("the file system does not support symlinks")
    probe.unlink()


@pytest.fixture
def driver_spec(request: pytest.FixtureRequest) -> DriverSpec:
    """How the driver under test is named (to rebuild it in a child process)."""
    return state_of(request.config).spec


@pytest.fixture
def driver_factory(request: pytest.FixtureRequest) -> Callable[[Path, Path], object]:
    return state_of(request.config).factory()  # type: ignore[no-any-return]


@pytest.fixture
def driver_handle(
    driver_factory: Callable[[Path, Path], object], disk: Disk
) -> Iterator[DriverHandle]:
    handle = DriverHandle(driver_factory, disk)  # type: ignore[arg-type]
    yield handle
    handle.close()


@pytest.fixture
def driver(driver_handle: DriverHandle) -> RecordingDriver:
    """The implementation under test over this clause's root and state directory."""
    return driver_handle.current


@pytest.fixture
def session(driver: RecordingDriver) -> RecordingSession:
    return driver.open_session("A")


@pytest.fixture
def other_session(driver: RecordingDriver) -> RecordingSession:
    return driver.open_session("B")


@pytest.fixture
def restart(driver_handle: DriverHandle) -> Callable[[], RecordingDriver]:
    """Close the driver and start a new one over the same root and state directory."""
    return driver_handle.restart


@pytest.fixture
def crash(driver_handle: DriverHandle) -> CrashKit:
    """Crash points for ``python_fs`` drivers (count, crash at n, restart)."""
    return CrashKit(driver_handle)
