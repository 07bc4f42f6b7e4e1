"""Replay a git history through editspec: every commit's ``git diff`` applied in turn.

Starting from an empty directory, each commit of ``git rev-list --first-parent`` is
reached by applying ``git diff -M <parent> <commit>`` (the first commit: against the empty
tree) through editspec's ``apply_patch``, in one workspace and session (the files a diff
names are read first, as an agent would), and the directory is compared with the
commit's tree (``git ls-tree``: every blob's hash and executable bit, nothing else).

A commit editspec refuses for a documented reason (a binary patch: UNSUPPORTED; a
symbolic link or a submodule: UNSUPPORTED) is counted as such, and the replay goes on from
that commit's tree, written from git. Any other refusal, and any tree that differs, is a
failure.

    python tests/reference/git_replay.py REPO [--max N]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from editspec.reference import ToolError, Workspace

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@attrs.define
class Replay:
    """What a replay met: commits applied exactly, refused for a documented reason, failed."""

    applied: int = 0
    departures: list[str] = attrs.Factory(list)
    failures: list[str] = attrs.Factory(list)


def _git(repo: Path, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C")
    done = subprocess.run(("git", *args), cwd=repo, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace')}")
    return done.stdout


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def git_tree(repo: Path, commit: str) -> dict[str, tuple[str, str]]:
    """``path -> (mode, blob id)`` of every entry of ``commit``'s tree."""
    entries: dict[str, tuple[str, str]] = {}
    for record in _git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            mode, _, blob = meta.decode().split(" ")
            entries[path.decode("utf-8", "surrogateescape")] = (mode, blob)
    return entries


def disk_tree(root: Path) -> dict[str, tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            mode = "100755" if path.stat().st_mode & 0o100 else "100644"
            entries[path.relative_to(root).as_posix()] = (mode, _blob_id(path.read_bytes()))
    return entries


def _checkout(repo: Path, commit: str, root: Path) -> None:
    """Write ``commit``'s regular files to ``root`` (emptied first)."""
    for entry in root.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for path, (mode, blob) in git_tree(repo, commit).items():
        if not mode.startswith("100"):
            continue
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_git(repo, "cat-file", "blob", blob))
        target.chmod(0o755 if mode == "100755" else 0o644)


def _regular(tree: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return {path: entry for path, entry in tree.items() if entry[0].startswith("100")}


def replay(repo: Path, work: Path, *, limit: int | None = None) -> Replay:
    """Replay ``repo``'s first-parent history into ``work`` (created); what it met."""
    commits = _git(repo, "rev-list", "--first-parent", "--reverse", "HEAD").decode().split()
    if limit is not None:
        commits = commits[:limit]
    root, state = work / "root", work / "state"
    root.mkdir(parents=True)
    state.mkdir()
    outcome = Replay()
    parent = EMPTY_TREE
    workspace = Workspace(root, state)
    try:
        session = workspace.session("replay")
        for commit in commits:
            diff = _git(repo, "diff", "-M", "--no-color", "--no-ext-diff", parent, commit)
            names = _git(repo, "diff", "--no-renames", "--name-only", "-z", parent, commit)
            expected = git_tree(repo, commit)
            try:
                text = diff.decode("utf-8")
            except UnicodeDecodeError:
                outcome.departures.append(f"{commit[:12]}: a diff that is not UTF-8")
                _checkout(repo, commit, root)
                parent = commit
                continue
            for name in filter(None, names.decode("utf-8", "surrogateescape").split("\0")):
                if (root / name).is_file():
                    session.read(name, max_bytes=1 << 30)
            try:
                if text:
                    session.apply_patch(text)
            except ToolError as error:
                documented = error.code == "UNSUPPORTED" and (
                    "binary patch" in error.message or "mode 1" in error.message
                )
                kind = "departure" if documented else "failure"
                (outcome.departures if documented else outcome.failures).append(
                    f"{commit[:12]}: {kind}: {error.code}: {error.message[:200]}"
                )
                _checkout(repo, commit, root)
                parent = commit
                continue
            got = disk_tree(root)
            if got != _regular(expected):
                wrong = sorted(
                    path
                    for path in set(got) | set(_regular(expected))
                    if got.get(path) != expected.get(path)
                )
                outcome.failures.append(f"{commit[:12]}: trees differ at {wrong[:5]}")
                _checkout(repo, commit, root)
            else:
                outcome.applied += 1
            parent = commit
    finally:
        workspace.close()
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--max", type=int, default=None, help="the first N commits only")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        outcome = replay(options.repo, Path(work), limit=options.max)
    print(f"applied exactly: {outcome.applied}")
    print(f"documented refusals: {len(outcome.departures)}")
    for line in outcome.departures:
        print(f"  {line}")
    print(f"failures: {len(outcome.failures)}")
    for line in outcome.failures:
        print(f"  {line}")
    return 1 if outcome.failures else 0


if __name__ == "__main__":
    sys.exit(main())
