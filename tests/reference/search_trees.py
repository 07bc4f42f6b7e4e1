"""Trees on disk for the search tests, and git as an oracle for ignore semantics."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import attrs


@attrs.frozen
class Link:
    """A symlink with this target text."""

    target: str


Node = bytes | str | Link | Mapping[str, "Node"]


def make_tree(root: Path, spec: Mapping[str, Node]) -> None:
    """Create ``spec`` under ``root``: bytes/str are files, dicts directories, Link symlinks."""
    root.mkdir(parents=True, exist_ok=True)
    for name, node in spec.items():
        path = root / name
        if isinstance(node, Link):
            os.symlink(node.target, path)
        elif isinstance(node, Mapping):
            make_tree(path, node)
        elif isinstance(node, bytes):
            path.write_bytes(node)
        else:
            path.write_bytes(node.encode("utf-8"))


def entries(root: Path) -> Iterator[tuple[str, str]]:
    """(relative path, kind) of everything under ``root`` except ``.git``; links not entered."""
    stack = [""]
    while stack:
        directory = stack.pop()
        for entry in os.scandir(root / directory if directory else root):
            relative = f"{directory}/{entry.name}" if directory else entry.name
            if entry.name == ".git":
                continue
            if entry.is_symlink():
                yield relative, "symlink"
            elif entry.is_dir():
                yield relative, "dir"
                stack.append(relative)
            else:
                yield relative, "file"


GIT = shutil.which("git")


@contextmanager
def tree_modes() -> Iterator[list[bool]]:
    """For each Grep that started ripgrep walking the tree itself, whether ripgrep's walk
    was found to keep the engine's files (True) or the search fell back (False)."""
    from editspec.reference.search import _rg_tree

    found: list[bool] = []
    original = _rg_tree.search_tree

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        found.append(result is not None)
        return result

    with mock.patch.object(_rg_tree, "search_tree", spy):
        yield found


def git_env(home: Path) -> dict[str, str]:
    """An environment in which no user or system git configuration applies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
    )
    return env


def git(root: Path, *args: str, input: bytes | None = None) -> bytes:
    assert GIT is not None
    completed = subprocess.run(
        [GIT, "-c", f"core.excludesFile={os.devnull}", "-c", "core.ignoreCase=false", *args],
        cwd=root,
        env=git_env(root.parent),
        input=input,
        capture_output=True,
        check=False,
    )
    if completed.returncode not in (0, 1):
        raise AssertionError(completed.stderr.decode("utf-8", "replace"))
    return completed.stdout


def git_init(root: Path) -> None:
    git(root, "init", "-q")


def git_untracked(root: Path) -> set[str]:
    """``git ls-files --others --exclude-standard``: the files git does not ignore."""
    out = git(root, "ls-files", "-z", "--others", "--exclude-standard")
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def git_check_ignore(root: Path, paths: list[str]) -> dict[str, tuple[str, int, str] | None]:
    """``git check-ignore -v``: per path, the deciding (source, line, pattern), or None."""
    if not paths:
        return {}
    data = b"".join(os.fsencode(p) + b"\0" for p in paths)
    out = git(
        root, "check-ignore", "--no-index", "-v", "-z", "--non-matching", "--stdin", input=data
    )
    fields = out.split(b"\0")
    result: dict[str, tuple[str, int, str] | None] = {}
    for index in range(0, len(fields) - 1, 4):
        source, line, pattern, path = (os.fsdecode(f) for f in fields[index : index + 4])
        result[path] = (source, int(line), pattern) if source else None
    return result


def case_sensitive(directory: Path) -> bool:
    """Whether the file system under ``directory`` tells "A" from "a"."""
    probe = directory / "CaseProbe"
    probe.write_text("")
    try:
        return not (directory / "caseprobe").exists()
    finally:
        probe.unlink()


def scripted_fs(
    *,
    vanish: str | None = None,
    fail_scandir: dict[str, int] | None = None,
    fail_read: dict[str, int] | None = None,
    fail_readlink: bool = False,
) -> object:
    """A ``FileSystem`` that misbehaves on cue, on the real disk.

    ``vanish``: entries whose name starts with it are deleted right after their directory
    is listed (so the listing names them, but they are gone when used).
    ``fail_scandir`` / ``fail_read``: paths ending with a key fail with that errno
    (``read_bytes`` and ``read_files`` both).
    ``fail_readlink``: every readlink fails with EIO.
    """
    import errno as errno_module

    from editspec.reference import FileSystem

    class _Scripted(FileSystem):
        def scandir(self, path: str) -> Iterator[os.DirEntry[str]]:
            for suffix, number in (fail_scandir or {}).items():
                if path.endswith(suffix):
                    raise OSError(number, os.strerror(number), path)
            entries = list(super().scandir(path))
            if vanish is not None:
                for entry in entries:
                    if entry.name.startswith(vanish):
                        if entry.is_dir(follow_symlinks=False):
                            shutil.rmtree(entry.path)
                        else:
                            os.unlink(entry.path)
            return iter(entries)

        def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
            for suffix, number in (fail_read or {}).items():
                if path.endswith(suffix):
                    raise OSError(number, os.strerror(number), path)
            return super().read_bytes(path, offset=offset, limit=limit)

        def read_files(
            self, directory: str, names: Iterable[str], *, limit: int | None = None
        ) -> Iterator[tuple[str, bytes | OSError]]:
            for name, result in super().read_files(directory, names, limit=limit):
                for suffix, number in (fail_read or {}).items():
                    if os.path.join(directory, name).endswith(suffix):
                        result = OSError(number, os.strerror(number), name)
                yield name, result

        def readlink(self, path: str) -> str:
            if fail_readlink:
                raise OSError(errno_module.EIO, "injected", path)
            return super().readlink(path)

    return _Scripted()
