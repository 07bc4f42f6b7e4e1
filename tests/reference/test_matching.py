"""The Edit matching cascade on texts in memory (reference/_matching.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference._errors import ToolError
from editspec.reference._results import EditSpec, Replacement
from editspec.reference.matching._matching import STRATEGIES, apply_edits, locate


def edit(text: str, *specs: EditSpec) -> tuple[str, tuple[Replacement, ...]]:
    return apply_edits(text, specs)


def one(text: str, old: str, new: str, **hints: object) -> tuple[str, Replacement]:
    result, (replacement,) = edit(text, EditSpec(old, new, **hints))  # type: ignore[arg-type]
    return result, replacement


def error_of(text: str, *specs: EditSpec) -> ToolError:
    with pytest.raises(ToolError) as info:
        edit(text, *specs)
    return info.value


# -- each strategy, in cascade order ---------------------------------------------


def test_strategy_names_in_cascade_order() -> None:
    assert STRATEGIES == (
        "exact",
        "trailing_whitespace",
        "smart_quotes",
        "unescape",
        "whitespace_runs",
        "indentation",
        "block_anchors",
    )


def test_exact_replaces_the_substring_and_reports_its_line() -> None:
    text, replacement = one("a = 1\nb = 2\nc = 3\n", "b = 2", "b = 20")
    assert text == "a = 1\nb = 20\nc = 3\n"
    assert replacement == Replacement(count=1, matched_by="exact", line=2)


def test_exact_lf_needle_matches_crlf_text_and_new_text_gets_crlf() -> None:
    text, replacement = one("x\r\na\r\nb\r\nz\r\n", "a\nb\n", "A\nB\nC\n")
    assert text == "x\r\nA\r\nB\r\nC\r\nz\r\n"
    assert replacement.matched_by == "exact"
    assert replacement.line == 2


def test_exact_prefers_the_literal_match_over_newline_reading() -> None:
    # "a\nb" occurs once literally; read with CRLF as LF it would occur twice.
    text, replacement = one("a\r\nb|a\nb", "a\nb", "X")
    assert text == "a\r\nb|X"
    assert replacement.matched_by == "exact"


def test_trailing_whitespace_per_line() -> None:
    text, replacement = one(
        "def f():  \n    pass\t\nrest\n", "def f():\n    pass", "def g():\n    ..."
    )
    # The tab after "pass" was not part of the needle's last line: it stays.
    assert text == "def g():\n    ...\t\nrest\n"
    assert replacement.matched_by == "trailing_whitespace"


def test_trailing_whitespace_in_the_needle() -> None:
    text, replacement = one("alpha\nbeta\n", "alpha   \nbeta", "A\nB")
    assert text == "A\nB\n"
    assert replacement.matched_by == "trailing_whitespace"


def test_trailing_blanks_at_the_needle_end_demand_a_line_end() -> None:
    # "foo  " claims its line ends after foo: "foobar" is not a match, "foo" is.
    text, replacement = one("foobar\nfoo\n", "foo  ", "baz")
    assert text == "foobar\nbaz\n"
    assert replacement.matched_by == "trailing_whitespace"


def test_smart_quotes_match_and_new_text_keeps_curly_style() -> None:
    source = "print(\u201chello\u201d)\nit\u2019s\n"
    text, replacement = one(source, 'print("hello")', 'print("goodbye")')
    assert text == "print(\u201cgoodbye\u201d)\nit\u2019s\n"
    assert replacement.matched_by == "smart_quotes"
    text, _ = one(source, "it's", "it's 'here'")
    assert text == "print(\u201chello\u201d)\nit\u2019s \u2018here\u2019\n"


def test_smart_quotes_in_the_needle_keep_straight_file_style() -> None:
    text, replacement = one('say("hi")\n', "say(\u201chi\u201d)", "say(\u201cbye\u201d)")
    assert text == 'say("bye")\n'
    assert replacement.matched_by == "smart_quotes"


def test_unescape_reads_literal_escapes_in_old_and_new() -> None:
    text, replacement = one('x = "a"\ny = 2\n', 'x = \\"a\\"\\ny = 2', 'x = \\"b\\"\\ny = 3')
    assert text == 'x = "b"\ny = 3\n'
    assert replacement.matched_by == "unescape"


def test_unescape_keeps_a_real_escape_of_the_file() -> None:
    source = 'print("tab:\\t")\n'
    text, replacement = one(source, 'print(\\"tab:\\\\t\\")', 'print(\\"tab:\\\\t!\\")')
    assert text == 'print("tab:\\t!")\n'
    assert replacement.matched_by == "unescape"


def test_whitespace_runs_inside_lines() -> None:
    text, replacement = one("x  =\t1   # one\n", "x = 1 # one", "x = 2  # two")
    assert text == "x = 2  # two\n"
    assert replacement.matched_by == "whitespace_runs"


def test_whitespace_runs_keep_indentation_significant() -> None:
    # Indentation is not a "run": a different indent falls through to `indentation`.
    text, replacement = one("if a:\n  b = 1\n", "    b = 1", "    b = 2")
    assert replacement.matched_by == "indentation"
    assert text == "if a:\n  b = 2\n"
    err = error_of("if a:\n  b  =  1\n", EditSpec("    b = 1", "    b = 2"))
    assert err.code == "NO_MATCH"


def test_whitespace_runs_do_not_bridge_missing_spaces() -> None:
    assert error_of("f(a, b)\n", EditSpec("f(a,b)", "g()")).code == "NO_MATCH"


def test_indentation_offset_applies_to_new_text() -> None:
    source = "class A:\n    def f(self):\n        return 1\n"
    old = "def f(self):\n    return 1\n"
    new = "def f(self):\n    if x:\n        return 2\n    return 1\n"
    text, replacement = one(source, old, new)
    assert text == (
        "class A:\n    def f(self):\n        if x:\n            return 2\n        return 1\n"
    )
    assert replacement == Replacement(count=1, matched_by="indentation", line=2)


def test_indentation_needle_more_indented_than_file() -> None:
    source = "def f():\n    a = 1\n    if a:\n        b = 2\n"
    old = "        a = 1\n        if a:\n            b = 2"
    new = "        a = 1\n    b = 0\n        if a:\n            b = 3"
    text, replacement = one(source, old, new)
    assert replacement.matched_by == "indentation"
    # Offset -4: the line indented 4 (less than the base 8) loses what it can.
    assert text == "def f():\n    a = 1\nb = 0\n    if a:\n        b = 3\n"


def test_indentation_requires_the_same_relative_indentation() -> None:
    source = "def f():\n    a = 1\n        b = 2\n"
    err = error_of(source, EditSpec("a = 1\nb = 2", "x"))
    assert err.code == "NO_MATCH"


def test_block_anchors_replace_a_block_whose_middle_differs() -> None:
    source = (
        "def area(r):\n"
        "    pi = 3.14159\n"
        "    result = pi * r * r\n"
        "    return result\n"
        "\n"
        "print(area(2))\n"
    )
    old = "def area(r):\n    pi = 3.14\n    result = pi * r ** 2\n    return result\n"
    new = "def area(r):\n    return math.pi * r * r\n"
    text, replacement = one(source, old, new)
    assert text == "def area(r):\n    return math.pi * r * r\n\nprint(area(2))\n"
    assert replacement == Replacement(count=1, matched_by="block_anchors", line=1)


def test_block_anchors_reindent_by_the_first_line() -> None:
    source = "class K:\n    def m(self):\n        x = compute(1)\n        return x\n"
    old = "def m(self):\n    x = compute(2)\n    return x"
    new = "def m(self):\n    return compute(2)"
    text, replacement = one(source, old, new)
    assert replacement.matched_by == "block_anchors"
    assert text == "class K:\n    def m(self):\n        return compute(2)\n"


def test_block_anchors_refuse_a_dissimilar_middle() -> None:
    source = "def f():\n    completely = different()\n    and_more = stuff(here)\n    return x\n"
    old = "def f():\n    a\n    b\n    return x\n"
    err = error_of(source, EditSpec(old, "def f():\n    return 0\n"))
    assert err.code == "NO_MATCH"


def test_block_anchors_refuse_anchors_without_words() -> None:
    source = "{\n    alpha(1);\n    beta(2);\n}\n"
    err = error_of(source, EditSpec("{\n    alpha(1);\n    beta(3);\n}", "{}"))
    assert err.code == "NO_MATCH"


def test_block_anchors_need_three_lines() -> None:
    source = "start()\nend()\n"
    assert error_of(source, EditSpec("start()\nend(1)", "x")).code == "NO_MATCH"


def test_block_anchors_refuse_a_block_of_a_different_length() -> None:
    source = "begin()\n    one()\n    two()\n    three()\n    four()\nfinish()\n"
    err = error_of(source, EditSpec("begin()\n    one()\nfinish()", "x"))
    assert err.code == "NO_MATCH"


def test_earlier_strategy_wins_even_if_a_later_one_is_ambiguous() -> None:
    # Exact finds one; trailing_whitespace would find two.
    source = "a\nb\na \nb\n"
    text, replacement = one(source, "a\nb", "c")
    assert replacement.matched_by == "exact"
    assert text == "c\na \nb\n"


def test_a_strategy_with_matches_does_not_fall_through() -> None:
    # Two trailing-whitespace matches are AMBIGUOUS: no later strategy is consulted.
    source = "x \ny\nx\t\ny\n"
    err = error_of(source, EditSpec("x\ny", "z"))
    assert err.code == "AMBIGUOUS"
    assert err.details["matched_by"] == "trailing_whitespace"


# -- several matches ---------------------------------------------------------------


def test_ambiguous_lists_lines() -> None:
    err = error_of("x = 1\ny\nx = 1\n", EditSpec("x = 1", "x = 2"))
    assert err.code == "AMBIGUOUS"
    assert err.details["lines"] == [1, 3]
    assert "replace_all" in err.message


def test_overlapping_occurrences_are_ambiguous() -> None:
    assert error_of("aaa", EditSpec("aa", "b")).code == "AMBIGUOUS"


def test_replace_all_counts_and_reports_first_line() -> None:
    text, replacement = one("k\nv = 1\nv = 1\nv = 1\n", "v = 1", "v = 2", replace_all=True)
    assert text == "k\nv = 2\nv = 2\nv = 2\n"
    assert replacement == Replacement(count=3, matched_by="exact", line=2)


def test_replace_all_takes_non_overlapping_matches_left_to_right() -> None:
    text, replacement = one("aaaaa", "aa", "b", replace_all=True)
    assert text == "bba"
    assert replacement.count == 2


def test_replace_all_in_a_fallback_strategy() -> None:
    text, replacement = one("x  =  1\ny\nx = 1\n", "x =  1", "x = 2", replace_all=True)
    assert text == "x = 2\ny\nx = 2\n"
    assert replacement == Replacement(count=2, matched_by="whitespace_runs", line=1)


def test_line_hint_chooses_among_matches() -> None:
    source = "v = 1\nw\nv = 1\nw\nv = 1\n"
    text, replacement = one(source, "v = 1", "v = 9", line=3)
    assert text == "v = 1\nw\nv = 9\nw\nv = 1\n"
    assert replacement.line == 3


def test_line_hint_inside_a_multiline_match() -> None:
    source = "a\nb\nc\na\nb\nc\n"
    text, _ = one(source, "a\nb\nc", "X", line=5)
    assert text == "a\nb\nc\nX\n"


def test_line_hint_that_fits_no_match_is_ambiguous() -> None:
    err = error_of("v\nv\n", EditSpec("v", "w", line=7))
    assert err.code == "AMBIGUOUS"


def test_hints_do_not_make_a_non_matching_edit_match() -> None:
    source = "alpha\nbeta\n"
    err = error_of(source, EditSpec("gamma", "x", line=1, before="alpha", after="beta"))
    assert err.code == "NO_MATCH"


def test_hints_are_ignored_when_there_is_one_match() -> None:
    text, _ = one("alpha\nbeta\n", "beta", "BETA", line=1)
    assert text == "alpha\nBETA\n"


def test_before_hint_takes_the_first_match_after_it() -> None:
    source = "def a():\n    return 0\ndef b():\n    return 0\ndef c():\n    return 0\n"
    text, replacement = one(source, "return 0", "return 1", before="def b():")
    assert text == "def a():\n    return 0\ndef b():\n    return 1\ndef c():\n    return 0\n"
    assert replacement.line == 4


def test_after_hint_takes_the_last_match_before_it() -> None:
    source = "x = 0\nx = 0\nmarker\nx = 0\n"
    text, _ = one(source, "x = 0", "x = 1", after="marker")
    assert text == "x = 0\nx = 1\nmarker\nx = 0\n"


def test_before_and_after_together() -> None:
    source = "s\nS\nt\nS\nu\nS\nt\n"
    # before="t" allows the matches on lines 4 and 6... no: the first after each "t";
    # after="u" allows the last match before "u". Both: line 4.
    text, replacement = one(source, "S", "Z", before="t", after="u")
    assert replacement.line == 4
    assert text == "s\nS\nt\nZ\nu\nS\nt\n"


def test_hint_matching_several_stays_ambiguous() -> None:
    source = "h\nv\nv\n"
    err = error_of(source, EditSpec("v", "w", after="zzz"))
    assert err.code == "AMBIGUOUS"


# -- argument errors and NO_CHANGE ---------------------------------------------------


def test_identical_strings_are_no_change() -> None:
    assert error_of("abc", EditSpec("b", "b")).code == "NO_CHANGE"


def test_identical_strings_are_no_change_even_without_a_match() -> None:
    assert error_of("abc", EditSpec("zzz", "zzz")).code == "NO_CHANGE"


def test_empty_old_string_on_text_is_invalid() -> None:
    assert error_of("abc", EditSpec("", "x")).code == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    "spec",
    [
        EditSpec("a", "b", line=0),
        EditSpec("a", "b", line=True),  # type: ignore[arg-type]
        EditSpec("a", "b", before=""),
        EditSpec("a", "b", replace_all=True, line=1),
        EditSpec("a", "b", replace_all=True, after="x"),
        EditSpec("a", 3),  # type: ignore[arg-type]
    ],
)
def test_unusable_fields_are_invalid(spec: EditSpec) -> None:
    assert error_of("a a", spec).code == "INVALID_ARGUMENT"


# -- NO_MATCH messages -----------------------------------------------------------------


def test_no_match_says_whitespace_differs_and_where() -> None:
    err = error_of("one\ntwo\nf(a, b)\n", EditSpec("f(a,b)", "g"))
    assert err.code == "NO_MATCH"
    assert err.details["whitespace_differs_at_line"] == 3
    assert "whitespace" in err.message


def test_no_match_names_the_closest_lines() -> None:
    source = "def compute_total(items):\n    return sum(items)\n"
    err = error_of(source, EditSpec("def compute_totals(items):\n    return 0", "x"))
    assert err.code == "NO_MATCH"
    assert err.details["closest_lines"] == [1]
    assert "1" in err.message


# -- several edits -------------------------------------------------------------------


def test_edits_apply_in_order_on_the_result_of_the_previous() -> None:
    text, replacements = edit(
        "a b c\n", EditSpec("a", "x"), EditSpec("x b", "y"), EditSpec("c", "z")
    )
    assert text == "y z\n"
    assert [r.matched_by for r in replacements] == ["exact", "exact", "exact"]


def test_failing_edit_names_its_index() -> None:
    err = error_of("a b c\n", EditSpec("a", "x"), EditSpec("nope", "y"))
    assert err.code == "NO_MATCH"
    assert err.details["edit_index"] == 1
    assert err.message.startswith("edit 2 of 2")


# -- newlines ------------------------------------------------------------------------


def test_mixed_endings_keep_every_untouched_break() -> None:
    source = "one\r\ntwo\nthree\r\nfour\n"
    text, _ = one(source, "two\nthree\n", "2\n3\n")
    assert text == "one\r\n2\n3\r\nfour\n"


def test_mixed_new_text_takes_the_style_of_its_span() -> None:
    source = "a\nb\r\nc\r\nd\n"
    text, _ = one(source, "b\nc", "B1\nB2\nC")
    assert text == "a\nB1\r\nB2\r\nC\r\nd\n"


def test_lone_cr_is_text() -> None:
    text, _ = one("a\rb\r\nc\r\n", "b\nc", "B\nC")
    assert text == "a\rB\r\nC\r\n"


def test_fallback_on_crlf_text_maps_back_exactly() -> None:
    source = "keep  \r\nfoo  \r\nbar\t\r\ntail\r\n"
    text, replacement = one(source, "foo\nbar", "FOO\nBAR")
    assert replacement.matched_by == "trailing_whitespace"
    assert text == "keep  \r\nFOO\r\nBAR\t\r\ntail\r\n"


def test_indentation_on_crlf_text() -> None:
    source = "if x:\r\n    a()\r\n    b()\r\nend\r\n"
    text, replacement = one(source, "a()\nb()\n", "a()\nc()\n")
    assert replacement.matched_by == "indentation"
    assert text == "if x:\r\n    a()\r\n    c()\r\nend\r\n"


def _occurrences(text: str, needle: str) -> int:
    return sum(text.startswith(needle, index) for index in range(len(text)))


# -- properties -----------------------------------------------------------------------

_piece = st.sampled_from(["a", "b", " ", "\t", "x1", "\n", "\r\n", "é", "“", "'", "\\"])
_text = st.lists(_piece, max_size=40).map("".join)


@given(prefix=_text, suffix=_text, new=_text, data=st.data())
def test_unique_exact_match_is_one_replacement(
    prefix: str, suffix: str, new: str, data: st.DataObject
) -> None:
    marker = "\u2603" + data.draw(_text) + "\u2604"
    text = prefix + marker + suffix
    result, replacement = one(text, marker, new)
    assert replacement.matched_by == "exact"
    assert replacement.line == prefix.count("\n") + 1
    assert result.startswith(prefix) and result.endswith(suffix)
    middle = result[len(prefix) : len(result) - len(suffix)]
    assert middle.replace("\r\n", "\n") == new.replace("\r\n", "\n")


@given(
    lines=st.lists(
        st.text(st.characters(blacklist_characters="\r\n"), max_size=8), min_size=1, max_size=12
    ),
    data=st.data(),
)
def test_any_line_window_is_found_in_crlf_text_with_lf_needle(
    lines: list[str], data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(lines) - 1))
    stop = data.draw(st.integers(start + 1, len(lines)))
    text = "".join(line + "\r\n" for line in lines)
    needle = "".join(line + "\n" for line in lines[start:stop])
    try:
        located = locate(text, EditSpec(needle, "NEW\n"))
    except ToolError as error:
        # Only a repeated window may be refused, and only as AMBIGUOUS.
        assert error.code == "AMBIGUOUS"
        assert _occurrences(text.replace("\r\n", "\n"), needle) > 1
        return
    (span,) = located.spans
    assert text[span.start : span.end].replace("\r\n", "\n") == needle
    assert span.replacement == "NEW\r\n"


def test_replace_all_in_a_mixed_file_keeps_each_places_line_breaks() -> None:
    text, replacement = one("a\r\nX\r\nb\nX\nc", "X", "Y\nZ", replace_all=True)
    assert text == "a\r\nY\r\nZ\r\nb\nY\nZ\nc"
    assert replacement.count == 2


# -- corners of the strategies ---------------------------------------------------------


def test_whitespace_runs_match_starting_on_a_collapsed_run() -> None:
    text, replacement = one("a   b  c\n", " b c", " B C")
    assert replacement.matched_by == "whitespace_runs"
    assert text == "a B C\n"


def test_blank_needles_find_nothing_beyond_exact() -> None:
    for needle in ("  \t", "\n\n", " \n \n"):
        err = error_of("alpha\nbeta\n", EditSpec(needle, "x"))
        assert err.code == "NO_MATCH"
        assert "closest_lines" not in err.details


def test_indentation_window_must_fit_in_the_file() -> None:
    # The needle's first line is the file's last: its second line has nowhere to go.
    err = error_of("start\n  tail\n", EditSpec("tail\nmore", "x"))
    assert err.code == "NO_MATCH"
    err = error_of("start\n  tail", EditSpec("tail\nmore", "x"))
    assert err.code == "NO_MATCH"
    # A needle that ends in a line break does not match a last line without one.
    err = error_of("start\n  tail", EditSpec("tail\n", "x"))
    assert err.code == "NO_MATCH"
    # Nor the empty "line" after a final newline.
    err = error_of("start\n  tail\n", EditSpec("tail\n\n", "x"))
    assert err.code == "NO_MATCH"


def test_indentation_replace_all_takes_non_overlapping_windows() -> None:
    source = "    x\n    x\n    x\n"
    text, replacement = one(source, "x\nx\n", "y\n", replace_all=True)
    assert replacement == Replacement(count=1, matched_by="indentation", line=1)
    assert text == "    y\n    x\n"


def test_reindent_shifts_lines_less_indented_than_the_needle() -> None:
    # File base 8, needle base 4: +4 for every line, also one indented only 2.
    source = "class A:\n    def f():\n        a()\n        b()\n"
    text, replacement = one(source, "    a()\n    b()\n", "    a()\n  c()\n    b()\n")
    assert replacement.matched_by == "indentation"
    assert text == "class A:\n    def f():\n        a()\n      c()\n        b()\n"


def test_reindent_leaves_lines_of_another_indent_character() -> None:
    # The file indents with a tab, the needle with two spaces: a line of the new text
    # indented with one space has no defined place and stays as written.
    source = "f:\n\tone()\n\ttwo()\n"
    text, replacement = one(source, "  one()\n  two()\n", "  one()\n zero()\n  two()\n")
    assert replacement.matched_by == "indentation"
    assert text == "f:\n\tone()\n zero()\n\ttwo()\n"


def test_block_anchors_with_an_identical_middle_and_other_relative_indent() -> None:
    source = "def f():\n    x = 1\n      y = 2\n    return x\n"
    old = "def f():\n    x = 1\n    y = 2\n    return x"
    text, replacement = one(source, old, "def f():\n    return 0")
    assert replacement.matched_by == "block_anchors"
    assert text == "def f():\n    return 0\n"


def test_block_anchors_refuse_a_middle_of_equal_length_but_other_text() -> None:
    source = "def f():\n    aaaaaaaa\n    return x\n"
    err = error_of(source, EditSpec("def f():\n    bbbbbbbb\n    return x", "x"))
    assert err.code == "NO_MATCH"


def test_smart_quotes_needle_curly_file_straight_single() -> None:
    text, replacement = one("it's here\n", "it\u2019s here", "it\u2019s \u2018there\u2019")
    assert replacement.matched_by == "smart_quotes"
    assert text == "it's 'there'\n"


def test_after_hint_before_every_match_singles_out_none() -> None:
    err = error_of("marker\nv\nv\n", EditSpec("v", "w", after="marker"))
    assert err.code == "AMBIGUOUS"
    assert "none of them" in err.message


def test_replace_all_must_be_a_boolean() -> None:
    spec = EditSpec("a", "b", replace_all="yes")  # type: ignore[arg-type]
    assert error_of("a", spec).code == "INVALID_ARGUMENT"


def test_no_match_in_a_large_text_skips_the_costly_hints() -> None:
    source = "value = 1\n" * 300_000
    err = error_of(source, EditSpec("value = 2\n", "x"))
    assert err.code == "NO_MATCH"
    assert "whitespace_differs_at_line" not in err.details
    assert "closest_lines" not in err.details


def test_mixed_file_last_line_takes_the_break_before_it() -> None:
    text, _ = one("a\nb\r\nX", "X", "Y\nZ")
    assert text == "a\nb\r\nY\r\nZ"
    text, _ = one("a\r\nb\nX", "X", "Y\nZ")
    assert text == "a\r\nb\nY\nZ"
