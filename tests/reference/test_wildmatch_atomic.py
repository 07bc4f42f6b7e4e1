"""Glob's atomic translation of ``*``: the same matches as the plain one, in linear time."""

from __future__ import annotations

import re
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from editspec.reference import Workspace
from editspec.reference.search import _wildmatch

PATTERNS = st.text(alphabet="ab*?/[]!\\-", max_size=12)
PATHS = st.text(alphabet="ab/-*", max_size=14)


def _matches(pattern: str, path: str, *, atomic: bool, pathname: bool = True) -> bool:
    source = _wildmatch.translate(pattern, pathname=pathname, atomic=atomic)
    return re.fullmatch(source, path, re.DOTALL) is not None


@given(pattern=PATTERNS, paths=st.lists(PATHS, max_size=8), pathname=st.booleans())
def test_atomic_translation_matches_exactly_what_the_plain_one_does(
    pattern: str, paths: list[str], pathname: bool
) -> None:
    for path in paths:
        atomic = _matches(pattern, path, atomic=True, pathname=pathname)
        assert atomic == _matches(pattern, path, atomic=False, pathname=pathname), (
            pattern,
            path,
        )


def test_a_hostile_ignore_line_does_not_backtrack(tmp_path: Path) -> None:
    if _wildmatch.ATOMIC_ADDS_GROUPS:
        return  # before 3.11 the ignore rules keep the plain translation (numbered groups)
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".gitignore").write_text("*a*a*a*a*a*a*a*a*b\nsub/*a*a*a*a*a*a*a*a*b\n")
    (root / ("a" * 250)).write_text("x")
    (root / ("a" * 20 + "b")).write_text("x")
    session = Workspace(root, tmp_path / "state").session("s")
    started = time.monotonic()
    assert sorted(session.glob("*").paths) == [".gitignore", "a" * 250]
    assert time.monotonic() - started < 10


def test_known_cases_agree() -> None:
    cases = [
        ("*a*b", "xaxb", True),
        ("*a*b", "ab", True),
        ("*a*b", "ba", False),
        ("*ab*ab*", "abab", True),
        ("*ab*ab*", "aab", False),
        ("*a?*b", "aaab", True),
        ("*[ab]*c", "xbc", True),
        ("*a*/b*c", "xa/bxc", True),
        ("*a*/b*c", "x/a/bc", False),
        ("**/*a*b", "d/e/xab", True),
        ("*\\**b", "x*yb", True),
    ]
    for pattern, path, expected in cases:
        assert _matches(pattern, path, atomic=True) is expected, (pattern, path)
        assert _matches(pattern, path, atomic=False) is expected, (pattern, path)


def test_a_glob_with_many_stars_ends_at_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / ("a" * 250)).write_text("x")
    (root / "sub" / ("a" * 200 + "b")).write_text("x")
    session = Workspace(root, tmp_path / "state").session("s")
    started = time.monotonic()
    assert session.glob("*a*a*a*a*a*a*a*a*b").paths == ()  # positive control below
    assert session.glob("**/*a*a*a*a*a*a*a*a*a*a*a*b").paths == ("sub/" + "a" * 200 + "b",)
    assert session.glob("*a" * 100 + "b").paths == ()
    # The plain translation backtracks for minutes on the 250 a's; this takes milliseconds.
    assert time.monotonic() - started < 10
