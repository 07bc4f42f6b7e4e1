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
"""

from __future__ import annotations

from typing import Any

import pytest

from editspec.spec import MUST, clause

_FSYNCS = 5
_WRITES = 5


def _target(driver_factory: Any, syscalls: tuple[str, ...]) -> Any:
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
    return strace_kill.mcp_target(command, server_map, syscalls)


def _verdict(report: Any, *, strays: bool) -> None:
    """Every kill left the root all-before or all-after (and, unless ``strays``, with no
    side file); some kill landed inside the operation."""
    table = report.format()
    assert report.during(), f"no kill landed inside the operation:\n{table}"
    bad = [run for run in report.runs if run.problems or (run.judgement.strays and not strays)]
    assert not bad, f"{len(bad)} of {len(report.runs)} kills broke the files:\n{table}"


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
