"""Every reproduction under peers/findings/ shows its defect against the pinned version.

Each ``peers/findings/<tool>-<short-name>.py`` is a standalone script: it installs nothing,
runs offline against the catalog's pinned version of its tool (importable from that peer's
directory of the peer cache, or with the interpreter of its venv there when the catalog
gives the peer a Python of its own) and exits 1 while the defect is there, 0 once it is fixed.
The reproductions whose tool is installed in the peer cache (``editspec peers run NAME``
installs it) run here and must exit 1, and so do the agent CLIs' (their CLI is installed
when it is missing); every finding must have its write-up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from editspec.spec.peers.catalog import cache_dir, load_catalog
from tests.conftest import PREFETCH

FINDINGS = Path(__file__).resolve().parents[2] / "peers" / "findings"
# The catalog peer whose installed site a reproduction imports, by the script's prefix.
PEER_OF = {
    "apply-patch-py": "apply-patch-py",
    "openhands-aci": "openhands-aci",
    "mcp-text-editor": "mcp-text-editor",
    "deepagents": "deepagents-virtual",
    "langchain": "langchain-file-management",
    "desktop-commander": "desktop-commander",
    "server-filesystem": "server-filesystem",
    "codex": "codex-apply-patch",
    "gemini": "gemini-cli-core",
    "qwen": "qwen-code-core",
    "claude-code": "claude-code",
}


def _peer(script: Path) -> str:
    prefix = next((key for key in PEER_OF if script.name.startswith(f"{key}-")), None)
    assert prefix is not None, f"{script.name}: no catalog peer for this tool in PEER_OF"
    return PEER_OF[prefix]


# The agent CLIs' reproductions install their pinned CLI when the peer cache lacks it (npm,
# from the catalog's recipe, as `editspec peers run` and the Claude Code smoke test do), so
# that a fresh machine runs them too; the others run where their peer is installed.
INSTALLS = frozenset(PREFETCH)  # downloaded in the background from the start of the run
SCRIPTS = sorted(FINDINGS.glob("*.py"))
INSTALLED = [
    script
    for script in SCRIPTS
    if _peer(script) in INSTALLS or load_catalog()[_peer(script)].installed(cache_dir())
]


def test_every_finding_has_its_write_up_and_peer() -> None:
    assert SCRIPTS, "no reproductions under peers/findings/"
    catalog = load_catalog()
    for script in SCRIPTS:
        assert script.with_suffix(".md").is_file(), f"{script.name} has no write-up"
        assert _peer(script) in catalog
        text = script.with_suffix(".md").read_text(encoding="utf-8")
        assert f"peers/findings/{script.name}" in text, f"{script.name}: the write-up names it"


@pytest.mark.slow  # an agent CLI's reproduction may install its CLI from npm first
@pytest.mark.parametrize(
    "script",
    [
        pytest.param(script, marks=[pytest.mark.download] if _peer(script) in INSTALLS else [])
        for script in INSTALLED
    ],
    ids=[script.stem for script in INSTALLED],
)
def test_reproduction_shows_the_defect(script: Path) -> None:
    peer = load_catalog()[_peer(script)]
    # under the peer's install lock: waits for an installer already running (another
    # worker's, or the prefetch's of tests/peers/conftest.py), installs nothing when done
    peer.install(cache_dir())
    env = peer.environment(cache_dir())
    # ripgrep from this environment (editspec's [rg] extra), for the tools that use it
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # a peer with a Python of its own (the catalog's python) runs in its venv's interpreter
    python = str(peer.peer_python(cache_dir()))
    env.pop("EDITSPEC_PEER_PYTHON", None)
    done = subprocess.run(
        [python, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 1, (
        f"{script.name} exited {done.returncode} (1: the defect shows)\n{done.stdout}{done.stderr}"
    )
