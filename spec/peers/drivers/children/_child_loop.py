"""The loop of a tool adapter that runs in the peer's own interpreter (stdlib only).

A peer that needs another Python than editspec's (the catalog's ``python``) is driven
through a child process: ``PEER_PYTHON ADAPTER.py``, where the adapter script imports the
tool, defines one function per call and hands them to ``serve``. The protocol is one JSON
object per line: the parent writes ``{"method": NAME, "params": {...}}``, the child answers
``{"result": VALUE}`` or ``{"error": {"type": ..., "message": ...}}`` (the exception's type
and message, its causes appended), and nothing else: what the tool prints goes to stderr.
This file imports nothing of editspec, so it runs in any interpreter the peer needs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any


def describe(exc: BaseException) -> str:
    """The message of an exception and of the causes it was raised from."""
    parts = [str(exc) or type(exc).__name__]
    seen = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        parts.append(f"{type(cause).__name__}: {cause}")
        cause = cause.__cause__ or cause.__context__
    return " <- ".join(parts)


def serve(handlers: Mapping[str, Callable[..., Any]]) -> None:
    """Answer requests from stdin until it closes."""
    protocol = sys.stdout
    sys.stdout = sys.stderr  # a print of the tool must not break a line of the protocol
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            handler = handlers[request["method"]]
            answer: dict[str, Any] = {"result": handler(**request.get("params", {}))}
        except Exception as exc:
            answer = {"error": {"type": type(exc).__name__, "message": describe(exc)}}
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()
