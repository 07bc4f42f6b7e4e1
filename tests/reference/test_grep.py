"""Grep: matches, files skipped, filters, truncation, cancellation and the two backends."""

from __future__ import annotations

import re
import stat
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference import FileSystem, GrepMatch, Limits, ToolError, Workspace
from editspec.reference.search import _grep_rg, _rg_tree
from editspec.reference.search._grep_py import Selection, result_order
from editspec.reference.search._grep_query import (
    compile_query,
    python_safe,
    required_literals,
    rg_safe,
)
from tests.reference import search_trees
from tests.reference.search_trees import Link, make_tree

HAVE_RG = _grep_rg.find_rg() is not None
BACKENDS = ["python", pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="no rg"))]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, workspace: Workspace) -> str:
    workspace.grep_backend = request.param
    return str(request.param)


def hits(result: Any) -> list[tuple[str, int, int, str]]:
    return [(m.path, m.line, m.column, m.text) for m in result.matches]


def error(call: Any) -> str:
    with pytest.raises(ToolError) as caught:
        call()
    return caught.value.code


# -- what a match is --------------------------------------------------------------------


def test_matches_have_path_line_column_and_text_in_order(
    root: Path, session: Any, backend: str
) -> None:
    make_tree(
        root,
        {
            "b.txt": "one\ntwo TODO\nthree\nTODO four\n",
            "a.txt": "TODO first\n",
            "sub": {"c.txt": "  TODO indented"},
        },
    )
    result = session.grep("TODO")
    assert hits(result) == [
        ("a.txt", 1, 1, "TODO first"),
        ("b.txt", 2, 5, "two TODO"),
        ("b.txt", 4, 1, "TODO four"),
        ("sub/c.txt", 1, 3, "  TODO indented"),
    ]
    assert result.truncated is False
    assert result.files_searched == 3
    assert result.backend == backend


def test_one_match_per_line_at_the_leftmost_column(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": "x TODO y TODO\n"})
    assert hits(session.grep("TODO")) == [("f", 1, 3, "x TODO y TODO")]


def test_columns_count_characters(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": "ééé 日本 TODO\n"})
    assert hits(session.grep("TODO")) == [("f", 1, 8, "ééé 日本 TODO")]


def test_lines_are_searched_one_by_one(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": "alpha\nbeta\n gamma\n"})
    assert hits(session.grep(r"alpha\nbeta")) == []
    assert hits(session.grep(r"alpha\s+beta")) == []
    assert [h[1] for h in hits(session.grep(r"\Ab"))] == [2]
    assert [h[1] for h in hits(session.grep(r"a\Z"))] == [1, 2, 3]
    assert [h[1] for h in hits(session.grep(r"^\s"))] == [3]


def test_crlf_lines_end_before_the_carriage_return(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": b"end\r\nmid\rdle\r\nlast\r"})
    assert hits(session.grep("d$")) == [("f", 1, 3, "end")]
    assert hits(session.grep("mid.dle")) == [("f", 2, 1, "mid\rdle")]
    assert hits(session.grep("t$")) == [("f", 3, 4, "last")]
    assert [h[1] for h in hits(session.grep(r"\w$"))] == [1, 2, 3]  # no literal to look for


def test_a_bom_is_not_part_of_the_first_line(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": b"\xef\xbb\xbfTODO\nTODO\n"})
    assert hits(session.grep("^TODO")) == [("f", 1, 1, "TODO"), ("f", 2, 1, "TODO")]


def test_undecodable_bytes_are_searched_as_replacement_characters(
    root: Path, session: Any, backend: str
) -> None:
    make_tree(root, {"latin1": b"caf\xe9 TODO\n"})
    assert hits(session.grep("TODO")) == [("latin1", 1, 6, "caf\ufffd TODO")]
    assert hits(session.grep("caf.")) == [("latin1", 1, 1, "caf\ufffd TODO")]


def test_zero_matches_is_a_success(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": "nothing here\n"})
    result = session.grep("absent")
    assert (result.matches, result.truncated, result.files_searched) == ((), False, 1)


def test_empty_pattern_and_empty_lines(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": "a\n\nb\n", "empty": "", "newline": "\n"})
    assert hits(session.grep("")) == [
        ("f", 1, 1, "a"),
        ("f", 2, 1, ""),
        ("f", 3, 1, "b"),
        ("newline", 1, 1, ""),
    ]
    assert [h[:2] for h in hits(session.grep("^$"))] == [("f", 2), ("newline", 1)]


def test_ignore_case_follows_python(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": "Todo\nTODO\nx\u0131x\nx\u0130x\nKelvin \u212a\n"})
    assert [h[1] for h in hits(session.grep("todo", ignore_case=True))] == [1, 2]
    # Python's re folds "i" with dotless and dotted I; ripgrep's does not: both backends
    # must report Python's answer.
    assert [h[1] for h in hits(session.grep("xix", ignore_case=True))] == [3, 4]
    assert [h[1] for h in hits(session.grep("k", ignore_case=True))] == [5]
    assert [h[1] for h in hits(session.grep("(?i)XIX"))] == [3, 4]


def test_python_regex_features(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": "abcabc\nfoo(bar)\nx1 y22 z333\n"})
    assert [h[1] for h in hits(session.grep(r"(abc)\1"))] == [1]
    assert hits(session.grep(r"(?<=foo)\(")) == [("f", 2, 4, "foo(bar)")]
    assert hits(session.grep(r"\d{3}")) == [("f", 3, 9, "x1 y22 z333")]
    assert hits(session.grep(r"(?P<w>y)(?P=w)?2")) == [("f", 3, 4, "x1 y22 z333")]


# -- invalid arguments --------------------------------------------------------------------


def test_invalid_arguments(root: Path, session: Any) -> None:
    assert error(lambda: session.grep("(unclosed")) == "INVALID_ARGUMENT"
    assert error(lambda: session.grep("a{2,1}")) == "INVALID_ARGUMENT"
    assert error(lambda: session.grep(b"bytes")) == "INVALID_ARGUMENT"
    assert error(lambda: session.grep("x", max_results=0)) == "INVALID_ARGUMENT"
    assert error(lambda: session.grep("x", include="")) == "INVALID_ARGUMENT"
    assert error(lambda: session.grep("x", deadline="soon")) == "INVALID_ARGUMENT"
    assert error(lambda: session.grep("x", path="missing")) == "NOT_FOUND"
    assert error(lambda: session.grep("x", path="../x")) == "OUTSIDE_WORKSPACE"


def test_unknown_backend_is_rejected(root: Path, workspace: Workspace) -> None:
    workspace.grep_backend = "grep"
    assert error(lambda: workspace.session("s").grep("x")) == "INVALID_ARGUMENT"


# -- which files ------------------------------------------------------------------------


def test_binary_files_are_skipped_by_a_nul_in_the_first_8_kib(
    root: Path, session: Any, backend: str
) -> None:
    make_tree(
        root,
        {
            "bin": b"TODO\0TODO\n",
            "late": b"TODO\n" + b"a" * 9000 + b"\0\n",
            "utf16": "TODO\n".encode("utf-16"),
        },
    )
    result = session.grep("TODO")
    assert hits(result) == [("late", 1, 1, "TODO")]
    assert result.files_searched == 3


def test_files_over_the_limit_are_skipped_and_counted(root: Path, state_dir: Path) -> None:
    make_tree(root, {"small": "TODO\n", "big": "TODO " * 10 + "\n", "sub": {"big2": "x" * 50}})
    workspace = Workspace(root, state_dir, Limits(grep_file_bytes=20))
    for backend in ["python", "rg"] if HAVE_RG else ["python"]:
        workspace.grep_backend = backend
        result = workspace.session("s").grep("TODO")
        assert hits(result) == [("small", 1, 1, "TODO")]
        assert (result.files_searched, result.files_skipped_too_large) == (1, 2)


def test_ignored_files_symlinks_and_dot_git_are_not_searched(
    root: Path, session: Any, backend: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("TODO outside\n")
    make_tree(
        root,
        {
            ".gitignore": "*.log\nbuild/\n",
            "a.log": "TODO\n",
            "build": {"x": "TODO\n"},
            ".git": {"config": "TODO\n"},
            "link": Link("kept.txt"),
            "out": Link(str(outside)),
            "kept.txt": "TODO kept\n",
        },
    )
    result = session.grep("TODO")
    assert hits(result) == [("kept.txt", 1, 1, "TODO kept")]
    assert result.files_searched == 2  # .gitignore and kept.txt


def test_include_filters_by_gitignore_style_patterns(
    root: Path, session: Any, backend: str
) -> None:
    make_tree(
        root,
        {
            "a.py": "TODO\n",
            "b.txt": "TODO\n",
            "c.md": "TODO\n",
            "src": {"d.py": "TODO\n", "tests": {"e.txt": "TODO\n"}},
        },
    )

    def paths(include: str) -> list[str]:
        return [m.path for m in session.grep("TODO", include=include).matches]

    assert paths("*.py") == ["a.py", "src/d.py"]
    assert paths("*.{txt,md}") == ["b.txt", "c.md", "src/tests/e.txt"]
    assert paths("src/*.py") == ["src/d.py"]
    assert paths("tests") == ["src/tests/e.txt"]
    assert session.grep("TODO", include="*.py").files_searched == 2


def test_max_results_truncates_in_path_and_line_order(
    root: Path, session: Any, backend: str
) -> None:
    make_tree(root, {"b": "TODO\nTODO\n", "a": "TODO\n", "c": "TODO\n"})
    result = session.grep("TODO", max_results=2)
    assert [(m.path, m.line) for m in result.matches] == [("a", 1), ("b", 1)]
    assert result.truncated is True
    exact = session.grep("TODO", max_results=4)
    assert (len(exact.matches), exact.truncated) == (4, False)


def test_path_may_name_one_file_even_an_ignored_one(root: Path, session: Any, backend: str) -> None:
    make_tree(
        root,
        {
            ".gitignore": "*.log\n",
            "x.log": "TODO\n",
            "alias.log": Link("x.log"),
            "d": {"y": "TODO"},
        },
    )
    assert hits(session.grep("TODO", path="x.log")) == [("x.log", 1, 1, "TODO")]
    assert hits(session.grep("TODO", path="alias.log")) == [("alias.log", 1, 1, "TODO")]
    assert hits(session.grep("TODO", path="d")) == [("d/y", 1, 1, "TODO")]
    assert session.grep("TODO", path="x.log", include="*.py").files_searched == 0


def test_odd_file_names(root: Path, session: Any, backend: str) -> None:
    make_tree(
        root,
        {
            "-": "TODO dash\n",
            "-e": "TODO option\n",
            "a:1:b": "TODO colons\n",
            "new\nline": "TODO newline\n",
            "sp ace": "TODO space\n",
        },
    )
    assert [m.path for m in session.grep("TODO").matches] == [
        "-",
        "-e",
        "a:1:b",
        "new\nline",
        "sp ace",
    ]


def test_unreadable_files_are_skipped(root: Path, session: Any, backend: str) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    make_tree(root, {"locked": "TODO\n", "open": "TODO\n"})
    (root / "locked").chmod(0)
    try:
        assert [m.path for m in session.grep("TODO").matches] == ["open"]
    finally:
        (root / "locked").chmod(stat.S_IRUSR | stat.S_IWUSR)


# -- cancellation -------------------------------------------------------------------------


def test_a_passed_deadline_or_a_set_token_cancels(root: Path, session: Any, backend: str) -> None:
    make_tree(root, {"f": "TODO\n"})
    assert error(lambda: session.grep("TODO", deadline=time.monotonic() - 1)) == "CANCELLED"
    token = threading.Event()
    token.set()
    assert error(lambda: session.grep("TODO", cancel=token)) == "CANCELLED"
    assert session.grep("TODO", deadline=time.monotonic() + 60).matches


class _CancelOnRead(FileSystem):
    """Sets the token the first time search reads file contents."""

    def __init__(self, token: threading.Event) -> None:
        super().__init__()
        self.token = token

    def read_files(
        self, directory: str, names: Iterable[str], *, limit: int | None = None
    ) -> Iterator[tuple[str, bytes | OSError]]:
        self.token.set()
        yield from super().read_files(directory, names, limit=limit)


def test_cancellation_during_the_search_is_an_error_not_a_partial_result(
    root: Path, state_dir: Path
) -> None:
    make_tree(root, {f"d{i}": {"f": "TODO\n"} for i in range(5)})
    token = threading.Event()
    workspace = Workspace(root, state_dir, fs=_CancelOnRead(token))
    workspace.grep_backend = "python"
    assert error(lambda: workspace.session("s").grep("TODO", cancel=token)) == "CANCELLED"


@pytest.fixture
def fake_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(script: str) -> Path:
        path = tmp_path / "fake-rg"
        path.write_text("#!/bin/sh\n" + script + "\n")
        path.chmod(0o755)
        monkeypatch.setattr(_grep_rg, "find_rg", lambda: str(path))
        return path

    return install


@pytest.fixture(params=["memory files", "pipes"])
def outputs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """ripgrep's output captured in anonymous memory files, or through pipes (platforms
    without memory files)."""
    if request.param == "pipes":
        monkeypatch.setattr(_grep_rg, "_memory_files", lambda: None)


def test_a_hanging_ripgrep_is_killed_at_the_deadline(
    root: Path, workspace: Workspace, fake_rg: Any, outputs: None
) -> None:
    fake_rg("exec sleep 30")
    make_tree(root, {"f": "TODO\n"})
    workspace.grep_backend = "rg"
    started = time.monotonic()
    assert error(lambda: workspace.session("s").grep("TODO", deadline=started + 0.3)) == "CANCELLED"
    assert time.monotonic() - started < 10


def test_a_failing_ripgrep_falls_back_to_python_in_auto_mode(
    root: Path, workspace: Workspace, fake_rg: Any
) -> None:
    fake_rg("echo broken >&2; exit 2")
    make_tree(root, {"f": "TODO\n"})
    workspace.grep_backend = "auto"
    result = workspace.session("s").grep("TODO")
    assert (hits(result), result.backend) == ([("f", 1, 1, "TODO")], "python")
    workspace.grep_backend = "rg"
    assert error(lambda: workspace.session("s").grep("TODO")) == "IO_ERROR"


def test_ripgrep_output_it_was_not_asked_for_is_a_failure(
    root: Path, workspace: Workspace, fake_rg: Any
) -> None:
    fake_rg("printf 'other\\0001:TODO\\n'")
    make_tree(root, {"f": "TODO\n"})
    workspace.grep_backend = "auto"
    assert workspace.session("s").grep("TODO").backend == "python"


def test_forcing_ripgrep_without_it_is_unsupported(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_grep_rg, "find_rg", lambda: None)
    workspace.grep_backend = "rg"
    assert error(lambda: workspace.session("s").grep("x")) == "UNSUPPORTED"
    workspace.grep_backend = "auto"
    assert workspace.session("s").grep("x").backend == "python"


@pytest.mark.skipif(not HAVE_RG, reason="no rg")
def test_a_file_that_vanishes_before_ripgrep_reads_it_is_skipped(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(root, {"gone": "TODO\n", "kept": "TODO\n"})
    monkeypatch.setattr(_rg_tree, "RG_WALKS", False)  # the file-list mode
    original = _grep_rg._run

    def run(command: list[str], cwd: str, check: Any, stop: threading.Event) -> bytes:
        (root / "gone").unlink(missing_ok=True)
        return original(command, cwd, check, stop)

    monkeypatch.setattr(_grep_rg, "_run", run)
    workspace.grep_backend = "rg"
    result = workspace.session("s").grep("TODO")
    assert (hits(result), result.backend) == ([("kept", 1, 1, "TODO")], "rg")
    assert result.files_searched == 2


@pytest.mark.skipif(not HAVE_RG, reason="no rg")
def test_many_ripgrep_batches_give_the_same_result(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(root, {"d": {f"f{i:02}": f"TODO {i}\n" for i in range(10)}, "g": "TODO g\n"})
    monkeypatch.setattr(_grep_rg, "_BATCH_FILES", 3)
    monkeypatch.setattr(_rg_tree, "RG_WALKS", False)  # the file-list mode
    calls: list[int] = []
    original = _grep_rg._run

    def run(command: list[str], cwd: str, check: Any, stop: threading.Event) -> bytes:
        calls.append(len(command) - command.index("--") - 1)
        return original(command, cwd, check, stop)

    monkeypatch.setattr(_grep_rg, "_run", run)
    workspace.grep_backend = "rg"
    result = workspace.session("s").grep("TODO")
    assert [m.path for m in result.matches] == [f"d/f{i:02}" for i in range(10)] + ["g"]
    assert sorted(calls) == [2, 3, 3, 3]


@pytest.mark.skipif(not HAVE_RG, reason="no rg")
def test_auto_uses_ripgrep_when_the_pattern_has_literals(root: Path, workspace: Workspace) -> None:
    make_tree(root, {"f": "TODO 12\n"})
    workspace.grep_backend = "auto"
    session = workspace.session("s")
    assert session.grep("TODO").backend == "rg"
    assert session.grep(r"\d+").backend == "python"
    workspace.grep_backend = "rg"
    assert hits(session.grep(r"\d+")) == [("f", 1, 6, "TODO 12")]


# -- ripgrep walking the tree itself ------------------------------------------------------

needs_rg = pytest.mark.skipif(not HAVE_RG, reason="no rg")


@pytest.fixture
def tree_modes() -> Iterator[list[bool]]:
    with search_trees.tree_modes() as found:
        yield found


def both(workspace: Workspace, pattern: str, **kw: Any) -> dict[str, Any]:
    """The result of each backend, the rg one last."""
    results = {}
    for name in ("python", "rg"):
        workspace.grep_backend = name
        result = workspace.session("s").grep(pattern, **kw)
        results[name] = (hits(result), result.files_searched, result.files_skipped_too_large)
    return results


@needs_rg
def test_ripgrep_walks_the_tree_itself_when_its_rules_read_alike(
    root: Path, workspace: Workspace, tree_modes: list[bool]
) -> None:
    make_tree(
        root,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n/top.txt\n# comment\n",
            "a.log": "TODO\n",
            "keep.log": "TODO keep\n",
            "top.txt": "TODO\n",
            "build": {"x": "TODO\n"},
            "src": {".gitignore": "*.tmp\n", "b.tmp": "TODO\n", "top.txt": "TODO src\n"},
            "empty": "",
        },
    )
    results = both(workspace, "TODO")
    assert results["rg"] == results["python"]
    assert results["rg"][0] == [("keep.log", 1, 1, "TODO keep"), ("src/top.txt", 1, 1, "TODO src")]
    assert tree_modes == [True]


@needs_rg
def test_a_search_below_the_root_gives_ripgrep_the_roots_ignore_files(
    root: Path, workspace: Workspace, tree_modes: list[bool]
) -> None:
    make_tree(
        root,
        {
            ".gitignore": "*.log\n/sub/top.txt\n",
            ".git": {"info": {"exclude": "*.tmp\n"}},
            "sub": {"a.log": "TODO\n", "b.tmp": "TODO\n", "top.txt": "TODO\n", "c": "TODO c\n"},
        },
    )
    results = both(workspace, "TODO", path="sub")
    assert results["rg"] == results["python"] == ([("sub/c", 1, 1, "TODO c")], 1, 0)
    assert tree_modes == [True]


@needs_rg
def test_a_search_root_named_dash_is_not_standard_input(
    root: Path, workspace: Workspace, tree_modes: list[bool]
) -> None:
    make_tree(root, {"-": {"f": "TODO\n"}})
    results = both(workspace, "TODO", path="-")
    assert results["rg"] == results["python"] == ([("-/f", 1, 1, "TODO")], 1, 0)
    assert tree_modes == [True]


# Trees on which ripgrep's own walk would keep other files than the engine's walk: the file
# git keeps holds "TODO" and ripgrep would skip it, the one git drops holds none and ripgrep
# would search it. The count of files searched is the same either way, so only the check
# named by each case keeps ripgrep from walking and losing the match.
FALLBACKS = [
    # Ignore files ripgrep's parser reads otherwise (``portable_syntax``), at the root (read
    # before ripgrep starts) and further down (met by the walk).
    pytest.param(
        {".gitignore": "*.log\n![[:alpha:]].log\n", "a.log": "TODO\n", "a].log": "x\n"},
        None,
        "a.log",
        id="POSIX class",
    ),
    pytest.param(
        {"d": {".gitignore": "{a,b}\n", "a": "TODO\n", "{a,b}": "x\n"}}, None, "d/a", id="braces"
    ),
    pytest.param(
        {"d": {".gitignore": "*x\n![\\]]x\n", "]x": "TODO\n", "\\]x": "x\n"}},
        None,
        "d/]x",
        id="escape",
    ),
    pytest.param(
        {"d": {".gitignore": "[a\\-c]x\n", "bx": "TODO\n", "-x": "x\n"}},
        None,
        "d/bx",
        id="escape in a bracket",
    ),
    pytest.param(
        {"d": {".gitignore": "x\t \n", "x": "TODO\n", "x\t": "x\n"}},
        None,
        "d/x",
        id="trailing tab",
    ),
    pytest.param(
        {".gitignore": b"\xef\xbb\xbf\xef\xbb\xbfa\n", "a": "TODO\n", "\ufeffa": "x\n"},
        None,
        "a",
        id="two BOMs",
    ),
    # A symlinked .gitignore: git does not read it, ripgrep would.
    pytest.param(
        {
            ".gitignore": "*.md\n",
            "rules": "a.txt\n!b.md\n",
            "sub": {".gitignore": Link("../rules"), "a.txt": "TODO\n", "b.md": "x\n"},
        },
        None,
        "sub/a.txt",
        id="symlinked .gitignore",
    ),
    # A repository below the root: ripgrep would read its .git/info/exclude.
    pytest.param(
        {
            ".git": {"info": {"exclude": "*.md\n"}},
            "sub": {
                ".git": {"info": {"exclude": "a.txt\n!b.md\n"}},
                "a.txt": "TODO\n",
                "b.md": "x\n",
            },
        },
        None,
        "sub/a.txt",
        id="nested repository",
    ),
    # Rules between the root and the search root cannot be given to ripgrep.
    pytest.param(
        {
            ".gitignore": "*.md\n",
            "a": {".gitignore": "*.log\n!keep.md\n", "b": {"x.log": "x\n", "keep.md": "TODO\n"}},
        },
        "a/b",
        "a/b/keep.md",
        id="rules between",
    ),
]


@needs_rg
@pytest.mark.parametrize(("spec", "path", "found"), FALLBACKS)
def test_trees_ripgrep_would_walk_differently_are_searched_from_the_list(
    root: Path,
    workspace: Workspace,
    tree_modes: list[bool],
    spec: dict[str, Any],
    path: Any,
    found: str,
) -> None:
    make_tree(root, spec)
    results = both(workspace, "TODO", path=path)
    assert results["rg"] == results["python"]
    assert results["rg"][0] == [(found, 1, 1, "TODO")]
    assert tree_modes == [False] or not tree_modes  # fell back, or ripgrep never started


@needs_rg
@pytest.mark.parametrize(
    ("spec", "found"),
    [
        # A directory named .gitignore: neither reads it; its files are searched.
        pytest.param(
            {"sub": {".gitignore": {"x": "TODO\n"}, "a": "TODO\n"}},
            ["b", "sub/.gitignore/x", "sub/a"],
            id="directory",
        ),
        # A .git that is a symlink: the engine does not read rules through it, ripgrep
        # would.
        pytest.param(
            {".git": Link("real"), "real": {"info": {"exclude": "*.log\n"}}, "a.log": "TODO\n"},
            ["a.log", "b"],
            id="symlinked .git",
        ),
    ],
)
def test_odd_entries_keep_the_file_list(
    root: Path,
    workspace: Workspace,
    tree_modes: list[bool],
    spec: dict[str, Any],
    found: list[str],
) -> None:
    # Where ripgrep would search fewer files, its count would show it too; it is not even
    # waited for.
    make_tree(root, {**spec, "b": "TODO\n"})
    results = both(workspace, "TODO")
    assert results["rg"] == results["python"]
    assert [path for path, *_ in results["rg"][0]] == found
    assert True not in tree_modes


@needs_rg
def test_an_include_filter_keeps_the_file_list(
    root: Path, workspace: Workspace, tree_modes: list[bool]
) -> None:
    make_tree(root, {"a.py": "TODO\n", "b.txt": "TODO\n"})
    results = both(workspace, "TODO", include="*.py")
    assert results["rg"] == results["python"] == ([("a.py", 1, 1, "TODO")], 1, 0)
    assert tree_modes == []  # ripgrep's walk would search every file: not started


@needs_rg
def test_ignore_files_above_the_root_do_not_matter(tmp_path: Path, tree_modes: list[bool]) -> None:
    outer = tmp_path / "outer"
    make_tree(outer, {".gitignore": "*\n", ".git": {"info": {"exclude": "*\n"}}})
    make_tree(outer / "ws", {"a": {"f": "TODO\n"}})
    workspace = Workspace(outer / "ws", tmp_path / "state")
    assert both(workspace, "TODO")["rg"][0] == [("a/f", 1, 1, "TODO")]
    assert both(workspace, "TODO", path="a")["rg"][0] == [("a/f", 1, 1, "TODO")]
    assert tree_modes == [True, True]


@needs_rg
def test_a_state_directory_inside_the_root_keeps_the_file_list(
    root: Path, tree_modes: list[bool]
) -> None:
    make_tree(root, {"f": "TODO\n"})
    workspace = Workspace(root, root / ".state")
    workspace.session("s").write("g", "TODO g\n")  # the state directory fills up
    assert both(workspace, "TODO")["rg"][0] == [("f", 1, 1, "TODO"), ("g", 1, 1, "TODO g")]
    assert tree_modes == []


@needs_rg
def test_files_over_the_limit_are_counted_in_the_tree_mode(
    root: Path, state_dir: Path, tree_modes: list[bool]
) -> None:
    make_tree(root, {"small": "TODO\n", "d": {"big": "TODO " * 10 + "\n", "big2": "x" * 50}})
    workspace = Workspace(root, state_dir, Limits(grep_file_bytes=20))
    results = both(workspace, "TODO")
    assert results["rg"] == results["python"] == ([("small", 1, 1, "TODO")], 1, 2)
    assert tree_modes == [True]


@needs_rg
@pytest.mark.parametrize(("number", "code"), [(2, None), (5, "IO_ERROR")])  # ENOENT, EIO
def test_directories_listed_again_for_sizes_may_be_gone_or_fail(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, number: int, code: Any
) -> None:
    import os

    make_tree(root, {"big": "TODO " * 10 + "\n", "d": {"f": "TODO\n"}, "e": {"g": "TODO\n"}})
    workspace = Workspace(root, state_dir, Limits(grep_file_bytes=20))
    workspace.grep_backend = "rg"
    listings: dict[str, int] = {}
    original = FileSystem.scandir

    def scandir(self: FileSystem, path: str) -> Any:
        listings[path] = listings.get(path, 0) + 1
        if path.endswith(os.sep + "d") and listings[path] > 1:  # listed again for sizes
            raise OSError(number, os.strerror(number), path)
        return original(self, path)

    monkeypatch.setattr(FileSystem, "scandir", scandir)
    if code is not None:
        assert error(lambda: workspace.session("s").grep("TODO")) == code
        return
    result = workspace.session("s").grep("TODO")
    # "d" vanished for the sizing: the count differs from ripgrep's, the file list decides.
    assert (hits(result), result.files_searched, result.files_skipped_too_large) == (
        [("e/g", 1, 1, "TODO")],
        1,
        1,
    )


@needs_rg
def test_nothing_to_search_needs_no_ripgrep_result(
    root: Path, workspace: Workspace, tree_modes: list[bool]
) -> None:
    make_tree(root, {".gitignore": "*\n", "a": "TODO\n"})
    results = both(workspace, "TODO")
    assert results["rg"] == results["python"] == ([], 0, 0)
    assert tree_modes == [True]


@needs_rg
def test_names_and_lines_that_are_not_utf8(
    root: Path, workspace: Workspace, tree_modes: list[bool]
) -> None:
    import os

    make_tree(root, {"d": {}})
    for name in (b"caf\xe9", b"d/\xff\xfe", b'q"uote\\'):
        with open(os.path.join(os.fsencode(root), name), "wb") as file:
            file.write(b'TODO \xe9\t"x"\\\r\nok\n')
    results = both(workspace, "TODO")
    assert results["rg"] == results["python"]
    assert len(results["rg"][0]) == 3
    assert tree_modes == [True]


@pytest.mark.parametrize("walks", [True, False])
def test_a_file_of_nothing_but_a_bom_has_no_line(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, walks: bool
) -> None:
    monkeypatch.setattr(_rg_tree, "RG_WALKS", walks)
    make_tree(root, {"bom": b"\xef\xbb\xbf", "bom-newline": b"\xef\xbb\xbf\n"})
    results = both(workspace, "^$") if HAVE_RG else {"python": None}
    assert results["python"] == ([("bom-newline", 1, 1, "")], 2, 0)
    assert results.get("rg", results["python"]) == results["python"]


@pytest.mark.parametrize("walks", [True, False])
def test_lines_with_a_literal_that_do_not_match_are_dropped(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, walks: bool
) -> None:
    monkeypatch.setattr(_rg_tree, "RG_WALKS", walks)
    make_tree(root, {"f": "TODO x\nTODO 7\n"})
    results = both(workspace, r"TODO \d") if HAVE_RG else {"python": None}
    assert results["python"] == ([("f", 2, 1, "TODO 7")], 1, 0)
    assert results.get("rg", results["python"]) == results["python"]


@pytest.fixture
def wrapped_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """ripgrep, except that in the tree mode (``--json``) a script answers instead."""
    real = _grep_rg.find_rg()

    def install(script: str) -> None:
        path = tmp_path / "wrapped-rg"
        path.write_text(
            f'#!/bin/sh\ncase " $* " in *" --json "*)\n{script}\nexit $?\nesac\n'
            f'exec "{real}" "$@"\n'
        )
        path.chmod(0o755)
        monkeypatch.setattr(_grep_rg, "find_rg", lambda: str(path))

    return install


def prints(*messages: object) -> str:
    """A shell command printing these JSON messages (strings as they are), one a line."""
    import json
    import shlex

    lines = [m if isinstance(m, str) else json.dumps(m, separators=(",", ":")) for m in messages]
    return "printf '%s\\n' " + " ".join(shlex.quote(line) for line in lines)


def _match(path: object, line: object, number: object = 1) -> dict[str, Any]:
    return {"type": "match", "data": {"path": path, "lines": line, "line_number": number}}


SUMMARY = {"type": "summary", "data": {"stats": {"searches": 1}}}


def late_nul(path: str) -> list[dict[str, Any]]:
    """ripgrep's messages for a file with a NUL after its first 8 KiB."""
    end = {"path": {"text": path}, "binary_offset": 9000}
    return [_match({"text": path}, {"text": "x\n"}), {"type": "end", "data": end}]


@needs_rg
@pytest.mark.parametrize(
    "script",
    [
        # A count of files searched that is not the walk's, above or below it.
        prints({"type": "summary", "data": {"stats": {"searches": 99}}}),
        prints({"type": "summary", "data": {"stats": {"searches": 0}}}),
        # A path outside the search root, or not a path the walk could give.
        prints(_match({"text": "../f"}, {"text": "TODO\n"}), SUMMARY),
        prints(_match({"text": "a//f"}, {"text": "x"}), SUMMARY),
        # A file the walk did not keep, in a directory it listed or not.
        prints(_match({"text": "g"}, {"text": "TODO\n"}), SUMMARY),
        prints(_match({"text": "d/f"}, {"text": "TODO\n"}), SUMMARY),
        # Not what was asked for.
        prints("f:1:TODO"),
        prints({"type": "summary"}),
        prints({"type": "context", "data": {}}),
        prints(_match({"bytes": "%%%"}, {"text": "x"}), SUMMARY),
        prints(_match({"bytes": 5}, {"text": "x"}), SUMMARY),
        prints(_match({"text": "f"}, {"text": "x"}, "1"), SUMMARY),
        prints(_match({"text": "f"}, ["x"]), SUMMARY),
        # No summary, a warning, a failure.
        "true",
        prints(SUMMARY) + "; echo warning >&2",
        "exit 2",
    ],
)
@pytest.mark.parametrize("max_results", [None, 1])
def test_what_ripgrep_walking_itself_prints_decides_whether_it_is_used(
    root: Path, workspace: Workspace, wrapped_rg: Any, script: str, max_results: int | None
) -> None:
    """Read whole once ripgrep has exited, or as it comes with ``max_results``."""
    wrapped_rg(script)
    make_tree(root, {"f": "TODO\n"})
    workspace.grep_backend = "rg"
    result = workspace.session("s").grep("TODO", max_results=max_results)
    # The file-list mode ran instead, with ripgrep itself.
    assert (hits(result), result.files_searched, result.backend) == (
        [("f", 1, 1, "TODO")],
        1,
        "rg",
    )


@needs_rg
@pytest.mark.parametrize("max_results", [None, 2])
def test_ripgrep_json_with_escapes_and_bytes_is_read(
    root: Path, workspace: Workspace, wrapped_rg: Any, max_results: int | None
) -> None:
    summary = prints(SUMMARY).replace("'%s\\n'", "'%s'")  # the last line without a newline
    wrapped_rg(
        prints(
            # Other key orders than ripgrep's are read too.
            {"data": {"path": {"text": "f"}}, "type": "begin"},
            _match({"bytes": "Zg=="}, {"bytes": "VE9ETyDp"}),  # f: b"TODO \xe9"
            _match({"text": "f"}, {"text": '"TODO"\t\\\n'}, 2),
            {"data": {"path": {"text": "f"}, "binary_offset": None}, "type": "end"},
            # The end of a file without lines.
            {"type": "end", "data": {"path": {"text": "g"}, "binary_offset": None, "stats": {}}},
        )
        + "; "
        + summary
    )
    make_tree(root, {"f": "other\nlines\n"})
    workspace.grep_backend = "rg"
    result = workspace.session("s").grep("TODO", max_results=max_results)
    assert hits(result) == [("f", 1, 1, "TODO \ufffd"), ("f", 2, 2, '"TODO"\t\\')]


@needs_rg
def test_a_path_ripgrep_prints_outside_a_search_below_the_root_is_refused(
    root: Path, workspace: Workspace, wrapped_rg: Any
) -> None:
    wrapped_rg(prints(_match({"text": "other/f"}, {"text": "TODO\n"}), SUMMARY))
    make_tree(root, {"sub": {"f": "TODO\n"}, "other": {"f": "TODO\n"}})
    workspace.grep_backend = "rg"
    assert hits(workspace.session("s").grep("TODO", path="sub")) == [("sub/f", 1, 1, "TODO")]


@needs_rg
@pytest.mark.parametrize("max_results", [None, 2])
def test_a_late_nul_file_is_searched_again_and_may_be_gone_meanwhile(
    root: Path,
    workspace: Workspace,
    wrapped_rg: Any,
    tree_modes: list[bool],
    monkeypatch: pytest.MonkeyPatch,
    max_results: int | None,
) -> None:
    monkeypatch.setattr(_rg_tree, "_AGAIN_FILES", 1)  # each searched again on its own
    long = "x" * 300  # a name too long to open: an error that is not skipped but raised
    make_tree(
        root,
        {
            "late": b"TODO\n" + b"a" * 9000 + b"\0 TODO\n",
            "d": {},
            "other": b"a" * 9000 + b"\0 line\n",  # a file without the literal
        },
    )
    late = [("late", 1, 1, "TODO"), ("late", 2, 9003, "a" * 9000 + "\0 TODO")]
    summary = {"type": "summary", "data": {"stats": {"searches": 2}}}
    wrapped_rg(prints(*late_nul("late"), *late_nul("other"), summary))
    workspace.grep_backend = "rg"
    session = workspace.session("s")
    assert hits(session.grep("TODO", max_results=max_results)) == late
    assert tree_modes == [True]
    # Files that are gone or not files any more are skipped (and these, which the walk
    # did not keep, hand the search to the file list).
    wrapped_rg(prints(*late_nul("late"), *late_nul("gone"), *late_nul("d"), SUMMARY))
    assert hits(session.grep("TODO", max_results=max_results)) == late
    # The first failure is the one raised; nothing more is checked after it.
    line = _match({"text": "f"}, {"text": "x"})
    wrapped_rg(prints(*late_nul(long), *late_nul("late"), line, SUMMARY))
    assert error(lambda: session.grep("TODO", max_results=max_results)) == "INVALID_ARGUMENT"


@needs_rg
def test_a_failing_walk_stops_ripgrep(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from editspec.reference.search import _search

    def cancelled(self: Any) -> int:
        raise ToolError("CANCELLED", "search cancelled")

    monkeypatch.setattr(_search.Candidates, "listed", cancelled)
    make_tree(root, {"f": "TODO\n"})
    workspace.grep_backend = "rg"
    assert error(lambda: workspace.session("s").grep("TODO")) == "CANCELLED"


@needs_rg
@pytest.mark.parametrize(
    "spec",
    [
        {".gitignore": Link("rules"), "rules": "*.log\n"},
        {".gitignore": {"x": ""}},
        {".git": "gitdir: elsewhere\n"},
        {".git": Link("real-git"), "real-git": {"info": {"exclude": "*.log\n"}}},
        {"sub": {".gitignore": "# rules to come\n"}},
    ],
)
def test_odd_root_ignore_files_for_a_search_below_the_root(
    root: Path, workspace: Workspace, tree_modes: list[bool], spec: dict[str, Any]
) -> None:
    make_tree(root, {**spec, "sub": {**spec.get("sub", {}), "a.log": "TODO\n", "b": "TODO\n"}})
    results = both(workspace, "TODO", path="sub")
    assert results["rg"] == results["python"]
    assert len(results["rg"][0]) == 2
    assert tree_modes == [True]


@needs_rg
def test_both_modes_through_memory_files_or_pipes(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, outputs: None
) -> None:
    make_tree(root, {"f": "TODO\n", "g": "x\n"})
    for walks in (True, False):
        monkeypatch.setattr(_rg_tree, "RG_WALKS", walks)
        results = both(workspace, "TODO")
        assert results["rg"] == results["python"] == ([("f", 1, 1, "TODO")], 2, 0)


def test_find_rg_prefers_path_then_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_grep_rg, "_lookup", {})
    monkeypatch.setattr(_grep_rg.shutil, "which", lambda name: None)
    monkeypatch.setattr(_grep_rg, "_packaged_rg", lambda: None)
    assert _grep_rg.find_rg() is None
    bogus = tmp_path / "rg"
    bogus.write_text("#!/bin/sh\necho 'not ripgrep'\n")
    bogus.chmod(0o755)
    monkeypatch.setattr(_grep_rg, "_lookup", {})
    monkeypatch.setattr(_grep_rg.shutil, "which", lambda name: str(bogus))
    assert _grep_rg.find_rg() is None  # present but not ripgrep


# -- required literals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "flags", "expected"),
    [
        ("TODO", 0, {("TODO", False)}),
        (r"foo\w+barbaz", 0, {("barbaz", False)}),
        ("(get|set)Item", 0, {("Item", False)}),
        ("get|set", 0, {("get", False), ("set", False)}),
        ("a|b*", 0, None),
        (r"\d+", 0, None),
        ("(?:ab)+c", 0, {("ab", False)}),
        ("(?:ab)*c", 0, {("c", False)}),
        ("(?i)todo", 0, {("todo", True)}),
        ("(?i:ab)cd", 0, {("cd", False)}),
        ("todo", re.IGNORECASE, {("todo", True)}),
        ("(?=x)y", 0, {("y", False)}),
        pytest.param(
            "(?>abc)",
            0,
            {("abc", False)},
            marks=pytest.mark.skipif(sys.version_info < (3, 11), reason="atomic groups: 3.11+"),
        ),
        ("", 0, None),
        ("a\nb", 0, {("a", False)}),
    ],
)
def test_required_literals(
    pattern: str, flags: int, expected: set[tuple[str, bool]] | None
) -> None:
    found = required_literals(pattern, flags, python_safe)
    assert (set(found) if found is not None else None) == expected


def test_ripgrep_literals_avoid_what_ripgrep_treats_differently() -> None:
    assert required_literals("identifier", re.IGNORECASE, rg_safe) == frozenset({("dent", True)})
    assert required_literals("x\u0131yy", re.IGNORECASE, rg_safe) == frozenset({("yy", True)})
    assert required_literals("ab\0cdef", 0, rg_safe) == frozenset({("cdef", False)})
    assert required_literals("a\ufffdbc", 0, rg_safe) == frozenset({("bc", False)})
    assert required_literals("é", 0, rg_safe) == frozenset({("é", False)})
    assert required_literals("é", re.IGNORECASE, rg_safe) is None


def test_every_match_of_a_query_contains_one_of_its_literals() -> None:
    query = compile_query("(foo|bar)[0-9]+baz")
    assert query.literals is not None
    for text in ["foo1baz", "bar22baz"]:
        assert query.regex.search(text)
        assert any(literal in text for literal, _ in query.literals)


# -- the port method Grep reads through -------------------------------------------------------


@pytest.mark.parametrize("secure_walk", [True, False])
def test_read_files_reads_regular_files_and_reports_the_rest(
    tmp_path: Path, secure_walk: bool
) -> None:
    import errno
    import os

    make_tree(tmp_path, {"a": "alpha", "b": "b" * 100, "dir": {}, "link": Link("a")})
    names = ["a", "b", "missing", "dir", "link"]
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        names.append("fifo")  # must not block: opened non-blocking, refused as not regular
    fs = FileSystem(secure_walk=secure_walk)
    results = dict(fs.read_files(str(tmp_path), names))
    assert results["a"] == b"alpha"
    assert results["b"] == b"b" * 100
    errors = {
        name: getattr(value, "errno", None)
        for name, value in results.items()
        if isinstance(value, OSError)
    }
    assert errors["missing"] == errno.ENOENT
    assert errors["link"] == errno.ELOOP  # never followed
    assert errors["dir"] == errno.EISDIR  # not a regular file
    if "fifo" in results:
        assert errors["fifo"] == errno.EISDIR
    limited = dict(fs.read_files(str(tmp_path), ["a", "b"], limit=3))
    assert limited == {"a": b"alp", "b": b"bbb"}


# -- failures and races ------------------------------------------------------------------------


def test_include_patterns_pathspec_rejects_are_invalid(root: Path, session: Any) -> None:
    assert error(lambda: session.grep("x", include="!")) == "INVALID_ARGUMENT"
    assert error(lambda: session.grep("x", include="\\")) == "INVALID_ARGUMENT"


def test_a_single_file_path_that_is_excluded_other_or_too_large(
    root: Path, state_dir: Path
) -> None:
    import os

    make_tree(root, {".git": {"HEAD": "TODO"}, "big": "TODO " * 10})
    workspace = Workspace(root, state_dir, Limits(grep_file_bytes=20))
    session = workspace.session("s")
    result = session.grep("TODO", path=".git/HEAD")
    assert (result.matches, result.files_searched) == ((), 0)
    result = session.grep("TODO", path="big")
    assert (result.matches, result.files_searched, result.files_skipped_too_large) == ((), 0, 1)
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe")
        assert session.grep("TODO", path="pipe").files_searched == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_failures_skip_a_vanished_file_and_report_an_io_error(
    root: Path, tmp_path: Path, backend: str
) -> None:
    import errno

    from tests.reference.search_trees import scripted_fs

    make_tree(root, {"gone": "TODO\n", "kept": "TODO\n", "bad": "TODO\n"})
    vanished = Workspace(root, tmp_path / "s1", fs=scripted_fs(fail_read={"/gone": errno.ENOENT}))
    vanished.grep_backend = backend
    assert [m.path for m in vanished.session("s").grep("TODO").matches] == ["bad", "kept"]
    failing = Workspace(root, tmp_path / "s2", fs=scripted_fs(fail_read={"/bad": errno.EIO}))
    failing.grep_backend = backend
    assert error(lambda: failing.session("s").grep("TODO")) == "IO_ERROR"


def test_a_missing_or_broken_ripgrep_executable(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, outputs: None
) -> None:
    make_tree(root, {"f": "TODO\n"})
    monkeypatch.setattr(_grep_rg, "find_rg", lambda: str(tmp_path / "no-such-rg"))
    workspace.grep_backend = "auto"
    assert workspace.session("s").grep("TODO").backend == "python"
    assert not _grep_rg._works(str(tmp_path / "no-such-rg"))


@pytest.mark.parametrize(
    ("script", "backend"),
    [
        ("printf 'garbage without a nul\\n'", "python"),  # unparsable: the Python backend
        ("printf 'f\\0001:TODO'", "rg"),  # a last record without a newline is fine
        ("exit 2", "python"),  # an error without a message
        ("echo 'rg: f: Input/output error (os error 5)' >&2; exit 2", "python"),
        ("echo 'rg: f: No such file or directory (os error 2)' >&2; exit 2", "rg"),
    ],
)
def test_what_ripgrep_prints_decides_whether_its_result_is_used(
    root: Path, workspace: Workspace, fake_rg: Any, script: str, backend: str
) -> None:
    fake_rg(script)
    make_tree(root, {"f": "TODO\n"})
    workspace.grep_backend = "auto"
    result = workspace.session("s").grep("TODO")
    assert result.backend == backend
    assert hits(result) == (
        [("f", 1, 1, "TODO")] if backend == "python" or "TODO" in script else []
    )


def test_a_stopped_batch_does_not_start_and_a_running_one_is_killed(
    tmp_path: Path, outputs: None
) -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(_grep_rg.RipgrepFailed):
        _grep_rg._run(["sleep", "30"], str(tmp_path), lambda: None, stop)
    with pytest.raises(_grep_rg.RipgrepFailed):
        _grep_rg.stream(["sleep", "30"], str(tmp_path), lambda: None, stop, lambda chunk: None)
    running = threading.Event()
    threading.Timer(0.2, running.set).start()
    started = time.monotonic()
    with pytest.raises(_grep_rg.RipgrepFailed):
        _grep_rg._run(["sleep", "30"], str(tmp_path), lambda: None, running)
    assert time.monotonic() - started < 10


def test_the_packaged_ripgrep_is_found_through_its_distribution(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.metadata

    class _File:
        def __init__(self, name: str) -> None:
            self.name = name

        def locate(self) -> Path:
            return tmp_path / "bin" / self.name

    monkeypatch.setattr(importlib.metadata, "files", lambda name: [_File("LICENSE"), _File("rg")])
    assert _grep_rg._packaged_rg() == str(tmp_path / "bin" / "rg")
    monkeypatch.setattr(importlib.metadata, "files", lambda name: [_File("LICENSE")])
    assert _grep_rg._packaged_rg() is None

    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", missing)
    assert _grep_rg._packaged_rg() is None


def test_candidates_that_vanish_during_the_walk_are_not_counted(root: Path, tmp_path: Path) -> None:
    from tests.reference.search_trees import scripted_fs

    make_tree(root, {"vanish.txt": "TODO\n", "kept.txt": "TODO\n"})
    workspace = Workspace(root, tmp_path / "s", fs=scripted_fs(vanish="vanish"))
    result = workspace.session("s").grep("TODO")
    assert ([m.path for m in result.matches], result.files_searched) == (["kept.txt"], 1)


# -- max_results: the matches kept ----------------------------------------------------------

PLACES = st.tuples(st.sampled_from(["a", "a-b", "a/b", "a/b/c", "b", "é"]), st.integers(1, 40))


@given(
    places=st.lists(PLACES, unique=True, max_size=60),
    keep=st.integers(1, 8),
    order=st.randoms(use_true_random=False),
    sizes=st.lists(st.integers(0, 7), min_size=1, max_size=6),
)
def test_a_selection_keeps_what_a_full_sort_and_cut_keeps(
    places: list[tuple[str, int]], keep: int, order: Any, sizes: list[int]
) -> None:
    found = [GrepMatch(path=p, line=n, column=n % 3 + 1, text=f"{p}:{n}") for p, n in places]
    order.shuffle(found)
    selection = Selection(keep)
    start = 0
    for size in sizes * len(found):  # batches of any size, empty ones too
        selection.add(found[start : start + size])
        start += size
    selection.add(found[start:])
    assert sorted(selection.matches(), key=result_order) == sorted(found, key=result_order)[:keep]
    everything = Selection(None)
    everything.add(found)
    assert everything.matches() == found


@pytest.fixture(scope="module")
def matching_trees(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Trees of 800 and 8 000 files, every one of which has one line matching ``^# file``."""
    trees = {}
    for files in (800, 8_000):
        root = tmp_path_factory.mktemp(f"tree{files}")
        for number in range(files):
            directory = root / f"d{number // 100}"
            if number % 100 == 0:
                directory.mkdir()
            (directory / f"f{number}.py").write_text(
                f"# file {number} {'-' * 100}\nvalue = {number}\n" + "alpha beta gamma\n" * 4
            )
        trees[files] = root
    return trees


@pytest.mark.parametrize("mode", ["python", "rg walking", "rg file list"])
def test_memory_of_a_grep_with_max_results_does_not_grow_with_the_matches(
    matching_trees: dict[int, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    """Peak memory (tracemalloc) of ``grep(max_results=100)``, 800 and then 8 000 files
    matching: what the larger grep holds more is at most the walk's listing of the files
    (under 200 bytes a file), not the matches. Holding every match until the cut costs
    440 bytes a file here in the Python backend, 1 100 with ripgrep given the file list,
    1 700 with ripgrep walking the tree."""
    import tracemalloc

    from editspec.reference.search import _grep_py, _grep_worker

    if mode != "python" and not HAVE_RG:
        pytest.skip("no rg")
    # Small batches, so that 800 files are already many batches: the bound is
    # ``max_results`` plus one batch, and the default batch is 4 MiB.
    for module in (_grep_worker, _grep_py, _rg_tree):
        monkeypatch.setattr(module, "BATCH_BYTES", 16 * 1024)
    monkeypatch.setattr(_grep_rg, "_BATCH_FILES", 256)
    monkeypatch.setattr(_rg_tree, "RG_WALKS", mode == "rg walking")
    peaks = {}
    for files, tree in matching_trees.items():
        workspace = Workspace(tree, tmp_path / f"state{files}")
        workspace.grep_backend = "python" if mode == "python" else "rg"
        session = workspace.session("s")
        session.grep("nothing matches this #")  # the worker started, the imports done
        tracemalloc.start()
        try:
            result = session.grep("^# file", max_results=100)
            peaks[files] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            workspace.close()
        assert (len(result.matches), result.truncated, result.files_searched) == (100, True, files)
        assert [m.path for m in result.matches] == sorted(m.path for m in result.matches)
    per_file = (peaks[8_000] - peaks[800]) / 7_200
    assert per_file < 250, f"{per_file:.0f} bytes more per file matching ({peaks})"


def outcome(session: Any, pattern: str, **kw: Any) -> tuple[object, ...]:
    """The outcome of a Grep: its matches and counts, or its error code and message."""
    try:
        result = session.grep(pattern, **kw)
    except ToolError as exc:
        return ("error", exc.code, str(exc))
    return (hits(result), result.truncated, result.files_searched, result.backend)


def same_outcome(session: Any, pattern: str, **kw: Any) -> tuple[object, ...]:
    """The outcome of the Grep without ``max_results``, once that of the Grep with
    ``max_results=1`` is found to be it cut after one match (or the same error)."""
    whole = outcome(session, pattern, **kw)
    cut = outcome(session, pattern, max_results=1, **kw)
    if whole[0] == "error":
        assert cut == whole
    else:
        matches = list(whole[0])  # type: ignore[call-overload]
        assert cut == (matches[:1], len(matches) > 1, *whole[2:])
    return whole


def failing_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """ripgrep in the file-list mode, a file a batch, except where ``script`` (a ``case``
    on its arguments) answers instead."""
    real = _grep_rg.find_rg()
    path = tmp_path / "failing-rg"
    path.write_text(f'#!/bin/sh\ncase " $* " in\n{script}\nesac\nexec "{real}" "$@"\n')
    path.chmod(0o755)
    monkeypatch.setattr(_grep_rg, "find_rg", lambda: str(path))


@pytest.fixture
def one_file_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_rg_tree, "RG_WALKS", False)
    monkeypatch.setattr(_grep_rg, "_BATCH_FILES", 1)
    monkeypatch.setattr(_grep_rg, "_AHEAD", 1)


@needs_rg
def test_the_first_batch_that_fails_fails_the_search_with_max_results_too(
    root: Path,
    workspace: Workspace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    one_file_batches: None,
) -> None:
    make_tree(root, {"ok": "TODO\n", **{f"fail{i}": "TODO\n" for i in range(5)}})
    failing_rg(tmp_path, monkeypatch, '*" fail"*) echo "rg: $# broken" >&2; exit 2;;')
    workspace.grep_backend = "rg"
    session = workspace.session("s")
    found = same_outcome(session, "TODO")
    assert found[:2] == ("error", "IO_ERROR") and "broken" in str(found[2])
    workspace.grep_backend = "auto"  # the Python backend takes over
    found = same_outcome(session, "TODO")
    every = [(f"fail{i}", 1, 1, "TODO") for i in range(5)] + [("ok", 1, 1, "TODO")]
    assert found == (every, False, 6, "python")


@needs_rg
def test_output_not_asked_for_wins_over_a_read_error_of_an_earlier_batch(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_file_batches: None
) -> None:
    import errno

    from tests.reference.search_trees import scripted_fs

    # The root's files are the first batches, ``sub``'s come after them.
    make_tree(root, {"bad": "TODO\n", "good": "TODO\n", "sub": {"odd": "TODO\n", "z": "TODO\n"}})
    workspace = Workspace(root, tmp_path / "state", fs=scripted_fs(fail_read={"/bad": errno.EIO}))
    workspace.grep_backend = "rg"
    session = workspace.session("s")
    found = same_outcome(session, "TODO")
    assert found[:2] == ("error", "IO_ERROR") and "bad" in str(found[2])
    failing_rg(tmp_path, monkeypatch, "*\" sub/odd \"*) printf 'elsewhere\\0001:TODO\\n';;")
    found = same_outcome(session, "TODO")
    assert found[:2] == ("error", "IO_ERROR") and "not given: 'elsewhere'" in str(found[2])


@needs_rg
@pytest.mark.parametrize("walks", [True, False])
def test_cancellation_while_ripgrep_lines_are_checked_is_an_error(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, walks: bool
) -> None:
    """A read of file contents sets the token: in the file-list mode, the read of a
    candidate's first bytes; with ripgrep walking, the read of a file with a late NUL."""
    make_tree(root, {"f": "TODO\n", "late": b"TODO\n" + b"a" * 9000 + b"\0 TODO\n"})
    token = threading.Event()
    if walks:
        original = FileSystem.read_files

        def read_files(self: FileSystem, *args: Any, **kw: Any) -> Any:
            token.set()
            return original(self, *args, **kw)

        monkeypatch.setattr(FileSystem, "read_files", read_files)
        workspace = Workspace(root, state_dir)
    else:
        workspace = Workspace(root, state_dir, fs=_CancelOnRead(token))
    workspace.grep_backend = "rg"
    session = workspace.session("s")
    for limit in (None, 1):
        token.clear()
        assert outcome(session, "TODO", cancel=token, max_results=limit)[:2] == (
            "error",
            "CANCELLED",
        )


def slow_walk(monkeypatch: pytest.MonkeyPatch, fail: str | None = None) -> None:
    """Each directory listing through the fs port takes a while (ripgrep's walk does not),
    and the listing of a directory named ``fail`` fails with EIO."""
    import errno
    import os

    original = FileSystem.scandir

    def scandir(self: FileSystem, path: str) -> Any:
        time.sleep(0.05)
        if fail is not None and os.path.basename(path) == fail:
            raise OSError(errno.EIO, "injected", path)
        return original(self, path)

    monkeypatch.setattr(FileSystem, "scandir", scandir)


@needs_rg
def test_ripgrep_ahead_of_the_walk_waits_for_it_and_its_files_are_still_checked(
    root: Path,
    workspace: Workspace,
    wrapped_rg: Any,
    tree_modes: list[bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tree(root, {f"d{i}": {"f": "TODO\n"} for i in range(4)})
    slow_walk(monkeypatch)
    monkeypatch.setattr(_rg_tree, "UNCHECKED_FILES", 1)
    workspace.grep_backend = "rg"
    session = workspace.session("s")
    expected = [(f"d{i}/f", 1, 1, "TODO") for i in range(4)]
    assert same_outcome(session, "TODO") == (expected, False, 4, "rg")
    assert tree_modes == [True, True]
    # One more file in ripgrep's output, which the walk does not keep: the file-list mode
    # runs instead (ripgrep walking would have reported the ghost's line).
    printed = [_match({"text": f"d{i}/f"}, {"text": "TODO\n"}) for i in range(4)]
    ghost = _match({"text": "d3/ghost"}, {"text": "TODO\n"})
    wrapped_rg(prints(*printed, ghost, {"type": "summary", "data": {"stats": {"searches": 4}}}))
    assert same_outcome(session, "TODO") == (expected, False, 4, "rg")


@needs_rg
def test_a_walk_that_fails_while_ripgrep_waits_for_it_fails_the_search(
    root: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(root, {"d0": {"f": "TODO\n"}, "d1": {"f": "TODO\n"}, "d2": {"f": "TODO\n"}})
    slow_walk(monkeypatch, fail="d1")
    monkeypatch.setattr(_rg_tree, "UNCHECKED_FILES", 0)
    workspace.grep_backend = "rg"
    assert same_outcome(workspace.session("s"), "TODO")[:2] == ("error", "IO_ERROR")


@needs_rg
def test_a_failed_check_is_not_an_error_when_the_walks_differ(
    root: Path,
    workspace: Workspace,
    wrapped_rg: Any,
    tree_modes: list[bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ``sub``'s rules are not read alike by ripgrep; the walk finds it after ripgrep has
    # printed a file that cannot be opened (a name too long), which is not searched.
    make_tree(root, {"a": "TODO\n", "sub": {".gitignore": "[[:alpha:]]x\n", "b": "TODO\n"}})
    slow_walk(monkeypatch)
    wrapped_rg(prints(*late_nul("x" * 300), SUMMARY))
    workspace.grep_backend = "rg"
    found = same_outcome(workspace.session("s"), "TODO")
    assert found == ([("a", 1, 1, "TODO"), ("sub/b", 1, 1, "TODO")], False, 3, "rg")
    assert tree_modes == [False, False]
