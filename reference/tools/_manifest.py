"""Tree manifests: every path under a directory, its type and content hash (DEL-*, MOVE-*).

A manifest is what Delete and Move of a directory are checked against: the caller
lists the tree (``Session.manifest``), sees every entry, and passes the manifest's hash
back. The engine recomputes it under the locks; a file added, removed or changed since
gives another hash and the call is refused (STALE), so nothing is deleted unseen.

The hash is the sha256 of canonical JSON: the tree's path relative to the root and,
sorted by path, ``[path, type, sha256]`` per entry (a symlink's hash is its target's;
a directory has none). Symlinks are listed, never followed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import TYPE_CHECKING

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import ManifestItem, ManifestResult
from editspec.reference.text._text import sha256_hex

if TYPE_CHECKING:
    from editspec.reference._context import SessionContext, WorkspaceContext
    from editspec.reference._fs import FileSystem

MAX_TREE_ENTRIES = 10_000  # entries one Delete or Move of a tree may cover


@attrs.frozen(kw_only=True)
class Tree:
    """A manifest with the bytes and modes of its files (for snapshots), in memory."""

    items: tuple[ManifestItem, ...]
    contents: dict[str, bytes]  # tree-relative path -> bytes, files only
    modes: dict[str, int]
    manifest_sha256: str
    links: dict[str, str] = attrs.field(factory=dict)  # tree-relative path -> symlink target


def manifest_hash(label: str, items: tuple[ManifestItem, ...]) -> str:
    """The hash that names ``items`` under the tree ``label`` (root-relative)."""
    body = {"path": label, "items": [[item.path, item.type, item.sha256] for item in items]}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def scan_tree(workspace: WorkspaceContext, real_dir: str, label: str) -> Tree:
    """Walk ``real_dir`` without following links; TOO_LARGE past the entry or byte limit."""
    fs = workspace.fs
    budget = workspace.limits.transaction_bytes
    items: list[ManifestItem] = []
    contents: dict[str, bytes] = {}
    modes: dict[str, int] = {}
    links: dict[str, str] = {}
    total = 0
    pending = [""]
    while pending:
        prefix = pending.pop()
        directory = os.path.join(real_dir, prefix) if prefix else real_dir
        for name in sorted(_names(fs, directory, label)):
            relative = f"{prefix}/{name}" if prefix else name
            real = os.path.join(directory, name)
            try:
                status = fs.lstat(real)
            except OSError as exc:
                raise _errors.from_oserror(exc, f"{label}/{relative}", action="inspect") from exc
            if len(items) >= MAX_TREE_ENTRIES:
                raise ToolError(
                    _errors.TOO_LARGE,
                    f"{label} holds more than {MAX_TREE_ENTRIES} entries",
                    path=label,
                    limit="tree_entries",
                    maximum=MAX_TREE_ENTRIES,
                )
            if stat.S_ISDIR(status.st_mode):
                items.append(ManifestItem(path=relative, type="dir", size=0, sha256=None))
                pending.append(relative)
            elif stat.S_ISREG(status.st_mode):
                total += status.st_size
                _check_budget(label, total, budget)
                data = _read(fs, real, f"{label}/{relative}")
                total += len(data) - status.st_size
                _check_budget(label, total, budget)
                contents[relative] = data
                modes[relative] = stat.S_IMODE(status.st_mode)
                digest = sha256_hex(data)
                item = ManifestItem(path=relative, type="file", size=len(data), sha256=digest)
                items.append(item)
            elif stat.S_ISLNK(status.st_mode):
                links[relative] = fs.readlink(real)
                target = os.fsencode(links[relative])
                items.append(
                    ManifestItem(
                        path=relative, type="symlink", size=len(target), sha256=sha256_hex(target)
                    )
                )
            else:
                items.append(ManifestItem(path=relative, type="other", size=0, sha256=None))
    ordered = tuple(sorted(items, key=lambda item: item.path))
    return Tree(
        items=ordered,
        contents=contents,
        modes=modes,
        manifest_sha256=manifest_hash(label, ordered),
        links=links,
    )


def _names(fs: FileSystem, directory: str, label: str) -> list[str]:
    try:
        return fs.listdir(directory)
    except OSError as exc:
        raise _errors.from_oserror(exc, label, action="list") from exc


def _read(fs: FileSystem, real: str, shown: str) -> bytes:
    try:
        return fs.read_bytes(real)
    except OSError as exc:
        raise _errors.from_oserror(exc, shown, action="read") from exc


def _check_budget(label: str, total: int, budget: int) -> None:
    if total > budget:
        raise ToolError(
            _errors.TOO_LARGE,
            f"the files under {label} hold more than {budget} bytes",
            path=label,
            limit="transaction_bytes",
            maximum=budget,
        )


def manifest(session: SessionContext, path: str) -> ManifestResult:
    """List every entry under a directory with its hash. Spec: DEL-*, MOVE-*."""
    workspace = session.workspace
    target = workspace.resolve(path)
    shown = target.logical_relative
    if target.kind == "missing":
        raise ToolError(_errors.NOT_FOUND, f"{shown} does not exist", path=shown)
    if target.kind != "dir":
        raise ToolError(_errors.INVALID_ARGUMENT, f"{shown} is not a directory", path=shown)
    # Named by the real path, so an alias through a symlink lists the same manifest.
    tree = scan_tree(workspace, target.real, target.relative)
    hooks = workspace.hooks
    if hooks.denies_anything:
        # Denied entries are not listed; the hash then names a tree that is not all there
        # is, so a Delete or Move of it is STALE (refused without saying why).
        base = "" if target.relative == "." else target.relative + "/"
        items = tuple(
            item
            for item in tree.items
            if not hooks.is_denied(base + item.path, is_dir=item.type == "dir")
        )
        return ManifestResult(
            path=shown, items=items, manifest_sha256=manifest_hash(target.relative, items)
        )
    return ManifestResult(path=shown, items=tree.items, manifest_sha256=tree.manifest_sha256)
