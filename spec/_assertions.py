"""Assertions every clause uses: error codes, result fields, bounded waiting, failure kinds.

Outcome rules (DESIGN §7; the report depends on them):

* A clause fails (FAIL) with an ``AssertionError`` or ``pytest.fail``: the implementation
  behaved, but not as the clause says. A FAIL has a *kind*: ``unsafe`` (bytes on disk
  wrong, a file outside the root read or written, success reported for a change that did
  not land or for a call that had to be refused), ``wrong-code`` (a refusal with another
  error code, or with none), ``missing-field`` (a result field the contract names is
  absent) and ``wrong-behaviour`` (everything else: a wrong reported value, a hang, an
  order the clause forbids). The kinds are classes of ``editspec.contract.verdicts``
  (``Unsafe``, ``WrongCode``, ``MissingField``, ``WrongBehaviour``); a plain ``assert``
  is ``unsafe`` when its statement looks at the disk and ``wrong-behaviour`` otherwise
  (``failure_kind``).
* An exception raised by the implementation (it passes through the suite's driver
  proxies, which mark it) is a FAIL too: ``wrong-code``, since the tool refused with a
  code, or without one, where the clause expected success or another code.
* ``Inconclusive`` says the harness could not do what the clause needs (no kill landed
  inside the operation): neither PASS nor FAIL.
* Everything else (an exception in the suite's own code, a map the suite cannot use) is
  ERROR: the suite's fault, not a verdict.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

from editspec.contract import RESULT_FIELDS, is_error_code
from editspec.contract.verdicts import (
    MISSING_FIELD,
    UNSAFE,
    WRONG_BEHAVIOUR,
    WRONG_CODE,
    ClauseFailure,
    Inconclusive,
    MissingField,
    UncodedError,
    Unsafe,
    WrongBehaviour,
    WrongCode,
)
from editspec.spec._calls import EXPECTING

T = TypeVar("T")

# Set on an exception that came out of the implementation (through a driver proxy).
FROM_IMPLEMENTATION = "__editspec_from_implementation__"


def inconclusive(reason: str) -> None:
    """End the clause as INCONCLUSIVE (the fault it needs could not be injected)."""
    raise Inconclusive(reason)


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
    return isinstance(exc, (AssertionError, Inconclusive, *TEST_OUTCOMES))


def from_implementation(exc: BaseException) -> bool:
    """The exception was raised by the implementation (a driver proxy marked it)."""
    return bool(getattr(exc, FROM_IMPLEMENTATION, False))


def mark_from_implementation(exc: BaseException) -> None:
    if is_test_outcome(exc) or getattr(exc, "suite_error", False):
        return
    with contextlib.suppress(AttributeError, TypeError):  # a type without a __dict__
        setattr(exc, FROM_IMPLEMENTATION, True)


@contextmanager
def raises_code(*codes: str) -> Iterator[ExpectedError]:
    """Expect the block to raise an error whose ``code`` is one of ``codes`` (any code if none).

    A wrong code, or an exception without a valid code, fails the clause as ``wrong-code``;
    no exception at all fails it as ``unsafe`` (the call had to be refused and was not).
    """
    caught = ExpectedError()
    wanted = " or ".join(codes) if codes else "an error code from the table"
    token = EXPECTING.set(codes or ("*",))
    try:
        yield caught
    except BaseException as exc:
        if is_test_outcome(exc) or isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        if getattr(exc, "suite_error", False):
            raise
        code = getattr(exc, "code", None)
        if not is_error_code(code):
            raise UncodedError(
                f"expected {wanted}; the implementation raised {type(exc).__name__} "
                f"without a valid error code: {exc}"
            ) from exc
        if codes and code not in codes:
            raise WrongCode(f"expected error {wanted}, got {code}: {exc}") from exc
        caught.exception = exc
    else:
        raise Unsafe(f"expected error {wanted}, but the call succeeded")
    finally:
        EXPECTING.reset(token)


def raises_any_code() -> Any:
    """Expect any error from the table (for clauses that fix only *that* it fails cleanly)."""
    return raises_code()


def assert_fields(result: object, kind: str) -> None:
    """The result carries every attribute DESIGN §2 names for ``kind``."""
    missing = [name for name in RESULT_FIELDS[kind] if not hasattr(result, name)]
    if missing:
        raise MissingField(f"{kind} lacks the fields {missing} (got {type(result).__name__})")


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
        raise WrongBehaviour(f"{what} did not return within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def run_concurrently(*actions: Callable[[], object], timeout: float = 60.0) -> list[object]:
    """Run the actions in threads started together; re-raise the first one's exception.

    A clause's worker thread that dies must fail the clause, never vanish into a warning
    (a session that raises on every call would otherwise leave the survivor to pass it).
    """
    results: list[object] = [None] * len(actions)
    errors: list[BaseException | None] = [None] * len(actions)
    start = threading.Barrier(len(actions))

    def run(index: int) -> None:
        try:
            start.wait()
            results[index] = actions[index]()
        except BaseException as exc:
            errors[index] = exc

    threads = [
        threading.Thread(target=run, args=(index,), daemon=True, name=f"editspec-worker-{index}")
        for index in range(len(actions))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if any(thread.is_alive() for thread in threads):
        raise WrongBehaviour(f"concurrent calls did not finish within {timeout:g} s")
    for error in errors:
        if error is not None:
            raise error
    return results


# -- classifying a failure ----------------------------------------------------------------

_CONTRACT_FIELDS = frozenset(name for names in RESULT_FIELDS.values() for name in names)
_DISK_STATEMENT = re.compile(
    r"\bdisk\b|\bDisk\b|read_bytes|\.tree\(|leftovers|snapshot|exists\(|outside|secret"
)


def failure_kind(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """The kind of a FAIL, from the exception and, for a plain assert, its statement."""
    exc = excinfo.value
    if isinstance(exc, ClauseFailure):
        return exc.kind
    if is_missing_field(exc):
        return MISSING_FIELD
    if from_implementation(exc):
        return WRONG_CODE
    if isinstance(exc, AssertionError):
        return UNSAFE if _DISK_STATEMENT.search(_failing_statement(excinfo)) else WRONG_BEHAVIOUR
    return WRONG_BEHAVIOUR


def is_missing_field(exc: BaseException) -> bool:
    """An AttributeError for a contract field on an object that is not the suite's own."""
    if isinstance(exc, MissingField):
        return True
    if type(exc) is not AttributeError:
        return False
    name = getattr(exc, "name", None)
    holder = getattr(exc, "obj", None)
    if name not in _CONTRACT_FIELDS or holder is None:
        return False
    module = type(holder).__module__ or ""
    return not module.startswith("editspec.spec")


def _failing_statement(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """The source of the innermost ``assert`` statement that failed (for a plain assert)."""
    try:
        for entry in reversed(excinfo.traceback):
            statement = str(entry.statement).strip()
            if statement.startswith("assert"):
                return statement
    except Exception:  # the source may be unavailable (zipimport, generated code)
        return ""
    return ""
