"""Small broken drivers: the reference driver behind a wrapper with one flaw (DESIGN §7).

Some defects of real tools are not a change inside the engine but in the layer that
talks to the agent: an adapter that drops a result field, reports a wrong value in one,
answers one refusal with another error code, turns a refusal into a success, or reports
a success whose change never reached the disk. Each wrapper here is one such flaw, for
one field, one error code or one operation, so that every clause that checks a field, a
code or a refusal has a broken implementation it must fail:

* ``drop_<Result>_<field>``: the result (or each of its items) lacks the field;
* ``bad_<Result>_<field>``: the field holds a wrong value (a flipped flag, a count off by
  one, a hash of other bytes, a list without its last item, ...);
* ``rev_<Result>_<field>``: the items of a list field come in reverse order;
* ``swap_<CODE>``: a refusal with ``CODE`` is reported with another code;
* ``accept_<op>``: a refused ``op`` reports success and does nothing;
* ``anyway_<op>``: a refused ``op`` still makes its change (or creates its file), then
  reports the refusal;
* ``litter``: a refused call leaves a temporary file beside its target;
* ``noop_<op>``: a successful ``op`` reports its change, which never reaches the disk (a
  file it creates stays empty).

Each is registered in ``mutant_zoo.MUTANTS`` when ``targets.TARGETS`` names clauses it must
fail (every one is, with ``$EDITSPEC_ZOO_ALL`` set, to look for more).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import attrs
from mutant_zoo import Mutant, register
from targets import TARGETS

from editspec.contract import RESULT_FIELDS
from editspec.reference import ERROR_CODES, ToolError

# The result types by the operation that returns them, and the items of list fields.
RESULTS: Mapping[str, str] = {
    "read": "ReadResult",
    "write": "WriteResult",
    "edit": "EditResult",
    "apply_patch": "PatchResult",
    "glob": "GlobResult",
    "grep": "GrepResult",
    "list_directory": "ListResult",
    "rewind": "RewindResult",
    "edit_notebook": "NotebookResult",
    "recover": "RecoveryReport",
}
ITEMS: Mapping[tuple[str, str], str] = {
    ("EditResult", "replacements"): "Replacement",
    ("PatchResult", "changes"): "FileChange",
    ("GrepResult", "matches"): "GrepMatch",
    ("ListResult", "entries"): "ListEntry",
    ("RewindResult", "restored"): "RestoredFile",
}
MUTATING = ("write", "edit", "apply_patch", "rewind", "edit_notebook")
OPERATIONS = (*MUTATING, "read", "glob", "grep", "list_directory")


# -- the wrapper --------------------------------------------------------------------------


Hook = Callable[["BrokenSession", str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]


class BrokenSession:
    """A session whose operations go through ``hook(session, op, call, args, kwargs)``."""

    def __init__(self, inner: Any, driver: BrokenDriver) -> None:
        self._inner = inner
        self._driver = driver

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in OPERATIONS or not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._driver.hook(self, name, attribute, args, kwargs)

        return call

    @property
    def root(self) -> str:
        return self._driver.root


class BrokenDriver:
    """The reference driver (``inner``) whose sessions and recovery pass through ``hook``."""

    def __init__(self, inner: Any, hook: Hook) -> None:
        self._inner = inner
        self.hook = hook
        self.name = inner.name
        self.capabilities = inner.capabilities
        self.root = str(inner.workspace.root)

    def open_session(self, session_id: str) -> BrokenSession:
        return BrokenSession(self._inner.open_session(session_id), self)

    def open_remote_session(self, session_id: str, **kwargs: Any) -> BrokenSession:
        return BrokenSession(self._inner.open_remote_session(session_id, **kwargs), self)

    def recover(self) -> Any:
        return self.hook(None, "recover", self._inner.recover, (), {})  # type: ignore[arg-type]

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _plain(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    return call(*args, **kwargs)


# -- results: a field dropped or wrong ------------------------------------------------------


class _Without:
    """A result without one attribute; every other attribute is the original's."""

    def __init__(self, inner: Any, field: str) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_field", field)

    def __getattr__(self, name: str) -> Any:
        if name == self._field:
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"<{type(self._inner).__name__} without {self._field}>"


def _wrong(value: Any) -> Any:
    """Another value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1000.0
    if isinstance(value, str):
        if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            return ("1" if value[0] != "1" else "2") + value[1:]
        return value + "x"
    if isinstance(value, tuple):
        return value[:-1] if value else ("x",)
    if isinstance(value, list):
        return value[:-1]
    if value is None:
        return "x"
    return value


def _reversed(value: Any) -> Any:
    """Items in reverse order; a diff reversed (its '-' and '+' lines swapped)."""
    if isinstance(value, str):
        lines = value.splitlines(keepends=True)
        return "".join(_swapped(line) for line in lines)
    return tuple(reversed(value)) if isinstance(value, (tuple, list)) else value


def _swapped(line: str) -> str:
    for one, other in (("--- ", "+++ "), ("+++ ", "--- "), ("-", "+"), ("+", "-")):
        if line.startswith(one):
            return other + line[len(one) :]
    return line


def _transform(result: Any, kind: str, target: str, field: str, how: str) -> Any:
    """``result`` (of type ``kind``) with ``field`` of every ``target`` object changed."""
    if result is None:
        return None
    if kind != target:
        changes = {}
        for (owner, name), item_kind in ITEMS.items():
            if owner == kind and hasattr(result, name):
                items = getattr(result, name)
                changes[name] = tuple(_transform(i, item_kind, target, field, how) for i in items)
        return _evolve(result, changes) if changes else result
    if how == "drop":
        return _Without(result, field)
    if not hasattr(result, field):
        return result
    value = getattr(result, field)
    return _evolve(result, {field: _wrong(value) if how == "bad" else _reversed(value)})


def _evolve(result: Any, changes: dict[str, Any]) -> Any:
    if attrs.has(type(result)):
        return attrs.evolve(result, **changes)
    copy = SimpleNamespace(**vars(result))
    for name, value in changes.items():
        setattr(copy, name, value)
    return copy


def _result_hook(target: str, field: str, how: str) -> Hook:
    def hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        result = call(*args, **kwargs)
        kind = RESULTS.get(op)
        return result if kind is None else _transform(result, kind, target, field, how)

    return hook


# -- refusals: another code, a success, a change made anyway ---------------------------------


def _swap_hook(code: str) -> Hook:
    other = "IO_ERROR" if code != "IO_ERROR" else "INVALID_ARGUMENT"

    def hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except ToolError as error:
            if error.code != code:
                raise
            raise ToolError(other, error.message) from error

    return hook


def _fake_result(op: str, args: tuple[Any, ...]) -> Any:
    kind = RESULTS[op]
    values: dict[str, Any] = dict.fromkeys(RESULT_FIELDS.get(kind, ()))
    values.update(
        path=args[0] if args and isinstance(args[0], str) else "",
        content="",
        operation="replace",
        truncated=False,
        snapshot_created=False,
        bytes_written=0,
        total_bytes=0,
        total_lines=0,
        start_line=1,
        end_line=0,
        encoding="utf-8",
        newline="none",
        bom=False,
        sha256="",
        new_sha256="",
        diff="",
    )
    for name in ("replacements", "warnings", "changes", "paths", "matches", "entries"):
        values[name] = ()
    values.update(restored=(), total_matches=0, files_searched=0, next_cursor=None)
    return SimpleNamespace(**values)


def _accept_hook(target_op: str) -> Hook:
    def hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except ToolError:
            if op != target_op:
                raise
            return _fake_result(op, args)

    return hook


def _real(root: str, path: Any) -> str | None:
    if not isinstance(path, str) or "\0" in path:
        return None
    return path if os.path.isabs(path) else os.path.join(root, path)


def _force(root: str, op: str, args: tuple[Any, ...]) -> None:
    """What a refused ``op`` would have done, done carelessly (through any symlink)."""
    target = _real(root, args[0] if args else None)
    if target is None:
        return
    try:
        if op == "write":
            content = args[1]
            data = content if isinstance(content, bytes) else str(content).encode()
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        elif op == "edit":
            with open(target, "rb") as handle:
                text = handle.read().decode("utf-8", "surrogateescape")
            for spec in args[1]:
                if spec.old_string:
                    text = text.replace(spec.old_string, spec.new_string, 1)
                else:
                    text += spec.new_string
            with open(target, "wb") as handle:
                handle.write(text.encode("utf-8", "surrogateescape"))
        elif op == "read" and not os.path.lexists(target):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            open(target, "wb").close()
    except (OSError, ValueError, AttributeError, TypeError):
        pass


def _anyway_hook(target_op: str) -> Hook:
    def hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except ToolError:
            if op == target_op:
                _force(session.root, op, args)
            raise

    return hook


def _litter_hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except ToolError:
        root = session.root if session is not None else None
        if root is not None:
            target = _real(root, args[0] if args and op in MUTATING else None)
            directory = os.path.dirname(target) if target else root
            if not os.path.isdir(directory) or not os.path.realpath(directory).startswith(root):
                directory = root
            try:
                with open(os.path.join(directory, ".editspec.tmp~"), "wb") as handle:
                    handle.write(b"partial")
            except OSError:
                pass
        raise


def _tree(root: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(directory, name)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, "rb") as handle:
                    found[full] = handle.read()
    return found


def _noop_hook(target_op: str) -> Hook:
    def hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        if op != target_op or session is None:
            return call(*args, **kwargs)
        before = _tree(session.root)
        result = call(*args, **kwargs)
        after = _tree(session.root)
        for path in set(after) - set(before):
            with open(path, "wb"):  # created, but none of its bytes written
                pass
        for path, data in before.items():
            if after.get(path) != data:
                with open(path, "wb") as handle:
                    handle.write(data)
        return result

    return hook


def _litter_on_success_hook(target_op: str) -> Hook:
    def hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        result = call(*args, **kwargs)
        if op == target_op and session is not None:
            first = args[0] if args and op not in ("apply_patch", "rewind") else None
            target = _real(session.root, first)
            directory = os.path.dirname(target) if target else session.root
            if os.path.isdir(directory):
                with open(os.path.join(directory, ".editspec.tmp~"), "wb") as handle:
                    handle.write(b"partial")
        return result

    return hook


def _clamp_hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    if op == "read" and kwargs.get("max_bytes") is not None:
        kwargs = {**kwargs, "max_bytes": min(kwargs["max_bytes"], 256 * 1024)}
    return call(*args, **kwargs)


def _empty_is_error_hook(
    session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any
) -> Any:
    result = call(*args, **kwargs)
    if op in ("grep", "glob") and not getattr(result, "matches", getattr(result, "paths", 1)):
        raise ToolError("NOT_FOUND", "no match")
    return result


def _empty_skipped_hook(
    session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any
) -> Any:
    if op == "write" and len(args) > 1 and args[1] in ("", b""):
        return _fake_result(op, args)  # nothing to write, so nothing is written
    return call(*args, **kwargs)


def _newline_hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    if op == "write" and len(args) > 1 and isinstance(args[1], str) and not args[1].endswith("\n"):
        args = (args[0], args[1] + "\n", *args[2:])  # "every text file ends with a newline"
    return call(*args, **kwargs)


def _walk_following_links(root: str, seconds: float = 30.0) -> None:
    """Visit the tree following every directory symlink, as ``du -L`` does."""
    deadline = time.monotonic() + seconds
    for _directory, _dirs, _files in os.walk(root, followlinks=True):
        if time.monotonic() > deadline:
            return


def _sizes_hook(session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    result = call(*args, **kwargs)
    if op == "list_directory" and session is not None:
        _walk_following_links(session.root)  # to report directory sizes
    return result


def _linked_matches(root: str, pattern: str) -> list[Any]:
    """Matches in the files that symlinks under ``root`` point to, wherever they are."""
    import re

    found = []
    for directory, dirs, files in os.walk(root, followlinks=True):
        for name in files + dirs:
            full = os.path.join(directory, name)
            if not os.path.islink(full) or not os.path.isfile(full):
                continue
            with open(full, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
            for number, line in enumerate(text.splitlines(), 1):
                hit = re.search(pattern, line)
                if hit is not None:
                    relative = os.path.relpath(full, root).replace(os.sep, "/")
                    found.append(
                        SimpleNamespace(
                            path=relative, line=number, column=hit.start() + 1, text=line
                        )
                    )
    return found


def _grep_links_hook(
    session: Any, op: str, call: Callable[..., Any], args: Any, kwargs: Any
) -> Any:
    result = call(*args, **kwargs)
    if op != "grep" or session is None:
        return result
    extra = _linked_matches(session.root, args[0])
    return _evolve(result, {"matches": tuple(result.matches) + tuple(extra)}) if extra else result


# -- the registry ---------------------------------------------------------------------------


def _broken(name: str, defect: str, hook: Hook, areas: tuple[str, ...]) -> None:
    if name not in TARGETS and not os.environ.get(ALL_ENV):
        return  # a flaw no clause is known to catch: generated, not registered
    register(
        Mutant(
            name=name,
            defect=defect,
            areas=areas,
            wrap=lambda driver: BrokenDriver(driver, hook),
        )
    )


# Every generated broken driver is registered when this is set (to look for catches).
ALL_ENV = "EDITSPEC_ZOO_ALL"


ALL_AREAS = ("PATH", "READ", "WRITE", "TRACK", "EDIT", "PATCH", "SNAP", "GLOB", "GREP", "LIST")

for _op, _kind in RESULTS.items():
    _targets = [_kind] + [item for (owner, _f), item in ITEMS.items() if owner == _kind]
    for _target in _targets:
        for _field in RESULT_FIELDS.get(_target, ()):
            _broken(
                f"drop_{_target}_{_field}",
                f"The {_target} lacks its {_field} field.",
                _result_hook(_target, _field, "drop"),
                ALL_AREAS,
            )
            _broken(
                f"bad_{_target}_{_field}",
                f"The {_target} reports a wrong {_field}.",
                _result_hook(_target, _field, "bad"),
                ALL_AREAS,
            )
for (_owner, _field), _item in ITEMS.items():
    _broken(
        f"rev_{_owner}_{_field}",
        f"The {_field} of a {_owner} come in reverse order.",
        _result_hook(_owner, _field, "rev"),
        ALL_AREAS,
    )
_broken(
    "rev_GlobResult_paths",
    "The paths of a GlobResult come in reverse order.",
    _result_hook("GlobResult", "paths", "rev"),
    ("GLOB",),
)
for _kind in ("WriteResult", "EditResult", "FileChange"):
    _broken(
        f"rev_{_kind}_diff",
        f"The diff of a {_kind} is reversed: its '-' and '+' lines are swapped.",
        _result_hook(_kind, "diff", "rev"),
        ("WRITE", "EDIT", "PATCH"),
    )
for _code in sorted(ERROR_CODES):
    _broken(
        f"swap_{_code}",
        f"A refusal with {_code} is reported with another error code.",
        _swap_hook(_code),
        ALL_AREAS,
    )
for _op in OPERATIONS:
    _broken(
        f"accept_{_op}",
        f"A refused {_op} reports success and does nothing.",
        _accept_hook(_op),
        ALL_AREAS,
    )
for _op in ("write", "edit", "read"):
    _broken(
        f"anyway_{_op}",
        f"A refused {_op} still makes its change (through any symlink), then reports the refusal.",
        _anyway_hook(_op),
        ALL_AREAS,
    )
_broken(
    "litter",
    "A refused call leaves a temporary file beside its target.",
    _litter_hook,
    ALL_AREAS,
)
for _op in (*MUTATING, "read"):
    _broken(
        f"litter_ok_{_op}",
        f"A successful {_op} leaves a temporary file beside its target.",
        _litter_on_success_hook(_op),
        ALL_AREAS,
    )
_broken(
    "max_bytes_clamped",
    "A read's max_bytes is cut to the default limit (256 KiB), whatever the caller asked.",
    _clamp_hook,
    ("READ", "LIMIT"),
)
_broken(
    "empty_content_not_written",
    "A write of empty content reports success and creates no file.",
    _empty_skipped_hook,
    ("WRITE",),
)
_broken(
    "final_newline_added",
    "A write of text that does not end with a newline gets one added.",
    _newline_hook,
    ("WRITE",),
)
_broken(
    "list_follows_links",
    "A listing walks the tree following directory symlinks (to total the sizes).",
    _sizes_hook,
    ("LIST",),
)
_broken(
    "grep_follows_links",
    "Grep follows symlinks to files (and walks linked directories): the files they point "
    "to are searched wherever they are.",
    _grep_links_hook,
    ("GREP",),
)
_broken(
    "no_match_is_an_error",
    "A search that finds nothing fails with NOT_FOUND instead of an empty success.",
    _empty_is_error_hook,
    ("GLOB", "GREP"),
)
for _op in MUTATING:
    _broken(
        f"noop_{_op}",
        f"A successful {_op} reports its change, which never reaches the disk.",
        _noop_hook(_op),
        ALL_AREAS,
    )
