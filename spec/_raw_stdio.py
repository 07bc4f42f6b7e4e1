"""An MCP server over stdio spoken to line by line, bytes as they are, with no SDK between.

The clauses about the wire itself (LIMIT-032: every request line answered) need to send
lines no SDK client would send, and to see that no answer comes. ``RawServer.start``
starts the server of a driver factory that names a command line (the MCP adapter's:
``command`` with ``{root}`` and ``{state_dir}``, and its map's ``cwd``); ``send`` writes
one line; ``answer(timeout)`` returns the next response the server writes (an object
with ``result`` or ``error``: notifications and requests from the server are skipped),
or ``None`` when none comes in time.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = "2025-06-18"


def _filled(word: str, root: Path, state_dir: Path) -> str:
    return word.replace("{root}", os.fspath(root)).replace("{state_dir}", os.fspath(state_dir))


class RawServer:
    """One server process and a thread that reads its stdout into a queue."""

    def __init__(self, argv: list[str], cwd: str | None) -> None:
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True, name="editspec-raw-stdio").start()

    @classmethod
    def start(cls, factory: Any, root: Path, state_dir: Path) -> RawServer | None:
        """The factory's server over ``root``, or None when it names no command line."""
        command = getattr(factory, "command", None)
        if command is None:
            return None
        words = shlex.split(command) if isinstance(command, str) else list(command)
        cwd = getattr(getattr(factory, "map", None), "cwd", None)
        return cls(
            [_filled(word, root, state_dir) for word in words],
            None if cwd is None else _filled(cwd, root, state_dir),
        )

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send(self, line: bytes) -> None:
        """Write one line; to a server that exited, nothing (``answer`` then finds none)."""
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write(line.rstrip(b"\n") + b"\n")
            self.process.stdin.flush()

    def request(self, message: dict[str, Any]) -> None:
        self.send(json.dumps(message).encode("utf-8"))

    def answer(self, timeout: float) -> dict[str, Any] | list[Any] | None:
        """The next response written within ``timeout`` seconds, or None."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:  # the server exited
                return None
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not a message (a server that prints on stdout)
            if isinstance(message, list) or (
                isinstance(message, dict) and ("result" in message or "error" in message)
            ):
                return message  # type: ignore[no-any-return]

    def initialize(self, timeout: float) -> dict[str, Any] | list[Any] | None:
        """The initialize handshake; the server's answer to ``initialize``."""
        self.request(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "editspec-raw", "version": "1"},
                },
            }
        )
        answer = self.answer(timeout)
        self.request({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self) -> None:
        """Close its stdin (the end of the session), then kill it if it lingers."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):  # a server that died already
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
