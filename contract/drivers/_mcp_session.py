"""One session of an MCP server under the contract: each method is one tool call.

The session reaches the server only through its driver (``McpDriver``), here seen as the
three things a session needs of it (``SessionDriver``).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Protocol

from editspec.contract.drivers._mcp_map import Inexpressible, ServerMap, ToolMap


class SessionDriver(Protocol):
    """What a session needs of its driver."""

    map: ServerMap

    def call(self, operation: str, session_id: str | None, values: dict[str, Any]) -> Any: ...

    def tool(self, operation: str, *, live: bool = False) -> ToolMap: ...

    def edits(self, tool: ToolMap, edits: Sequence[Any]) -> list[dict[str, Any]]: ...


class McpSession:
    """One session of the server: its id goes with every call (when the map names it)."""

    def __init__(self, driver: SessionDriver, session_id: str) -> None:
        self._driver = driver
        self.id = session_id

    def _call(self, operation: str, **values: Any) -> Any:
        return self._driver.call(operation, self.id, values)

    def read(
        self,
        path: str,
        *,
        start_line: int | None = None,
        end_line: int | None = None,
        start_byte: int | None = None,
        max_bytes: int | None = None,
        encoding: str = "auto",
    ) -> Any:
        return self._call(
            "read",
            path=path,
            start_line=start_line,
            end_line=end_line,
            start_byte=start_byte,
            max_bytes=max_bytes,
            encoding=encoding,
        )

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any:
        tool = self._driver.tool("write", live=True)
        values: dict[str, Any] = {
            "path": path,
            "expected_sha256": expected_sha256,
            "message_id": message_id,
        }
        if isinstance(content, str):
            values["content"] = content
        elif "content_base64" in tool.arguments:
            values["content_base64"] = base64.b64encode(bytes(content)).decode("ascii")
        else:
            try:
                values["content"] = bytes(content).decode("utf-8")
            except UnicodeDecodeError:
                raise Inexpressible(
                    f"{self._driver.map.label}: the server's {tool.name} takes text only, and "
                    "these bytes are not UTF-8"
                ) from None
        return self._driver.call("write", self.id, values)

    def edit(
        self,
        path: str,
        edits: Sequence[Any],
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any:
        items = self._driver.edits(self._driver.tool("edit", live=True), edits)
        return self._call(
            "edit", path=path, edits=items, expected_sha256=expected_sha256, message_id=message_id
        )

    def edit_notebook(
        self,
        path: str,
        cell_id: str | None = None,
        index: int | None = None,
        mode: str = "replace",
        source: str | None = None,
        cell_type: str | None = None,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any:
        return self._call(
            "edit_notebook",
            path=path,
            cell_id=cell_id,
            index=index,
            mode=mode,
            source=source,
            cell_type=cell_type,
            expected_sha256=expected_sha256,
            message_id=message_id,
        )

    def apply_patch(self, patch: str, *, message_id: str | None = None) -> Any:
        return self._call("apply_patch", patch=patch, message_id=message_id)

    def glob(self, pattern: str, *, path: str | None = None, max_results: int | None = None) -> Any:
        return self._call("glob", pattern=pattern, path=path, max_results=max_results)

    def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        include: str | None = None,
        ignore_case: bool = False,
        max_results: int | None = None,
    ) -> Any:
        return self._call(
            "grep",
            pattern=pattern,
            path=path,
            include=include,
            ignore_case=ignore_case,
            max_results=max_results,
        )

    def list_directory(
        self,
        path: str = ".",
        *,
        depth: int = 1,
        include_hidden: bool = False,
        cursor: str | None = None,
        max_entries: int | None = None,
    ) -> Any:
        return self._call(
            "list_directory",
            path=path,
            depth=depth,
            include_hidden=include_hidden,
            cursor=cursor,
            max_entries=max_entries,
        )

    def rewind(self, message_id: str) -> Any:
        return self._call("rewind", message_id=message_id)

    def manifest(self, path: str) -> Any:
        return self._call("manifest", path=path)

    def delete(
        self,
        path: str,
        *,
        kind: str,
        expected_sha256: str | None = None,
        manifest_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any:
        return self._call(
            "delete",
            path=path,
            kind=kind,
            expected_sha256=expected_sha256,
            manifest_sha256=manifest_sha256,
            message_id=message_id,
        )

    def move(
        self,
        source: str,
        destination: str,
        *,
        expected_sha256: str | None = None,
        manifest_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Any:
        return self._call(
            "move",
            source=source,
            destination=destination,
            expected_sha256=expected_sha256,
            manifest_sha256=manifest_sha256,
            message_id=message_id,
        )
