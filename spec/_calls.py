"""The call log of a clause: every driver operation it made, for the suite's self-check.

The driver proxies (``fixtures.RecordingDriver`` / ``RecordingSession``) write one
``Call`` per operation into the log of the clause that is running; the plugin keeps one
log per test item and, when asked (``--editspec-call-log=FILE``), writes them out. The
audit (``spec/audit.py``) reads them to check DESIGN §7's rules on every clause:

* a refusal the clause expects (a call inside ``raises_code``) follows a *positive
  control*: the same operation, in the same session, with the same path style,
  succeeding earlier in the clause;
* the clause ``requires`` exactly what it uses: every operation it calls outside
  ``setup()`` is required, and every capability it requires shows in its calls.

``setup()`` marks calls that only prepare the ground (``prepare_change`` reads a file
only when the driver needs a read before a change), so a clause about Edit does not
have to require Read for a tool without read-before-write.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs

from editspec.contract import is_error_code

# What ``raises_code`` is expecting right now (the call log of the self-check reads it).
EXPECTING: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "editspec_expecting", default=None
)

_SETUP: contextvars.ContextVar[bool] = contextvars.ContextVar("editspec_setup", default=False)


@attrs.frozen(kw_only=True)
class Call:
    """One driver operation as a clause made it."""

    op: str
    session: str | None
    path_style: str | None  # "relative" | "absolute" | None (no path argument)
    arguments: tuple[str, ...]  # keyword arguments given a value other than None
    outcome: str  # "ok", an error code, or "uncoded"
    expecting: tuple[str, ...] | None  # the codes raises_code waited for, if inside one
    setup: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "session": self.session,
            "path_style": self.path_style,
            "arguments": list(self.arguments),
            "outcome": self.outcome,
            "expecting": list(self.expecting) if self.expecting is not None else None,
            "setup": self.setup,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Call:
        expecting = data.get("expecting")
        return cls(
            op=str(data["op"]),
            session=data.get("session"),
            path_style=data.get("path_style"),
            arguments=tuple(data.get("arguments") or ()),
            outcome=str(data["outcome"]),
            expecting=tuple(expecting) if expecting is not None else None,
            setup=bool(data.get("setup")),
        )


class CallLog:
    """The calls of one clause, plus the harness features it used (crash, restart, ...)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.features: set[str] = set()

    def note(self, feature: str) -> None:
        self.features.add(feature)


_CURRENT: CallLog | None = None


def begin() -> CallLog:
    global _CURRENT
    _CURRENT = CallLog()
    return _CURRENT


def end() -> CallLog | None:
    global _CURRENT
    log, _CURRENT = _CURRENT, None
    return log


def note(feature: str) -> None:
    """Record that the running clause used a harness feature (``crash``, ``restart``...)."""
    if _CURRENT is not None:
        _CURRENT.note(feature)


@contextmanager
def setup() -> Iterator[None]:
    """Driver calls in this block prepare the ground; the clause is not about them."""
    token = _SETUP.set(True)
    try:
        yield
    finally:
        _SETUP.reset(token)


def _path_style(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    path = args[0] if args else kwargs.get("path")
    if not isinstance(path, str):
        return None
    return "absolute" if path.startswith("/") else "relative"


def record(
    op: str,
    session: str | None,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    error: BaseException | None,
) -> None:
    """Add one operation to the running clause's log (no-op outside a clause)."""
    if _CURRENT is None:
        return
    if error is None:
        outcome = "ok"
    else:
        code = getattr(error, "code", None)
        outcome = str(code) if is_error_code(code) else "uncoded"
    _CURRENT.calls.append(
        Call(
            op=op,
            session=session,
            path_style=_path_style(args, kwargs) if op != "apply_patch" else None,
            arguments=tuple(sorted(k for k, v in kwargs.items() if v is not None)),
            outcome=outcome,
            expecting=EXPECTING.get(),
            setup=_SETUP.get(),
        )
    )
