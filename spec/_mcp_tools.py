"""The MCP tools of ``editspec serve``: names, argument schemas, result schemas (as data).

One tool per operation of the driver contract (DESIGN §2), named as the operation:
``read``, ``write``, ``edit``, ``edit_notebook``, ``apply_patch``, ``glob``, ``grep``,
``list_directory``, ``rewind``, ``manifest``, ``delete``, ``move`` and ``recover``.
Every tool but ``recover`` takes a ``session_id`` (default ``"default"``): read records
and snapshot history belong to a session, as in-process.

Arguments are checked here, not by the SDK, so a wrong type is the engine's
``INVALID_ARGUMENT`` (a tool error with a code), never a protocol error without one.
Results are the engine's attrs result types as JSON objects (tuples become arrays); the
output schemas are derived from those classes, so they cannot drift from them.
"""

from __future__ import annotations

import base64
import binascii
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from editspec.reference import (
    DeleteResult,
    EditResult,
    EditSpec,
    GlobResult,
    GrepResult,
    ListResult,
    ManifestResult,
    MoveResult,
    NotebookResult,
    PatchResult,
    ReadResult,
    RecoveryReport,
    RewindResult,
    ToolError,
    Workspace,
    WriteResult,
)
from editspec.spec._jsonrpc_guard import excerpt

DEFAULT_SESSION = "default"

_JSON_TYPES = {"string": str, "integer": int, "boolean": bool}


@attrs.frozen
class Arg:
    """One argument of a tool: JSON type, whether it is required, and what it means."""

    name: str
    type: str  # "string" | "integer" | "boolean" | "edits"
    description: str
    required: bool = False


@attrs.frozen
class ToolDef:
    """One MCP tool over one engine operation."""

    name: str
    description: str
    args: tuple[Arg, ...]
    result: type
    read_only: bool
    call: Callable[[Workspace, dict[str, Any]], Any]
    sessions: bool = True


# -- argument checking ---------------------------------------------------------------------


def _invalid(message: str, **details: Any) -> ToolError:
    return ToolError("INVALID_ARGUMENT", message, **details)


def _check_value(arg: Arg, value: Any) -> Any:
    if arg.type == "edits":
        return _check_edits(value)
    expected = _JSON_TYPES[arg.type]
    # JSON has no separate boolean and integer: true is not 1 here.
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise _invalid(f"{arg.name} must be of type {arg.type}", argument=arg.name)
    return value


_EDIT_FIELDS: Mapping[str, Arg] = {
    arg.name: arg
    for arg in (
        Arg("old_string", "string", "the text to replace", required=True),
        Arg("new_string", "string", "the replacement text", required=True),
        Arg("replace_all", "boolean", "replace every occurrence"),
        Arg("line", "integer", "1-based line choosing between several matches"),
        Arg("before", "string", "text just before the match, choosing between several"),
        Arg("after", "string", "text just after the match, choosing between several"),
    )
}


def _check_edits(value: Any) -> list[EditSpec]:
    if not isinstance(value, list):
        raise _invalid("edits must be an array of objects", argument="edits")
    edits = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise _invalid(f"edits[{index}] must be an object", argument="edits")
        unknown = sorted(set(item) - set(_EDIT_FIELDS))
        if unknown:
            shown = ", ".join(excerpt(name) for name in unknown[:10])
            raise _invalid(f"edits[{index}] has unknown fields [{shown}]", argument="edits")
        fields: dict[str, Any] = {}
        for name, field in _EDIT_FIELDS.items():
            if item.get(name) is None:
                if field.required:
                    raise _invalid(f"edits[{index}] lacks {name}", argument="edits")
                continue
            fields[name] = _check_value(field, item[name])
        edits.append(EditSpec(**fields))
    return edits


def check_arguments(tool: ToolDef, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The call's arguments by name, typed; ``None`` (JSON null) means "not given"."""
    given = dict(arguments or {})
    known = {arg.name for arg in tool.args} | ({"session_id"} if tool.sessions else set())
    unknown = sorted(set(given) - known)
    if unknown:
        # Names quoted as excerpts, at most ten: an unknown key may be megabytes long.
        shown = [excerpt(name) for name in unknown[:10]]
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        raise _invalid(f"{tool.name} has no argument {', '.join(shown)}{more}", arguments=shown)
    checked: dict[str, Any] = {}
    for arg in tool.args:
        value = given.get(arg.name)
        if value is None:
            if arg.required:
                raise _invalid(f"{tool.name} needs {arg.name}", argument=arg.name)
            continue
        checked[arg.name] = _check_value(arg, value)
    if tool.sessions:
        session = given.get("session_id")
        checked["session_id"] = (
            DEFAULT_SESSION if session is None else _check_value(_SESSION_ARG, session)
        )
    return checked


_SESSION_ARG = Arg(
    "session_id",
    "string",
    "the agent session (conversation) making the call: read records and snapshot history "
    f"are per session (default {DEFAULT_SESSION!r})",
)


# -- operations ----------------------------------------------------------------------------


def _session_call(method: str, *positional: str) -> Callable[[Workspace, dict[str, Any]], Any]:
    def call(workspace: Workspace, args: dict[str, Any]) -> Any:
        session = workspace.session(args.pop("session_id"))
        values = [args.pop(name) for name in positional]
        return getattr(session, method)(*values, **args)

    return call


def _write(workspace: Workspace, args: dict[str, Any]) -> Any:
    text, encoded = args.pop("content", None), args.pop("content_base64", None)
    if (text is None) == (encoded is None):
        raise _invalid("write takes exactly one of content and content_base64")
    if encoded is not None:
        try:
            content: str | bytes = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _invalid(f"content_base64 is not base64: {exc}") from None
    else:
        content = text
    session = workspace.session(args.pop("session_id"))
    return session.write(args.pop("path"), content, **args)


def _recover(workspace: Workspace, args: dict[str, Any]) -> Any:
    return workspace.recover()


_PATH = Arg("path", "string", "relative to the workspace root, or absolute inside it", True)
_MESSAGE = Arg(
    "message_id", "string", "the agent message this change belongs to (snapshots and rewind)"
)
_EXPECTED = Arg(
    "expected_sha256",
    "string",
    "the file's current sha256: stands in for a read (compare-and-swap)",
)
_MAX_RESULTS = Arg("max_results", "integer", "stop after this many results (truncated=true)")

TOOLS: tuple[ToolDef, ...] = (
    ToolDef(
        name="read",
        description="Read a text file, a line range or a byte range of it. A full read lets "
        "this session replace or edit the file afterwards. Binary files come back with "
        "encoding 'binary', empty content, a MIME type and a hex preview.",
        args=(
            _PATH,
            Arg("start_line", "integer", "first line, 1-based"),
            Arg("end_line", "integer", "last line, 1-based and inclusive"),
            Arg("start_byte", "integer", "first byte offset, 0-based"),
            Arg("max_bytes", "integer", "at most this many bytes (cut at a character boundary)"),
            Arg("encoding", "string", "'auto' (default) or an encoding to decode with"),
        ),
        result=ReadResult,
        read_only=True,
        call=_session_call("read", "path"),
    ),
    ToolDef(
        name="write",
        description="Create a file, or replace one this session has read (or whose sha256 "
        "is given), atomically. Content is text (written as UTF-8) or base64 bytes.",
        args=(
            _PATH,
            Arg("content", "string", "the new content as text, written as UTF-8"),
            Arg("content_base64", "string", "the new content as base64-encoded bytes"),
            _EXPECTED,
            _MESSAGE,
        ),
        result=WriteResult,
        read_only=False,
        call=_write,
    ),
    ToolDef(
        name="edit",
        description="Replace text in a file this session has read: each edit's old_string "
        "must match once (exact first, then tolerant strategies), or every occurrence with "
        "replace_all. All edits apply, or none. Line endings, BOM and encoding are kept.",
        args=(
            _PATH,
            Arg("edits", "edits", "the replacements, applied in order", True),
            _EXPECTED,
            _MESSAGE,
        ),
        result=EditResult,
        read_only=False,
        call=_session_call("edit", "path", "edits"),
    ),
    ToolDef(
        name="edit_notebook",
        description="Replace, insert or delete one cell of a Jupyter notebook (.ipynb) this "
        "session has read, by cell id or 0-based index; outputs of a replaced code cell are "
        "cleared and the file's JSON layout is kept.",
        args=(
            _PATH,
            Arg("cell_id", "string", "the cell's id (nbformat 4.5+)"),
            Arg("index", "integer", "the cell's 0-based index (insert: where the new cell goes)"),
            Arg("mode", "string", "'replace' (default), 'insert' or 'delete'"),
            Arg("source", "string", "the cell's new source (replace, insert)"),
            Arg("cell_type", "string", "'code', 'markdown' or 'raw'"),
            _EXPECTED,
            _MESSAGE,
        ),
        result=NotebookResult,
        read_only=False,
        call=_session_call("edit_notebook", "path"),
    ),
    ToolDef(
        name="apply_patch",
        description="Apply a multi-file patch (the '*** Begin Patch' format, or a unified "
        "diff) as one transaction: every file changes, or none does.",
        args=(Arg("patch", "string", "the patch text", True), _MESSAGE),
        result=PatchResult,
        read_only=False,
        call=_session_call("apply_patch", "patch"),
    ),
    ToolDef(
        name="glob",
        description="Find files by glob pattern, honouring .gitignore; newest first.",
        args=(
            Arg("pattern", "string", "a glob such as '**/*.py'", True),
            Arg("path", "string", "the directory to search (default: the root)"),
            _MAX_RESULTS,
        ),
        result=GlobResult,
        read_only=True,
        call=_session_call("glob", "pattern"),
    ),
    ToolDef(
        name="grep",
        description="Search file contents with a Python regular expression, honouring "
        ".gitignore and skipping binary files.",
        args=(
            Arg("pattern", "string", "a Python regular expression", True),
            Arg("path", "string", "the directory or file to search (default: the root)"),
            Arg("include", "string", "only files whose path matches this glob"),
            Arg("ignore_case", "boolean", "match case-insensitively"),
            _MAX_RESULTS,
        ),
        result=GrepResult,
        read_only=True,
        call=_session_call("grep", "pattern"),
    ),
    ToolDef(
        name="list_directory",
        description="List a directory: typed entries (symlinks with their targets), "
        "directories first, paged with an opaque cursor.",
        args=(
            Arg("path", "string", "the directory (default: the root)"),
            Arg("depth", "integer", "how many levels to descend (default 1)"),
            Arg("include_hidden", "boolean", "include names starting with '.'"),
            Arg("cursor", "string", "next_cursor of the previous page"),
            Arg("max_entries", "integer", "at most this many entries per page"),
            Arg("glob", "string", "only entries whose path below the directory matches"),
        ),
        result=ListResult,
        read_only=True,
        call=_session_call("list_directory"),
    ),
    ToolDef(
        name="rewind",
        description="Undo every change this session made at or after message_id, as one "
        "transaction; CONFLICT (and nothing changes) if a file changed since.",
        args=(Arg("message_id", "string", "the first message to undo", True),),
        result=RewindResult,
        read_only=False,
        call=_session_call("rewind", "message_id"),
    ),
    ToolDef(
        name="manifest",
        description="List every entry under a directory (path, type, size, sha256) and the "
        "manifest_sha256 that deleting or moving the whole tree requires.",
        args=(_PATH,),
        result=ManifestResult,
        read_only=True,
        call=_session_call("manifest", "path"),
    ),
    ToolDef(
        name="delete",
        description="Delete a file (read in this session, or expected_sha256 given), an "
        "empty directory, or a whole tree (manifest_sha256 from the manifest tool): kind "
        "must say which. All or nothing; restore_ref is the message id rewind takes to "
        "bring it back.",
        args=(
            _PATH,
            Arg("kind", "string", "'file', 'empty_dir' or 'tree': what is expected there", True),
            _EXPECTED,
            Arg("manifest_sha256", "string", "the tree's manifest_sha256 (kind 'tree')"),
            _MESSAGE,
        ),
        result=DeleteResult,
        read_only=False,
        call=_session_call("delete", "path"),
    ),
    ToolDef(
        name="move",
        description="Move a file (read in this session, or expected_sha256 given) or a "
        "directory (manifest_sha256 given) to a path that does not exist: never over an "
        "existing file. One rename; across file systems copy, verify and delete, reported "
        "with atomic=false and each step.",
        args=(
            Arg("source", "string", "the file or directory to move", True),
            Arg("destination", "string", "its new path; must not exist", True),
            _EXPECTED,
            Arg("manifest_sha256", "string", "a directory's manifest_sha256"),
            _MESSAGE,
        ),
        result=MoveResult,
        read_only=False,
        call=_session_call("move", "source", "destination"),
    ),
    ToolDef(
        name="recover",
        description="Finish or roll back interrupted transactions (also done at start).",
        args=(),
        result=RecoveryReport,
        read_only=False,
        call=_recover,
        sessions=False,
    ),
)

TOOLS_BY_NAME: Mapping[str, ToolDef] = {tool.name: tool for tool in TOOLS}


# -- schemas ---------------------------------------------------------------------------------


def _arg_schema(arg: Arg) -> dict[str, Any]:
    if arg.type == "edits":
        return {
            "type": "array",
            "description": arg.description,
            "items": {
                "type": "object",
                "properties": {name: _arg_schema(field) for name, field in _EDIT_FIELDS.items()},
                "required": [name for name, field in _EDIT_FIELDS.items() if field.required],
            },
        }
    schema: dict[str, Any] = {"type": arg.type if arg.required else [arg.type, "null"]}
    schema["description"] = arg.description
    return schema


def input_schema(tool: ToolDef) -> dict[str, Any]:
    args = (*tool.args, _SESSION_ARG) if tool.sessions else tool.args
    return {
        "type": "object",
        "properties": {arg.name: _arg_schema(arg) for arg in args},
        "required": [arg.name for arg in args if arg.required],
    }


def _type_schema(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [_type_schema(option) for option in typing.get_args(annotation)]
        if all(set(option) == {"type"} for option in options):
            return {"type": [option["type"] for option in options]}
        return {"anyOf": options}
    if origin is tuple:
        return {"type": "array", "items": _type_schema(typing.get_args(annotation)[0])}
    if annotation is type(None):
        return {"type": "null"}
    if attrs.has(annotation):
        return output_schema(annotation)
    simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
    return {"type": simple[annotation]}


def output_schema(result: type) -> dict[str, Any]:
    """The JSON schema of an attrs result class, derived from its annotations."""
    hints = typing.get_type_hints(result)
    fields = attrs.fields(result)
    return {
        "type": "object",
        "properties": {field.name: _type_schema(hints[field.name]) for field in fields},
        "required": [field.name for field in fields],
    }


def to_json(value: Any) -> Any:
    """A result as JSON data: attrs instances become objects, tuples arrays."""
    if attrs.has(type(value)):
        return {
            field.name: to_json(getattr(value, field.name)) for field in attrs.fields(type(value))
        }
    if isinstance(value, (tuple, list)):
        return [to_json(item) for item in value]
    return value
