"""Served mutants for the clauses about the MCP wire (LIMIT-032).

``unguarded_stdio``: ``editspec serve`` on the SDK's own stdio transport, without the
request guard, so a line the SDK cannot parse is dropped and never answered. It only
makes sense served (``zoo.py serve unguarded_stdio``); ``zoo.SERVED_BY`` names it.
"""

from __future__ import annotations

from typing import Any

from mutant_zoo import Mutant, _replace, register

from editspec.spec import _guarded_stdio


async def _unguarded(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


unguarded_stdio = register(
    Mutant(
        name="unguarded_stdio",
        defect="The server reads stdio through the SDK's transport alone: a line it cannot "
        "parse (a lone surrogate escape, a raw control character, 013, a truncated line) is "
        "dropped, and the client waits forever for its answer.",
        areas=("LIMIT",),
        install=lambda: _replace(_guarded_stdio, "serve_guarded_stdio", _unguarded),
        clauses=("LIMIT-032",),
    )
)
