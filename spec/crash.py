"""Crash and fault points for the clauses of ``python_fs`` drivers (DESIGN §5).

Each helper runs its ``with`` block under ``editspec.fault_injection.osfaults``'s
``OsInterceptor`` (which intercepts ``os`` and ``open``: see there what is counted and
what a crash does) and notes in the clause's call log that the clause needed
``python_fs``:

* ``count_mutations()`` runs a clean block and records the calls (``trace``).
* ``crash_at(n)``: the n-th mutating call does not happen and the process is dead from
  then on (every later intercepted call raises ``SimulatedCrash``).
* ``fail_at(n, errno)``: the n-th mutating call raises ``OSError(errno)``; later calls
  proceed.
* ``fail_from(n, errno)``: the n-th mutating call and every later one fail.
* ``call_at(n, action)``: ``action()`` runs just before the n-th mutating call.

``CrashKit`` (the ``crash`` fixture) crashes the driver under test and restarts it.
"""

from __future__ import annotations

import errno as _errno
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from editspec.fault_injection.faultfs import SimulatedCrash
from editspec.fault_injection.osfaults import OsCall, OsEvent, OsInterceptor
from editspec.spec import _calls
from editspec.spec.fixtures import DriverHandle, RecordingDriver

__all__ = [
    "CrashKit",
    "OsCall",
    "OsEvent",
    "OsInterceptor",
    "SimulatedCrash",
    "call_at",
    "count_mutations",
    "crash_at",
    "fail_at",
    "fail_from",
]


@contextmanager
def count_mutations() -> Iterator[OsInterceptor]:
    """Run the block unfaulted; ``.mutations`` and ``.trace`` tell what it did."""
    _calls.note("python_fs")
    with OsInterceptor() as interceptor:
        yield interceptor


@contextmanager
def crash_at(n: int) -> Iterator[OsInterceptor]:
    """Kill the process at the n-th mutating call; ``.crashed`` says whether it happened."""
    _calls.note("python_fs")
    if n < 1:
        raise ValueError("crash points count from 1")
    with OsInterceptor(crash_at=n) as interceptor:
        yield interceptor


@contextmanager
def fail_at(n: int, errno: int = _errno.EIO) -> Iterator[OsInterceptor]:
    """Make the n-th mutating call fail with ``OSError(errno)``; later calls proceed."""
    _calls.note("python_fs")
    if n < 1:
        raise ValueError("fault points count from 1")
    with OsInterceptor(fail_at=n, fail_errno=errno) as interceptor:
        yield interceptor


@contextmanager
def fail_from(n: int, errno: int = _errno.EIO) -> Iterator[OsInterceptor]:
    """Make the n-th mutating call and every later one fail with ``OSError(errno)``."""
    _calls.note("python_fs")
    if n < 1:
        raise ValueError("fault points count from 1")
    with OsInterceptor(fail_at=n, fail_errno=errno, fail_later=True) as interceptor:
        yield interceptor


@contextmanager
def call_at(n: int, action: Callable[[], object]) -> Iterator[OsInterceptor]:
    """Run ``action()`` just before the n-th mutating call, then let that call proceed."""
    _calls.note("python_fs")
    if n < 1:
        raise ValueError("hook points count from 1")
    with OsInterceptor(call_at=n, action=action) as interceptor:
        yield interceptor


class CrashKit:
    """Crash a ``python_fs`` driver at its n-th mutating os call, then restart it."""

    def __init__(self, handle: DriverHandle) -> None:
        self._handle = handle

    def count(self, action: Callable[[], object]) -> list[Any]:
        """Run ``action`` unfaulted; return its mutating calls (``OsCall``s, in order)."""
        _calls.note("python_fs")
        with count_mutations() as interceptor:
            action()
        return list(interceptor.trace)

    @contextmanager
    def at(self, n: int) -> Iterator[Any]:
        """Crash at the n-th mutating call inside the block (the crash ends the block)."""
        _calls.note("python_fs")
        with crash_at(n) as interceptor:
            yield interceptor

    def restart(self) -> RecordingDriver:
        """A fresh driver over the same root and state, as a restarted process would build."""
        return self._handle.restart(close=False)

    def points(self, action: Callable[[], object]) -> Iterable[int]:
        return range(1, len(self.count(action)) + 1)
