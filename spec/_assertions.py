"""Assertions every clause uses: error codes, result fields, bounded waiting.

Outcome rules (the report depends on them):

* A clause fails (FAIL) with an ``AssertionError`` or ``pytest.fail``: the
  implementation behaved, but not as the clause says.
* An exception from the implementation that does not carry a ``code`` from the error
  table is an ERROR: it crashed or answered outside the contract. ``raises_code``
  turns such an exception into ``UncodedError`` so the report can tell the two apart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

from editspec.spec.contract import RESULT_FIELDS, is_error_code

T = TypeVar("T")


class UncodedError(Exception):
    """The implementation raised an exception outside the error table (reported ERROR)."""


class ExpectedError:
    """What ``raises_code`` caught: the exception and its code."""

    exception: BaseException | None = None

    @property
    def code(self) -> str:
        return str(getattr(self.exception, "code", ""))


# pytest's outcome exceptions (fail, skip, xfail, exit); their classes claim to live in
# "builtins", so they are recognised by identity, not by module.
TEST_OUTCOMES: tuple[type[BaseException], ...] = (
    pytest.fail.Exception,
    pytest.skip.Exception,
    pytest.xfail.Exception,
    pytest.exit.Exception,
)


def is_test_outcome(exc: BaseException) -> bool:
    """An assertion failure or a pytest outcome: raised by the clause, not the implementation."""
    return isinstance(exc, (AssertionError, *TEST_OUTCOMES))


@contextmanager
def raises_code(*codes: str) -> Iterator[ExpectedError]:
    """Expect the block to raise an error whose ``code`` is one of ``codes`` (any code if none).

    A wrong code or no exception fails the clause; an exception without a valid code
    is an ERROR (``UncodedError``).
    """
    caught = ExpectedError()
    wanted = " or ".join(codes) if codes else "an error code from the table"
    try:
        yield caught
    except BaseException as exc:
        if is_test_outcome(exc) or isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        code = getattr(exc, "code", None)
        if not is_error_code(code):
            raise UncodedError(
                f"expected {wanted}; the implementation raised {type(exc).__name__} "
                f"without a valid error code: {exc}"
            ) from exc
        if codes and code not in codes:
            pytest.fail(f"expected error {wanted}, got {code}: {exc}", pytrace=False)
        caught.exception = exc
    else:
        pytest.fail(f"expected error {wanted}, but the call succeeded", pytrace=False)


def raises_any_code() -> Any:
    """Expect any error from the table (for clauses that fix only *that* it fails cleanly)."""
    return raises_code()


def assert_fields(result: object, kind: str) -> None:
    """The result carries every attribute DESIGN §2 names for ``kind``."""
    missing = [name for name in RESULT_FIELDS[kind] if not hasattr(result, name)]
    assert not missing, f"{kind} lacks the fields {missing} (got {type(result).__name__})"


def within(seconds: float, action: Callable[[], T], *, what: str = "the call") -> T:
    """Run ``action`` and fail if it does not return within ``seconds`` (a hang is a failure).

    The action runs in a daemon thread; on timeout the clause fails and the thread is
    abandoned.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="editspec-within")
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{what} did not return within {seconds:g} s", pytrace=False)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
