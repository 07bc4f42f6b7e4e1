"""Run the MCP project's conformance suite against ``editspec serve --http``.

    python tests/peers/mcp_conformance.py [--results DIR] [-- EXTRA conformance ARGS]

``@modelcontextprotocol/conformance`` (a pinned version) is installed once with npm into
a cache directory (``$EDITSPEC_PEER_CACHE``, else ``$XDG_CACHE_HOME/editspec/peers``,
else ``~/.cache/editspec/peers``); it needs Node.js 22 or later, and when the ``node`` on
PATH is older, a Node.js 22 binary is installed from npm into the same cache. Then
``editspec serve --http 127.0.0.1:0`` starts over an empty temporary root, and the
suite's server scenarios (its active suite) run against its URL with the baseline
``tests/peers/mcp_conformance_baseline.yml``, which names every scenario that does not
apply to this server and why. The exit status is the suite's: 0 when every failure is
in the baseline and no baseline entry passes. Without node and npm on PATH it prints
why and exits 0 (tox -e mcp-conformance).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

PACKAGE = "@modelcontextprotocol/conformance"
VERSION = "0.1.16"
NODE_VERSION = "22.23.5"  # from npm (node-<os>-<arch>), when the node on PATH is older
BASELINE = Path(__file__).with_name("mcp_conformance_baseline.yml")
_URL = re.compile(r"at (http://\S+/mcp)")


def cache_dir() -> Path:
    explicit = os.environ.get("EDITSPEC_PEER_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "editspec" / "peers"


def npm_install(prefix: Path, spec: str) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    command = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
               "--loglevel=error", spec]  # fmt: skip
    print("installing:", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def node_major(node: str) -> int:
    done = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    return int(done.stdout.strip().lstrip("v").split(".")[0])


def node_binary(cache: Path) -> str:
    """A node of version 22 or later: the one on PATH, or one installed from npm."""
    on_path = shutil.which("node")
    if on_path and node_major(on_path) >= 22:
        return on_path
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform)
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    if system is None or machine is None:
        raise SystemExit(f"mcp-conformance: needs Node.js 22+, and npm has none for {sys.platform}")
    package = f"node-{system}-{machine}"
    prefix = cache / f"node-{NODE_VERSION}"
    binary = prefix / "node_modules" / package / "bin" / "node"
    if not binary.is_file():
        npm_install(prefix, f"{package}@{NODE_VERSION}")
    return str(binary)


def suite_entry(cache: Path) -> Path:
    prefix = cache / f"mcp-conformance-{VERSION}"
    entry = prefix / "node_modules" / PACKAGE / "dist" / "index.js"
    if not entry.is_file():
        npm_install(prefix, f"{PACKAGE}@{VERSION}")
    return entry


def _copy(stream: IO[str]) -> None:
    for line in stream:
        sys.stderr.write(f"[serve] {line}")


def start_server(root: Path, state: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "editspec.spec.cli", "serve", str(root),
               "--state-dir", str(state), "--http", "127.0.0.1:0"]  # fmt: skip
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = server.stderr.readline()
        if not line:
            break
        found = _URL.search(line)
        if found:
            # Its later warnings (refused Host headers, ...) go on to our stderr.
            threading.Thread(target=_copy, args=(server.stderr,), daemon=True).start()
            return server, found.group(1)
    server.kill()
    raise SystemExit("mcp-conformance: editspec serve --http did not print its URL")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", metavar="DIR", help="keep the suite's results here")
    parser.add_argument("extra", nargs="*", help="more arguments for `conformance server`")
    args = parser.parse_args(argv)

    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        print(f"mcp-conformance: skipped: {' and '.join(missing)} not found on PATH "
              f"(needed to install and run {PACKAGE})")  # fmt: skip
        return 0
    cache = cache_dir()
    node, entry = node_binary(cache), suite_entry(cache)
    with tempfile.TemporaryDirectory(prefix="editspec-mcp-conformance-") as scratch:
        root = Path(scratch) / "ws"
        root.mkdir()
        results = args.results or str(Path(scratch) / "results")
        server, url = start_server(root, Path(scratch) / "state")
        try:
            print(f"editspec serve --http at {url}; {PACKAGE} {VERSION}", flush=True)
            command = [node, str(entry), "server", "--url", url, "--expected-failures",
                       str(BASELINE), "-o", results, *args.extra]  # fmt: skip
            status = subprocess.run(command, cwd=scratch).returncode
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    print(f"mcp-conformance: {'passed' if status == 0 else 'FAILED'} (exit {status})")
    return status


if __name__ == "__main__":
    sys.exit(main())
