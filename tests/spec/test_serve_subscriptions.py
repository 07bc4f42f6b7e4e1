"""``editspec serve`` over stdio, as a separate process: change notifications reach a
client that subscribes, in both protocol eras.

* 2026-07-28: the client opens a ``subscriptions/listen`` stream naming the ``file://``
  URIs it wants; a change made by a call gets ``notifications/resources/updated`` on it
  for exactly those URIs (a file it did not name is not announced there).
* handshake era: after ``resources/subscribe``, the calling session is told.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from editspec.spec.serve import file_uri

pytest.importorskip("mcp")


def _params(root: Path, state: Path) -> Any:
    from mcp import StdioServerParameters

    command = ["-m", "editspec.spec.cli", "serve", str(root), "--state-dir", str(state)]
    return StdioServerParameters(command=sys.executable, args=command, env=dict(os.environ))


def test_a_listen_stream_gets_the_files_it_names(tmp_path: Path) -> None:
    from mcp import Client, stdio_client

    root = tmp_path / "root"
    root.mkdir()
    (root / "watched.txt").write_text("old\n")
    real = os.path.realpath(root)
    watched = file_uri(real, "watched.txt")
    events: list[str] = []

    async def main() -> None:
        transport = stdio_client(_params(root, tmp_path / "state"))
        async with (
            Client(transport, mode="2026-07-28") as client,
            client.listen(resource_subscriptions=[watched]) as subscription,
        ):
            assert list(subscription.honored.resource_subscriptions or []) == [watched]

            async def collect() -> None:
                async for event in subscription:
                    events.append(str(event.uri))

            async with anyio.create_task_group() as group:
                group.start_soon(collect)
                other = await client.call_tool(
                    "write", {"path": "other.txt", "content": "not watched\n"}
                )
                assert not other.is_error
                await client.call_tool("read", {"path": "watched.txt"})
                result = await client.call_tool(
                    "write", {"path": "watched.txt", "content": "new\n"}
                )
                assert not result.is_error, result
                with anyio.fail_after(20):
                    while not events:
                        await anyio.sleep(0.05)
                await anyio.sleep(0.3)  # anything else would have arrived by now
                group.cancel_scope.cancel()

    anyio.run(main)
    assert (root / "watched.txt").read_text() == "new\n"
    assert (root / "other.txt").read_text() == "not watched\n"
    assert events == [watched]


def test_a_handshake_era_subscriber_is_told_and_errors_name_likely_paths(
    tmp_path: Path,
) -> None:
    import warnings

    from mcp import Client, stdio_client

    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "helper.py").write_text("x = 1\n")
    real = os.path.realpath(root)
    notified: list[str] = []
    texts: list[str] = []

    async def handler(message: Any) -> None:
        inner = getattr(message, "root", message)
        if getattr(inner, "method", "") == "notifications/resources/updated":
            notified.append(str(inner.params.uri))

    async def main() -> None:
        transport = stdio_client(_params(root, tmp_path / "state"))
        async with Client(transport, mode="legacy", message_handler=handler) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated as of 2026-07-28, not here
                await client.subscribe_resource(file_uri(real, "src/helper.py"))
            missing = await client.call_tool("read", {"path": "helper.py"})
            assert missing.is_error
            texts.append(missing.content[0].text)
            await client.call_tool("read", {"path": "src/helper.py"})
            edited = await client.call_tool(
                "edit",
                {"path": "src/helper.py", "edits": [{"old_string": "1", "new_string": "2"}]},
            )
            assert not edited.is_error, edited
            with anyio.fail_after(20):
                while not notified:
                    await anyio.sleep(0.05)

    anyio.run(main)
    assert (root / "src" / "helper.py").read_text() == "x = 2\n"
    assert notified == [file_uri(real, "src/helper.py")]
    assert "did you mean: src/helper.py" in texts[0].splitlines()
