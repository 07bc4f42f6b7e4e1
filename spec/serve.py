"""``editspec serve ROOT [--state-dir DIR]``: the reference engine as an MCP server over stdio.

Any MCP client (an agent, an IDE, or the suite's own MCP adapter) gets the engine's
tools with JSON schemas (``editspec.spec._mcp_tools``). A successful call returns the
result's fields as structured content, with the same object as JSON text for clients
that read only text. A failed call is a tool error (``isError``) whose structured
content is ``{"code", "message", "details"}`` and whose text starts with ``CODE:``; an
exception outside the error table is a tool error without a code.

Calls run on worker threads, so concurrent requests reach the engine concurrently and
its locks (not the event loop) serialize them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

from editspec.reference import ToolError, Workspace
from editspec.spec._mcp_tools import (
    DEFAULT_SESSION,
    TOOLS,
    TOOLS_BY_NAME,
    ToolDef,
    check_arguments,
    input_schema,
    output_schema,
    to_json,
)

SERVER_NAME = "editspec-reference"

INSTRUCTIONS = (
    "File tools over one workspace root. Pass the same session_id for one conversation: "
    "a file must be read in full (read) by that session before write or edit replaces "
    "it, and a file changed since is refused as STALE (read it again). Every error has a "
    "code (NOT_READ, STALE, NO_MATCH, AMBIGUOUS, OUTSIDE_WORKSPACE, ...) and a failed call "
    "changes nothing."
)


def _json_safe(value: Any) -> Any:
    return unicode_safe(json.loads(json.dumps(value, default=str)))


def unicode_safe(value: Any) -> Any:
    """``value`` with every string made Unicode text, so the answer can be sent at all.

    A file whose name is not UTF-8 reaches Python as surrogate escapes (``caf\\udce9``);
    JSON cannot carry a lone surrogate and the SDK drops an answer it cannot encode, so
    such a string is sent with its raw bytes spelled ``\\xe9``.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raw = value.encode("utf-8", "surrogateescape" if _escapes_only(value) else "replace")
            return raw.decode("utf-8", "backslashreplace")
        return value
    if isinstance(value, dict):
        return {unicode_safe(key): unicode_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unicode_safe(item) for item in value]
    return value


def _escapes_only(text: str) -> bool:
    return all(not 0xD800 <= ord(char) <= 0xDFFF or 0xDC80 <= ord(char) <= 0xDCFF for char in text)


def error_payload(exc: ToolError) -> dict[str, Any]:
    """The structured content of a failed call."""
    return {"code": exc.code, "message": exc.message, "details": _json_safe(exc.details)}


def run_tool(workspace: Workspace, tool: ToolDef, arguments: dict[str, Any] | None) -> Any:
    """Check the arguments and run the operation (on a worker thread); its result as JSON."""
    return to_json(tool.call(workspace, check_arguments(tool, arguments)))


def build_server(workspace: Workspace) -> Any:
    """A low-level MCP ``Server`` whose tools call ``workspace``."""
    import anyio.to_thread
    import mcp.types as types
    from mcp.server import Server

    from editspec.spec.report import suite_version

    tools = [
        types.Tool(
            name=tool.name,
            title=tool.name.replace("_", " ").capitalize(),
            description=tool.description,
            input_schema=input_schema(tool),
            output_schema=output_schema(tool.result),
            annotations=types.ToolAnnotations(
                read_only_hint=tool.read_only,
                destructive_hint=not tool.read_only,
                idempotent_hint=tool.read_only,
                open_world_hint=False,
            ),
        )
        for tool in TOOLS
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    def failure(text: str, structured: dict[str, Any] | None) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(text=unicode_safe(text))],
            structured_content=structured,
            is_error=True,
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            error = ToolError("INVALID_ARGUMENT", f"no tool named {params.name!r}")
            return failure(str(error), error_payload(error))
        try:
            data = await anyio.to_thread.run_sync(
                partial(run_tool, workspace, tool, params.arguments)
            )
        except ToolError as exc:
            return failure(str(exc), error_payload(exc))
        except Exception as exc:  # outside the error table: a tool error without a code
            return failure(f"internal error: {type(exc).__name__}: {exc}", None)
        data = unicode_safe(data)
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(data, ensure_ascii=False))],
            structured_content=data,
        )

    return Server(
        SERVER_NAME,
        version=suite_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(workspace: Workspace) -> None:
    """Serve ``workspace`` on stdin/stdout until the client closes stdin.

    Every line read is answered: the SDK's transport sits behind the request guard
    (``_guarded_stdio``), which answers what the SDK would drop.
    """
    from editspec.spec._guarded_stdio import serve_guarded_stdio

    await serve_guarded_stdio(build_server(workspace))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="editspec serve",
        description="Serve the reference engine over stdio as an MCP server. Tools: "
        + ", ".join(tool.name for tool in TOOLS)
        + f"; session_id defaults to {DEFAULT_SESSION!r}.",
    )
    parser.add_argument("root", metavar="ROOT", help="the workspace root")
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="journals and snapshots (default: $XDG_STATE_HOME/editspec)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        workspace = Workspace(args.root, args.state_dir)
    except ToolError as exc:
        print(f"editspec serve: {exc}", file=sys.stderr)
        return 2
    try:
        import anyio

        anyio.run(serve_stdio, workspace)
    except KeyboardInterrupt:
        pass
    finally:
        workspace.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
