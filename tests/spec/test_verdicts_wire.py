"""LIMIT-032 (every request line answered over stdio) on a server that drops lines.

The broken server is ``editspec serve`` with its request guard taken away: the SDK's own
stdio transport, which drops a line it cannot parse and leaves the client waiting. Run
through ``editspec check`` over MCP, the clause must FAIL there and PASS on ``editspec
serve`` itself. The server mutant lives in this module: the subprocess finds it on
``PYTHONPATH``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.spec.test_verdicts_c import SERVE, check, mcp, outcomes

HERE = Path(__file__).resolve().parent

pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to serve over MCP")


def install_unguarded_stdio() -> None:
    """``editspec serve`` on the SDK's plain stdio transport, with no request guard."""
    from editspec.spec import _guarded_stdio

    async def unguarded(server: Any) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    _guarded_stdio.serve_guarded_stdio = unguarded  # type: ignore[assignment]


def serve_unguarded(tmp_path: Path) -> str:
    script = tmp_path / "serve_unguarded.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import test_verdicts_wire\n"
        "test_verdicts_wire.install_unguarded_stdio()\n"
        "from editspec.spec.serve import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return f"{sys.executable} {script} {{root}} --state-dir {{state_dir}}"


@pytest.mark.slow
def test_a_server_that_drops_unparsable_lines_fails_limit_032(tmp_path: Path) -> None:
    records = check(tmp_path, "LIMIT-032", *mcp(serve_unguarded(tmp_path)))
    assert outcomes(records) == {"LIMIT-032": "FAIL"}, records
    assert "no answer within" in records["LIMIT-032"]["message"], records["LIMIT-032"]


def test_editspec_serve_passes_limit_032(tmp_path: Path) -> None:
    records = check(tmp_path, "LIMIT-032", *mcp(SERVE))
    assert outcomes(records) == {"LIMIT-032": "PASS"}, records


def test_the_in_process_reference_is_unsupported_for_limit_032(tmp_path: Path) -> None:
    # The clause is about a server's wire: an in-process driver has none.
    records = check(tmp_path, "LIMIT-032")
    assert outcomes(records) == {"LIMIT-032": "UNSUPPORTED"}, records
