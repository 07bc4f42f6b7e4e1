"""RECOV: recovery finishes or rolls back interrupted transactions, and is itself safe.

DESIGN §4 "Transaction protocol (TXN/RECOV)". Interrupted transactions are made by
killing a ``python_fs`` driver in the middle of the ``_txn_kit`` scenario patch. Clauses
that read or damage journal files need ``journal_layout`` (journals where DESIGN puts
them); the others see only the workspace.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil

from editspec.contract import is_error_code
from editspec.reference import EditSpec
from editspec.spec import (
    MUST,
    SHOULD,
    MissingField,
    UncodedError,
    WrongBehaviour,
    call_at,
    clause,
    crash_at,
    fail_from,
    inconclusive,
    raises_code,
)
from editspec.spec._txn_kit import (
    AFTER,
    BEFORE,
    PATCH,
    Runs,
    describe,
    expected_names,
    journal_dirs,
    journals,
    mentions,
    names,
    publish_index,
    steps,
)


def _mid_publish(runs, disk, trace=None):
    """Crash the scenario right after its first file is published; the journal left behind
    (``trace``: the warm-up's, when the clause already has it)."""
    if trace is None:
        trace = runs.warm_up()
    first = publish_index(trace)
    assert first is not None, f"no rename or link publishes a file: {trace}"
    assert runs.crashed_at(first + 1)
    actual = names(disk)
    assert actual not in (runs.before, runs.after), "the crash left no interrupted transaction"
    found = journals(disk)
    assert len(found) == 1, f"one journal expected after the crash, found {found}"
    return found[0]


def _corrupt_journal_is_refused(disk, crash, journal, damaged):
    """Recovery over ``damaged`` journal bytes: CORRUPT_JOURNAL, nothing touched."""
    original = journal.read_bytes()
    journal.write_bytes(damaged)
    before = disk.snapshot()
    with raises_code("CORRUPT_JOURNAL"):
        restarted = crash.restart()
        restarted.recover()
    disk.assert_unchanged(before)
    assert journal.read_bytes() == damaged, "recovery removed or rewrote the damaged journal"
    journal.write_bytes(original)  # repaired: recovery goes ahead
    crash.restart().recover()


@clause(
    "RECOV-001",
    MUST,
    requires={"read", "apply_patch", "recovery"},
    text="recover() on a workspace with no interrupted transaction changes nothing and reports "
    "no transaction rolled back or forward.",
    rationale="Recovery runs on every start; on a healthy workspace it must be a no-op.",
)
def test_recover_when_nothing_was_interrupted(driver, session, disk):
    for rel, data in BEFORE.items():
        disk.write(rel, data)
        session.read(rel)
    session.apply_patch(PATCH)
    before = disk.snapshot()
    report = driver.recover()
    disk.assert_unchanged(before)
    assert not report.rolled_back and not report.rolled_forward, report


@clause(
    "RECOV-002",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="Recovery is idempotent: after a crash at any step of a patch, a second recover() "
    "changes nothing and reports no transaction.",
    rationale="Recovery runs on every start and may be called any time; a second run that "
    "rolled something back twice would destroy the first run's result.",
)
def test_recovery_is_idempotent(disk, crash):
    runs = Runs(disk, crash)
    total = len(runs.warm_up())
    for step in sorted({*range(1, total + 1, 3), total}):
        assert runs.crashed_at(step)
        runs.recovered()
        side = runs.assert_before_or_after(f"crash at step {step}")
        snapshot = disk.snapshot()
        report = runs.driver.recover()
        disk.assert_unchanged(snapshot)
        assert not report.rolled_back and not report.rolled_forward, (step, report)
        runs.recovered()
        assert runs.assert_before_or_after(f"third recovery, step {step}") == side


@clause(
    "RECOV-003",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="A crash at any step of recovery, followed by another recovery, reaches the same "
    "result as an uninterrupted recovery: the same side (all-before or all-after) and nothing "
    "else under the root.",
    rationale="The machine that crashed during a patch may crash again while recovering; the "
    "second recovery must not find a state the first one cannot handle.",
)
def test_crash_during_recovery(disk, crash):
    runs = Runs(disk, crash)
    trace = runs.warm_up()
    total = len(trace)
    first = publish_index(trace)
    assert first is not None
    interrupted = 0
    for patch_step in sorted({first + 1, (first + total) // 2, total - 2}):
        assert runs.crashed_at(patch_step)
        pending = names(disk)
        runs.recovered()
        side = runs.assert_before_or_after(f"crash at step {patch_step}")
        if pending in (runs.before, runs.after):
            continue  # nothing for recovery to do at this point
        interrupted += 1
        for recovery_step in steps():
            assert runs.crashed_at(patch_step)
            with crash_at(recovery_step) as point:
                restarted = crash.restart()
                restarted.recover()
            runs.recovered()
            where = f"patch crash at {patch_step}, recovery crash at {recovery_step}"
            assert runs.assert_before_or_after(where) == side, f"{where}: a different result"
            if not point.crashed:
                break
    assert interrupted > 0, "no crash point left work for recovery"


@clause(
    "RECOV-004",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="A driver started over a workspace with an interrupted transaction recovers it on "
    "start: before any explicit recover(), the workspace is all-before or all-after.",
    rationale="An agent host restarted after a crash goes straight back to work; a tree left "
    "half-patched until someone calls recover() is served to it as if it were real.",
)
def test_recovery_on_start(disk, crash):
    runs = Runs(disk, crash)
    total = len(runs.warm_up())
    for step in sorted({*range(1, total + 1, 3), total}):
        assert runs.crashed_at(step)
        started = crash.restart()
        started.open_session("A").read("a.txt")
        runs.assert_before_or_after(f"start after a crash at step {step}")


class Interrupted(BaseException):
    """An interruption that is not an error (as KeyboardInterrupt is): no cleanup is owed."""


def _write_control(session, disk):
    """Positive control (DESIGN §7): a write of a new file succeeds in this session and
    lands (then it is removed again), so a NEEDS_RECOVERY that follows is about the state."""
    session.write("control.txt", "control\n")
    assert disk.read("control.txt") == b"control\n", "the positive control's write did not land"
    os.unlink(disk.path("control.txt"))


def _edit_control(session, disk):
    """Positive control: an edit creating a new file succeeds in this session (then removed)."""
    session.edit("control-edit.txt", [EditSpec("", "control\n")])
    assert disk.read("control-edit.txt") == b"control\n", "the positive control's edit failed"
    os.unlink(disk.path("control-edit.txt"))


def _interrupted_at(runs, step, *, control=False):
    """A fresh run of the scenario patch interrupted just before its ``step``-th call
    (``control``: after a positive-control write of this session)."""
    session = runs.fresh()
    if control:
        _write_control(session, runs.disk)

    def interrupt():
        raise Interrupted(f"interrupted before step {step}")

    try:
        with call_at(step, interrupt) as point:
            session.apply_patch(PATCH)
    except Interrupted:
        pass
    return session, point.called


def _targets(disk):
    """The bytes (or absence) of every path the scenario patch names."""
    return {rel: disk.read(rel) if disk.exists(rel) else None for rel in {*BEFORE, *AFTER}}


_TARGETS_BEFORE = {rel: BEFORE.get(rel) for rel in {*BEFORE, *AFTER}}
_TARGETS_AFTER = {rel: AFTER.get(rel) for rel in {*BEFORE, *AFTER}}


@clause(
    "RECOV-005",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="After a patch is interrupted at any step (an exception that is not an error, such as "
    "KeyboardInterrupt), recover() restores all-before or all-after, its report names the "
    "transaction as rolled back or rolled forward accordingly, and every leftover path it "
    "reports as cleaned is gone.",
    rationale="The host logs what recovery did; a silent recovery hides that a patch the "
    "agent believes failed was in fact applied, or the reverse.",
)
def test_recovery_report(disk, crash):
    runs = Runs(disk, crash)
    total = len(runs.warm_up())
    seen = set()
    for step in range(1, total + 1):
        _, called = _interrupted_at(runs, step)
        assert called, f"the patch made fewer than {step} calls this time"
        pending = names(disk)
        report = runs.driver.recover()
        side = runs.assert_before_or_after(f"interrupted before step {step}, recovered")
        if pending in (runs.before, runs.after):
            continue
        listed = report.rolled_back if side == "before" else report.rolled_forward
        other = report.rolled_forward if side == "before" else report.rolled_back
        assert len(listed) == 1 and not other, f"step {step}: {side}, but the report says {report}"
        for path in report.cleaned:
            full = path if os.path.isabs(path) else os.path.join(disk.root, path)
            assert not os.path.lexists(full), f"step {step}: {path} reported cleaned, still there"
        seen.add(side)
    assert seen == {"before", "after"}, f"recovery was seen only going {seen}"


@clause(
    "RECOV-015",
    SHOULD,
    requires={"read", "write", "apply_patch", "recovery", "python_fs"},
    text="A patch interrupted half-published in a process that keeps running (an exception "
    "mid-publish, KeyboardInterrupt included) leaves the workspace in the state of a failed "
    "rollback: every further write and patch is refused with NEEDS_RECOVERY, changing "
    "nothing, until recover() has run.",
    rationale="The process survived an interruption its transaction did not; publishing more "
    "over the half-published files buries them for recovery to find, and its later rollback "
    "would undo a read-then-write made in between.",
)
def test_interrupted_patch_needs_recovery(disk, crash):
    runs = Runs(disk, crash)
    total = len(runs.warm_up())
    half = 0
    for step in range(1, total + 1):
        session, _ = _interrupted_at(runs, step, control=True)
        if _targets(disk) in (_TARGETS_BEFORE, _TARGETS_AFTER):
            continue
        half += 1
        snapshot = disk.snapshot()
        with raises_code("NEEDS_RECOVERY"):
            session.write("later.txt", "later\n")
        with raises_code("NEEDS_RECOVERY"):
            session.apply_patch("*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch\n")
        disk.assert_unchanged(snapshot)
        runs.driver.recover()
        runs.assert_before_or_after(f"interrupted before step {step}, recovered")
        session.write("later.txt", "accepted\n")
        os.unlink(disk.path("later.txt"))
    if half == 0:
        inconclusive("no interruption left the patch half-published")


@clause(
    "RECOV-006",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="Rolling back removes a file the transaction added only if it still holds the "
    "planned content: a file someone else wrote at that path after the crash stays.",
    rationale="Between the crash and the recovery a user or a build may have written that "
    "path; deleting their file to undo ours loses work.",
)
def test_rollback_keeps_a_foreign_added_file(disk, crash, external):
    runs = Runs(disk, crash)
    total = len(runs.warm_up())
    added = "new/added.txt"
    foreign = b"written after the crash by someone else\n"
    tried = 0
    for step in range(1, total + 1):
        assert runs.crashed_at(step)
        if not disk.exists(added) or names(disk) == runs.after:
            runs.recovered()
            continue
        tried += 1
        external.write(added, foreign)
        runs.recovered()
        actual = names(disk)
        states = (
            expected_names({**BEFORE, added: foreign}),
            expected_names({**AFTER, added: foreign}),
        )
        assert actual in states, f"step {step}: {describe(actual, *states)}"
    assert tried > 0, "no crash point left the added file in place"


@clause(
    "RECOV-007",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="Recovery touches only what the interrupted transaction names: other files, also ones "
    "created or changed after the crash, stay as they are.",
    rationale="A recovery that sweeps the tree for anything that looks like a leftover "
    "destroys the user's files.",
)
def test_recovery_leaves_other_files(disk, crash):
    runs = Runs(disk, crash)
    trace = runs.warm_up()
    first = publish_index(trace)
    assert first is not None
    for step in (first + 1, len(trace) - 2):
        assert runs.crashed_at(step)
        disk.write("notes.txt", f"unrelated {step}\n")
        disk.write("new/other.txt", "also unrelated\n")
        disk.write(".hidden.backup", "a user's own backup\n")
        runs.recovered()
        assert disk.read("notes.txt") == f"unrelated {step}\n".encode()
        assert disk.read("new/other.txt") == b"also unrelated\n"
        assert disk.read(".hidden.backup") == b"a user's own backup\n"
        for rel in ("notes.txt", "new/other.txt", ".hidden.backup"):
            os.unlink(disk.path(rel))
        if not os.listdir(disk.path("new")):
            os.rmdir(disk.path("new"))
        runs.assert_before_or_after(f"crash at step {step}")


@clause(
    "RECOV-008",
    MUST,
    requires={"read", "write", "edit", "apply_patch", "recovery", "python_fs"},
    text="When a patch fails and its rollback fails too, the error names every file it could "
    "not restore, every later write, edit and patch is refused with NEEDS_RECOVERY without "
    "changing anything, and a successful recover() restores all-before and lifts the refusal.",
    rationale="A workspace whose rollback failed is in a state nobody planned; carrying on "
    "writes into it compounds the damage, reporting success hides it.",
)
def test_failed_rollback_needs_recovery(disk, crash):
    runs = Runs(disk, crash)
    runs.warm_up()
    refused = 0
    for step in steps():
        session = runs.fresh()
        _write_control(session, disk)
        _edit_control(session, disk)
        failure = None
        try:
            with fail_from(step, errno.EIO) as point:
                session.apply_patch(PATCH)
        except Exception as exc:
            if not is_error_code(getattr(exc, "code", None)):
                raise UncodedError(f"step {step}: {exc!r} carries no error code") from exc
            failure = exc
        if not point.failed:
            break
        if failure is None or names(disk) == runs.before:
            runs.recovered()
            continue
        refused += 1
        current = _targets(disk)
        for rel in sorted(current):
            if current[rel] != _TARGETS_BEFORE[rel]:
                assert mentions(failure, rel), (
                    f"step {step}: {rel} was not restored, but the error does not name it: "
                    f"{failure}"
                )
        snapshot = disk.snapshot()
        with raises_code("NEEDS_RECOVERY"):
            session.write("later.txt", "later\n")
        with raises_code("NEEDS_RECOVERY"):
            session.edit("later-edit.txt", [EditSpec("", "later\n")])
        with raises_code("NEEDS_RECOVERY"):
            session.apply_patch("*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch\n")
        disk.assert_unchanged(snapshot)
        runs.driver.recover()
        actual = names(disk)
        assert actual == runs.before, f"step {step}: {describe(actual, runs.before)}"
        session.write("later.txt", "accepted again\n")
        assert disk.read("later.txt") == b"accepted again\n"
        os.unlink(disk.path("later.txt"))
    assert refused > 0, "no failure point left a rollback unfinished"


@clause(
    "RECOV-009",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs", "journal_layout"},
    text="A journal that does not parse is CORRUPT_JOURNAL: recovery touches nothing under the "
    "root and keeps the journal.",
    rationale="Acting on a journal that cannot be read means guessing which files to delete.",
)
def test_garbage_journal(disk, crash):
    runs = Runs(disk, crash)
    journal = _mid_publish(runs, disk)
    _corrupt_journal_is_refused(disk, crash, journal, b"\x00\xffnot a journal {")
    runs.assert_before_or_after("after the journal was repaired")


@clause(
    "RECOV-010",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs", "journal_layout"},
    text="A torn journal (its content cut short) is CORRUPT_JOURNAL: recovery touches nothing "
    "under the root.",
    rationale="A journal cut short lists only some of the files; undoing just those would "
    "leave the others published.",
)
def test_torn_journal(disk, crash):
    runs = Runs(disk, crash)
    journal = _mid_publish(runs, disk)
    data = journal.read_bytes()
    _corrupt_journal_is_refused(disk, crash, journal, data[: len(data) // 2])
    runs.assert_before_or_after("after the journal was repaired")


def _sealed(runs, data):
    """``data`` with the driver's journal checksum recomputed (contract 1.3 ``seal_journal``)."""
    seal = getattr(runs.driver, "seal_journal", None)
    if not callable(seal):
        raise MissingField(
            "the driver declares journal_layout but has no seal_journal(data) -> bytes "
            "(contract 1.3): a crafted journal is refused by its checksum alone, and the "
            "version and path checks this clause is about are never reached"
        )
    sealed = seal(data)
    if not isinstance(sealed, bytes):
        raise WrongBehaviour(f"seal_journal returned {type(sealed).__name__}, not bytes")
    return sealed


def _flip_a_hash(value):
    """``value`` with one hex digit of its first sha256 (not the checksum) changed, or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            if "checksum" in str(key).lower():
                continue
            flipped = _flip_a_hash(item)
            if flipped is not None:
                return {**value, key: flipped}
    elif isinstance(value, list):
        for index, item in enumerate(value):
            flipped = _flip_a_hash(item)
            if flipped is not None:
                return [*value[:index], flipped, *value[index + 1 :]]
    elif isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
        return ("1" if value[0] == "0" else "0") + value[1:]
    return None


@clause(
    "RECOV-011",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs", "journal_layout"},
    text="A journal of an unknown version, or altered so that it no longer matches its own "
    "checksum, is CORRUPT_JOURNAL: recovery touches nothing under the root.",
    rationale="A journal from another version or a hand edit may mean something else than "
    "this recovery thinks.",
)
def test_unknown_version_journal(disk, crash):
    runs = Runs(disk, crash)
    trace = runs.warm_up()
    # Altered, not re-sealed: a recorded hash changed, every field still well formed, so
    # only the checksum tells.
    journal = _mid_publish(runs, disk, trace)
    record = json.loads(journal.read_text(encoding="utf-8"))
    altered = _flip_a_hash(record)
    assert altered is not None, f"the journal records no sha256 to alter: {sorted(record)}"
    _corrupt_journal_is_refused(disk, crash, journal, json.dumps(altered).encode())
    runs.assert_before_or_after("after the altered journal was repaired")
    # An unknown version, re-sealed by the implementation: the version check must tell.
    journal = _mid_publish(runs, disk, trace)
    record = json.loads(journal.read_text(encoding="utf-8"))
    keys = [key for key in record if "version" in key.lower()]
    assert keys, f"the journal records no version: {sorted(record)}"
    record[keys[0]] = 999
    _corrupt_journal_is_refused(disk, crash, journal, _sealed(runs, json.dumps(record).encode()))
    runs.assert_before_or_after("after the journal was repaired")


def _moved_outside(value, root, outside, moved):
    """``value`` with every path of a.txt and of its side files moved to ``outside``
    (relative paths under the relative ``outside``); the relative names moved go to
    ``moved``."""
    if isinstance(value, dict):
        return {key: _moved_outside(item, root, outside, moved) for key, item in value.items()}
    if isinstance(value, list):
        return [_moved_outside(item, root, outside, moved) for item in value]
    if not isinstance(value, str) or "a.txt" not in os.path.basename(value):
        return value
    if os.path.isabs(value):
        if os.path.dirname(value) != root:
            return value
        moved.append(os.path.basename(value))
        return os.path.join(outside, os.path.basename(value))
    if "/" in value:
        return value
    moved.append(value)
    return f"{os.path.relpath(outside, root)}/{value}"


@clause(
    "RECOV-012",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs", "journal_layout", "confinement"},
    text="A journal that names a path outside the workspace is CORRUPT_JOURNAL: recovery "
    "touches nothing, inside the root or outside it.",
    rationale="Recovery deletes and renames what its journal names; a forged journal must "
    "not steer it at files outside the root.",
)
def test_journal_pointing_outside(disk, crash):
    runs = Runs(disk, crash)
    journal = _mid_publish(runs, disk)
    (disk.outside / "a.txt").write_bytes(b"outside, must survive\n")
    record = json.loads(journal.read_text(encoding="utf-8"))
    moved: list[str] = []
    forged = _moved_outside(record, str(disk.root), str(disk.outside), moved)
    assert moved, "no path of a.txt found in the journal to forge"
    # The forged journal is consistent: the side files it names exist outside too, so a
    # recovery that follows it really renames and deletes there.
    for name in moved:
        if name != "a.txt" and disk.exists(name):
            shutil.copyfile(disk.path(name), disk.outside / name)
    outside_before = {path.name: path.read_bytes() for path in disk.outside.iterdir()}
    _corrupt_journal_is_refused(disk, crash, journal, _sealed(runs, json.dumps(forged).encode()))
    outside_after = {path.name: path.read_bytes() for path in disk.outside.iterdir()}
    assert outside_after == outside_before, "recovery changed files outside the root"
    assert (disk.outside / "a.txt").read_bytes() == b"outside, must survive\n"
    runs.assert_before_or_after("after the journal was repaired")


@clause(
    "RECOV-013",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs", "journal_layout"},
    text="Recovery rolls back a transaction whose journal says 'preparing' (all-before) and "
    "completes one whose journal says 'committed' (all-after).",
    rationale="The journal's state is the commit point: rolling a committed transaction back "
    "undoes a patch the agent was told succeeded.",
)
def test_journal_state_decides(disk, crash):
    runs = Runs(disk, crash)
    total = len(runs.warm_up())
    states = set()
    for step in range(1, total + 1):
        assert runs.crashed_at(step)
        found = journals(disk)
        state = None
        if found:
            assert len(found) == 1, found
            try:
                state = json.loads(found[0].read_text(encoding="utf-8")).get("state")
            except ValueError:
                state = None  # a journal not yet complete cannot have committed
        runs.recovered()
        side = runs.assert_before_or_after(f"crash at step {step}")
        if state == "preparing":
            assert side == "before", f"step {step}: a preparing journal was rolled forward"
        elif state == "committed":
            assert side == "after", f"step {step}: a committed journal was rolled back"
        if state is not None:
            states.add(state)
    assert states == {"preparing", "committed"}, f"journal states seen: {states}"


@clause(
    "RECOV-014",
    SHOULD,
    requires={"read", "apply_patch", "recovery", "python_fs", "journal_layout"},
    text="After recovery the workspace's journal directory holds no journal and no journal "
    "temp file.",
    rationale="A journal left behind is settled again on every start, and a stale one can be "
    "mistaken for a new interruption.",
)
def test_no_journal_after_recovery(disk, crash):
    runs = Runs(disk, crash)
    total = len(runs.warm_up())
    for step in sorted({*range(1, total + 1, 3), total}):
        assert runs.crashed_at(step)
        runs.recovered()
        left = [path.name for folder in journal_dirs(disk) for path in folder.iterdir()]
        assert not left, f"crash at step {step}: the journal directory still holds {left}"
