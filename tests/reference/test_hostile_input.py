"""Hostile arguments: every public Session method answers with a result or a ToolError.

A property test drives each method with arbitrary values of the right and the wrong
types; the minimal inputs of the fuzzing report each have a test of their own; and the
bounds (``Limits``, ``_arguments``, the brace and backtracking checks, the bounded error
messages) are tested branch by branch.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference import (
    EditSpec,
    FileSystem,
    Limits,
    LocalFileService,
    RemoteSession,
    RemoteWorkspace,
    ToolError,
    Workspace,
    _arguments,
    _errors,
)
from editspec.reference.search._grep_query import compile_query
from editspec.reference.search._scope import brace_alternatives, check_glob_pattern

SURROGATE = "\ud800"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\nworld\n")
    return Workspace(root, tmp_path / "state")


def _tree(ws: Workspace) -> dict[str, bytes]:
    root = Path(ws.root)
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(root.rglob("*"))
    }


def _refused(code: str, call, *args, **kwargs) -> ToolError:
    with pytest.raises(ToolError) as caught:
        call(*args, **kwargs)
    assert caught.value.code == code, caught.value
    return caught.value


# -- the minimal inputs of the report ---------------------------------------------------


def test_lone_surrogate_path_is_invalid_argument_in_read_write_glob_patch(ws: Workspace) -> None:
    s = ws.session("s")
    assert s.read("a.txt").content == "hello\nworld\n"  # positive control
    before = _tree(ws)
    _refused("INVALID_ARGUMENT", s.read, SURROGATE)
    _refused("INVALID_ARGUMENT", s.write, SURROGATE, "x")
    _refused("INVALID_ARGUMENT", s.glob, "*", path=SURROGATE)
    _refused("INVALID_ARGUMENT", s.glob, SURROGATE)
    _refused(
        "INVALID_ARGUMENT",
        s.apply_patch,
        f"*** Begin Patch\n*** Add File: {SURROGATE}\n+x\n*** End Patch\n",
    )
    _refused("INVALID_ARGUMENT", s.list_directory, SURROGATE)
    _refused("INVALID_ARGUMENT", s.why_ignored, SURROGATE)
    _refused("INVALID_ARGUMENT", s.edit_notebook, SURROGATE, index=0, source="x")
    assert _tree(ws) == before


def test_surrogate_escape_names_raw_bytes_and_passes(ws: Workspace) -> None:
    # U+DC80..U+DCFF is how Python spells an undecodable byte: a real file name.
    s = ws.session("s")
    s.write("caf\udce9.txt", "x")
    assert os.path.exists(os.path.join(os.fsencode(ws.root), b"caf\xe9.txt"))


def test_nul_in_encoding_is_invalid_argument(ws: Workspace) -> None:
    s = ws.session("s")
    assert s.read("a.txt", encoding="utf-8").encoding == "utf-8"
    _refused("INVALID_ARGUMENT", s.read, "a.txt", encoding="utf-8\0")
    _refused("INVALID_ARGUMENT", s.read, "a.txt", encoding=SURROGATE)
    error = _refused("TOO_LARGE", s.read, "a.txt", encoding="x" * 100_000)
    assert len(str(error)) < 1000


def test_five_megabyte_path_is_refused_with_a_bounded_error(ws: Workspace) -> None:
    s = ws.session("s")
    for call in (s.read, lambda p: s.write(p, "x"), s.list_directory):
        error = _refused("INVALID_ARGUMENT", call, "x" * 5_000_000)
        assert len(str(error)) < 1000
        assert error.details["limit"] == "path_bytes"


def test_path_three_thousand_directories_deep_is_refused_before_walking(ws: Workspace) -> None:
    s = ws.session("s")
    before = _tree(ws)
    started = time.monotonic()
    deep = "/".join(["d"] * 3000) + "/f.txt"
    _refused("INVALID_ARGUMENT", s.write, deep, "x")
    _refused("INVALID_ARGUMENT", s.read, deep)
    _refused(
        "INVALID_ARGUMENT",
        s.apply_patch,
        f"*** Begin Patch\n*** Add File: {deep}\n+x\n*** End Patch\n",
    )
    assert time.monotonic() - started < 5
    assert _tree(ws) == before


def test_depth_and_name_limits(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "state", Limits(path_depth=3, name_bytes=8))
    s = ws.session("s")
    s.write("a/b/c", "x")  # three deep: allowed
    error = _refused("INVALID_ARGUMENT", s.write, "a/b/c/d", "x")
    assert error.details["limit"] == "path_depth"
    error = _refused("INVALID_ARGUMENT", s.write, "123456789", "x")
    assert error.details["limit"] == "name_bytes"
    s.write("12345678", "x")
    assert not (root / "a" / "b" / "c" / "d").exists()


def test_resolved_path_longer_than_path_max_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "state", Limits(path_bytes=len(str(root)) + 10))
    s = ws.session("s")
    s.write("short", "x")
    error = _refused("INVALID_ARGUMENT", s.write, "a" * 12, "x")  # 12 < 4095, but root + 12
    assert "resolved path" in error.message


def test_huge_grep_pattern_is_too_large_quickly(ws: Workspace) -> None:
    s = ws.session("s")
    assert s.grep("hel+o").matches  # positive control
    started = time.monotonic()
    error = _refused("TOO_LARGE", s.grep, "a" * 5_200_000)
    assert time.monotonic() - started < 2
    assert len(str(error)) < 1000


@pytest.mark.parametrize("backend", ["python", "auto"])
def test_catastrophic_backtracking_pattern_is_refused(tmp_path: Path, backend: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a" * 40 + "b\n")
    ws = Workspace(root, tmp_path / "state", grep_backend=backend)
    s = ws.session("s")
    assert s.grep(r"a+b").matches  # positive control
    started = time.monotonic()
    for pattern in (r"(a+)+$", r"(a*)*c", r"(\w+\s?)+$", r"((a+))+c", r"(?:x|(a+)+)$"):
        _refused("TOO_LARGE", s.grep, pattern)
    assert time.monotonic() - started < 2
    # Nested quantifiers with a fixed part between them cannot backtrack that way.
    assert s.grep(r"a(?:a*b)+").matches


def test_grep_without_deadline_gets_the_default(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("x\n")
    s = Workspace(root, tmp_path / "state", Limits(grep_seconds=-1.0)).session("s")
    _refused("CANCELLED", s.grep, "x")


def test_grep_argument_types(ws: Workspace) -> None:
    s = ws.session("s")
    _refused("INVALID_ARGUMENT", s.grep, "x", ignore_case="yes")
    _refused("INVALID_ARGUMENT", s.grep, "x", deadline=float("nan"))
    _refused("INVALID_ARGUMENT", s.grep, "x", deadline=10**400)
    _refused("INVALID_ARGUMENT", s.grep, "x", deadline="soon")
    _refused("INVALID_ARGUMENT", s.grep, "x", cancel="no")
    assert s.grep("hello", cancel=threading.Event()).matches
    _refused("INVALID_ARGUMENT", s.grep, "a\0b")
    _refused("INVALID_ARGUMENT", s.grep, "x", include=SURROGATE)
    _refused("INVALID_ARGUMENT", s.grep, "(")


def test_brace_expansion_is_bounded(ws: Workspace) -> None:
    s = ws.session("s")
    assert s.glob("*.{txt,md}").paths == ("a.txt",)
    started = time.monotonic()
    _refused("TOO_LARGE", s.glob, "{a,b}" * 20)
    _refused("TOO_LARGE", s.glob, "{x}" * 65)
    _refused("TOO_LARGE", s.grep, "x", include="{a,b}" * 20)
    _refused("TOO_LARGE", s.glob, "*" * 5000)
    assert time.monotonic() - started < 2


def test_brace_alternatives_counts_structure() -> None:
    assert brace_alternatives("abc", 100) == 1
    assert brace_alternatives("{a,b}", 100) == 2
    assert brace_alternatives("{a,b}{c,d,e}", 100) == 6
    assert brace_alternatives("{a,{b,c}}", 100) == 3
    assert brace_alternatives("\\{a,b}", 100) == 1
    assert brace_alternatives("{a,b", 100) == 1  # unbalanced: literal
    assert brace_alternatives("{a,b}" * 40, 100) == 100  # capped, never expanded
    limits = Limits()
    assert check_glob_pattern("pattern", "**/*.{ts,tsx}", limits) == "**/*.{ts,tsx}"


def test_too_many_edits_is_too_large(ws: Workspace) -> None:
    s = ws.session("s")
    s.read("a.txt")
    before = _tree(ws)
    edits = [EditSpec("hello", "bye")] * 1001
    error = _refused("TOO_LARGE", s.edit, "a.txt", edits)
    assert error.details["limit"] == "edits_per_call"
    assert _tree(ws) == before


def test_edit_fields_are_checked_before_any_io(ws: Workspace) -> None:
    s = ws.session("s")
    # The file does not exist: a field error is still reported first.
    for spec in (
        EditSpec(SURROGATE, "x"),
        EditSpec("x", SURROGATE),
        EditSpec("x", "y", line=0),
        EditSpec("x", "y", line=2**64),
        EditSpec("x", "y", before=""),
        EditSpec("x", "y", after=5),  # type: ignore[arg-type]
        EditSpec("x", "y", replace_all="yes"),  # type: ignore[arg-type]
    ):
        error = _refused("INVALID_ARGUMENT", s.edit, "missing.txt", [spec])
        assert error.details["edit_index"] == 0
    _refused(
        "INVALID_ARGUMENT", s.edit, "missing.txt", [{"old_string": SURROGATE, "new_string": ""}]
    )


def test_identifiers_are_checked(ws: Workspace) -> None:
    s = ws.session("s")
    _refused("INVALID_ARGUMENT", s.write, "n.txt", "x", message_id="a\0")
    _refused("INVALID_ARGUMENT", s.write, "n.txt", "x", message_id=SURROGATE)
    _refused("TOO_LARGE", s.write, "n.txt", "x", message_id="m" * 2000)
    _refused(
        "INVALID_ARGUMENT", s.apply_patch, "*** Begin Patch\n*** End Patch\n", message_id=SURROGATE
    )
    _refused("INVALID_ARGUMENT", s.rewind, SURROGATE)
    _refused("INVALID_ARGUMENT", ws.session, SURROGATE)
    _refused("TOO_LARGE", ws.session, "s" * 2000)
    assert not (Path(ws.root) / "n.txt").exists()


def test_notebook_arguments(ws: Workspace) -> None:
    s = ws.session("s")
    _refused("INVALID_ARGUMENT", s.edit_notebook, "n.ipynb", cell_id=SURROGATE, source="x")
    _refused("INVALID_ARGUMENT", s.edit_notebook, "n.ipynb", index=2**64, source="x")
    error = _refused(
        "INVALID_ARGUMENT", s.edit_notebook, "n.ipynb", index=0, mode=["x"], source="x"
    )
    assert "['x']" in error.message
    error = _refused(
        "INVALID_ARGUMENT", s.edit_notebook, "n.ipynb", index=0, cell_type="c" * 10**6, source="x"
    )
    assert len(str(error)) < 1000
    _refused(
        "INVALID_ARGUMENT", s.edit_notebook, "n.ipynb", index=0, cell_type=["code"], source="x"
    )


def test_listing_arguments(ws: Workspace) -> None:
    s = ws.session("s")
    assert s.list_directory(".").entries
    _refused("INVALID_ARGUMENT", s.list_directory, ".", depth=2**64)
    _refused("INVALID_ARGUMENT", s.list_directory, ".", max_entries=2**64)
    _refused("INVALID_ARGUMENT", s.list_directory, ".", cursor=5)
    _refused("INVALID_ARGUMENT", s.list_directory, ".", cursor=SURROGATE + ".x")
    _refused("TOO_LARGE", s.list_directory, ".", cursor="c" * 100_000)


def test_search_numbers_and_patches_are_bounded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "state", Limits(patch_bytes=100))
    s = ws.session("s")
    _refused("INVALID_ARGUMENT", s.glob, "*", max_results=2**63)
    _refused("INVALID_ARGUMENT", s.grep, "x", max_results=2**63)
    _refused("INVALID_ARGUMENT", s.read, "a\0b")
    _refused("INVALID_ARGUMENT", s.why_ignored, "w" * 5000)
    (root / "link").symlink_to(tmp_path)  # the name itself is explained, never followed
    assert s.why_ignored("link").ignored is False
    # Longer than patch_bytes: TOO_LARGE from the parser, before any scan for surrogates.
    _refused("TOO_LARGE", s.apply_patch, "*** Begin Patch\n" + SURROGATE * 200)


def test_read_numbers_are_bounded(ws: Workspace) -> None:
    s = ws.session("s")
    for name in ("start_line", "end_line", "start_byte", "max_bytes"):
        _refused("INVALID_ARGUMENT", s.read, "a.txt", **{name: 2**63})
    assert s.read("a.txt", max_bytes=2**63 - 1).content == "hello\nworld\n"


# -- the helpers ------------------------------------------------------------------------


def test_excerpt_is_bounded_ascii() -> None:
    assert _arguments.excerpt("abc") == "'abc'"
    long = _arguments.excerpt("é" * 1000)
    assert long.isascii() and len(long) < 120 and "(1000 characters)" in long
    assert _arguments.excerpt(list(range(1000))).endswith("...")


def test_check_helpers() -> None:
    assert _arguments.check_text("x", None, optional=True) is None
    assert _arguments.check_text("x", "", empty=True) == ""
    assert _arguments.check_text("x", "a\0", nul=True) == "a\0"
    assert _arguments.check_integer("n", None, minimum=0) is None
    with pytest.raises(ToolError):
        _arguments.check_integer("n", None, minimum=0, optional=False)
    assert _arguments.check_finite("d", None) is None
    assert _arguments.check_finite("d", 3) == 3.0
    assert _arguments.check_bool("b", False) is False
    for bad in ("soon", True):
        with pytest.raises(ToolError):
            _arguments.check_finite("d", bad)


def test_tool_error_bounds_message_and_details() -> None:
    error = ToolError(
        "INVALID_ARGUMENT", "m" * 100_000, path="p" * 100_000, items=list(range(1000))
    )
    assert len(error.message) < _errors.MESSAGE_CHARS + 100
    assert len(error.details["path"]) < _errors.DETAIL_CHARS + 100
    assert len(error.details["items"]) == _errors.DETAIL_ITEMS
    small = ["a", "b"]
    nested = {"k": ("x" * 100_000, b"y" * 100_000), "keep": small}
    error = ToolError("IO_ERROR", "m", nested=nested, same=small, deep=[[[[[[[[[[["z"]]]]]]]]]]])
    assert error.details["same"] is small  # in bounds: not copied
    assert isinstance(error.details["nested"]["k"], tuple)
    assert len(error.details["nested"]["k"][1]) == _errors.DETAIL_CHARS
    assert error.details["nested"]["keep"] is small
    bounded = ToolError("IO_ERROR", "m", d={str(i): i for i in range(1000)})
    assert len(bounded.details["d"]) == _errors.DETAIL_ITEMS


def test_backtracking_check_passes_ordinary_patterns() -> None:
    for pattern in (r"\w+(?:\s*,\s*\w+)*", r"(ab*)+", r"foo.*bar", r"(?:a|b)+", r"x{2,5}", r"(a)+"):
        compile_query(pattern)
    for pattern in (r"(a+){2}", r"(?:(?:a*))*", r"x|(a*)*", r"(?:x(a+)+y)*"):
        with pytest.raises(ToolError) as caught:
            compile_query(pattern)
        assert caught.value.code == "TOO_LARGE"


# -- the property test ------------------------------------------------------------------

_TEXT = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["a.txt", ".", "..", "/", "../x", "a.txt/", "\0", SURROGATE, "x" * 5000]),
)
_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    _TEXT,
    st.binary(max_size=10),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
_EDIT = st.one_of(
    st.builds(
        EditSpec,
        old_string=st.one_of(_TEXT, _ANY),
        new_string=st.one_of(_TEXT, _ANY),
        replace_all=st.one_of(st.booleans(), _ANY),
        line=st.one_of(st.none(), _ANY),
        before=st.one_of(st.none(), _ANY),
        after=st.one_of(st.none(), _ANY),
    ),
    _ANY,
)
_CALLS = {
    "read": lambda s, d: s.read(
        d(_TEXT | _ANY),
        start_line=d(_ANY),
        end_line=d(_ANY),
        start_byte=d(_ANY),
        max_bytes=d(_ANY),
        encoding=d(st.sampled_from(["auto", "utf-8", "binary"]) | _ANY),
    ),
    "write": lambda s, d: s.write(
        d(_TEXT | _ANY), d(_TEXT | _ANY), expected_sha256=d(_ANY), message_id=d(_ANY)
    ),
    "edit": lambda s, d: s.edit(
        d(_TEXT | _ANY),
        d(st.lists(_EDIT, max_size=3) | _ANY),
        expected_sha256=d(_ANY),
        message_id=d(_ANY),
    ),
    "edit_notebook": lambda s, d: s.edit_notebook(
        d(_TEXT | _ANY),
        cell_id=d(_ANY),
        index=d(_ANY),
        mode=d(st.sampled_from(["replace", "insert", "delete"]) | _ANY),
        source=d(_ANY),
        cell_type=d(_ANY),
        expected_sha256=d(_ANY),
        message_id=d(_ANY),
    ),
    "apply_patch": lambda s, d: s.apply_patch(
        d(
            st.builds(
                lambda p, c: f"*** Begin Patch\n*** Add File: {p}\n+{c}\n*** End Patch\n",
                _TEXT,
                _TEXT,
            )
            | _ANY
        ),
        message_id=d(_ANY),
    ),
    "glob": lambda s, d: s.glob(d(_TEXT | _ANY), path=d(_ANY), max_results=d(_ANY)),
    "grep": lambda s, d: s.grep(
        d(_TEXT | _ANY),
        path=d(_ANY),
        include=d(_ANY),
        ignore_case=d(_ANY),
        max_results=d(_ANY),
        deadline=d(st.none() | st.floats()),
    ),
    "list_directory": lambda s, d: s.list_directory(
        d(_TEXT | _ANY),
        depth=d(st.integers(-3, 3) | _ANY),
        include_hidden=d(_ANY),
        cursor=d(_ANY),
        max_entries=d(_ANY),
    ),
    "why_ignored": lambda s, d: s.why_ignored(d(_TEXT | _ANY)),
    "rewind": lambda s, d: s.rewind(d(_TEXT | _ANY)),
    "manifest": lambda s, d: s.manifest(d(_TEXT | _ANY)),
    "delete": lambda s, d: s.delete(
        d(_TEXT | _ANY),
        kind=d(st.sampled_from(["file", "empty_dir", "tree"]) | _ANY),
        expected_sha256=d(_ANY),
        manifest_sha256=d(_ANY),
        message_id=d(_ANY),
    ),
    "move": lambda s, d: s.move(
        d(_TEXT | _ANY),
        d(_TEXT | _ANY),
        expected_sha256=d(_ANY),
        manifest_sha256=d(_ANY),
        message_id=d(_ANY),
    ),
}


@pytest.mark.parametrize("method", sorted(_CALLS))
def test_every_method_answers_a_result_or_a_tool_error(tmp_path: Path, method: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    root = tmp_path / "ws"
    root.mkdir()
    workspace = Workspace(root, tmp_path / "state")

    @given(st.data())
    def run(data: st.DataObject) -> None:
        session = workspace.session("s")
        try:
            _CALLS[method](session, data.draw)
        except ToolError as exc:
            assert exc.code in _errors.ERROR_CODES
            assert len(str(exc)) < 64 * 1024
        assert outside.read_text() == "keep"
        leftovers = [p for p in root.rglob("*") if p.name.endswith(".tmp")]
        assert not leftovers

    run()


def test_the_property_test_drives_every_public_session_method() -> None:
    # A method added to Session without an entry in _CALLS would go unfuzzed.
    from editspec.reference import Session

    public = {name for name in vars(Session) if not name.startswith("_")}
    public -= {"workspace", "id"}
    assert set(_CALLS) == public
    remote = {name for name in vars(RemoteSession) if not name.startswith("_")}
    assert remote <= set(_CALLS), remote - set(_CALLS)


_WORKSPACE_CALLS = {
    "session": lambda w, d: w.session(d(_TEXT | _ANY)),
    "resolve": lambda w, d: w.resolve(d(_TEXT | _ANY)),
}


@pytest.mark.parametrize("method", sorted(_WORKSPACE_CALLS))
def test_workspace_entry_points_answer_a_result_or_a_tool_error(
    tmp_path: Path, method: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    workspace = Workspace(root, tmp_path / "state")

    @given(st.data())
    def run(data: st.DataObject) -> None:
        try:
            _WORKSPACE_CALLS[method](workspace, data.draw)
        except ToolError as exc:
            assert exc.code in _errors.ERROR_CODES
            assert len(str(exc)) < 64 * 1024

    run()


@pytest.mark.parametrize("method", sorted(name for name in _CALLS if hasattr(RemoteSession, name)))
def test_every_remote_method_answers_a_result_or_a_tool_error(tmp_path: Path, method: str) -> None:
    # Remote sessions (files reached through a FileService) take the same hostile values.
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    workspace = RemoteWorkspace(LocalFileService(FileSystem()), str(root))

    @given(st.data())
    def run(data: st.DataObject) -> None:
        session = workspace.session("s")
        try:
            _CALLS[method](session, data.draw)
        except ToolError as exc:
            assert exc.code in _errors.ERROR_CODES
            assert len(str(exc)) < 64 * 1024
        assert outside.read_text() == "keep"
        assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]

    run()
