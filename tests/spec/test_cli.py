"""``editspec check`` end to end: outcomes, reports, expectations and exit codes.

The implementation under test is ``toy_driver`` (beside this file): a careless driver whose
failures are known, so every outcome of the report can be produced on purpose.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from editspec.contract.drivers import DriverLoadError, DriverSpec, factory_for, load_factory
from editspec.spec import catalog, cli

HERE = Path(__file__).resolve().parent


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *(p for p in sys.path if p)])
    return subprocess.run(
        [sys.executable, "-m", "editspec.spec.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def outcomes(report_path: Path) -> dict[str, str]:
    report = json.loads(report_path.read_text())
    return {record["id"]: record["outcome"] for record in report["clauses"]}


def test_every_outcome_and_the_report(tmp_path):
    expectations = tmp_path / "toy.toml"
    expectations.write_text(
        '[PATH-006]\nreason = "no confinement yet"\n\n[READ-002]\nreason = "thought broken"\n'
    )
    result = run_cli(
        "check",
        "--driver",
        "toy_driver:factory",
        "-k",
        "READ-001 or READ-002 or PATH-006 or READ-020 or EDIT-001",
        "--expectations",
        str(expectations),
        "--report",
        "out.json",
        "--report",
        "out.md",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert outcomes(tmp_path / "out.json") == {
        "READ-001": "PASS",
        "READ-002": "XPASS",
        "PATH-006": "XFAIL",
        "READ-020": "FAIL",
        "EDIT-001": "UNSUPPORTED",
    }
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["contract_version"] == "1.4"
    assert report["catalog_sha256"] == catalog.catalog_hash()
    assert report["implementation"]["name"] == "naive-toy"
    assert "python_fs" in report["implementation"]["capabilities"]
    assert report["environment"]["python"]
    assert report["summary"]["must_failures"] == 2  # READ-002 XPASS, READ-020 FAIL
    records = {r["id"]: r for r in report["clauses"]}
    # A refusal without an error code is the tool's failure (wrong-code), not the suite's.
    assert records["READ-020"]["kind"] == "wrong-code"
    assert records["READ-020"]["message"].startswith("expected IS_A_DIRECTORY")
    assert "IsADirectoryError" in records["READ-020"]["message"]
    assert records["READ-020"]["traceback"]  # the JSON report keeps the traceback
    assert records["EDIT-001"]["message"].startswith("UNSUPPORTED: the driver does not declare")
    assert records["PATH-006"]["level"] == "MUST" and records["PATH-006"]["area"] == "PATH"
    markdown = (tmp_path / "out.md").read_text()
    assert "| PATH-006 | MUST | XFAIL |" in markdown
    assert "# Conformance report: naive-toy" in markdown
    assert "editspec conformance: naive-toy" in result.stdout


def test_failures_become_expectations(tmp_path):
    first = run_cli(
        "check", "--driver", "toy_driver:factory", "-k", "PATH-006 or READ-027",
        "--report", "first.json", cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode == 1, first.stdout + first.stderr
    assert outcomes(tmp_path / "first.json") == {"PATH-006": "FAIL", "READ-027": "FAIL"}
    update = run_cli("expectations", "update", "first.json", "-o", "toy.toml", cwd=tmp_path)
    assert update.returncode == 0, update.stderr
    text = (tmp_path / "toy.toml").read_text()
    assert "[PATH-006]" in text and "[READ-027]" in text
    second = run_cli(
        "check", "--driver", "toy_driver:factory", "-k", "PATH-006 or READ-027",
        "--expectations", "toy.toml", "--report", "second.json", cwd=tmp_path,
    )  # fmt: skip
    assert second.returncode == 0, second.stdout + second.stderr
    assert outcomes(tmp_path / "second.json") == {"PATH-006": "XFAIL", "READ-027": "XFAIL"}


def test_a_failing_should_clause_does_not_fail_the_run(tmp_path):
    result = run_cli(
        "check", "--driver", "toy_driver:factory", "-k", "READ-027 or READ-001",
        "--report", "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcomes(tmp_path / "out.json") == {"READ-001": "PASS", "READ-027": "FAIL"}


def test_a_teardown_crash_is_an_error(tmp_path):
    result = run_cli(
        "check", "--driver", "toy_driver:broken_close_factory", "-k", "READ-001",
        "--report", "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    report = json.loads((tmp_path / "out.json").read_text())
    (record,) = report["clauses"]
    assert record["outcome"] == "ERROR"
    assert "close exploded" in record["message"]


def test_parallel_run_reports_like_a_serial_one(tmp_path):
    selection = "READ-00 or PATH-00 or EDIT-001"
    serial = run_cli(
        "check", "--driver", "toy_driver:factory", "-k", selection, "--report", "serial.json",
        cwd=tmp_path,
    )  # fmt: skip
    parallel = run_cli(
        "check", "--driver", "toy_driver:factory", "-k", selection, "-n", "2",
        "--report", "parallel.json", cwd=tmp_path,
    )  # fmt: skip
    assert serial.returncode == parallel.returncode == 1
    assert outcomes(tmp_path / "serial.json") == outcomes(tmp_path / "parallel.json")
    assert len(outcomes(tmp_path / "serial.json")) >= 15


def test_the_reference_passes_its_musts_in_a_sample(tmp_path):
    result = run_cli("check", "-k", "READ-00 or EDIT-00", "--report", "ref.json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:]
    assert set(outcomes(tmp_path / "ref.json").values()) == {"PASS"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--driver", "no_such_module_anywhere:factory"], "cannot import driver module"),
        (["--expectations", "bad.toml"], "not valid TOML"),
    ],
)
def test_usage_errors_of_the_run_exit_2(tmp_path, args, message):
    (tmp_path / "bad.toml").write_text("[READ-001\nreason = 'x'\n")
    result = run_cli("check", "-k", "READ-001", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--report", "out.txt"], ".json or .md"),
        (["--mcp-map", "map.toml"], "only with --mcp"),
    ],
)
def test_usage_errors_of_the_command_line_exit_2(capsys, args, message):
    assert cli.main(["check", *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("toy_driver:missing", "has no attribute"),
        ("toy_driver", "module:factory"),
        ("toy_driver:NaiveDriver.name", "not callable"),
    ],
)
def test_driver_names_are_checked(monkeypatch, spec, message):
    monkeypatch.syspath_prepend(str(HERE))
    with pytest.raises(DriverLoadError, match=message):
        factory_for(DriverSpec(driver=spec))


def test_a_driver_module_is_found_in_the_current_directory_as_python_m_would(monkeypatch, tmp_path):
    (tmp_path / "here_driver.py").write_text("def factory(root, state_dir):\n    return root\n")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "here_driver", raising=False)
    factory = load_factory("here_driver:factory")
    assert factory(tmp_path, tmp_path) == tmp_path
    with pytest.raises(DriverLoadError, match="no_such_module"):  # still an error if absent
        load_factory("no_such_module:factory")


def test_catalog_commands(tmp_path):
    listing = run_cli("catalog", cwd=tmp_path)
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert len(lines) == len(catalog.load())
    assert lines[0].split()[:2] == ["PATH-001", "MUST"]
    written = run_cli("catalog", "--write", "page.md", cwd=tmp_path)
    assert written.returncode == 0
    assert (tmp_path / "page.md").read_text() == catalog.CATALOG_FILE.read_text()
    assert run_cli("catalog", "--check", "page.md", cwd=tmp_path).returncode == 0
    (tmp_path / "page.md").write_text("stale\n")
    stale = run_cli("catalog", "--check", "page.md", cwd=tmp_path)
    assert stale.returncode == 1
    assert "out of date" in stale.stderr


def test_no_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "check" in capsys.readouterr().err


# -- hooks for other packages ---------------------------------------------------------------


def test_delegated_commands_get_their_arguments(monkeypatch):
    seen: list[list[str]] = []
    module = types.ModuleType("fake_replay_module")
    module.main_replay = lambda argv: seen.append(argv) or 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_replay_module", module)
    monkeypatch.setitem(cli._DELEGATED, "replay", ("fake_replay_module", "main_replay"))
    assert cli.main(["replay", "scenario.json", "--step"]) == 3
    assert seen == [["scenario.json", "--step"]]


def test_a_missing_delegated_command_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setitem(cli._DELEGATED, "serve", ("editspec.spec.no_such_serve_module", "main"))
    assert cli.main(["serve", "ROOT"]) == 2
    assert "not available" in capsys.readouterr().err


def test_mcp_option_without_the_adapter(monkeypatch):
    monkeypatch.setitem(sys.modules, "editspec.contract.drivers.mcp", None)
    with pytest.raises(DriverLoadError, match="MCP adapter"):
        factory_for(DriverSpec(mcp="my-server --stdio"))


def test_mcp_option_uses_the_adapter(monkeypatch, tmp_path):
    calls = []
    adapter = types.ModuleType("editspec.contract.drivers.mcp")

    def factory_from_options(command, map_path):
        calls.append((command, map_path))
        return "a factory"

    adapter.factory_from_options = factory_from_options  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "editspec.contract.drivers.mcp", adapter)
    tool_map = tmp_path / "map.toml"
    tool_map.write_text("")
    assert factory_for(DriverSpec(mcp="srv", mcp_map=str(tool_map))) == "a factory"
    assert calls == [("srv", str(tool_map))]
    with pytest.raises(DriverLoadError, match="choose one"):
        factory_for(DriverSpec(driver="a:b", mcp="srv"))


def test_a_time_bound_does_not_count_a_server_start(tmp_path):
    # The bounded call of each clause comes after a positive control, so an implementation
    # that takes longer than the bound to start (a server started on first use) is judged
    # on the call the bound is about. The mutants that hang on symlink loops still fail
    # these clauses (tests/mutants/targets.py).
    clauses = "LIST-013 or LIST-014 or GLOB-014 or GREP-016"
    result = run_cli(
        "check", "--driver", "slow_start_driver:factory", "-k", clauses, "-n", "2",
        "--report", "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert outcomes(tmp_path / "out.json") == dict.fromkeys(
        ["LIST-013", "LIST-014", "GLOB-014", "GREP-016"], "PASS"
    ), result.stdout[-3000:]


def test_processes_that_start_on_first_use_race_from_one_moment(tmp_path):
    # Each racy driver starts 1.5 s after the one before it; started on first use (after
    # the start barrier), their edits would never overlap and LOCK-003 would pass them.
    result = run_cli(
        "check", "--driver", "slow_start_driver:racy_factory", "-k", "LOCK-003",
        "--report", "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert outcomes(tmp_path / "out.json") == {"LOCK-003": "FAIL"}, result.stdout[-3000:]
