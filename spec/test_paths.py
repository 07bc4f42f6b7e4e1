"""PATH: confinement to the workspace root, symlinks, aliases, hard links (DESIGN §4 "Paths")."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from editspec.reference import EditSpec
from editspec.spec import (
    MUST,
    SHOULD,
    Unsafe,
    WrongBehaviour,
    call_at,
    clause,
    count_mutations,
    prepare_change,
    raises_any_code,
    raises_code,
    within,
)
from editspec.spec.fixtures import Snapshot, differences

SECRET = b"TOP SECRET: outside the workspace\n"
INSIDE = "inside the root\n"


def _secret(alias):
    path = alias.outside / "secret.txt"
    path.write_bytes(SECRET)
    return path


# -- positive controls: the same kind of call succeeding inside the root --------------------
#
# A clause that expects OUTSIDE_WORKSPACE first reads or writes an inside file through a path
# of the same shape (relative or absolute, same depth), so a tool that refuses everything (a
# server started in another directory, an unmapped tool, a dead session) fails the control
# instead of passing the clause.


def _control_read(session, disk, path: str, rel: str | None = None) -> None:
    """Reading ``path`` (naming the inside file ``rel``) returns that file's bytes."""
    rel = rel if rel is not None else path
    disk.write(rel, INSIDE)
    assert session.read(path).content == INSIDE, f"control: read({path!r}) of an inside file"


def _control_write(session, disk, path: str, rel: str | None = None) -> None:
    """Writing ``path`` (naming ``rel`` inside the root) puts the bytes at ``rel``."""
    rel = rel if rel is not None else path
    payload = f"control write of {path}\n"
    session.write(path, payload)
    assert disk.read(rel) == payload.encode(), f"control: write({path!r}) of an inside file"


def _control_edit(session, disk, path: str, rel: str | None = None) -> None:
    """Editing ``path`` (naming the inside file ``rel``) changes that file."""
    rel = rel if rel is not None else path
    disk.write(rel, "TOP SECRET inside\n")
    prepare_change(session, path)
    session.edit(path, [EditSpec("TOP SECRET", "public")])
    assert disk.read(rel) == b"public inside\n", f"control: edit({path!r}) of an inside file"


# -- refusals: a safe refusal with another code is wrong-code; only an escape is unsafe ----


def _part(disk, snapshot: Snapshot, *, inside: bool) -> Snapshot:
    """The names of ``snapshot`` inside the root, or those next to it (outside)."""
    root = os.path.relpath(disk.root, disk.base).replace(os.sep, "/")
    return Snapshot(
        {
            rel: entry
            for rel, entry in snapshot.entries.items()
            if (rel == root or rel.startswith(root + "/")) == inside
        }
    )


def _outside(disk) -> Snapshot:
    """Every name next to the root (the clause's base, minus the root and the state dir)."""
    return _part(disk, disk.snapshot(), inside=False)


@contextmanager
def _refused(disk, what: str, code: str = "OUTSIDE_WORKSPACE") -> Iterator[None]:
    """The block's call must fail with ``code``.

    Another code (or none) is a safe refusal: wrong-code. A success is unsafe when the
    disk outside the root changed or the call was a read (it returned bytes that only
    exist outside); a write that succeeded without reaching outside is wrong-behaviour.
    """
    before = _outside(disk)
    try:
        with raises_code(code):
            yield
    except Unsafe:
        changes = differences(before, _outside(disk))
        if changes:
            raise Unsafe(
                f"{what} succeeded and changed the disk outside the root: " + "; ".join(changes)
            ) from None
        if what.startswith("read("):
            raise Unsafe(f"{what} succeeded: it returned bytes from outside the root") from None
        raise WrongBehaviour(
            f"{what} succeeded instead of failing with {code} (nothing outside the root changed)"
        ) from None


def _assert_no_escape(disk, before: Snapshot) -> None:
    """Nothing changed: a change outside the root is unsafe, one inside it wrong-behaviour."""
    after = disk.snapshot()
    outside = differences(_part(disk, before, inside=False), _part(disk, after, inside=False))
    inside = differences(_part(disk, before, inside=True), _part(disk, after, inside=True))
    if outside:
        raise Unsafe("the disk outside the root changed:\n  " + "\n  ".join(outside))
    if inside:
        raise WrongBehaviour("a refused call changed the root:\n  " + "\n  ".join(inside))


def _fails_cleanly(action: Callable[[], object], what: str) -> None:
    """The call fails with a code from the table, and does so within 10 seconds."""

    def run() -> None:
        with raises_any_code():
            action()

    within(10, run, what=what)


@clause(
    "PATH-001",
    MUST,
    requires={"read"},
    text="A relative path resolves against the workspace root, whatever the process's current "
    "directory.",
    rationale="Resolving against the current directory reads or writes a different project's "
    "file when the tool runs from elsewhere.",
)
def test_relative_path_resolves_against_root(session, disk, alias, monkeypatch):
    disk.write("a.txt", "inside the root\n")
    (alias.outside / "a.txt").write_text("same name, current directory\n")
    monkeypatch.chdir(alias.outside)
    assert session.read("a.txt").content == "inside the root\n"


@clause(
    "PATH-002",
    MUST,
    requires={"read", "write"},
    text="An absolute path inside the root names the same file as its relative form, for reads "
    "and writes.",
    rationale="Agents quote absolute paths from tool output; rejecting them or resolving them "
    "differently splits one file into two.",
)
def test_absolute_path_inside_root(session, disk):
    disk.write("sub/a.txt", "one\n")
    absolute = str(disk.root / "sub" / "a.txt")
    assert session.read(absolute).content == "one\n"
    session.write(str(disk.root / "sub" / "b.txt"), "two\n")
    assert disk.read("sub/b.txt") == b"two\n"


_DOTDOT_ESCAPES = (
    "../outside/secret.txt",
    "sub/../../outside/secret.txt",
    "./../outside/secret.txt",
)


@clause(
    "PATH-003",
    MUST,
    requires={"read", "confinement"},
    text="A read of a path whose '..' components climb out of the root fails with "
    "OUTSIDE_WORKSPACE.",
    rationale="Path traversal is the oldest escape there is; an agent told to read "
    "'../../.ssh/id_rsa' must be refused.",
)
def test_dotdot_escape_on_read(session, disk, alias):
    _secret(alias)
    disk.mkdir("sub")
    _control_read(session, disk, "sub/../a.txt", "a.txt")
    _control_read(session, disk, "./sub/../b.txt", "b.txt")
    before = disk.snapshot()
    for path in _DOTDOT_ESCAPES:
        with _refused(disk, f"read({path!r})"):
            session.read(path)
    _assert_no_escape(disk, before)


@clause(
    "PATH-004",
    MUST,
    requires={"write", "confinement"},
    text="A write to a path whose '..' components climb out of the root fails with "
    "OUTSIDE_WORKSPACE and creates or changes nothing, inside or outside.",
    rationale="A write that escapes can plant files anywhere the process may write (shell "
    "profiles, CI configuration).",
)
def test_dotdot_escape_on_write(session, disk, alias):
    _secret(alias)
    disk.mkdir("sub")
    _control_write(session, disk, "sub/../made.txt", "made.txt")
    _control_write(session, disk, "./sub/made.txt", "sub/made.txt")
    before = disk.snapshot()
    for path in (*_DOTDOT_ESCAPES, "../outside/new.txt", "../planted.txt"):
        with _refused(disk, f"write({path!r})"):
            session.write(path, "pwned\n")
    _assert_no_escape(disk, before)


@clause(
    "PATH-005",
    MUST,
    requires={"edit", "confinement"},
    text="An edit of a path outside the root ('..' or absolute) fails with OUTSIDE_WORKSPACE "
    "and leaves the outside file unchanged.",
    rationale="Edit is a write; a confinement check only on Write leaves Edit as the way out.",
)
def test_escape_on_edit(session, disk, alias):
    secret = _secret(alias)
    disk.mkdir("sub")
    _control_edit(session, disk, "sub/../inside.txt", "inside.txt")
    _control_edit(session, disk, str(disk.root / "sub" / "inside.txt"), "sub/inside.txt")
    before = disk.snapshot()
    for path in ("../outside/secret.txt", str(secret)):
        with _refused(disk, f"edit({path!r})"):
            session.edit(path, [EditSpec("TOP SECRET", "public")])
        created = path.replace("secret", "created")
        with _refused(disk, f"edit({created!r})"):
            session.edit(created, [EditSpec("", "new file\n")])
    _assert_no_escape(disk, before)


@clause(
    "PATH-006",
    MUST,
    requires={"read", "confinement"},
    text="A read of an absolute path outside the root fails with OUTSIDE_WORKSPACE.",
    rationale="Absolute paths bypass any check that only looks for '..'.",
)
def test_absolute_outside_on_read(session, disk, alias):
    secret = _secret(alias)
    _control_read(session, disk, str(disk.root / "a.txt"), "a.txt")
    before = disk.snapshot()
    for path in (str(secret), "/etc/passwd"):
        with _refused(disk, f"read({path!r})"):
            session.read(path)
    _assert_no_escape(disk, before)


@clause(
    "PATH-007",
    MUST,
    requires={"write", "confinement"},
    text="A write to an absolute path outside the root fails with OUTSIDE_WORKSPACE and creates "
    "or changes nothing.",
    rationale="Absolute paths bypass any check that only looks for '..'.",
)
def test_absolute_outside_on_write(session, disk, alias):
    secret = _secret(alias)
    _control_write(session, disk, str(disk.root / "made.txt"), "made.txt")
    before = disk.snapshot()
    for path in (str(secret), str(alias.outside / "new.txt")):
        with _refused(disk, f"write({path!r})"):
            session.write(path, "pwned\n")
    _assert_no_escape(disk, before)


@clause(
    "PATH-008",
    MUST,
    requires={"read", "write", "confinement"},
    text="A sibling directory whose name starts with the root's name (root '/ws', sibling "
    "'/ws_evil') is outside the root.",
    rationale="A string-prefix containment check accepts '/ws_evil/x' for root '/ws' "
    "(CVE-2025-53110).",
)
def test_prefix_sibling_is_outside(session, disk):
    sibling = disk.root.parent / (disk.root.name + "_evil")
    sibling.mkdir()
    (sibling / "secret.txt").write_bytes(SECRET)
    disk.mkdir("sub")
    for path, rel in ((str(disk.root / "a.txt"), "a.txt"), ("sub/../b.txt", "b.txt")):
        _control_read(session, disk, path, rel)
        prepare_change(session, path)
        _control_write(session, disk, path, rel)
    before = disk.snapshot()
    for path in (
        str(sibling / "secret.txt"),
        f"../{sibling.name}/secret.txt",
    ):
        with _refused(disk, f"read({path!r})"):
            session.read(path)
        with _refused(disk, f"write({path!r})"):
            session.write(path, "pwned\n")
    with _refused(disk, "write(<sibling>/new.txt)"):
        session.write(str(sibling / "new.txt"), "pwned\n")
    _assert_no_escape(disk, before)


@clause(
    "PATH-009",
    MUST,
    requires={"read", "confinement"},
    text="A read through a symlink inside the root whose target is outside fails with "
    "OUTSIDE_WORKSPACE.",
    rationale="A symlink in a cloned repository is the easiest way to point a tool at the "
    "user's secrets.",
)
def test_symlink_to_outside_file_on_read(session, disk, alias):
    secret = _secret(alias)
    alias.symlink("innocent.txt", secret)
    alias.symlink("relative.txt", "../outside/secret.txt")
    _control_read(session, disk, "plain.txt")
    before = disk.snapshot()
    for path in ("innocent.txt", "relative.txt"):
        with _refused(disk, f"read({path!r})"):
            session.read(path)
    _assert_no_escape(disk, before)


@clause(
    "PATH-010",
    MUST,
    requires={"write", "confinement"},
    text="A write through a symlink whose target is outside fails with OUTSIDE_WORKSPACE; the "
    "target is unchanged and the link stays a link.",
    rationale="Writing through a planted link overwrites files outside the project.",
)
def test_symlink_to_outside_file_on_write(session, disk, alias):
    secret = _secret(alias)
    alias.symlink("innocent.txt", secret)
    _control_write(session, disk, "plain.txt")
    before = disk.snapshot()
    with _refused(disk, "write('innocent.txt')"):
        session.write("innocent.txt", "pwned\n")
    _assert_no_escape(disk, before)
    assert disk.is_symlink("innocent.txt")


@clause(
    "PATH-011",
    MUST,
    requires={"edit", "confinement"},
    text="An edit through a symlink whose target is outside fails with OUTSIDE_WORKSPACE and "
    "the target is unchanged.",
    rationale="Edit must apply the same confinement as Write, symlinks included.",
)
def test_symlink_to_outside_file_on_edit(session, disk, alias):
    secret = _secret(alias)
    alias.symlink("innocent.txt", secret)
    _control_edit(session, disk, "plain.txt")
    before = disk.snapshot()
    with _refused(disk, "edit('innocent.txt')"):
        session.edit("innocent.txt", [EditSpec("TOP SECRET", "public")])
    _assert_no_escape(disk, before)


@clause(
    "PATH-012",
    MUST,
    requires={"read", "write", "confinement"},
    text="A path through a symlinked directory whose target is outside is OUTSIDE_WORKSPACE for "
    "reads and writes, and nothing is created in the target directory.",
    rationale="A directory link moves every path beneath it out of the root at once.",
)
def test_symlinked_directory_to_outside(session, disk, alias):
    _secret(alias)
    alias.symlink("vendor", alias.outside)
    _control_read(session, disk, "lib/inside.txt")
    prepare_change(session, "lib/inside.txt")
    _control_write(session, disk, "lib/inside.txt")
    _control_write(session, disk, "lib/new.txt")
    before = disk.snapshot()
    with _refused(disk, "read('vendor/secret.txt')"):
        session.read("vendor/secret.txt")
    with _refused(disk, "write('vendor/secret.txt')"):
        session.write("vendor/secret.txt", "pwned\n")
    with _refused(disk, "write('vendor/new.txt')"):
        session.write("vendor/new.txt", "pwned\n")
    _assert_no_escape(disk, before)


@clause(
    "PATH-013",
    MUST,
    requires={"read", "write", "confinement"},
    text="A symlink to the outside is refused at any depth of the path (a/b/c/link/...).",
    rationale="Checking only the first or last component misses links in the middle.",
)
def test_symlink_at_depth(session, disk, alias):
    _secret(alias)
    disk.mkdir("a/b/c")
    alias.symlink("a/b/c/link", alias.outside)
    alias.symlink("a/b/c/file-link.txt", alias.outside / "secret.txt")
    for path in ("a/b/c/real/inside.txt", "a/b/c/plain.txt"):
        _control_read(session, disk, path)
        prepare_change(session, path)
        _control_write(session, disk, path)
    _control_write(session, disk, "a/b/c/real/new.txt")
    before = disk.snapshot()
    for path in ("a/b/c/link/secret.txt", "a/b/c/file-link.txt"):
        with _refused(disk, f"read({path!r})"):
            session.read(path)
        with _refused(disk, f"write({path!r})"):
            session.write(path, "pwned\n")
    with _refused(disk, "write('a/b/c/link/new.txt')"):
        session.write("a/b/c/link/new.txt", "pwned\n")
    _assert_no_escape(disk, before)


@clause(
    "PATH-014",
    MUST,
    requires={"write", "confinement"},
    text="A write through a dangling symlink whose target is outside and does not exist yet fails "
    "with OUTSIDE_WORKSPACE and does not create the target.",
    rationale="The 'file does not exist yet' branch that skips the check is the classic bypass "
    "(CVE-2025-53109).",
)
def test_dangling_symlink_to_outside(session, disk, alias):
    alias.symlink("config.txt", alias.outside / "planted.txt")
    _control_write(session, disk, "plain.txt")
    before = disk.snapshot()
    with _refused(disk, "write('config.txt')"):
        session.write("config.txt", "pwned\n")
    _assert_no_escape(disk, before)
    assert not (alias.outside / "planted.txt").exists()


@clause(
    "PATH-015",
    MUST,
    requires={"write", "confinement"},
    text="A write below a dangling directory symlink whose target is outside fails with "
    "OUTSIDE_WORKSPACE and creates no directory or file outside.",
    rationale="Creating missing parents through a dangling link builds a directory tree outside "
    "the root.",
)
def test_dangling_directory_symlink_to_outside(session, disk, alias):
    alias.symlink("build", alias.outside / "not-yet")
    disk.mkdir("real/deeper")
    for path in ("real/out.txt", "real/deeper/out.txt"):
        _control_write(session, disk, path)
    before = disk.snapshot()
    for path in ("build/out.txt", "build/deeper/out.txt"):
        with _refused(disk, f"write({path!r})"):
            session.write(path, "pwned\n")
    _assert_no_escape(disk, before)
    assert not (alias.outside / "not-yet").exists()


@clause(
    "PATH-016",
    MUST,
    requires={"write", "confinement"},
    text="A new file whose missing parent directories lie below a symlink to the outside fails "
    "with OUTSIDE_WORKSPACE: the nearest existing ancestor is resolved, then the tail checked.",
    rationale="Checking only the (missing) file's own path lets 'link/new/dir/file' create "
    "directories outside.",
)
def test_missing_parents_below_outside_link(session, disk, alias):
    alias.symlink("vendor", alias.outside)
    disk.mkdir("lib/new/dir")
    _control_write(session, disk, "lib/new/dir/file.txt")
    before = disk.snapshot()
    with _refused(disk, "write('vendor/new/dir/file.txt')"):
        session.write("vendor/new/dir/file.txt", "pwned\n")
    _assert_no_escape(disk, before)


@clause(
    "PATH-017",
    MUST,
    requires={"read", "write", "confinement"},
    text="A chain of symlinks that ends outside the root (inside link -> inside link -> outside) "
    "is OUTSIDE_WORKSPACE.",
    rationale="Resolving one level of links and checking that is not resolving the path.",
)
def test_symlink_chain_to_outside(session, disk, alias):
    secret = _secret(alias)
    alias.symlink("hop2.txt", secret)
    alias.symlink("hop1.txt", "hop2.txt")
    _control_read(session, disk, "plain.txt")
    prepare_change(session, "plain.txt")
    _control_write(session, disk, "plain.txt")
    before = disk.snapshot()
    with _refused(disk, "read('hop1.txt')"):
        session.read("hop1.txt")
    with _refused(disk, "write('hop1.txt')"):
        session.write("hop1.txt", "pwned\n")
    _assert_no_escape(disk, before)


@clause(
    "PATH-018",
    MUST,
    requires={"read", "write"},
    text="A symlink loop fails with an error code from the table within seconds, and nothing "
    "changes on disk.",
    rationale="A resolver that follows links without a bound hangs the agent or recurses until "
    "it crashes.",
)
def test_symlink_loop_fails_cleanly(session, disk, alias):
    alias.symlink("loop1", "loop2")
    alias.symlink("loop2", "loop1")
    alias.symlink("self", "self")
    _control_read(session, disk, "plain.txt")
    _control_write(session, disk, "new.txt")
    before = disk.snapshot()
    for path in ("loop1", "self", "self/inner.txt", "loop2/x/y.txt"):
        _fails_cleanly(lambda p=path: session.read(p), f"read({path!r})")
        _fails_cleanly(lambda p=path: session.write(p, "x\n"), f"write({path!r})")
    disk.assert_unchanged(before)


@clause(
    "PATH-019",
    MUST,
    requires={"read", "write"},
    text="A path containing a NUL byte fails with INVALID_ARGUMENT.",
    rationale="C file APIs truncate at NUL, so 'a.txt\\0.png' passes a suffix check and opens "
    "'a.txt'.",
)
def test_nul_byte_is_invalid(session, disk):
    _control_read(session, disk, "a.txt")
    _control_write(session, disk, "b.txt")
    before = disk.snapshot()
    for path in ("a.txt\0.png", "\0", "sub\0/b.txt"):
        with raises_code("INVALID_ARGUMENT"):
            session.read(path)
        with raises_code("INVALID_ARGUMENT"):
            session.write(path, "y\n")
    disk.assert_unchanged(before)


@clause(
    "PATH-020",
    MUST,
    requires={"read", "write"},
    text="A path with '..' components that stays inside the root is accepted and names the file "
    "it leads to.",
    rationale="Over-eager rejection of every '..' breaks ordinary relative paths that agents "
    "produce ('src/../README.md').",
)
def test_dotdot_staying_inside_is_allowed(session, disk):
    disk.write("README.md", "readme\n")
    disk.mkdir("src")
    assert session.read("src/../README.md").content == "readme\n"
    session.write("src/../NEW.md", "new\n")
    assert disk.read("NEW.md") == b"new\n"


@clause(
    "PATH-021",
    MUST,
    requires={"read"},
    text="A symlink inside the root to a file inside the root (relative or absolute target) reads "
    "as its target.",
    rationale="Repositories use internal links (docs, shared configs); refusing them breaks "
    "legitimate work.",
)
def test_internal_symlink_reads_target(session, disk, alias):
    disk.write("real.txt", "the target\n")
    alias.symlink("relative-link.txt", "real.txt")
    alias.symlink("absolute-link.txt", disk.root / "real.txt")
    for path in ("relative-link.txt", "absolute-link.txt"):
        assert session.read(path).content == "the target\n"


@clause(
    "PATH-022",
    MUST,
    requires={"write"},
    text="Writing to a symlink inside the root that points to a file inside the root writes the "
    "target and keeps the link a link.",
    rationale="Renaming a temp file over the link replaces the link with a regular file and "
    "silently forks the content.",
)
def test_write_through_internal_symlink(session, disk, alias):
    disk.write("real.txt", "old\n")
    alias.symlink("link.txt", "real.txt")
    prepare_change(session, "link.txt")
    session.write("link.txt", "new\n")
    assert disk.is_symlink("link.txt")
    assert os.readlink(disk.path("link.txt")) == "real.txt"
    assert disk.read("real.txt") == b"new\n"
    disk.assert_no_leftovers()


@clause(
    "PATH-023",
    MUST,
    requires={"edit"},
    text="Editing through a symlink inside the root edits the target and keeps the link a link.",
    rationale="Edit publishes by rename like Write and can break links the same way.",
)
def test_edit_through_internal_symlink(session, disk, alias):
    disk.write("real.py", "x = 1\n")
    alias.symlink("link.py", "real.py")
    prepare_change(session, "link.py")
    session.edit("link.py", [EditSpec("x = 1", "x = 2")])
    assert disk.is_symlink("link.py")
    assert disk.read("real.py") == b"x = 2\n"
    disk.assert_no_leftovers()


@clause(
    "PATH-024",
    MUST,
    requires={"read", "write", "read_before_write"},
    text="Two names of one file (a symlink and its target) share one read record: a full read "
    "under either name authorizes a write under the other.",
    rationale="Tracking by the spelled path makes aliases look unread, or worse, lets an alias "
    "skip the freshness check.",
)
def test_aliases_share_the_read_record(session, disk, alias):
    disk.write("real.txt", "v1\n")
    alias.symlink("link.txt", "real.txt")
    session.write("created.txt", "a new file needs no read\n")
    assert disk.read("created.txt") == b"a new file needs no read\n"
    with raises_code("NOT_READ"):  # the record is what authorizes: none yet under any name
        session.write("link.txt", "v0\n")
    assert disk.read("real.txt") == b"v1\n"
    session.read("link.txt")
    session.write("real.txt", "v2\n")
    assert disk.read("real.txt") == b"v2\n"
    session.read("real.txt")
    session.write("link.txt", "v3\n")
    assert disk.read("real.txt") == b"v3\n"


@clause(
    "PATH-025",
    MUST,
    requires={"read", "write", "stale_detection"},
    text="A change made after a read under one name is STALE for a write under another name of "
    "the same file.",
    rationale="Freshness keyed by the spelled path misses a change seen through an alias and "
    "overwrites it.",
)
def test_alias_does_not_bypass_staleness(session, disk, alias, external):
    disk.write("real.txt", "v1\n")
    alias.symlink("link.txt", "real.txt")
    disk.write("other.txt", "v1\n")
    session.read("other.txt")
    session.write("other.txt", "unchanged since the read: accepted\n")
    session.read("real.txt")
    external.write("real.txt", "edited elsewhere\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.write("link.txt", "v2\n")
    disk.assert_unchanged(before)


@clause(
    "PATH-026",
    MUST,
    requires={"write"},
    text="Hard links are distinct paths: replacing one rewrites only the named link, and the "
    "other link keeps the old bytes.",
    rationale="Atomic replace gives the named link a new inode; pretending otherwise leads "
    "tools to promise an update the other name never sees.",
)
def test_hard_link_replace_rewrites_only_named_link(session, disk, alias):
    disk.write("a.txt", "shared\n")
    alias.hardlink("b.txt", "a.txt")
    prepare_change(session, "a.txt")
    session.write("a.txt", "only a\n")
    assert disk.read("a.txt") == b"only a\n"
    assert disk.read("b.txt") == b"shared\n"


@clause(
    "PATH-027",
    SHOULD,
    requires={"write"},
    text="Replacing a file that has other hard links succeeds with a warning in the result.",
    rationale="The agent should learn that the other names of the file keep the old content.",
)
def test_hard_link_replace_warns(session, disk, alias):
    disk.write("a.txt", "shared\n")
    alias.hardlink("b.txt", "a.txt")
    prepare_change(session, "a.txt")
    result = session.write("a.txt", "only a\n")
    assert tuple(getattr(result, "warnings", ())), "no warning about the other hard link"


@clause(
    "PATH-028",
    SHOULD,
    requires={"read"},
    text="Results report the path relative to the root, '/'-separated and lexically normalized, "
    "for relative and absolute input alike.",
    rationale="Agents use the reported path in the next call; a different spelling for the "
    "same file confuses them and their logs.",
)
def test_reported_path_is_root_relative(session, disk):
    disk.write("sub/a.txt", "x\n")
    for path in ("sub/a.txt", "./sub//a.txt", "sub/../sub/a.txt", str(disk.root / "sub" / "a.txt")):
        assert session.read(path).path == "sub/a.txt", path


@clause(
    "PATH-029",
    SHOULD,
    requires={"write", "confinement", "python_fs"},
    text="A directory swapped for a symlink to the outside between the path check and the write "
    "does not redirect the write: nothing outside changes, at whatever step the swap happens, "
    "even when the outside file holds the same bytes as the inside one.",
    rationale="Check-then-use on path strings is a TOCTOU hole; walking with dir_fd and "
    "O_NOFOLLOW closes it. A decoy with the inside file's bytes passes any content "
    "re-verification, so only the walk itself can stop the escape.",
)
def test_directory_swap_does_not_redirect_write(session, disk, alias):
    disk.write("probe/target.txt", "old\n")
    prepare_change(session, "probe/target.txt")
    with count_mutations() as clean:
        session.write("probe/target.txt", "new\n")
    assert clean.mutations > 0, "the write made no mutating os call"
    for step in range(1, clean.mutations + 1):
        directory = f"d{step}"
        disk.write(f"{directory}/target.txt", "old\n")
        decoy = alias.outside / directory
        decoy.mkdir()
        # The same bytes as the inside file: a stale check cannot tell them apart.
        (decoy / "target.txt").write_bytes(b"old\n")
        prepare_change(session, f"{directory}/target.txt")
        outside_before = _outside_entries(disk)

        def swap(d: str = directory) -> None:
            os.rename(disk.path(d), disk.path(f"{d}-moved"))
            os.symlink(alias.outside / d, disk.path(d))

        try:
            with call_at(step, swap):
                session.write(f"{directory}/target.txt", "new\n")
        except Exception as exc:  # a refusal is fine if it is a coded one
            assert isinstance(getattr(exc, "code", None), str), f"step {step}: {exc!r}"
        assert _outside_entries(disk) == outside_before, f"swap before mutating call {step}"


def _outside_entries(disk):
    entries = disk.snapshot().entries
    return {rel: entry for rel, entry in entries.items() if rel.startswith("outside/")}


@clause(
    "PATH-030",
    MUST,
    requires={"read", "write", "confinement"},
    text="A symlinked directory inside the root that points to another directory inside it is "
    "usable: reads and writes through it reach the real directory.",
    rationale="Refusing every directory link breaks monorepos that link packages together.",
)
def test_internal_directory_link_is_usable(session, disk, alias):
    disk.write("packages/core/a.txt", "core\n")
    alias.symlink("core", "packages/core")
    assert session.read("core/a.txt").content == "core\n"
    session.write("core/new.txt", "made through the link\n")
    assert disk.read("packages/core/new.txt") == b"made through the link\n"
    assert disk.is_symlink("core")


@clause(
    "PATH-031",
    MUST,
    requires={"read", "confinement"},
    text="A path outside the root is OUTSIDE_WORKSPACE whether or not the outside file exists "
    "(never NOT_FOUND).",
    rationale="Answering NOT_FOUND for missing outside files and something else for existing "
    "ones lets an agent probe the disk beyond the root.",
)
def test_outside_denial_does_not_depend_on_existence(session, disk, alias):
    _secret(alias)
    disk.mkdir("sub")
    _control_read(session, disk, "sub/../a.txt", "a.txt")
    _control_read(session, disk, str(disk.root / "b.txt"), "b.txt")
    before = disk.snapshot()
    for path in ("../outside/missing.txt", str(alias.outside / "missing.txt"), "../../nowhere"):
        with _refused(disk, f"read({path!r})"):
            session.read(path)
    _assert_no_escape(disk, before)


@clause(
    "PATH-032",
    MUST,
    requires={"glob", "confinement"},
    text="Glob never follows a symlink: a link inside the root to a directory outside it is "
    "not entered, and no file outside the root is listed.",
    rationale="A search that follows links hands the agent the names (and then the contents) "
    "of files wherever a link points: a home directory, another project, /etc.",
)
def test_glob_does_not_follow_a_link_outside(session, disk, alias):
    _secret(alias)
    disk.write("inside.txt", "kept\n")
    alias.symlink("out", alias.outside)
    before = disk.snapshot()
    for pattern in ("**/*.txt", "out/*", "**/secret.txt"):
        paths = list(session.glob(pattern).paths)
        assert not [path for path in paths if path.startswith("out/")], (pattern, paths)
    assert "inside.txt" in session.glob("**/*.txt").paths
    disk.assert_unchanged(before)


@pytest.fixture(autouse=True)
def _symlinks_available(symlinks):
    """Symlinks are a precondition of this module; a platform without them cannot run it."""
