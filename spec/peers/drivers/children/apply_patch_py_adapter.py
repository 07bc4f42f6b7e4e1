"""The adapter of ``apply-patch-py`` in its own interpreter (Python >= 3.13): see _child_loop.py.

``apply(patch, workdir)`` is the package's public ``apply_patch(patch_text, workdir)``
(an ``asyncio`` coroutine), its ``AffectedPaths`` returned as lists of strings.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from _child_loop import serve  # this script's directory is on sys.path
from apply_patch_py import apply_patch


def apply(patch: str, workdir: str) -> dict[str, Any]:
    affected = asyncio.run(apply_patch(patch, Path(workdir)))
    return {
        "added": [str(path) for path in affected.added],
        "modified": [str(path) for path in affected.modified],
        "deleted": [str(path) for path in affected.deleted],
        "success": affected.success,
    }


if __name__ == "__main__":
    serve({"apply": apply})
