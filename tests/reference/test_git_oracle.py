"""Unified diffs against git itself: generated histories, every diff applied both ways.

Hypothesis builds a small repository history with the real ``git`` (text files with LF,
CRLF and mixed line endings, with and without a final newline, a BOM, unicode, quoted and
spaced names, renames, copies, deletes, executable bits, binary files), and for every
commit against its parent prints ``git diff`` in each form of ``git_oracle.FORMS``
(default, -U0, -U1, --no-renames, -M, -C, --binary, --no-prefix, custom prefixes,
quotePath off). Each diff goes through editspec's ``apply_patch`` on one copy of the
parent tree and through ``git apply`` on another: the trees must be identical, or both
must refuse (editspec with a typed code, nothing changed), or editspec's refusal must be a
documented departure (a binary patch: UNSUPPORTED).
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.reference.git_oracle import (
    EMPTY_TREE,
    FORMS,
    Form,
    Repo,
    Tree,
    compare,
    have_git,
    read_tree,
)

pytestmark = pytest.mark.skipif(not have_git(), reason="git is not installed on this machine")

# A quarter of the profile's budget: each example runs git some hundred times.
EXAMPLES = settings(max_examples=max(4, settings.default.max_examples // 4))

NAMES = (
    "a.txt",
    "b c.txt",  # a space: git ends its ---/+++ names with a tab
    "ünï.txt",  # quoted with octal escapes unless core.quotePath=false
    'q"uote.md',  # quoted
    "t\tab",  # quoted, with a C escape
    "end ",  # a trailing space
    "sub/d.txt",
    "sub/ë f.py",
    "run.sh",
    "img.bin",
)
LINES = (
    "alpha",
    "beta",
    "gamma",
    "",
    "  indented",
    "tab\there",
    "naïve — text",
    "x = 1",
    "}",
    "trailing  ",
    "lone\rcarriage return",
    "-- dash",
    "+ plus",
    "\\ backslash",
)

Line = tuple[str, str]  # content, line break ("\n", "\r\n", or "" for a last line without)


def render(lines: list[Line], bom: bool) -> bytes:
    return (("\ufeff" if bom else "") + "".join(a + b for a, b in lines)).encode()


@st.composite
def text_lines(draw: st.DrawFn, min_size: int = 0) -> list[Line]:
    contents = draw(st.lists(st.sampled_from(LINES), min_size=min_size, max_size=7))
    style = draw(st.sampled_from(["lf", "crlf", "mixed"]))
    if style == "mixed":
        breaks = [draw(st.sampled_from(["\n", "\r\n"])) for _ in contents]
    else:
        breaks = ["\n" if style == "lf" else "\r\n"] * len(contents)
    lines = list(zip(contents, breaks, strict=True))
    if lines and draw(st.booleans()):
        lines[-1] = (lines[-1][0], "")  # no final newline
    return lines


def parse_lines(data: bytes) -> tuple[list[Line], bool]:
    text = data.decode()
    bom = text.startswith("\ufeff")
    text = text[1:] if bom else text
    parts = text.split("\n")
    tail = parts.pop()
    lines = [(part[:-1], "\r\n") if part.endswith("\r") else (part, "\n") for part in parts]
    if tail:
        lines.append((tail, ""))
    return lines, bom


@st.composite
def edited(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few line edits, or its line endings or final newline changed."""
    lines, bom = parse_lines(data)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "eol", "final", "bom"]))
        ending = draw(st.sampled_from(["\n", "\r\n"]))
        content = draw(st.sampled_from(LINES))
        at = draw(st.integers(0, len(lines)))
        if kind == "insert" or (kind in ("replace", "delete") and not lines):
            lines.insert(at, (content, ending))
        elif kind == "replace":
            at = min(at, len(lines) - 1)
            lines[at] = (content, lines[at][1])
        elif kind == "delete":
            del lines[min(at, len(lines) - 1)]
        elif kind == "eol":
            lines = [(c, e and ending) for c, e in lines]
        elif kind == "final" and lines:
            last, end = lines[-1]
            lines[-1] = (last, "" if end else ending)
        elif kind == "bom":
            bom = not bom
        # Only the last line may lack a line break.
        lines = [(c, e or "\n") for c, e in lines[:-1]] + lines[-1:]
    return render(lines, bom)


@st.composite
def new_file(draw: st.DrawFn, binary: bool) -> bytes:
    if binary:
        return b"\x00BIN" + draw(st.binary(min_size=0, max_size=40))
    return render(draw(text_lines()), draw(st.booleans()) and draw(st.booleans()))


def is_text(data: bytes) -> bool:
    return b"\x00" not in data


@st.composite
def next_tree(draw: st.DrawFn, tree: Tree) -> Tree:
    """``tree`` after one commit's worth of changes."""
    tree = dict(tree)
    for _ in range(draw(st.integers(1, 4))):
        free = [name for name in NAMES if name not in tree]
        texts = sorted(name for name, (data, _) in tree.items() if is_text(data))
        kinds = ["add"] if free else []
        if tree:
            kinds += ["delete", "chmod"]
        if texts:
            kinds += ["edit", "edit", "edit"]
        if tree and free:
            kinds += ["rename", "copy"]
        if not kinds:
            break
        kind = draw(st.sampled_from(kinds))
        if kind == "add":
            name = draw(st.sampled_from(free))
            binary = name.endswith(".bin") or draw(st.integers(0, 9)) == 0
            tree[name] = (draw(new_file(binary)), draw(st.booleans()) and name.endswith(".sh"))
        elif kind == "delete":
            del tree[draw(st.sampled_from(sorted(tree)))]
        elif kind == "chmod":
            name = draw(st.sampled_from(sorted(tree)))
            tree[name] = (tree[name][0], not tree[name][1])
        elif kind == "edit":
            name = draw(st.sampled_from(texts))
            tree[name] = (draw(edited(tree[name][0])), tree[name][1])
        else:
            source = draw(st.sampled_from(sorted(tree)))
            dest = draw(st.sampled_from(free))
            data, executable = tree[source] if kind == "copy" else tree.pop(source)
            if is_text(data) and draw(st.booleans()):
                data = draw(edited(data))
            tree[dest] = (data, executable)
            if kind == "copy" and is_text(tree[source][0]) and draw(st.booleans()):
                # git -C finds copies from files the commit modifies
                tree[source] = (draw(edited(tree[source][0])), tree[source][1])
    return tree


@st.composite
def histories(draw: st.DrawFn) -> list[Tree]:
    trees: list[Tree] = [{}]
    for _ in range(draw(st.integers(1, 3))):
        trees.append(draw(next_tree(trees[-1])))
    return trees


@EXAMPLES
@given(history=histories(), forms=st.sets(st.sampled_from(FORMS), min_size=3, max_size=5))
def test_every_diff_of_a_history_applies_as_git_applies_it(
    tmp_path_factory: pytest.TempPathFactory, history: list[Tree], forms: set[Form]
) -> None:
    base = tmp_path_factory.mktemp("history")
    repo = Repo(base / "repo")
    commits = [EMPTY_TREE] + [repo.commit(tree) for tree in history[1:]]
    for k in range(1, len(commits)):
        for form in sorted(forms, key=FORMS.index):
            diff = repo.diff(commits[k - 1], commits[k], form)
            outcome = compare(base / "work", history[k - 1], diff, form, repo.env, child=history[k])
            event(f"{outcome}: {form.name}")
            if outcome == "applied":
                # git's own result is the child commit's tree
                assert read_tree(base / "work" / "git") == history[k], form.name
