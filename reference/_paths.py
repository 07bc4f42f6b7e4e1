"""Path confinement and resolution (DESIGN §4 "Paths").

STUB: replaced by the full resolver (owner: foundation work).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from editspec.reference._workspace import Workspace


@attrs.frozen(kw_only=True)
class WorkspacePath:
    """A user path, confined and resolved.

    requested: the string the caller gave.
    logical: absolute path under the root, lexically normalized, symlinks not resolved.
    real: absolute path with every symlink resolved, spelled as the file system stores
        it (for a new file: the real path of its nearest existing ancestor + the tail).
    relative: ``real`` relative to the root, "/"-separated (reported in results).
    crossed_link: a symlink was followed on the way.
    exists: something exists at ``real``.
    """

    requested: str
    logical: str
    real: str
    relative: str
    crossed_link: bool
    exists: bool

    @property
    def canonical_key(self) -> str:
        """The key for tracking, locks and snapshots: the real path."""
        return self.real


def resolve(workspace: Workspace, path: str | os.PathLike[str]) -> WorkspacePath:
    raise NotImplementedError
