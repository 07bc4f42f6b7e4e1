"""What a verdict against an implementation is: the kinds of FAIL, and INCONCLUSIVE.

DESIGN §7. A clause fails with one of these ``AssertionError`` classes, whose ``kind`` the
report prints: ``unsafe`` (wrong bytes on disk, an escape, a success for a change that did
not land), ``wrong-code`` (a safe refusal with another code, or none), ``missing-field`` (a
result lacks a field the contract names) and ``wrong-behaviour`` (everything else).
They belong to the contract, not to the suite, because the adapters raise them too: the
MCP adapter answers ``MissingField`` for a result field its server does not report and
``WrongBehaviour`` for a server that broke the protocol. ``editspec.spec`` re-exports
them for clauses.
"""

from __future__ import annotations

UNSAFE = "unsafe"
WRONG_CODE = "wrong-code"
MISSING_FIELD = "missing-field"
WRONG_BEHAVIOUR = "wrong-behaviour"
FAILURE_KINDS: tuple[str, ...] = (UNSAFE, WRONG_CODE, MISSING_FIELD, WRONG_BEHAVIOUR)


class ClauseFailure(AssertionError):
    """A clause's verdict against the implementation; ``kind`` says what went wrong."""

    kind = WRONG_BEHAVIOUR


class Unsafe(ClauseFailure):
    """Wrong bytes on disk, an escape, or a success for a change that did not land."""

    kind = UNSAFE


class WrongCode(ClauseFailure):
    """A safe refusal, but with another error code than the clause names (or none)."""

    kind = WRONG_CODE


class MissingField(ClauseFailure, AttributeError):
    """A result lacks a field the contract names (also an AttributeError, for ``hasattr``)."""

    kind = MISSING_FIELD


class WrongBehaviour(ClauseFailure):
    """The tool stayed safe but did not do what the clause says (a value, a hang, an order)."""

    kind = WRONG_BEHAVIOUR


class Inconclusive(Exception):
    """The harness could not inject what the clause needs: neither PASS nor FAIL."""


class UncodedError(WrongCode):
    """The implementation raised an exception outside the error table (FAIL, wrong-code)."""


__all__ = [
    "FAILURE_KINDS",
    "MISSING_FIELD",
    "UNSAFE",
    "WRONG_BEHAVIOUR",
    "WRONG_CODE",
    "ClauseFailure",
    "Inconclusive",
    "MissingField",
    "UncodedError",
    "Unsafe",
    "WrongBehaviour",
    "WrongCode",
]
