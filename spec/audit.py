"""The suite's self-check of DESIGN §7 on recorded call logs (``editspec audit``).

A run of the suite against the reference with ``--editspec-call-log=DIR`` records, for
every test item, the driver operations it made (``spec/_calls.py``). Two rules are
checked on every item whose clause passed:

* **Positive control.** Every refusal the clause expects (a call inside
  ``raises_code`` that the driver refused) follows a call of the same operation, in the
  same session and with the same path style (relative or absolute), that succeeded
  outside ``raises_code`` and outside ``setup()``. A tool that refuses for the wrong
  reason (started in the wrong directory, the tool not mapped, a session that died)
  then fails the control instead of passing the clause.
* **Minimal requirements.** Every operation the clause calls outside ``setup()`` is in
  its ``requires`` (``OPERATION_CAPABILITY``), and every capability in ``requires``
  shows in what the clause did (``EVIDENCE``): a clause demands nothing it never uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from editspec.spec._calls import Call

# The capability a driver operation needs.
OPERATION_CAPABILITY: Mapping[str, str] = {
    "read": "read",
    "write": "write",
    "edit": "edit",
    "apply_patch": "apply_patch",
    "glob": "glob",
    "grep": "grep",
    "list_directory": "list_directory",
    "rewind": "snapshots",
    "edit_notebook": "notebook",
    "open_remote_session": "remote_acp",
    "manifest": "delete",
    "delete": "delete",
    "move": "move",
}
# Every operation of a remote session (``open_remote_session``) needs only remote_acp.
REMOTE_PREFIX = "remote:"


def capability_of(op: str) -> str | None:
    if op.startswith(REMOTE_PREFIX):
        return "remote_acp"
    return OPERATION_CAPABILITY.get(op)


# Operations every driver has (Driver.recover may do nothing): calling them needs nothing.
FREE_OPERATIONS = frozenset({"recover", "why_ignored"})


def _any_call(calls: Sequence[Call], predicate: Any) -> bool:
    return any(predicate(call) for call in calls)


def _expects(code: str) -> Any:
    """A call that waited for ``code`` in ``raises_code``, or was answered with it."""
    return lambda call: (
        call.outcome == code or (call.expecting is not None and code in call.expecting)
    )


def _argument(name: str) -> Any:
    return lambda call: name in call.arguments


# How each capability shows in a clause's calls and features.
EVIDENCE: Mapping[str, str] = {
    "read_before_write": "a call that expects NOT_READ",
    "stale_detection": "a call that expects STALE",
    "cas": "a call with expected_sha256",
    "confinement": "a call that expects OUTSIDE_WORKSPACE, or the alias/outside/symlinks fixture",
    "recovery": "recover() or a restart of the driver",
    "snapshots": "rewind or a call with message_id",
    "python_fs": "a crash, fault or count at the os level",
    "process": "a restart of the driver, or the driver factory (a server to kill)",
    "journal_layout": "a look at the journal directory",
    "grep_cancel": "a grep with deadline or cancel",
}


def evidenced(capability: str, calls: Sequence[Call], features: frozenset[str]) -> bool:
    """Whether ``calls``/``features`` show that the clause uses ``capability``."""
    if _any_call(calls, lambda c: capability_of(c.op) == capability):
        return True
    if capability == "read_before_write":
        return _any_call(calls, _expects("NOT_READ"))
    if capability == "stale_detection":
        return _any_call(calls, _expects("STALE"))
    if capability == "cas":
        return _any_call(calls, _argument("expected_sha256"))
    if capability == "confinement":
        return _any_call(calls, _expects("OUTSIDE_WORKSPACE")) or bool(
            features & {"fixture:alias", "fixture:outside", "fixture:symlinks"}
        )
    if capability == "recovery":
        return _any_call(calls, lambda c: c.op == "recover") or "restart" in features
    if capability == "snapshots":
        return _any_call(calls, _argument("message_id"))
    if capability == "python_fs":
        return "python_fs" in features
    if capability == "process":
        return bool(features & {"restart", "fixture:driver_factory"})
    if capability == "journal_layout":
        return "journal_layout" in features
    if capability == "grep_cancel":
        return _any_call(
            calls, lambda c: c.op == "grep" and {"deadline", "cancel"} & set(c.arguments)
        )
    return False


@attrs.frozen(kw_only=True)
class Item:
    """One recorded test item."""

    nodeid: str
    clause: str
    calls: tuple[Call, ...]
    features: frozenset[str]


@attrs.frozen(kw_only=True)
class Problem:
    clause: str
    rule: str  # "positive-control" | "unrequired-operation" | "unused-requirement"
    detail: str

    def __str__(self) -> str:
        return f"{self.clause}: {self.rule}: {self.detail}"


def load(directory: Path) -> list[Item]:
    items = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            if not data.get("clause"):
                continue
            items.append(
                Item(
                    nodeid=data["nodeid"],
                    clause=data["clause"],
                    calls=tuple(Call.from_dict(call) for call in data["calls"]),
                    features=frozenset(data.get("features", ())),
                )
            )
    return items


def _describe(call: Call) -> str:
    style = f", {call.path_style} path" if call.path_style else ""
    return f"{call.op}(session {call.session}{style}) refused with {call.outcome}"


def positive_control_problems(clause_id: str, calls: Sequence[Call]) -> list[Problem]:
    problems = []
    seen: set[str] = set()
    for index, call in enumerate(calls):
        if call.expecting is None or call.outcome == "ok" or call.setup:
            continue
        controls = [
            earlier
            for earlier in calls[:index]
            if earlier.op == call.op
            and earlier.session == call.session
            and earlier.outcome == "ok"
            and earlier.expecting is None
            and not earlier.setup
            and (call.path_style is None or earlier.path_style == call.path_style)
        ]
        if not controls:
            detail = f"{_describe(call)} with no earlier success of the same kind"
            if detail not in seen:
                seen.add(detail)
                problems.append(Problem(clause=clause_id, rule="positive-control", detail=detail))
    return problems


def requirement_problems(
    clause_id: str, requires: frozenset[str], items: Sequence[Item]
) -> list[Problem]:
    calls = [call for item in items for call in item.calls]
    features = frozenset(feature for item in items for feature in item.features)
    problems = []
    used_ops = sorted({c.op for c in calls if not c.setup and c.op not in FREE_OPERATIONS})
    for op in used_ops:
        needed = capability_of(op)
        if needed is not None and needed not in requires:
            problems.append(
                Problem(
                    clause=clause_id,
                    rule="unrequired-operation",
                    detail=f"calls {op} outside setup but does not require {needed}",
                )
            )
    for capability in sorted(requires):
        if not evidenced(capability, calls, features):
            how = EVIDENCE.get(capability, f"a call of {capability}")
            problems.append(
                Problem(
                    clause=clause_id,
                    rule="unused-requirement",
                    detail=f"requires {capability} but shows no {how}",
                )
            )
    return problems


def audit(
    items: Iterable[Item],
    requires: Mapping[str, frozenset[str]],
    passed: Iterable[str],
) -> list[Problem]:
    """Every problem of the clauses in ``passed`` (those the reference passes)."""
    by_clause: dict[str, list[Item]] = {}
    for item in items:
        by_clause.setdefault(item.clause, []).append(item)
    problems: list[Problem] = []
    for clause_id in sorted(set(passed) & set(by_clause)):
        for item in by_clause[clause_id]:
            problems += [
                problem
                for problem in positive_control_problems(clause_id, item.calls)
                if problem not in problems
            ]
        problems += requirement_problems(
            clause_id, requires.get(clause_id, frozenset()), by_clause[clause_id]
        )
    return problems


def run(
    directory: Path, report: Mapping[str, Any], catalog_requires: Mapping[str, frozenset[str]]
) -> list[Problem]:
    """The audit of one recorded run (its call logs and its JSON report)."""
    passed = [c["id"] for c in report["clauses"] if c["outcome"] == "PASS"]
    return audit(load(directory), catalog_requires, passed)
