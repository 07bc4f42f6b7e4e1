"""The suite's self-check of DESIGN §7 (``spec/audit.py``): positive controls and
minimal requirements, on synthetic call logs, and on the whole suite run against the
reference (``editspec audit``)."""

from __future__ import annotations

import pytest

from editspec.spec import audit
from editspec.spec._calls import Call


def call(op="read", *, session="A", style="relative", outcome="ok", expecting=None, setup=False,
         arguments=()):  # fmt: skip
    return Call(
        op=op,
        session=session,
        path_style=style,
        arguments=tuple(arguments),
        outcome=outcome,
        expecting=expecting,
        setup=setup,
    )


REFUSED = call(outcome="OUTSIDE_WORKSPACE", expecting=("OUTSIDE_WORKSPACE",))


def problems(calls, requires=frozenset({"read", "confinement"}), features=()):
    item = audit.Item(nodeid="n", clause="PATH-900", calls=tuple(calls),
                      features=frozenset(features))  # fmt: skip
    return [str(p) for p in audit.audit([item], {"PATH-900": frozenset(requires)}, ["PATH-900"])]


def test_a_refusal_after_a_success_of_the_same_kind_passes():
    assert problems([call(), REFUSED]) == []


def test_a_refusal_without_a_control_is_reported():
    assert problems([REFUSED]) == [
        "PATH-900: positive-control: read(session A, relative path) refused with "
        "OUTSIDE_WORKSPACE with no earlier success of the same kind"
    ]


@pytest.mark.parametrize(
    "control",
    [
        call(style="absolute"),  # another path style
        call(session="B"),  # another session
        call(op="write"),  # another tool
        call(setup=True),  # a preparation that only some drivers make
        call(expecting=("NOT_FOUND",)),  # a call that was itself expected to fail
    ],
)
def test_a_control_of_another_kind_does_not_count(control):
    assert any("positive-control" in p for p in problems([control, REFUSED]))


def test_a_control_after_the_refusal_does_not_count():
    assert any("positive-control" in p for p in problems([REFUSED, call()]))


def test_an_operation_used_but_not_required_is_reported():
    found = problems([call(), call(op="write")], requires={"read"})
    assert found == ["PATH-900: unrequired-operation: calls write outside setup but does not "
                     "require write"]  # fmt: skip
    assert problems([call(), call(op="write", setup=True)], requires={"read"}) == []


def test_a_requirement_never_used_is_reported():
    found = problems([call()], requires={"read", "stale_detection", "cas"})
    assert found == [
        "PATH-900: unused-requirement: requires cas but shows no a call with expected_sha256",
        "PATH-900: unused-requirement: requires stale_detection but shows no a call that "
        "expects STALE",
    ]


@pytest.mark.parametrize(
    ("capability", "calls", "features"),
    [
        ("stale_detection", [call(outcome="STALE")], ()),
        ("stale_detection", [call(outcome="ok", expecting=("STALE",))], ()),
        ("read_before_write", [call(op="write", outcome="NOT_READ", expecting=("NOT_READ",))], ()),
        ("cas", [call(op="write", arguments=("expected_sha256",))], ()),
        ("snapshots", [call(op="write", arguments=("message_id",))], ()),
        ("snapshots", [call(op="rewind", style=None)], ()),
        ("confinement", [call()], ("fixture:alias",)),
        ("recovery", [call()], ("restart",)),
        ("python_fs", [call()], ("python_fs",)),
        ("journal_layout", [call()], ("journal_layout",)),
        ("grep_cancel", [call(op="grep", arguments=("deadline",))], ()),
        ("remote_acp", [call(op="remote:read")], ()),
    ],
)
def test_each_capability_shows_in_what_a_clause_does(capability, calls, features):
    assert audit.evidenced(capability, calls, frozenset(features))
    assert not audit.evidenced(capability, [call(op="list_directory")], frozenset())


def test_remote_operations_need_only_remote_acp():
    assert (
        problems([call(op="remote:read"), call(op="remote:write")], requires={"remote_acp"}) == []
    )


# The whole suite is audited in CI on the call log of the in-process run of
# tests/spec/test_mcp_agreement.py (one run of the suite serves both), and by
# `tox -e spec-check` (editspec audit).
