"""GREP: searching file contents with Python regular expressions (DESIGN §4 "Grep").

Cancellation is not in the driver Protocol of DESIGN §2; a driver whose ``Session.grep``
also takes ``deadline=`` (a ``time.monotonic()`` value) and ``cancel=`` (a
``threading.Event``) declares the ``grep_cancel`` capability.
"""

from __future__ import annotations

import threading
import time

from editspec.spec import MUST, SHOULD, assert_fields, clause, raises_code, within
from editspec.spec._search_kit import escaping_paths, plant_symlink_loops

MARKER = "zebra_marker_7f3a"


def _where(result):
    """(path, line, column) of every match, in the order returned."""
    return [(m.path, m.line, m.column) for m in result.matches]


def _matched_paths(result):
    return sorted({m.path for m in result.matches})


def _line_of(disk, path, number):
    return disk.read(path).decode("utf-8").split("\n")[number - 1].rstrip("\r")


@clause(
    "GREP-001",
    MUST,
    requires={"grep"},
    text="The pattern is a Python regular expression: lookbehind, backreferences, named groups "
    "and scoped inline flags work, and each match reports path, line, column and text.",
    rationale="Agents write Python-flavoured regexes; a tool on another dialect silently "
    "finds nothing for constructs that dialect lacks, and the agent believes the code absent.",
)
def test_python_regular_expressions(session, disk):
    disk.write(
        "code.py",
        "def handler(event):\n    return the the value\nclass Handler:\nprice = 42\n",
    )
    before = disk.snapshot()
    cases = {
        r"(?<=def )\w+": (1, 5),
        r"\b(\w+) \1\b": (2, 12),
        r"(?P<name>[A-Z]\w+):$": (3, 7),
        r"\d{2}(?!\d)": (4, 9),
        r"(?i:HANDLER)\(": (1, 5),
    }
    for pattern, (line, column) in cases.items():
        result = session.grep(pattern)
        assert_fields(result, "GrepResult")
        assert len(result.matches) == 1, (pattern, _where(result))
        match = result.matches[0]
        assert_fields(match, "GrepMatch")
        assert (match.path, match.line, match.column) == ("code.py", line, column), pattern
        assert match.text.rstrip("\r\n") == _line_of(disk, "code.py", line), pattern
        assert result.files_searched >= 1
    disk.assert_unchanged(before)


@clause(
    "GREP-002",
    MUST,
    requires={"grep"},
    text="Line and column are 1-based: the first line is 1, and the column is that of the "
    "leftmost match in the line, 1 for a match at its first character; text is the line.",
    rationale="Off-by-one positions send the agent's next edit to the wrong line; 1-based is "
    "what editors, compilers and ripgrep report.",
)
def test_line_and_column_are_one_based(session, disk):
    disk.write("notes.txt", "first needle\n\n    needle here\nneedle\nnothing\n")
    result = session.grep("needle")
    assert _where(result) == [("notes.txt", 1, 7), ("notes.txt", 3, 5), ("notes.txt", 4, 1)]
    assert [m.text.rstrip("\r\n") for m in result.matches] == [
        "first needle",
        "    needle here",
        "needle",
    ]


@clause(
    "GREP-003",
    MUST,
    requires={"grep"},
    text="Binary files (a NUL byte among their first bytes) are skipped: a pattern found in "
    "their bytes yields no match from them.",
    rationale="Matches in binaries are noise the agent cannot read or edit, and printing their "
    "'lines' can dump megabytes of garbage into its context.",
)
def test_binary_files_are_skipped(session, disk):
    disk.write("text.txt", f"a {MARKER} here\n")
    disk.write("blob.bin", b"\x00\x01\x02" + MARKER.encode() + b"\n")
    disk.write("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + MARKER.encode() + b"\n")
    disk.write("late.dat", MARKER.encode() + b"\x00\x00\x00\n" + b"more text\n")
    before = disk.snapshot()
    result = session.grep(MARKER)
    assert _matched_paths(result) == ["text.txt"]
    disk.assert_unchanged(before)


@clause(
    "GREP-004",
    MUST,
    requires={"grep"},
    text="Paths excluded by the ignore rules are not searched: root and nested .gitignore "
    "files (with their negations) apply as for Glob, and .git is never searched.",
    rationale="Matches in build output, dependencies and git objects bury the real hits and "
    "invite edits to generated files.",
)
def test_ignored_paths_are_skipped(session, disk):
    disk.write(".gitignore", "*.log\nbuild/\n")
    disk.write("pkg/.gitignore", "!keep.log\n")
    disk.write("a/b/c/.gitignore", "secret.txt\n")
    for rel in (
        "app.py",
        "debug.log",
        "pkg/keep.log",
        "pkg/drop.log",
        "build/out.js",
        "pkg/build/gen.py",
        "a/b/c/secret.txt",
        "a/b/c/public.txt",
        "a/secret.txt",
        ".git/config",
        ".git/logs/HEAD",
        "vendor/lib/.git/packed-refs",
    ):
        disk.write(rel, f"line with {MARKER}\n")
    result = session.grep(MARKER)
    assert _matched_paths(result) == [
        "a/b/c/public.txt",
        "a/secret.txt",
        "app.py",
        "pkg/keep.log",
    ]


@clause(
    "GREP-005",
    MUST,
    requires={"grep"},
    text="A search that finds nothing succeeds with no matches and truncated=False.",
    rationale="'Not found' is the answer the agent asked for; an error reads as a broken "
    "tool and makes it retry or give up.",
)
def test_zero_matches_is_success(session, disk):
    disk.write("a.py", "print('hello')\n")
    disk.write("b.txt", "nothing here\n")
    before = disk.snapshot()
    result = session.grep("no_such_identifier_[0-9]+")
    assert list(result.matches) == []
    assert result.truncated is False
    disk.assert_unchanged(before)


def _twelve_matches(disk):
    for name in ("a.txt", "b.txt", "c.txt"):
        disk.write(name, "".join(f"{i} needle\nfiller\n" for i in range(4)))


@clause(
    "GREP-006",
    MUST,
    requires={"grep"},
    text="With more matches than max_results, exactly max_results real matches are returned "
    "with truncated=True.",
    rationale="An unbounded result overflows the agent's context; a cut list that does not "
    "say so reads as the complete answer.",
)
def test_max_results_truncates(session, disk):
    _twelve_matches(disk)
    result = session.grep("needle", max_results=5)
    assert result.truncated is True
    assert len(result.matches) == 5
    assert len(set(_where(result))) == 5
    for match in result.matches:
        assert match.text.rstrip("\r\n") == _line_of(disk, match.path, match.line)
        assert "needle" in match.text


@clause(
    "GREP-007",
    MUST,
    requires={"grep"},
    text="With no more matches than max_results (fewer, or exactly max_results), every match "
    "is returned with truncated=False.",
    rationale="A false truncation flag makes the agent narrow a search that was already complete.",
)
def test_under_max_results_is_complete(session, disk):
    _twelve_matches(disk)
    every = sorted((name, 2 * i + 1) for name in ("a.txt", "b.txt", "c.txt") for i in range(4))
    for limit in (50, 12):
        result = session.grep("needle", max_results=limit)
        assert result.truncated is False, limit
        assert sorted((m.path, m.line) for m in result.matches) == every, limit


@clause(
    "GREP-008",
    MUST,
    requires={"grep"},
    text="A pattern that is not a valid Python regular expression fails with INVALID_ARGUMENT "
    "and changes nothing.",
    rationale="Treating a broken regex as a literal, or as 'no matches', tells the agent the "
    "text is absent when its query was wrong.",
)
def test_invalid_regex_is_invalid_argument(session, disk):
    disk.write("a.py", "x = (1)\n")
    before = disk.snapshot()
    # Positive control: a valid regex of the same kind finds the line.
    assert _where(session.grep(r"x = \(1\)")) == [("a.py", 1, 1)]
    for pattern in ("(unclosed", "[a-", "*start", "a{3,1}", "(?P<x>a)(?P<x>b)", r"(?<=a+)b"):
        with raises_code("INVALID_ARGUMENT"):
            session.grep(pattern)
    disk.assert_unchanged(before)


@clause(
    "GREP-009",
    MUST,
    requires={"grep"},
    text="include restricts the search to files whose names match the glob: '*.py' searches "
    "the .py files and no others.",
    rationale="Agents narrow searches by file type; a filter that is ignored returns matches "
    "from files the agent excluded on purpose.",
)
def test_include_filter(session, disk):
    for name in ("a.py", "b.txt", "c.md", "d.pyc", "e.py.bak"):
        disk.write(name, f"{MARKER}\n")
    result = session.grep(MARKER, include="*.py")
    assert _matched_paths(result) == ["a.py"]


@clause(
    "GREP-010",
    SHOULD,
    requires={"grep"},
    text="An include pattern without a '/' matches file names at any depth ('*.py' also "
    "selects src/deep/x.py), as ripgrep's --glob does.",
    rationale="Agents write '*.py' meaning every Python file; matching only at the search root "
    "silently drops most of the tree.",
)
def test_include_matches_at_any_depth(session, disk):
    for rel in ("a.py", "src/b.py", "src/deep/c.py", "src/deep/d.txt"):
        disk.write(rel, f"{MARKER}\n")
    result = session.grep(MARKER, include="*.py")
    assert _matched_paths(result) == ["a.py", "src/b.py", "src/deep/c.py"]


@clause(
    "GREP-011",
    MUST,
    requires={"grep"},
    text="ignore_case=True matches regardless of letter case; the default is case-sensitive.",
    rationale="'TODO' and 'todo' are the same note to an agent asked to find it; and a search "
    "for a constant must not match a variable that differs only in case.",
)
def test_ignore_case(session, disk):
    disk.write("a.txt", "Needle\nNEEDLE\nneedle\nnothing\n")
    assert [m.line for m in session.grep("needle").matches] == [3]
    assert [m.line for m in session.grep("needle", ignore_case=True).matches] == [1, 2, 3]
    assert [m.line for m in session.grep("NeEdLe", ignore_case=True).matches] == [1, 2, 3]
    assert [m.line for m in session.grep("NeEdLe").matches] == []


@clause(
    "GREP-012",
    MUST,
    requires={"grep"},
    text="A path argument limits the search to that directory, and matches are still named "
    "relative to the workspace root, '/'-separated.",
    rationale="A path relative to the search directory names a different file when the agent "
    "passes it to Edit.",
)
def test_path_argument_scopes_the_search(session, disk):
    for rel in ("top.py", "src/a.py", "src/pkg/b.py", "tests/t.py"):
        disk.write(rel, f"{MARKER}\n")
    assert _matched_paths(session.grep(MARKER, path="src")) == ["src/a.py", "src/pkg/b.py"]
    absolute = str(disk.root / "src")
    assert _matched_paths(session.grep(MARKER, path=absolute)) == ["src/a.py", "src/pkg/b.py"]


@clause(
    "GREP-013",
    SHOULD,
    requires={"grep"},
    text="A path argument that names a file searches that file alone.",
    rationale="Agents grep one file to find a line before editing it; refusing a file path "
    "makes them read the whole file instead.",
)
def test_path_argument_may_name_a_file(session, disk):
    disk.write("src/a.py", f"x\n{MARKER}\n")
    disk.write("src/b.py", f"{MARKER}\n")
    assert _where(session.grep(MARKER, path="src/a.py")) == [("src/a.py", 2, 1)]


@clause(
    "GREP-014",
    MUST,
    requires={"grep", "confinement"},
    text="A path argument outside the root ('..', an absolute path outside, a symlink to an "
    "outside directory or file) fails with OUTSIDE_WORKSPACE and changes nothing.",
    rationale="Grep reads contents: an unconfined path argument is a read of any file on the "
    "disk, one line at a time.",
)
def test_path_argument_is_confined(session, disk, alias):
    secret = alias.outside / "secret.txt"
    secret.write_text(f"{MARKER}\n")
    disk.write("inside.txt", f"{MARKER}\n")
    disk.write("sub/other.txt", "x\n")
    # Positive control: the same search, through a relative path that climbs and an absolute
    # path, both inside, finds the inside file (and nothing outside).
    assert _where(session.grep(MARKER, path="sub/..")) == [("inside.txt", 1, 1)]
    assert _where(session.grep(MARKER, path=str(disk.root))) == [("inside.txt", 1, 1)]
    paths = [str(secret), *escaping_paths(alias, {"out": alias.outside, "file-link.txt": secret})]
    before = disk.snapshot()
    for path in paths:
        with raises_code("OUTSIDE_WORKSPACE"):
            session.grep(MARKER, path=path)
    disk.assert_unchanged(before)


@clause(
    "GREP-015",
    MUST,
    requires={"grep"},
    text="Symlinks to files or directories outside the root are never followed: no match ever "
    "comes from a file outside the root.",
    rationale="A planted link turns a search of the project into a search of the user's home "
    "directory, secrets included.",
)
def test_links_to_outside_are_not_followed(session, disk, alias, symlinks):
    (alias.outside / "nested").mkdir()
    (alias.outside / "secret.txt").write_text(f"outside {MARKER}\n")
    (alias.outside / "nested" / "deeper.txt").write_text(f"outside {MARKER}\n")
    disk.write("inside.txt", f"inside {MARKER}\n")
    alias.symlink("out", alias.outside)
    alias.symlink("sub/deep-out", "../../outside")
    alias.symlink("file-link.txt", alias.outside / "secret.txt")
    alias.symlink("rel-link.txt", "../outside/secret.txt")
    before = disk.snapshot()
    for options in ({}, {"include": "*.txt"}, {"path": "sub"}):
        result = session.grep(MARKER, **options)
        assert not [m for m in result.matches if "outside" in m.text], (options, _where(result))
    assert _where(session.grep(MARKER)) == [("inside.txt", 1, 8)]
    disk.assert_unchanged(before)


@clause(
    "GREP-016",
    MUST,
    requires={"grep"},
    text="Symlink loops (a self-link, two links to each other, a link to an ancestor) do not "
    "hang a search: it returns within seconds with the matches of the real files.",
    rationale="A search that follows a cycle never ends, and the agent's turn ends with it.",
)
def test_symlink_loops_do_not_hang(session, disk, alias, symlinks):
    disk.write("a.txt", f"{MARKER}\n")
    disk.write("sub/b.txt", f"{MARKER}\n")
    # Positive control, outside the bound (a server's start is not the search): the
    # matches are found before the loops are planted.
    assert _matched_paths(session.grep(MARKER)) == ["a.txt", "sub/b.txt"]
    plant_symlink_loops(disk, alias)
    before = disk.snapshot()
    result = within(10, lambda: session.grep(MARKER), what="grep over symlink loops")
    assert _matched_paths(result) == ["a.txt", "sub/b.txt"]
    disk.assert_unchanged(before)


@clause(
    "GREP-017",
    SHOULD,
    requires={"grep"},
    text="files_searched is the number of files whose contents were searched: ignored files "
    "are not counted.",
    rationale="The count tells the agent how much a 'no match' covers; counting ignored files "
    "overstates it.",
)
def test_files_searched_counts_searched_files(session, disk):
    # Every file outside .git holds "plain", so the files searched are exactly the files
    # matched: the three below, and .gitignore where hidden files are searched.
    disk.write(".gitignore", "# plain text: logs and build output are ignored\n*.log\nbuild/\n")
    for rel in ("a.py", "b.txt", "sub/c.md", "debug.log", "sub/trace.log", "build/out.txt"):
        disk.write(rel, "plain text\n")
    disk.write(".git/config", "[core]\n")
    disk.write(".git/HEAD", "ref: refs/heads/main\n")
    plain = session.grep("plain")
    searched = {m.path for m in plain.matches}
    assert searched - {".gitignore"} == {"a.py", "b.txt", "sub/c.md"}
    assert plain.files_searched == len(searched)
    assert session.grep("absent").files_searched == len(searched)


@clause(
    "GREP-018",
    SHOULD,
    requires={"grep"},
    text="Matches are ordered by path, then by line number, so the same search over the same "
    "tree returns the same list.",
    rationale="A deterministic order makes truncated results reproducible and lets the agent "
    "compare two searches.",
)
def test_matches_are_ordered_by_path_then_line(session, disk):
    for rel in ("sub/a.py", "b.py", "a/z.py", "a.py"):
        disk.write(rel, f"{MARKER}\nfiller\n{MARKER}\n")
    assert _where(session.grep(MARKER)) == [
        (path, line, 1) for path in ("a.py", "a/z.py", "b.py", "sub/a.py") for line in (1, 3)
    ]


# -- cancellation (grep_cancel) ---------------------------------------------------------


@clause(
    "GREP-019",
    MUST,
    requires={"grep", "grep_cancel"},
    text="A search whose deadline has already passed fails with CANCELLED, never with a "
    "partial or empty result, and changes nothing.",
    rationale="An empty result after a timeout reads as 'not found'; the agent then writes "
    "code that already exists.",
)
def test_expired_deadline_is_cancelled(session, disk):
    disk.write("a.txt", f"{MARKER}\n")
    before = disk.snapshot()
    # Positive control: a deadline a minute away lets the search finish.
    assert _where(session.grep(MARKER, deadline=time.monotonic() + 60.0)) == [("a.txt", 1, 1)]
    with raises_code("CANCELLED"):
        session.grep(MARKER, deadline=time.monotonic() - 1.0)
    disk.assert_unchanged(before)


@clause(
    "GREP-020",
    MUST,
    requires={"grep", "grep_cancel"},
    text="A search whose cancel token is set fails with CANCELLED and changes nothing.",
    rationale="A user who stops the agent expects the search to stop, not to be reported as "
    "finished.",
)
def test_set_cancel_token_is_cancelled(session, disk):
    disk.write("a.txt", f"{MARKER}\n")
    before = disk.snapshot()
    # Positive control: a token that is not set lets the search finish.
    assert _where(session.grep(MARKER, cancel=threading.Event())) == [("a.txt", 1, 1)]
    token = threading.Event()
    token.set()
    with raises_code("CANCELLED"):
        session.grep(MARKER, cancel=token)
    disk.assert_unchanged(before)


@clause(
    "GREP-021",
    MUST,
    requires={"grep", "grep_cancel"},
    text="A search cancelled or timed out while it runs either completes with every match or "
    "fails with CANCELLED: it never returns part of the matches as a success.",
    rationale="A partial list that looks complete is worse than an error: the agent trusts "
    "that the remaining call sites do not exist.",
)
def test_cancellation_midway_is_never_a_partial_success(session, disk):
    files = 150
    for i in range(files):
        disk.write(f"d{i % 10}/f{i:03d}.txt", f"head\n{MARKER} {i}\ntail\n")
    every = sorted((f"d{i % 10}/f{i:03d}.txt", 2) for i in range(files))
    for delay in (0.0005, 0.001, 0.002, 0.01, 0.05):
        for variant in ("cancel", "deadline"):
            token = threading.Event()
            timer = threading.Timer(delay, token.set)
            options = {"cancel": token}
            if variant == "deadline":
                options = {"deadline": time.monotonic() + delay}
            else:
                timer.start()
            try:
                result = session.grep(MARKER, **options)
            except Exception as exc:
                if getattr(exc, "code", None) != "CANCELLED":
                    raise
            else:
                assert result.truncated is False
                found = sorted((m.path, m.line) for m in result.matches)
                assert found == every, (variant, delay, len(result.matches))
            finally:
                timer.cancel()
