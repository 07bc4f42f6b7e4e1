"""The default driver: the reference engine, in this process."""

from __future__ import annotations

import socket
from pathlib import Path

from editspec.reference import (
    RecoveryReport,
    RemoteSession,
    RemoteWorkspace,
    Session,
    Workspace,
    seal_journal,
)

CAPABILITIES: frozenset[str] = frozenset(
    {
        "read",
        "write",
        "edit",
        "confinement",
        "read_before_write",
        "stale_detection",
        "cas",
        "apply_patch",
        "recovery",
        "snapshots",
        "glob",
        "grep",
        "grep_cancel",
        "list_directory",
        "python_fs",
        "journal_layout",
        "remote_acp",
        "notebook",
        "delete",
        "move",
    }
)


class ReferenceDriver:
    """``editspec.reference.Workspace`` behind the driver contract."""

    name = "editspec-reference"
    capabilities = CAPABILITIES

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.workspace = Workspace(root, state_dir)
        self._remote: list[RemoteWorkspace] = []

    def open_session(self, session_id: str) -> Session:
        return self.workspace.session(session_id)

    def open_remote_session(
        self, session_id: str, *, channel: socket.socket, acp_session_id: str, root: str
    ) -> RemoteSession:
        """A session whose files are the ACP client's at the other end of ``channel``."""
        remote = RemoteWorkspace.over_socket(channel, acp_session_id, root)
        self._remote.append(remote)
        return remote.session(session_id)

    def recover(self) -> RecoveryReport:
        return self.workspace.recover()

    def seal_journal(self, data: bytes) -> bytes:
        """``data`` with the reference journal's checksum recomputed (contract 1.3)."""
        return seal_journal(data)

    def close(self) -> None:
        for remote in self._remote:
            remote.close()
        self._remote.clear()
        self.workspace.close()


def factory(root: Path, state_dir: Path) -> ReferenceDriver:
    """The ``DriverFactory`` of the reference engine."""
    return ReferenceDriver(root, state_dir)
