"""Power loss for server processes: ``editspec serve`` and a careless variant of it.

The last step of a scenario is traced by strace (``strace_record``), every state a power
cut can leave is written to disk, the server is started on it and asked to recover, and
the root must be all-before or all-after (all-after once the server had answered). The
sound server survives every state; the ``no_fsync`` mutant of the zoo (it renames its
temp file over the target without an fsync of either) survives every kill -- the page
cache keeps its bytes -- and loses them at the first power cut after it answered.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

import editspec.spec
from editspec.fault_injection import explore, process_power, strace_kill
from editspec.fault_injection.replay import replay
from editspec.fault_injection.scenario import Scenario

MAP = Path(editspec.spec.__file__).resolve().parent / "mcp_maps" / "editspec.toml"
SERVE = (sys.executable, "-m", "editspec.spec.cli", "serve", "{root}", "--state-dir", "{state_dir}")
CARELESS = (
    sys.executable,
    str(Path(__file__).with_name("mutant_serve.py")),
    "no_fsync",
    "{root}",
    "--state-dir",
    "{state_dir}",
)


@pytest.fixture(autouse=True)
def needs_strace_and_mcp() -> None:
    reason = strace_kill.strace_unavailable()
    if reason is not None:
        pytest.skip(f"strace cannot trace processes here: {reason}")
    pytest.importorskip("mcp", reason="the MCP SDK (extra 'mcp') is needed to serve over MCP")


def _server(command: tuple[str, ...]) -> process_power.Server:
    from editspec.contract.drivers._mcp_map import load_map

    return process_power.Server(command, load_map(MAP))


@pytest.mark.slow
def test_explore_mcp_checks_every_power_cut_of_editspec_serve(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = explore.main_explore(
        [
            *("--mcp", shlex.join(SERVE), "--mcp-map", str(MAP), "--scenario", "single-write"),
            *("--no-kills", "--out", str(tmp_path / "failures")),
            *("--results", str(tmp_path / "results.json")),
        ],
        stdout=out,
        stderr=err,
    )
    printed = out.getvalue() + err.getvalue()
    assert status == 0, printed
    cells = next(line for line in printed.splitlines() if line.startswith("single-write")).split()
    # scenario, kills, recovery crashes, power-loss states, passed, failed, ...
    assert cells[2] == "-" and int(cells[3]) >= 5 and cells[5] == "0", printed
    assert int(cells[4]) == int(cells[3])
    assert not (tmp_path / "failures").exists()
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert rows[0]["power"] and rows[0]["power_states"] == int(cells[3])
    assert err.getvalue() == ""  # no progress bar: standard error is no terminal


def test_a_server_that_renames_without_fsync_is_caught_and_its_finding_replays(
    tmp_path: Path,
) -> None:
    careless = _server(CARELESS)
    scenario = explore.STANDARD["single-write"].build()
    clean = process_power.process_baseline(careless, scenario, str(tmp_path / "run"))
    assert clean.outcome.ok and not clean.recording.unmodeled
    names = [op.name for op in clean.recording.ops]
    assert "rename" in names and "fsync" not in names and "fsync_dir" not in names
    states, _ = process_power.process_states(clean)
    report = process_power.check_process_power_loss(careless, clean, states, stop_after=1)
    assert report.failures, "the careless server survived every power cut"
    failure = report.failures[0]
    # The server had answered: only the new bytes are acceptable, and a cut took them.
    assert failure.state.point >= clean.returned_at
    assert failure.acceptable == (clean.after,)
    assert failure.actual["notes.txt"] != clean.after["notes.txt"]

    finding = process_power.power_finding(careless, scenario, clean, failure, "ordered")
    path = finding.save(tmp_path / "finding.json")
    saved = json.loads(path.read_text())
    assert saved["server"]["command"][0] == "{python}"  # no machine path in a finding
    assert sys.executable not in path.read_text()

    printed = io.StringIO()
    assert replay(path, printed) == 1, printed.getvalue()
    text = printed.getvalue()
    assert "reproduced" in text and "FIRST DIVERGENCE" in text
    assert "power cut here" in text
    assert "<== lost" in text or "<== the file it made" in text
    assert "renameat(" in text or "rename(" in text

    # The sound server, on the same finding: its trace has the fsyncs the careless one
    # lacks, so the saved cut either cannot be rebuilt (2) or leaves the new bytes (0).
    healed = Scenario.load(path)
    healed_json = healed.to_json()
    healed_json["server"]["command"] = ["{python}", *SERVE[1:]]
    healed_path = tmp_path / "healed.json"
    healed_path.write_text(json.dumps(healed_json))
    printed = io.StringIO()
    assert replay(healed_path, printed) in (0, 2), printed.getvalue()
    assert "reproduced\n" not in printed.getvalue().replace("not reproduced", "")


@pytest.mark.slow
def test_write_027_judges_a_server_process(tmp_path: Path) -> None:
    """The power-cut clauses run for a ``process`` driver: the careless server fails
    WRITE-027 (its answered write is lost), which the reference passes. (TXN-011 takes
    the same path, ``spec._power``, for a patch; it is left to the conformance runs.)"""
    import subprocess

    spec_dir = Path(editspec.spec.__file__).resolve().parent
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "no:randomly", "-q", "-p", "no:cacheprovider"),
            str(spec_dir / "test_write.py"),
            *("-k", "power_cut_during_replace", f"--editspec-mcp={shlex.join(CARELESS)}"),
            f"--editspec-mcp-map={MAP}",
            f"--basetemp={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    printed = done.stdout + done.stderr
    assert done.returncode == 1, printed
    assert re.search(r"WRITE-027 +MUST +FAIL unsafe", printed), printed
    assert "1 failed" in printed, printed
    assert "answered after" in printed  # the cut came after the server's answer


PROCESS_FINDINGS = sorted((Path(__file__).parent / "findings" / "processes").glob("*.json"))


@pytest.mark.parametrize("path", PROCESS_FINDINGS, ids=lambda p: p.stem)
def test_saved_process_findings_load_unchanged_and_name_no_machine_path(path: Path) -> None:
    raw = json.loads(path.read_text())
    scenario = Scenario.load(path)
    assert scenario.to_json() == raw
    assert scenario.server is not None and scenario.steps[-1]["fault"]["kind"] == "power_loss"
    text = path.read_text()
    assert "/tmp/" not in text and "/root/" not in text and "/home/" not in text
    words = process_power.Server.from_json(
        scenario.server, near=str(Path(__file__).resolve().parents[2])
    ).command
    assert all("~" not in word and word != "{python}" for word in words)
