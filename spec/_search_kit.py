"""What the GLOB, GREP and LIST clauses share: fixed mtimes, symlink loops, escaping paths.

Clauses about order set every mtime as an offset from ``EPOCH_NS``, a fixed point in the
past, so no file the clause did not date can come between them. The symlink loops and the
paths that leave the root are the same for the three searches, so one walker is held to
the same trees whatever the tool.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from editspec.spec.fixtures import Alias, Disk

#: A fixed point in the past (nanoseconds since the epoch).
EPOCH_NS = 1_600_000_000 * 1_000_000_000
SECOND_NS = 1_000_000_000


def set_mtime(disk: Disk, rel: str, seconds: float) -> int:
    """Give ``rel`` (file, directory or link, not followed) an mtime ``seconds`` after
    ``EPOCH_NS``; that mtime in nanoseconds."""
    stamp = EPOCH_NS + int(seconds * SECOND_NS)
    os.utime(disk.path(rel), ns=(stamp, stamp), follow_symlinks=False)
    return stamp


def plant_symlink_loops(disk: Disk, alias: Alias) -> tuple[str, ...]:
    """A self-link, two links to each other, and under ``sub/`` a link to its parent and
    one to the root; the prefixes ('self/', ..., 'sub/root/') no listed path may have."""
    links: dict[str, str | os.PathLike[str]] = {
        "self": "self",
        "ping": "pong",
        "pong": "ping",
        "sub/up": "..",
        "sub/root": disk.root,
    }
    for rel, target in links.items():
        alias.symlink(rel, target)
    return tuple(rel + "/" for rel in links)


def escaping_paths(
    alias: Alias, links: Mapping[str, str | os.PathLike[str]] | None = None
) -> list[str]:
    """Path arguments outside the root: '..', '../outside', the outside directory's
    absolute path and '/', then ``links`` (name: target), made where the file system
    makes symlinks."""
    paths = ["..", "../outside", str(alias.outside), "/"]
    if not links:
        return paths
    try:
        for rel, target in links.items():
            alias.symlink(rel, target)
    except (OSError, NotImplementedError):
        return paths
    return paths + list(links)
