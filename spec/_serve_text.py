"""The text of ``editspec serve``'s tool results: what a model reads.

A tool result carries two views of one outcome. The structured content holds every
field of the engine's result, for programs (the suite's MCP adapter reads only that);
the text content is written for a model, in the shape agents' own file tools use:

* ``read``: one header line with the facts a model needs before it edits (path, the
  lines shown of how many, size, encoding, newline style, BOM, and whether the text was
  cut short and where to continue), then the lines, numbered as ``cat -n`` numbers
  them. A binary file is the header and a hex preview, never decoded text.
* ``write``, ``edit``, ``edit_notebook`` and ``apply_patch``: a one-line summary (what
  changed, how edits matched, snapshot and warnings), then the unified diff.
* searches and listings: one match, path or entry per line, with a last line that says
  whether the list was cut.
* errors: ``CODE: message``, then the hint a model needs to recover (``NOT_READ``: read
  the file first; ``STALE``: read it again; ...).

Nothing here changes what a call does or what its structured content says; the text
is derived from the same JSON data, after the fact.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

# What to do next, per error code: the part of a refusal a model acts on.
ERROR_HINTS: Mapping[str, str] = {
    "OUTSIDE_WORKSPACE": "Use a path inside the workspace root (relative paths are resolved "
    "against it); symlinks that lead out of the root are refused too.",
    "NOT_FOUND": "Check the path with glob or list_directory.",
    "ALREADY_EXISTS": "The target already exists: read it and edit it, or choose another path.",
    "IS_A_DIRECTORY": "The path is a directory: use list_directory, or name a file inside it.",
    "NOT_READ": "Read the whole file with read (same session_id) first, then retry; or pass "
    "expected_sha256 with the file's current sha256.",
    "STALE": "The file changed since this session read it: read it again, then redo the "
    "change against its current content.",
    "NO_MATCH": "old_string was not found: read the file again and copy the text exactly, "
    "whitespace and line breaks included.",
    "AMBIGUOUS": "old_string matches more than once: include more surrounding lines, pass "
    "line, before or after to choose one, or set replace_all to change every one.",
    "NO_CHANGE": "old_string and new_string are the same: there is nothing to change.",
    "BINARY": "The file is binary: text edits do not apply; write replaces it whole "
    "(content_base64).",
    "TOO_LARGE": "Read a range (start_line and end_line, or start_byte and max_bytes), or split "
    "the change into smaller ones.",
    "INVALID_ARGUMENT": "Check the arguments against the tool's input schema.",
    "PATCH_SYNTAX": "Send the patch as '*** Begin Patch' ... '*** End Patch' (Add File, Update "
    "File with @@ hunks, Delete File), or as a unified diff.",
    "UNSUPPORTED": "This operation does not apply to this file; the message says what does.",
    "CONFLICT": "A file changed after the snapshot, so nothing was rewound: read the files "
    "and fix them with edit instead.",
    "CORRUPT_JOURNAL": "An interrupted transaction's journal is unreadable and nothing was "
    "touched: a person has to look at the state directory.",
    "NEEDS_RECOVERY": "An interrupted transaction must be finished first: call recover, then "
    "retry.",
    "IO_ERROR": "The file system failed and nothing changed: retry once, then report it.",
    "CANCELLED": "The search was cancelled: narrow it (path, include) and retry.",
    "DENIED": "The host does not allow this path: do not retry it or look for a way around.",
}

_PREVIEW_CHARS = 64  # of the hex preview, in the read header's binary line


def error_text(code: str | None, message: str, details: Mapping[str, Any] | None = None) -> str:
    """``CODE: message``, the paths probably meant (``did_you_mean``) and, on the last
    line, what to do about it."""
    if code is None:
        return message
    hint = ERROR_HINTS.get(code)
    lines = [f"{code}: {message}"]
    meant = (details or {}).get("did_you_mean")
    if isinstance(meant, (list, tuple)) and meant:
        lines.append("did you mean: " + ", ".join(str(path) for path in meant))
    if hint:
        lines.append(hint)
    return "\n".join(lines)


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}es" if word.endswith(("ch", "s")) else f"{count} {word}s"


def _warnings(data: Mapping[str, Any]) -> str:
    warnings = data.get("warnings") or []
    return "".join(f"\nwarning: {warning}" for warning in warnings)


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "none"


# -- read ----------------------------------------------------------------------------------


def read_header(data: Mapping[str, Any]) -> str:
    """One line: what part of the file is shown, and how it is encoded."""
    path, total_lines = data["path"], data["total_lines"]
    size = _plural(data["total_bytes"], "byte")
    if data["encoding"] == "binary":
        return f"{path}: binary file, {size}, {data.get('mime') or 'unknown type'}"
    facts = [data["encoding"] + (" with BOM" if data.get("bom") else ""), data["newline"]]
    if total_lines == 0 or not data["content"]:
        shown = f"empty ({size})" if data["total_bytes"] == 0 else f"no lines shown, {size}"
    else:
        shown = f"lines {data['start_line']}-{data['end_line']} of {total_lines}, {size}"
    header = f"{path}: {shown}, {', '.join(facts)}"
    if data.get("truncated"):
        header += f"; truncated at byte {data.get('end_byte', 0)}"
    return header


def _numbered(content: str, first_line: int) -> str:
    lines = content.splitlines()
    width = max(6, len(str(first_line + len(lines))))
    # One C-level format per line (an f-string with a nested width spec costs twice as much
    # on a 1 MiB read); numbers are positive, so "%Nd" pads them as ">N" does.
    return "\n".join(map(f"%{width}d\t%s".__mod__, enumerate(lines, first_line)))


def read_text(data: Mapping[str, Any]) -> str:
    """The header line, then the lines shown, numbered (a binary file: a hex preview)."""
    header = read_header(data) + _warnings(data)
    if data["encoding"] == "binary":
        preview = (data.get("preview_hex") or "")[:_PREVIEW_CHARS]
        return f"{header}\nhex: {preview}" if preview else header
    if not data["content"]:
        return header
    return f"{header}\n{_numbered(data['content'], data['start_line'])}"


# -- changes -------------------------------------------------------------------------------


def _with_diff(summary: str, diff: str) -> str:
    diff = diff.rstrip("\n")
    return f"{summary}\n{diff}" if diff else summary


def _snapshot(data: Mapping[str, Any]) -> str:
    return "; snapshot saved" if data.get("snapshot_created") else ""


def write_text(data: Mapping[str, Any]) -> str:
    verb = "created" if data["operation"] == "create" else "replaced"
    summary = (
        f"{verb} {data['path']}: {_plural(data['bytes_written'], 'byte')}, {data['newline']}, "
        f"sha256 {_short(data['new_sha256'])}{_snapshot(data)}"
    )
    return _with_diff(summary + _warnings(data), data["diff"])


def edit_text(data: Mapping[str, Any]) -> str:
    matched = ", ".join(
        f"{_plural(item['count'], 'replacement')} at line {item['line']} ({item['matched_by']})"
        for item in data["replacements"]
    )
    summary = (
        f"edited {data['path']}: {matched}; sha256 {_short(data['new_sha256'])}{_snapshot(data)}"
    )
    return _with_diff(summary + _warnings(data), data["diff"])


def notebook_text(data: Mapping[str, Any]) -> str:
    cell = f"cell {data['cell_id']}" if data.get("cell_id") else "cell"
    summary = (
        f"{data['mode']} {data['cell_type']} {cell} at index {data['index']} of {data['path']}; "
        f"sha256 {_short(data['new_sha256'])}{_snapshot(data)}"
    )
    return _with_diff(summary + _warnings(data), data["diff"])


def patch_text(data: Mapping[str, Any]) -> str:
    changes = data["changes"]
    listed = ", ".join(
        f"{change['op']} {change['path']}"
        + (f" -> {change['move_to']}" if change.get("move_to") else "")
        for change in changes
    )
    summary = f"patch applied to {_plural(len(changes), 'file')}: {listed}{_snapshot(data)}"
    diffs = "\n".join(change["diff"].rstrip("\n") for change in changes if change["diff"])
    return _with_diff(summary + _warnings(data), diffs)


# -- searches and the rest --------------------------------------------------------------------


def _cut(truncated: bool, shown: int, what: str) -> str:
    return f"(truncated after {_plural(shown, what)})" if truncated else f"({_plural(shown, what)})"


def glob_text(data: Mapping[str, Any]) -> str:
    paths = data["paths"]
    footer = _cut(data["truncated"], len(paths), "path")
    return "\n".join([*paths, footer]) if paths else "no files match"


def grep_text(data: Mapping[str, Any]) -> str:
    matches = data["matches"]
    searched = _plural(data["files_searched"], "file")
    if not matches:
        return f"no matches ({searched} searched)"
    lines = [f"{m['path']}:{m['line']}:{m['column']}: {m['text']}" for m in matches]
    footer = _cut(data["truncated"], len(matches), "match")
    return "\n".join([*lines, f"{footer[:-1]}, {searched} searched)"])


def list_text(data: Mapping[str, Any]) -> str:
    lines = []
    for entry in data["entries"]:
        if entry["type"] == "dir":
            lines.append(f"{entry['path']}/")
        elif entry["type"] == "symlink":
            lines.append(f"{entry['path']} -> {entry.get('symlink_target')}")
        else:
            lines.append(f"{entry['path']} ({_plural(entry['size'], 'byte')})")
    if data.get("next_cursor"):
        lines.append(f"(more entries: pass cursor={data['next_cursor']!r})")
    return "\n".join(lines) if lines else "the directory is empty"


def rewind_text(data: Mapping[str, Any]) -> str:
    restored = data["restored"]
    if not restored:
        return "nothing to rewind"
    return "rewound:\n" + "\n".join(f"{item['action']} {item['path']}" for item in restored)


def recover_text(data: Mapping[str, Any]) -> str:
    parts = [
        f"{_plural(len(data[key]), 'transaction')} {label}"
        for key, label in (("rolled_back", "rolled back"), ("rolled_forward", "rolled forward"))
    ]
    return f"recovered: {', '.join(parts)}, {_plural(len(data['cleaned']), 'leftover')} removed"


_RENDERERS: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    "read": read_text,
    "write": write_text,
    "edit": edit_text,
    "edit_notebook": notebook_text,
    "apply_patch": patch_text,
    "glob": glob_text,
    "grep": grep_text,
    "list_directory": list_text,
    "rewind": rewind_text,
    "recover": recover_text,
}


def result_text(tool: str, data: Any) -> str:
    """The text content of a successful call of ``tool`` (its JSON data, for another tool)."""
    render = _RENDERERS.get(tool)
    if render is None or not isinstance(data, dict):
        return json.dumps(data, ensure_ascii=False)
    return render(data)
