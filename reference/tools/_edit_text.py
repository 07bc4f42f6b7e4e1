"""Edit's work on a text in memory, shared by every session whatever holds its files.

The local Edit (``_edit``), the notebook edit (``_notebook``) and the remote session
(``remote._remote``) check their edits, create a missing file, apply the matching
cascade and describe the result with these functions; none touches the disk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from editspec.reference import _errors
from editspec.reference._arguments import check_bool, check_integer, check_text
from editspec.reference._errors import ToolError
from editspec.reference._limits import Limits
from editspec.reference._results import EditSpec
from editspec.reference.matching._matching import Edited, edit_text
from editspec.reference.text import _text
from editspec.reference.text._memo import LineIndex

NOTEBOOK_SUFFIX = ".ipynb"
OPERATION = "patch"

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


def require_creation(shown: str, specs: Sequence[EditSpec], expected_sha256: str | None) -> None:
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


def apply_specs(
    shown: str,
    text: str,
    specs: Sequence[EditSpec],
    newline: str | None,
    lines: LineIndex | None = None,
) -> Edited:
    """Every edit matched and applied in order; NO_CHANGE when the text stays. Spec: EDIT-*."""
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


def line_breaks_after(
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


def newline_after(old_text: str, decoded: _text.DecodedText | None, edited: Edited) -> str:
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


def check_edit_size(limits: Limits, shown: str, size: int, verb: str) -> None:
    """TOO_LARGE for a file over ``limits.edit_file_bytes``. Spec: LIMIT-*."""
    limit = limits.edit_file_bytes
    if size > limit:
        raise ToolError(
            _errors.TOO_LARGE,
            f"{shown} {verb} {size} bytes; files over {limit} bytes are not edited",
            path=shown,
            size=size,
            limit=limit,
        )


def growth_warning(limits: Limits, shown: str, before: int, after: int) -> tuple[str, ...]:
    """The warning of an edit that grows a file more than ``growth_warning_factor`` times."""
    factor = limits.growth_warning_factor
    if before and after > factor * before:
        return (
            f"{shown} grew from {before} to {after} bytes, more than {factor} times; "
            "check that the edit replaced what was intended",
        )
    return ()
