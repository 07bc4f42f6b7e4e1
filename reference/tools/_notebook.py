"""Notebook cells: replace, insert or delete one cell of a ``.ipynb`` file (DESIGN §4, NB-*).

A notebook is JSON; a string edit of it breaks escaping and structure, so Edit refuses
it (UNSUPPORTED) and points here. ``edit_notebook`` changes one cell and nothing else:

* Cells are addressed by ``cell_id`` (nbformat 4.5+) or by 0-based ``index``. Insert
  puts the new cell at ``index`` (0..len), or right after the cell ``cell_id``, or at
  the end; replace and delete need exactly one of the two.
* A code cell whose source (or type) changes loses its outputs and its
  ``execution_count``: they describe code that is no longer there. Markdown and raw
  cells keep their attachments; a cell turned into code drops them (with a warning).
* The file's JSON layout is kept: indent, separators, key order, ``ensure_ascii`` style,
  trailing newline, newline style and BOM are detected by finding the serialization
  that reproduces the file exactly, and the edited document is written the same way,
  so a one-cell change is a one-cell diff. A file no style reproduces is written in
  Jupyter's own style, with a warning. New cells follow the key order of the file:
  sorted when every object in it is, else that of a cell already there.
* The document is validated with ``nbformat`` before and after (INVALID_ARGUMENT for a
  notebook that is not valid nbformat 4; UNSUPPORTED for other major versions, and
  when ``nbformat`` is not installed: the ``notebook`` extra).
* Everything else is as for Edit, through the workspace's store (``_store``): the
  freshness check (``expected_sha256`` stands in for a read), the key lock, the publish
  and the snapshot. Without ``Supports.binary`` no cell is edited (UNSUPPORTED).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any
from warnings import catch_warnings, simplefilter

import attrs

from editspec.reference import _errors
from editspec.reference._arguments import MESSAGE_ID_CHARS, check_integer, check_text, excerpt
from editspec.reference._errors import ToolError
from editspec.reference._results import NotebookResult
from editspec.reference._store import FilesSession, Target
from editspec.reference._supports import snapshot_message, unsupported
from editspec.reference.paths._paths import MISSING
from editspec.reference.text import _text
from editspec.reference.text._diff import unified_diff
from editspec.reference.tools._edit_text import check_edit_size
from editspec.reference.tools._write import (
    check_expected_sha256,
    check_message_id,
    refuse_non_file,
)

NOTEBOOK_SUFFIX = ".ipynb"
MODES: tuple[str, ...] = ("replace", "insert", "delete")
CELL_TYPES: tuple[str, ...] = ("code", "markdown", "raw")
_RESOLVE_ATTEMPTS = 3
_SEPARATORS: tuple[tuple[str, str], ...] = ((",", ": "), (", ", ": "), (",", ":"))
# nbformat's own order for the keys of a new cell, when the file gives no other.
_NEW_CELL_KEYS = ("cell_type", "execution_count", "id", "metadata", "outputs", "source")


@attrs.frozen(kw_only=True)
class JsonStyle:
    """How a notebook file is serialized, so it can be written back the same way."""

    indent: int | str | None
    separators: tuple[str, str]
    ensure_ascii: bool
    trailing_newline: bool
    sorted_keys: bool
    exact: bool  # False: no style reproduced the file; Jupyter's style is used

    def dumps(self, document: Any) -> str:
        text = json.dumps(
            document,
            indent=self.indent,
            separators=self.separators,
            ensure_ascii=self.ensure_ascii,
            sort_keys=self.sorted_keys and not self.exact,
        )
        return text + ("\n" if self.trailing_newline else "")


def detect_style(text: str, document: Any) -> JsonStyle:
    """The serialization that reproduces ``text`` (LF newlines) exactly. Spec: NB-*."""
    trailing = text.endswith("\n")
    sorted_keys = _all_sorted(document)
    for indent in _indent_candidates(text):
        for separators in _SEPARATORS:
            for ensure_ascii in (False, True):
                style = JsonStyle(
                    indent=indent,
                    separators=separators,
                    ensure_ascii=ensure_ascii,
                    trailing_newline=trailing,
                    sorted_keys=sorted_keys,
                    exact=True,
                )
                if style.dumps(document) == text:
                    return style
    return JsonStyle(
        indent=1,
        separators=(",", ": "),
        ensure_ascii=False,
        trailing_newline=True,
        sorted_keys=True,
        exact=False,
    )


def _indent_candidates(text: str) -> list[int | str | None]:
    first_break = text.find("\n")
    if first_break < 0 or first_break == len(text.rstrip("\n")):
        return [None]
    line = text[first_break + 1 :]
    width = len(line) - len(line.lstrip(" "))
    if width:
        return [width]
    if line.startswith("\t"):
        return ["\t"]
    return [0, None]


def _all_sorted(value: Any) -> bool:
    if isinstance(value, dict):
        keys = list(value)
        return keys == sorted(keys) and all(_all_sorted(item) for item in value.values())
    if isinstance(value, list):
        return all(_all_sorted(item) for item in value)
    return True


# -- arguments -------------------------------------------------------------------------


def _check_arguments(
    mode: object, cell_id: object, index: object, source: object, cell_type: object
) -> None:
    if not isinstance(mode, str) or mode not in MODES:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"mode must be one of {', '.join(MODES)}, not {excerpt(mode)}",
        )
    if cell_id is not None and (not isinstance(cell_id, str) or not cell_id):
        raise ToolError(_errors.INVALID_ARGUMENT, "cell_id must be a non-empty string")
    check_text("cell_id", cell_id, optional=True, max_chars=MESSAGE_ID_CHARS)
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
        raise ToolError(_errors.INVALID_ARGUMENT, "index must be a non-negative integer")
    check_integer("index", index, minimum=0)
    if cell_id is not None and index is not None:
        raise ToolError(_errors.INVALID_ARGUMENT, "give cell_id or index, not both")
    if mode != "insert" and cell_id is None and index is None:
        raise ToolError(_errors.INVALID_ARGUMENT, f"{mode} needs a cell_id or an index")
    if cell_type is not None and (not isinstance(cell_type, str) or cell_type not in CELL_TYPES):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"cell_type must be one of {', '.join(CELL_TYPES)}, not {excerpt(cell_type)}",
        )
    if mode == "delete":
        if source is not None or cell_type is not None:
            raise ToolError(_errors.INVALID_ARGUMENT, "delete takes no source and no cell_type")
    elif not isinstance(source, str):
        raise ToolError(_errors.INVALID_ARGUMENT, f"{mode} needs the cell's source as a string")


def _nbformat() -> Any:
    try:
        import nbformat
    except ImportError as exc:  # pragma: no cover - the notebook extra is part of the tests
        raise ToolError(
            _errors.UNSUPPORTED,
            "notebook editing needs nbformat: install editspec[notebook]",
        ) from exc
    return nbformat


# -- the operation ---------------------------------------------------------------------


def edit_notebook(
    session: FilesSession,
    path: str,
    *,
    cell_id: str | None = None,
    index: int | None = None,
    mode: str = "replace",
    source: str | None = None,
    cell_type: str | None = None,
    expected_sha256: str | None = None,
    message_id: str | None = None,
) -> NotebookResult:
    """Replace, insert or delete one notebook cell, atomically. Spec: NB-*, TRACK-*, WRITE-*."""
    if not session.workspace.supports.binary:
        raise unsupported("notebook editing")
    _check_arguments(mode, cell_id, index, source, cell_type)
    if source is not None:
        _text.encode(source)  # a lone surrogate is INVALID_ARGUMENT before any disk access
    expected = check_expected_sha256(expected_sha256)
    message = check_message_id(message_id)
    store = session.workspace.store
    request = _Request(mode=mode, cell_id=cell_id, index=index, source=source, cell_type=cell_type)
    for _ in range(_RESOLVE_ATTEMPTS):
        target = store.resolve(path)
        _require_notebook(target)
        with store.hold([target.canonical_key]):
            locked = store.resolve(path)
            if locked.canonical_key != target.canonical_key:
                continue  # a link changed between resolution and locking: start over
            return _edit_locked(session, locked, request, expected, message)
    raise ToolError(
        _errors.STALE, f"{path} kept changing where it leads while it was being edited", path=path
    )


@attrs.frozen(kw_only=True)
class _Request:
    mode: str
    cell_id: str | None
    index: int | None
    source: str | None
    cell_type: str | None


def _require_notebook(target: Target) -> None:
    shown = target.logical_relative
    if not shown.lower().endswith(NOTEBOOK_SUFFIX):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{shown} is not a notebook (.ipynb); use Edit for other files",
            path=shown,
        )
    refuse_non_file(target)
    if target.kind == MISSING:
        raise ToolError(_errors.NOT_FOUND, f"{shown} does not exist", path=shown)


def _edit_locked(
    session: FilesSession,
    target: Any,
    request: _Request,
    expected_sha256: str | None,
    message_id: str | None,
) -> NotebookResult:
    workspace = session.workspace
    shown = target.logical_relative
    _require_notebook(target)
    old_bytes = workspace.store.read_for_edit(target)
    if old_bytes is None:
        raise ToolError(_errors.NOT_FOUND, f"{shown} does not exist", path=shown)
    old_sha256 = _text.sha256_hex(old_bytes)
    workspace.access.require_fresh(
        session.id,
        target.canonical_key,
        current_sha256=old_sha256,
        expected_sha256=expected_sha256,
        display_path=shown,
    )
    plan = plan_edit(shown, old_bytes, request)
    check_edit_size(workspace.limits, shown, len(plan.new_bytes), "would be")
    workspace.hooks.run_validators(shown, "notebook", old_bytes, plan.new_bytes)
    snapshot_created, write_warnings = workspace.store.replace(
        session.id,
        target,
        old_bytes,
        plan.new_bytes,
        message_id=snapshot_message(workspace.supports, message_id),
        new_sha256=None,
        operation="notebook",
    )
    return NotebookResult(
        path=shown,
        operation="notebook",
        mode=request.mode,
        cell_id=plan.cell_id,
        index=plan.index,
        cell_type=plan.cell_type,
        old_sha256=old_sha256,
        new_sha256=_text.sha256_hex(plan.new_bytes),
        bytes_written=len(plan.new_bytes),
        newline=plan.newline,
        diff=plan.diff,
        snapshot_created=snapshot_created,
        warnings=plan.warnings + write_warnings,
    )


@attrs.frozen(kw_only=True)
class NotebookPlan:
    """A cell edit computed in memory: the new bytes and what to report."""

    new_bytes: bytes
    cell_id: str | None
    index: int
    cell_type: str
    diff: str
    newline: str
    warnings: tuple[str, ...]


def plan_edit(shown: str, old_bytes: bytes, request: _Request) -> NotebookPlan:
    """Parse, validate, change one cell, validate, serialize in the file's style; no disk."""
    nbformat = _nbformat()
    decoded = _text.decode(old_bytes)
    if decoded is None:
        raise ToolError(_errors.BINARY, f"{shown} is not a text file", path=shown)
    text = decoded.text.replace("\r\n", "\n") if decoded.newline == _text.CRLF else decoded.text
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ToolError(
            _errors.INVALID_ARGUMENT, f"{shown} is not valid JSON: {exc}", path=shown
        ) from exc
    _validate(nbformat, shown, document, "is")
    style = detect_style(text, document)
    cells: list[Any] = document["cells"]
    warnings: list[str] = []
    if not style.exact:
        warnings.append(
            f"{shown}: its JSON layout could not be reproduced exactly; it is written in "
            "Jupyter's layout, so lines outside the edited cell may change too"
        )
    position = _position(shown, document, request)
    if request.mode == "delete":
        removed = cells.pop(position)
        result_id, result_type = removed.get("id"), removed["cell_type"]
    elif request.mode == "insert":
        new_type = request.cell_type or "code"
        cell = _new_cell(nbformat, document, new_type, request.source or "", style)
        cells.insert(position, cell)
        result_id, result_type = cell.get("id"), new_type
    else:
        cell = cells[position]
        new_type = request.cell_type or cell["cell_type"]
        cells[position] = _replaced_cell(
            shown, document, cell, new_type, request.source or "", style, warnings
        )
        result_id, result_type = cells[position].get("id"), new_type
    _validate(nbformat, shown, document, "would not be")
    new_text = style.dumps(document)
    if new_text == text:
        raise ToolError(
            _errors.NO_CHANGE, f"{shown}: the cell edit leaves the notebook as it is", path=shown
        )
    written = new_text.replace("\n", "\r\n") if decoded.newline == _text.CRLF else new_text
    return NotebookPlan(
        new_bytes=_text.encode(written, decoded),
        cell_id=result_id if isinstance(result_id, str) else None,
        index=position,
        cell_type=result_type,
        diff=unified_diff(shown, decoded.text, written),
        newline=_text.newline_style(written),
        warnings=tuple(warnings),
    )


def _validate(nbformat: Any, shown: str, document: Any, verb: str) -> None:
    major = document.get("nbformat") if isinstance(document, dict) else None
    if isinstance(major, int) and major != 4:
        raise ToolError(
            _errors.UNSUPPORTED,
            f"{shown} is nbformat {major}; cell editing supports nbformat 4",
            path=shown,
        )
    if major is None or not isinstance(document.get("cells"), list):
        raise ToolError(
            _errors.INVALID_ARGUMENT, f"{shown} {verb} a notebook (no list of cells)", path=shown
        )
    try:
        with catch_warnings():
            # nbformat warns (and will one day fail) about cells without ids in a 4.5
            # notebook; the validation error, not the warning, is what is reported.
            simplefilter("ignore")
            nbformat.validate(copy.deepcopy(document))
    except nbformat.ValidationError as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{shown} {verb} a valid notebook: {message}",
            path=shown,
        ) from exc


def _has_ids(document: Any) -> bool:
    minor = document.get("nbformat_minor", 0)
    return isinstance(minor, int) and minor >= 5


def _position(shown: str, document: Any, request: _Request) -> int:
    cells: list[Any] = document["cells"]
    if request.cell_id is not None:
        if not _has_ids(document):
            raise ToolError(
                _errors.INVALID_ARGUMENT,
                f"{shown} has no cell ids (nbformat < 4.5); address its cells by index",
                path=shown,
            )
        for number, cell in enumerate(cells):
            if cell.get("id") == request.cell_id:
                return number + 1 if request.mode == "insert" else number
        raise ToolError(
            _errors.NOT_FOUND,
            f"{shown} has no cell with id {request.cell_id!r}",
            path=shown,
            cell_id=request.cell_id,
        )
    if request.index is None:
        return len(cells)  # insert at the end
    limit = len(cells) if request.mode == "insert" else len(cells) - 1
    if request.index > limit:
        raise ToolError(
            _errors.NOT_FOUND,
            f"{shown} has {len(cells)} cells; there is no cell {request.index} to {request.mode}"
            if request.mode != "insert"
            else f"{shown} has {len(cells)} cells; a cell can be inserted at 0..{len(cells)}",
            path=shown,
            index=request.index,
        )
    return request.index


def _source_like(document: Any, cell: Any | None, source: str) -> str | list[str]:
    """The source in the form the file uses: a list of lines (Jupyter's) or one string."""
    reference = cell["source"] if cell is not None else None
    if reference is None:
        forms = [isinstance(item.get("source"), str) for item in document["cells"]]
        as_string = bool(forms) and sum(forms) > len(forms) / 2
    else:
        as_string = isinstance(reference, str)
    return source if as_string else source.splitlines(keepends=True)


def _ordered(cell: dict[str, Any], document: Any, style: JsonStyle) -> dict[str, Any]:
    """A cell's keys in the file's order: sorted, or that of a cell of the same type."""
    if style.sorted_keys or not style.exact:
        return {key: cell[key] for key in sorted(cell)}
    template: list[str] = []
    for other in document["cells"]:
        if other is not cell and other.get("cell_type") == cell["cell_type"]:
            template = list(other)
            break
    if not template:
        template = list(_NEW_CELL_KEYS)
    known = [key for key in template if key in cell]
    return {key: cell[key] for key in known + [key for key in cell if key not in known]}


def _new_cell(
    nbformat: Any, document: Any, cell_type: str, source: str, style: JsonStyle
) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "cell_type": cell_type,
        "metadata": {},
        "source": _source_like(document, None, source),
    }
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    if _has_ids(document):
        cell["id"] = _fresh_id(nbformat, document)
    return _ordered(cell, document, style)


def _fresh_id(nbformat: Any, document: Any) -> str:
    taken = {cell.get("id") for cell in document["cells"]}
    make: Callable[[], str] = nbformat.corpus.words.generate_corpus_id
    while True:
        candidate = make()
        if candidate not in taken:
            return candidate


def _replaced_cell(
    shown: str,
    document: Any,
    cell: dict[str, Any],
    cell_type: str,
    source: str,
    style: JsonStyle,
    warnings: list[str],
) -> dict[str, Any]:
    """The cell with its new source (and type); a code cell's outputs are cleared."""
    new_cell = dict(cell)
    new_cell["source"] = _source_like(document, cell, source)
    new_cell["cell_type"] = cell_type
    if cell_type == "code":
        # Outputs describe code that is no longer there (NB-*).
        new_cell["outputs"] = []
        new_cell["execution_count"] = None
        if new_cell.pop("attachments", None):
            warnings.append(f"{shown}: a code cell has no attachments; they were dropped")
    else:
        new_cell.pop("outputs", None)
        new_cell.pop("execution_count", None)
    if cell_type == cell["cell_type"]:
        # Same type: keep the cell's own key order, new keys (none expected) at the end.
        return {
            **{key: new_cell[key] for key in cell if key in new_cell},
            **{key: value for key, value in new_cell.items() if key not in cell},
        }
    return _ordered(new_cell, document, style)
