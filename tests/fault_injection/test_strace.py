"""Crashing a foreign process: ``editspec serve`` killed by strace at every rename and fsync.

The server (the reference engine over MCP stdio) is started under ``strace`` through the
MCP adapter, killed at the N-th rename-family or fsync-family call of its worker thread
while it applies a 5-file patch, started again without strace, asked to recover, and the
workspace must then hold all five files old or all five new, with no stage, backup or
temp file left. The strace log of every run names the call it died in.
"""

from __future__ import annotations

import fcntl
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import editspec.spec
from editspec.fault_injection import strace_kill
from editspec.fault_injection.strace_kill import (
    CHMOD,
    FSYNC,
    LINK,
    RENAME,
    WRITE,
    ProcessScenario,
    ProcessTarget,
    crash_at_every_call,
    files,
    judge,
    kill_points,
    mcp_target,
    parse_strace_log,
    patch_scenario,
)

MAP = Path(editspec.spec.__file__).resolve().parent / "mcp_maps" / "editspec.toml"
SERVE = (sys.executable, "-m", "editspec.spec.cli", "serve", "{root}", "--state-dir", "{state_dir}")


def needs_strace() -> None:
    reason = strace_kill.strace_unavailable()
    if reason is not None:
        pytest.skip(f"strace cannot kill processes here: {reason}")


@pytest.mark.slow
def test_editspec_serve_is_all_or_nothing_when_killed_at_every_rename_and_fsync(
    tmp_path: Path,
) -> None:
    needs_strace()
    pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to serve over MCP")
    from editspec.contract.drivers._mcp_map import load_map

    target = mcp_target(SERVE, load_map(MAP), RENAME + FSYNC, name="editspec serve")
    scenario = patch_scenario(5)
    report = crash_at_every_call(target, scenario, base=tmp_path, jobs=2)
    print(report.format())

    counts = report.clean.counts()
    renames = sum(counts.get(name, 0) for name in RENAME)
    fsyncs = sum(counts.get(name, 0) for name in FSYNC)
    # One publishing rename per file plus the journal's two; a stage fsync per file.
    assert renames >= 5 + 2 and fsyncs >= 5, counts
    # The engine does every rename and fsync of the patch on one worker thread: each
    # kill point is one call of the clean run, and each run died inside the operation.
    assert len(report.runs) == renames + fsyncs
    for run in report.runs:
        assert run.phase == "operation", report.format()
        assert run.killed_at is not None and run.killed_at.result == "?", report.format()
    assert not [run for run in report.runs if run.problems], report.format()
    states = report.states()
    assert set(states) == {"before", "after"}, states  # kills on both sides of the commit


def test_the_log_parser_follows_threads_and_finds_the_killed_call() -> None:
    log = parse_strace_log(
        '10 renameat(3</w>, "a", 3</w>, "b") = 0\n'
        "11 fsync(4</w/x>) = 0\n"
        '10 renameat(3</w>, "b", 3</w>, "c" <unfinished ...>\n'
        "11 fsync(5</w>)   = 0\n"
        "11 +++ killed by SIGKILL +++\n"
        "10 <... renameat resumed>)           = ?\n"
        "10 +++ killed by SIGKILL +++\n"
    )
    assert log.killed and log.complete
    assert log.counts() == {"renameat": 2, "fsync": 2}
    assert log.per_thread_max() == {"renameat": 2, "fsync": 2}
    killed = log.find("renameat", 2)
    assert killed is not None and killed.tid == 10 and killed.result == "?"
    assert killed.args == '3</w>, "b", 3</w>, "c"'


def test_judge_tells_torn_mixed_mode_and_strays_apart() -> None:
    before = files({"a": "old a", "b": "old b"})
    after = files({"a": "new a", "b": "new b"})
    assert judge(before, after, before).state == "before"
    assert judge(before, after, after).state == "after"
    assert judge(before, after, files({"a": "new a", "b": "old b"})).state == "mixed"
    torn = judge(before, after, files({"a": "new", "b": "new b"}))
    assert torn.state == "torn" and torn.torn == ("a",)
    mode = judge(before, after, {**after, "a": files({"a": "new a"}, 0o600)["a"]})
    assert mode.state == "mode" and mode.mode == ("a",)
    strays = judge(before, after, {**after, "a.1f.tmp": files({"x": "new a"})["x"]})
    assert strays.state == "after" and strays.strays == ("a.1f.tmp",)
    assert not strays.atomic or strays.strays  # strays are reported beside the state


# -- a server in another language: @modelcontextprotocol/server-filesystem (npm) ---------------

PEER = "@modelcontextprotocol/server-filesystem"
PEER_VERSION = "2026.8.31"  # the version tests/peers/server_filesystem.py pins
PEER_MAP = """
[server]
name = "server-filesystem (npm)"
capabilities = ["write", "edit"]
protocol = "auto"
timeout = 60

[errors]
[[errors.rules]]
pattern = '^E[A-Z]+: '
code = "IO_ERROR"

[tools.write]
name = "write_file"
arguments = { path = "path", content = "content" }
result = "text"
text_field = "message"

[tools.edit]
name = "edit_file"
arguments = { path = "path", edits = "edits" }
edit_fields = { old_string = "oldText", new_string = "newText" }
result = "text"
text_field = "diff"
"""


def peer_entry() -> Path:
    """The server's entry script, installed with npm into the user's cache (or skip)."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH: cannot install and run {PEER}")
    explicit = os.environ.get("EDITSPEC_PEER_CACHE")
    cache = (
        Path(explicit)
        if explicit
        else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "editspec" / "peers"
    )
    prefix = cache / f"server-filesystem-{PEER_VERSION}"
    entry = prefix / "node_modules" / PEER / "dist" / "index.js"
    prefix.mkdir(parents=True, exist_ok=True)
    # One install at a time (pytest-xdist workers share the cache).
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not entry.is_file():
            command = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                       "--loglevel=error", f"{PEER}@{PEER_VERSION}"]  # fmt: skip
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                pytest.skip(f"npm install {PEER}@{PEER_VERSION} did not finish in 300 s")
            if done.returncode != 0 or not entry.is_file():
                pytest.skip(f"npm could not install {PEER}@{PEER_VERSION}: {done.stderr[-500:]}")
    return entry


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> ProcessTarget:
    needs_strace()
    pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to speak MCP")
    from editspec.contract.drivers._mcp_map import load_map

    entry = peer_entry()
    map_file = tmp_path_factory.mktemp("map") / "server-filesystem.toml"
    map_file.write_text(PEER_MAP)
    return ProcessTarget(
        name=f"{PEER}@{PEER_VERSION}",
        command=("node", str(entry), "{root}"),
        server_map=load_map(map_file),
        # Node publishes with write + rename, then restores the mode with chmod; the
        # writes include libuv's wake-ups (eventfd), so kills land all over the call.
        # Its thread pool makes such calls while starting too: strace attaches after
        # the server is up, so the counts start at the operation.
        syscalls=WRITE + RENAME + CHMOD,
        attach=True,
    )


def _peer_report(peer: ProcessTarget, scenario: ProcessScenario, tmp_path: Path) -> Any:
    report = crash_at_every_call(peer, scenario, base=tmp_path, jobs=2)
    print(report.format())
    assert report.during(), f"no kill landed inside the operation:\n{report.format()}"
    return report


@pytest.mark.slow
def test_server_filesystem_write_file_over_an_existing_file(
    peer: ProcessTarget, tmp_path: Path
) -> None:
    """Old or new bytes, never torn (temp file + rename); a kill may leave the temp file,
    and a kill between the rename and the chmod leaves the new file with the temp
    file's mode."""
    old, new = "old line\n" * 200, "new line\n" * 300
    scenario = ProcessScenario(
        name="write_file over an existing 0600 file",
        initial=files({"notes.txt": old}, 0o600),
        operation=lambda d: d.open_session("s").write("notes.txt", new),
    )
    report = _peer_report(peer, scenario, tmp_path)
    states = report.states()
    assert "torn" not in states and "mixed" not in states, report.format()
    # What a kill leaves, as this version does it (update when the server changes):
    strays = [run for run in report.during() if run.judgement.strays]
    assert strays, "a kill between the temp file's creation and the rename leaves it behind"
    assert all(s.endswith(".tmp") for run in strays for s in run.judgement.strays)
    assert states.get("mode"), "a kill between rename and chmod loses the file's mode 0600"


@pytest.mark.slow
def test_server_filesystem_write_file_creating_a_file_tears_it(
    peer: ProcessTarget, tmp_path: Path
) -> None:
    """A new file is written in place (``O_CREAT|O_EXCL``, then writes of 512 KiB): a
    kill in between leaves an empty or a partial file that is neither absent nor new."""
    content = "".join(f"line {n:07d}\n" for n in range(50_000))  # 650 000 bytes
    scenario = ProcessScenario(
        name="write_file creating a 650 kB file",
        initial=files({"keep.txt": "kept\n"}),
        operation=lambda d: d.open_session("s").write("fresh.txt", content),
    )
    report = _peer_report(peer, scenario, tmp_path)
    torn = [run for run in report.during() if run.judgement.state == "torn"]
    assert torn, f"expected this version to tear a new file:\n{report.format()}"
    for run in torn:
        assert run.judgement.torn == ("fresh.txt",), run.judgement.lines


def test_server_filesystem_edit_file(peer: ProcessTarget, tmp_path: Path) -> None:
    """edit_file publishes as write_file replaces: old or new bytes, never torn; the
    same temp files and the same lost mode after a kill."""
    scenario = ProcessScenario(
        name="edit_file of a 0600 file",
        initial=files({"code.py": "a = 1\nb = 2\nc = 3\n"}, 0o600),
        operation=lambda d: d.open_session("s").edit(
            "code.py", [{"old_string": "b = 2", "new_string": "b = 20"}]
        ),
    )
    report = _peer_report(peer, scenario, tmp_path)
    states = report.states()
    assert "torn" not in states and "mixed" not in states, report.format()
    assert states.get("before") and states.get("mode"), report.format()
    assert any(run.judgement.strays for run in report.during()), report.format()


def test_kill_points_keep_file_calls_and_spread_a_sample() -> None:
    log = parse_strace_log(
        '10 write(1<pipe:[7]>, "{}", 2) = 2\n'
        + "".join(f"11 fsync({n}</w/ws/f{n}>) = 0\n" for n in range(1, 10))
        + '11 write(3</w/ws/a>, "x", 1) = 1\n'
        '11 renameat(3</w/ws>, "t1", 3</w/ws>, "a") = 0\n'
        '11 renameat(3</w/ws>, "t2", 3</w/ws>, "b") = 0\n'
    )
    points = kill_points(log, RENAME + FSYNC + WRITE, at_most={FSYNC: 3}, under="/w/ws")
    assert points == [("fsync", 1), ("fsync", 5), ("fsync", 9), ("write", 1),
                      ("renameat", 1), ("renameat", 2)]  # fmt: skip
    # The pipe write is the first write of its thread: without ``under`` it is a point.
    assert ("write", 1) in kill_points(log, WRITE)
    assert kill_points(log, WRITE, under="/elsewhere") == []


# -- editspec explore --mcp: the standard scenarios against a server ---------------------------


def _explore_server(command: tuple[str, ...], tmp_path: Path, *names: str) -> tuple[int, str]:
    import io
    import shlex

    from editspec.fault_injection.explore import main_explore

    out, err = io.StringIO(), io.StringIO()
    scenarios = [word for name in names for word in ("--scenario", name)]
    status = main_explore(
        [
            *("--mcp", shlex.join(command), "--mcp-map", str(MAP), *scenarios),
            *("-j", "2", "--out", str(tmp_path / "failures"), "--no-power"),
        ],
        stdout=out,
        stderr=err,
    )
    return status, out.getvalue() + err.getvalue()


@pytest.mark.slow
def test_explore_kills_editspec_serve_at_every_file_call_of_a_scenario(tmp_path: Path) -> None:
    needs_strace()
    pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to serve over MCP")
    status, printed = _explore_server(SERVE, tmp_path, "single-write")
    assert status == 0, printed
    cells = next(line for line in printed.splitlines() if line.startswith("single-write")).split()
    # the temp file's write and fsync, the rename, the directory's fsync: each a kill
    assert int(cells[1]) >= 4 and cells[5] == "0", printed
    assert cells[2] == cells[3] == "-"  # no recovery crash; power cuts are not asked for
    assert not (tmp_path / "failures").exists()


@pytest.mark.slow
def test_explore_catches_a_server_that_writes_in_place(tmp_path: Path) -> None:
    needs_strace()
    pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to serve over MCP")
    script = Path(__file__).with_name("mutant_serve.py")
    command = (
        sys.executable,
        str(script),
        "non_atomic_write",
        "{root}",
        "--state-dir",
        "{state_dir}",
    )
    status, printed = _explore_server(command, tmp_path, "single-write")
    assert status == 1, printed
    report = (tmp_path / "failures" / "single-write-kills.txt").read_text()
    assert "torn" in report, report  # a kill after the truncation leaves neither version
    # Each failing kill is also a scenario naming the server, which replay kills again.
    findings = sorted((tmp_path / "failures").glob("single-write-kill-*.json"))
    assert findings, report
    from editspec.fault_injection.replay import replay
    from editspec.fault_injection.scenario import Scenario

    scenario = Scenario.load(findings[0])
    assert scenario.server is not None and scenario.steps[-1]["fault"]["kind"] == "kill"
    printed = io.StringIO()
    status = replay(findings[0], printed)
    assert status == 1, printed.getvalue()  # the same kill tears the file again
    assert "<== killed here" in printed.getvalue() and "torn" in printed.getvalue()


@pytest.mark.slow
def test_a_write_after_a_read_is_crashed_in_any_server_and_tells_apart_a_careless_one(
    tmp_path: Path,
) -> None:
    """``plain-write`` (a read, then a write with no expected_sha256: what a tool without
    compare-and-swap can be asked) passes on editspec serve and fails on a server that
    writes in place, a kill tearing the file."""
    needs_strace()
    pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to serve over MCP")
    status, printed = _explore_server(SERVE, tmp_path / "serve", "plain-write")
    assert status == 0, printed
    cells = next(line for line in printed.splitlines() if line.startswith("plain-write")).split()
    assert int(cells[1]) >= 4 and cells[5] == "0", printed  # only the write's calls are killed
    script = Path(__file__).with_name("mutant_serve.py")
    careless = (sys.executable, str(script), "non_atomic_write", "{root}",
                "--state-dir", "{state_dir}")  # fmt: skip
    status, printed = _explore_server(careless, tmp_path / "careless", "plain-write")
    assert status == 1, printed
    report = (tmp_path / "careless" / "failures" / "plain-write-kills.txt").read_text()
    assert "torn" in report, report


@pytest.mark.slow
def test_kills_are_judged_against_the_tree_the_preparation_left(tmp_path: Path) -> None:
    """A step that follows writes of its own: a kill leaves those writes, which are the
    "before" of the step, not a change it made."""
    needs_strace()
    pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to serve over MCP")
    from editspec.contract.drivers._mcp_map import load_map

    def prepare(driver: Any) -> None:
        driver.open_session("s").write("made.txt", "written while preparing\n")

    def operation(driver: Any) -> None:
        driver.open_session("s").write("step.txt", "written by the step\n")

    scenario = ProcessScenario(
        name="a write after a write",
        initial=files({"kept.txt": "kept\n"}),
        prepare=prepare,
        operation=operation,
    )
    # The step's temp file is written, synced, then linked into place: kills at those
    # calls leave the tree the preparation left, which is no change of the step.
    target = mcp_target(SERVE, load_map(MAP), WRITE + FSYNC + LINK, attach=True)
    report = crash_at_every_call(
        target, scenario, base=tmp_path, jobs=2, files_only=True, retries=3
    )
    assert report.before["made.txt"].data == b"written while preparing\n"
    assert report.states().get("before"), report.format()  # else this shows nothing
    assert not [run for run in report.runs if run.problems], report.format()


def test_a_kill_that_landed_on_another_threads_call_is_tried_again() -> None:
    from editspec.fault_injection.strace_kill import KillRun, TracedCall, until_landed

    box = Path("/sandbox/write-3")

    def run(args: str | None) -> KillRun:
        site = None if args is None else TracedCall(7, "write", 3, args, "?")
        return KillRun("write", 3, "operation", site, None)

    landed = [run("1<pipe:[9]>, ..."), run(None), run(f"9<{box}/ws/f.txt>, ..."), run(None)]
    tried = iter(landed)
    assert until_landed(lambda: next(tried), box, retries=4) is landed[2]  # stops once it hit
    tried = iter(landed)
    assert until_landed(lambda: next(tried), box, retries=1) is landed[1]  # gives up
    tried = iter(landed)
    assert until_landed(lambda: next(tried), box, retries=0) is landed[0]


def test_the_table_counts_only_kills_during_the_step_and_strays_only_beside_a_patch() -> None:
    from editspec.fault_injection.explore_process import tally
    from editspec.fault_injection.strace_kill import Judgement, KillRun, TracedCall

    site = TracedCall(7, "rename", 1, "3</box/ws>, ...", "?")

    def run(phase: str, judgement: Judgement | None, at: TracedCall | None = site) -> KillRun:
        return KillRun("rename", 1, phase, at, judgement)

    runs = [
        run("operation", Judgement("before")),
        run("operation", Judgement("after", strays=(".a.tmp",))),
        run("operation", Judgement("torn", torn=("a",), lines=("a: torn",))),
        run("prepare", Judgement("before")),  # died before the step
        run("none", Judgement("after"), None),  # never killed
    ]
    row, elsewhere = tally("single-write", runs, 1.0)
    assert (row.crash_points, row.passed, row.failed, row.notes, elsewhere) == (3, 2, 1, 1, 2)
    row, _ = tally("update-10-files", runs, 1.0)  # a stage file left beside a patch fails
    assert (row.passed, row.failed, row.notes) == (1, 2, 0)
