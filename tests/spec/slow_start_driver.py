"""The reference behind a slow start: the first call of each driver waits ``START_SECONDS``
first, as a server started on first use does (a Node server loading its modules on a
loaded machine). A clause's time bound is about the call it names, not about this start.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from editspec.contract.drivers.reference import ReferenceDriver

START_SECONDS = 11.0  # beyond the 10 s bound of LIST-013, LIST-014, GLOB-014, GREP-016


class _StartingSession:
    def __init__(self, driver: SlowStartDriver, session: Any) -> None:
        self._driver = driver
        self._session = session

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._session, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self._driver.start()
            return attribute(*args, **kwargs)

        return call


class SlowStartDriver:
    """The reference driver; its first session call waits for the "server" to start."""

    name = "reference, slow to start"

    def __init__(self, root: Path, state_dir: Path) -> None:
        self._inner = ReferenceDriver(root, state_dir)
        self.capabilities = self._inner.capabilities
        self._started = False
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if not self._started:
                time.sleep(START_SECONDS)
                self._started = True

    def open_session(self, session_id: str) -> _StartingSession:
        return _StartingSession(self, self._inner.open_session(session_id))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def factory(root: Path, state_dir: Path) -> SlowStartDriver:
    return SlowStartDriver(root, state_dir)
