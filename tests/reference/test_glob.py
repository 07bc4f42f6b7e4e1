"""Glob: pattern semantics, search root, symlinks, order and truncation."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from editspec.reference import ToolError
from tests.reference.search_trees import Link, make_tree

TREE = {
    "README.md": "",
    "notes.md": "",
    "setup.py": "",
    "src": {
        "app.py": "",
        "util.ts": "",
        "view.tsx": "",
        "pkg": {"mod.py": "", "deep": {"x.py": "", "doc.md": ""}},
    },
    "tests": {"test_app.py": ""},
    ".hidden.py": "",
}


def paths(session: Any, pattern: str, **kw: Any) -> set[str]:
    return set(session.glob(pattern, **kw).paths)


def error(call: Any) -> str:
    with pytest.raises(ToolError) as caught:
        call()
    return caught.value.code


@pytest.fixture
def tree(root: Path) -> Path:
    make_tree(root, TREE)
    return root


def test_star_matches_at_the_search_root_only(tree: Path, session: Any) -> None:
    assert paths(session, "*.md") == {"README.md", "notes.md"}
    assert paths(session, "*.py") == {"setup.py", ".hidden.py"}


def test_globstar_matches_at_any_depth(tree: Path, session: Any) -> None:
    assert paths(session, "**/*.py") == {
        "setup.py",
        ".hidden.py",
        "src/app.py",
        "src/pkg/mod.py",
        "src/pkg/deep/x.py",
        "tests/test_app.py",
    }
    assert paths(session, "**/deep/*.md") == {"src/pkg/deep/doc.md"}


def test_directory_globstar_lists_everything_below(tree: Path, session: Any) -> None:
    assert paths(session, "src/pkg/**") == {
        "src/pkg/mod.py",
        "src/pkg/deep",
        "src/pkg/deep/x.py",
        "src/pkg/deep/doc.md",
    }


def test_directories_match_and_a_trailing_slash_keeps_only_them(tree: Path, session: Any) -> None:
    assert paths(session, "src/*") == {"src/app.py", "src/util.ts", "src/view.tsx", "src/pkg"}
    assert paths(session, "src/*/") == {"src/pkg"}
    assert paths(session, "**/") == {"src", "src/pkg", "src/pkg/deep", "tests"}


def test_brace_alternatives(tree: Path, session: Any) -> None:
    assert paths(session, "src/*.{ts,tsx}") == {"src/util.ts", "src/view.tsx"}
    assert paths(session, "{src,tests}/*.py") == {"src/app.py", "tests/test_app.py"}


def test_character_classes_and_escapes(root: Path, session: Any) -> None:
    make_tree(root, {"a1": "", "b2": "", "c3": "", "*": "", "x*": "", "[x]": ""})
    assert paths(session, "[ab][0-9]") == {"a1", "b2"}
    assert paths(session, "[!a]?") == {"b2", "c3", "x*"}
    assert paths(session, "\\*") == {"*"}
    assert paths(session, "\\[x]") == {"[x]"}


def test_path_selects_a_subdirectory_and_results_stay_workspace_relative(
    tree: Path, session: Any
) -> None:
    assert paths(session, "*.py", path="src") == {"src/app.py"}
    assert paths(session, "**/*.md", path="src/pkg") == {"src/pkg/deep/doc.md"}
    assert paths(session, "*.py", path=str(tree / "src")) == {"src/app.py"}


def test_dot_slash_and_absolute_patterns(tree: Path, session: Any) -> None:
    assert paths(session, "./src/*.py") == {"src/app.py"}
    assert paths(session, str(tree / "src" / "*.py")) == {"src/app.py"}
    assert paths(session, str(tree / "src" / "pkg" / "*.py"), path="src") == {"src/pkg/mod.py"}
    assert error(lambda: session.glob("/elsewhere/*.py")) == "INVALID_ARGUMENT"


def test_invalid_arguments(tree: Path, session: Any) -> None:
    assert error(lambda: session.glob("")) == "INVALID_ARGUMENT"
    assert error(lambda: session.glob("../*")) == "INVALID_ARGUMENT"
    assert error(lambda: session.glob("src/../../x")) == "INVALID_ARGUMENT"
    assert error(lambda: session.glob("a\0b")) == "INVALID_ARGUMENT"
    assert error(lambda: session.glob("./")) == "INVALID_ARGUMENT"
    assert error(lambda: session.glob("*", max_results=0)) == "INVALID_ARGUMENT"
    assert error(lambda: session.glob("*", max_results=True)) == "INVALID_ARGUMENT"
    assert error(lambda: session.glob(None)) == "INVALID_ARGUMENT"


def test_search_root_errors(tree: Path, session: Any) -> None:
    assert error(lambda: session.glob("*", path="missing")) == "NOT_FOUND"
    assert error(lambda: session.glob("*", path="setup.py")) == "INVALID_ARGUMENT"
    assert error(lambda: session.glob("*", path="..")) == "OUTSIDE_WORKSPACE"
    assert error(lambda: session.glob("*", path="/")) == "OUTSIDE_WORKSPACE"


def test_a_named_ignored_directory_is_searched(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".gitignore": "vendor/\n*.log\n",
            "vendor": {"lib.py": "", "x.log": ""},
            ".git": {"HEAD": ""},
        },
    )
    assert paths(session, "**") == {".gitignore"}
    assert paths(session, "**", path="vendor") == {"vendor/lib.py"}
    assert paths(session, "**", path=".git") == set()


def test_symlinks_are_listed_but_never_entered(root: Path, session: Any, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_tree(outside, {"secret.py": ""})
    make_tree(
        root,
        {
            "real": {"a.py": ""},
            "to_real": Link("real"),
            "to_outside": Link(str(outside)),
            "to_file": Link("real/a.py"),
            "dangling.py": Link("nowhere"),
            "loop": Link("loop"),
            "up": Link(".."),
        },
    )
    got = paths(session, "**")
    assert got == {
        "real",
        "real/a.py",
        "to_real",
        "to_outside",
        "to_file",
        "dangling.py",
        "loop",
        "up",
    }
    assert paths(session, "**/*.py") == {"real/a.py", "dangling.py"}
    assert not any("secret" in p for p in got)


def test_a_symlinked_search_root_reports_the_callers_name(root: Path, session: Any) -> None:
    make_tree(root, {"real": {"a.py": ""}, "alias": Link("real")})
    assert paths(session, "*.py", path="alias") == {"alias/a.py"}


def test_sockets_and_fifos_are_not_listed(root: Path, session: Any) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(root / "pipe")
    (root / "file").write_text("")
    assert paths(session, "*") == {"file"}


def _touch(path: Path, mtime: int) -> None:
    os.utime(path, ns=(mtime, mtime), follow_symlinks=False)


def test_order_files_then_directories_newest_first_then_path(root: Path, session: Any) -> None:
    make_tree(root, {"old.txt": "", "new.txt": "", "same_b": "", "same_a": "", "d1": {}, "d2": {}})
    _touch(root / "old.txt", 1_000_000_000_000_000_000)
    _touch(root / "new.txt", 3_000_000_000_000_000_000)
    _touch(root / "same_a", 2_000_000_000_000_000_000)
    _touch(root / "same_b", 2_000_000_000_000_000_000)
    _touch(root / "d1", 1_000_000_000_000_000_000)
    _touch(root / "d2", 2_000_000_000_000_000_000)
    assert session.glob("*").paths == ("new.txt", "same_a", "same_b", "old.txt", "d2", "d1")


def test_mtimes_a_float_cannot_tell_apart_are_still_ordered_to_the_nanosecond(
    root: Path, session: Any
) -> None:
    # Nanoseconds of a recent date: a double holds them to about 256 ns, so a.txt and
    # b.txt have different mtimes but equal floats; b.txt is the newer, and the path
    # order (a before b) must not decide.
    base = 1_764_000_000_000_000_000
    assert float(base + 1) == float(base + 2)
    make_tree(root, {"a.txt": "", "b.txt": "", "c.txt": ""})
    _touch(root / "c.txt", base + 1_000_000)
    for older, newer in (("a.txt", "b.txt"), ("b.txt", "a.txt")):  # whatever the listing
        _touch(root / older, base + 1)
        _touch(root / newer, base + 2)
        assert session.glob("*.txt").paths == ("c.txt", newer, older)
    _touch(root / "c.txt", base + 2)  # and with an mtime two files share, the path decides
    assert session.glob("*.txt").paths == ("a.txt", "c.txt", "b.txt")


def test_max_results_truncates_and_counts_what_it_returns(root: Path, session: Any) -> None:
    make_tree(root, {f"f{i}.txt": "" for i in range(5)})
    for i in range(5):
        _touch(root / f"f{i}.txt", (i + 1) * 1_000_000_000_000_000_000)
    result = session.glob("*.txt", max_results=2)
    assert result.paths == ("f4.txt", "f3.txt")
    assert result.truncated is True
    assert result.total_matches == 2
    full = session.glob("*.txt", max_results=5)
    assert (full.truncated, full.total_matches, len(full.paths)) == (False, 5, 5)
    assert session.glob("*.none").paths == ()


def test_unicode_names(root: Path, session: Any) -> None:
    make_tree(root, {"日本": {"ファイル.md": ""}, "é.txt": ""})
    assert paths(session, "**/*.md") == {"日本/ファイル.md"}
    assert paths(session, "?.txt") == {"é.txt"}  # "?" is one character in Glob patterns


def test_deep_trees_do_not_need_recursion(root: Path, session: Any) -> None:
    deep = root
    for _ in range(200):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "leaf.py").write_text("")
    assert session.glob("**/leaf.py").paths == ("/".join(["d"] * 200) + "/leaf.py",)


def test_literal_prefixes_prune_the_walk(tree: Path, session: Any) -> None:
    from editspec.reference.search._glob import GlobPattern
    from editspec.reference.search._scope import SearchRoot

    pattern = GlobPattern("src/pkg/*.py", SearchRoot("", "", "dir", str(tree)), str(tree))
    assert pattern.descend("src")
    assert pattern.descend("src/pkg")
    assert not pattern.descend("tests")
    assert not pattern.descend("src/pkg/deep")
    anywhere = GlobPattern("**/x.py", SearchRoot("", "", "dir", str(tree)), str(tree))
    assert anywhere.descend("a/b/c/d")


# -- entries that change under the walk, and failures --------------------------------------------


def _workspace(root: Path, tmp_path: Path, **script: Any) -> Any:
    from editspec.reference import Workspace
    from tests.reference.search_trees import scripted_fs

    return Workspace(root, tmp_path / "state-scripted", fs=scripted_fs(**script)).session("s")


def test_entries_gone_before_they_are_used_are_skipped(root: Path, tmp_path: Path) -> None:
    make_tree(root, {"keep.py": "", "vanish.py": "", "vanish_dir": {"x.py": ""}, "d": {"y.py": ""}})
    session = _workspace(root, tmp_path, vanish="vanish")
    assert paths(session, "**") == {"keep.py", "d", "d/y.py"}


def test_a_vanished_ignore_file_counts_as_none(root: Path, tmp_path: Path) -> None:
    make_tree(root, {"d": {".gitignore": "*.log\n", "a.log": ""}})
    session = _workspace(root, tmp_path, vanish=".gitignore")
    assert paths(session, "**") == {"d", "d/a.log"}


def test_a_directory_named_gitignore_holds_no_rules(root: Path, session: Any) -> None:
    make_tree(root, {"d": {".gitignore": {"x.log": ""}, "y.log": ""}})
    assert paths(session, "**") == {"d", "d/.gitignore", "d/.gitignore/x.log", "d/y.log"}


def test_failures_to_list_or_read_rules_are_errors(root: Path, tmp_path: Path) -> None:
    import errno

    make_tree(root, {"d": {".gitignore": "x\n", "f": ""}})
    broken_root = _workspace(root, tmp_path, fail_scandir={"ws": errno.EIO})
    assert error(lambda: broken_root.glob("**")) == "IO_ERROR"
    broken_rules = _workspace(root, tmp_path, fail_read={".gitignore": errno.EIO})
    assert error(lambda: broken_rules.glob("**")) == "IO_ERROR"
    # A subdirectory that cannot be listed any more is skipped, as one that vanished.
    unlistable = _workspace(root, tmp_path, fail_scandir={"/d": errno.EACCES})
    assert paths(unlistable, "**") == {"d"}


def test_ignored_symlinks_and_non_ascii_entries(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".gitignore": "ln\né*/\n*.txt\n!k*.txt\n",
            "ln": Link("x"),
            "éx": {"f": ""},
            "ü.txt": "",
            "kü.txt": "",
            "y": "",
        },
    )
    assert paths(session, "**") == {".gitignore", "kü.txt", "y"}
