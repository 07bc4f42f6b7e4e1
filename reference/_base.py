"""What the lower layers of the engine need of a workspace (DESIGN §3).

Path resolution, the lock table and the snapshot store are built for one workspace
and read only these attributes of it; they take a ``WorkspaceBase`` rather than the
``Workspace`` facade, which is built from them, so no import ever points back up.
"""

from __future__ import annotations

from typing import Protocol

from editspec.reference._fs import FileSystem
from editspec.reference._limits import Limits


class WorkspaceBase(Protocol):
    """A workspace root with its fs port, state directory and limits."""

    @property
    def fs(self) -> FileSystem:
        """The fs port every disk effect goes through."""

    @property
    def root(self) -> str:
        """The real absolute path of the workspace root."""

    @property
    def state_dir(self) -> str:
        """The real absolute path of the state directory (journal, locks, snapshots)."""

    @property
    def root_hash(self) -> str:
        """sha256 of the real root, 16 hex digits: this workspace's name in ``state_dir``."""

    @property
    def limits(self) -> Limits:
        """The workspace's limits."""
