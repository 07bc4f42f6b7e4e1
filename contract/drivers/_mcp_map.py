"""The tool map of the MCP adapter: how the contract's operations reach a server's tools.

A map is a TOML file (``--editspec-mcp-map``); without one, the adapter assumes the
conventions of ``editspec serve`` (tools named as the operations, arguments and result
fields named as in the contract, a ``session_id`` argument, the error code in the
structured content's ``code``). ``spec/mcp_maps/`` ships maps for ``editspec serve`` and
for the MCP project's reference filesystem server; ``docs/conformance.md`` and the README
describe the format. In short::

    [server]
    name = "my-server"                  # for the report (default: the name it reports)
    capabilities = ["read", "write"]    # what it implements; the adapter adds "process"
    session_argument = "session_id"     # omit when the server has no sessions
    protocol = "auto"                   # or "legacy": the initialize handshake only
    timeout = 120                       # seconds per call

    [errors]                            # where a failed call's code is found, in order:
    code_field = "code"                 # a field of its structured content (dotted path)
    code_pattern = '^(?P<code>[A-Z_]+):' # a regex over its text, with a group "code"
    [[errors.rules]]                    # then message patterns, first match wins
    pattern = "Access denied"
    code = "OUTSIDE_WORKSPACE"

    [tools.read]                        # one table per operation the server has
    name = "read_text_file"             # its tool (default: the operation's name)
    arguments = { path = "path" }       # contract argument -> tool argument
    result = "structured"               # "structured" | "json" | "text" | "lines"
    fields = { content = "content" }    # contract field -> result field (dotted path)
    ignore = ["max_bytes"]              # arguments whose every value the tool already
                                        # honours (it always reads whole files)
    text_pattern = '(?s)^Read: (?P<content>.*)$'
                                        # result "text": a regex over the text whose named
                                        # groups are fields too (a header stripped off)
    single_edit = true                  # edit: the tool takes one edit, its fields at the
                                        # top level of the arguments (more: UNSUPPORTED)

A contract argument the map does not name is left out when the caller leaves it at its
default, and is an error (reported as ERROR, never silently dropped) when it does not,
unless the map lists it under ``ignore``.
A result field the server does not report raises ``FieldNotReported`` when a clause reads
it: the clause FAILs and its message names the missing field.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from editspec.contract import CAPABILITIES, error_codes
from editspec.contract.verdicts import MissingField

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# Each operation's arguments and the value that means "the caller did not ask for it".
OPERATIONS: Mapping[str, Mapping[str, Any]] = {
    "read": {
        "path": None,
        "start_line": None,
        "end_line": None,
        "start_byte": None,
        "max_bytes": None,
        "encoding": "auto",
    },
    "write": {
        "path": None,
        "content": None,
        "content_base64": None,
        "expected_sha256": None,
        "message_id": None,
    },
    "edit": {"path": None, "edits": None, "expected_sha256": None, "message_id": None},
    "edit_notebook": {
        "path": None,
        "cell_id": None,
        "index": None,
        "mode": "replace",
        "source": None,
        "cell_type": None,
        "expected_sha256": None,
        "message_id": None,
    },
    "apply_patch": {"patch": None, "message_id": None},
    "glob": {"pattern": None, "path": None, "max_results": None},
    "grep": {
        "pattern": None,
        "path": None,
        "include": None,
        "ignore_case": False,
        "max_results": None,
    },
    "list_directory": {
        "path": ".",
        "depth": 1,
        "include_hidden": False,
        "cursor": None,
        "max_entries": None,
    },
    "rewind": {"message_id": None},
    "manifest": {"path": None},
    "delete": {
        "path": None,
        "kind": None,
        "expected_sha256": None,
        "manifest_sha256": None,
        "message_id": None,
    },
    "move": {
        "source": None,
        "destination": None,
        "expected_sha256": None,
        "manifest_sha256": None,
        "message_id": None,
    },
    "recover": {},
}
EDIT_FIELDS: Mapping[str, Any] = {
    "old_string": None,
    "new_string": None,
    "replace_all": False,
    "line": None,
    "before": None,
    "after": None,
}
RESULT_KINDS = ("structured", "json", "text", "lines")


class MapError(ValueError):
    """The map file is malformed."""


class NotMapped(Exception):
    """The caller asked for something the server's map has no way to express.

    It carries no error code on purpose, and it is the suite's (its map's) failure, not
    the server's: the report shows it as ERROR with this message.
    """

    suite_error = True


class Inexpressible(NotMapped):
    """The tool has no way to take an argument or value the clause passes (a line range, a
    replace_all, bytes that are not UTF-8): the clause is UNSUPPORTED for this tool, not an
    error of the suite and not a failure of the tool (DESIGN §7: a clause does not demand
    what the tool lacks)."""

    unsupported = True


class FieldNotReported(MissingField):
    """A clause read a result field the server does not report.

    A ``MissingField``: an ``AttributeError`` (so ``hasattr`` and ``getattr(..., default)``
    see a missing field) and a FAIL of kind ``missing-field``, as a Python driver's result
    without the attribute is.
    """


class Record:
    """A result or an item of one, its fields read as attributes."""

    __slots__ = ("_fields", "_what")

    def __init__(self, fields: Mapping[str, Any], what: str) -> None:
        self._fields = dict(fields)
        self._what = what

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._fields[name]
        except KeyError:
            raise FieldNotReported(
                f"{self._what} has no field {name!r} (fields: {sorted(self._fields)})"
            ) from None

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={value!r}" for key, value in self._fields.items())
        return f"Record({inner})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and other._fields == self._fields

    __hash__ = None  # type: ignore[assignment]


def to_record(data: Any, what: str) -> Any:
    """JSON data as the contract sees it: objects become Records, arrays tuples."""
    if isinstance(data, dict):
        return Record({key: to_record(value, what) for key, value in data.items()}, what)
    if isinstance(data, list):
        return tuple(to_record(item, what) for item in data)
    return data


@attrs.frozen(kw_only=True)
class ErrorRule:
    pattern: re.Pattern[str]
    code: str


@attrs.frozen(kw_only=True)
class ToolMap:
    """How one operation reaches one tool and how its result is read."""

    operation: str
    name: str
    arguments: Mapping[str, str]
    edit_fields: Mapping[str, str]
    fixed: Mapping[str, Any]
    result: str
    fields: Mapping[str, str]
    text_field: str | None = None
    line_pattern: re.Pattern[str] | None = None
    list_field: str | None = None
    item_group: str | None = None
    empty_text: str | None = None
    values: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    relative_paths: tuple[str, ...] = ()
    ignore: frozenset[str] = frozenset()
    text_pattern: re.Pattern[str] | None = None
    single_edit: bool = False
    # The same operation under other versions of the server: each the table above with
    # some keys changed (another tool name, result kind...), tried in order when the
    # server does not list this tool.
    fallbacks: tuple[ToolMap, ...] = ()

    def variant_for(self, listed: Mapping[str, Any] | set[str]) -> ToolMap | None:
        """This tool or the first fallback whose name the server lists (None: none)."""
        for candidate in (self, *self.fallbacks):
            if candidate.name in listed:
                return candidate
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *(fallback.name for fallback in self.fallbacks))


@attrs.frozen(kw_only=True)
class ServerMap:
    """Everything the adapter knows about one server."""

    name: str | None
    capabilities: frozenset[str]
    session_argument: str | None
    protocol: str
    timeout: float
    tools: Mapping[str, ToolMap]
    code_field: str | None
    code_pattern: re.Pattern[str] | None
    error_rules: tuple[ErrorRule, ...]
    source: str
    # The server's working directory ({root} and {state_dir} filled in; None: ours),
    # and the versions this map was checked against (for the reader and the report).
    cwd: str | None = None
    checked_versions: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The map's file name, for messages (a report carries no local paths)."""
        return Path(self.source).name


def _table(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise MapError(f"{where}: {key} must be a table")
    return value


def _strings(data: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    table = _table(data, key, where)
    if not all(isinstance(value, str) for value in table.values()):
        raise MapError(f"{where}: the values of {key} must be strings")
    return table


def _regex(value: Any, where: str) -> re.Pattern[str]:
    if not isinstance(value, str):
        raise MapError(f"{where} must be a string (a regular expression)")
    try:
        return re.compile(value)
    except re.error as exc:
        raise MapError(f"{where}: {exc}") from None


def _tool(operation: str, data: Mapping[str, Any], source: str) -> ToolMap:
    where = f"{source}: [tools.{operation}]"
    known = {
        "name", "arguments", "edit_fields", "fixed", "result", "fields", "text_field",
        "line_pattern", "list_field", "item_group", "empty_text", "values", "relative_paths",
        "ignore", "fallbacks", "text_pattern", "single_edit",
    }  # fmt: skip
    unknown = sorted(set(data) - known)
    if unknown:
        raise MapError(f"{where}: unknown keys {unknown}")
    arguments = _strings(data, "arguments", where) if "arguments" in data else None
    if arguments is None:  # the contract's own names
        arguments = {name: name for name in OPERATIONS[operation] if name != "content_base64"}
        if operation == "write":
            arguments["content_base64"] = "content_base64"
    ignore = data.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(item, str) for item in ignore):
        raise MapError(f"{where}: ignore must be a list of argument names")
    wrong = sorted((set(arguments) | set(ignore)) - set(OPERATIONS[operation]))
    if wrong:
        raise MapError(f"{where}: {operation} has no argument {wrong}")
    edit_fields = _strings(data, "edit_fields", where) if "edit_fields" in data else None
    result = data.get("result", "structured")
    if result not in RESULT_KINDS:
        raise MapError(f"{where}: result must be one of {RESULT_KINDS}")
    line_pattern = None
    if result == "lines":
        line_pattern = _regex(data.get("line_pattern", "^(?P<line>.*)$"), f"{where} line_pattern")
        if not data.get("list_field"):
            raise MapError(f"{where}: result 'lines' needs list_field")
    if result == "text" and not data.get("text_field"):
        raise MapError(f"{where}: result 'text' needs text_field")
    text_pattern = None
    if "text_pattern" in data:
        if result != "text":
            raise MapError(f"{where}: text_pattern is for result 'text'")
        text_pattern = _regex(data["text_pattern"], f"{where} text_pattern")
    single_edit = data.get("single_edit", False)
    if not isinstance(single_edit, bool) or (single_edit and operation != "edit"):
        raise MapError(f"{where}: single_edit is true or false, and for edit only")
    values = _table(data, "values", where)
    relative = data.get("relative_paths", [])
    if not isinstance(relative, list) or not all(isinstance(item, str) for item in relative):
        raise MapError(f"{where}: relative_paths must be a list of strings")
    return ToolMap(
        operation=operation,
        name=str(data.get("name", operation)),
        arguments=arguments,
        edit_fields=edit_fields if edit_fields is not None else {n: n for n in EDIT_FIELDS},
        fixed=_table(data, "fixed", where),
        result=result,
        fields=_strings(data, "fields", where),
        text_field=data.get("text_field"),
        line_pattern=line_pattern,
        list_field=data.get("list_field"),
        item_group=data.get("item_group"),
        empty_text=data.get("empty_text"),
        values={key: dict(value) for key, value in values.items()},
        relative_paths=tuple(relative),
        ignore=frozenset(ignore),
        text_pattern=text_pattern,
        single_edit=single_edit,
        fallbacks=_fallbacks(operation, data, source, where),
    )


def _fallbacks(
    operation: str, data: Mapping[str, Any], source: str, where: str
) -> tuple[ToolMap, ...]:
    """``fallbacks = [{name = ..., ...}]``: each the primary table with these keys changed."""
    listed = data.get("fallbacks", [])
    if not isinstance(listed, list) or not all(isinstance(item, dict) for item in listed):
        raise MapError(f"{where}: fallbacks must be a list of tables")
    primary = {key: value for key, value in data.items() if key != "fallbacks"}
    found = []
    for index, changes in enumerate(listed):
        if "name" not in changes:
            raise MapError(f"{where}: fallbacks[{index}] needs a name")
        if "fallbacks" in changes:
            raise MapError(f"{where}: fallbacks[{index}] cannot have fallbacks of its own")
        found.append(_tool(operation, {**primary, **changes}, source))
    return tuple(found)


def default_map() -> ServerMap:
    """The conventions of ``editspec serve``, used when no map file is given."""
    # imported when asked for: it loads the engine, which a map file needs none of
    from editspec.contract.drivers.reference import CAPABILITIES as SERVED

    return ServerMap(
        name=None,
        # In-process only: python_fs, remote_acp, and grep_cancel (a deadline and a
        # threading.Event cannot cross a tool call).
        capabilities=SERVED - {"python_fs", "remote_acp", "grep_cancel"},
        session_argument="session_id",
        protocol="auto",
        timeout=120.0,
        tools={op: _tool(op, {}, "<default map>") for op in OPERATIONS},
        code_field="code",
        code_pattern=None,
        error_rules=(),
        source="<default map>",
    )


def load_map(path: str | Path) -> ServerMap:
    """Read and check a map file (``MapError`` says what is wrong, and where)."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MapError(f"{source}: {exc}") from None
    unknown = sorted(set(data) - {"server", "errors", "tools"})
    if unknown:
        raise MapError(f"{source}: unknown tables {unknown}")
    server = _table(data, "server", source)
    capabilities = server.get("capabilities", [])
    if not isinstance(capabilities, list) or not set(capabilities) <= CAPABILITIES:
        wrong = sorted(set(capabilities) - CAPABILITIES) if isinstance(capabilities, list) else []
        raise MapError(f"{source}: [server] capabilities must be a list from the contract {wrong}")
    protocol = server.get("protocol", "auto")
    if protocol not in ("auto", "legacy"):
        raise MapError(f"{source}: [server] protocol must be 'auto' or 'legacy'")
    tools_table = _table(data, "tools", source)
    wrong_ops = sorted(set(tools_table) - set(OPERATIONS))
    if wrong_ops:
        raise MapError(f"{source}: [tools] names no operation of the contract: {wrong_ops}")
    errors = _table(data, "errors", source)
    rules = []
    for index, rule in enumerate(errors.get("rules", [])):
        code = rule.get("code") if isinstance(rule, dict) else None
        if code not in error_codes():
            raise MapError(f"{source}: errors.rules[{index}] needs a code from the table")
        where = f"{source}: errors.rules[{index}] pattern"
        rules.append(ErrorRule(pattern=_regex(rule.get("pattern"), where), code=code))
    pattern = errors.get("code_pattern")
    cwd = server.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise MapError(f'{source}: [server] cwd must be a string (e.g. "{{root}}")')
    versions = server.get("checked_versions", [])
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        raise MapError(f"{source}: [server] checked_versions must be a list of strings")
    return ServerMap(
        name=server.get("name"),
        capabilities=frozenset(capabilities),
        session_argument=server.get("session_argument"),
        protocol=protocol,
        timeout=float(server.get("timeout", 120)),
        tools={op: _tool(op, table, source) for op, table in tools_table.items()},
        code_field=errors.get("code_field"),
        code_pattern=_regex(pattern, f"{source}: code_pattern") if pattern is not None else None,
        error_rules=tuple(rules),
        source=source,
        cwd=cwd,
        checked_versions=tuple(versions),
    )


# -- reading results --------------------------------------------------------------------------


def dig(data: Any, dotted: str) -> Any:
    """``data["a"]["b"]`` for ``"a.b"``; KeyError when a step is missing."""
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            raise KeyError(dotted)
        data = data[part]
    return data


def parse_json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
