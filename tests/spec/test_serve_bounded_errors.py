"""``editspec serve``: an error answer quotes at most an excerpt of a runaway input.

One server over raw stdio gets calls whose every oversized part is 5 MB: a tool name, a
method name, an argument name, an edit's field name, a patch path, an id, an encoding, a
value of the wrong type. Each is answered (a tool error with a code, or a JSON-RPC error)
in under 2 KiB. Positive control: a valid call on the same server is answered in full.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from editspec.spec._raw_stdio import RawServer

pytest.importorskip("mcp")

BIG = "x" * 5_000_000
ANSWER_BYTES = 2048
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("tool name", "tools/call", {"name": BIG, "arguments": {}}),
    ("method name", BIG, {}),
    ("argument name", "tools/call", {"name": "read", "arguments": {"path": "a.txt", BIG: 1}}),
    (
        "edit field name",
        "tools/call",
        {
            "name": "edit",
            "arguments": {
                "path": "a.txt",
                "edits": [{"old_string": "a", "new_string": "b", BIG: 1}],
            },
        },
    ),
    (
        "patch path",
        "tools/call",
        {
            "name": "apply_patch",
            "arguments": {
                "patch": f"*** Begin Patch\n*** Update File: {BIG[:900_000]}\n*** End Patch\n"
            },
        },
    ),
    (
        "session id",
        "tools/call",
        {"name": "read", "arguments": {"path": "a.txt", "session_id": BIG}},
    ),
    ("encoding", "tools/call", {"name": "read", "arguments": {"path": "a.txt", "encoding": BIG}}),
    (
        "wrong type",
        "tools/call",
        {"name": "read", "arguments": {"path": "a.txt", "start_line": BIG}},
    ),
    ("path", "tools/call", {"name": "read", "arguments": {"path": BIG}}),
    ("grep pattern", "tools/call", {"name": "grep", "arguments": {"pattern": BIG + "("}}),
]


def test_every_error_answer_is_bounded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")

    class Factory:
        command = f"{sys.executable} -m editspec.spec.cli serve {{root}} --state-dir {{state_dir}}"

    server = RawServer.start(Factory(), root, tmp_path / "state")
    assert server is not None
    try:
        assert server.initialize(120) is not None
        server.request(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "read", "arguments": {"path": "a.txt"}},
            }
        )
        control = server.answer(60)
        assert isinstance(control, dict) and "alpha" in json.dumps(control), control
        for number, (what, method, params) in enumerate(CALLS, start=2):
            server.request({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
            answer = server.answer(120)
            assert isinstance(answer, dict) and answer.get("id") == number, (what, answer)
            size = len(json.dumps(answer))
            assert size < ANSWER_BYTES, f"{what}: a {size}-byte answer"
            if "error" in answer:
                assert isinstance(answer["error"].get("code"), int), (what, answer)
            else:
                assert answer["result"]["isError"], (what, answer)
                assert answer["result"]["structuredContent"]["code"], (what, answer)
    finally:
        server.close()
