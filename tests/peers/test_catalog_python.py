"""Peers that need a Python of their own: the catalog's ``python`` key, the interpreter it
finds, the venv it installs into, and the line protocol their drivers speak to the tool's
child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from editspec.spec.peers import catalog
from editspec.spec.peers.catalog import CatalogError, Peer, find_python, load_catalog
from editspec.spec.peers.drivers import _child

CHILDREN = Path(_child.__file__).resolve().parent / "children"


def test_the_peers_that_need_another_python_say_which() -> None:
    peers = load_catalog()
    assert peers["openhands-aci"].python == "3.12"
    assert peers["apply-patch-py"].python == "3.13"
    assert peers["mcp-text-editor"].python == "3.13"
    assert peers["langchain-file-management"].python is None


def test_a_peer_with_its_own_python_runs_in_its_venv(tmp_path: Path) -> None:
    peer = Peer(name="p", title="t", version="1", kind="driver", registry="pypi",
                package="p", driver="m:f", python="3.12")  # fmt: skip
    assert peer.peer_python(tmp_path) == tmp_path / "p" / "venv" / "bin" / "python"
    env = peer.environment(tmp_path)
    assert env[catalog.PEER_PYTHON_VARIABLE] == str(tmp_path / "p" / "venv" / "bin" / "python")
    assert str(tmp_path / "p" / "site") not in env.get("PYTHONPATH", "")
    plain = Peer(name="q", title="t", version="1", kind="driver", registry="pypi",
                 package="q", driver="m:f")  # fmt: skip
    assert plain.peer_python(tmp_path) == Path(sys.executable)
    assert catalog.PEER_PYTHON_VARIABLE not in plain.environment(tmp_path) or os.environ.get(
        catalog.PEER_PYTHON_VARIABLE
    )


def test_this_interpreter_is_found_for_its_own_version() -> None:
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert find_python(version) == Path(sys.executable)


def test_another_version_is_found_on_path_or_in_pyenv() -> None:
    found = find_python("3.12")  # CI has it (tox's interpreters), as this machine does
    done = subprocess.run([str(found), "--version"], capture_output=True, text=True)
    assert done.stdout.startswith("Python 3.12"), done.stdout + done.stderr


def test_a_missing_version_is_a_clear_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CatalogError, match=r"Python 3\.99 is needed and was not found"):
        find_python("3.99")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('python = "3"', "python must be a version"),
        ('python = "three.twelve"', "python must be a version"),
        ("python = 3.12", "python must be a version"),
    ],
)
def test_the_catalog_refuses_a_malformed_python(tmp_path: Path, extra: str, message: str) -> None:
    source = tmp_path / "catalog.toml"
    source.write_text(
        '[x]\ntitle = "x"\nversion = "1"\nkind = "driver"\nregistry = "pypi"\n'
        f'package = "x"\ndriver = "m:f"\n{extra}\n'
    )
    with pytest.raises(CatalogError, match=message):
        load_catalog(source)


def test_the_install_makes_a_venv_with_that_python(monkeypatch, tmp_path: Path) -> None:
    ran: list[list[str]] = []

    def run(command, **kwargs):
        ran.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(catalog.subprocess, "run", run)
    monkeypatch.setattr(catalog, "find_python", lambda version: Path(f"/py/python{version}"))
    peer = Peer(name="p", title="t", version="1.0", kind="driver", registry="pypi",
                package="pkg", driver="m:f", python="3.13")  # fmt: skip
    peer.install(tmp_path, log=lambda _: None)
    venv = tmp_path / "p" / "venv"
    assert ran == [
        ["/py/python3.13", "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "pkg==1.0"],
    ]
    assert (tmp_path / "p" / ".installed").read_text() == "1.0"
    assert peer.installed(tmp_path)


ADAPTER = """
import sys
sys.path.insert(0, sys.argv[1])
from _child_loop import serve

def echo(value):
    print("noise from the tool")  # must not reach the protocol
    return {"echo": value}

def fail(message):
    try:
        raise KeyError("inner")
    except KeyError as exc:
        raise ValueError(message) from exc

serve({"echo": echo, "fail": fail})
"""


def test_the_child_loop_answers_results_and_errors_one_line_each(tmp_path: Path) -> None:
    script = tmp_path / "adapter.py"
    script.write_text(ADAPTER)
    requests = [
        {"method": "echo", "params": {"value": [1, "two"]}},
        {"method": "fail", "params": {"message": "no such thing"}},
        {"method": "nothing", "params": {}},
    ]
    done = subprocess.run(
        [sys.executable, str(script), str(CHILDREN)],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers == [
        {"result": {"echo": [1, "two"]}},
        {"error": {"type": "ValueError", "message": "no such thing <- KeyError: 'inner'"}},
        {"error": {"type": "KeyError", "message": "'nothing'"}},
    ]
    assert "noise from the tool" in done.stderr


def test_a_child_error_keeps_a_message_that_can_cross_to_the_report() -> None:
    error = _child.ChildError("ToolError", "no file /ws/\udc80x")
    assert error.message == "no file /ws/\\udc80x"
    str(error).encode("utf-8")  # a lone surrogate would not encode


@pytest.mark.slow
def test_a_peer_with_its_own_python_installs_and_runs_through_its_child(tmp_path: Path) -> None:
    """apply-patch-py (Python >= 3.13) end to end: installed into its venv (the user's peer
    cache, so a second run installs nothing), its driver talking to the tool's child."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "editspec.spec.cli", "peers", "run", "apply-patch-py",
         "--out", str(out), "-n", "0", "-k", "PATCH-002 or PATCH-019 or PATCH-001"],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    report = out / "reports" / "apply-patch-py.json"
    assert report.is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    records = {r["id"]: r for r in json.loads(report.read_text())["clauses"]}
    assert records["PATCH-002"]["outcome"] == "PASS", records["PATCH-002"]
    # CRLF becomes LF (peers/findings/apply-patch-py-crlf.md)
    assert (records["PATCH-019"]["outcome"], records["PATCH-019"]["kind"]) == ("FAIL", "unsafe")
    # its answer names paths only: no hashes made up by the driver
    assert (records["PATCH-001"]["outcome"], records["PATCH-001"]["kind"]) == (
        "FAIL",
        "missing-field",
    )


def test_two_installers_of_one_peer_run_one_install_and_both_see_it_whole(
    monkeypatch, tmp_path: Path
) -> None:
    import threading
    import time

    running: list[int] = []
    overlapped: list[bool] = []

    def run(command, **kwargs):
        running.append(1)
        overlapped.append(len(running) > 1)
        time.sleep(0.2)  # long enough for the second installer to arrive meanwhile
        running.pop()
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(catalog.subprocess, "run", run)
    peer = Peer(name="p", title="t", version="1.0", kind="driver", registry="pypi",
                package="pkg", driver="m:f")  # fmt: skip
    seen: list[bool] = []

    def install() -> None:
        peer.install(tmp_path, log=lambda _: None)
        seen.append(peer.installed(tmp_path))

    threads = [threading.Thread(target=install) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlapped == [False], "one pip run, never two at once"
    assert seen == [True, True]
