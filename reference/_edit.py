"""Edit: string replacements in one file, all or nothing (DESIGN §4 "Edit").

The flow, and where each failure is raised:

1. The arguments: the edits are EditSpecs or mappings with the same keys, at least one
   (INVALID_ARGUMENT); the path is resolved and confined (OUTSIDE_WORKSPACE, ...);
   notebooks are UNSUPPORTED.
2. Under the lock of the file's canonical key: the bytes are read (NOT_FOUND,
   IS_A_DIRECTORY, TOO_LARGE), the session must have read them in full at their
   current hash or give ``expected_sha256`` (NOT_READ, STALE), and they must decode
   as text (BINARY).
3. In memory: every edit is matched and applied in order on the result of the one
   before (``_matching``: NO_MATCH, AMBIGUOUS, NO_CHANGE); the new text is encoded
   like the old one (encoding, BOM; line breaks are the matching's business).
4. ``_write.replace_locked`` publishes atomically after a byte-for-byte re-check of the
   old bytes, records the snapshot (best effort) and the session's new access record.

An empty ``old_string`` creates a missing file, or fills an existing empty one.
Nothing touches the disk before step 4, so any failure leaves the file as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from editspec.reference import _errors, _text
from editspec.reference._arguments import check_bool, check_integer, check_text
from editspec.reference._diff import unified_diff
from editspec.reference._errors import ToolError
from editspec.reference._matching import Edited, edit_text
from editspec.reference._memo import LineIndex
from editspec.reference._paths import MISSING, WorkspacePath
from editspec.reference._results import EditResult, EditSpec, Replacement

if TYPE_CHECKING:
    from editspec.reference._workspace import Session, Workspace

NOTEBOOK_SUFFIX = ".ipynb"
OPERATION = "patch"
_RESOLVE_ATTEMPTS = 3

_SPEC_FIELDS = frozenset(("old_string", "new_string", "replace_all", "line", "before", "after"))


def coerce_edits(edits: object, *, max_edits: int | None = None) -> tuple[EditSpec, ...]:
    """The edits as EditSpecs: EditSpec or mappings with its keys; at least one.

    Each field is checked here, before any I/O (types, a lone surrogate in a string, a
    line number past 2**63 - 1); more than ``max_edits`` edits is TOO_LARGE
    (``Limits.edits_per_call``). Spec: EDIT-*.
    """
    if isinstance(edits, (EditSpec, Mapping)):
        edits = [edits]
    if isinstance(edits, (str, bytes)) or not isinstance(edits, Sequence):
        raise ToolError(_errors.INVALID_ARGUMENT, "edits must be a list of EditSpec")
    if not edits:
        raise ToolError(_errors.INVALID_ARGUMENT, "edits is empty; give at least one EditSpec")
    if max_edits is not None and len(edits) > max_edits:
        raise ToolError(
            _errors.TOO_LARGE,
            f"{len(edits)} edits in one call (at most {max_edits})",
            limit="edits_per_call",
            maximum=max_edits,
            size=len(edits),
        )
    specs: list[EditSpec] = []
    for index, item in enumerate(edits):
        if isinstance(item, EditSpec):
            specs.append(_checked_spec(item, index))
            continue
        if not isinstance(item, Mapping):
            raise ToolError(
                _errors.INVALID_ARGUMENT,
                f"edit {index + 1} is a {type(item).__name__}; expected an EditSpec or a mapping",
                edit_index=index,
            )
        unknown = sorted(str(key) for key in item if key not in _SPEC_FIELDS)
        missing = [key for key in ("old_string", "new_string") if key not in item]
        if unknown or missing:
            problem = f"unknown keys {unknown}" if unknown else f"missing {missing}"
            raise ToolError(
                _errors.INVALID_ARGUMENT, f"edit {index + 1}: {problem}", edit_index=index
            )
        fields: dict[str, Any] = dict(item)
        specs.append(_checked_spec(EditSpec(**fields), index))
    return tuple(specs)


def _checked_spec(spec: EditSpec, index: int) -> EditSpec:
    try:
        check_text("old_string", spec.old_string, empty=True, nul=True)
        check_text("new_string", spec.new_string, empty=True, nul=True)
        check_bool("replace_all", spec.replace_all)
        check_integer("line", spec.line, minimum=1)
        check_text("before", spec.before, optional=True, nul=True)
        check_text("after", spec.after, optional=True, nul=True)
    except ToolError as exc:
        raise ToolError(
            exc.code, f"edit {index + 1}: {exc.message}", edit_index=index, **exc.details
        ) from None
    return spec


def edit(
    session: Session,
    path: str,
    edits: Sequence[EditSpec],
    *,
    expected_sha256: str | None = None,
    message_id: str | None = None,
) -> EditResult:
    """Apply string replacements to one file, all or nothing. Spec: EDIT-*, TRACK-*, WRITE-*."""
    from editspec.reference._write import check_expected_sha256, check_message_id

    workspace = session.workspace
    specs = coerce_edits(edits, max_edits=workspace.limits.edits_per_call)
    expected = check_expected_sha256(expected_sha256)
    message = check_message_id(message_id)
    for _ in range(_RESOLVE_ATTEMPTS):
        target = workspace.resolve(path)
        _refuse_notebook(target)
        with workspace.locks.hold([target.canonical_key]):
            locked = workspace.resolve(path)
            if locked.canonical_key != target.canonical_key:
                continue  # a link changed between resolution and locking: start over
            return _edit_locked(session, locked, specs, expected, message)
    raise ToolError(
        _errors.STALE, f"{path} kept changing where it leads while it was being edited", path=path
    )


def _refuse_notebook(target: WorkspacePath) -> None:
    for name in (target.logical, target.real):
        if name.lower().endswith(NOTEBOOK_SUFFIX):
            raise ToolError(
                _errors.UNSUPPORTED,
                f"{target.logical_relative} is a Jupyter notebook; edit its cells with "
                "Session.edit_notebook (notebook editing) instead of replacing text in its JSON",
                path=target.logical_relative,
            )


def _edit_locked(
    session: Session,
    target: WorkspacePath,
    specs: Sequence[EditSpec],
    expected_sha256: str | None,
    message_id: str | None,
) -> EditResult:
    from editspec.reference._write import refuse_non_file, replace_locked

    workspace = session.workspace
    shown = target.logical_relative
    refuse_non_file(target)
    old_bytes = _read_current(workspace, target)
    old_digest: Callable[[], str] | None = None
    if old_bytes is None:
        _require_creation(shown, specs, expected_sha256)
    else:
        old_digest = workspace.memo.sha256_later(target.canonical_key, old_bytes)
    # The in-memory edit runs while the old bytes are hashed; its failures are raised
    # only after the freshness check, which comes first (NOT_READ/STALE, then the rest).
    plan: _Plan | None = None
    failure: ToolError | None = None
    try:
        plan = _plan(workspace, target, old_bytes, specs)
    except ToolError as error:
        failure = error
    old_sha256 = None
    if old_digest is not None:
        old_sha256 = old_digest()
        workspace.access.require_fresh(
            session.id,
            target.canonical_key,
            current_sha256=old_sha256,
            expected_sha256=expected_sha256,
            display_path=shown,
        )
    if failure is not None:
        raise failure
    assert plan is not None
    # The new bytes are hashed while they are written; the hash is asked for after.
    snapshot_created, write_warnings = replace_locked(
        session,
        target,
        old_bytes,
        plan.new_bytes,
        message_id=message_id,
        new_sha256=plan.new_digest,
        operation="edit",
    )
    new_sha256 = plan.new_digest()
    return EditResult(
        path=shown,
        operation=OPERATION,
        old_sha256=old_sha256,
        new_sha256=new_sha256,
        bytes_written=len(plan.new_bytes),
        newline=plan.newline,
        diff=plan.diff,
        snapshot_created=snapshot_created,
        replacements=plan.replacements,
        warnings=plan.warnings + write_warnings,
        backup_ref=message_id if snapshot_created else None,
    )


@attrs.frozen(kw_only=True)
class _Plan:
    """An edit computed in memory: what to write and what to report."""

    new_bytes: bytes
    new_digest: Callable[[], str]
    replacements: tuple[Replacement, ...]
    diff: str
    newline: str
    warnings: tuple[str, ...]


def _plan(
    workspace: Workspace, target: WorkspacePath, old_bytes: bytes | None, specs: Sequence[EditSpec]
) -> _Plan:
    """Decode, apply every edit, encode and describe the change; no disk access."""
    shown = target.logical_relative
    decoded: _text.DecodedText | None = None
    text = ""
    if old_bytes is not None:
        decoded = workspace.memo.decode(target.canonical_key, old_bytes)
        if decoded is None:
            raise ToolError(
                _errors.BINARY, f"{shown} is a binary file; it cannot be edited as text", path=shown
            )
        text = decoded.text
    lines = (
        workspace.memo.line_index(target.canonical_key, old_bytes)
        if old_bytes is not None
        else None
    )
    edited = _apply(shown, text, specs, decoded.newline if decoded is not None else None, lines)
    new_bytes = _text.encode(edited.text, decoded)
    _check_size(workspace, shown, len(new_bytes), "would be")
    new_digest = workspace.memo.sha256_later(target.canonical_key, new_bytes)
    diff = unified_diff(
        shown,
        text,
        edited.text,
        old_exists=old_bytes is not None,
        known_prefix=edited.unchanged_prefix,
        known_suffix=edited.unchanged_suffix,
        known_prefix_newlines=edited.prefix_newlines,
    )
    newline = _newline_after(text, decoded, edited)
    # The next read or edit of these bytes finds their text here instead of decoding.
    workspace.memo.remember_text(
        target.canonical_key,
        new_bytes,
        _text.DecodedText(
            text=edited.text,
            encoding=decoded.encoding if decoded is not None else _text.UTF8,
            bom=decoded.bom if decoded is not None else False,
            newline=newline,
            line_breaks=_line_breaks_after(text, decoded, edited),
        ),
        lines=(
            lines.after_edit(text, edited.text, edited.unchanged_prefix, edited.unchanged_suffix)
            if lines is not None
            else None
        ),
        # A decoded text holds no U+0000, so only the new strings could bring one.
        nul_free=decoded is not None and not any("\0" in spec.new_string for spec in specs),
    )
    return _Plan(
        new_bytes=new_bytes,
        new_digest=new_digest,
        replacements=edited.replacements,
        diff=diff,
        newline=newline,
        warnings=_growth_warning(workspace, shown, len(old_bytes or b""), len(new_bytes)),
    )


def _require_creation(shown: str, specs: Sequence[EditSpec], expected_sha256: str | None) -> None:
    """A missing file is created only by a first edit with an empty old_string."""
    if specs[0].old_string != "":
        raise ToolError(
            _errors.NOT_FOUND,
            f"{shown} does not exist; an edit with an empty old_string creates it",
            path=shown,
        )
    if expected_sha256 is not None:
        raise ToolError(
            _errors.STALE,
            f"{shown} does not exist, so it does not have the expected sha256",
            path=shown,
            expected_sha256=expected_sha256,
            current_sha256=None,
        )


def _apply(
    shown: str,
    text: str,
    specs: Sequence[EditSpec],
    newline: str | None,
    lines: LineIndex | None = None,
) -> Edited:
    try:
        edited = edit_text(text, specs, newline=newline, lines=lines)
    except ToolError as error:
        details = {**error.details, "path": shown}
        raise ToolError(error.code, f"{shown}: {error.message}", **details) from None
    if edited.text == text and text:
        raise ToolError(
            _errors.NO_CHANGE, f"{shown}: the edits leave the file as it is", path=shown
        )
    return edited


def _line_breaks_after(
    old_text: str, decoded: _text.DecodedText | None, edited: Edited
) -> int | None:
    """The number of line breaks of the edited text, counting only the changed region."""
    if decoded is None or decoded.line_breaks is None:
        return None
    new_text = edited.text
    start, suffix = edited.unchanged_prefix, edited.unchanged_suffix
    removed = old_text.count("\n", start, len(old_text) - suffix)
    added = new_text.count("\n", start, len(new_text) - suffix)
    return decoded.line_breaks - removed + added


def _newline_after(old_text: str, decoded: _text.DecodedText | None, edited: Edited) -> str:
    """The newline style of the edited text, scanning only around the changed region.

    Outside the region the old text's style holds. The region is widened to whole lines
    so that every line break outside it has the character before it outside it too.
    """
    new_text = edited.text
    if decoded is None or decoded.newline == _text.MIXED:
        return _text.newline_style(new_text)
    head = old_text.rfind("\n", 0, edited.unchanged_prefix) + 1
    # The first line break inside the unchanged suffix ends the region (in both texts).
    tail_new = new_text.find("\n", len(new_text) - edited.unchanged_suffix)
    if tail_new == -1:
        tail_new, tail_old = len(new_text), len(old_text)
    else:
        tail_old = tail_new + len(old_text) - len(new_text)
    styles = {_text.newline_style(new_text[head : tail_new + 1])}
    if head > 0 or old_text.find("\n", tail_old + 1) != -1:
        styles.add(decoded.newline)
    styles.discard(_text.NONE)
    if not styles:
        return _text.NONE
    return styles.pop() if len(styles) == 1 else _text.MIXED


def _read_current(workspace: Workspace, target: WorkspacePath) -> bytes | None:
    """The file's bytes (TOO_LARGE over the limit), or None when nothing is there."""
    if target.kind == MISSING:
        return None
    shown = target.logical_relative
    try:
        size = workspace.fs.lstat(target.real).st_size
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _errors.from_oserror(exc, shown, action="inspect") from exc
    _check_size(workspace, shown, size, "is")
    try:
        data = workspace.memo.read(workspace.fs, target.canonical_key, target.real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _errors.from_oserror(exc, shown, action="read") from exc
    _check_size(workspace, shown, len(data), "is")
    return data


def _check_size(workspace: Workspace, shown: str, size: int, verb: str) -> None:
    limit = workspace.limits.edit_file_bytes
    if size > limit:
        raise ToolError(
            _errors.TOO_LARGE,
            f"{shown} {verb} {size} bytes; files over {limit} bytes are not edited",
            path=shown,
            size=size,
            limit=limit,
        )


def _growth_warning(workspace: Workspace, shown: str, before: int, after: int) -> tuple[str, ...]:
    factor = workspace.limits.growth_warning_factor
    if before and after > factor * before:
        return (
            f"{shown} grew from {before} to {after} bytes, more than {factor} times; "
            "check that the edit replaced what was intended",
        )
    return ()
