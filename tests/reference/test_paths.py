"""Path confinement and resolution (``reference/_paths.py``), on real temporary directories."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editspec.reference import FileSystem, ToolError, Workspace
from editspec.reference.paths._paths import MAX_LINK_HOPS, WorkspacePath, is_within, resolve


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_bytes(b"secret\n")
    (path / "dir").mkdir()
    return path


def _code(workspace: Workspace, path: str | os.PathLike[str]) -> str:
    with pytest.raises(ToolError) as info:
        resolve(workspace, path)
    return info.value.code


# -- plain paths -----------------------------------------------------------------------


def test_relative_path_resolves_under_the_root(workspace: Workspace, root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "main.py").write_bytes(b"print()\n")
    result = resolve(workspace, "src/main.py")
    assert result == WorkspacePath(
        requested="src/main.py",
        logical=str(root / "src" / "main.py"),
        real=str(root / "src" / "main.py"),
        relative="src/main.py",
        crossed_link=False,
        exists=True,
        kind="file",
        nlink=1,
    )
    assert result.canonical_key == str(root / "src" / "main.py")
    assert result.logical_relative == "src/main.py"


def test_absolute_path_inside_the_root_is_accepted(workspace: Workspace, root: Path) -> None:
    (root / "a.txt").write_bytes(b"a")
    assert resolve(workspace, str(root / "a.txt")).relative == "a.txt"


def test_pathlike_is_accepted(workspace: Workspace, root: Path) -> None:
    (root / "a.txt").write_bytes(b"a")
    assert resolve(workspace, Path("a.txt")).real == str(root / "a.txt")


def test_root_itself_is_a_directory(workspace: Workspace, root: Path) -> None:
    result = resolve(workspace, ".")
    assert (result.real, result.relative, result.kind, result.exists) == (
        str(root),
        ".",
        "dir",
        True,
    )


def test_dot_dot_inside_the_root_is_lexical(workspace: Workspace, root: Path) -> None:
    (root / "a").mkdir()
    (root / "b.txt").write_bytes(b"b")
    assert resolve(workspace, "a/../b.txt").relative == "b.txt"
    assert resolve(workspace, "../ws/b.txt").relative == "b.txt"


@pytest.mark.parametrize("path", ["", "a\0b", "\0"])
def test_empty_path_and_nul_bytes_are_invalid(workspace: Workspace, path: str) -> None:
    assert _code(workspace, path) == "INVALID_ARGUMENT"


def test_a_non_string_path_is_invalid(workspace: Workspace) -> None:
    assert _code(workspace, b"a.txt") == "INVALID_ARGUMENT"  # type: ignore[arg-type]


# -- escapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "a/../../outside", "../../etc"])
def test_dot_dot_escapes_are_refused(workspace: Workspace, outside: Path, path: str) -> None:
    assert _code(workspace, path) == "OUTSIDE_WORKSPACE"


def test_absolute_paths_outside_are_refused(workspace: Workspace, outside: Path) -> None:
    assert _code(workspace, str(outside / "secret.txt")) == "OUTSIDE_WORKSPACE"
    assert _code(workspace, str(outside / "new.txt")) == "OUTSIDE_WORKSPACE"
    assert _code(workspace, "/") == "OUTSIDE_WORKSPACE"
    assert _code(workspace, "/etc/passwd") == "OUTSIDE_WORKSPACE"


def test_sibling_sharing_the_root_prefix_is_outside(
    workspace: Workspace, root: Path, tmp_path: Path
) -> None:
    evil = tmp_path / (root.name + "_evil")
    evil.mkdir()
    (evil / "x.txt").write_bytes(b"x")
    assert str(evil).startswith(str(root))
    assert _code(workspace, str(evil / "x.txt")) == "OUTSIDE_WORKSPACE"
    assert _code(workspace, str(evil / "new.txt")) == "OUTSIDE_WORKSPACE"
    assert _code(workspace, f"../{evil.name}/x.txt") == "OUTSIDE_WORKSPACE"
    assert _code(workspace, str(evil)) == "OUTSIDE_WORKSPACE"


def test_is_within_compares_whole_components() -> None:
    assert is_within("/ws", "/ws")
    assert is_within("/ws/a", "/ws")
    assert not is_within("/ws_evil", "/ws")
    assert not is_within("/ws_evil/a", "/ws")
    assert not is_within("/w", "/ws")
    assert is_within("/anything", "/")


# -- symlinks --------------------------------------------------------------------------


def test_file_symlink_to_outside_is_refused(
    workspace: Workspace, root: Path, outside: Path
) -> None:
    (root / "link").symlink_to(outside / "secret.txt")
    assert _code(workspace, "link") == "OUTSIDE_WORKSPACE"


def test_directory_symlink_to_outside_is_refused_at_any_depth(
    workspace: Workspace, root: Path, outside: Path
) -> None:
    deep = root / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "out").symlink_to(outside)
    assert _code(workspace, "a/b/c/out") == "OUTSIDE_WORKSPACE"
    assert _code(workspace, "a/b/c/out/secret.txt") == "OUTSIDE_WORKSPACE"
    assert _code(workspace, "a/b/c/out/dir/new.txt") == "OUTSIDE_WORKSPACE"
    assert _code(workspace, "a/b/c/out/missing/new.txt") == "OUTSIDE_WORKSPACE"


def test_parent_directory_symlink_to_outside_is_refused(
    workspace: Workspace, root: Path, outside: Path
) -> None:
    (root / "parent").symlink_to(outside / "dir", target_is_directory=True)
    assert _code(workspace, "parent/new_file.txt") == "OUTSIDE_WORKSPACE"


def test_relative_symlink_climbing_out_is_refused(
    workspace: Workspace, root: Path, outside: Path
) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("../../outside/secret.txt")
    assert _code(workspace, "sub/up") == "OUTSIDE_WORKSPACE"


def test_chain_of_links_ending_outside_is_refused(
    workspace: Workspace, root: Path, outside: Path
) -> None:
    (root / "one").symlink_to("two")
    (root / "two").symlink_to("three")
    (root / "three").symlink_to(outside / "secret.txt")
    assert _code(workspace, "one") == "OUTSIDE_WORKSPACE"


def test_dangling_link_to_outside_is_refused(
    workspace: Workspace, root: Path, outside: Path
) -> None:
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    (root / "deeper").symlink_to(outside / "no" / "such" / "dir" / "f.txt")
    (root / "relative").symlink_to("../outside/new.txt")
    for name in ("dangling", "deeper", "relative"):
        assert _code(workspace, name) == "OUTSIDE_WORKSPACE"
    assert not (outside / "not-yet.txt").exists()


def test_dangling_link_climbing_through_a_missing_directory_is_refused(
    workspace: Workspace, root: Path
) -> None:
    (root / "sneaky").symlink_to("missing/../../outside/x")
    assert _code(workspace, "sneaky") == "OUTSIDE_WORKSPACE"
    (root / "odd").symlink_to("missing/../inside.txt")
    assert _code(workspace, "odd") == "NOT_FOUND"  # the kernel cannot walk out of "missing"


def test_link_leaving_and_reentering_the_root_resolves_inside(
    workspace: Workspace, root: Path
) -> None:
    (root / "a.txt").write_bytes(b"a")
    (root / "around").symlink_to(f"../{root.name}/a.txt")
    result = resolve(workspace, "around")
    assert (result.real, result.crossed_link) == (str(root / "a.txt"), True)


def test_in_root_alias_resolves_to_its_target(workspace: Workspace, root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_bytes(b"f")
    (root / "alias_dir").symlink_to("real", target_is_directory=True)
    (root / "alias_file").symlink_to("real/f.txt")
    via_dir = resolve(workspace, "alias_dir/f.txt")
    via_file = resolve(workspace, "alias_file")
    direct = resolve(workspace, "real/f.txt")
    assert via_dir.canonical_key == via_file.canonical_key == direct.canonical_key
    assert via_dir.logical_relative == "alias_dir/f.txt"
    assert via_file.logical_relative == "alias_file"
    assert via_dir.crossed_link and via_file.crossed_link and not direct.crossed_link


def test_dangling_in_root_link_resolves_to_its_missing_target(
    workspace: Workspace, root: Path
) -> None:
    (root / "later").symlink_to("sub/new.txt")
    result = resolve(workspace, "later")
    assert (result.real, result.exists, result.kind) == (
        str(root / "sub" / "new.txt"),
        False,
        "missing",
    )


@pytest.mark.parametrize("query", ["self", "ping", "ping/x", "dirloop/a/b"])
def test_symlink_loops_are_a_clean_error(workspace: Workspace, root: Path, query: str) -> None:
    (root / "self").symlink_to("self")
    (root / "ping").symlink_to("pong")
    (root / "pong").symlink_to("ping")
    (root / "dirloop").symlink_to("dirloop/a", target_is_directory=True)
    with pytest.raises(ToolError) as info:
        resolve(workspace, query)
    assert info.value.code == "INVALID_ARGUMENT"
    assert info.value.details["hops"] == MAX_LINK_HOPS + 1


def test_link_chains_up_to_the_limit_resolve(workspace: Workspace, root: Path) -> None:
    (root / "end.txt").write_bytes(b"end")
    (root / f"l{MAX_LINK_HOPS}").symlink_to("end.txt")
    for index in range(1, MAX_LINK_HOPS):
        (root / f"l{index}").symlink_to(f"l{index + 1}")
    assert resolve(workspace, "l1").real == str(root / "end.txt")
    (root / "l0").symlink_to("l1")
    assert _code(workspace, "l0") == "INVALID_ARGUMENT"


# -- new files -------------------------------------------------------------------------


def test_new_file_resolves_through_its_nearest_existing_ancestor(
    workspace: Workspace, root: Path
) -> None:
    (root / "a").mkdir()
    (root / "link_a").symlink_to("a", target_is_directory=True)
    result = resolve(workspace, "link_a/new/deeper/f.txt")
    assert result.real == str(root / "a" / "new" / "deeper" / "f.txt")
    assert (result.exists, result.kind, result.crossed_link) == (False, "missing", True)
    assert result.logical_relative == "link_a/new/deeper/f.txt"


def test_a_file_used_as_a_directory_is_not_found(workspace: Workspace, root: Path) -> None:
    (root / "f.txt").write_bytes(b"f")
    assert _code(workspace, "f.txt/child") == "NOT_FOUND"


class _DenyingFileSystem(FileSystem):
    """A port whose lstat refuses one directory's children (as EACCES would)."""

    def __init__(self, denied: str) -> None:
        super().__init__()
        self.denied = denied

    def lstat(self, path: str) -> os.stat_result:
        if os.path.dirname(path) == self.denied:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return super().lstat(path)


def test_a_denial_never_falls_into_the_new_file_branch(root: Path, state_dir: Path) -> None:
    (root / "locked").mkdir()
    workspace = Workspace(root, state_dir, fs=_DenyingFileSystem(str(root / "locked")))
    with pytest.raises(ToolError) as info:
        resolve(workspace, "locked/new.txt")
    assert info.value.code == "IO_ERROR"
    assert info.value.details["errno"] == errno.EACCES


def test_a_denial_outside_the_root_is_reported_as_outside(
    root: Path, state_dir: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside, target_is_directory=True)
    workspace = Workspace(root, state_dir, fs=_DenyingFileSystem(str(outside)))
    assert _code(workspace, "out/secret.txt") == "OUTSIDE_WORKSPACE"


# -- aliases of the root, hard links, the port -----------------------------------------


def test_absolute_path_through_an_alias_of_the_root(
    workspace: Workspace, root: Path, tmp_path: Path
) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "f.txt").write_bytes(b"f")
    (tmp_path / "root_alias").symlink_to(root, target_is_directory=True)
    (tmp_path / "sub_alias").symlink_to(root / "sub", target_is_directory=True)
    via_root = resolve(workspace, str(tmp_path / "root_alias" / "sub" / "f.txt"))
    assert via_root.real == str(root / "sub" / "f.txt")
    assert via_root.logical == str(root / "sub" / "f.txt")
    via_sub = resolve(workspace, str(tmp_path / "sub_alias" / "new.txt"))
    assert via_sub.real == str(root / "sub" / "new.txt")
    assert via_sub.logical_relative == "sub/new.txt"


def test_hard_links_are_distinct_paths_with_their_link_count(
    workspace: Workspace, root: Path
) -> None:
    (root / "one.txt").write_bytes(b"x")
    os.link(root / "one.txt", root / "two.txt")
    one, two = resolve(workspace, "one.txt"), resolve(workspace, "two.txt")
    assert one.canonical_key != two.canonical_key
    assert one.nlink == two.nlink == 2


def test_resolution_never_calls_realpath_on_user_paths(
    workspace: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "d").mkdir()
    (root / "link").symlink_to("d", target_is_directory=True)

    def forbidden(*args: object, **kwargs: object) -> str:
        raise AssertionError("os.path.realpath used on a user path")

    monkeypatch.setattr(os.path, "realpath", forbidden)
    monkeypatch.setattr(workspace.fs, "realpath", forbidden)
    assert resolve(workspace, "link/x").real == str(root / "d" / "x")


# -- case-folding and normalizing file systems -----------------------------------------


def test_case_insensitive_aliases_share_the_stored_spelling(fs: object) -> None:
    fs.is_case_sensitive = False  # type: ignore[attr-defined]
    fs.create_file("/ws/Sub/File.TXT", contents="x")  # type: ignore[attr-defined]
    workspace = Workspace("/ws", "/state", fs=FileSystem(secure_walk=False))
    keys = {
        resolve(workspace, name).canonical_key
        for name in ("sub/file.txt", "SUB/FILE.TXT", "Sub/File.TXT")
    }
    assert keys == {"/ws/Sub/File.TXT"}
    assert resolve(workspace, "SUB/file.txt").logical_relative == "SUB/file.txt"
    assert resolve(workspace, "sub/new.txt").real == "/ws/Sub/new.txt"


def test_case_sensitive_file_systems_keep_names_apart(fs: object) -> None:
    fs.is_case_sensitive = True  # type: ignore[attr-defined]
    fs.create_file("/ws/Name.txt", contents="x")  # type: ignore[attr-defined]
    workspace = Workspace("/ws", "/state", fs=FileSystem(secure_walk=False))
    lower = resolve(workspace, "name.txt")
    assert (lower.real, lower.exists) == ("/ws/name.txt", False)


class _NormalizingFileSystem(FileSystem):
    """A port that finds a name by its NFC form, as APFS and HFS+ do."""

    def lstat(self, path: str) -> os.stat_result:
        try:
            return super().lstat(path)
        except FileNotFoundError:
            directory, name = os.path.split(path)
            for entry in os.listdir(directory):
                if unicodedata.normalize("NFC", entry) == unicodedata.normalize("NFC", name):
                    return super().lstat(os.path.join(directory, entry))
            raise


def test_unicode_normalization_twins_share_the_stored_spelling(root: Path, state_dir: Path) -> None:
    stored = unicodedata.normalize("NFD", "café.txt")
    (root / stored).write_bytes(b"x")
    workspace = Workspace(root, state_dir, fs=_NormalizingFileSystem())
    typed = unicodedata.normalize("NFC", "café.txt")
    assert typed != stored
    result = resolve(workspace, typed)
    assert result.real == str(root / stored)
    assert result.exists


# -- property: random trees of directories and symlinks --------------------------------

_NAMES = ("a", "b", "c")
_component = st.sampled_from((*_NAMES, "..", "."))


@st.composite
def _trees(draw: st.DrawFn) -> list[tuple[str, tuple[str, ...], str]]:
    """Entries (kind, path under the root, link target): dirs, files and symlinks."""
    entries: list[tuple[str, tuple[str, ...], str]] = []
    paths = st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3).map(tuple)
    for _ in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["dir", "file", "link", "link", "link"]))
        target = ""
        if kind == "link":
            base = draw(st.sampled_from(["relative", "root", "outside", "sibling"]))
            names = {
                "relative": _component,
                "outside": st.sampled_from((*_NAMES, "back", "loop")),  # back: into the root
            }.get(base, st.sampled_from(_NAMES))
            parts = draw(st.lists(names, max_size=4))
            prefix = {
                "relative": "",
                "root": "<root>/",
                "outside": "<outside>/",
                "sibling": "<sibling>/",
            }[base]
            target = prefix + "/".join(parts) if parts or prefix else "."
        entries.append((kind, draw(paths), target))
    return entries


def _build(base: Path, entries: list[tuple[str, tuple[str, ...], str]]) -> Path:
    root = base / "ws"
    outside = base / "outside"
    sibling = base / "ws_sibling"
    for directory in (root, outside / "a", outside / "b", sibling / "a"):
        directory.mkdir(parents=True)
    (outside / "c").write_bytes(b"outside file")
    (outside / "back").symlink_to(root, target_is_directory=True)
    (outside / "loop").symlink_to(outside / "loop")
    for kind, parts, target in entries:
        path = root.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(path):
                continue
            if kind == "dir":
                path.mkdir()
            elif kind == "file":
                path.write_bytes(b"file")
            else:
                text = (
                    target.replace("<root>", str(root))
                    .replace("<outside>", str(outside))
                    .replace("<sibling>", str(sibling))
                )
                path.symlink_to(text)
        except OSError:
            continue  # a parent is a file or a dangling link: this entry is skipped
    return root


def _kernel_view(path: str) -> str:
    try:
        os.stat(path)
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "notdir"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "loop"
        raise
    return "ok"


@given(
    entries=_trees(),
    queries=st.lists(st.lists(_component, min_size=1, max_size=5), min_size=1, max_size=12),
)
def test_resolution_matches_the_kernel_and_never_leaves_the_root(
    tmp_path: Path,
    entries: list[tuple[str, tuple[str, ...], str]],
    queries: list[list[str]],
) -> None:
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    try:
        root = _build(base, entries)
        workspace = Workspace(root, base / "state")
        created = [
            os.path.relpath(os.path.join(directory, name), root)
            for directory, dirs, files in os.walk(root)
            for name in dirs + files
        ]
        for query in ["/".join(parts) for parts in queries] + created:
            _check_one(workspace, str(root), query)
    finally:
        shutil.rmtree(base)


def _check_one(workspace: Workspace, root: str, query: str) -> None:
    try:
        got: WorkspacePath | None = resolve(workspace, query)
        code = None
    except ToolError as exc:
        got, code = None, exc.code
    if got is not None:
        assert is_within(got.real, root), (query, got)  # never outside, whatever happens
    lexical = os.path.normpath(os.path.join(root, query))
    if not is_within(lexical, root):
        assert code == "OUTSIDE_WORKSPACE", (query, got, code)
        return
    kernel = _kernel_view(lexical)
    if kernel == "ok":
        real = os.path.realpath(lexical, strict=True)
        if is_within(real, root):
            assert got is not None, (query, code)  # every inside path resolves
            assert (got.real, got.exists) == (real, True), query
        else:
            assert code == "OUTSIDE_WORKSPACE", (query, got, code)
    elif kernel == "loop":
        assert code in ("INVALID_ARGUMENT", "OUTSIDE_WORKSPACE"), (query, got, code)
    elif kernel == "notdir":
        assert code in ("NOT_FOUND", "OUTSIDE_WORKSPACE"), (query, got, code)
    else:
        real = os.path.realpath(lexical)
        if got is not None:
            assert not got.exists and got.real == real, (query, got, real)
            assert not os.path.lexists(got.real)
        elif code == "OUTSIDE_WORKSPACE":
            assert not is_within(real, root), (query, real)
        else:
            assert code == "NOT_FOUND" and is_within(real, root), (query, code, real)


# -- trailing separators, loops beyond the root, undecidable case folding ---------------


def test_a_trailing_slash_names_a_directory(workspace: Workspace, root: Path) -> None:
    (root / "d").mkdir()
    (root / "f.txt").write_bytes(b"f")
    assert resolve(workspace, "d/").kind == "dir"
    assert _code(workspace, "f.txt/") == "NOT_FOUND"


def test_a_loop_outside_the_root_is_reported_as_outside(
    workspace: Workspace, root: Path, tmp_path: Path
) -> None:
    (tmp_path / "loop_a").symlink_to("loop_b")
    (tmp_path / "loop_b").symlink_to("loop_a")
    (root / "out").symlink_to(tmp_path / "loop_a")
    assert _code(workspace, "out") == "OUTSIDE_WORKSPACE"


def test_case_folding_is_looked_up_when_the_root_cannot_tell(fs: object) -> None:
    fs.is_case_sensitive = False  # type: ignore[attr-defined]
    fs.create_dir("/1")  # type: ignore[attr-defined]
    workspace = Workspace("/1", "/state", fs=FileSystem(secure_walk=False))
    assert resolve(workspace, "new.txt").real == "/1/new.txt"  # nothing cased to probe yet
    fs.create_file("/1/2/Mixed.txt", contents="m")  # type: ignore[attr-defined]
    assert resolve(workspace, "2/MIXED.TXT").real == "/1/2/Mixed.txt"


def test_nothing_follows_a_file_in_a_link_target(workspace: Workspace, root: Path) -> None:
    (root / "a").mkdir()
    (root / "a" / "b").write_bytes(b"file")
    (root / "a" / "through_file").symlink_to("b/..")
    (root / "a" / "dot_file").symlink_to("b/.")
    (root / "a" / "slash_file").symlink_to("b/")
    for name in ("through_file", "dot_file", "slash_file"):
        assert _code(workspace, f"a/{name}") == "NOT_FOUND"


def _snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry below ``directory`` without following links: bytes, "<dir>" or "-> x"."""
    tree: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            key = os.path.relpath(path, directory)
            if os.path.islink(path):
                tree[key] = "-> " + os.readlink(path)
            elif os.path.isdir(path):
                tree[key] = "<dir>"
            else:
                with open(path, "rb") as handle:
                    tree[key] = handle.read()
    return tree


@given(
    entries=_trees(),
    writes=st.lists(st.lists(_component, min_size=1, max_size=4), min_size=1, max_size=8),
)
def test_writes_through_random_trees_change_nothing_outside_the_root(
    tmp_path: Path,
    entries: list[tuple[str, tuple[str, ...], str]],
    writes: list[list[str]],
) -> None:
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    try:
        root = _build(base, entries)
        outside = {name: _snapshot(base / name) for name in ("outside", "ws_sibling")}
        session = Workspace(root, base / "state").session("s")
        for number, parts in enumerate(writes):
            query = "/".join(parts)
            content = f"write {number}".encode()
            with contextlib.suppress(ToolError):
                session.read(query)
            try:
                session.write(query, content)
            except ToolError as exc:
                assert exc.code in (
                    "OUTSIDE_WORKSPACE",
                    "IS_A_DIRECTORY",
                    "NOT_FOUND",
                    "INVALID_ARGUMENT",
                ), (query, exc)
                continue
            real = os.path.realpath(os.path.join(root, os.path.normpath(query)))
            assert is_within(real, str(root)), (query, real)
            with open(real, "rb") as handle:
                assert handle.read() == content, query
        assert {name: _snapshot(base / name) for name in outside} == outside
    finally:
        shutil.rmtree(base)


# -- failures of the port during a walk -------------------------------------------------


class _RefusingFileSystem(FileSystem):
    """A port that refuses ``name`` calls on exactly ``path`` (EACCES unless told)."""

    def __init__(self, name: str, path: str, error: int = errno.EACCES) -> None:
        super().__init__()
        self.name, self.path, self.error = name, path, error

    def _check(self, name: str, path: str) -> None:
        if name == self.name and path == self.path:
            raise OSError(self.error, os.strerror(self.error), path)

    def lstat(self, path: str) -> os.stat_result:
        self._check("lstat", path)
        return super().lstat(path)

    def listdir(self, path: str) -> list[str]:
        self._check("listdir", path)
        return super().listdir(path)

    def readlink(self, path: str) -> str:
        self._check("readlink", path)
        return super().readlink(path)


def test_a_root_removed_after_the_workspace_opened_is_not_found(
    workspace: Workspace, root: Path
) -> None:
    (root / "a.txt").write_bytes(b"a")
    assert resolve(workspace, "a.txt").exists
    (root / "a.txt").unlink()
    root.rmdir()
    with pytest.raises(ToolError) as info:
        resolve(workspace, "a.txt")
    assert info.value.code == "NOT_FOUND"
    assert "open workspace root" in info.value.message


def test_a_directory_that_cannot_be_listed_keeps_the_typed_spelling(
    root: Path, state_dir: Path
) -> None:
    name = "caf\u00e9.txt"  # not ASCII: its stored spelling is looked up in the listing
    (root / "d").mkdir()
    (root / "d" / name).write_bytes(b"x")
    workspace = Workspace(root, state_dir, fs=_RefusingFileSystem("listdir", str(root / "d")))
    result = resolve(workspace, f"d/{name}")
    assert (result.real, result.exists, result.kind) == (str(root / "d" / name), True, "file")


def test_a_twin_that_cannot_be_inspected_is_not_taken_for_the_stored_spelling(
    root: Path, state_dir: Path
) -> None:
    stored = unicodedata.normalize("NFD", "caf\u00e9.txt")
    typed = unicodedata.normalize("NFC", stored)
    (root / stored).write_bytes(b"x")

    class Refusing(_NormalizingFileSystem):
        def lstat(self, path: str) -> os.stat_result:
            if path == str(root / stored):
                raise PermissionError(errno.EACCES, "Permission denied", path)
            return super().lstat(path)

    assert resolve(Workspace(root, state_dir, fs=_NormalizingFileSystem()), typed).real == str(
        root / stored
    )  # the positive control: the twin is the stored spelling
    result = resolve(Workspace(root, state_dir, fs=Refusing()), typed)
    assert (result.real, result.exists) == (str(root / typed), True)


def test_a_symlink_that_cannot_be_read_is_an_io_error(root: Path, state_dir: Path) -> None:
    (root / "d").mkdir()
    (root / "link").symlink_to("d", target_is_directory=True)
    workspace = Workspace(root, state_dir, fs=_RefusingFileSystem("readlink", str(root / "link")))
    with pytest.raises(ToolError) as info:
        resolve(workspace, "link/new.txt")
    assert info.value.code == "IO_ERROR"
    assert info.value.details["errno"] == errno.EACCES
    assert resolve(workspace, "d/new.txt").real == str(root / "d" / "new.txt")


def test_a_refusal_on_the_way_from_outside_is_reported_as_outside(
    root: Path, state_dir: Path, tmp_path: Path
) -> None:
    """An absolute path walks the root's ancestors first; a refusal off that way is not
    an I/O error of the workspace (that would tell what exists outside)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plain = Workspace(root, state_dir)
    assert _code(plain, str(elsewhere / "f.txt")) == "OUTSIDE_WORKSPACE"  # the control
    workspace = Workspace(root, state_dir, fs=_RefusingFileSystem("lstat", str(elsewhere)))
    with pytest.raises(ToolError) as info:
        resolve(workspace, str(elsewhere / "f.txt"))
    assert info.value.code == "OUTSIDE_WORKSPACE"
    with pytest.raises(ToolError) as top:
        resolve(Workspace(root, state_dir, fs=_RefusingFileSystem("lstat", os.sep)), os.sep)
    assert top.value.code == "OUTSIDE_WORKSPACE"


def test_a_root_refused_after_a_link_up_to_it_is_an_io_error(root: Path, state_dir: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("..", target_is_directory=True)
    (root / "a.txt").write_bytes(b"a")

    class RefusesTheRootOnce(FileSystem):
        """The root is inspected when a resolution starts; the next look at it fails."""

        def __init__(self) -> None:
            super().__init__()
            self.seen = 0

        def lstat(self, path: str) -> os.stat_result:
            if path == str(root):
                self.seen += 1
                if self.seen == 2:
                    raise PermissionError(errno.EACCES, "Permission denied", path)
            return super().lstat(path)

    fs = RefusesTheRootOnce()
    workspace = Workspace(root, state_dir, fs=fs)
    fs.seen = 0
    with pytest.raises(ToolError) as info:
        resolve(workspace, "sub/up/a.txt")
    assert info.value.code == "IO_ERROR"
    assert info.value.details["errno"] == errno.EACCES
    assert resolve(workspace, "sub/up/a.txt").real == str(root / "a.txt")


def test_a_leading_double_slash_is_the_file_system_root(workspace: Workspace, root: Path) -> None:
    (root / "a.txt").write_bytes(b"a")
    doubled = "/" + str(root / "a.txt")
    assert os.path.normpath(doubled).startswith("//")  # POSIX keeps it
    result = resolve(workspace, doubled)
    assert (result.relative, result.logical) == ("a.txt", str(root / "a.txt"))
