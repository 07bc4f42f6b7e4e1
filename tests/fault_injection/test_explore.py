"""The harness, the explorer and replay: they pass a sound engine and catch broken ones."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from editspec.fault_injection import FaultyFileSystem, explore, harness, trees
from editspec.fault_injection.replay import main_replay, replay
from editspec.fault_injection.scenario import Scenario
from editspec.reference import FileSystem, Workspace


class SkipsDirSync(FaultyFileSystem):
    """Seen from the engine: its directory fsyncs never reach the port."""

    def fsync_dir(self, path: str) -> None:
        return None


class SkipsFileSync(FaultyFileSystem):
    """Seen from the engine: its file fsyncs never reach the port."""

    def fsync(self, fd: int) -> None:
        return None


def engine_skipping(layer: type[FaultyFileSystem]) -> harness.WorkspaceFactory:
    """A broken engine: the given syncs are dropped before the recorded port sees them."""

    def open_workspace(root: str, state_dir: str, fs: FileSystem) -> Workspace:
        return Workspace(root, state_dir, fs=layer(fs))

    return open_workspace


def no_recovery(root: str, state_dir: str, fs: FileSystem) -> Workspace:
    """A broken restart: the workspace opens without recovering."""
    return Workspace(root, state_dir, fs=fs, recover=False)


def sandbox(tmp_path: Path, **kwargs: object) -> harness.Sandbox:
    return harness.Sandbox(tmp_path / "sandbox", **kwargs)  # type: ignore[arg-type]


def test_single_write_baseline_is_before_and_after(tmp_path: Path) -> None:
    scenario = explore.single_write()
    base = harness.baseline(sandbox(tmp_path), scenario)
    assert base.outcome.ok
    assert base.before == scenario.initial
    assert base.after["notes.txt"].data == b"the new contents, longer than before\n"
    assert base.count > 0
    assert "rename" in base.names


def test_the_engine_survives_every_crash_of_a_single_write(tmp_path: Path) -> None:
    box = sandbox(tmp_path)
    scenario = explore.single_write()
    base = harness.baseline(box, scenario)
    for at in range(1, base.count + 1):
        verdict = harness.check_crash(box, scenario, base, at)
        assert verdict.finding is None, verdict.finding.problems if verdict.finding else ""


def test_crash_checks_catch_a_workspace_that_does_not_recover(tmp_path: Path) -> None:
    box = sandbox(tmp_path, workspace=no_recovery)
    scenario = explore.recovery_crash()
    base = harness.baseline(box, scenario)
    findings = [
        harness.check_crash(box, scenario, base, at).finding for at in range(1, base.count + 1)
    ]
    failed = [f for f in findings if f is not None]
    assert failed, "crashes mid-transaction without recovery must leave a mess"
    text = "\n".join(line for f in failed for line in f.problems)
    assert "journal left after recovery" in text
    assert ".stage" in text or ".backup" in text


@pytest.mark.parametrize("layer", [SkipsDirSync, SkipsFileSync])
def test_power_loss_catches_an_engine_that_does_not_sync(
    tmp_path: Path, layer: type[FaultyFileSystem]
) -> None:
    box = sandbox(tmp_path, workspace=engine_skipping(layer))
    scenario = explore.single_write()
    base = harness.baseline(box, scenario)
    states, _ = harness.power_states(base, "ordered")
    findings = [
        harness.check_power_state(box, scenario, base, state, "ordered").finding for state in states
    ]
    failed = [f for f in findings if f is not None]
    assert failed
    assert any("the step had finished" in f.problems[0] for f in failed)


def test_a_sound_engine_passes_the_ordered_power_loss_states_of_a_patch(tmp_path: Path) -> None:
    box = sandbox(tmp_path)
    scenario = explore.add_delete_move()
    base = harness.baseline(box, scenario)
    assert base.outcome.ok, base.outcome
    states, bounded = harness.power_states(base, "ordered")
    assert not bounded and len(states) > 10
    problems = [
        verdict.finding.problems
        for state in states
        if (verdict := harness.check_power_state(box, scenario, base, state, "ordered")).finding
    ]
    assert problems == []


def test_explore_runs_a_scenario_and_prints_a_table(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = explore.main_explore(
        ["--scenario", "single-write", "-j", "1", "--out", str(tmp_path / "failures")],
        stdout=out,
        stderr=err,
    )
    assert status == 0
    table = out.getvalue()
    base = harness.baseline(sandbox(tmp_path), explore.single_write())
    row = next(line for line in table.splitlines() if line.startswith("single-write"))
    cells = row.split()
    assert cells[1] == str(base.count)  # one crash point per counted operation
    assert cells[5] == "0"  # failed
    assert err.getvalue() == ""  # no progress bar: standard error is not a terminal
    assert not (tmp_path / "failures").exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_drawn_on_a_terminal_only(tmp_path: Path) -> None:
    terminal = _Terminal()
    status = explore.main_explore(
        ["--scenario", "single-write", "-j", "1", "--out", str(tmp_path / "failures")],
        stdout=io.StringIO(),
        stderr=terminal,
    )
    assert status == 0
    drawn = terminal.getvalue()
    assert drawn.startswith("\r[") and "tasks" in drawn and drawn.endswith("\n")


def test_shards_split_the_work_and_their_results_merge_into_the_whole(tmp_path: Path) -> None:
    def run(*extra: str) -> dict[str, Any]:
        results = tmp_path / f"results{len(list(tmp_path.iterdir()))}.json"
        status = explore.main_explore(
            ["--scenario", "single-write", "--scenario", "add-delete-move", "-j", "1",
             "--out", str(tmp_path / "failures"), "--results", str(results), *extra],
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )  # fmt: skip
        assert status == 0
        payload: dict[str, Any] = json.loads(results.read_text())
        payload["path"] = str(results)
        return payload

    whole = run()
    parts = [run("--shard", f"{k}/3") for k in (1, 2, 3)]
    fields = ("crash_points", "recovery_crashes", "power_states", "passed", "failed")
    for number, row in enumerate(whole["rows"]):
        for field in fields:
            shares = [part["rows"][number][field] for part in parts]
            assert sum(shares) == row[field], (field, shares, row)
    # Each shard did a part, none all of it.
    assert all(part["rows"][0]["passed"] + part["rows"][1]["passed"] > 0 for part in parts)
    assert all(part["rows"][1]["passed"] < whole["rows"][1]["passed"] for part in parts)
    out = io.StringIO()
    assert explore.main_explore(["--merge", *(p["path"] for p in parts)], stdout=out) == 0
    merged = {line.split()[0]: line.split()[1:6] for line in out.getvalue().splitlines()}
    full = explore.merge_rows([[explore.Row.from_json(r) for r in whole["rows"]]])
    for row in full:
        assert merged[row.scenario] == [
            str(row.crash_points), str(row.recovery_crashes), str(row.power_states),
            str(row.passed), str(row.failed),
        ]  # fmt: skip


def test_failures_are_saved_and_replay_reproduces_them(tmp_path: Path) -> None:
    box = sandbox(tmp_path, workspace=no_recovery)
    scenario = explore.recovery_crash()
    base = harness.baseline(box, scenario)
    finding = next(
        verdict.finding
        for at in range(1, base.count + 1)
        if (verdict := harness.check_crash(box, scenario, base, at)).finding is not None
    )
    saved = finding.save(tmp_path / "failure.json")
    loaded = Scenario.load(saved)
    assert loaded.to_json() == finding.to_json()
    assert json.loads(saved.read_text())["fault"]["kind"] == "crash"
    # Replayed against the real engine (which recovers), the failure does not reproduce.
    out = io.StringIO()
    assert replay(saved, out) == 0
    printed = out.getvalue()
    assert "<== injected crash" in printed
    assert "restart after crash" in printed
    assert "not reproduced" in printed


def test_replay_prints_the_first_divergence_from_the_model(tmp_path: Path) -> None:
    wrong = {"notes.txt": trees.Entry.file(b"what the model wrongly expects\n")}
    scenario = Scenario(
        name="divergent",
        initial={"notes.txt": trees.Entry.file(b"old\n", 0o644)},
        steps=(
            {"call": "read", "session": "s1", "path": "notes.txt"},
            {
                "call": "write",
                "session": "s1",
                "path": "notes.txt",
                "content": "new\n",
                "fault": {"kind": "crash", "step": 1, "at": 2},
                "expect": [wrong],
            },
        ),
    )
    path = scenario.save(tmp_path / "divergent.json")
    out = io.StringIO()
    assert main_replay([str(path)], stdout=out) == 1
    printed = out.getvalue()
    assert "FIRST DIVERGENCE at step 2" in printed
    assert "what the model wrongly expects" in printed
    assert printed.rstrip().endswith("reproduced")


def test_replay_of_a_power_loss_prints_the_cut(tmp_path: Path) -> None:
    box = sandbox(tmp_path, workspace=engine_skipping(SkipsFileSync))
    scenario = explore.single_write()
    base = harness.baseline(box, scenario)
    states, _ = harness.power_states(base, "ordered")
    finding = next(
        verdict.finding
        for state in states
        if (verdict := harness.check_power_state(box, scenario, base, state, "ordered")).finding
    )
    path = finding.save(tmp_path / "power.json")
    out = io.StringIO()
    replay(path, out)
    printed = out.getvalue()
    assert "power cut here" in printed
    assert "power cut (ordered model)" in printed


def test_replay_refuses_a_power_cut_that_names_operations_the_step_no_longer_has(
    tmp_path: Path,
) -> None:
    box = sandbox(tmp_path)
    scenario = explore.single_write()
    base = harness.baseline(box, scenario)
    states, _ = harness.power_states(base, "ordered")
    state = states[-1]
    saved = json.loads(
        harness.with_fault(scenario, harness.power_fault(state, "ordered"))
        .save(tmp_path / "cut.json")
        .read_text()
    )
    writes = [op.position for op in base.trace if op.name == "write"]
    saved["steps"][-1]["fault"]["lost"] = writes[:1]  # a data write: no entry to lose
    (tmp_path / "cut.json").write_text(json.dumps(saved))
    out = io.StringIO()
    assert replay(tmp_path / "cut.json", out) == 2
    assert "cannot replay step 1" in out.getvalue()


def test_the_in_memory_port_keeps_permission_bits_when_reading(fs: object) -> None:
    path = Path("/ws/f.txt")
    path.parent.mkdir()
    path.write_bytes(b"x")
    path.chmod(0o640)
    port = harness.InMemoryFileSystem()
    assert port.read_bytes(str(path)) == b"x"
    assert [(name, data) for name, data in port.read_files("/ws", ["f.txt"])] == [("f.txt", b"x")]
    assert path.stat().st_mode & 0o777 == 0o640
