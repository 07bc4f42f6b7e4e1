"""The wildmatch translation, checked on vectors from git's own wildmatch tests (t3070)."""

from __future__ import annotations

import re

import pytest

from editspec.reference.search import _wildmatch


def wildmatch(pattern: str, text: str, *, pathname: bool = True) -> bool:
    source = _wildmatch.translate(pattern, pathname=pathname)
    return re.fullmatch(source, text, re.DOTALL) is not None


# (expected with WM_PATHNAME, text, pattern), as in git's t/t3070-wildmatch.sh "glob" column.
VECTORS = [
    (True, "foo", "foo"),
    (False, "bar", "foo"),
    (True, "", ""),
    (True, "foo", "???"),
    (False, "foo", "??"),
    (True, "foo", "*"),
    (True, "foo", "f*"),
    (False, "foo", "*f"),
    (True, "foo", "*foo*"),
    (True, "foobar", "*ob*a*r*"),
    (True, "aaaaaaabababab", "*ab"),
    (True, "foo*", "foo\\*"),
    (False, "foobar", "foo\\*bar"),
    (True, "f\\oo", "f\\\\oo"),
    (True, "ball", "*[al]?"),
    (False, "ten", "[ten]"),
    (True, "ten", "**[!te]"),
    (False, "ten", "**[!ten]"),
    (True, "ten", "t[a-g]n"),
    (False, "ten", "t[!a-g]n"),
    (True, "ton", "t[!a-g]n"),
    (True, "ton", "t[^a-g]n"),
    (True, "a]b", "a[]]b"),
    (True, "a-b", "a[]-]b"),
    (True, "a]b", "a[]-]b"),
    (False, "aab", "a[]-]b"),
    (True, "aab", "a[]a-]b"),
    (True, "]", "]"),
    (False, "foo/baz/bar", "foo*bar"),
    (False, "foo/baz/bar", "foo**bar"),
    (True, "foobazbar", "foo**bar"),
    (True, "foo/baz/bar", "foo/**/bar"),
    (True, "foo/baz/bar", "foo/**/**/bar"),
    (True, "foo/b/a/z/bar", "foo/**/bar"),
    (True, "foo/b/a/z/bar", "foo/**/**/bar"),
    (True, "foo/bar", "foo/**/bar"),
    (True, "foo/bar", "foo/**/**/bar"),
    (False, "foo/bar", "foo?bar"),
    (False, "foo/bar", "foo[/]bar"),
    (False, "foo/bar", "foo[^a-z]bar"),
    (False, "foo/bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r"),
    (True, "foo-bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r"),
    (True, "foo", "**/foo"),
    (True, "XXX/foo", "**/foo"),
    (True, "bar/baz/foo", "**/foo"),
    (False, "bar/baz/foo", "*/foo"),
    (False, "foo/bar/baz", "**/bar*"),
    (True, "deep/foo/bar/baz", "**/bar/*"),
    (False, "deep/foo/bar/baz/", "**/bar/*"),
    (True, "deep/foo/bar/baz/", "**/bar/**"),
    (False, "deep/foo/bar", "**/bar/*"),
    (True, "deep/foo/bar/", "**/bar/**"),
    (False, "foo/bar/baz", "**/bar**"),
    (True, "foo/bar/baz/x", "*/bar/**"),
    (False, "deep/foo/bar/baz/x", "*/bar/**"),
    (True, "deep/foo/bar/baz/x", "**/bar/*/*"),
    (False, "acrt", "a[c-c]st"),
    (True, "acrt", "a[c-c]rt"),
    (False, "]", "[!]-]"),
    (True, "a", "[!]-]"),
    (False, "", "\\"),
    (False, "\\", "\\"),
    (False, "XXX/\\", "*/\\"),
    (True, "XXX/\\", "*/\\\\"),
    (True, "[ab]", "\\[ab]"),
    (True, "[ab]", "[[]ab]"),
    (True, "[ab]", "[[:]ab]"),
    (False, "[ab]", "[[::]ab]"),
    (True, "[ab]", "[[:digit]ab]"),
    (True, "[ab]", "[\\[:]ab]"),
    (True, "?a?b", "\\??\\?b"),
    (True, "abc", "\\a\\b\\c"),
    (False, "foo", ""),
    (True, "foo/bar/baz/to", "**/t[o]"),
    (True, "a1B", "[[:alpha:]][[:digit:]][[:upper:]]"),
    (False, "a", "[[:digit:][:upper:][:space:]]"),
    (True, "A", "[[:digit:][:upper:][:space:]]"),
    (True, "1", "[[:digit:][:upper:][:space:]]"),
    (False, "1", "[[:digit:][:upper:][:spaci:]]"),
    (True, " ", "[[:digit:][:upper:][:space:]]"),
    (False, ".", "[[:digit:][:upper:][:space:]]"),
    (True, ".", "[[:digit:][:punct:][:space:]]"),
    (True, "5", "[[:xdigit:]]"),
    (True, "f", "[[:xdigit:]]"),
    (True, "D", "[[:xdigit:]]"),
    (True, "5", "[a-c[:digit:]x-z]"),
    (True, "b", "[a-c[:digit:]x-z]"),
    (True, "y", "[a-c[:digit:]x-z]"),
    (False, "q", "[a-c[:digit:]x-z]"),
    (True, "]", "[\\\\-^]"),
    (False, "[", "[\\\\-^]"),
    (True, "-", "[\\-_]"),
    (True, "]", "[\\]]"),
    (False, "\\]", "[\\]]"),
    (False, "\\", "[\\]]"),
    (False, "ab", "a[]b"),
    (False, "a[]b", "a[]b"),
    (False, "ab[", "ab["),
    (False, "ab", "[!"),
    (False, "ab", "[-"),
    (True, "-", "[-]"),
    (False, "-", "[a-"),
    (False, "-", "[!a-"),
    (True, "-", "[--A]"),
    (True, "5", "[--A]"),
    (True, " ", "[ --]"),
    (True, "$", "[ --]"),
    (True, "-", "[ --]"),
    (False, "0", "[ --]"),
    (True, "-", "[---]"),
    (True, "-", "[------]"),
    (False, "j", "[a-e-n]"),
    (True, "-", "[a-e-n]"),
    (True, "a", "[!------]"),
    (False, "[", "[]-a]"),
    (True, "^", "[]-a]"),
    (False, "^", "[!]-a]"),
    (True, "[", "[!]-a]"),
    (True, "^", "[a^bc]"),
    (True, "-b]", "[a-]b]"),
    (False, "\\", "[\\]"),
    (True, "\\", "[\\\\]"),
    (False, "\\", "[!\\\\]"),
    (True, "G", "[A-\\\\]"),
    (False, "aaabbb", "b*a"),
    (False, "aabcaa", "*ba*"),
    (True, ",", "[,]"),
    (True, ",", "[\\\\,]"),
    (True, "\\", "[\\\\,]"),
    (True, "-", "[,-.]"),
    (False, "+", "[,-.]"),
    (False, "-.]", "[,-.]"),
    (True, "2", "[\\1-\\3]"),
    (True, "3", "[\\1-\\3]"),
    (False, "4", "[\\1-\\3]"),
    (True, "\\", "[[-\\]]"),
    (True, "[", "[[-\\]]"),
    (True, "]", "[[-\\]]"),
    (False, "-", "[[-\\]]"),
    (
        True,
        "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1",
        "-*-*-*-*-*-*-12-*-*-*-m-*-*-*",
    ),
    (
        False,
        "-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1",
        "-*-*-*-*-*-*-12-*-*-*-m-*-*-*",
    ),
    (
        False,
        "-adobe-courier-bold-o-normal--12-120-75-75-/-70-iso8859-1",
        "-*-*-*-*-*-*-12-*-*-*-m-*-*-*",
    ),
    (
        True,
        "XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1",
        "XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*",
    ),
    (True, "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", "**/*a*b*g*n*t"),
    (False, "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", "**/*a*b*g*n*t"),
    (False, "foo", "*/*/*"),
    (False, "foo/bar", "*/*/*"),
    (True, "foo/bba/arr", "*/*/*"),
    (False, "foo/bb/aa/rr", "*/*/*"),
    (True, "foo/bb/aa/rr", "**/**/**"),
    (True, "abcXdefXghi", "*X*i"),
    (False, "ab/cXd/efXg/hi", "*X*i"),
    (True, "ab/cXd/efXg/hi", "*/*X*/*/*i"),
    (True, "ab/cXd/efXg/hi", "**/*X*/**/*i"),
]


@pytest.mark.parametrize(("expected", "text", "pattern"), VECTORS)
def test_git_wildmatch_vectors(expected: bool, text: str, pattern: str) -> None:
    assert wildmatch(pattern, text) is expected


def test_without_pathname_stars_and_questions_cross_slashes() -> None:
    assert wildmatch("foo*bar", "foo/baz/bar", pathname=False)
    assert wildmatch("foo?bar", "foo/bar", pathname=False)
    assert wildmatch("*", "a/b", pathname=False)


def test_escaped_slash_after_globstar_needs_a_directory() -> None:
    # git tries "no directory" only before an unescaped "/" (wildmatch.c).
    assert not wildmatch("**\\/x", "x")
    assert wildmatch("**\\/x", "a/b/x")
    assert wildmatch("**/x", "x")


def test_byte_units_make_question_mark_one_byte() -> None:
    source = _wildmatch.translate(_wildmatch.to_units("?"), pathname=True)
    regex = _wildmatch.compile_units(source)
    assert regex.fullmatch("é".encode()) is None  # two bytes
    assert regex.fullmatch(b"e") is not None
    assert wildmatch("?", "é")  # one character


def test_brackets_with_non_ascii_members_and_ranges() -> None:
    assert wildmatch("[é]", "é")
    assert wildmatch("[à-ü]", "é")
    assert not wildmatch("[z-a]", "m")  # an empty range matches nothing
    assert wildmatch("[!é]", "e")


def test_literal_helpers() -> None:
    assert _wildmatch.simple_length("abc*d") == 3
    assert _wildmatch.simple_length("ab\\c") == 2
    assert _wildmatch.simple_length("abc") == 3
    assert _wildmatch.has_wildcard("a[b]")
    assert not _wildmatch.has_wildcard("a.b")


@pytest.mark.parametrize(
    ("pattern", "expanded"),
    [
        ("*.py", ["*.py"]),
        ("*.{ts,tsx}", ["*.ts", "*.tsx"]),
        ("{a,b}/{c,d}", ["a/c", "a/d", "b/c", "b/d"]),
        ("x{a,{b,c}}y", ["xay", "xby", "xcy"]),
        ("{a}", ["{a}"]),
        ("{a}{b,c}", ["{a}b", "{a}c"]),
        ("a{b", ["a{b"]),
        ("a\\{b,c}", ["a\\{b,c}"]),
        ("{a,a}", ["a"]),
        ("{,x}y", ["y", "xy"]),
        ("{a\\,b,c}", ["a\\,b", "c"]),
    ],
)
def test_brace_expansion(pattern: str, expanded: list[str]) -> None:
    assert _wildmatch.expand_braces(pattern) == expanded


@pytest.mark.parametrize("pattern", ["[\\", "[a-\\", "[[:alpha", "[a"])
def test_malformed_brackets_match_nothing(pattern: str) -> None:
    for text in ["a", "\\", "[", "z", "m", "[a"]:
        assert not wildmatch(pattern, text)


def test_a_reversed_range_keeps_its_first_member() -> None:
    # wildmatch takes "z" as a member before it sees "-a" (an empty range).
    assert wildmatch("[z-a]", "z")
    assert not wildmatch("[z-a]", "m")
    assert not wildmatch("[z-a]", "a")
