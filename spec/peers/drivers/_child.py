"""The parent's side of a tool that runs in a child process with the peer's own Python.

``ChildTool(peer_name, adapter)`` starts ``PEER_PYTHON spec/peers/drivers/children/ADAPTER``
(see ``children/_child_loop.py``); ``call(method, **params)`` sends one request and returns
its result. An error the tool raised comes back as ``ChildError`` (its type name and
message); a child that died or stopped answering is ``ChildDied`` with its stderr, an error
of the run (the report's ERROR), not a verdict on the tool. ``shared_child`` keeps one
child per adapter for the whole process (a start costs the tool's imports; the adapters
keep no state between calls but what a call names). The interpreter is
``$EDITSPEC_PEER_PYTHON`` (set by ``editspec peers run``), else the one of the catalog
entry's venv in the peer cache.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from editspec.spec.peers.catalog import (
    PEER_PYTHON_VARIABLE,
    CatalogError,
    cache_dir,
    load_catalog,
)

ADAPTERS = Path(__file__).resolve().parent / "children"


class ChildDied(Exception):
    """The child process stopped or answered garbage: the run's failure, not the tool's."""

    suite_error = True


class ChildError(Exception):
    """The tool raised ``kind`` with ``message`` in the child."""

    def __init__(self, kind: str, message: str) -> None:
        # a message that repeats a path of lone surrogates could not cross to the report
        # (xdist sends it as UTF-8): they are shown escaped
        message = message.encode("utf-8", "backslashreplace").decode("utf-8")
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def peer_python(peer_name: str) -> Path:
    """The interpreter of the peer: ``$EDITSPEC_PEER_PYTHON``, else its venv in the cache."""
    chosen = os.environ.get(PEER_PYTHON_VARIABLE)
    if chosen:
        return Path(chosen)
    peer = load_catalog()[peer_name]
    python = peer.peer_python(cache_dir())
    if not python.is_file():
        raise CatalogError(
            f"{peer_name} is not installed ({python} is missing): "
            f"`editspec peers run {peer_name}` installs it"
        )
    return python


class ChildTool:
    """One child process running one adapter script; calls are serialised."""

    def __init__(self, peer_name: str, adapter: str, *, cwd: Path | None = None) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        self._process = subprocess.Popen(
            [str(peer_python(peer_name)), str(ADAPTERS / adapter)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=cwd,
            env=env,
            text=True,
            encoding="utf-8",
        )
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def call(self, method: str, **params: Any) -> Any:
        request = json.dumps({"method": method, "params": params}) + "\n"
        with self._lock:
            stdin, stdout = self._process.stdin, self._process.stdout
            assert stdin is not None and stdout is not None
            try:
                stdin.write(request)
                stdin.flush()
                line = stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
        if not line:
            raise ChildDied(f"the tool's child process stopped: {self.stderr_tail()}")
        answer = json.loads(line)
        if "error" in answer:
            raise ChildError(answer["error"]["type"], answer["error"]["message"])
        return answer["result"]

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-2000:]

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()


_SHARED: dict[tuple[str, str], ChildTool] = {}
_SHARED_LOCK = threading.Lock()


def shared_child(peer_name: str, adapter: str) -> ChildTool:
    """The process's child for this adapter, started (or started again) when needed."""
    with _SHARED_LOCK:
        child = _SHARED.get((peer_name, adapter))
        if child is None or not child.alive:
            child = _SHARED[(peer_name, adapter)] = ChildTool(peer_name, adapter)
        return child


@atexit.register
def _close_shared() -> None:
    for child in _SHARED.values():
        child.close()
