"""A whole history with CRLF files, replayed commit by commit, lands on git's trees.

The history is built here with the real ``git`` (no network): forty commits over a small
project with LF sources, CRLF files (a Windows ``make.bat``, CRLF test fixtures, a mixed
file), files without a final newline, end-of-line conversions both ways, renames with and
without edits, copies, deletions, scripts made executable and back, spaced and unicode
names. ``git_replay.replay`` applies every commit's ``git diff -M`` in turn through
editspec and compares the directory with the commit's tree after each.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.reference.git_oracle import Repo, Tree, have_git
from tests.reference.git_replay import replay

pytestmark = pytest.mark.skipif(not have_git(), reason="git is not installed on this machine")

WORDS = ("alpha", "beta", "gamma", "delta", "", "  indented", "x = 1", "}", "naïve — ok")


def _text(rng: random.Random, newline: str, lines: int) -> bytes:
    body = [rng.choice(WORDS) + f" {rng.randrange(30)}" for _ in range(lines)]
    return newline.join(body).encode() + (newline.encode() if rng.random() < 0.8 else b"")


def _edit(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    newline = b"\r\n" if data.count(b"\r\n") * 2 > data.count(b"\n") else b"\n"
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(lines))
        word = f"{rng.choice(WORDS)} {rng.randrange(99)}".encode()
        cr = b"\r" if newline == b"\r\n" else b""
        if rng.random() < 0.5:
            lines.insert(at, word + cr)
        else:
            lines[at] = word + (cr if lines[at].endswith(b"\r") else b"")
    return b"\n".join(lines)


def history(seed: int, commits: int) -> list[Tree]:
    rng = random.Random(seed)
    tree: Tree = {
        "docs/make.bat": (b"@ECHO OFF\r\npushd %~dp0\r\nsphinx-build %*\r\npopd\r\n", False),
        "src/app.py": (_text(rng, "\n", 12), False),
        "tests/fixtures/win.txt": (_text(rng, "\r\n", 8), False),
        "tests/fixtures/mixed.txt": (b"one\r\ntwo\nthree\r\nfour", False),
        "README.md": (b"# demo\n\nno final newline", False),
        "run.sh": (b"#!/bin/sh\necho hi\n", False),
    }
    trees = [dict(tree)]
    for number in range(commits):
        tree = dict(tree)
        kind = rng.choice(
            ["edit", "edit", "edit", "eol", "rename", "copy", "add", "delete", "chmod", "final"]
        )
        texts = sorted(tree)
        name = rng.choice(texts)
        data, executable = tree[name]
        if kind == "edit":
            tree[name] = (_edit(rng, data), executable)
        elif kind == "eol":  # a conversion, LF to CRLF or back
            lf = data.replace(b"\r\n", b"\n")
            tree[name] = (lf if lf != data else lf.replace(b"\n", b"\r\n"), executable)
        elif kind == "rename" and name != "docs/make.bat":
            del tree[name]
            moved = rng.choice(["moved/", "ünï code/", "spaced dir/"]) + name.rsplit("/", 1)[-1]
            tree[moved] = (_edit(rng, data) if rng.random() < 0.5 else data, executable)
        elif kind == "copy":
            tree[f"copies/{number} {name.rsplit('/', 1)[-1]}"] = (data, executable)
            tree[name] = (_edit(rng, data), executable)  # git -M finds no copy: an add
        elif kind == "add":
            newline = rng.choice(["\n", "\r\n"])
            tree[f"new/{number}.{'bat' if newline == chr(13) + chr(10) else 'txt'}"] = (
                _text(rng, newline, rng.randint(0, 6)),
                False,
            )
        elif kind == "delete" and len(tree) > 4 and name != "docs/make.bat":
            del tree[name]
        elif kind == "chmod":
            tree[name] = (data, not executable)
        elif kind == "final":  # the final newline added or removed
            stripped = data.rstrip(b"\r\n")
            tree[name] = (stripped if stripped != data else data + b"\r\n", executable)
        trees.append(tree)
    return trees


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_a_history_with_crlf_files_replays_to_gits_trees(tmp_path: Path, seed: int) -> None:
    trees = history(seed, commits=40)
    repo = Repo(tmp_path / "repo")
    for number, tree in enumerate(trees):
        repo.commit(tree, f"commit {number}")
    outcome = replay(repo.path, tmp_path / "work")
    assert outcome.failures == []
    assert outcome.departures == []
    assert outcome.applied == len(trees)
