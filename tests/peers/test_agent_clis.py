"""The pieces that reach the agent CLIs' own file tools, checked without the CLIs: the
scripted model's turns, the drivers' reading of the tools' answers, the loopback-only rule,
the single-edit map option and the catalog entries."""

from __future__ import annotations

import json
import stat
import subprocess
import urllib.request
from pathlib import Path

import pytest

from editspec.contract.drivers._mcp_arguments import edit_items, tool_arguments
from editspec.contract.drivers._mcp_map import Inexpressible, load_map
from editspec.spec.peers import scripted_model
from editspec.spec.peers.catalog import load_catalog
from editspec.spec.peers.drivers import claude_code, codex_apply_patch
from editspec.spec.peers.drivers._common import NotExpressible, ToolRefused
from editspec.spec.peers.scripted_model import AnthropicMessages, ScriptedModel

MAPS = Path(claude_code.__file__).resolve().parents[2] / "mcp_maps"


def _post(endpoint: str, body: dict) -> bytes:
    request = urllib.request.Request(
        f"{endpoint}/v1/messages?beta=true",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.read()


def _events(stream: bytes) -> list[dict]:
    return [
        json.loads(line[len(b"data: ") :])
        for line in stream.splitlines()
        if line.startswith(b"data: ")
    ]


def test_scripted_model_answers_the_queued_tool_call_and_hands_back_its_result() -> None:
    model = ScriptedModel(AnthropicMessages(), frozenset({"Read"}))
    try:
        assert model.endpoint.startswith("http://127.0.0.1:")
        tools = [{"name": "Read", "input_schema": {"type": "object"}}]
        model.call("Read", {"file_path": "/ws/a.txt"})
        first = _events(_post(model.endpoint, {"stream": True, "tools": tools, "messages": [
            {"role": "user", "content": "editspec: next tool call"}]}))  # fmt: skip
        assert [event["type"] for event in first] == [
            "message_start", "content_block_start", "content_block_delta",
            "content_block_stop", "message_delta", "message_stop",
        ]  # fmt: skip
        block = first[1]["content_block"]
        assert (block["type"], block["name"]) == ("tool_use", "Read")
        assert json.loads(first[2]["delta"]["partial_json"]) == {"file_path": "/ws/a.txt"}
        assert first[4]["delta"]["stop_reason"] == "tool_use"
        parts = [{"type": "text", "text": "1\thello"},
                 {"type": "text", "text": "<system-reminder>x</system-reminder>"}]  # fmt: skip
        result = {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": block["id"], "content": parts}]}  # fmt: skip
        second = _events(_post(model.endpoint, {"stream": True, "tools": tools,
                                                "messages": [result]}))  # fmt: skip
        assert second[2]["delta"] == {"type": "text_delta", "text": "done"}
        assert second[4]["delta"]["stop_reason"] == "end_turn"
        outcome = model.outcome(timeout=5)
        assert (outcome.text, outcome.is_error) == ("1\thello", False)
        # a request that is not the agent loop's (no scripted tool offered) gets plain text
        other = json.loads(_post(model.endpoint, {"messages": [{"role": "user", "content": "t"}]}))
        assert other["content"] == [{"type": "text", "text": "ok"}]
    finally:
        model.close()


def test_scripted_model_binds_loopback_only() -> None:
    model = ScriptedModel(AnthropicMessages(), frozenset({"Read"}))
    try:
        assert model._server.server_address[0] == scripted_model.LOOPBACK == "127.0.0.1"
    finally:
        model.close()


def test_claude_environment_is_loopback_only_and_inherits_no_endpoint(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    with pytest.raises(RuntimeError, match="not loopback"):
        claude_code.cli_environment("https://api.anthropic.com", tmp_path)
    with pytest.raises(RuntimeError, match="not loopback"):
        claude_code.cli_environment("http://10.0.0.1:8080", tmp_path)
    env = claude_code.cli_environment("http://127.0.0.1:4567", tmp_path)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4567"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["HOME"] == str(tmp_path)
    assert "HTTPS_PROXY" not in env


def test_claude_read_text_is_the_numbered_lines_text() -> None:
    assert claude_code.numbered_text("1\thello\n2\tworld\n3\t") == "hello\nworld\n"
    assert claude_code.numbered_text("     1\ta\tb\n     2") == "a\tb\n"
    assert claude_code.numbered_text("<system-reminder>empty</system-reminder>") is None


def test_claude_edit_refuses_what_its_edit_tool_cannot_say(tmp_path) -> None:
    session = object.__new__(claude_code.ClaudeSession)
    session.root = tmp_path

    class Spec:
        old_string, new_string, replace_all, line, before, after = "a", "b", False, 3, None, None

    with pytest.raises(NotExpressible, match="line"):
        session.edit("a.txt", [Spec()])
    with pytest.raises(NotExpressible, match="one edit"):
        session.edit("a.txt", [Spec(), Spec()])
    with pytest.raises(NotExpressible, match="expected_sha256"):
        session.write("a.txt", "x", expected_sha256="0" * 64)


def test_codex_changes_are_read_from_its_summary() -> None:
    changes = codex_apply_patch.changes_from(
        "Success. Updated the following files:\nA new.txt\nM src/a.py\nD old.txt\n"
    )
    assert [(c.path, c.op) for c in changes] == [
        ("new.txt", "add"), ("src/a.py", "update"), ("old.txt", "delete")]  # fmt: skip


def _fake_codex(tmp_path: Path, script: str) -> Path:
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake


def test_codex_runs_its_executable_as_apply_patch_in_the_root(tmp_path, monkeypatch) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    binary = tmp_path / "codex"
    seen = {}

    def run(args, **options):
        seen.update(args=args, **options)
        return subprocess.CompletedProcess(args, 0, "Success. Updated the following files:\n"
                                           "A log.txt\n", "")  # fmt: skip

    monkeypatch.setattr(codex_apply_patch.subprocess, "run", run)
    driver = codex_apply_patch.CodexPatchDriver(root, state, binary)
    assert driver.capabilities == frozenset({"apply_patch"})
    result = driver.open_session("A").apply_patch("*** Begin Patch\n*** End Patch")
    # the arg0 dispatch (argv[0] == "apply_patch"), the patch its one argument, in the root
    assert seen["args"] == ["apply_patch", "*** Begin Patch\n*** End Patch"]
    assert seen["executable"] == binary and seen["cwd"] == root
    assert set(seen["env"]) == {"PATH", "HOME"}
    assert [(c.path, c.op) for c in result.changes] == [("log.txt", "add")]


def test_codex_refusal_keeps_its_message_and_code(tmp_path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    fake = _fake_codex(tmp_path, 'echo "Failed to find expected lines in a.txt:" >&2; exit 1\n')
    session = codex_apply_patch.CodexPatchDriver(root, tmp_path / "s", fake).open_session("A")
    with pytest.raises(ToolRefused) as caught:
        session.apply_patch("*** Begin Patch\n*** End Patch")
    assert caught.value.code == "NO_MATCH"
    with pytest.raises(NotExpressible):
        session.read("a.txt")


def test_single_edit_map_sends_one_edit_at_the_top_level() -> None:
    server_map = load_map(MAPS / "gemini-cli-core.toml")
    tool = server_map.tools["edit"]
    assert tool.single_edit and tool.name == "replace"
    edit = {"old_string": "a", "new_string": "b"}
    items = edit_items(server_map, tool, [edit])
    arguments = tool_arguments(server_map, tool, {"path": "f.txt", "edits": items})
    assert arguments == {**tool.fixed, tool.arguments["path"]: "f.txt", **items[0]}
    assert set(items[0].values()) == {"a", "b"}
    with pytest.raises(Inexpressible, match="one edit per call"):
        tool_arguments(server_map, tool, {"path": "f.txt", "edits": items * 2})


def test_the_agent_clis_are_in_the_catalog_with_honest_capabilities() -> None:
    catalog = load_catalog()
    for name in ("gemini-cli-core", "codex-apply-patch", "claude-code", "qwen-code-core"):
        peer = catalog[name]
        assert peer.registry == "npm" and peer.expectations_path is not None
    assert "{adapters}/gemini_tools.mjs" in catalog["gemini-cli-core"].command
    assert "{adapters}/gemini_tools.mjs" in catalog["qwen-code-core"].command
    # its dependency @vscode/ripgrep downloads a binary in its install script (offline: fails)
    assert catalog["qwen-code-core"].install_env == {"npm_config_ignore_scripts": "true"}
    qwen = load_map(MAPS / "qwen-code-core.toml")
    assert qwen.capabilities == frozenset({"read", "write", "edit", "confinement"})
    assert (Path(claude_code.__file__).parents[1] / "adapters" / "gemini_tools.mjs").is_file()
    gemini = load_map(MAPS / "gemini-cli-core.toml")
    assert gemini.capabilities == frozenset({"read", "write", "edit", "confinement"})
    assert claude_code.ClaudeCodeDriver.capabilities == frozenset(
        {"read", "write", "edit", "confinement", "read_before_write", "stale_detection"}
    )
    # in-process fault injection cannot reach a native or Node process
    assert "python_fs" not in claude_code.ClaudeCodeDriver.capabilities
