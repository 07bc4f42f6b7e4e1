"""Expectations files: an implementation's known failures, applied strictly (as WPT metadata).

A TOML table per clause id, each with a ``reason``::

    [EDIT-004]
    reason = "ambiguous matches replace the first one (tracked in issue 12)"

A listed clause that fails is XFAIL; one that passes is XPASS, which counts as a failure
for a MUST clause, so the file is kept honest as the implementation improves.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10
    import tomli as tomllib

_ID = re.compile(r"^[A-Z]+-\d{3}$")

# Outcomes that become expectations when a file is written from a report.
FAILING_OUTCOMES = ("FAIL", "ERROR", "XFAIL")


class ExpectationsError(ValueError):
    """An expectations file that cannot be used."""


@attrs.frozen(kw_only=True)
class Expectation:
    clause_id: str
    reason: str


def load(path: str | Path) -> dict[str, Expectation]:
    """Parse an expectations file; every entry needs a clause id and a non-empty reason."""
    source = Path(path)
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ExpectationsError(f"cannot read expectations file {source}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ExpectationsError(f"{source} is not valid TOML: {exc}") from exc
    return parse(data, source=str(source))


def parse(data: Mapping[str, Any], *, source: str = "<expectations>") -> dict[str, Expectation]:
    found: dict[str, Expectation] = {}
    for key, entry in data.items():
        if not _ID.match(key):
            raise ExpectationsError(f"{source}: {key!r} is not a clause id (AREA-NNN)")
        if not isinstance(entry, Mapping):
            raise ExpectationsError(f"{source}: [{key}] must be a table with a reason")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ExpectationsError(f"{source}: [{key}] needs a non-empty reason")
        unknown = sorted(set(entry) - {"reason"})
        if unknown:
            raise ExpectationsError(f"{source}: [{key}] has unknown keys {unknown}")
        found[key] = Expectation(clause_id=key, reason=reason.strip())
    return found


def _toml_string(value: str) -> str:
    # A JSON string is a valid TOML basic string once DEL is escaped too.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def dumps(expectations: Iterable[Expectation], *, header: str = "") -> str:
    """TOML text for ``expectations``, sorted by clause id."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    if lines:
        lines.append("")
    for item in sorted(expectations, key=lambda e: e.clause_id):
        lines.append(f"[{item.clause_id}]")
        lines.append(f"reason = {_toml_string(item.reason)}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n" if lines else ""


def from_report(report: Mapping[str, Any]) -> list[Expectation]:
    """One expectation per clause the report saw fail (FAIL, ERROR, or already XFAIL)."""
    found = []
    for record in report.get("clauses", ()):
        if record.get("outcome") in FAILING_OUTCOMES:
            message = str(record.get("message") or record["outcome"]).strip()
            first_line = message.splitlines()[0] if message else record["outcome"]
            if record.get("outcome") == "XFAIL" and first_line.startswith("expected failure: "):
                first_line = first_line[len("expected failure: ") :]
            found.append(Expectation(clause_id=record["id"], reason=first_line[:300]))
    return found
