"""The grep worker process (started by ``_grep_worker``, which runs ``main``).

It answers requests read from its standard input until that ends: each is compiled with
``_grep_query.compile_query`` (kept for the next request) and searched exactly as the
in-process backend would (``_grep_py.search_bytes``).
"""

from __future__ import annotations

import pickle
import sys
from typing import IO, Any

from editspec.reference.search._grep_py import search_bytes
from editspec.reference.search._grep_query import GrepQuery, compile_query
from editspec.reference.search._grep_worker import FRAME, encode_frame

KEPT_QUERIES = 64


def answer(request: tuple[Any, ...], queries: dict[tuple[str, bool], GrepQuery]) -> object:
    """The answer to one request (see ``_grep_worker`` for their shapes)."""
    kind, pattern, ignore_case, items = request
    key = (pattern, ignore_case)
    query = queries.get(key)
    if query is None:
        if len(queries) >= KEPT_QUERIES:
            queries.clear()
        query = queries[key] = compile_query(pattern, ignore_case=ignore_case)
    if kind == "files":
        found: list[tuple[str, int, int, str]] = []
        for path, data in items:
            found.extend(
                (match.path, match.line, match.column, match.text)
                for match in search_bytes(query, data, path)
            )
        return found
    search = query.regex.search
    return [0 if (match := search(line)) is None else match.start() + 1 for line in items]


def _die_with_parent() -> None:  # pragma: no cover - runs in the worker
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        # PR_SET_PDEATHSIG: a killed server leaves no worker. Linux sends it when the
        # thread that started the worker ends, too: the pool then finds an idle worker
        # dead and starts another (``_Pool.call``), which costs a start, never an answer.
        libc.prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the worker still ends at the end of its input


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:  # pragma: no cover - the worker
    """Read a request, write its answer, until the input ends."""
    queries: dict[tuple[str, bool], GrepQuery] = {}
    while True:
        header = requests.read(FRAME.size)
        if len(header) < FRAME.size:
            return
        (size,) = FRAME.unpack(header)
        payload = requests.read(size)
        if len(payload) < size:
            return
        try:
            reply = answer(pickle.loads(payload), queries)
        except Exception as exc:
            reply = ("error", f"{type(exc).__name__}: {str(exc)[:200]}")
        answers.write(encode_frame(reply))
        answers.flush()


def main() -> None:  # pragma: no cover - the worker process
    """The worker's entry point (see ``_grep_worker._BOOT``)."""
    _die_with_parent()
    serve(sys.stdin.buffer, sys.stdout.buffer)
