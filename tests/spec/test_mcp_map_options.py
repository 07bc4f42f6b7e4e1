"""The map options for tools of one edit per call and text results with a header:
``single_edit`` (the one edit's fields at the top level of the arguments; more than one is
UNSUPPORTED) and ``text_pattern`` (named groups of a regex over the text are fields), end
to end through a small stdio MCP server, and as the map loader checks them."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from editspec.contract.drivers._mcp_arguments import single_edit_arguments
from editspec.contract.drivers._mcp_map import Inexpressible, MapError, load_map
from editspec.contract.drivers._mcp_results import read_text
from editspec.contract.drivers.mcp import McpDriver
from editspec.reference import EditSpec

SERVER = """
from pathlib import Path
from mcp.server.mcpserver import MCPServer

app = MCPServer("one-edit")

@app.tool()
def show(path: str) -> str:
    text = Path(path).read_text()
    return f"[Reading {len(text.splitlines())} lines]\\n\\n{text}"

@app.tool()
def replace_once(file_path: str, old_string: str, new_string: str) -> str:
    target = Path(file_path)
    target.write_text(target.read_text().replace(old_string, new_string, 1))
    return "done"

app.run()
"""

MAP = """
[server]
name = "one-edit"
capabilities = ["read", "edit"]
cwd = "{root}"
[tools.read]
name = "show"
arguments = { path = "path" }
result = "text"
text_field = "message"
text_pattern = '(?s)^\\[Reading (?P<lines>\\d+) lines\\]\\n\\n(?P<content>.*)$'
[tools.edit]
name = "replace_once"
arguments = { path = "file_path" }
single_edit = true
edit_fields = { old_string = "old_string", new_string = "new_string" }
result = "text"
text_field = "message"
"""


@pytest.fixture
def driver(tmp_path: Path):
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "map.toml").write_text(MAP)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    command = [sys.executable, str(tmp_path / "server.py")]
    mcp_driver = McpDriver(command, load_map(tmp_path / "map.toml"), root, tmp_path)
    yield mcp_driver, root
    mcp_driver.close()


def test_text_pattern_groups_are_fields_and_single_edit_sends_one_edit_flat(driver) -> None:
    mcp_driver, root = driver
    session = mcp_driver.open_session("s")
    read = session.read("a.txt")
    assert read.content == "one\ntwo\n"  # the header is not content
    assert read.lines == "2"
    assert read.message.startswith("[Reading 2 lines]")
    session.edit("a.txt", [EditSpec("two", "TWO")])
    assert (root / "a.txt").read_bytes() == b"one\nTWO\n"
    with pytest.raises(Inexpressible, match="one edit per call; this call has 2 edits"):
        session.edit("a.txt", [EditSpec("one", "1"), EditSpec("TWO", "2")])
    assert (root / "a.txt").read_bytes() == b"one\nTWO\n"
    with pytest.raises(Inexpressible, match="replace_all"):
        session.edit("a.txt", [EditSpec("one", "1", replace_all=True)])


def test_a_text_that_does_not_match_the_pattern_gives_no_such_field(tmp_path: Path) -> None:
    (tmp_path / "map.toml").write_text(MAP)
    tool = load_map(tmp_path / "map.toml").tools["read"]
    assert read_text(tool, "no header here") == {"message": "no header here"}
    assert read_text(tool, "[Reading 0 lines]\n\n") == {
        "message": "[Reading 0 lines]\n\n",
        "lines": "0",
        "content": "",
    }
    edit = load_map(tmp_path / "map.toml").tools["edit"]
    assert single_edit_arguments(edit, [{"old_string": "a"}]) == {"old_string": "a"}
    with pytest.raises(Inexpressible):
        single_edit_arguments(edit, [])


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[tools.read]\nresult = "json"\ntext_pattern = "x"', "text_pattern is for result 'text'"),
        ('[tools.read]\nresult = "text"\ntext_field = "m"\ntext_pattern = "("', "text_pattern"),
        ("[tools.write]\nsingle_edit = true", "for edit only"),
        ('[tools.edit]\nsingle_edit = "yes"', "single_edit is true or false"),
    ],
)
def test_the_loader_refuses_misused_options(tmp_path: Path, table: str, message: str) -> None:
    (tmp_path / "map.toml").write_text(textwrap.dedent(table))
    with pytest.raises(MapError, match=message):
        load_map(tmp_path / "map.toml")
