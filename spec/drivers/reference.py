"""The default driver: the reference engine, in this process."""

from __future__ import annotations

from pathlib import Path

from editspec.reference import RecoveryReport, Session, Workspace

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
        "list_directory",
        "python_fs",
    }
)


class ReferenceDriver:
    """``editspec.reference.Workspace`` behind the driver contract."""

    name = "editspec-reference"
    capabilities = CAPABILITIES

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.workspace = Workspace(root, state_dir)

    def open_session(self, session_id: str) -> Session:
        return self.workspace.session(session_id)

    def recover(self) -> RecoveryReport:
        return self.workspace.recover()

    def close(self) -> None:
        self.workspace.close()


def factory(root: Path, state_dir: Path) -> ReferenceDriver:
    """The ``DriverFactory`` of the reference engine."""
    return ReferenceDriver(root, state_dir)
