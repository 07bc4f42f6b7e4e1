"""The conformance report: per-clause outcomes, per-profile totals, JSON and Markdown.

Outcomes (DESIGN §6, §7): PASS; FAIL (the behaviour differs from the clause), with a
kind: ``unsafe``, ``wrong-code``, ``missing-field`` or ``wrong-behaviour``
(``_assertions``); INCONCLUSIVE (the harness could not inject the fault the clause
needs: neither a pass nor a failure); ERROR (the suite's own code failed, or its map
cannot reach the tool: no verdict on the implementation); UNSUPPORTED (a capability the
driver does not declare; never counted as passed); XFAIL and XPASS (from an
expectations file, applied strictly). Two more keep the record honest: SKIPPED (the
environment cannot run the clause, e.g. no symlinks) and WITHDRAWN (a retired clause).

A clause checked by several test items (parametrized) takes its worst item's outcome.
A run *fails* when any MUST clause is FAIL, ERROR or XPASS.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from editspec.contract import AREAS, CONTRACT_VERSION, PROFILES

PASS = "PASS"
FAIL = "FAIL"
ERROR = "ERROR"
UNSUPPORTED = "UNSUPPORTED"
INCONCLUSIVE = "INCONCLUSIVE"
XFAIL = "XFAIL"
XPASS = "XPASS"
SKIPPED = "SKIPPED"
WITHDRAWN = "WITHDRAWN"

OUTCOMES: tuple[str, ...] = (
    PASS,
    FAIL,
    ERROR,
    INCONCLUSIVE,
    UNSUPPORTED,
    XFAIL,
    XPASS,
    SKIPPED,
    WITHDRAWN,
)
KINDS: tuple[str, ...] = ("unsafe", "wrong-code", "missing-field", "wrong-behaviour")
FAILING: frozenset[str] = frozenset({FAIL, ERROR, XPASS})
_SEVERITY: dict[str, float] = {
    WITHDRAWN: 0,
    PASS: 1,
    UNSUPPORTED: 2,
    SKIPPED: 3,
    INCONCLUSIVE: 3.5,
    XFAIL: 4,
    XPASS: 5,
    FAIL: 6,
    ERROR: 7,
}

REPORT_FORMAT = "editspec-report/1"


def worst(outcomes: Iterable[str]) -> str:
    """The outcome that decides for several (ERROR > FAIL > XPASS > XFAIL > INCONCLUSIVE > ...)."""
    return max(outcomes, key=lambda outcome: _SEVERITY[outcome], default=PASS)


def suite_version() -> str:
    try:
        from importlib.metadata import version

        return version("editspec")
    except Exception:  # an uninstalled checkout has no metadata
        return "unknown"


def catalog_sha256(entries: Iterable[Mapping[str, Any]]) -> str:
    """A stable hash of the clause catalog (ids, levels, texts, requirements)."""
    canonical = json.dumps(sorted(entries, key=lambda e: str(e["id"])), sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def environment() -> dict[str, str]:
    import pytest

    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "editspec": suite_version(),
        "pytest": pytest.__version__,
        "executable": sys.executable.rsplit("/", 1)[-1],
    }


def aggregate(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One record per clause from per-item records (``clause``, ``outcome``, ``message``...)."""
    by_id: dict[str, dict[str, Any]] = {}
    for item in items:
        info = item["clause"]
        record = by_id.get(info["id"])
        if record is None:
            record = by_id[info["id"]] = {
                "id": info["id"],
                "level": info["level"],
                "area": info["area"],
                "profile": info["profile"],
                "requires": list(info["requires"]),
                "text": info["text"],
                "outcome": item["outcome"],
                "kind": item.get("kind") if item["outcome"] == FAIL else None,
                "message": item.get("message", ""),
                "traceback": item.get("traceback", ""),
                "duration": 0.0,
                "tests": [],
            }
        elif _SEVERITY[item["outcome"]] > _SEVERITY[record["outcome"]]:
            record["outcome"] = item["outcome"]
            record["kind"] = item.get("kind") if item["outcome"] == FAIL else None
            record["message"] = item.get("message", "")
            record["traceback"] = item.get("traceback", "")
        record["duration"] = round(record["duration"] + float(item.get("duration", 0.0)), 6)
        record["tests"].append(item["nodeid"])
    return sorted(by_id.values(), key=_catalog_order)


def _catalog_order(record: Mapping[str, Any]) -> tuple[int, int]:

    area = record["area"]
    return (AREAS.index(area) if area in AREAS else len(AREAS), int(record["id"].rsplit("-", 1)[1]))


def profile_summary(clauses: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """Per profile and level: total, passed, failed, unsupported, xfail, skipped."""
    summary: dict[str, dict[str, dict[str, int]]] = {}
    for name in PROFILES:
        summary[name] = {}
    for record in clauses:
        if record["outcome"] == WITHDRAWN:
            continue
        levels = summary.setdefault(record["profile"], {})
        counts = levels.setdefault(
            record["level"],
            {
                "total": 0,
                "passed": 0,
                "failed": 0,
                "inconclusive": 0,
                "unsupported": 0,
                "xfail": 0,
                "skipped": 0,
            },
        )
        counts["total"] += 1
        outcome = record["outcome"]
        if outcome == PASS:
            counts["passed"] += 1
        elif outcome in FAILING:
            counts["failed"] += 1
        elif outcome == INCONCLUSIVE:
            counts["inconclusive"] += 1
        elif outcome == UNSUPPORTED:
            counts["unsupported"] += 1
        elif outcome == XFAIL:
            counts["xfail"] += 1
        elif outcome == SKIPPED:
            counts["skipped"] += 1
    return summary


def must_failures(clauses: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [c for c in clauses if c["level"] == "MUST" and c["outcome"] in FAILING]


def failure_kinds(clauses: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per level, how many clauses FAIL of each kind (DESIGN §7)."""
    table: dict[str, dict[str, int]] = {}
    for record in clauses:
        if record["outcome"] != FAIL:
            continue
        counts = table.setdefault(record["level"], {kind: 0 for kind in KINDS})
        kind = record.get("kind") or "wrong-behaviour"
        counts[kind] = counts.get(kind, 0) + 1
    return table


def build(
    items: Sequence[Mapping[str, Any]],
    *,
    implementation: Mapping[str, Any],
    catalog_hash: str,
    expectations: str | None,
    duration: float,
    started: str,
    workers: int,
) -> dict[str, Any]:
    clauses = aggregate(items)
    counts = {outcome: 0 for outcome in OUTCOMES}
    for record in clauses:
        counts[record["outcome"]] += 1
    return {
        "format": REPORT_FORMAT,
        "suite_version": suite_version(),
        "contract_version": CONTRACT_VERSION,
        "catalog_sha256": catalog_hash,
        "implementation": dict(implementation),
        "environment": {**environment(), "workers": str(workers)},
        "expectations": expectations,
        "started": started,
        "duration": round(duration, 3),
        "summary": {
            "outcomes": counts,
            "profiles": profile_summary(clauses),
            "must_failures": len(must_failures(clauses)),
            "failure_kinds": failure_kinds(clauses),
        },
        "clauses": clauses,
    }


# -- rendering ------------------------------------------------------------------------------


def _level_cell(level: str, counts: Mapping[str, int]) -> str:
    cell = f"{level} {counts['passed']}/{counts['total']}"
    notes = []
    if counts["failed"]:
        notes.append(f"{counts['failed']} failed")
    if counts.get("inconclusive"):
        notes.append(f"{counts['inconclusive']} inconclusive")
    if counts["xfail"]:
        notes.append(f"{counts['xfail']} xfail")
    if counts["unsupported"]:
        notes.append(f"{counts['unsupported']} unsupported")
    if counts["skipped"]:
        notes.append(f"{counts['skipped']} skipped")
    return f"{cell} ({', '.join(notes)})" if notes else cell


def profile_lines(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(profile, "MUST 31/31, SHOULD 4/5 (1 failed)") for each profile with clauses."""
    rows = []
    capabilities = frozenset(report["implementation"].get("capabilities", ()))
    for name, levels in report["summary"]["profiles"].items():
        if not levels:
            continue
        cells = [
            _level_cell(level, levels[level])
            for level in ("MUST", "SHOULD", "MAY")
            if level in levels
        ]
        profile = PROFILES.get(name)
        if profile is not None and not profile.supported_by(capabilities):
            cells.append("profile not declared")
        rows.append((name, ", ".join(cells)))
    return rows


def outcome_label(record: Mapping[str, Any]) -> str:
    """``FAIL unsafe``, ``FAIL wrong-code``, ... or the bare outcome."""
    kind = record.get("kind")
    return (
        f"{record['outcome']} {kind}" if record["outcome"] == FAIL and kind else record["outcome"]
    )


def _kinds_line(report: Mapping[str, Any]) -> str | None:
    table = report["summary"].get("failure_kinds") or {}
    parts = []
    for level in ("MUST", "SHOULD", "MAY"):
        counts = table.get(level)
        if counts:
            cells = ", ".join(f"{kind} {n}" for kind, n in counts.items() if n)
            parts.append(f"{level}: {cells}")
    return "; ".join(parts) if parts else None


def first_line(message: str, width: int) -> str:
    lines = (message or "").strip().splitlines()
    text = lines[0] if lines else ""
    return text if len(text) <= width else text[: width - 3] + "..."


def render_text(report: Mapping[str, Any], *, tracebacks: bool = False) -> str:
    """The terminal table: per profile and level, then one line per clause not conforming."""
    implementation = report["implementation"]
    clauses = report["clauses"]
    lines = [
        f"editspec conformance: {implementation.get('name', '?')} "
        f"(contract {report['contract_version']}, suite {report['suite_version']}, "
        f"{len(clauses)} clauses)",
    ]
    width = max((len(name) for name, _ in profile_lines(report)), default=0)
    for name, cells in profile_lines(report):
        lines.append(f"  {name.ljust(width)}  {cells}")
    counts = report["summary"]["outcomes"]
    lines.append("  outcomes: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
    kinds = _kinds_line(report)
    if kinds:
        lines.append(f"  failures by kind: {kinds}")
    notable = [c for c in clauses if c["outcome"] in (FAIL, ERROR, XPASS, INCONCLUSIVE)]
    if notable:
        lines.append("not conforming:")
        label_width = max(len(outcome_label(record)) for record in notable)
        for record in notable:
            label = outcome_label(record).ljust(label_width)
            lines.append(
                f"  {record['id']:<10} {record['level']:<6} {label}  "
                f"{first_line(record['message'], 140)}"
            )
            if tracebacks and record.get("traceback"):
                lines += ["      " + row for row in str(record["traceback"]).splitlines()]
    failures = report["summary"]["must_failures"]
    if failures:
        lines.append(f"verdict: {failures} MUST clause(s) not met")
    else:
        lines.append("verdict: every MUST clause that ran is met")
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def render_markdown(report: Mapping[str, Any]) -> str:
    implementation = report["implementation"]
    env = report["environment"]
    lines = [
        f"# Conformance report: {implementation.get('name', '?')}",
        "",
        f"- suite {report['suite_version']}, contract {report['contract_version']}, "
        f"catalog `{report['catalog_sha256'][:16]}`",
        f"- capabilities: {', '.join(sorted(implementation.get('capabilities', ()))) or '-'}",
        f"- driver: `{implementation.get('driver', '?')}`",
        f"- Python {env.get('python')} on {env.get('platform')}; started {report['started']}, "
        f"{report['duration']} s",
        f"- expectations: {report['expectations'] or 'none'}",
        "",
        "| profile | result |",
        "| --- | --- |",
    ]
    lines += [f"| {name} | {cells} |" for name, cells in profile_lines(report)]
    failures = report["summary"]["must_failures"]
    verdict = (
        f"{failures} MUST clause(s) not met" if failures else "every MUST clause that ran is met"
    )
    lines += ["", f"**Verdict:** {verdict}."]
    kinds = _kinds_line(report)
    if kinds:
        lines += ["", f"**Failures by kind:** {kinds}."]
    lines += [
        "",
        "| clause | level | outcome | kind | message |",
        "| --- | --- | --- | --- | --- |",
    ]
    for record in report["clauses"]:
        lines.append(
            f"| {record['id']} | {record['level']} | {record['outcome']} | "
            f"{record.get('kind') or ''} | {_md_cell(first_line(record['message'], 200))} |"
        )
    return "\n".join(lines) + "\n"


def load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    if data.get("format") != REPORT_FORMAT:
        raise ValueError(f"{path} is not an editspec report ({REPORT_FORMAT})")
    return data
