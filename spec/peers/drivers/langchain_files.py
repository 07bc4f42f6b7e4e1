"""``langchain-community`` ``FileManagementToolkit(root_dir=...)`` behind the driver contract.

    editspec check --driver editspec.spec.peers.drivers.langchain_files:factory

The toolkit's tools (``langchain_community.tools.file_management``) are called through
their own ``run`` with the arguments of their schemas: ``read_file(file_path)`` (the whole
file as UTF-8 text), ``write_file(file_path, text, append=False)``, ``file_search(pattern,
dir_path)`` (``fnmatch`` over file names, recursively, paths relative to ``dir_path``) and
``list_directory(dir_path)`` (names, one per line). Every result is a string; a failure is
a string that starts with ``"Error: "`` (the toolkit raises nothing). With ``root_dir``
every path is resolved (symlinks included) and refused when it leaves the root. It has no
edit, no content search, no hashes or read records, and writes in place with ``open("w")``
through ``os``, in this process: ``python_fs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from editspec.spec.peers.drivers._common import (
    NotExpressible,
    Result,
    ToolRefused,
    as_text,
    code_for,
    refuse_arguments,
)

TOOL = "langchain-community FileManagementToolkit"
RULES = (
    (r"^Error: Access denied to", "OUTSIDE_WORKSPACE"),
    (r"^Error: no such file or directory|No such file or directory", "NOT_FOUND"),
    (r"Is a directory", "IS_A_DIRECTORY"),
    (r"Not a directory", "NOT_FOUND"),
    (r"codec can't decode", "BINARY"),
    (r"\[Errno \d+\]", "IO_ERROR"),
)


def _checked(text: str) -> str:
    """The tool's answer, or its refusal raised (every failure starts with "Error: ")."""
    if text.startswith("Error: "):
        raise ToolRefused(text, code_for(text, RULES))
    return text


class LangchainSession:
    def __init__(self, tools: dict[str, Any]) -> None:
        self.tools = tools

    def _run(self, name: str, **arguments: Any) -> str:
        return _checked(self.tools[name].run(arguments))

    def read(
        self,
        path: str,
        *,
        start_line: int | None = None,
        end_line: int | None = None,
        start_byte: int | None = None,
        max_bytes: int | None = None,
        encoding: str = "auto",
    ) -> Result:
        given = {"start_line": start_line, "end_line": end_line, "start_byte": start_byte,
                 "max_bytes": max_bytes, "encoding": encoding}  # fmt: skip
        refuse_arguments(f"{TOOL} read_file", given, {"start_line": None, "end_line": None,
                         "start_byte": None, "max_bytes": None, "encoding": "auto"})  # fmt: skip
        content = self._run("read_file", file_path=path)
        return Result(f"the read result of {TOOL} (read_file)", path=path, content=content)

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Result:
        given = {"expected_sha256": expected_sha256, "message_id": message_id}
        refuse_arguments(f"{TOOL} write_file", given, {"expected_sha256": None,
                                                       "message_id": None})  # fmt: skip
        message = self._run("write_file", file_path=path, text=as_text(TOOL, content))
        return Result(f"the write result of {TOOL} (write_file)", path=path, message=message)

    def edit(self, path: str, edits: Sequence[Any], **_: Any) -> Any:
        raise NotExpressible(f"{TOOL} has no edit tool")

    def glob(
        self, pattern: str, *, path: str | None = None, max_results: int | None = None
    ) -> Result:
        refuse_arguments(f"{TOOL} file_search", {"max_results": max_results},
                         {"max_results": None})  # fmt: skip
        base = path or "."
        text = self._run("file_search", pattern=pattern, dir_path=base)
        if text.startswith("No files found for pattern "):
            found: tuple[str, ...] = ()
        else:
            found = tuple(
                line if base == "." else f"{base.rstrip('/')}/{line}" for line in text.split("\n")
            )
        return Result(f"the glob result of {TOOL} (file_search)", paths=found)

    def list_directory(
        self,
        path: str = ".",
        *,
        depth: int = 1,
        include_hidden: bool = False,
        cursor: str | None = None,
        max_entries: int | None = None,
    ) -> Result:
        given = {"depth": depth, "cursor": cursor, "max_entries": max_entries}
        refuse_arguments(f"{TOOL} list_directory", given, {"depth": 1, "cursor": None,
                                                           "max_entries": None})  # fmt: skip
        text = self._run("list_directory", dir_path=path)
        names = () if text.startswith("No files found in directory ") else text.split("\n")
        entries = tuple(
            Result(f"a directory entry of {TOOL} (list_directory)", name=name) for name in names
        )
        return Result(f"the listing of {TOOL} (list_directory)", entries=entries)

    def grep(self, pattern: str, **_: Any) -> Any:
        raise NotExpressible(f"{TOOL} has no content search")

    def apply_patch(self, patch: str, *, message_id: str | None = None) -> Any:
        raise NotExpressible(f"{TOOL} has no patch tool")

    def rewind(self, message_id: str) -> Any:
        raise NotExpressible(f"{TOOL} has no snapshots")


class LangchainDriver:
    name = "langchain-file-management"
    capabilities = frozenset(
        {"read", "write", "confinement", "glob", "list_directory", "python_fs"}
    )

    def __init__(self, root: Path, state_dir: Path) -> None:
        from langchain_community.agent_toolkits import FileManagementToolkit

        toolkit = FileManagementToolkit(
            root_dir=str(root),
            selected_tools=["read_file", "write_file", "file_search", "list_directory"],
        )
        self.tools = {tool.name: tool for tool in toolkit.get_tools()}

    def open_session(self, session_id: str) -> LangchainSession:
        return LangchainSession(self.tools)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        return None


def factory(root: Path, state_dir: Path) -> LangchainDriver:
    """``FileManagementToolkit(root_dir=root)``: read, write, search and list."""
    return LangchainDriver(root, state_dir)
