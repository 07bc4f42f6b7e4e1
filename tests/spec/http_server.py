"""``editspec serve --http`` as a subprocess on a free loopback port, for tests."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

_URL = re.compile(r"at (http://\S+/mcp)")


class Served:
    """A running ``serve --http`` process, its URL and its root."""

    def __init__(self, process: subprocess.Popen[str], url: str, root: Path) -> None:
        self.process, self.url, self.root = process, url, root
        self.stderr: list[str] = []

    def drain(self) -> None:
        assert self.process.stderr is not None
        with contextlib.suppress(ValueError, OSError):
            for line in self.process.stderr:
                self.stderr.append(line)

    def stop(self) -> int:
        """SIGTERM (a clean shutdown), then the exit status."""
        self.process.terminate()
        try:
            return self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def start(root: Path, state: Path, *extra: str) -> Served:
    """Start the server over ``root``; return once it printed the URL it listens at."""
    command = [sys.executable, "-m", "editspec.spec.cli", "serve", str(root)]
    command += ["--state-dir", str(state), "--http", "127.0.0.1:0", *extra]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    deadline = time.monotonic() + 120
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line)
        found = _URL.search(line)
        if found:
            served = Served(process, found.group(1), root)
            # The rest of its stderr is kept, read as it comes: a chatty server never blocks.
            threading.Thread(target=served.drain, daemon=True).start()
            return served
    process.kill()
    process.wait()
    pytest.fail(f"serve --http printed no URL: {''.join(seen)}")
