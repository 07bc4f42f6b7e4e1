"""Path confinement and resolution (DESIGN §4 "Paths").

Theory of operation. A user path is first normalized *lexically* (``..`` in the
request is applied to the names as written, like the logical path reported in results),
then resolved *physically*, one component at a time, through the fs port only
(``lstat``, ``readlink``, ``listdir``); never with ``os.path.realpath`` on a user path.
A symlink's target is spliced in front of the remaining components and resolved the same
way (its ``..`` is physical: it climbs from the link's real directory), so the result is
the path the kernel would reach, spelled as the file system stores it.

Rules enforced here (each failure names its clause):

* Confinement is decided on the real path, by whole components: ``/ws_evil`` is not under
  ``/ws``. Once a requested component has been resolved (links included), the real path
  so far must be inside the root, or the request is OUTSIDE_WORKSPACE right there, so no
  further lookups happen outside the root on the caller's behalf.
* A missing component ends the walk: the real path is the nearest existing ancestor plus
  the remaining names (the "new file" tail), and it is confined like any other path. An
  error other than "does not exist" is never taken for "does not exist": a denial must not
  fall into the new-file branch (CVE-2025-53109).
* Symlinks are counted: more than ``MAX_LINK_HOPS`` in one resolution (a loop, or an
  absurd chain) is INVALID_ARGUMENT, never a hang.
* An absolute path that is not lexically under the root may still name it through an
  alias (``/tmp`` -> ``/private/tmp``): it is walked from ``/`` and accepted only if its
  real path reaches the root itself, checked by (device, inode), never by spelling.
* Aliases resolve to one canonical key: a symlink to its target, and on a file system that
  folds case or Unicode normalization, a name to the spelling stored in its directory
  (read from the listing; whether the workspace folds case is detected, never guessed).
"""

from __future__ import annotations

import contextlib
import os
import stat

import attrs

from editspec.reference import _errors
from editspec.reference._arguments import excerpt
from editspec.reference._base import WorkspaceBase
from editspec.reference._errors import ToolError
from editspec.reference.paths._folding import folds_case, identity, same_name

MAX_LINK_HOPS = 40  # Linux's MAXSYMLINKS

FILE = "file"
DIR = "dir"
OTHER = "other"
MISSING = "missing"


@attrs.frozen(kw_only=True)
class WorkspacePath:
    """A user path, confined and resolved.

    requested: the string the caller gave.
    logical: absolute path under the root, lexically normalized, symlinks not resolved.
    real: absolute path with every symlink resolved, spelled as the file system stores
        it (for a new file: the real path of its nearest existing ancestor + the tail).
    relative: ``real`` relative to the root, "/"-separated ("." for the root).
    crossed_link: a symlink was followed on the way.
    exists: something exists at ``real``.
    kind: "file", "dir", "other" (fifo, socket, device) or "missing".
    nlink: the hard-link count of an existing file (``st_nlink``); 0 when missing.
    """

    requested: str
    logical: str
    real: str
    relative: str
    crossed_link: bool
    exists: bool
    kind: str = MISSING
    nlink: int = 0

    @property
    def canonical_key(self) -> str:
        """The key for tracking, locks and snapshots: the real path."""
        return self.real

    @property
    def logical_relative(self) -> str:
        """``logical`` relative to the root, "/"-separated: the path results report."""
        return _relative_to(self.logical, self._root())

    def _root(self) -> str:
        # real = root + relative, so the root is recovered without keeping a reference.
        if self.relative == ".":
            return self.real
        depth = self.relative.count("/") + 1
        root = self.real
        for _ in range(depth):
            root = os.path.dirname(root)
        return root


def is_within(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or below it, compared by whole components."""
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


def _relative_to(path: str, root: str) -> str:
    if path == root:
        return "."
    relative = path[len(root) :].lstrip(os.sep)
    return relative.replace(os.sep, "/")


def _kind(st: os.stat_result) -> str:
    if stat.S_ISREG(st.st_mode):
        return FILE
    if stat.S_ISDIR(st.st_mode):
        return DIR
    return OTHER


def _requested_string(path: object) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"a path must be a string, not {type(path).__name__}",
        )
    if not path:
        raise ToolError(_errors.INVALID_ARGUMENT, "the path is empty")
    if "\0" in path:
        # Would be truncated by the C layer to a different path.
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"the path contains a NUL byte: {excerpt(path)}",
            path=excerpt(path),
        )
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        # A lone surrogate the file system encoding cannot carry (Python's own
        # surrogateescape names, U+DC80..U+DCFF, stand for raw bytes and pass).
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"the path cannot be encoded for the file system (character {exc.start}: "
            f"{exc.reason}): {excerpt(path)}",
            path=excerpt(path),
        ) from None
    return path


# -- bounds on a path, checked before any walk: PATH-061, PATH-062 ------------------------

_CEILINGS: dict[str, tuple[int, int]] = {}


def _file_system_ceilings(root: str) -> tuple[int, int]:
    """The root file system's own (PATH_MAX less its NUL, NAME_MAX), or large defaults."""
    known = _CEILINGS.get(root)
    if known is not None:
        return known
    path_max, name_max = 1 << 20, 1 << 20
    with contextlib.suppress(OSError, ValueError, AttributeError):
        path_max = os.pathconf(root, "PC_PATH_MAX") - 1
    with contextlib.suppress(OSError, ValueError, AttributeError):
        name_max = os.pathconf(root, "PC_NAME_MAX")
    _CEILINGS[root] = (path_max, name_max)
    return path_max, name_max


def _too_long(requested: str, message: str, **details: object) -> ToolError:
    return ToolError(
        _errors.INVALID_ARGUMENT,
        f"{message}: {excerpt(requested)}",
        path=excerpt(requested),
        **details,
    )


def check_path_bounds(workspace: WorkspaceBase, requested: str, logical: str) -> None:
    """INVALID_ARGUMENT for a path longer or deeper than the limits (before any lookup)."""
    limits = workspace.limits
    path_max, name_max = _file_system_ceilings(workspace.root)
    max_bytes, max_name = min(limits.path_bytes, path_max), min(limits.name_bytes, name_max)
    # The request itself first: a 5 MB string is refused before it is normalized.
    for shown, value in (("the path", requested), ("the resolved path", logical)):
        size = len(os.fsencode(value))
        if size > max_bytes:
            raise _too_long(
                requested,
                f"{shown} is {size} bytes long (at most {max_bytes}: PATH_MAX)",
                limit="path_bytes",
                maximum=max_bytes,
                size=size,
            )
    names = [name for name in requested.split("/") if name not in ("", ".")]
    for name in names:
        size = len(os.fsencode(name))
        if size > max_name:
            raise _too_long(
                requested,
                f"a component is {size} bytes long (at most {max_name}: NAME_MAX)",
                limit="name_bytes",
                maximum=max_name,
                size=size,
            )
    below = logical[len(workspace.root) :] if is_within(logical, workspace.root) else logical
    depth = len([name for name in below.split(os.sep) if name])
    if depth > limits.path_depth:
        raise _too_long(
            requested,
            f"the path is {depth} directories deep (at most {limits.path_depth})",
            limit="path_depth",
            maximum=limits.path_depth,
            size=depth,
        )


def _outside(requested: str, reason: str) -> ToolError:
    return ToolError(
        _errors.OUTSIDE_WORKSPACE,
        f"{requested} is outside the workspace ({reason})",
        path=requested,
        reason=reason,
    )


# -- the walk --------------------------------------------------------------------------


class _Resolver:
    """One resolution: the component walk and its bookkeeping."""

    def __init__(self, workspace: WorkspaceBase, requested: str) -> None:
        self.fs = workspace.fs
        self.root = workspace.root
        self.requested = requested
        self.workspace = workspace
        self.hops = 0
        self.crossed_link = False
        self.listings: dict[str, list[str]] = {}
        self.check_case: bool | None = None
        try:
            self.root_id = identity(self.fs.lstat(self.root))
        except OSError as exc:
            raise _errors.from_oserror(exc, self.root, action="open workspace root") from exc
        self.ancestor_ids: set[tuple[int, int]] | None = None

    # Stored spelling of ``name`` in ``directory`` (case-folding or normalizing file
    # systems answer lstat for any spelling; the listing holds the real one).
    def stored_name(self, directory: str, name: str, st: os.stat_result) -> str:
        if name.isascii():
            if self.check_case is None:
                self.check_case = folds_case(self.workspace)
            if not self.check_case:
                return name
        names = self.listings.get(directory)
        if names is None:
            try:
                names = self.fs.listdir(directory)
            except OSError:
                return name
            self.listings[directory] = names
        if name in names:
            return name
        for entry in names:
            if not same_name(entry, name):
                continue
            try:
                if identity(self.fs.lstat(os.path.join(directory, entry))) == identity(st):
                    return entry
            except OSError:
                continue
        return name

    def is_root_ancestor(self, st: os.stat_result) -> bool:
        if self.ancestor_ids is None:
            self.ancestor_ids = set()
            current = self.root
            while True:
                parent = os.path.dirname(current)
                if parent == current:
                    break
                with contextlib.suppress(OSError):
                    self.ancestor_ids.add(identity(self.fs.lstat(parent)))
                current = parent
        return identity(st) in self.ancestor_ids

    def follow(self, link: str, inside: bool) -> list[str]:
        """Count a hop and return the link's target components (in order)."""
        self.hops += 1
        self.crossed_link = True
        if self.hops > MAX_LINK_HOPS:
            if not inside or not is_within(link, self.root):
                # A loop out there is nobody's business here: the path leads outside.
                raise _outside(self.requested, "a symlink leads out of the workspace")
            raise ToolError(
                _errors.INVALID_ARGUMENT,
                f"{self.requested}: too many levels of symbolic links "
                f"(a loop, or more than {MAX_LINK_HOPS} hops)",
                path=self.requested,
                link=link,
                hops=self.hops,
                max_hops=MAX_LINK_HOPS,
            )
        try:
            target = self.fs.readlink(link)
        except OSError as exc:
            raise _errors.from_oserror(exc, link, action="read symlink") from exc
        return target.split(os.sep)

    def resolve(self, logical: str) -> WorkspacePath:
        inside = is_within(logical, self.root)
        if inside:
            user = [part for part in _relative_to(logical, self.root).split("/") if part != "."]
            current = self.root
        else:
            user = [part for part in logical.split(os.sep) if part]
            current = os.sep
        # The stack of names still to resolve, top at the end: (name, requested by the
        # caller?). Link targets are pushed as non-requested names.
        pending: list[tuple[str, bool]] = [(part, True) for part in reversed(user)]
        current_st: os.stat_result | None = None
        consumed = 0  # requested names resolved so far
        # Where the logical path starts: the root and the index of the first requested
        # name below it (an absolute alias of the root is reported under the root).
        logical_base, logical_start = self.root, 0
        tail: list[str] = []
        while True:
            if not pending or pending[-1][1]:
                # A requested name (and every link it crossed) is fully resolved.
                if current_st is None:
                    current_st = self._lstat_confined(current, inside)
                if inside:
                    if not is_within(current, self.root):
                        raise _outside(self.requested, "a symlink leads out of the workspace")
                elif identity(current_st) == self.root_id:
                    inside, current = True, self.root
                    logical_base, logical_start = current, consumed
                elif is_within(current, self.root):
                    # An alias outside the root that leads into it (a link to a subdirectory).
                    inside, logical_base, logical_start = True, current, consumed
                elif not self.is_root_ancestor(current_st):
                    raise _outside(self.requested, "not under the workspace root")
                if not pending:
                    break
            name, requested = pending.pop()
            consumed += requested
            if current_st is not None and not stat.S_ISDIR(current_st.st_mode):
                # Nothing, not even "." or "..", follows a file (the kernel: ENOTDIR).
                self._not_a_directory(current, inside)
            if name in ("", "."):
                continue
            if name == "..":
                current, current_st = os.path.dirname(current), None
                continue
            candidate = os.path.join(current, name)
            try:
                st = self.fs.lstat(candidate)
            except FileNotFoundError:
                tail = [name] + [part for part, _ in reversed(pending)]
                break
            except OSError as exc:
                if not inside or not is_within(current, self.root):
                    raise _outside(self.requested, "a symlink leads out of the workspace") from exc
                raise _errors.from_oserror(exc, self.requested, action="resolve") from exc
            if stat.S_ISLNK(st.st_mode):
                target = self.follow(candidate, inside)
                if target and target[0] == "":  # absolute target
                    current, current_st = os.sep, None
                pending.extend((part, False) for part in reversed(target))
                continue
            if inside and is_within(current, self.root):
                name = self.stored_name(current, name, st)
            current, current_st = os.path.join(current, name), st
            if identity(st) == self.root_id:
                current = self.root  # one spelling of the root, whatever alias led here
        if not inside:
            raise _outside(self.requested, "not under the workspace root")
        if logical_start:
            logical = os.path.join(logical_base, *user[logical_start:])
        return self._result(logical, current, current_st, tail)

    def _lstat_confined(self, path: str, inside: bool) -> os.stat_result:
        try:
            return self.fs.lstat(path)
        except OSError as exc:
            if not inside or not is_within(path, self.root):
                raise _outside(self.requested, "not under the workspace root") from exc
            raise _errors.from_oserror(exc, self.requested, action="resolve") from exc

    def _not_a_directory(self, path: str, inside: bool) -> None:
        if not inside or not is_within(path, self.root):
            raise _outside(self.requested, "a symlink leads out of the workspace")
        raise ToolError(
            _errors.NOT_FOUND,
            f"{self.requested}: {_relative_to(path, self.root)} is not a directory",
            path=self.requested,
            reason="not_a_directory",
        )

    def _result(
        self,
        logical: str,
        current: str,
        current_st: os.stat_result | None,
        tail: list[str],
    ) -> WorkspacePath:
        names = [part for part in tail if part not in ("", ".")]
        if ".." in names:
            # The kernel cannot walk ".." out of a directory that does not exist.
            real = os.path.normpath(os.path.join(current, *names))
            if not is_within(real, self.root):
                raise _outside(self.requested, "a symlink leads out of the workspace")
            raise ToolError(
                _errors.NOT_FOUND,
                f"{self.requested}: a symlink target goes through a missing directory and '..'",
                path=self.requested,
            )
        real = os.path.join(current, *names) if names else current
        if not is_within(real, self.root):
            # A denial is never swallowed by the new-file branch (CVE-2025-53109).
            raise _outside(self.requested, "a symlink leads out of the workspace")
        if names:
            kind, nlink, exists = MISSING, 0, False
        else:
            st = current_st if current_st is not None else self.fs.lstat(current)
            kind, nlink, exists = _kind(st), st.st_nlink, True
        return WorkspacePath(
            requested=self.requested,
            logical=logical,
            real=real,
            relative=_relative_to(real, self.root),
            crossed_link=self.crossed_link,
            exists=exists,
            kind=kind,
            nlink=nlink,
        )


def check_request(workspace: WorkspaceBase, path: object) -> tuple[str, str]:
    """The checks of a user path that need no lookup: ``(requested, logical)``.

    INVALID_ARGUMENT for a non-string, an empty path, NUL, a string the file system
    cannot encode, and a path beyond the bounds (``check_path_bounds``). ``logical`` is
    the absolute path, lexically normalized. Spec: PATH-019, PATH-060, PATH-061, PATH-062.
    """
    requested = _requested_string(path)
    root = workspace.root
    joined = requested if os.path.isabs(requested) else os.path.join(root, requested)
    logical = os.path.normpath(joined)
    if logical.startswith("//"):
        logical = "/" + logical.lstrip("/")  # POSIX keeps a leading "//"; it is "/" here
    check_path_bounds(workspace, requested, logical)
    return requested, logical


def resolve(workspace: WorkspaceBase, path: str | os.PathLike[str]) -> WorkspacePath:
    """Confine ``path`` to the workspace and resolve it to its canonical real path.

    Raises INVALID_ARGUMENT (empty, NUL byte, a lone surrogate, longer than PATH_MAX or
    NAME_MAX, deeper than ``limits.path_depth``, symlink loop), OUTSIDE_WORKSPACE (``..``,
    an absolute path elsewhere, a sibling sharing the root's prefix, a symlink at any depth
    whose target, existing or not, is outside), NOT_FOUND (a component that is a file).
    Spec: PATH-*.
    """
    requested, logical = check_request(workspace, path)
    result = _Resolver(workspace, requested).resolve(logical)
    if requested.endswith(("/", os.sep)) and result.kind in (FILE, OTHER):
        # "name/" names a directory; the kernel says ENOTDIR for a file.
        raise ToolError(
            _errors.NOT_FOUND,
            f"{requested}: {result.logical_relative} is not a directory",
            path=requested,
            reason="not_a_directory",
        )
    return result
