"""Directory trees as values: capture a tree from disk, write one, compare two, and JSON.

A ``Tree`` maps "/"-separated paths relative to a root (the root itself excluded) to an
``Entry``: a regular file (bytes and permission bits), a directory, or a symlink. The
fault-injection harness compares the disk with the model through these values, and
scenarios store them as JSON (text when the bytes are UTF-8, base64 otherwise).

This module reads and writes the disk directly with ``os``: it is test machinery,
outside the engine, and must see the disk as it is, not through the port under test.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class Entry:
    """One node of a tree: ``kind`` is "file", "dir" or "symlink"."""

    kind: str
    data: bytes = b""
    target: str = ""
    mode: int | None = None  # permission bits of a file; None = do not care

    @classmethod
    def file(cls, data: bytes, mode: int | None = None) -> Entry:
        return cls("file", data=data, mode=mode)

    @classmethod
    def dir(cls) -> Entry:
        return cls("dir")

    @classmethod
    def symlink(cls, target: str) -> Entry:
        return cls("symlink", target=target)

    def describe(self) -> str:
        if self.kind == "file":
            mode = "" if self.mode is None else f" mode {self.mode:o}"
            return f"file {len(self.data)} bytes{mode} {_preview(self.data)}"
        if self.kind == "symlink":
            return f"symlink -> {self.target}"
        return "dir"


Tree = dict[str, Entry]


def _preview(data: bytes, limit: int = 40) -> str:
    text = repr(data[:limit])
    return text + ("..." if len(data) > limit else "")


def capture(root: str | os.PathLike[str], *, modes: bool = True) -> Tree:
    """The tree under ``root`` as it is on disk (symlinks are not followed)."""
    base = os.fspath(root)
    tree: Tree = {}
    for directory, dirnames, filenames in os.walk(base, followlinks=False):
        for name in sorted(dirnames + filenames):
            full = os.path.join(directory, name)
            relative = os.path.relpath(full, base).replace(os.sep, "/")
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                tree[relative] = Entry.symlink(os.readlink(full))
            elif stat.S_ISDIR(info.st_mode):
                tree[relative] = Entry.dir()
            elif stat.S_ISREG(info.st_mode):
                with open(full, "rb") as handle:
                    data = handle.read()
                tree[relative] = Entry.file(data, stat.S_IMODE(info.st_mode) if modes else None)
            else:
                tree[relative] = Entry("other")
    return dict(sorted(tree.items()))


def write(root: str | os.PathLike[str], tree: Mapping[str, Entry]) -> None:
    """Create ``tree`` under an existing (normally empty) ``root``."""
    base = os.fspath(root)
    for relative, entry in sorted(tree.items()):
        full = os.path.join(base, *relative.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if entry.kind == "dir":
            os.makedirs(full, exist_ok=True)
        elif entry.kind == "symlink":
            os.symlink(entry.target, full)
        elif entry.kind == "file":
            with open(full, "wb") as handle:
                handle.write(entry.data)
            if entry.mode is not None:
                os.chmod(full, entry.mode)
        else:
            raise ValueError(f"cannot create a {entry.kind!r} entry at {relative}")


def without_modes(tree: Mapping[str, Entry]) -> Tree:
    return {path: attrs.evolve(entry, mode=None) for path, entry in tree.items()}


def equal(left: Mapping[str, Entry], right: Mapping[str, Entry]) -> bool:
    """Equal trees; a file mode of None on either side matches any mode."""
    if left.keys() != right.keys():
        return False
    for path, a in left.items():
        b = right[path]
        if (a.kind, a.data, a.target) != (b.kind, b.data, b.target):
            return False
        if a.mode is not None and b.mode is not None and a.mode != b.mode:
            return False
    return True


def diff(expected: Mapping[str, Entry], actual: Mapping[str, Entry]) -> list[str]:
    """Human-readable differences, one line per path."""
    lines: list[str] = []
    for path in sorted(expected.keys() | actual.keys()):
        want, got = expected.get(path), actual.get(path)
        if want is None and got is not None:
            lines.append(f"+ {path}: unexpected {got.describe()}")
        elif got is None and want is not None:
            lines.append(f"- {path}: missing {want.describe()}")
        elif want is not None and got is not None and not equal({path: want}, {path: got}):
            lines.append(f"~ {path}: expected {want.describe()}, found {got.describe()}")
    return lines


# -- JSON ------------------------------------------------------------------------


def bytes_to_json(data: bytes) -> dict[str, str]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def bytes_from_json(value: Mapping[str, str]) -> bytes:
    if "text" in value:
        return value["text"].encode("utf-8")
    return base64.b64decode(value["base64"])


def to_json(tree: Mapping[str, Entry]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, entry in sorted(tree.items()):
        if entry.kind == "file":
            item: dict[str, Any] = bytes_to_json(entry.data)
            if entry.mode is not None:
                item["mode"] = f"{entry.mode:o}"
            out[path] = item
        elif entry.kind == "symlink":
            out[path] = {"symlink": entry.target}
        else:
            out[path] = {entry.kind: True}
    return out


def from_json(value: Mapping[str, Any]) -> Tree:
    tree: Tree = {}
    for path, item in value.items():
        if "symlink" in item:
            tree[path] = Entry.symlink(item["symlink"])
        elif "dir" in item:
            tree[path] = Entry.dir()
        elif "other" in item:
            tree[path] = Entry("other")
        else:
            mode = int(item["mode"], 8) if "mode" in item else None
            tree[path] = Entry.file(bytes_from_json(item), mode)
    return dict(sorted(tree.items()))
