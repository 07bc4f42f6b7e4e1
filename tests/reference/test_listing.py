"""List directory: typed entries, order, depth, hidden entries and cursor paging."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference import ToolError, Workspace
from tests.reference.search_trees import Link, make_tree


def names(result: Any) -> list[str]:
    return [e.path for e in result.entries]


def error(call: Any) -> str:
    with pytest.raises(ToolError) as caught:
        call()
    return caught.value.code


def all_pages(session: Any, size: int, **kw: Any) -> list[str]:
    seen: list[str] = []
    cursor = None
    for _ in range(1000):
        page = session.list_directory(cursor=cursor, max_entries=size, **kw)
        seen += names(page)
        assert page.truncated == (page.next_cursor is not None)
        if not page.truncated:
            return seen
        assert len(page.entries) == size
        cursor = page.next_cursor
    raise AssertionError("paging did not end")


def test_typed_entries_with_size_mtime_and_link_target(root: Path, session: Any) -> None:
    make_tree(root, {"dir": {}, "file.txt": "hello", "link": Link("/etc/passwd")})
    os.utime(root / "file.txt", (1_700_000_000, 1_700_000_000))
    entries = {e.name: e for e in session.list_directory().entries}
    assert entries["dir"].type == "dir" and entries["dir"].size == 0
    assert entries["dir"].path == "dir" and entries["dir"].symlink_target is None
    assert entries["file.txt"].type == "file" and entries["file.txt"].size == 5
    assert entries["file.txt"].mtime == 1_700_000_000
    link = entries["link"]
    assert (link.type, link.symlink_target) == ("symlink", "/etc/passwd")
    assert link.size == len("/etc/passwd")  # the link itself, never its target


def test_other_types(root: Path, session: Any) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(root / "pipe")
    assert [(e.name, e.type) for e in session.list_directory().entries] == [("pipe", "other")]


def test_directories_first_then_by_name(root: Path, session: Any) -> None:
    make_tree(root, {"b": "", "a": "", "z": {}, "c": {}, "B": "", "é": ""})
    assert names(session.list_directory()) == ["c", "z", "B", "a", "b", "é"]


def test_depth_lists_subdirectories_after_their_directory(root: Path, session: Any) -> None:
    make_tree(root, {"f": "", "d": {"g": "", "e": {"h": ""}}, "c": {"i": ""}})
    assert names(session.list_directory(depth=1)) == ["c", "d", "f"]
    assert names(session.list_directory(depth=2)) == ["c", "c/i", "d", "d/e", "d/g", "f"]
    assert names(session.list_directory(depth=3)) == ["c", "c/i", "d", "d/e", "d/e/h", "d/g", "f"]


def test_symlinked_directories_are_not_entered(root: Path, session: Any, tmp_path: Path) -> None:
    make_tree(tmp_path / "outside", {"secret": ""})
    make_tree(root, {"out": Link(str(tmp_path / "outside")), "loop": Link("."), "d": {"x": ""}})
    assert names(session.list_directory(depth=5)) == ["d", "d/x", "loop", "out"]


def test_hidden_entries_only_on_request(root: Path, session: Any) -> None:
    make_tree(root, {".env": "", ".cache": {"x": ""}, "src": {".hidden": "", "a": ""}})
    assert names(session.list_directory(depth=2)) == ["src", "src/a"]
    assert names(session.list_directory(depth=2, include_hidden=True)) == [
        ".cache",
        ".cache/x",
        "src",
        "src/.hidden",
        "src/a",
        ".env",
    ]


def test_listing_a_subdirectory_reports_workspace_paths(root: Path, session: Any) -> None:
    make_tree(root, {"src": {"pkg": {"m.py": ""}, "a.py": ""}, "alias": Link("src")})
    assert names(session.list_directory("src", depth=2)) == ["src/pkg", "src/pkg/m.py", "src/a.py"]
    assert names(session.list_directory("alias")) == ["alias/pkg", "alias/a.py"]
    assert names(session.list_directory(str(root / "src" / "pkg"))) == ["src/pkg/m.py"]


def test_the_state_directory_is_not_listed(root: Path) -> None:
    workspace = Workspace(root, root / ".state")
    (root / "f").write_text("")
    assert names(workspace.session("s").list_directory(include_hidden=True)) == ["f"]


def test_errors(root: Path, session: Any) -> None:
    make_tree(root, {"file": ""})
    assert error(lambda: session.list_directory("missing")) == "NOT_FOUND"
    assert error(lambda: session.list_directory("file")) == "INVALID_ARGUMENT"
    assert error(lambda: session.list_directory("..")) == "OUTSIDE_WORKSPACE"
    assert error(lambda: session.list_directory(depth=0)) == "INVALID_ARGUMENT"
    assert error(lambda: session.list_directory(depth=True)) == "INVALID_ARGUMENT"
    assert error(lambda: session.list_directory(max_entries=0)) == "INVALID_ARGUMENT"
    assert error(lambda: session.list_directory(include_hidden="yes")) == "INVALID_ARGUMENT"


# -- paging ----------------------------------------------------------------------------------


def test_pages_cover_the_listing_exactly_once(root: Path, session: Any) -> None:
    make_tree(root, {"d1": {"a": "", "b": {"c": ""}}, "d2": {}, "x": "", "y": "", "z": ""})
    full = names(session.list_directory(depth=3))
    for size in range(1, len(full) + 2):
        assert all_pages(session, size, depth=3) == full


def test_a_page_that_ends_exactly_at_the_end_is_not_truncated(root: Path, session: Any) -> None:
    make_tree(root, {"a": "", "b": ""})
    page = session.list_directory(max_entries=2)
    assert (names(page), page.truncated, page.next_cursor) == (["a", "b"], False, None)


def test_the_cursor_resumes_after_the_last_entry_even_when_entries_change(
    root: Path, session: Any
) -> None:
    make_tree(root, {"b": "", "d": "", "f": "", "h": ""})
    first = session.list_directory(max_entries=2)
    assert names(first) == ["b", "d"]
    (root / "a").write_text("")  # before the cursor: not repeated, not shifting the page
    (root / "c").write_text("")  # before the cursor too
    (root / "e").write_text("")  # after it: listed
    (root / "d").unlink()  # the cursor's own entry may go away
    second = session.list_directory(max_entries=2, cursor=first.next_cursor)
    assert names(second) == ["e", "f"]
    third = session.list_directory(max_entries=2, cursor=second.next_cursor)
    assert (names(third), third.truncated) == (["h"], False)


def test_a_cursor_inside_a_subtree_resumes_inside_it(root: Path, session: Any) -> None:
    make_tree(root, {"d": {"a": "", "b": "", "c": ""}, "z": ""})
    first = session.list_directory(depth=2, max_entries=2)
    assert names(first) == ["d", "d/a"]
    (root / "d" / "aa").write_text("")
    assert names(session.list_directory(depth=2, cursor=first.next_cursor)) == [
        "d/aa",
        "d/b",
        "d/c",
        "z",
    ]


def test_invalid_cursors(root: Path, session: Any) -> None:
    make_tree(root, {"a": "", "b": "", "d": {"x": ""}})
    cursor = session.list_directory(max_entries=1).next_cursor
    assert cursor is not None
    body, digest = cursor.split(".")
    forged = base64.urlsafe_b64encode(b'{"v":1}').decode().rstrip("=") + "." + digest
    for bad in ["", "garbage", "a.b", body + ".000000000000", forged, cursor + "x"]:
        assert (
            error(lambda bad=bad: session.list_directory(max_entries=1, cursor=bad))
            == "INVALID_ARGUMENT"
        )
    assert error(lambda: session.list_directory(cursor=123)) == "INVALID_ARGUMENT"
    # A cursor belongs to one listing: the same path, depth and hidden flag.
    assert error(lambda: session.list_directory(depth=2, cursor=cursor)) == "INVALID_ARGUMENT"
    assert (
        error(lambda: session.list_directory(include_hidden=True, cursor=cursor))
        == "INVALID_ARGUMENT"
    )
    assert error(lambda: session.list_directory("d", cursor=cursor)) == "INVALID_ARGUMENT"
    assert names(session.list_directory(cursor=cursor)) == ["a", "b"]


def test_cursor_round_trips_unusual_names(root: Path, session: Any) -> None:
    odd = ["\udcff-undecodable", "日本", "new\nline", 'quote"s']
    for name in odd:
        (root / name).write_text("")
    assert all_pages(session, 1) == sorted(odd)


# -- paging under concurrent changes, generated -----------------------------------------------

_NAMES = st.text(alphabet="abcXY.-_é", min_size=1, max_size=3).filter(
    lambda n: n not in (".", "..")
)


@given(
    initial=st.sets(_NAMES, max_size=12),
    added=st.lists(st.sets(_NAMES, max_size=3), min_size=1, max_size=6),
    size=st.integers(1, 4),
    dirs=st.sets(_NAMES, max_size=3),
)
def test_paging_while_entries_are_added_lists_every_original_entry_once_in_order(
    tmp_path_factory: pytest.TempPathFactory,
    initial: set[str],
    added: list[set[str]],
    size: int,
    dirs: set[str],
) -> None:
    base = tmp_path_factory.mktemp("paging")
    root = base / "ws"
    root.mkdir()
    for name in initial:
        if name in dirs:
            (root / name).mkdir()
            (root / name / "inner").write_text("")
        else:
            (root / name).write_text("")
    session = Workspace(root, base / "state").session("s")
    original = names(session.list_directory(depth=2, include_hidden=True))
    seen: list[str] = []
    cursor = None
    for round_ in range(1000):
        page = session.list_directory(depth=2, include_hidden=True, cursor=cursor, max_entries=size)
        seen += names(page)
        if not page.truncated:
            break
        cursor = page.next_cursor
        for name in added[round_ % len(added)]:
            if not (root / name).exists():
                (root / name).write_text("")
    assert len(seen) == len(set(seen))  # nothing twice
    assert set(original) <= set(seen)  # nothing that was there all along is skipped
    full = names(session.list_directory(depth=2, include_hidden=True))
    assert seen == [p for p in full if p in set(seen)]  # in listing order


def _forge(payload: dict[str, Any]) -> str:
    import hashlib
    import json

    data = json.dumps(payload, separators=(",", ":")).encode()
    body = base64.urlsafe_b64encode(data).decode().rstrip("=")
    return body + "." + hashlib.sha256(data).hexdigest()[:12]


def test_cursors_with_a_valid_checksum_but_a_bad_key(root: Path, session: Any) -> None:
    (root / "a").write_text("")
    bind = {"v": 1, "p": ".", "d": 1, "h": False}
    for key in [None, [], [[2, "a"]], [[0]], [[0, 5]], ["a"]]:
        cursor = _forge({**bind, "k": key})
        assert (
            error(lambda cursor=cursor: session.list_directory(cursor=cursor)) == "INVALID_ARGUMENT"
        )
    assert error(lambda: session.list_directory(cursor=_forge([1, 2]))) == "INVALID_ARGUMENT"  # type: ignore[arg-type]
    assert names(session.list_directory(cursor=_forge({**bind, "k": [[1, "0"]]}))) == ["a"]


def test_listing_survives_entries_that_vanish_and_reports_listing_errors(
    root: Path, tmp_path: Path
) -> None:
    import errno

    from tests.reference.search_trees import scripted_fs

    make_tree(
        root, {"keep": "", "vanish": "", "d": {"vanish_too": "", "x": ""}, "ln": Link("keep")}
    )
    session = Workspace(root, tmp_path / "st1", fs=scripted_fs(vanish="vanish")).session("s")
    assert names(session.list_directory(depth=2)) == ["d", "d/x", "keep", "ln"]
    broken = Workspace(root, tmp_path / "st2", fs=scripted_fs(fail_scandir={"ws": errno.EIO}))
    assert error(lambda: broken.session("s").list_directory()) == "IO_ERROR"
    unlistable = Workspace(
        root, tmp_path / "st3", fs=scripted_fs(fail_scandir={"/d": errno.EACCES})
    )
    assert names(unlistable.session("s").list_directory(depth=2)) == ["d", "keep", "ln"]
    no_links = Workspace(root, tmp_path / "st4", fs=scripted_fs(fail_readlink=True))
    assert names(no_links.session("s").list_directory(depth=2)) == ["d", "d/x", "keep"]
