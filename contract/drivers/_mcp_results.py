"""Reading what an MCP server answered: a result as the contract's record, a refusal as
an exception with its code (DESIGN §2), and the check that arguments can be sent at all.
"""

from __future__ import annotations

import contextlib
from typing import Any

from editspec.contract import is_error_code
from editspec.contract.drivers._mcp_connection import McpToolError, ServerError, UncodedToolError
from editspec.contract.drivers._mcp_map import (
    Inexpressible,
    Record,
    ServerMap,
    ToolMap,
    dig,
    parse_json_object,
    to_record,
)


def text_of(result: Any) -> str:
    """The text blocks of a tool result, joined."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def error_of(server_map: ServerMap, result: Any) -> Exception:
    """The exception for a refusal (``isError``): ``McpToolError`` with its code, when the
    map finds one from the table, else ``UncodedToolError``."""
    text = text_of(result)
    structured = result.structured_content
    code: Any = None
    message, details = text, None
    if server_map.code_field and isinstance(structured, dict):
        with contextlib.suppress(KeyError):
            code = dig(structured, server_map.code_field)
        message = str(structured.get("message", text))
        details = structured.get("details")
    if code is None and server_map.code_pattern is not None:
        found = server_map.code_pattern.search(text)
        code = found.group("code") if found else None
    if code is None:
        rule = next((r for r in server_map.error_rules if r.pattern.search(text)), None)
        code = rule.code if rule else None
    if is_error_code(code):
        return McpToolError(code, message, details)
    # A refusal (isError) without a code from the table is the tool's wrong-code FAIL,
    # as a Python driver's exception without one is (DESIGN §7).
    if code is not None:
        return UncodedToolError(
            f"the server answered with a code outside the table {code!r}: {text}"
        )
    return UncodedToolError(f"the server refused without an error code: {text}")


def record_of(
    server_map: ServerMap, tool: ToolMap, result: Any, *, server: str, root: str
) -> Record:
    """A successful result as the record the contract names, read as ``tool`` says."""
    text = text_of(result)
    what = f"the {tool.operation} result of {server_map.name or server} ({tool.name})"
    data: Any
    if tool.result == "structured":
        data = result.structured_content
        if data is None:
            data = parse_json_object(text)
    elif tool.result == "json":
        data = parse_json_object(text)
    elif tool.result == "text":
        data = read_text(tool, text)
    else:
        data = read_lines(tool, text, root)
    if not isinstance(data, dict):
        raise ServerError(f"{what} is not an object: {text[:500]!r}")
    fields = dict(data)
    for field, source in tool.fields.items():
        with contextlib.suppress(KeyError):
            fields[field] = dig(data, source)
    record = to_record(fields, what)
    assert isinstance(record, Record)
    return record


def require_unicode(value: Any, tool: str) -> None:
    """A string that is not Unicode text (a lone surrogate) cannot be sent as JSON by the SDK:
    the clause that needs one is UNSUPPORTED over MCP, not a failure of the server."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Inexpressible(
                f"{tool}: an argument holds a lone surrogate, which MCP's JSON text cannot carry"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            require_unicode(key, tool)
            require_unicode(item, tool)
    elif isinstance(value, (list, tuple)):
        for item in value:
            require_unicode(item, tool)


__all__ = ["error_of", "record_of", "require_unicode", "text_of"]


def relativize(path: str, root: str) -> str:
    if path == root:
        return "."
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def read_text(tool: ToolMap, text: str) -> dict[str, Any]:
    """A text result as ``{text_field: text}``, plus the named groups of its text_pattern
    when the text matches it (when it does not, the fields the groups would give are
    absent: a clause that reads one fails as missing-field)."""
    assert tool.text_field is not None
    data: dict[str, Any] = {tool.text_field: text}
    found = tool.text_pattern.match(text) if tool.text_pattern is not None else None
    if found is not None:
        data.update({k: v for k, v in found.groupdict().items() if v is not None})
    return data


def read_lines(tool: ToolMap, text: str, root: str) -> dict[str, Any]:
    """A line-oriented text result as ``{list_field: [items]}``."""
    assert tool.line_pattern is not None and tool.list_field is not None
    items: list[Any] = []
    if tool.empty_text is None or text.strip() != tool.empty_text:
        for line in text.splitlines():
            found = tool.line_pattern.match(line)
            if found is None:
                continue
            groups = {key: value for key, value in found.groupdict().items() if value is not None}
            for group, mapping in tool.values.items():
                if group in groups:
                    groups[group] = mapping.get(groups[group], groups[group])
            for group in tool.relative_paths:
                if group in groups:
                    groups[group] = relativize(groups[group], root)
            items.append(groups[tool.item_group] if tool.item_group else groups)
    return {tool.list_field: items}
