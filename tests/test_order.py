"""The collection order of the project's tests: long ones first (``tests/conftest.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import pytest_collection_modifyitems


class _Item:
    def __init__(self, name: str, slow: bool) -> None:
        self.name, self.slow = name, slow

    def get_closest_marker(self, name: str) -> Any:
        return object() if name == "slow" and self.slow else None


def test_slow_tests_come_first_and_each_group_keeps_its_order() -> None:
    items: list[Any] = [_Item(n, s) for n, s in [("a", 0), ("b", 1), ("c", 0), ("d", 1)]]
    pytest_collection_modifyitems(pytest.Config.__new__(pytest.Config), items)
    assert [item.name for item in items] == ["b", "d", "a", "c"]


class _Marked:
    def __init__(self, name: str, *marks: str) -> None:
        self.name, self.marks = name, marks

    def get_closest_marker(self, name: str) -> Any:
        return object() if name in self.marks else None


def test_long_tests_that_wait_on_a_download_come_after_the_other_long_ones() -> None:
    items: list[Any] = [
        _Marked("fast"),
        _Marked("npm", "slow", "download"),
        _Marked("long", "slow"),
        _Marked("fast-npm", "download"),
        _Marked("long2", "slow"),
    ]
    pytest_collection_modifyitems(pytest.Config.__new__(pytest.Config), items)
    assert [item.name for item in items] == ["long", "long2", "npm", "fast", "fast-npm"]


def test_the_prefetch_starts_only_for_runs_that_include_the_peer_tests(tmp_path) -> None:
    from pathlib import Path

    from tests.conftest import _runs_peer_tests

    tests = Path(__file__).resolve().parent

    class _Config:
        def __init__(self, *args: str) -> None:
            self.args = list(args)
            self.rootpath = tests.parent
            self.invocation_params = type("P", (), {"dir": tests.parent})()

        def getini(self, name: str) -> list[str]:
            assert name == "testpaths"
            return ["tests", "spec"]

    def runs(*args: str) -> bool:
        return _runs_peer_tests(_Config(*args))  # type: ignore[arg-type]

    assert runs()  # the whole suite, from testpaths
    assert runs("tests") and runs("tests/peers") and runs("tests/peers/test_findings.py::x")
    assert not runs("tests/reference") and not runs("tests/peers/test_matrix.py")
    assert not runs("spec", "tests/mutants")


def test_the_prefetch_installs_the_missing_peers_and_the_run_waits_for_them(monkeypatch) -> None:
    from pathlib import Path

    import tests.conftest as conftest
    from editspec.spec.peers import catalog

    installed: list[str] = []

    class _Peer:
        def __init__(self, name: str, present: bool) -> None:
            self.name, self.present = name, present

        def installed(self, cache: Path) -> bool:
            return self.present

        def install(self, cache: Path, log: Any = None) -> None:
            import time

            time.sleep(0.1)  # still running when configure returns
            installed.append(self.name)

    peers = {name: _Peer(name, present=(name == "claude-code")) for name in conftest.PREFETCH}
    monkeypatch.setattr(catalog, "load_catalog", lambda: peers)
    monkeypatch.setattr(catalog, "cache_dir", lambda: Path("cache"))
    monkeypatch.setattr(conftest, "_runs_peer_tests", lambda config: True)
    monkeypatch.setattr(conftest, "_prefetching", [])
    monkeypatch.delenv("EDITSPEC_TEST_PREFETCH", raising=False)
    config: Any = type("C", (), {})()  # the controller's: no workerinput
    conftest.pytest_configure(config)
    conftest.pytest_unconfigure(config)
    assert sorted(installed) == sorted(set(conftest.PREFETCH) - {"claude-code"})
    installed.clear()
    config.workerinput = {}  # an xdist worker leaves the downloads to the controller
    conftest.pytest_configure(config)
    conftest.pytest_unconfigure(config)
    assert installed == []
