"""editspec serve: the delete, move and manifest tools, and resource-updated notifications."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from editspec.reference import Workspace
from editspec.reference.text._text import sha256_hex
from editspec.spec.serve import build_server, file_uri


def _run(root: Path, state: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list, list]:
    from mcp import Client

    workspace = Workspace(root, state)
    notified: list[str] = []
    results: list[Any] = []

    async def handler(message: Any) -> None:
        root_message = getattr(message, "root", message)
        if getattr(root_message, "method", "") == "notifications/resources/updated":
            notified.append(str(root_message.params.uri))

    async def main() -> None:
        server = build_server(workspace)
        async with Client(server, mode="legacy", message_handler=handler) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"manifest", "delete", "move"} <= names
            for name, arguments in calls:
                results.append(await client.call_tool(name, arguments))
            await anyio.sleep(0.2)

    anyio.run(main)
    return results, notified


def test_changes_are_announced_in_commit_order(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    results, notified = _run(
        root,
        tmp_path / "state",
        [
            ("write", {"path": "new.txt", "content": "n\n"}),
            ("read", {"path": "a.txt"}),
            ("move", {"source": "a.txt", "destination": "d/a.txt"}),
            ("delete", {"path": "b.txt", "kind": "file", "expected_sha256": sha256_hex(b"b\n")}),
            ("delete", {"path": "missing.txt", "kind": "file"}),
        ],
    )
    assert [result.is_error for result in results] == [False, False, False, False, True]
    assert (root / "d" / "a.txt").read_text() == "a\n"
    assert not (root / "b.txt").exists()
    real = str(Workspace(root, tmp_path / "state2").root)
    assert notified == [
        file_uri(real, "new.txt"),
        file_uri(real, "a.txt"),
        file_uri(real, "d/a.txt"),
        file_uri(real, "b.txt"),
    ]
    assert results[3].structured_content["kind"] == "file"
    assert results[4].structured_content["code"] == "NOT_FOUND"
