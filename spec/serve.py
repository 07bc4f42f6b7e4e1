"""``editspec serve ROOT [--state-dir DIR] [--http [HOST:]PORT]``: the reference engine over MCP.

Any MCP client (an agent, an IDE, or the suite's own MCP adapter) gets the engine's
tools with JSON schemas (``editspec.spec._mcp_tools``). A successful call returns the
result's fields as structured content, and text written for a model
(``editspec.spec._serve_text``: a read's numbered lines under one header line, a
change's summary and diff). A failed call is a tool error (``isError``) whose
structured content is ``{"code", "message", "details"}`` and whose text is
``CODE: message`` and a hint; an exception outside the error table is a tool error
without a code. A call of a tool the server does not have is a JSON-RPC error
(-32602), as the MCP specification says.

Transports: stdio (the default), or Streamable HTTP with ``--http [HOST:]PORT`` at
``http://HOST:PORT/mcp`` (``editspec.spec._serve_http``: loopback unless a host is
named, Host and Origin checked against DNS rebinding).

Calls run on worker threads, so concurrent requests reach the engine concurrently and
its locks (not the event loop) serialize them.

Change notifications: after a call that changed files, the server sends
``notifications/resources/updated`` for each changed file (``file://`` URI of its
absolute path; a move names both paths), in the order the engine committed them, once
the call has returned (the data is durable). They come from the engine's change events
(``Workspace.hooks.subscribe``); a notification that cannot be sent never turns the
call's result into a failure. In the handshake-era protocol (``initialize``) they go to
the session that made the call; a client of the 2026-07-28 protocol opens a
``subscriptions/listen`` stream naming the ``file://`` URIs it wants
(``resource_subscriptions``) and gets those on it, whichever session made the change
(the SDK's ``ListenHandler`` over an in-process ``InMemorySubscriptionBus``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import urllib.parse
from collections.abc import Sequence
from functools import partial
from typing import Any

from editspec.reference import ToolError, Workspace
from editspec.spec._guarded_stdio import serve_guarded_stdio
from editspec.spec._jsonrpc_guard import excerpt
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
from editspec.spec._serve_http import HttpAddress, parse_address, serve_http
from editspec.spec._serve_text import error_text, result_text
from editspec.spec.report import suite_version

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


_CALL = threading.local()  # the change events of the call running on this worker thread


def _collect(event: Any) -> None:
    changed = getattr(_CALL, "changed", None)
    if changed is None:
        return  # a change made outside a tool call of this server
    for path in (event.path, event.move_to):
        if path and path not in changed:
            changed.append(path)


def run_tool_collecting(
    workspace: Workspace, tool: ToolDef, arguments: dict[str, Any] | None
) -> tuple[Any, list[str]]:
    """``run_tool``, with the root-relative paths its change events named, in order."""
    _CALL.changed = []
    try:
        data = run_tool(workspace, tool, arguments)
        return data, list(_CALL.changed)
    finally:
        _CALL.changed = None


def file_uri(root: str, relative: str) -> str:
    """The ``file://`` URI of a root-relative path."""
    absolute = os.path.join(root, *relative.split("/"))
    return "file://" + urllib.parse.quote(absolute, errors="surrogateescape")


def build_server(workspace: Workspace) -> Any:
    """A low-level MCP ``Server`` whose tools call ``workspace``."""
    import anyio.to_thread
    import mcp.types as types
    from mcp.server import Server
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
    from mcp.shared.exceptions import MCPError

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

    # Files are resources only as far as change notifications go: none is listed. A
    # handshake-era subscription (resources/subscribe) is accepted, and every changed file
    # is announced to that session, subscribed or not; a 2026-07-28 client gets the files
    # it names on a subscriptions/listen stream (the SDK's handler filters by URI).
    bus = InMemorySubscriptionBus()
    listen = ListenHandler(bus)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def subscribe(ctx: Any, params: Any) -> types.EmptyResult:
        return types.EmptyResult()

    workspace.hooks.subscribe(_collect)

    def failure(text: str, structured: dict[str, Any] | None) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(text=unicode_safe(text))],
            structured_content=structured,
            is_error=True,
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            # A protocol error, as the MCP specification has it for an unknown tool: no
            # tool ran, so there is no tool result to report.
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {excerpt(params.name)}")
        try:
            data, changed = await anyio.to_thread.run_sync(
                partial(run_tool_collecting, workspace, tool, params.arguments)
            )
        except ToolError as exc:
            return failure(error_text(exc.code, exc.message, exc.details), error_payload(exc))
        except Exception as exc:  # outside the error table: a tool error without a code
            return failure(f"internal error: {type(exc).__name__}: {exc}", None)
        for path in changed:
            uri = file_uri(workspace.root, path)
            try:
                await bus.publish(ResourceUpdated(uri=uri))  # every open listen stream
                # The calling session, at the handshake era (the SDK drops it at 2026-07-28,
                # where only listen streams carry change notifications).
                await ctx.session.send_resource_updated(uri)
            except Exception:  # a lost notification never hides the change
                break
        data = unicode_safe(data)
        return types.CallToolResult(
            content=[types.TextContent(text=result_text(tool.name, data))],
            structured_content=data,
        )

    return Server(
        SERVER_NAME,
        version=suite_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=subscribe,
        on_subscriptions_listen=listen,
    )


async def serve_stdio(workspace: Workspace) -> None:
    """Serve ``workspace`` on stdin/stdout until the client closes stdin.

    Every line read is answered: the SDK's transport sits behind the request guard
    (``_guarded_stdio``), which answers what the SDK would drop.
    """

    await serve_guarded_stdio(build_server(workspace))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="editspec serve",
        description="Serve the reference engine as an MCP server, over stdio or Streamable "
        "HTTP (--http). Tools: "
        + ", ".join(tool.name for tool in TOOLS)
        + f"; session_id defaults to {DEFAULT_SESSION!r}.",
    )
    parser.add_argument("root", metavar="ROOT", help="the workspace root")
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="journals and snapshots (default: $XDG_STATE_HOME/editspec)",
    )
    parser.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        type=_address,
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults "
        "to 127.0.0.1; port 0 picks a free one; the URL is printed on stderr)",
    )
    parser.add_argument(
        "--allow-origin",
        metavar="ORIGIN",
        action="append",
        default=[],
        help="with --http: also accept requests from this Origin (e.g. https://ide.example); "
        "loopback origins are accepted when serving loopback (repeatable)",
    )
    parser.add_argument(
        "--allow-host",
        metavar="HOST[:PORT]",
        action="append",
        default=[],
        help="with --http: also accept this Host header (DNS rebinding protection; repeatable)",
    )
    return parser


def _address(text: str) -> HttpAddress:
    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if (args.allow_origin or args.allow_host) and args.http is None:
        parser.error("--allow-origin and --allow-host apply only with --http")
    try:
        workspace = Workspace(args.root, args.state_dir)
    except ToolError as exc:
        print(f"editspec serve: {exc}", file=sys.stderr)
        return 2
    try:
        import anyio

        if args.http is None:
            anyio.run(serve_stdio, workspace)
        else:
            http = partial(
                serve_http,
                build_server(workspace),
                args.http,
                allow_hosts=args.allow_host,
                allow_origins=args.allow_origin,
            )
            anyio.run(http)
    except KeyboardInterrupt:
        pass
    finally:
        workspace.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
