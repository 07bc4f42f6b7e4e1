"""The MCP pieces: the tool map, the adapter's reading of results and errors, the server.

The whole suite through MCP is ``test_mcp_agreement.py`` (slow); these are the quick
checks of each piece, and one session against a real ``editspec serve`` process.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

import editspec.spec
from editspec.contract.drivers import DriverLoadError
from editspec.contract.drivers._mcp_connection import (
    Connection,
    UncodedToolError,
    mend_tool_listing,
)
from editspec.contract.drivers._mcp_map import (
    FieldNotReported,
    MapError,
    NotMapped,
    Record,
    default_map,
    load_map,
    to_record,
)
from editspec.contract.drivers.mcp import (
    McpDriver,
    McpToolError,
    ServerError,
    command_line,
    factory_from_options,
)
from editspec.reference import EditSpec, ToolError, Workspace
from editspec.spec._mcp_tools import TOOLS_BY_NAME, check_arguments, output_schema, to_json

MAPS = Path(editspec.spec.__file__).resolve().parent / "mcp_maps"
SERVE = f"{sys.executable} -m editspec.spec.cli serve {{root}} --state-dir {{state_dir}}"


def _map_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "map.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _text_result(text: str, *, error: bool = False, structured: Any = None) -> Any:
    return SimpleNamespace(
        content=[SimpleNamespace(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


# -- the map -------------------------------------------------------------------------------


def test_shipped_maps_load() -> None:
    editspec_map = load_map(MAPS / "editspec.toml")
    assert editspec_map.session_argument == "session_id"
    assert {"read", "write", "edit", "apply_patch", "recover"} <= set(editspec_map.tools)
    assert editspec_map.capabilities == default_map().capabilities
    peer = load_map(MAPS / "server-filesystem.toml")
    assert peer.session_argument is None
    assert peer.tools["read"].name == "read_text_file"
    assert not peer.capabilities & {"read_before_write", "stale_detection", "apply_patch"}


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("[server]\ncapabilities = ['telepathy']\n", "capabilities"),
        ("[tools.frobnicate]\nname = 'x'\n", "no operation"),
        ("[tools.read]\narguments = { colour = 'c' }\n", "no argument"),
        ("[tools.read]\nresult = 'xml'\n", "result must be"),
        ("[tools.glob]\nresult = 'lines'\n", "list_field"),
        ("[[errors.rules]]\npattern = 'x'\ncode = 'OOPS'\n", "code from the table"),
        ("[[errors.rules]]\npattern = '('\ncode = 'IO_ERROR'\n", r"errors\.rules\[0\]"),
        ("[weird]\n", "unknown tables"),
    ],
)
def test_malformed_maps_are_refused(tmp_path: Path, text: str, complaint: str) -> None:
    with pytest.raises(MapError, match=complaint):
        load_map(_map_file(tmp_path, text))


def test_factory_reports_a_bad_map_as_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(DriverLoadError, match="capabilities"):
        factory_from_options(
            "server {root}", str(_map_file(tmp_path, "[server]\ncapabilities = 3\n"))
        )


def test_command_line_substitutes_each_word() -> None:
    argv = command_line("srv --root {root} '--state={state_dir}' x{y}", Path("/a b"), Path("/s"))
    assert argv == ["srv", "--root", "/a b", "--state=/s", "x{y}"]


def test_records_report_missing_fields_as_failures() -> None:
    record = to_record({"path": "a", "items": [{"n": 1}]}, "the read result of X")
    assert isinstance(record, Record)
    assert record.items[0].n == 1 and isinstance(record.items, tuple)
    assert not hasattr(record, "sha256")
    assert getattr(record, "sha256", "absent") == "absent"
    with pytest.raises(AssertionError, match="has no field 'sha256'"):
        _ = record.sha256
    with pytest.raises(FieldNotReported):
        _ = record.sha256


# -- the adapter, without a server ---------------------------------------------------------


def _peer_driver(tmp_path: Path) -> McpDriver:
    server_map = load_map(MAPS / "server-filesystem.toml")
    return McpDriver(["unused", "{root}"], server_map, tmp_path / "ws", tmp_path / "state")


def test_arguments_left_at_their_default_are_dropped_others_refused(tmp_path: Path) -> None:
    driver = _peer_driver(tmp_path)
    read = driver.tool("read")
    assert driver._arguments(read, {"path": "a", "encoding": "auto", "start_line": None}) == {
        "path": "a"
    }
    assert driver._arguments(read, {"path": "a", "end_line": 3}) == {"path": "a", "head": 3}
    assert driver._arguments(read, {"path": "a", "max_bytes": 5}) == {"path": "a"}  # ignored
    with pytest.raises(NotMapped, match="start_line=2"):
        driver._arguments(read, {"path": "a", "start_line": 2})
    edit = driver.tool("edit")
    assert driver.edits(edit, [EditSpec("x", "y")]) == [{"oldText": "x", "newText": "y"}]
    with pytest.raises(NotMapped, match="replace_all=True"):
        driver.edits(edit, [EditSpec("x", "y", replace_all=True)])
    with pytest.raises(NotMapped, match="no tool for apply_patch"):
        driver.tool("apply_patch")
    with pytest.raises(NotMapped, match="not UTF-8"):
        driver.open_session("A").write("b.bin", b"\xff\xfe\x00")
    driver.close()


def test_error_codes_come_from_rules_patterns_or_fields(tmp_path: Path) -> None:
    driver = _peer_driver(tmp_path)
    denied = driver._error(_text_result("Access denied - path outside", error=True))
    assert isinstance(denied, McpToolError) and denied.code == "OUTSIDE_WORKSPACE"
    environment = driver._error(_text_result("ENOTDIR: not a directory", error=True))
    assert isinstance(environment, McpToolError) and environment.code == "IO_ERROR"
    unknown = driver._error(_text_result("something odd", error=True))
    # a refusal without a code: the tool's wrong-code FAIL, not a server failure
    assert isinstance(unknown, UncodedToolError) and not hasattr(unknown, "code")
    own = McpDriver(["unused"], load_map(MAPS / "editspec.toml"), tmp_path, tmp_path)
    structured = {"code": "STALE", "message": "changed", "details": {"path": "a"}}
    stale = own._error(_text_result("STALE: changed", error=True, structured=structured))
    assert isinstance(stale, McpToolError) and stale.details == {"path": "a"}
    assert str(stale) == "STALE: changed"
    by_text = own._error(_text_result("NOT_READ: read it first", error=True))
    assert isinstance(by_text, McpToolError) and by_text.code == "NOT_READ"
    bogus = own._error(_text_result("BOGUS: x", error=True, structured={"code": "BOGUS"}))
    assert isinstance(bogus, UncodedToolError)


def test_line_results_become_items(tmp_path: Path) -> None:
    driver = _peer_driver(tmp_path)
    root = os.fspath(tmp_path / "ws")
    found = driver._result(driver.tool("glob"), _text_result(f"{root}/a.txt\n{root}/d/b.txt"))
    assert found.paths == ("a.txt", "d/b.txt")
    none = driver._result(driver.tool("glob"), _text_result("No matches found"))
    assert none.paths == ()
    listing = driver._result(driver.tool("list_directory"), _text_result("[FILE] a\n[DIR] d"))
    assert [(e.name, e.type) for e in listing.entries] == [("a", "file"), ("d", "dir")]
    wrote = driver._result(driver.tool("write"), _text_result("Successfully wrote to a"))
    assert wrote.message == "Successfully wrote to a"
    with pytest.raises(FieldNotReported, match="new_sha256"):
        _ = wrote.new_sha256


# -- the server's tools, in process --------------------------------------------------------


def test_arguments_are_checked_by_the_server() -> None:
    read = TOOLS_BY_NAME["read"]
    assert check_arguments(read, {"path": "a"}) == {"path": "a", "session_id": "default"}
    for wrong in ({"path": 3}, {"path": "a", "start_line": True}, {"path": "a", "extra": 1}, {}):
        with pytest.raises(ToolError) as caught:
            check_arguments(read, wrong)
        assert caught.value.code == "INVALID_ARGUMENT"
    edits = check_arguments(TOOLS_BY_NAME["edit"], {"path": "a", "edits": [{"old_string": "x",
                            "new_string": "y", "line": 2}]})  # fmt: skip
    assert edits["edits"] == [EditSpec("x", "y", line=2)]


def test_results_match_their_output_schemas(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    workspace = Workspace(tmp_path / "ws", tmp_path / "state")
    session = workspace.session("A")
    results = {
        "write": session.write("a.txt", "one\ntwo\n"),
        "read": session.read("a.txt"),
        "edit": session.edit("a.txt", [EditSpec("one", "1")], message_id="m1"),
        "apply_patch": session.apply_patch(
            "*** Begin Patch\n*** Add File: b.txt\n+new\n*** End Patch\n", message_id="m2"
        ),
        "glob": session.glob("*.txt"),
        "grep": session.grep("new"),
        "list_directory": session.list_directory("."),
        "rewind": session.rewind("m2"),
        "recover": workspace.recover(),
    }
    for name, result in results.items():
        schema = output_schema(TOOLS_BY_NAME[name].result)
        jsonschema.validate(to_json(result), schema)


# -- a real server -------------------------------------------------------------------------


def test_a_session_against_editspec_serve(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    driver = factory_from_options(SERVE, str(MAPS / "editspec.toml"))(root, state)
    try:
        assert "process" in driver.capabilities and "python_fs" not in driver.capabilities
        session, other = driver.open_session("A"), driver.open_session("B")
        data = b"\x00\xffbinary\r\n"
        created = session.write("b.bin", data)
        assert (root / "b.bin").read_bytes() == data
        assert created.new_sha256 == hashlib.sha256(data).hexdigest()
        (root / "t.txt").write_text("alpha\n")
        with pytest.raises(McpToolError) as caught:
            other.write("t.txt", "beta\n")  # B has not read it
        assert caught.value.code == "NOT_READ"
        other.read("t.txt")
        edited = other.edit("t.txt", [EditSpec("alpha", "gamma")])
        assert edited.replacements[0].count == 1 and isinstance(edited.replacements, tuple)
        first = driver.pid
        driver.restart()
        assert session.read("t.txt").content == "gamma\n"
        assert driver.pid not in (None, first)
        driver.kill()
        with pytest.raises(ServerError):
            session.read("t.txt")
        driver.restart()
        assert base64.b64encode(data)  # the bytes went as base64, and came back intact:
        assert session.read("b.bin").sha256 == hashlib.sha256(data).hexdigest()
    finally:
        driver.close()
    with pytest.raises(ServerError, match="closed"):
        driver.open_session("A").read("t.txt")


def test_a_map_names_tools_of_several_versions_and_the_servers_directory(tmp_path: Path) -> None:
    server_map = load_map(MAPS / "server-filesystem.toml")
    assert "2025.3.28" in server_map.checked_versions
    read = server_map.tools["read"]
    assert read.names == ("read_text_file", "read_file")
    assert read.variant_for({"read_file": object()}).result == "text"  # 2025.3.28
    assert read.variant_for({"read_text_file": object(), "read_file": object()}) is read
    assert read.variant_for({"other": object()}) is None
    driver = McpDriver(["unused", "{root}"], server_map, tmp_path / "ws", tmp_path / "state")
    assert driver.cwd == os.fspath(tmp_path / "ws")  # cwd = "{root}"
    bad = tmp_path / "bad.toml"
    bad.write_text('[tools.read]\nname = "r"\nfallbacks = [{ result = "text" }]\n')
    with pytest.raises(MapError, match="needs a name"):
        load_map(bad)


def test_a_tool_listing_without_schema_types_is_mended_and_recorded() -> None:
    connection = Connection(["unused"], "auto")
    listing = {"tools": [{"name": "read_file", "inputSchema": {"$schema": "x"}},
                         {"name": "ok", "inputSchema": {"type": "object"}}]}  # fmt: skip
    mend_tool_listing(listing, connection)
    assert listing["tools"][0]["inputSchema"]["type"] == "object"
    assert "read_file" in (connection.listing_problem or "")
