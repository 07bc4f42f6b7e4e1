"""LIST: typed directory listings with stable order and cursor paging (DESIGN §4 "List
directory")."""

from __future__ import annotations

import os

import pytest

from editspec.spec import (
    MUST,
    SHOULD,
    WrongBehaviour,
    assert_fields,
    clause,
    raises_code,
    within,
)
from editspec.spec._search_kit import (
    escaping_paths,
    plant_symlink_loops,
    set_mtime,
)


class _Entries(dict):
    """Entries by name; one the listing left out fails the clause, naming it (not a KeyError
    of the suite)."""

    def __missing__(self, name):
        raise WrongBehaviour(f"the listing has no entry {name!r} (it lists {sorted(self)})")


def _by_name(result):
    return _Entries((entry.name, entry) for entry in result.entries)


def _names(result):
    return [entry.name for entry in result.entries]


def _paths(result):
    return [entry.path for entry in result.entries]


def _all_pages(session, path=".", *, max_entries, limit=100, **options):
    """Every page of a listing, followed cursor by cursor."""
    pages = [session.list_directory(path, max_entries=max_entries, **options)]
    while pages[-1].next_cursor is not None:
        assert len(pages) < limit, "the cursor never runs out"
        pages.append(
            session.list_directory(
                path, max_entries=max_entries, cursor=pages[-1].next_cursor, **options
            )
        )
    return pages


@clause(
    "LIST-001",
    MUST,
    requires={"list_directory"},
    text="Each entry carries its name, path and type ('file', 'dir', 'symlink'); a file's size "
    "is its length in bytes; symlink_target is empty for entries that are not links.",
    rationale="The agent decides from the listing what to open; a directory shown as a file, "
    "or a wrong size, leads to failed reads and truncated views.",
)
def test_typed_entries(session, disk):
    disk.write("data.bin", b"x" * 1234)
    disk.mkdir("pkg")
    disk.write("pkg/inner.txt", "x\n")
    before = disk.snapshot()
    result = session.list_directory(".")
    assert_fields(result, "ListResult")
    entries = _by_name(result)
    assert sorted(entries) == ["data.bin", "pkg"]
    for entry in entries.values():
        assert_fields(entry, "ListEntry")
        assert not entry.symlink_target
    assert entries["data.bin"].type == "file"
    assert entries["data.bin"].size == 1234
    assert entries["data.bin"].path == "data.bin"
    assert entries["pkg"].type == "dir"
    assert entries["pkg"].path == "pkg"
    assert result.next_cursor is None and result.truncated is False
    disk.assert_unchanged(before)


@clause(
    "LIST-002",
    SHOULD,
    requires={"list_directory"},
    text="mtime is the entry's own modification time in seconds since the epoch (as "
    "os.lstat's st_mtime).",
    rationale="Agents look for recently changed files; a time in another unit or of the link "
    "target misleads them.",
)
def test_mtime_is_the_entry_own(session, disk, alias):
    disk.write("a.txt", "x\n")
    disk.mkdir("d")
    own = {"a.txt": set_mtime(disk, "a.txt", 12.5), "d": set_mtime(disk, "d", 100)}
    try:
        alias.symlink("link", "a.txt")
        own["link"] = set_mtime(disk, "link", 5000)  # the link's own time, not a.txt's
    except (OSError, NotImplementedError):
        pass  # no symlinks (or no lutimes) here: files and directories still show the rule
    entries = _by_name(session.list_directory("."))
    for name, stamp in own.items():
        assert abs(float(entries[name].mtime) - stamp / 1e9) < 1.0, (name, entries[name].mtime)


@clause(
    "LIST-003",
    MUST,
    requires={"list_directory"},
    text="A symlink is listed as type 'symlink' with its target, whether it points to a file, "
    "a directory inside or outside the root, or nowhere; a link is never entered, at any depth.",
    rationale="Showing a link to the outside as a directory, or listing its contents, maps the "
    "disk beyond the root for the agent.",
)
def test_symlinks_are_typed_and_not_followed(session, disk, alias, symlinks):
    (alias.outside / "outside-only.txt").write_text("secret\n")
    disk.write("real.txt", "x\n")
    disk.write("realdir/inside.txt", "x\n")
    links = {
        "to-file": "real.txt",
        "to-dir": "realdir",
        "to-outside": str(alias.outside),
        "rel-outside": "../outside",
        "dangling": "no-such-target",
        "realdir/deep-out": "../../outside",
    }
    for rel, target in links.items():
        alias.symlink(rel, target)
    before = disk.snapshot()
    listed = session.list_directory(".", depth=3).entries
    entries = {entry.path: entry for entry in listed}
    for rel, target in links.items():
        assert entries[rel].type == "symlink", rel
        stored = entries[rel].symlink_target
        resolved = os.path.normpath(os.path.join(disk.root, os.path.dirname(rel), target))
        assert stored in (target, resolved), (rel, stored)
    assert "outside-only.txt" not in [entry.name for entry in listed]
    paths = sorted(entries)
    assert not [p for p in paths if p.startswith(tuple(rel + "/" for rel in links))], paths
    assert "realdir/inside.txt" in paths
    disk.assert_unchanged(before)


@clause(
    "LIST-004",
    MUST,
    requires={"list_directory"},
    text="Entries come in a stable order: directories first, then everything else, each group "
    "by name; listing twice gives the same order.",
    rationale="A deterministic order is what makes pages and repeated listings comparable; "
    "the file system's own order changes from disk to disk.",
)
def test_stable_order(session, disk):
    for name in ("kiwi", "apple", "mango", "banana", "cherry", "fig"):
        disk.write(name, "x\n")
    for name in ("zoo", "yard", "bin"):
        disk.mkdir(name)
    expected = ["bin", "yard", "zoo", "apple", "banana", "cherry", "fig", "kiwi", "mango"]
    assert _names(session.list_directory(".")) == expected
    assert _names(session.list_directory(".")) == expected


@clause(
    "LIST-005",
    MUST,
    requires={"list_directory"},
    text="depth=1 lists the directory's own entries; depth=n adds the entries of its "
    "subdirectories down to n levels, with paths that name each entry, and nothing deeper.",
    rationale="Agents explore a tree level by level; too little depth hides structure, too "
    "much floods the context.",
)
def test_depth(session, disk):
    disk.write("top.txt", "x\n")
    disk.write("a/one.txt", "x\n")
    disk.write("a/b/two.txt", "x\n")
    disk.write("a/b/c/three.txt", "x\n")
    assert sorted(_paths(session.list_directory("."))) == ["a", "top.txt"]
    assert sorted(_paths(session.list_directory(".", depth=2))) == [
        "a",
        "a/b",
        "a/one.txt",
        "top.txt",
    ]
    assert sorted(_paths(session.list_directory(".", depth=3))) == [
        "a",
        "a/b",
        "a/b/c",
        "a/b/two.txt",
        "a/one.txt",
        "top.txt",
    ]


@clause(
    "LIST-006",
    MUST,
    requires={"list_directory"},
    text="Hidden entries (names starting with '.') and everything below a hidden directory are "
    "left out unless include_hidden=True, which lists them.",
    rationale="Dotfiles (.env, .git, editor state) are noise, or secrets, in most listings; "
    "an agent that needs them asks.",
)
def test_hidden_only_on_request(session, disk):
    disk.write(".env", "TOKEN=x\n")
    disk.write(".config/settings.json", "{}\n")
    disk.write("src/.cache/blob", "x\n")
    disk.write("src/main.py", "x\n")
    disk.write("visible.txt", "x\n")
    shown = sorted(_paths(session.list_directory(".", depth=3)))
    assert shown == ["src", "src/main.py", "visible.txt"]
    everything = sorted(_paths(session.list_directory(".", depth=3, include_hidden=True)))
    assert everything == [
        ".config",
        ".config/settings.json",
        ".env",
        "src",
        "src/.cache",
        "src/.cache/blob",
        "src/main.py",
        "visible.txt",
    ]


@clause(
    "LIST-007",
    MUST,
    requires={"list_directory"},
    text="max_entries cuts a page with truncated=True and a next_cursor; following the cursors "
    "returns the whole listing exactly once, in order, and the last page has no cursor and "
    "truncated=False.",
    rationale="Paging that skips or repeats entries gives the agent a wrong picture of large "
    "directories.",
)
def test_paging_covers_the_listing(session, disk):
    for i in range(8):
        disk.write(f"file{i}.txt", "x\n")
    for name in ("d1", "d2"):
        disk.mkdir(name)
    full = _paths(session.list_directory("."))
    assert sorted(full) == sorted([*(f"file{i}.txt" for i in range(8)), "d1", "d2"])
    pages = _all_pages(session, max_entries=3)
    assert [len(page.entries) for page in pages] == [3, 3, 3, 1]
    for page in pages[:-1]:
        assert page.truncated is True and page.next_cursor
    assert pages[-1].truncated is False and pages[-1].next_cursor is None
    assert [path for page in pages for path in _paths(page)] == full
    # Boundaries: pages that end exactly at the last entry, and one page of all of them.
    for size, counts in ((5, [5, 5]), (10, [10])):
        exact = _all_pages(session, max_entries=size)
        assert [len(page.entries) for page in exact] == counts, size
        assert exact[-1].truncated is False and exact[-1].next_cursor is None, size
        assert [path for page in exact for path in _paths(page)] == full, size
    whole = session.list_directory(".", max_entries=50)
    assert _paths(whole) == full and whole.next_cursor is None and whole.truncated is False


@clause(
    "LIST-008",
    MUST,
    requires={"list_directory"},
    text="Paging with depth > 1 returns the whole tree listing exactly once, in order, "
    "including when a page ends inside a subdirectory.",
    rationale="A cursor that only knows the top level restarts or skips a subdirectory cut "
    "by a page boundary.",
)
def test_paging_through_subdirectories(session, disk):
    for rel in ("a/x1.txt", "a/x2.txt", "a/b/y1.txt", "a/b/y2.txt", "c/z.txt", "t1.txt", "t2.txt"):
        disk.write(rel, "x\n")
    full = _paths(session.list_directory(".", depth=3))
    tree = ["a", "a/x1.txt", "a/x2.txt", "a/b", "a/b/y1.txt", "a/b/y2.txt", "c", "c/z.txt"]
    assert sorted(full) == sorted([*tree, "t1.txt", "t2.txt"])
    for size in (1, 2, 3, 4):
        pages = _all_pages(session, max_entries=size, depth=3)
        assert [path for page in pages for path in _paths(page)] == full, size


@clause(
    "LIST-009",
    MUST,
    requires={"list_directory"},
    text="A cursor resumes right after the last entry of its page even when entries were "
    "added meanwhile: no entry of an earlier page comes again, and no original entry is "
    "skipped.",
    rationale="Directories change while an agent pages through them (builds, other tools); an "
    "offset cursor then repeats or loses entries.",
)
def test_cursor_resumes_exactly_after_additions(session, disk):
    originals = [f"f{i:02d}" for i in range(10)]
    for name in originals:
        disk.write(name, "x\n")
    first = session.list_directory(".", max_entries=4)
    assert _names(first) == originals[:4]
    for name in ("a-new", "e-new", "f015", "z-new"):
        disk.write(name, "x\n")
    disk.mkdir("new-dir")
    seen = _names(first)
    cursor = first.next_cursor
    for _ in range(20):
        page = session.list_directory(".", max_entries=4, cursor=cursor)
        seen += _names(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert cursor is None, "the cursor never runs out"
    assert len(seen) == len(set(seen)), f"an entry came twice: {seen}"
    assert [name for name in seen if name in originals] == originals
    assert not {"a-new", "e-new", "f015", "new-dir"} & set(seen[4:]), seen


@clause(
    "LIST-010",
    MUST,
    requires={"list_directory"},
    text="A cursor the implementation never issued (random text, an empty token, NUL bytes) "
    "fails with INVALID_ARGUMENT and changes nothing.",
    rationale="Silently restarting from the top on a bad cursor makes an agent's paging loop "
    "forever or repeat entries.",
)
def test_invalid_cursor(session, disk):
    for i in range(5):
        disk.write(f"f{i}.txt", "x\n")
    before = disk.snapshot()
    # Positive control: a cursor the implementation issued continues the listing.
    first = session.list_directory(".", max_entries=2)
    assert first.next_cursor, "a page of 2 of 5 entries has no cursor"
    second = session.list_directory(".", max_entries=2, cursor=first.next_cursor)
    assert _names(first) + _names(second) == ["f0.txt", "f1.txt", "f2.txt", "f3.txt"]
    for cursor in ("not a cursor!", "{}", "\0\0\0", "%%%%", "Zm9vYmFy", "x" * 300, ""):
        with raises_code("INVALID_ARGUMENT"):
            session.list_directory(".", max_entries=2, cursor=cursor)
    disk.assert_unchanged(before)


@clause(
    "LIST-011",
    SHOULD,
    requires={"list_directory"},
    text="A damaged cursor (cut short, or one character changed) or one issued for another "
    "listing (another directory, depth or hidden flag) fails with INVALID_ARGUMENT.",
    rationale="A cursor applied to the wrong listing resumes at an arbitrary point and the "
    "agent never learns entries were skipped.",
)
def test_damaged_or_foreign_cursor(session, disk):
    for i in range(5):
        disk.write(f"f{i}.txt", "x\n")
        disk.write(f"sub/g{i}.txt", "x\n")
    cursor = session.list_directory(".", max_entries=2).next_cursor
    assert cursor
    flipped = cursor[:-1] + ("A" if cursor[-1] != "A" else "B")
    before = disk.snapshot()
    for bad in (cursor[: len(cursor) // 2], flipped):
        with raises_code("INVALID_ARGUMENT"):
            session.list_directory(".", max_entries=2, cursor=bad)
    for path, options in (("sub", {}), (".", {"depth": 2}), (".", {"include_hidden": True})):
        with raises_code("INVALID_ARGUMENT"):
            session.list_directory(path, max_entries=2, cursor=cursor, **options)
    disk.assert_unchanged(before)


@clause(
    "LIST-012",
    MUST,
    requires={"list_directory", "confinement"},
    text="Listing a path outside the root ('..', an absolute path outside, a symlink to an "
    "outside directory) fails with OUTSIDE_WORKSPACE and changes nothing.",
    rationale="A listing of '..' or of a planted link maps the rest of the disk for the agent.",
)
def test_path_is_confined(session, disk, alias):
    (alias.outside / "secret.txt").write_text("secret\n")
    disk.write("inside.txt", "x\n")
    disk.mkdir("sub")
    # Positive control: the same call, through a relative path that climbs and an absolute
    # path, both inside, lists the root.
    assert "inside.txt" in _names(session.list_directory("sub/.."))
    assert "inside.txt" in _names(session.list_directory(str(disk.root)))
    paths = escaping_paths(alias, {"out": alias.outside, "nested/deeper-out": "../../outside"})
    before = disk.snapshot()
    for path in paths:
        with raises_code("OUTSIDE_WORKSPACE"):
            session.list_directory(path)
    disk.assert_unchanged(before)


@clause(
    "LIST-013",
    MUST,
    requires={"list_directory"},
    text="Symlink loops (a self-link, two links to each other, a link to an ancestor) do not "
    "hang a deep listing: it returns within seconds.",
    rationale="A lister that enters links loops forever on a link to '..'.",
)
def test_symlink_loops_do_not_hang(session, disk, alias, symlinks):
    disk.write("sub/a.txt", "x\n")
    # Positive control, outside the bound: the same listing without loops. A server that
    # starts on first use has started; its start is not the listing the bound is about.
    assert "sub/a.txt" in _paths(session.list_directory(".", depth=8))
    loops = plant_symlink_loops(disk, alias)
    before = disk.snapshot()
    result = within(10, lambda: session.list_directory(".", depth=8), what="list_directory")
    paths = _paths(result)
    assert "sub/a.txt" in paths
    assert not [p for p in paths if p.startswith(loops)], paths
    disk.assert_unchanged(before)


@clause(
    "LIST-014",
    MUST,
    requires={"list_directory"},
    text="An entry that is neither a file, a directory nor a symlink (a FIFO) is listed with "
    "type 'other', and listing it does not block.",
    rationale="Opening a FIFO to inspect it blocks forever; calling it a file invites a Read "
    "that hangs.",
)
def test_other_entries(session, disk):
    if not hasattr(os, "mkfifo"):
        pytest.skip("the platform has no FIFOs")
    disk.write("plain.txt", "x\n")
    # Positive control, outside the bound (a server's start is not the listing): the
    # directory lists before the FIFO is made.
    assert "plain.txt" in _by_name(session.list_directory("."))
    os.mkfifo(disk.path("pipe"))
    entries = within(10, lambda: _by_name(session.list_directory(".")), what="list_directory")
    assert entries["pipe"].type == "other"
    assert entries["plain.txt"].type == "file"


@clause(
    "LIST-015",
    SHOULD,
    requires={"list_directory"},
    text="Entries of a subdirectory's listing carry paths relative to the workspace root "
    "('src/a.py' when listing 'src'), for relative and absolute path arguments alike.",
    rationale="Every other tool takes root-relative paths; a path relative to the listed "
    "directory names another file when passed on.",
)
def test_entry_paths_are_root_relative(session, disk):
    disk.write("src/a.py", "x\n")
    disk.write("src/pkg/b.py", "x\n")
    expected = ["src/a.py", "src/pkg", "src/pkg/b.py"]
    assert sorted(_paths(session.list_directory("src", depth=2))) == expected
    absolute = str(disk.root / "src")
    assert sorted(_paths(session.list_directory(absolute, depth=2))) == expected


@clause(
    "LIST-016",
    SHOULD,
    requires={"list_directory"},
    text="Listing a directory that does not exist fails with NOT_FOUND.",
    rationale="An empty listing for a missing directory makes the agent believe it exists.",
)
def test_missing_directory_is_not_found(session, disk):
    disk.write("a.txt", "x\n")
    disk.write("such-dir/b.txt", "x\n")
    before = disk.snapshot()
    # Positive control: a directory that exists is listed.
    assert _names(session.list_directory("such-dir")) == ["b.txt"]
    with raises_code("NOT_FOUND"):
        session.list_directory("no-such-dir")
    disk.assert_unchanged(before)
