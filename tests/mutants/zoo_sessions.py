"""A mutant for the race clauses whose sessions are slow to open (LOCK-006).

``slow_sessions_racy_create``: opening a session takes a while, longer for each session
opened (as where a session is a process that starts: an agent CLI), and a write of a file
that does not exist checks that it is missing, then writes it in place without an exclusive
create, so two creators that both saw it missing both succeed and the first one's content is
lost. A race clause that opens its sessions inside the race spreads the creates over the
start-ups and never sees two at once; one that opens them before the race does.
"""

from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace
from typing import Any

from broken_drivers import BrokenDriver
from mutant_zoo import Mutant, register

# Seconds between two creators' "it is missing" and "write it": the race window.
_WINDOW = 0.2
# Seconds the n-th session of a driver takes to open: n times this.
_START = 0.5


class _SlowSessionsDriver(BrokenDriver):
    def __init__(self, inner: Any) -> None:
        super().__init__(inner, _racy_create)
        self._opened = 0
        self._count = threading.Lock()

    def open_session(self, session_id: str) -> Any:
        with self._count:
            self._opened += 1
            delay = self._opened * _START
        time.sleep(delay)
        return super().open_session(session_id)


def _racy_create(session: Any, op: str, call: Any, args: Any, kwargs: Any) -> Any:
    if op != "write":
        return call(*args, **kwargs)
    path, content = args[0], args[1]
    target = os.path.join(session.root, path)
    if os.path.lexists(target):
        return call(*args, **kwargs)
    time.sleep(_WINDOW)  # it was missing: another creator may be here too
    data = content.encode() if isinstance(content, str) else content
    with open(target, "wb") as handle:
        handle.write(data)
    return SimpleNamespace(path=path, operation="create", bytes_written=len(data))


slow_sessions_racy_create = register(
    Mutant(
        name="slow_sessions_racy_create",
        defect="Sessions take seconds to open, and a new file is created by a check that it "
        "is missing, then a plain write: creators that both saw it missing both succeed.",
        areas=("LOCK",),
        wrap=_SlowSessionsDriver,
        clauses=("LOCK-006",),
    )
)
