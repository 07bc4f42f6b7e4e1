"""Crashing the server process: killed by SIGKILL at a rename, an fsync or a write.

DESIGN §5 (a crash is a kill at any system call). These clauses need the ``process``
capability (the MCP adapter's drivers: a server started from a command line) and
``strace`` with ptrace and signal injection; where strace cannot kill here, they are
SKIPPED with the reason. The server is started under ``strace -f -e
inject=CALL:signal=KILL:when=N`` (``editspec.fault_injection.strace_kill``), killed at
the N-th call of one thread, started again without strace, asked to ``recover`` when its
map has the tool, and the root is then compared with the trees before and after.

Kill points are sampled to keep each clause short: every rename, and at most a handful
of fsyncs and writes, spread from the first to the last. strace counts ``when=N`` per
thread, so in a server with several threads a kill point taken from the clean run may
land on another thread's call (a write to the MCP pipe, say) in the killed run: still a
crash point, and the report of a failure names the call each run died in.

When no kill landed inside the operation (the operation made none of the traced calls,
or every kill hit another thread's call first), the harness could not test the clause:
it is INCONCLUSIVE, neither PASS nor FAIL (DESIGN §7).

The clauses here are the process counterparts of the ``python_fs`` crash clauses:
a replace (WRITE-026, of WRITE-021), a create (WRITE-040, of WRITE-022), an edit
(EDIT-050), a patch (TXN-010, of TXN-001), a rewind (SNAP-040, of SNAP-016) and the
recovery of a server started again over an interrupted patch (RECOV-040, of RECOV-004).
"""

from __future__ import annotations

from typing import Any

import pytest

from editspec.spec import MUST, clause, inconclusive

_FSYNCS = 5
_WRITES = 5


def _target(driver_factory: Any, syscalls: tuple[str, ...], *, attach: bool = False) -> Any:
    """The server of the driver under test as a strace target, or skip why it cannot be."""
    from editspec.fault_injection import strace_kill

    reason = strace_kill.strace_unavailable()
    if reason is not None:
        pytest.skip(f"strace cannot kill the server here: {reason}")
    command = getattr(driver_factory, "command", None)
    server_map = getattr(driver_factory, "map", None)
    if command is None or server_map is None:
        pytest.skip(
            "the driver declares process but is not an MCP server started from a command "
            "line: strace needs the command to start it under"
        )
    return strace_kill.mcp_target(command, server_map, syscalls, attach=attach)


def _verdict(report: Any, *, strays: bool) -> None:
    """Every kill left the root all-before or all-after (and, unless ``strays``, with no
    side file); when no kill landed inside the operation the harness could not test, and
    the clause is INCONCLUSIVE (DESIGN §7), neither PASS nor FAIL."""
    table = report.format()
    bad = [
        run
        for run in report.runs
        if run.problems or (run.judgement is not None and run.judgement.strays and not strays)
    ]
    if bad:
        # What the disk held, first: a long table of kill sites may be cut short in a report.
        kinds: dict[str, int] = {}
        for run in bad:
            judgement = run.judgement
            if run.restart_error or judgement is None:
                kind = "restart failed"
            else:
                kind = "strays" if judgement.atomic else judgement.state
            kinds[kind] = kinds.get(kind, 0) + 1
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        raise AssertionError(
            f"{len(bad)} of {len(report.runs)} kills broke the files ({summary}):\n{table}"
        )
    if not report.during():
        inconclusive(f"no kill landed inside the operation:\n{table}")


@clause(
    "TXN-010",
    MUST,
    requires={"process", "read", "apply_patch"},
    text="A server killed (SIGKILL) at any rename or fsync of a patch over three files, "
    "then started again (and asked to recover when it can), leaves the three files all "
    "as before or all as after, and no stage, backup or temp file under the root.",
    rationale="A real crash kills the process between two system calls, not inside the "
    "engine's own fault hooks; only the disk says whether the patch was atomic.",
)
def test_patch_survives_a_killed_server(driver_factory, editspec_base):
    from editspec.fault_injection.strace_kill import (
        FSYNC,
        RENAME,
        crash_at_every_call,
        patch_scenario,
    )

    target = _target(driver_factory, RENAME + FSYNC)
    report = crash_at_every_call(
        target,
        patch_scenario(3),
        base=editspec_base / "kills",
        at_most={FSYNC: _FSYNCS},
        files_only=True,
    )
    _verdict(report, strays=False)


@clause(
    "WRITE-026",
    MUST,
    requires={"process", "read", "write"},
    text="A server killed (SIGKILL) at any rename, fsync or write of a file's bytes while "
    "it replaces an existing file, then started again (and asked to recover when it "
    "can), leaves the file with its old bytes or its new bytes, never a mix or a "
    "truncated file.",
    rationale="Writing in place tears a file on a crash; a temp file, fsync and rename "
    "does not. A kill between two system calls tells them apart.",
)
def test_replace_survives_a_killed_server(driver_factory, editspec_base):
    from editspec.fault_injection.strace_kill import (
        FSYNC,
        RENAME,
        WRITE,
        crash_at_every_call,
        replace_scenario,
    )

    target = _target(driver_factory, RENAME + FSYNC + WRITE)
    old = "".join(f"old line {n:04d}\n" for n in range(300))
    new = "".join(f"the new line {n:04d}\n" for n in range(500))
    report = crash_at_every_call(
        target,
        replace_scenario("notes.txt", old, new),
        base=editspec_base / "kills",
        at_most={FSYNC: _FSYNCS, WRITE: _WRITES},
        files_only=True,
    )
    # DESIGN asks recovery to clean up after transactions only: the temp file of a
    # single write killed before its rename may stay (it is never the file itself).
    _verdict(report, strays=True)


def _lines(label: str, count: int) -> str:
    return "".join(f"{label} line {n:04d}\n" for n in range(count))


@clause(
    "WRITE-040",
    MUST,
    requires={"process", "write"},
    text="A server killed (SIGKILL) at any write, fsync, link or rename of a file's bytes "
    "while it creates a new file, then started again (and asked to recover when it can), "
    "leaves either no file or the complete new file at that path, and the other files "
    "as they were.",
    rationale="A file created in place and killed half-written is a truncated file under "
    "the right name; the next run reads it as complete. A temp file published whole by "
    "a link or rename is there entirely or not at all.",
)
def test_create_survives_a_killed_server(driver_factory, editspec_base):
    from editspec.fault_injection.strace_kill import (
        FSYNC,
        LINK,
        RENAME,
        WRITE,
        ProcessScenario,
        crash_at_every_call,
        files,
    )

    new = _lines("created", 400)

    def operation(driver: Any) -> None:
        driver.open_session("s1").write("made.txt", new)

    scenario = ProcessScenario(
        name=f"create made.txt ({len(new)} bytes)",
        initial=files({"kept.txt": "kept\n"}),
        operation=operation,
    )
    target = _target(driver_factory, RENAME + FSYNC + WRITE + LINK)
    report = crash_at_every_call(
        target,
        scenario,
        base=editspec_base / "kills",
        at_most={FSYNC: 2, WRITE: 3},
        files_only=True,
    )
    # As WRITE-026: the temp file of a single write killed before its publication may
    # stay (it is never the file itself).
    _verdict(report, strays=True)


@clause(
    "EDIT-050",
    MUST,
    requires={"process", "edit"},
    text="A server killed (SIGKILL) at any write, fsync or rename of a file's bytes while "
    "it applies an edit to an existing file, then started again (and asked to recover "
    "when it can), leaves the file with its old bytes or its edited bytes, never a mix "
    "or a truncated file.",
    rationale="An edit is a replace of the whole file: written in place it tears on a "
    "crash exactly as a write does, and the agent's next Read shows neither version.",
)
def test_edit_survives_a_killed_server(driver_factory, editspec_base):
    from editspec.fault_injection.strace_kill import (
        FSYNC,
        RENAME,
        WRITE,
        ProcessScenario,
        crash_at_every_call,
        files,
    )
    from editspec.reference import EditSpec

    old = _lines("old", 200) + "MARKER\n" + _lines("tail", 200)

    def prepare(driver: Any) -> None:
        session = driver.open_session("s1")
        if {"read_before_write", "stale_detection"} & set(driver.capabilities):
            session.read("notes.txt")  # what this driver needs before a change

    def operation(driver: Any) -> None:
        driver.open_session("s1").edit("notes.txt", [EditSpec("MARKER\n", _lines("new", 300))])

    scenario = ProcessScenario(
        name=f"edit of notes.txt ({len(old)} bytes)",
        initial=files({"notes.txt": old}),
        prepare=prepare,
        operation=operation,
    )
    target = _target(driver_factory, RENAME + FSYNC + WRITE)
    report = crash_at_every_call(
        target,
        scenario,
        base=editspec_base / "kills",
        at_most={FSYNC: 2, WRITE: 3},
        files_only=True,
    )
    _verdict(report, strays=True)


@clause(
    "SNAP-040",
    MUST,
    requires={"process", "read", "apply_patch", "snapshots"},
    text="A server killed (SIGKILL) at any rename or fsync of a rewind that restores "
    "three files, then started again (and asked to recover when it can), leaves the three "
    "files all as before the rewind or all rewound, and no stage, backup or temp file "
    "under the root.",
    rationale="A rewind is a multi-file change like the patch it undoes; restored file by "
    "file and killed halfway, it leaves a tree that is neither the agent's nor the "
    "user's.",
)
def test_rewind_survives_a_killed_server(driver_factory, editspec_base):
    from editspec.fault_injection.strace_kill import (
        FSYNC,
        RENAME,
        WRITE,
        ProcessScenario,
        crash_at_every_call,
        files,
    )

    names = ("mod0.py", "pkg/mod1.py", "mod2.py")
    initial = {name: f"# {name}\nVALUE = {n}\n" for n, name in enumerate(names)}
    patch = (
        "*** Begin Patch\n"
        + "".join(
            f"*** Update File: {name}\n@@\n # {name}\n-VALUE = {n}\n+VALUE = {n + 100}\n"
            for n, name in enumerate(names)
        )
        + "*** End Patch\n"
    )

    def prepare(driver: Any) -> None:
        session = driver.open_session("s1")
        for name in names:
            session.read(name)
        session.apply_patch(patch, message_id="m1")

    def operation(driver: Any) -> None:
        driver.open_session("s1").rewind("m1")

    scenario = ProcessScenario(
        name="rewind of a 3-file patch",
        initial=files(initial),
        prepare=prepare,
        operation=operation,
    )
    # Attached after the patch is in place, so every kill point is one of the rewind.
    target = _target(driver_factory, RENAME + FSYNC + WRITE, attach=True)
    report = crash_at_every_call(
        target,
        scenario,
        base=editspec_base / "kills",
        at_most={RENAME: 4, FSYNC: 2, WRITE: 2},
        files_only=True,
        retries=2,
    )
    _verdict(report, strays=False)


@clause(
    "RECOV-040",
    MUST,
    requires={"process", "read", "apply_patch", "recovery"},
    text="A server killed (SIGKILL) at any rename or fsync of a patch over three files, then "
    "started again, has recovered the interrupted patch by the time it answers, before "
    "any explicit recover(): the three files are all as before or all as after, and no "
    "stage, backup or temp file is under the root.",
    rationale="An agent host restarted after a crash goes straight back to work; a server "
    "that leaves the tree half-patched until someone calls recover() serves it as real.",
)
def test_a_killed_server_recovers_on_start(driver_factory, editspec_base):
    import attrs

    from editspec.fault_injection.strace_kill import (
        FSYNC,
        RENAME,
        crash_at_every_call,
        patch_scenario,
    )

    target = _target(driver_factory, RENAME + FSYNC)
    # Without a recover tool in the map, the restarted server is only started: the tree
    # is read once it answers, and no recover() is called.
    tools = {name: tool for name, tool in target.server_map.tools.items() if name != "recover"}
    target = attrs.evolve(target, server_map=attrs.evolve(target.server_map, tools=tools))
    report = crash_at_every_call(
        target,
        patch_scenario(3),
        base=editspec_base / "kills",
        at_most={RENAME: 3, FSYNC: 2},
        files_only=True,
    )
    _verdict(report, strays=False)
