"""Properties of search on generated trees.

* Ignore semantics agree with git: Glob lists exactly the files ``git ls-files --others
  --exclude-standard`` lists, and ``why_ignored`` names the rule ``git check-ignore -v``
  names, on trees with nested ignore files, negations, anchored and directory-only
  patterns, ``.git/info/exclude``, unicode names and symlinks.
* The two Grep backends return identical results, and both equal a naive line-by-line
  search of the files Glob lists (so neither the ripgrep prefilter nor the Python
  backend's literal shortcuts lose a match).
* On trees whose ignore files ripgrep reads as git does, ripgrep walks the tree itself
  (from the root or below it, files over the size limit or not) and still returns the
  Python backend's result.
* A Grep with ``max_results``, which keeps only the matches it may return, returns the
  Grep without it cut after ``max_results``, in every backend and mode, batches small or
  not.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference import Workspace
from editspec.reference.search import _grep_py, _grep_rg, _grep_worker, _rg_tree
from editspec.reference.search._grep_rg import find_rg
from tests.reference.search_trees import (
    GIT,
    Link,
    case_sensitive,
    entries,
    git_check_ignore,
    git_init,
    git_untracked,
    make_tree,
    tree_modes,
)

NAME_POOL = [
    "a",
    "b",
    "ab",
    "x.py",
    "y.log",
    "keep.log",
    "build",
    "sub",
    "é",
    "ü.txt",
    "日本.md",
    "sp ace",
    "[x]",
    "*",
    "-dash",
    ".hidden",
    "a.b.c",
    "tail ",
]
names = st.one_of(
    st.sampled_from(NAME_POOL),
    st.text(alphabet="abxy.é*?[]! -_", min_size=1, max_size=4),
).filter(lambda n: n not in (".", "..", ".git", ".gitignore"))

SEGMENTS = st.one_of(
    st.sampled_from(
        [
            "a",
            "b",
            "ab",
            "*",
            "**",
            "***",
            "*.log",
            "?",
            "??",
            "[ab]",
            "[!a]",
            "[^b]",
            "[a-c]",
            "[]a]",
            "[[:alpha:]]",
            "a*",
            "*b",
            "a**",
            "**b",
            "x.py",
            "*.py",
            "build",
            "sub",
            "é",
            "ü*",
            "?.txt",
            "\\*",
            "\\[x]",
            "sp ace",
            "tail\\ ",
            "[x",
        ]
    ),
    names.filter(lambda n: not n.endswith(" ") and not n.startswith(("#", "!"))),
)


@st.composite
def ignore_lines(
    draw: Any,
    segments: st.SearchStrategy[str] = SEGMENTS,
    others: tuple[str, ...] = ("# comment", "", "   ", "\\#a", "\\!a", "!", "/"),
) -> str:
    """A pattern of ``segments``, or one in ten times a line of ``others``."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.sampled_from(others))
    negated = "!" if draw(st.integers(0, 3)) == 0 else ""
    lead = "/" if draw(st.integers(0, 3)) == 0 else ""
    body = "/".join(draw(st.lists(segments, min_size=1, max_size=3)))
    trail = "/" if draw(st.integers(0, 3)) == 0 else ""
    spaces = " " if draw(st.integers(0, 7)) == 0 else ""
    return negated + lead + body + trail + spaces


@st.composite
def ignore_files(
    draw: Any, lines: st.SearchStrategy[str] | None = None, boms: bool = False
) -> bytes:
    """Lines of ``lines`` (``ignore_lines()``), with a BOM one in ten times if ``boms``."""
    drawn = draw(st.lists(ignore_lines() if lines is None else lines, min_size=1, max_size=6))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    bom = "\ufeff" if boms and draw(st.integers(0, 9)) == 0 else ""
    text = bom + newline.join(drawn) + (newline if draw(st.booleans()) else "")
    return text.encode("utf-8")


CONTENTS = st.sampled_from(
    [
        b"",
        b"\n",
        b"TODO first\nsecond line\n",
        b"alpha TODO beta\r\ngamma\r\n",
        b"no newline at end TODO",
        b"bin\0ary TODO\n",
        b"\xef\xbb\xbfTODO after bom\nx\n",
        "Ünïcödé tödo TODO \u0131 \u0130\n".encode(),
        b"latin \xe9 TODO \xff\n",
        b"TODO\n" + b"a" * 9000 + b"\0 late nul TODO\n",
        b"foo bar\nbaz foo\n\n  indented todo\n",
        b"x = 1\ny = 22\nz = 333\n",
        b"\tTab\r\nlone\rcr\n",
        b"ki KI \xe2\x84\xaa kelvin\n",
    ]
)

LINK_TARGETS = st.sampled_from(["a", "../a", ".", "..", "sub", "missing", "/", "../../.."])


@st.composite
def trees(
    draw: Any,
    depth: int = 0,
    ignores: st.SearchStrategy[bytes] | None = None,
    kinds: tuple[str, ...] = ("file", "file", "file", "dir", "link"),
    ignore_one_in: int = 3,
) -> dict[str, Any]:
    """Entries of ``kinds``, with a ``.gitignore`` of ``ignores`` (``ignore_files()``) in
    one directory in ``ignore_one_in``."""
    spec: dict[str, Any] = {}
    for _ in range(draw(st.integers(0, 5 if depth < 2 else 3))):
        name = draw(names)
        if name in spec:
            continue
        kind = draw(st.sampled_from(kinds))
        if kind == "dir" and depth < 3:
            spec[name] = draw(trees(depth + 1, ignores, kinds, ignore_one_in))
        elif kind == "link":
            spec[name] = Link(draw(LINK_TARGETS))
        else:
            spec[name] = draw(CONTENTS)
    if draw(st.integers(0, ignore_one_in - 1)) == 0:
        spec[".gitignore"] = draw(ignore_files() if ignores is None else ignores)
    return spec


@contextmanager
def materialized(
    spec: dict[str, Any], exclude: bytes | None = None
) -> Iterator[tuple[Path, Workspace]]:
    base = Path(tempfile.mkdtemp(prefix="editspec-search-"))
    try:
        root = base / "ws"
        make_tree(root, spec)
        if GIT is not None:
            git_init(root)
            if exclude is not None:
                (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
                (root / ".git" / "info" / "exclude").write_bytes(exclude)
        state = base / "state"
        state.mkdir()
        workspace = Workspace(root, state)
        yield root, workspace
    finally:
        shutil.rmtree(base, ignore_errors=True)


# Generated regexes such as "[[" make Python warn about future set syntax; not our concern.
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")
needs_rg = pytest.mark.skipif(find_rg() is None, reason="ripgrep is not installed")


@pytest.fixture(scope="module", autouse=True)
def _case_sensitive_fs() -> None:
    with tempfile.TemporaryDirectory() as directory:
        if not case_sensitive(Path(directory)):
            pytest.skip("git's ignore matching follows core.ignoreCase on this file system")


# -- git as the oracle of ignore semantics ----------------------------------------------


@needs_git
@given(spec=trees(), exclude=st.none() | ignore_files())
def test_glob_lists_exactly_the_files_git_does_not_ignore(
    spec: dict[str, Any], exclude: bytes | None
) -> None:
    with materialized(spec, exclude) as (root, workspace):
        listed = workspace.session("s").glob("**").paths
        kinds = dict(entries(root))
        files = {p for p in listed if kinds[p] != "dir"}
        assert files == git_untracked(root)
        # Every listed directory is one git does not ignore either.
        dirs = [p for p in listed if kinds[p] == "dir"]
        assert all(
            verdict is None or verdict[2].startswith("!")
            for verdict in git_check_ignore(root, dirs).values()
        )


@needs_git
@given(spec=trees(), exclude=st.none() | ignore_files())
def test_why_ignored_names_the_rule_git_check_ignore_names(
    spec: dict[str, Any], exclude: bytes | None
) -> None:
    with materialized(spec, exclude) as (root, workspace):
        session = workspace.session("s")
        paths = [p for p, _ in entries(root)]
        expected = git_check_ignore(root, paths)
        for path in paths:
            explanation = session.why_ignored(path)
            got = (
                (explanation.source, explanation.line, explanation.pattern)
                if explanation.source is not None
                else None
            )
            assert got == expected[path], path
            assert explanation.ignored == (got is not None and not got[2].startswith("!"))


# -- the two grep backends and a naive oracle ---------------------------------------------

PATTERNS = st.one_of(
    st.sampled_from(
        [
            "TODO",
            "todo",
            "^T",
            "O$",
            r"\w+",
            ".",
            "",
            "^$",
            "ünï",
            "\u0131",
            "i",
            "I",
            "k",
            "K",
            "foo|baz",
            r"\bbar\b",
            "[^a-z]+$",
            r"(o)\1",
            "(?=O)D",
            r"\d{2,}",
            "\r",
            "\ufffd",
            "\t",
            r"\A\s",
            r"(?i)todo|(?-i:KI)",
            "a{3}",
            r"[\u00e9\u00c9]",
            "late nul",
            "kelvin|\u212a",
        ]
    ),
    st.text(alphabet="TODOabxy. ^$*+?()|[]\\dws\u0131\u0130", min_size=1, max_size=6),
)
INCLUDES = st.sampled_from([None, "*.py", "*.{txt,md}", "sub", "a*", "**/b", "*.log"])


def _naive(
    root: Path, workspace: Workspace, pattern: str, ignore_case: bool
) -> set[tuple[str, int, int, str]]:
    """Line-by-line Python search of the regular files Glob lists (no shortcuts)."""
    regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    found: set[tuple[str, int, int, str]] = set()
    for path in workspace.session("naive").glob("**").paths:
        full = root / path
        if full.is_symlink() or not full.is_file():
            continue
        data = full.read_bytes()
        if b"\0" in data[:8192]:
            continue
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        lines = data.decode("utf-8", "replace").split("\n")
        if lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, start=1):
            line = line[:-1] if line.endswith("\r") else line
            match = regex.search(line)
            if match:
                found.add((path, number, match.start() + 1, line))
    return found


def _valid(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


@given(spec=trees(), pattern=PATTERNS.filter(_valid), ignore_case=st.booleans(), include=INCLUDES)
def test_python_backend_equals_a_naive_search(
    spec: dict[str, Any], pattern: str, ignore_case: bool, include: str | None
) -> None:
    with materialized(spec) as (root, workspace):
        workspace.grep_backend = "python"
        result = workspace.session("s").grep(pattern, ignore_case=ignore_case, include=include)
        assert result.backend == "python"
        got = {(m.path, m.line, m.column, m.text) for m in result.matches}
        naive = _naive(root, workspace, pattern, ignore_case)
        if include is None:
            assert got == naive
        else:
            assert got <= naive
        keys = [(m.path, m.line) for m in result.matches]
        assert keys == sorted(keys)


@needs_rg
@given(
    spec=trees(),
    pattern=PATTERNS.filter(_valid),
    ignore_case=st.booleans(),
    include=INCLUDES,
    max_results=st.none() | st.integers(1, 5),
)
def test_ripgrep_and_python_backends_return_identical_results(
    spec: dict[str, Any],
    pattern: str,
    ignore_case: bool,
    include: str | None,
    max_results: int | None,
) -> None:
    with materialized(spec) as (_root, workspace):
        session = workspace.session("s")
        results = {}
        for backend in ("python", "rg"):
            workspace.grep_backend = backend
            results[backend] = session.grep(
                pattern, ignore_case=ignore_case, include=include, max_results=max_results
            )
        assert results["rg"].backend == "rg"
        for field in ("matches", "truncated", "files_searched", "files_skipped_too_large"):
            assert getattr(results["rg"], field) == getattr(results["python"], field), field


# -- ripgrep walking the tree itself -----------------------------------------------------

# Ignore lines in the subset ripgrep's gitignore parser reads as git does
# (``_ignore.portable_syntax``): the tree mode of the ripgrep backend applies to such trees.
ALIKE_SEGMENTS = st.sampled_from(
    [
        *("a", "b", "ab", "*", "**", "*.log", "a*", "*b", "x.py", "*.py", "build", "sub"),
        *("é", "ü*", "sp ace", "日本.md", ".hidden", "-dash", "keep.log", "*.txt", "a.b.c"),
        *("!x", "?", "??", "?.txt", "[ab]", "[!a]", "[^b]", "[a-c]", "*.p[xy]", "[Xx]*"),
    ]
)


ALIKE_IGNORE_FILES = ignore_files(
    ignore_lines(ALIKE_SEGMENTS, ("# comment", "", "   ", "#!x")), boms=True
)
ALIKE_TREES = trees(
    ignores=ALIKE_IGNORE_FILES,
    kinds=("file", "file", "file", "dir", "dir", "link"),
    ignore_one_in=2,
)


def _directories(spec: dict[str, Any], prefix: str = "") -> list[str]:
    found = []
    for name, node in spec.items():
        if isinstance(node, dict):
            found.append(prefix + name)
            found += _directories(node, prefix + name + "/")
    return found


@needs_rg
@given(
    spec=ALIKE_TREES,
    exclude=st.none() | ALIKE_IGNORE_FILES,
    pattern=PATTERNS.filter(_valid),
    ignore_case=st.booleans(),
    limit=st.sampled_from([10 * 1024 * 1024, 12, 0]),
    where=st.integers(0, 1000),
)
def test_ripgrep_walking_the_tree_itself_equals_the_python_backend(
    spec: dict[str, Any],
    exclude: bytes | None,
    pattern: str,
    ignore_case: bool,
    limit: int,
    where: int,
) -> None:
    from editspec.reference import Limits
    from editspec.reference.search._ignore import parse_rules, portable_syntax

    choices = [None, *_directories(spec)]
    path = choices[where % len(choices)]
    assert exclude is None or portable_syntax(exclude)
    with materialized(spec, exclude) as (root, workspace):
        assert all(portable_syntax(p.read_bytes()) for p in root.rglob(".gitignore") if p.is_file())
        workspace.limits = Limits(grep_file_bytes=limit)
        session = workspace.session("s")
        results = {}
        with tree_modes() as modes:
            for backend in ("python", "rg"):
                workspace.grep_backend = backend
                results[backend] = session.grep(pattern, path=path, ignore_case=ignore_case)
        assert results["rg"].backend == "rg"
        for field in ("matches", "files_searched", "files_skipped_too_large"):
            assert getattr(results["rg"], field) == getattr(results["python"], field), field
        # ripgrep's own walk stood in for the engine's (no link named .git is generated),
        # unless an ignore file between the root and the search root holds rules (only
        # the root's can be given to ripgrep), or every file was over the limit (ripgrep
        # then complains it searched none).
        between = []
        if path is not None:
            node: dict[str, Any] = spec
            for part in path.split("/")[:-1]:
                node = node[part]
                between.append(node.get(".gitignore", b""))
        if not any(parse_rules(content, "") for content in between):
            assert modes == [True] or results["rg"].files_searched == 0


# -- max_results -------------------------------------------------------------------------


@contextmanager
def small_batches() -> Iterator[None]:
    """Batches of a line or two, a file or two and a path waiting for the walk, so that
    a small tree takes every path of the bounded search: many batches, selections cut
    and lines dropped, ripgrep waiting for the walk."""
    with ExitStack() as stack:
        for module in (_grep_worker, _grep_py, _rg_tree):
            stack.enter_context(mock.patch.object(module, "BATCH_BYTES", 200))
        stack.enter_context(mock.patch.object(_grep_rg, "_BATCH_FILES", 2))
        stack.enter_context(mock.patch.object(_grep_rg, "_AHEAD", 1))
        stack.enter_context(mock.patch.object(_rg_tree, "UNCHECKED_FILES", 1))
        stack.enter_context(mock.patch.object(_rg_tree, "_AGAIN_FILES", 1))
        yield


def _cut(result: Any, limit: int) -> tuple[object, ...]:
    """What a Grep with ``max_results=limit`` must return, from the Grep without it."""
    return (
        result.matches[:limit],
        len(result.matches) > limit,
        result.files_searched,
        result.files_skipped_too_large,
        result.backend,
    )


def _fields(result: Any) -> tuple[object, ...]:
    return (
        result.matches,
        result.truncated,
        result.files_searched,
        result.files_skipped_too_large,
        result.backend,
    )


@needs_rg
@given(
    spec=st.one_of(trees(), ALIKE_TREES),
    pattern=PATTERNS.filter(_valid),
    ignore_case=st.booleans(),
    include=INCLUDES,
    limit=st.integers(1, 6),
    walks=st.booleans(),
    small=st.booleans(),
    too_large=st.sampled_from([10 * 1024 * 1024, 12]),
)
def test_a_grep_with_max_results_is_the_grep_without_it_cut(
    spec: dict[str, Any],
    pattern: str,
    ignore_case: bool,
    include: str | None,
    limit: int,
    walks: bool,
    small: bool,
    too_large: int,
) -> None:
    from editspec.reference import Limits

    with materialized(spec) as (_root, workspace):
        workspace.limits = Limits(grep_file_bytes=too_large)
        session = workspace.session("s")
        with mock.patch.object(_rg_tree, "RG_WALKS", walks):
            for backend in ("python", "rg"):
                workspace.grep_backend = backend
                whole = session.grep(pattern, ignore_case=ignore_case, include=include)
                with small_batches() if small else nullcontext():
                    cut = session.grep(
                        pattern, ignore_case=ignore_case, include=include, max_results=limit
                    )
                assert _fields(cut) == _cut(whole, limit), backend


def test_generated_trees_are_materialized_as_specified(tmp_path: Path) -> None:
    spec = {"d": {"f": b"x", "l": Link("f")}, "g": "text"}
    make_tree(tmp_path / "t", spec)
    assert dict(entries(tmp_path / "t")) == {
        "d": "dir",
        "d/f": "file",
        "d/l": "symlink",
        "g": "file",
    }
    assert os.readlink(tmp_path / "t" / "d" / "l") == "f"
