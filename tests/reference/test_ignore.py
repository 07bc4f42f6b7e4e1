"""Ignore rules: git's .gitignore semantics, built-in exclusions, explanations."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from editspec.reference import Workspace
from editspec.reference.search._ignore import BUILTIN, ignore_file, parse_rules, portable_syntax
from tests.reference.search_trees import Link, make_tree


def listed(session: Any, pattern: str = "**") -> set[str]:
    return set(session.glob(pattern).paths)


def explain(session: Any, path: str) -> tuple[bool, str | None, int | None, str | None]:
    e = session.why_ignored(path)
    return e.ignored, e.source, e.line, e.pattern


# -- parsing ----------------------------------------------------------------------------


def test_comments_blank_lines_and_line_numbers() -> None:
    rules = parse_rules(b"# comment\n\n*.log\n  \n!keep.log\n", ".gitignore")
    assert [(r.line, r.pattern, r.negated) for r in rules] == [
        (3, "*.log", False),
        (5, "!keep.log", True),
    ]


def test_trailing_spaces_are_trimmed_unless_escaped_and_tabs_stay() -> None:
    rules = parse_rules(b"a  \nb\\ \nc\t\nd\\\\  \n", ".gitignore")
    assert [r.pattern for r in rules] == ["a", "b\\ ", "c\t", "d\\\\"]


def test_crlf_bom_and_nul_are_handled_as_git_does() -> None:
    rules = parse_rules(b"\xef\xbb\xbffirst\r\nsecond\x00ignored\r\n", ".gitignore")
    assert [r.pattern for r in rules] == ["first", "second"]


def test_flags_of_a_rule() -> None:
    (rule,) = parse_rules(b"!/build/\n", "sub/.gitignore")
    assert rule.negated and rule.dir_only and not rule.basename
    assert (rule.source, rule.line, rule.pattern) == ("sub/.gitignore", 1, "!/build/")
    (rule,) = parse_rules(b"*.py\n", ".gitignore")
    assert rule.basename and not rule.dir_only and not rule.negated


def test_patterns_that_match_nothing_are_dropped() -> None:
    assert parse_rules(b"!\n/\n!/\n", ".gitignore") == []


# -- semantics --------------------------------------------------------------------------


def test_nested_files_deeper_wins(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".gitignore": "*.txt\n",
            "a.txt": "",
            "keep.txt": "",
            "sub": {".gitignore": "!keep.txt\n", "keep.txt": "", "other.txt": "", "x.py": ""},
        },
    )
    assert listed(session) == {".gitignore", "sub", "sub/.gitignore", "sub/keep.txt", "sub/x.py"}
    assert explain(session, "sub/keep.txt") == (False, "sub/.gitignore", 1, "!keep.txt")
    assert explain(session, "sub/other.txt") == (True, ".gitignore", 1, "*.txt")


def test_last_matching_line_of_a_file_wins(root: Path, session: Any) -> None:
    make_tree(root, {".gitignore": "a.txt\n!a.txt\n!b.txt\nb.txt\n", "a.txt": "", "b.txt": ""})
    assert listed(session) == {".gitignore", "a.txt"}
    assert explain(session, "a.txt") == (False, ".gitignore", 2, "!a.txt")
    assert explain(session, "b.txt") == (True, ".gitignore", 4, "b.txt")


def test_nothing_below_an_excluded_directory_is_re_included(root: Path, session: Any) -> None:
    make_tree(
        root,
        {".gitignore": "build/\n!build/keep.txt\n!keep.txt\n", "build": {"keep.txt": ""}},
    )
    assert listed(session) == {".gitignore"}
    assert explain(session, "build/keep.txt") == (True, ".gitignore", 1, "build/")


def test_contents_pattern_leaves_the_directory_so_a_negation_works(
    root: Path, session: Any
) -> None:
    make_tree(root, {".gitignore": "logs/**\n!logs/keep\n", "logs": {"keep": "", "drop": ""}})
    assert listed(session) == {".gitignore", "logs", "logs/keep"}


def test_directory_only_patterns_skip_files_and_symlinks(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".gitignore": "cache/\n",
            "cache": {"x": ""},
            "sub": {"cache": "a file named cache"},
            "real": {},
            "link": Link("real"),
        },
    )
    (root / ".gitignore").write_text("cache/\nlink/\n")
    assert listed(session) == {".gitignore", "sub", "sub/cache", "real", "link"}


def test_anchored_patterns(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".gitignore": "/top.txt\na/b\n",
            "top.txt": "",
            "a": {"b": "", "c": ""},
            "x": {"top.txt": "", "a": {"b": ""}},
            "d": {".gitignore": "sub/x\n", "sub": {"x": "", "y": ""}, "e": {"sub": {"x": ""}}},
        },
    )
    assert listed(session, "**/*") >= {"x/top.txt", "x/a/b", "a/c", "d/sub/y", "d/e/sub/x"}
    got = listed(session)
    assert "top.txt" not in got
    assert "a/b" not in got
    assert "d/sub/x" not in got


def test_double_star_forms(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".gitignore": "**/gen\na/**/z\nout/**\n",
            "gen": "",
            "p": {"q": {"gen": ""}},
            "a": {"z": "", "m": {"n": {"z": ""}}, "k": ""},
            "out": {"f": "", "d": {"g": ""}},
        },
    )
    assert listed(session) == {".gitignore", "p", "p/q", "a", "a/m", "a/m/n", "a/k", "out"}


def test_git_compares_bytes_so_question_mark_is_one_byte(root: Path, session: Any) -> None:
    make_tree(root, {".gitignore": "?.txt\n[é]x\n", "é.txt": "", "e.txt": "", "éx": ""})
    assert listed(session) == {".gitignore", "é.txt", "éx"}


def test_dot_git_is_always_excluded(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".git": {"HEAD": "ref", "info": {"exclude": ""}},
            "sub": {".git": "gitdir: elsewhere", "f": ""},
            ".gitignore": "!.git\n",
        },
    )
    assert listed(session) == {".gitignore", "sub", "sub/f"}
    assert explain(session, ".git/HEAD") == (True, BUILTIN, None, ".git")
    assert explain(session, "sub/.git") == (True, BUILTIN, None, ".git")


def test_info_exclude_is_honoured_below_every_gitignore(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".git": {"info": {"exclude": "# git's header\n*.tmp\nsecret\n"}},
            ".gitignore": "!keep.tmp\n",
            "a.tmp": "",
            "keep.tmp": "",
            "d": {"secret": ""},
        },
    )
    assert listed(session) == {".gitignore", "keep.tmp", "d"}
    assert explain(session, "a.tmp") == (True, ".git/info/exclude", 2, "*.tmp")
    assert explain(session, "keep.tmp") == (False, ".gitignore", 1, "!keep.tmp")


def test_state_directory_inside_the_root_is_excluded(root: Path) -> None:
    workspace = Workspace(root, root / ".editspec-state")
    session = workspace.session("s")
    (root / "f").write_text("x")
    session.write("g", "y")
    assert (root / ".editspec-state").is_dir()
    assert listed(session) == {"f", "g"}
    assert explain(session, ".editspec-state") == (True, BUILTIN, None, ".editspec-state")
    assert session.grep("x|y").files_searched == 2


def test_a_symlinked_gitignore_is_not_read(root: Path, session: Any) -> None:
    make_tree(root, {"rules": "*.log\n", ".gitignore": Link("rules"), "a.log": ""})
    assert "a.log" in listed(session)


def test_changes_to_an_ignore_file_take_effect(root: Path, session: Any) -> None:
    make_tree(root, {".gitignore": "*.log\n", "a.log": "", "b.txt": ""})
    assert listed(session) == {".gitignore", "b.txt"}
    (root / ".gitignore").write_text("*.txt\n")
    assert listed(session) == {".gitignore", "a.log"}


# Cases where pathspec's GitIgnoreSpec answers differently from git (see _ignore).


def test_a_negated_directory_pattern_does_not_re_include_its_files(
    root: Path, session: Any
) -> None:
    make_tree(
        root,
        {
            ".gitignore": "*.txt\n",
            "sub": {".gitignore": "!build/\n", "build": {"a.txt": "", "b.py": ""}},
        },
    )
    assert listed(session) == {".gitignore", "sub", "sub/.gitignore", "sub/build", "sub/build/b.py"}
    assert explain(session, "sub/build/a.txt") == (True, ".gitignore", 1, "*.txt")


def test_a_directory_pattern_with_inner_globstar_keeps_files(root: Path, session: Any) -> None:
    make_tree(root, {".gitignore": "foo/**/\n", "foo": {"x": "", "d": {"y": ""}}})
    assert listed(session) == {".gitignore", "foo", "foo/x"}


# -- why_ignored ------------------------------------------------------------------------


def test_why_ignored_for_paths_nobody_ignores(root: Path, session: Any) -> None:
    make_tree(root, {"a": {"b": ""}})
    assert explain(session, "a/b") == (False, None, None, None)
    assert explain(session, ".") == (False, None, None, None)
    assert explain(session, "missing/file") == (False, None, None, None)
    assert session.why_ignored("a/../a/b").path == "a/b"


def test_why_ignored_explains_a_symlink_as_itself(root: Path, session: Any) -> None:
    make_tree(root, {".gitignore": "ln\n", "ln": Link("/"), "loop": Link("loop")})
    assert explain(session, "ln") == (True, ".gitignore", 1, "ln")
    assert explain(session, "loop") == (False, None, None, None)


def test_why_ignored_confines_the_path(root: Path, session: Any) -> None:
    from editspec.reference import ToolError

    with pytest.raises(ToolError) as caught:
        session.why_ignored("../outside")
    assert caught.value.code == "OUTSIDE_WORKSPACE"
    with pytest.raises(ToolError) as caught:
        session.why_ignored("a\0b")
    assert caught.value.code == "INVALID_ARGUMENT"


def test_why_ignored_of_a_missing_directory_path_uses_the_trailing_slash(
    root: Path, session: Any
) -> None:
    make_tree(root, {".gitignore": "gone/\n"})
    assert explain(session, "gone/")[0] is True
    assert explain(session, "gone")[0] is False


def test_ignore_files_are_cached_by_content(root: Path) -> None:
    from editspec.reference.search import _ignore

    first = _ignore.ignore_file(b"*.a\n", ".gitignore", "")
    assert _ignore.ignore_file(b"*.a\n", ".gitignore", "") is first
    assert _ignore.ignore_file(b"*.b\n", ".gitignore", "") is not first
    assert os.fspath(root)  # the fixture is a real directory


def test_a_trailing_backslash_keeps_the_line_as_is() -> None:
    (rule,) = parse_rules(b"foo \\\n", ".gitignore")
    assert rule.pattern == "foo \\"


def test_a_later_name_rule_wins_over_an_earlier_path_rule(root: Path, session: Any) -> None:
    make_tree(root, {".gitignore": "a/b\n!b\n", "a": {"b": "", "c": ""}})
    assert explain(session, "a/b") == (False, ".gitignore", 2, "!b")
    assert "a/b" in listed(session)


def test_a_re_including_path_rule_after_an_excluding_name_rule(root: Path, session: Any) -> None:
    make_tree(
        root,
        {
            ".gitignore": "*.log\n!d/keep.log\n!é/keep.log\n",
            "d": {"keep.log": "", "drop.log": ""},
            "é": {"keep.log": "", "drop.log": ""},
        },
    )
    assert listed(session) == {".gitignore", "d", "d/keep.log", "é", "é/keep.log"}


def test_caches_stay_bounded(monkeypatch: pytest.MonkeyPatch, root: Path, session: Any) -> None:
    from editspec.reference.search import _ignore

    monkeypatch.setattr(_ignore, "_CACHE_LIMIT", 2)
    make_tree(root, {".gitignore": "x\n", "a": {".gitignore": "y\n"}, "b": {".gitignore": "z\n"}})
    for _ in range(2):
        assert listed(session) == {".gitignore", "a", "a/.gitignore", "b", "b/.gitignore"}
    assert len(_ignore._file_cache) <= 2
    assert len(_ignore._stack_cache) <= 2


@pytest.mark.parametrize(
    ("content", "portable"),
    [
        (b"", True),
        (b"# only a comment\n\n   \n", True),
        (b"*.log\n!keep.log\nbuild/\n/dist/\na/**/b\n**/x\ny/**\n**\n", True),
        (b"sp ace\ntrailing   \r\n\xc3\xa9*\n", True),
        (b"\xef\xbb\xbf*.log\n", True),
        (b"\xef\xbb\xbf\xef\xbb\xbf*.log\n", False),
        (b"*.py[cod]\n[Dd]ebug/\n[!a]?\n[^b-d]x\na?c\n", True),
        (b"[[:alpha:]]\n", False),
        (b"[x\n", False),
        (b"[z-a]\n", False),
        (b"[a-c-e]\n", False),
        (b"[/]\n", False),
        (b"x]\n", False),
        (b"{a,b}\n", False),
        (b"\\#x\n", False),
        (b"tab\t\n", False),
        (b"a***\n", False),
        (b"a**\n", False),
        (b"a//b\n", False),
        (b"!\n", False),
        (b"/\n", False),
        (b"a\rb\n", False),
        (b"nul\0\n", False),
        (b"\xff\n", False),
        (b"\xe2\x80\x83x\n", False),  # an em space
    ],
)
def test_the_portable_subset_is_what_ripgrep_reads_as_git_does(
    content: bytes, portable: bool
) -> None:
    # Trees with such files are searched by ripgrep's own walk (``_grep_rg``); the tests of
    # its fallbacks show how git and ripgrep differ outside the subset.
    assert portable_syntax(content) is portable
    assert ignore_file(content, ".gitignore", "").portable is portable
