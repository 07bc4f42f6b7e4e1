"""One running server's root shared by the clauses: the checks, the resets, the command line.

``check --mcp-url`` empties a directory it was given between clauses, so what it refuses
matters as much as what it cleans: a root that holds anything, a root that is not alone
in its parent, a link whose target lies outside (removed, never followed).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from editspec.contract.drivers import DriverLoadError, DriverSpec, factory_for
from editspec.contract.drivers.mcp import (
    McpToolError,
    OneRootOnly,
    ServerError,
    factory_from_url,
)
from editspec.spec import _classify as classify
from editspec.spec import cli
from editspec.spec._shared_root import SharedRootError, check_exclusive, release, reset


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "suite" / "ws"
    path.mkdir(parents=True)
    return path


def test_an_empty_root_alone_in_its_parent_is_accepted(root: Path) -> None:
    check_exclusive(root)
    (root.parent / "outside").mkdir()  # what an interrupted run leaves
    check_exclusive(root)


def test_a_root_that_is_not_empty_or_not_alone_is_refused(root: Path) -> None:
    (root / "precious.txt").write_text("mine\n")
    with pytest.raises(SharedRootError, match="not empty"):
        check_exclusive(root)
    (root / "precious.txt").unlink()
    (root.parent / "notes.txt").write_text("mine\n")
    with pytest.raises(SharedRootError, match=r"holds \['notes.txt'\]"):
        check_exclusive(root)
    with pytest.raises(SharedRootError, match="not a directory"):
        check_exclusive(root.parent / "notes.txt")
    assert (root.parent / "notes.txt").read_text() == "mine\n"  # refusing touched nothing


def test_reset_and_release_clean_without_following_links(root: Path, tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "k.txt").write_text("kept\n")
    reset(root)
    assert sorted(os.listdir(root.parent)) == ["outside", "ws"] and not os.listdir(root)
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "sub" / "deep" / "f.txt").write_text("x")
    os.chmod(root / "sub", 0o000)  # a clause made it unreadable
    os.symlink(keep, root / "link-to-keep")
    os.symlink(keep, root.parent / "outside" / "out-link")
    (root.parent / "ready-0").write_text("")  # a clause's barrier file in the base
    reset(root)
    assert sorted(os.listdir(root.parent)) == ["outside", "ws"]
    assert not os.listdir(root) and not os.listdir(root.parent / "outside")
    assert (keep / "k.txt").read_text() == "kept\n"  # links removed, never followed
    (root / "left.txt").write_text("x")
    release(root)
    assert os.listdir(root.parent) == ["ws"] and not os.listdir(root)
    check_exclusive(root)  # the next run finds it as this one did


def test_the_url_factory_refuses_another_root(root: Path, tmp_path: Path) -> None:
    factory = factory_from_url("http://127.0.0.1:9/mcp", None, root=str(root))
    driver = factory(root, tmp_path / "state")
    assert "process" not in driver.capabilities and "journal_layout" not in driver.capabilities
    assert {"read", "write", "read_before_write"} <= driver.capabilities
    with pytest.raises(ServerError, match="not this process's to kill"):
        driver.kill()
    driver.close()
    other = tmp_path / "other"
    other.mkdir()
    # A harness limit, not the server's failure: the clause is UNSUPPORTED (DESIGN §7).
    with pytest.raises(OneRootOnly, match="serves") as refused:
        factory(other, tmp_path / "state")
    assert classify.exception_outcome(refused)[0] == "UNSUPPORTED"
    with pytest.raises(DriverLoadError, match="http"):
        factory_from_url("localhost:8000", None, root=str(root))


def test_each_driver_sends_its_own_session_ids(root: Path, tmp_path: Path) -> None:
    factory = factory_from_url("http://127.0.0.1:9/mcp", None, root=str(root))
    sent: list[dict[str, object]] = []

    def capture(self: object, operation: str, session_id: str | None, values: dict) -> None:
        arguments: dict[str, object] = {}
        if session_id is not None:
            arguments["session_id"] = self._session_prefix + session_id  # type: ignore[attr-defined]
        sent.append(arguments)
        raise McpToolError("NOT_FOUND", "captured")

    first, second = factory(root, tmp_path / "s1"), factory(root, tmp_path / "s2")
    for driver in (first, second):
        driver.call = capture.__get__(driver)  # type: ignore[method-assign]
        with pytest.raises(McpToolError):
            driver.open_session("A").read("a.txt")
        driver.close()
    ids = [item["session_id"] for item in sent]
    assert all(str(sid).endswith("-A") for sid in ids) and ids[0] != ids[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mcp-url", "http://127.0.0.1:9/mcp"], "needs --mcp-root"),
        (["--mcp-root", "ws"], "needs --mcp-root"),
        (["--mcp-url", "http://127.0.0.1:9/mcp", "--mcp-root", "ws", "-n", "2"], "no -n"),
    ],
)
def test_check_with_a_url_refuses_what_a_shared_root_cannot_do(capsys, args, message) -> None:
    assert cli.main(["check", *args]) == 2
    assert message in capsys.readouterr().err


def test_the_driver_spec_carries_the_url_and_root(root: Path) -> None:
    spec = DriverSpec(mcp_url="http://127.0.0.1:9/mcp", mcp_root=str(root))
    assert DriverSpec.from_dict(spec.to_dict()) == spec
    assert spec.describe() == "mcp-url: http://127.0.0.1:9/mcp"
    assert factory_for(spec).url == "http://127.0.0.1:9/mcp"  # type: ignore[attr-defined]
    with pytest.raises(DriverLoadError, match="needs --editspec-mcp-root"):
        factory_for(DriverSpec(mcp_url="http://127.0.0.1:9/mcp"))


def test_explore_refuses_a_running_server_and_says_why(capsys) -> None:
    assert cli.main(["explore", "--mcp-url", "http://127.0.0.1:9/mcp"]) == 2
    err = capsys.readouterr().err
    assert "--mcp-url is not supported" in err and "not this process's to kill" in err
