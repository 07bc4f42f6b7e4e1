"""A clause's outcome from pytest's report of one phase (DESIGN §7).

``classify(report, call)`` gives (outcome, message, kind): PASS, FAIL with its kind,
INCONCLUSIVE, ERROR, UNSUPPORTED (a skip whose reason starts ``UNSUPPORTED:``),
WITHDRAWN, SKIPPED, XFAIL or XPASS. An exception raised by the implementation is a
FAIL; one raised by the suite's own code is ERROR.
"""

from __future__ import annotations

import pytest

from editspec.contract import is_error_code
from editspec.spec import _assertions
from editspec.spec import report as outcomes
from editspec.spec.report import ERROR, FAIL, INCONCLUSIVE, UNSUPPORTED

UNSUPPORTED_PREFIX = "UNSUPPORTED:"
WITHDRAWN_PREFIX = "WITHDRAWN:"
XPASS_STRICT = "[XPASS(strict)]"


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


def exception_outcome(
    excinfo: pytest.ExceptionInfo[BaseException] | None,
) -> tuple[str, str, str | None]:
    """(outcome, message, kind) for an exception raised while a clause ran (DESIGN §7)."""

    if excinfo is None:
        return FAIL, "", _assertions.WRONG_BEHAVIOUR
    exc = excinfo.value
    kind: str | None = None
    if isinstance(exc, _assertions.Inconclusive):
        outcome, message = INCONCLUSIVE, str(exc)
    elif getattr(exc, "unsupported", False):
        # The tool has no way to take what the clause passes (its map says so).
        outcome, message = UNSUPPORTED, f"{UNSUPPORTED_PREFIX} {exc}"
    elif isinstance(exc, AssertionError) or _assertions.is_missing_field(exc):
        outcome, kind = FAIL, _assertions.failure_kind(excinfo)
        message = str(exc) if isinstance(exc, _assertions.ClauseFailure) else excinfo.exconly()
        if _assertions.is_missing_field(exc) and not isinstance(exc, AssertionError):
            message = f"the result lacks the field {getattr(exc, 'name', '?')!r}: {exc}"
    elif _assertions.is_test_outcome(exc):
        outcome, kind = FAIL, _assertions.WRONG_BEHAVIOUR
        message = str(getattr(exc, "msg", None) or exc)
    elif _assertions.from_implementation(exc):
        # The tool refused (with a code or without one) where the clause expected success.
        outcome, kind = FAIL, _assertions.WRONG_CODE
        code = getattr(exc, "code", None)
        if is_error_code(code):
            message = f"unexpected error {exc}"
        else:
            message = f"the implementation raised {type(exc).__name__} without an error code: {exc}"
    else:
        outcome, message = ERROR, f"{type(exc).__name__}: {exc}"
    if len(message) > 2000:
        message = message[:2000] + " ..."
    return outcome, message, kind


def traceback_text(report: pytest.TestReport) -> str:
    text = str(report.longrepr or "")
    return text if len(text) <= 20000 else text[:20000] + "\n..."


def classify(
    report: pytest.TestReport, call: pytest.CallInfo[None]
) -> tuple[str | None, str, str | None]:
    """(outcome, message, kind) one phase contributes to its clause (None: nothing to say)."""

    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:
        if report.skipped:
            return outcomes.XFAIL, f"expected failure: {wasxfail}", None
        return outcomes.XPASS, f"passed, but the expectations list it: {wasxfail}", None
    if report.skipped:
        reason = skip_reason(report)
        if reason.startswith(UNSUPPORTED_PREFIX):
            return outcomes.UNSUPPORTED, reason, None
        if reason.startswith(WITHDRAWN_PREFIX):
            return outcomes.WITHDRAWN, reason, None
        return outcomes.SKIPPED, reason, None
    if report.passed:
        return (outcomes.PASS, "", None) if report.when == "call" else (None, "", None)
    if report.when == "call" and XPASS_STRICT in str(report.longrepr):
        reason = str(report.longrepr).replace(XPASS_STRICT, "").strip()
        return outcomes.XPASS, f"passed, but the expectations list it: {reason}", None
    outcome, message, kind = exception_outcome(call.excinfo)
    if report.when == "setup" and outcome == outcomes.FAIL and kind is not None:
        # The driver failed while the clause's fixtures were built (the factory, a first
        # session): the implementation's own failure, reported as such.
        return outcome, f"setup failed: {message}", kind
    if report.when != "call":
        # A fixture of the suite failed (or the driver could not be closed).
        if outcome == outcomes.INCONCLUSIVE:
            return outcome, message, None
        return outcomes.ERROR, f"{report.when} failed: {message}", None
    return outcome, message, kind
