"""Claude Code's own Read, Edit and Write, driven end to end through the scripted model, with
every connect() the CLI makes recorded by strace: only the loopback model server (and local
sockets) may appear. Installs the pinned CLI from npm into the peer cache when it is not
there (as ``editspec peers run claude-code`` does)."""

from __future__ import annotations

import re
import shutil

import pytest

from editspec.spec.peers.catalog import cache_dir, load_catalog
from editspec.spec.peers.drivers import claude_code
from editspec.spec.peers.drivers._common import ToolRefused

TRACE = ("strace", "-f", "-qq", "-e", "trace=connect", "-o")
_INET = re.compile(r"sin_port=htons\((\d+)\), sin_addr=inet_addr\(\"([\d.]+)\"\)")


@pytest.fixture
def traced(monkeypatch, tmp_path):
    """The CLI started under ``strace -f -e trace=connect``; yields the log's path."""
    missing = [tool for tool in ("npm", "strace") if shutil.which(tool) is None]
    assert not missing, f"{missing} not on PATH (CI installs both)"
    load_catalog()["claude-code"].install(cache_dir())
    log = tmp_path / "connect.log"
    plain = claude_code.cli_command
    monkeypatch.setattr(
        claude_code,
        "cli_command",
        lambda binary: [*TRACE, str(log), *plain(binary)],
    )
    return log


@pytest.mark.download  # its CLI, when the peer cache lacks it
def test_claude_code_file_tools_run_offline_with_loopback_traffic_only(traced, tmp_path):
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_bytes(b"one\ntwo\n")
    driver = claude_code.factory(root, state)
    try:
        session = driver.open_session("A")
        # its read-before-write rule is its own: an edit of a file it has not read is refused
        with pytest.raises(ToolRefused) as caught:
            session.edit("a.txt", [_Edit("two", "2")])
        assert caught.value.code == "NOT_READ"
        assert (root / "a.txt").read_bytes() == b"one\ntwo\n"
        assert session.read("a.txt").content == "one\ntwo\n"
        session.edit("a.txt", [_Edit("two", "2")])
        assert (root / "a.txt").read_bytes() == b"one\n2\n"
        session.write("new.txt", "made\n")
        assert (root / "new.txt").read_bytes() == b"made\n"
        ports = {int(session.model.endpoint.rsplit(":", 1)[1]) for session in driver.sessions}
    finally:
        driver.close()
    calls = [line for line in traced.read_text().splitlines() if "connect(" in line]
    inet = [line for line in calls if "AF_INET" in line]
    assert inet, "strace saw no connection to the model server (the trace did not work)"
    for line in inet:
        found = _INET.search(line)
        assert found is not None, f"a connection that is not IPv4 loopback: {line}"
        port, address = int(found.group(1)), found.group(2)
        assert (address, port) in {("127.0.0.1", port_) for port_ in ports}, line
    others = [line for line in calls if "AF_INET" not in line and "AF_UNIX" not in line]
    assert not others, others


class _Edit:
    def __init__(self, old: str, new: str) -> None:
        self.old_string, self.new_string = old, new
        self.replace_all, self.line, self.before, self.after = False, None, None, None
