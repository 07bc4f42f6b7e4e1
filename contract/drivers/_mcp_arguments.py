"""The arguments of one tool call, from the contract's values and the server's map.

A value the map gives no argument for, that is not the operation's default, is
``Inexpressible``: the clause that needs it is UNSUPPORTED for this server, never emulated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from editspec.contract.drivers._mcp_map import (
    EDIT_FIELDS,
    OPERATIONS,
    Inexpressible,
    ServerMap,
    ToolMap,
)


def tool_arguments(server_map: ServerMap, tool: ToolMap, values: dict[str, Any]) -> dict[str, Any]:
    """The server's arguments for the contract's ``values`` (None: not given)."""
    defaults = OPERATIONS[tool.operation]
    arguments: dict[str, Any] = dict(tool.fixed)
    for name, value in values.items():
        if value is None:
            continue
        if name == "edits" and tool.single_edit:
            arguments.update(single_edit_arguments(tool, value))
            continue
        target = tool.arguments.get(name)
        if target is None:
            if value == defaults.get(name) or name in tool.ignore:
                continue
            raise Inexpressible(
                f"{server_map.label}: the server's {tool.name} has no argument for {name}={value!r}"
            )
        arguments[target] = value
    return arguments


def edit_items(server_map: ServerMap, tool: ToolMap, edits: Sequence[Any]) -> list[dict[str, Any]]:
    """Each edit (an ``EditSpec`` or a mapping) as the server's edit object."""
    items = []
    for edit in edits:
        item: dict[str, Any] = {}
        for name, default in EDIT_FIELDS.items():
            value = edit.get(name) if isinstance(edit, dict) else getattr(edit, name, default)
            target = tool.edit_fields.get(name)
            if target is None:
                if value is None or value == default:
                    continue
                raise Inexpressible(
                    f"{server_map.label}: the server's {tool.name} edits have no field for "
                    f"{name}={value!r}"
                )
            if value is not None:
                item[target] = value
        items.append(item)
    return items


def single_edit_arguments(tool: ToolMap, items: Any) -> dict[str, Any]:
    """The one edit's mapped fields, for a tool that takes them at the top level."""
    if not isinstance(items, (list, tuple)) or len(items) != 1:
        count = len(items) if isinstance(items, (list, tuple)) else "no list of"
        raise Inexpressible(
            f"the tool's {tool.name} takes one edit per call; this call has {count} edits"
        )
    return dict(items[0])
