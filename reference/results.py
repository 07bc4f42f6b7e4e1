"""Public name of the result types (DESIGN §2 refers to ``editspec.reference.results``)."""

from editspec.reference._results import (
    EditResult,
    EditSpec,
    FileChange,
    GlobResult,
    GrepMatch,
    GrepResult,
    IgnoreExplanation,
    ListEntry,
    ListResult,
    PatchResult,
    ReadResult,
    RecoveryReport,
    Replacement,
    RestoredFile,
    RewindResult,
    WriteResult,
)

__all__ = [
    "EditResult",
    "EditSpec",
    "FileChange",
    "GlobResult",
    "GrepMatch",
    "GrepResult",
    "IgnoreExplanation",
    "ListEntry",
    "ListResult",
    "PatchResult",
    "ReadResult",
    "RecoveryReport",
    "Replacement",
    "RestoredFile",
    "RewindResult",
    "WriteResult",
]
