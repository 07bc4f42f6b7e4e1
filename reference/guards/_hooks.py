"""Host hooks: deny rules, validators and change events (claude-code-edit §6.3, §6.13, §9).

A host that embeds the engine (an IDE, an agent runtime) registers them on
``Workspace.hooks``:

* ``deny(*patterns)``: gitignore-syntax patterns (``pathspec``'s ``GitIgnoreSpec``)
  a session may not read, write, list or search. A named path is checked twice: its
  lexical form before any disk access, then its real path after symlinks are resolved
  (a link inside the root to ``.env`` is ``.env``). Either way the answer is DENIED,
  whether the file exists or not, so a refusal reveals nothing. Glob, Grep and
  list_directory leave denied entries out of their results.
* ``validate(pattern, check)``: ``check(ValidationRequest)`` sees the complete new
  content of a file matching ``pattern`` before it is published (Write, Edit, notebook
  edits, ApplyPatch, Move); returning a string (or raising ``ValueError``) refuses the
  change with INVALID_ARGUMENT and that message, and nothing is written.
* ``subscribe(listener)``: after every successful change, ``listener(ChangeEvent)`` is
  called once per file in the order of the result (the commit order), after the call
  returned, that is after the data is durable. A listener that raises is recorded in
  ``Hooks.listener_errors`` and the other listeners still run: it never undoes or hides
  the change.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import pathspec

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference.text._text import sha256_hex

if TYPE_CHECKING:
    from editspec.reference._context import SessionContext

_F = TypeVar("_F", bound=Callable[..., Any])


@attrs.frozen(kw_only=True)
class ValidationRequest:
    """What a validator sees: the path (root-relative), the operation, both contents."""

    path: str
    operation: str  # "write" | "edit" | "notebook" | "apply_patch" | "move"
    old_content: bytes | None  # None for a new file
    new_content: bytes


@attrs.frozen(kw_only=True)
class ChangeEvent:
    """One file changed: what an LSP ``didChange``/``didSave`` or a diff view needs."""

    path: str
    operation: str  # "create" | "replace" | "patch" | "notebook" | "add" | "update" |
    # "delete" | "move" | "restored" | "recreated" | "deleted"
    old_sha256: str | None
    new_sha256: str | None
    diff: str
    move_to: str | None = None
    session_id: str = ""
    load_old: Callable[[], bytes | None] = attrs.field(default=lambda: None, repr=False, eq=False)
    load_new: Callable[[], bytes | None] = attrs.field(default=lambda: None, repr=False, eq=False)

    def old_bytes(self) -> bytes | None:
        """The previous content, read on demand (None when unknown or absent)."""
        return self.load_old()

    def new_bytes(self) -> bytes | None:
        """The new content as it is on disk, if it still has ``new_sha256`` (else None)."""
        return self.load_new()


Validator = Callable[[ValidationRequest], "str | None"]
Listener = Callable[[ChangeEvent], None]


class Hooks:
    """The host's deny rules, validators and change listeners for one workspace."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deny_patterns: list[str] = []
        self._deny: pathspec.GitIgnoreSpec | None = None
        self._validators: list[tuple[pathspec.GitIgnoreSpec, Validator]] = []
        self._listeners: list[Listener] = []
        self.listener_errors: list[tuple[ChangeEvent, BaseException]] = []

    # -- deny rules ----------------------------------------------------------------------

    def deny(self, *patterns: str) -> None:
        """Add gitignore-syntax patterns no session may read, write, list or search."""
        with self._lock:
            self._deny_patterns.extend(patterns)
            self._deny = pathspec.GitIgnoreSpec.from_lines(self._deny_patterns)

    def is_denied(self, relative: str, *, is_dir: bool | None = False) -> bool:
        """True when a root-relative ("/"-separated) path matches a deny rule.

        ``is_dir=None``: the type is unknown (a name not looked up, a search result), so a
        rule for either a file or a directory of that name denies it."""
        spec = self._deny
        if spec is None or relative in ("", "."):
            return False
        if is_dir is None:
            return self.is_denied(relative, is_dir=False) or self.is_denied(relative, is_dir=True)
        if spec.match_file(relative + "/" if is_dir else relative):
            return True
        # A denied directory denies everything under it.
        parts = relative.split("/")
        return any(spec.match_file("/".join(parts[:depth]) + "/") for depth in range(1, len(parts)))

    def check_denied(self, relative: str, shown: str, *, is_dir: bool | None = False) -> None:
        """DENIED for a denied path; the message is the same whether it exists or not."""
        if self.is_denied(relative, is_dir=is_dir):
            raise ToolError(
                _errors.DENIED, f"{shown}: access denied by the host's rules", path=shown
            )

    @property
    def denies_anything(self) -> bool:
        return self._deny is not None

    # -- validators ----------------------------------------------------------------------

    def validate(self, pattern: str | Iterable[str], check: Validator) -> None:
        """Register ``check`` for files matching ``pattern`` (gitignore syntax)."""
        lines = [pattern] if isinstance(pattern, str) else list(pattern)
        with self._lock:
            self._validators.append((pathspec.GitIgnoreSpec.from_lines(lines), check))

    def run_validators(
        self, path: str, operation: str, old_content: bytes | None, new_content: bytes
    ) -> None:
        """INVALID_ARGUMENT with the validator's message when one refuses the content."""
        validators = [check for spec, check in self._validators if spec.match_file(path)]
        if not validators:
            return
        request = ValidationRequest(
            path=path, operation=operation, old_content=old_content, new_content=new_content
        )
        for check in validators:
            try:
                refusal = check(request)
            except ValueError as exc:
                refusal = str(exc) or type(exc).__name__
            if refusal:
                raise ToolError(
                    _errors.INVALID_ARGUMENT,
                    f"{path}: refused by a validator: {refusal}",
                    path=path,
                    validator=str(refusal),
                )

    # -- change events -------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` for every change from now on; returns the unsubscribe call."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    @property
    def has_listeners(self) -> bool:
        return bool(self._listeners)

    def emit(self, events: Iterable[ChangeEvent]) -> None:
        """Deliver each event to every listener, in order; a raising listener is recorded."""
        listeners = list(self._listeners)
        for event in events:
            for listener in listeners:
                try:
                    listener(event)
                except Exception as exc:  # never undoes or hides the change
                    self.listener_errors.append((event, exc))


def events_from(result: Any, session_id: str, loaders: Callable[..., Any]) -> list[ChangeEvent]:
    """The change events a result describes, one per file, in the result's order."""
    events: list[ChangeEvent] = []

    def add(path: str, operation: str, old: Any, new: Any, diff: str, move_to: Any = None) -> None:
        load_old, load_new = loaders(path, move_to, old, new)
        events.append(
            ChangeEvent(
                path=path,
                operation=operation,
                old_sha256=old,
                new_sha256=new,
                diff=diff,
                move_to=move_to,
                session_id=session_id,
                load_old=load_old,
                load_new=load_new,
            )
        )

    changes = getattr(result, "changes", None)
    restored = getattr(result, "restored", None)
    if changes is not None:
        for change in changes:
            add(
                change.path,
                change.op,
                change.old_sha256,
                change.new_sha256,
                change.diff,
                change.move_to,
            )
    elif restored is not None:
        for item in restored:
            add(item.path, item.action, None, None, "")
    elif hasattr(result, "move_to"):
        add(result.path, "move", result.sha256, result.sha256, "", result.move_to)
    elif hasattr(result, "restore_ref"):  # a DeleteResult
        if result.kind == "file":
            add(result.path, "delete", result.old_sha256, None, "")
        else:
            for item in result.items:
                if item.type == "file":
                    add(f"{result.path}/{item.path}", "delete", item.sha256, None, "")
    else:
        add(result.path, result.operation, result.old_sha256, result.new_sha256, result.diff)
    return events


def _loaders(session: SessionContext) -> Callable[..., Any]:
    workspace = session.workspace

    def loaders(path: str, move_to: Any, old: Any, new: Any) -> tuple[Any, Any]:
        def load_old() -> bytes | None:
            if not isinstance(old, str) or not workspace.supports.snapshots:
                return None
            try:
                return workspace.snapshots.read_blob(session.id, old)
            except Exception:  # not recorded (no message_id): unknown
                return None

        def load_new() -> bytes | None:
            if not isinstance(new, str):
                return None
            store = workspace.store
            try:
                data = store.read_for_write(store.resolve(move_to or path))
            except (OSError, ToolError):
                return None
            return data if data is not None and sha256_hex(data) == new else None

        return load_old, load_new

    return loaders


def emits_changes(method: _F) -> _F:
    """A Session method whose successful result is delivered as change events."""

    @functools.wraps(method)
    def call(self: SessionContext, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        hooks = self.workspace.hooks
        if hooks.has_listeners:
            hooks.emit(events_from(result, self.id, _loaders(self)))
        return result

    return call  # type: ignore[return-value]


def filter_denied(method: _F) -> _F:
    """A Session search or listing whose results leave out denied paths."""

    @functools.wraps(method)
    def call(self: SessionContext, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        hooks = self.workspace.hooks
        if not hooks.denies_anything:
            return result
        if hasattr(result, "paths"):  # GlobResult
            paths = tuple(path for path in result.paths if not hooks.is_denied(path, is_dir=None))
            return attrs.evolve(result, paths=paths)
        if hasattr(result, "matches"):  # GrepResult
            kept = tuple(m for m in result.matches if not hooks.is_denied(m.path, is_dir=None))
            return attrs.evolve(result, matches=kept)
        entries = tuple(
            entry
            for entry in result.entries
            if not hooks.is_denied(entry.path.replace(os.sep, "/"), is_dir=entry.type == "dir")
        )
        return attrs.evolve(result, entries=entries)

    return call  # type: ignore[return-value]
