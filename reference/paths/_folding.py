"""Case and Unicode-normalization folding, detected per workspace (PATH-*: aliases).

On a file system that folds case (or treats NFC and NFD names as one), a name's
spelling in a request need not be its spelling on disk; the resolver then compares
names with ``same_name`` while it walks. Whether the root's file system folds is found
out once per workspace by looking a name up in the other case (``folds_case``), never
guessed from the platform.
"""

from __future__ import annotations

import os
import unicodedata
import weakref
from typing import TYPE_CHECKING

from editspec.reference._base import WorkspaceBase

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem


def identity(st: os.stat_result) -> tuple[int, int]:
    """What makes a file itself: (st_dev, st_ino)."""
    return (st.st_dev, st.st_ino)


_FOLDING: weakref.WeakKeyDictionary[WorkspaceBase, bool] = weakref.WeakKeyDictionary()


def _detect_case_folding(fs: FileSystem, root: str) -> bool | None:
    """Does the root's file system fold case? None when nothing there can tell."""
    root_st = fs.lstat(root)
    probes: list[tuple[str, os.stat_result]] = []
    try:
        for name in sorted(fs.listdir(root))[:64]:
            if name.swapcase() != name:
                probes.append((os.path.join(root, name), fs.lstat(os.path.join(root, name))))
                break
    except OSError:
        pass
    if not probes and os.path.basename(root).swapcase() != os.path.basename(root):
        probes.append((root, root_st))
    for path, st in probes:
        directory, name = os.path.split(path)
        try:
            other = fs.lstat(os.path.join(directory, name.swapcase()))
        except FileNotFoundError:
            return False
        except OSError:
            return None
        return identity(other) == identity(st)
    return None


def folds_case(workspace: WorkspaceBase) -> bool:
    """Whether names must be compared case- and normalization-blind in this workspace."""
    known = _FOLDING.get(workspace)
    if known is not None:
        return known
    detected = _detect_case_folding(workspace.fs, workspace.root)
    if detected is None:
        return True  # cannot tell yet: look names up in listings (correct, slower)
    _FOLDING[workspace] = detected
    return detected


def same_name(a: str, b: str) -> bool:
    """Two names a case- and normalization-folding file system takes for one (NFC, casefold)."""
    return unicodedata.normalize("NFC", a).casefold() == unicodedata.normalize("NFC", b).casefold()
