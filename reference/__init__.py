"""editspec.reference: file tools for coding agents, done right.

Read, Write, Edit, ApplyPatch, Glob, Grep, directory listing and per-session
Snapshot/Rewind over one workspace root, with path confinement, read-before-write,
stale-read detection, atomic writes, journaled all-or-nothing patches, crash
recovery and crash-safe rewind.
"""

from editspec.reference._errors import ERROR_CODES, ToolError
from editspec.reference._fs import FileSystem
from editspec.reference._limits import Limits
from editspec.reference._results import (
    DeleteResult,
    EditResult,
    EditSpec,
    FileChange,
    GlobResult,
    GrepMatch,
    GrepResult,
    HunkMatch,
    IgnoreExplanation,
    ListEntry,
    ListResult,
    ManifestItem,
    ManifestResult,
    MoveResult,
    MoveStep,
    NotebookResult,
    PatchResult,
    ReadResult,
    RecoveryReport,
    Replacement,
    RestoredFile,
    RewindResult,
    WriteResult,
)
from editspec.reference._session import Session
from editspec.reference._workspace import Workspace
from editspec.reference.paths._paths import WorkspacePath
from editspec.reference.remote._acp import AcpChannel, AcpFileService
from editspec.reference.remote._fileservice import FileService, LocalFileService
from editspec.reference.remote._remote import RemoteSession, RemoteWorkspace
from editspec.reference.transactions._journal import seal as seal_journal

__all__ = [
    "ERROR_CODES",
    "AcpChannel",
    "AcpFileService",
    "DeleteResult",
    "EditResult",
    "EditSpec",
    "FileChange",
    "FileService",
    "FileSystem",
    "GlobResult",
    "GrepMatch",
    "GrepResult",
    "HunkMatch",
    "IgnoreExplanation",
    "Limits",
    "ListEntry",
    "ListResult",
    "LocalFileService",
    "ManifestItem",
    "ManifestResult",
    "MoveResult",
    "MoveStep",
    "NotebookResult",
    "PatchResult",
    "ReadResult",
    "RecoveryReport",
    "RemoteSession",
    "RemoteWorkspace",
    "Replacement",
    "RestoredFile",
    "RewindResult",
    "Session",
    "ToolError",
    "Workspace",
    "WorkspacePath",
    "WriteResult",
    "seal_journal",
]
