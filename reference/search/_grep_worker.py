"""Grep's regular expressions run in a child process, so that a deadline can stop them.

Python's ``re`` is the definition of a match (``_grep_query``), and it cannot be stopped:
its matching loop holds the GIL and never checks for another thread, so a pattern that
backtracks catastrophically (``(a|aa)+$`` on a line of a's and a b; ``foo.*bar`` on a
10 MiB line of ``foo``) stalls the call and every other thread of the process with it.
No syntactic check finds every such pattern. So every regex that runs over file content
runs here, in a worker process the caller waits on with its cancellation check: when the
deadline passes or the cancel token is set, the worker is killed (CANCELLED) and the next
call starts a fresh one. The semantics stay exactly ``re``'s, in the same interpreter.

Rules: the worker reads no file (the engine reads them through the ``_fs`` port and sends
their bytes); it holds no state but compiled patterns; one call at a time per worker.
Idle workers are kept for reuse (``IDLE_WORKERS``), so a grep costs a round trip through a
pipe, not a process start. The worker dies with its parent (``PR_SET_PDEATHSIG`` where
Linux offers it, and always at the end of its input).

The worker's side is ``_grep_child``. Protocol: frames of an 8-byte big-endian length
and a pickle. Requests are
``("files", pattern, ignore_case, [(path, bytes), ...])``, answered with
``[(path, line, column, text), ...]`` (``_grep_py.search_bytes``), and
``("lines", pattern, ignore_case, [line, ...])``, answered with a column (1-based) or 0
per line (the candidate lines of the ripgrep backend). An exception in the worker is
answered with ``("error", text)``.
"""

from __future__ import annotations

import os
import pickle
import re
import select
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO, Any

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import GrepMatch
from editspec.reference.search._grep_query import GrepQuery

FRAME = struct.Struct("!Q")
IDLE_WORKERS = 2
POLL_SECONDS = 0.05
"""How often a waiting caller runs its cancellation check."""
BATCH_BYTES = 4 * 1024 * 1024
"""File bytes sent in one request, so the check also runs between requests."""


class WorkerFailed(Exception):
    """The worker died or answered with something that is not an answer."""


def encode_frame(value: object) -> bytes:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME.pack(len(payload)) + payload


# The worker imports only the modules it runs, not the package (whose ``__init__`` loads the
# whole engine, asyncio included, and triples the start-up time): a bare package module
# with the engine's directory as its path stands in for it.
_BOOT = """
import sys, types
package = types.ModuleType("editspec.reference")
package.__path__ = [sys.argv[1]]
sys.modules["editspec.reference"] = package
from editspec.reference.search import _grep_child
_grep_child.main()
"""

# The engine's directory: the parent of this module's folder (``search/``).
_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Worker:
    """One child process and the two ends of its pipes."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, _ENGINE_DIR],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            close_fds=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests: IO[bytes] = self.process.stdin
        self.answers: IO[bytes] = self.process.stdout

    def call(self, request: object, check: Callable[[], None]) -> Any:
        """Send ``request`` and wait for the answer, running ``check`` while waiting."""
        try:
            self.requests.write(encode_frame(request))
            self.requests.flush()
        except OSError as exc:  # the worker is gone
            raise WorkerFailed(f"the grep worker did not take the request: {exc}") from exc
        header = self._read(FRAME.size, check)
        (size,) = FRAME.unpack(header)
        answer = pickle.loads(self._read(size, check))
        if isinstance(answer, tuple) and answer[:1] == ("error",):
            raise WorkerFailed(f"the grep worker failed: {answer[1]}")
        return answer

    def _read(self, size: int, check: Callable[[], None]) -> bytes:
        chunks: list[bytes] = []
        missing = size
        while missing:
            check()
            ready, _, _ = select.select([self.answers], [], [], POLL_SECONDS)
            if not ready:
                continue
            chunk = self.answers.read(min(missing, 1 << 20))
            if not chunk:
                raise WorkerFailed("the grep worker exited")
            chunks.append(chunk)
            missing -= len(chunk)
        return b"".join(chunks)

    def stop(self) -> None:
        """Kill the worker and reap it (it may be deep in a regex: no polite request)."""
        self.process.kill()
        self.process.wait()
        for stream in (self.requests, self.answers):
            stream.close()


class _Pool:
    """Idle workers, taken one per call; a worker whose call did not finish is killed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def warm(self) -> None:
        """Start a worker now if none is idle, so that the next call need not wait for one."""
        with self._lock:
            if not self._idle:
                self._idle.append(_Worker())

    def call(self, request: object, check: Callable[[], None]) -> Any:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        fresh = worker is None
        if worker is None:
            worker = _Worker()
        try:
            answer = worker.call(request, check)
        except WorkerFailed:
            worker.stop()
            if fresh:
                raise
            return self.call(request, check)  # an idle worker died (killed): one more try
        except BaseException:
            worker.stop()
            self.warm()  # the next call, typically soon, finds a worker started
            raise
        with self._lock:
            if len(self._idle) < IDLE_WORKERS:
                self._idle.append(worker)
                worker = None
        if worker is not None:
            worker.stop()
        return answer


_POOL = _Pool()


def warm() -> None:
    """Have a worker started (it boots while the caller walks the tree)."""
    _POOL.warm()


def _call(request: object, check: Callable[[], None]) -> Any:
    try:
        return _POOL.call(request, check)
    except WorkerFailed as exc:
        raise ToolError(_errors.IO_ERROR, str(exc)) from exc


def _flags(query: GrepQuery) -> tuple[str, bool]:
    return query.pattern, bool(query.regex.flags & re.IGNORECASE)


def search_files(
    query: GrepQuery, files: Sequence[tuple[str, bytes]], check: Callable[[], None]
) -> list[GrepMatch]:
    """The matching lines of these files (path, bytes), as ``_grep_py.search_bytes``
    finds them, searched by a worker; CANCELLED as soon as ``check`` raises it.

    Spec: LIMIT-031.
    """
    pattern, ignore_case = _flags(query)
    matches: list[GrepMatch] = []
    batch: list[tuple[str, bytes]] = []
    size = 0
    for index, item in enumerate(files):
        batch.append(item)
        size += len(item[1])
        if size >= BATCH_BYTES or index == len(files) - 1:
            found = _call(("files", pattern, ignore_case, batch), check)
            matches.extend(
                GrepMatch(path=path, line=line, column=column, text=text)
                for path, line, column, text in found
            )
            batch, size = [], 0
    return matches


def match_lines(
    query: GrepQuery, lines: Sequence[tuple[str, int, str]], check: Callable[[], None]
) -> list[GrepMatch]:
    """Those of the candidate lines (path, line number, text) the regex matches.

    Spec: LIMIT-031.
    """
    pattern, ignore_case = _flags(query)
    matches: list[GrepMatch] = []
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and (end == start or size < BATCH_BYTES):
            size += len(lines[end][2])
            end += 1
        texts = [text for _, _, text in lines[start:end]]
        columns: list[int] = _call(("lines", pattern, ignore_case, texts), check)
        if len(columns) != len(texts):
            raise ToolError(_errors.IO_ERROR, "the grep worker answered for other lines")
        matches.extend(
            GrepMatch(path=path, line=number, column=column, text=text)
            for (path, number, text), column in zip(lines[start:end], columns, strict=True)
            if column
        )
        start = end
    return matches
