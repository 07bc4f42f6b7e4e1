"""Implementations that start on first use, as an MCP server does (a Node server loading its
modules on a loaded machine takes seconds).

``factory``: the reference, whose first call of each driver waits ``START_SECONDS`` first.
A clause's time bound is about the call it names, not about this start.

``racy_factory``: edits that lose updates when they overlap, each driver starting later
than the one made before it. A clause whose processes race from one moment (LOCK-003)
catches it only if every racer has started before that moment.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from editspec.contract.drivers.reference import ReferenceDriver
from editspec.reference import ToolError

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


# -- racy_factory: edits without a lock, each driver starting later than the one before ----

RACE_PAUSE = 0.02  # between an edit's read and its write: the window another edit can hit
START_STEP = 1.5  # the n-th driver made over one state directory starts n * START_STEP late


class _RacySession:
    def __init__(self, driver: RacyDriver) -> None:
        self._driver = driver

    def edit(self, path: str, edits: Any, **_options: Any) -> SimpleNamespace:
        self._driver.start()
        target = self._driver.root / path
        text = target.read_text(encoding="utf-8")
        for spec in edits:
            if spec.old_string not in text:
                raise ToolError("NO_MATCH", f"{spec.old_string!r} is not in {path}")
            text = text.replace(spec.old_string, spec.new_string, 1)
        time.sleep(RACE_PAUSE)  # read, modify, write: no lock, no freshness check
        target.write_text(text, encoding="utf-8")
        return SimpleNamespace(path=path, replacements=len(edits))


class RacyDriver:
    """Edits that lose updates when two processes' edits overlap, behind a start that is
    later for each driver made over the same state directory (as servers started one
    after another are): processes that start on first use never overlap."""

    name = "racy edits, slow to start"
    capabilities = frozenset({"edit"})

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = Path(root)
        index = 0
        while True:  # the order of construction, across processes
            try:
                (Path(state_dir) / f"driver-{index}").touch(exist_ok=False)
                break
            except FileExistsError:
                index += 1
        self._delay = index * START_STEP
        self._started = False
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if not self._started:
                time.sleep(self._delay)
                self._started = True

    def open_session(self, session_id: str) -> _RacySession:
        return _RacySession(self)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        return None


def racy_factory(root: Path, state_dir: Path) -> RacyDriver:
    return RacyDriver(root, state_dir)
