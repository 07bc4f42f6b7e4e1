"""The report's arithmetic, the expectations format, and the assertion helpers."""

from __future__ import annotations

import time

import pytest

from editspec.reference import ToolError
from editspec.spec import (
    UncodedError,
    Unsafe,
    WrongBehaviour,
    WrongCode,
    raises_any_code,
    raises_code,
    report,
    run_concurrently,
    within,
)
from editspec.spec import expectations as exp


def _item(clause_id, outcome, *, level="MUST", profile="Core", nodeid=None, duration=0.5):
    return {
        "nodeid": nodeid or f"test_x.py::{clause_id}",
        "clause": {
            "id": clause_id,
            "level": level,
            "area": clause_id.split("-")[0],
            "profile": profile,
            "requires": ["read"],
            "text": "A text.",
        },
        "outcome": outcome,
        "message": f"{outcome} message",
        "duration": duration,
    }


def test_worst_outcome_decides():
    assert report.worst(["PASS", "FAIL"]) == "FAIL"
    assert report.worst(["FAIL", "ERROR", "PASS"]) == "ERROR"
    assert report.worst(["XFAIL", "XPASS"]) == "XPASS"
    assert report.worst(["PASS", "SKIPPED"]) == "SKIPPED"
    assert report.worst(["UNSUPPORTED"]) == "UNSUPPORTED"


def test_items_of_one_clause_aggregate():
    records = report.aggregate(
        [
            _item("EDIT-002", "PASS", nodeid="a"),
            _item("EDIT-002", "FAIL", nodeid="b"),
            _item("EDIT-001", "PASS"),
        ]
    )
    assert [r["id"] for r in records] == ["EDIT-001", "EDIT-002"]
    merged = records[1]
    assert merged["outcome"] == "FAIL"
    assert merged["message"] == "FAIL message"
    assert merged["tests"] == ["a", "b"]
    assert merged["duration"] == 1.0


def test_profile_totals_and_must_failures():
    items = [
        _item("READ-001", "PASS"),
        _item("READ-002", "FAIL"),
        _item("READ-003", "XPASS"),
        _item("READ-004", "XFAIL"),
        _item("READ-005", "FAIL", level="SHOULD"),
        _item("SNAP-001", "UNSUPPORTED", profile="Rewindable"),
    ]
    built = report.build(
        items,
        implementation={"name": "toy", "capabilities": ["read"]},
        catalog_hash="0" * 64,
        expectations=None,
        duration=1.0,
        started="now",
        workers=0,
    )
    core = built["summary"]["profiles"]["Core"]
    assert core["MUST"] == {
        "total": 4,
        "passed": 1,
        "failed": 2,
        "inconclusive": 0,
        "unsupported": 0,
        "xfail": 1,
        "skipped": 0,
    }
    assert core["SHOULD"]["failed"] == 1
    assert built["summary"]["profiles"]["Rewindable"]["MUST"]["unsupported"] == 1
    assert built["summary"]["must_failures"] == 2
    text = report.render_text(built)
    assert "Core" in text and "MUST 1/4 (2 failed, 1 xfail)" in text
    assert "profile not declared" in text  # Rewindable, for a driver that only reads
    assert "verdict: 2 MUST clause(s) not met" in text
    markdown = report.render_markdown(built)
    assert "| READ-003 | MUST | XPASS |" in markdown


def test_catalog_hash_is_order_independent_and_content_sensitive():
    a = {"id": "READ-001", "text": "x"}
    b = {"id": "READ-002", "text": "y"}
    assert report.catalog_sha256([a, b]) == report.catalog_sha256([b, a])
    assert report.catalog_sha256([a, b]) != report.catalog_sha256([a, {**b, "text": "z"}])


# -- expectations -------------------------------------------------------------------------------


def test_expectations_round_trip():
    items = [
        exp.Expectation(clause_id="EDIT-004", reason='first match wins ("issue 12")\nsecond line'),
        exp.Expectation(clause_id="PATH-001", reason="ünïcode and \\ backslash \x7f"),
    ]
    text = exp.dumps(items, header="Known failures\nof a toy")
    assert text.startswith("# Known failures\n# of a toy\n")
    assert exp.parse(exp.tomllib.loads(text)) == {item.clause_id: item for item in items}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"edit-004": {"reason": "x"}}, "not a clause id"),
        ({"EDIT-004": "x"}, "must be a table"),
        ({"EDIT-004": {}}, "non-empty reason"),
        ({"EDIT-004": {"reason": "  "}}, "non-empty reason"),
        ({"EDIT-004": {"reason": "x", "outcome": "FAIL"}}, "unknown keys"),
    ],
)
def test_malformed_expectations_are_refused(data, message):
    with pytest.raises(exp.ExpectationsError, match=message):
        exp.parse(data)


def test_expectations_from_a_report():
    built = {
        "clauses": [
            {"id": "READ-001", "outcome": "PASS", "message": ""},
            {"id": "READ-002", "outcome": "FAIL", "message": "AssertionError: x\nmore"},
            {"id": "READ-003", "outcome": "ERROR", "message": "boom"},
            {"id": "READ-004", "outcome": "XFAIL", "message": "expected failure: known"},
            {"id": "READ-005", "outcome": "XPASS", "message": "fixed"},
            {"id": "READ-006", "outcome": "UNSUPPORTED", "message": "UNSUPPORTED: x"},
        ]
    }
    found = {e.clause_id: e.reason for e in exp.from_report(built)}
    assert found == {"READ-002": "AssertionError: x", "READ-003": "boom", "READ-004": "known"}


# -- assertion helpers ---------------------------------------------------------------------------


def test_raises_code_accepts_the_expected_code():
    with raises_code("STALE", "NOT_READ") as caught:
        raise ToolError("NOT_READ", "read it first")
    assert caught.code == "NOT_READ"


def test_raises_code_fails_on_another_code_as_wrong_code():
    wanted = pytest.raises(WrongCode, match="expected error STALE, got NOT_FOUND")
    with wanted as caught, raises_code("STALE"):
        raise ToolError("NOT_FOUND", "gone")
    assert caught.value.kind == "wrong-code"


def test_raises_code_fails_when_nothing_is_raised_as_unsafe():
    with pytest.raises(Unsafe, match="but the call succeeded") as caught, raises_code("STALE"):
        pass
    assert caught.value.kind == "unsafe"


def test_raises_code_turns_uncoded_exceptions_into_wrong_code():
    with pytest.raises(UncodedError, match="FileNotFoundError") as caught, raises_code("NOT_FOUND"):
        raise FileNotFoundError(2, "No such file")
    assert caught.value.kind == "wrong-code"

    class Fake(Exception):
        code = "NOT_A_REAL_CODE"

    with pytest.raises(UncodedError), raises_any_code():
        raise Fake("x")


def test_raises_code_lets_assertions_through():
    with pytest.raises(AssertionError, match="inner"), raises_code("STALE"):
        raise AssertionError("inner")


def test_within_fails_on_a_hang_and_relays_errors():
    with pytest.raises(WrongBehaviour, match="did not return within"):
        within(0.2, lambda: time.sleep(5), what="the sleeper")
    with pytest.raises(ValueError, match="relayed"):
        within(5, lambda: (_ for _ in ()).throw(ValueError("relayed")))
    assert within(5, lambda: 42) == 42


def test_run_concurrently_re_raises_a_dying_worker():
    def dies():
        raise ToolError("IO_ERROR", "worker B failed")

    with pytest.raises(ToolError, match="worker B failed"):
        run_concurrently(lambda: 1, dies)
    assert run_concurrently(lambda: 1, lambda: 2) == [1, 2]


# -- outcome kinds in the report -------------------------------------------------------------


def _kinded(clause_id, outcome, kind, level="MUST"):
    return {**_item(clause_id, outcome, level=level), "kind": kind}


def test_failure_kinds_are_counted_and_shown_in_every_form():
    items = [
        _kinded("PATH-003", "FAIL", "unsafe"),
        _kinded("PATH-014", "FAIL", "wrong-code"),
        _kinded("READ-001", "FAIL", "missing-field", level="SHOULD"),
        _kinded("WRITE-026", "INCONCLUSIVE", None),
        _kinded("READ-002", "PASS", None),
    ]
    built = report.build(
        items,
        implementation={"name": "toy", "capabilities": ["read"]},
        catalog_hash="0" * 64,
        expectations=None,
        duration=1.0,
        started="now",
        workers=0,
    )
    assert built["summary"]["failure_kinds"]["MUST"]["unsafe"] == 1
    assert built["summary"]["failure_kinds"]["MUST"]["wrong-code"] == 1
    assert built["summary"]["failure_kinds"]["SHOULD"]["missing-field"] == 1
    assert built["summary"]["outcomes"]["INCONCLUSIVE"] == 1
    # INCONCLUSIVE is no failure: only the two MUST FAILs count against the verdict.
    assert built["summary"]["must_failures"] == 2
    by_id = {c["id"]: c for c in built["clauses"]}
    assert by_id["PATH-003"]["kind"] == "unsafe"
    assert by_id["READ-002"]["kind"] is None
    text = report.render_text(built)
    assert "PATH-003   MUST   FAIL unsafe" in text
    assert "PATH-014   MUST   FAIL wrong-code" in text
    assert "WRITE-026  MUST   INCONCLUSIVE" in text
    assert "failures by kind: MUST: unsafe 1, wrong-code 1; SHOULD: missing-field 1" in text
    markdown = report.render_markdown(built)
    assert "| PATH-003 | MUST | FAIL | unsafe |" in markdown
    assert "| WRITE-026 | MUST | INCONCLUSIVE |  |" in markdown
