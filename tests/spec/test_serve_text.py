"""The text of ``editspec serve``'s results: what a model reads, from the engine's real results.

Each tool's result is made by the reference engine and turned into JSON as the server
does (``to_json``); the text must show what a model acts on (numbered lines, the
header facts, the diff, the hint of an error), and the MCP adapter must not depend on
it: it reads the structured content.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from editspec.contract import error_codes
from editspec.contract.drivers._mcp_map import default_map
from editspec.contract.drivers.mcp import McpDriver
from editspec.reference import EditSpec, ToolError, Workspace
from editspec.spec._mcp_tools import to_json
from editspec.spec._serve_text import ERROR_HINTS, error_text, result_text


@pytest.fixture
def workspace(tmp_path: Path) -> Any:
    (tmp_path / "ws").mkdir()
    workspace = Workspace(tmp_path / "ws", tmp_path / "state")
    yield workspace
    workspace.close()


def _text(tool: str, result: Any) -> str:
    return result_text(tool, to_json(result))


def test_a_read_is_numbered_lines_under_one_header(workspace: Any) -> None:
    session = workspace.session("A")
    (Path(workspace.root) / "a.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    lines = _text("read", session.read("a.txt")).splitlines()
    assert lines[0] == "a.txt: lines 1-3 of 3, 20 bytes, utf-8 with BOM, crlf"
    assert lines[1:] == ["     1\tone", "     2\ttwo", "     3\tthree"]
    middle = _text("read", session.read("a.txt", start_line=2, end_line=2)).splitlines()
    assert middle == ["a.txt: lines 2-2 of 3, 20 bytes, utf-8 with BOM, crlf", "     2\ttwo"]


def test_a_cut_read_says_where_to_go_on(workspace: Any) -> None:
    session = workspace.session("A")
    (Path(workspace.root) / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    text = _text("read", session.read("big.txt", max_bytes=20))
    header, *rest = text.splitlines()
    assert "truncated at byte" in header
    assert any(line.startswith("warning: ") and "continue with" in line for line in rest)
    assert "     1\tline 1" in rest


def test_binary_and_empty_files_have_no_numbered_lines(workspace: Any) -> None:
    session = workspace.session("A")
    (Path(workspace.root) / "b.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    binary = _text("read", session.read("b.png")).splitlines()
    assert binary[0].startswith("b.png: binary file, 11 bytes, image/png")
    assert binary[1].startswith("hex: 89504e47")
    (Path(workspace.root) / "e.txt").write_bytes(b"")
    assert _text("read", session.read("e.txt")).startswith("e.txt: empty (0 bytes)")


def test_changes_are_a_summary_line_and_the_diff(workspace: Any) -> None:
    session = workspace.session("A")
    created = _text("write", session.write("a.txt", "one\ntwo\n", message_id="m1"))
    assert created.splitlines()[0].startswith("created a.txt: 8 bytes, lf, sha256 ")
    assert created.splitlines()[0].endswith("; snapshot saved")
    assert "+one" in created
    edited = _text("edit", session.edit("a.txt", [EditSpec("two", "2")])).splitlines()
    assert edited[0].startswith("edited a.txt: 1 replacement at line 2 (exact); sha256 ")
    assert "-two" in edited and "+2" in edited
    patch = "*** Begin Patch\n*** Add File: b.txt\n+new\n*** Delete File: a.txt\n*** End Patch\n"
    patched = _text("apply_patch", session.apply_patch(patch)).splitlines()
    assert patched[0] == "patch applied to 2 files: add b.txt, delete a.txt"
    assert "+new" in patched


def test_searches_are_one_item_per_line(workspace: Any) -> None:
    session = workspace.session("A")
    session.write("a.txt", "alpha\nbeta\n")
    session.write("d/b.txt", "beta\n")
    assert _text("glob", session.glob("**/*.txt")).splitlines()[-1] == "(2 paths)"
    grep = _text("grep", session.grep("beta")).splitlines()
    assert sorted(grep[:-1]) == ["a.txt:2:1: beta", "d/b.txt:1:1: beta"]
    assert grep[-1] == "(2 matches, 2 files searched)"
    assert _text("grep", session.grep("gamma")) == "no matches (2 files searched)"
    listing = _text("list_directory", session.list_directory(".")).splitlines()
    assert listing == ["d/", "a.txt (11 bytes)"]
    assert _text("glob", session.glob("*.none")) == "no files match"
    assert _text("recover", workspace.recover()).startswith("recovered: 0 transactions")


def test_errors_are_code_message_and_a_hint() -> None:
    assert set(ERROR_HINTS) == set(error_codes())
    error = ToolError("NOT_READ", "a.txt has not been read in this session")
    first, hint = error_text(error.code, error.message).splitlines()
    assert first == str(error)  # CODE: message, as the reference words it
    assert hint.startswith("Read the whole file with read")
    assert "read it again" in error_text("STALE", "changed")
    assert error_text(None, "internal error: boom") == "internal error: boom"


def test_an_error_names_the_paths_probably_meant(workspace: Any) -> None:
    (Path(workspace.root) / "src").mkdir()
    (Path(workspace.root) / "src" / "helper.py").write_text("x\n")
    with pytest.raises(ToolError) as caught:
        workspace.session("s").read("helper.py")
    error = caught.value
    lines = error_text(error.code, error.message, error.details).splitlines()
    assert lines[0].startswith("NOT_FOUND: ")
    assert lines[1] == "did you mean: src/helper.py"
    assert lines[2] == ERROR_HINTS["NOT_FOUND"]
    assert len(error_text(error.code, error.message, {}).splitlines()) == 2


def test_other_tools_and_values_fall_back_to_json() -> None:
    assert result_text("something_else", {"a": 1}) == '{"a": 1}'
    assert result_text("read", ["not", "an", "object"]) == '["not", "an", "object"]'


def test_the_adapter_reads_structured_content_not_the_text(tmp_path: Path) -> None:
    driver = McpDriver(["unused"], default_map(), tmp_path, tmp_path)
    structured = {"paths": ["a.txt"], "truncated": False, "total_matches": 1}
    block = SimpleNamespace(type="text", text="a.txt\n(1 path)")
    result = SimpleNamespace(content=[block], structured_content=structured, is_error=False)
    assert driver._result(driver.tool("glob"), result).paths == ("a.txt",)
    driver.close()
