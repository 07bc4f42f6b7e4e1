"""Hypothesis' example database shared through Redis (``HYPOTHESIS_REDIS_URL``).

``tests/conftest.py`` multiplexes the local ``.hypothesis`` directory with a Redis
database when ``HYPOTHESIS_REDIS_URL`` is set. Two workers with their own local
directories and one Redis: an example one saves, the other finds; a failure one finds,
the other replays without searching for it. A real ``redis-server`` runs on 127.0.0.1
on a free port for the length of the test.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from tests.conftest import example_database


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A private redis-server on 127.0.0.1, found on PATH (skipped without one, but not in CI)."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):  # .ci/run installs it: a skip there would hide the test
            pytest.fail("redis-server is not on PATH in CI (.ci/run installs it)")
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    redis = pytest.importorskip("redis", reason="the redis package is not installed")
    port = _free_port()
    server = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    err = server.stderr.read().decode(errors="replace") if server.stderr else ""
                    pytest.fail(f"redis-server did not start on port {port}: {err[-500:]}")
                time.sleep(0.05)
        client.close()
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stderr is not None:
            server.stderr.close()


def _worker(url: str, local: Path) -> ExampleDatabase:
    database = example_database(url, DirectoryBasedExampleDatabase(local))
    assert database is not None
    return database


def test_without_the_setting_there_is_no_shared_database() -> None:
    assert example_database(None) is None
    assert example_database("") is None


def test_an_example_saved_through_one_worker_is_found_through_another(
    redis_url: str, tmp_path: Path
) -> None:
    first = _worker(redis_url, tmp_path / "worker-1")
    second = _worker(redis_url, tmp_path / "worker-2")
    key, value = b"editspec-" + secrets.token_bytes(8), b"a failing example"
    first.save(key, value)
    assert list(second.fetch(key)) == [value]
    # It came through Redis: the second worker's own directory never saw it.
    assert list(DirectoryBasedExampleDatabase(tmp_path / "worker-2").fetch(key)) == []


def test_a_failure_found_on_one_worker_is_replayed_on_another(
    redis_url: str, tmp_path: Path
) -> None:
    threshold = secrets.randbelow(1000) + 1000  # a fresh failure for every run
    seen: list[int] = []

    def check(n: int) -> None:
        seen.append(n)
        assert n < threshold

    # The same test on two workers: one database key, two local directories.
    first = _worker(redis_url, tmp_path / "worker-1")
    search = settings(database=first, max_examples=1000)(given(st.integers(0, 10**6))(check))
    with pytest.raises(AssertionError):
        search()
    assert max(seen) >= threshold

    seen.clear()
    second = _worker(redis_url, tmp_path / "worker-2")
    # Only the reuse phase: the second worker runs nothing but the examples it is given.
    rerun = settings(database=second, phases=[Phase.reuse])(given(st.integers(0, 10**6))(check))
    with pytest.raises(AssertionError):
        rerun()
    assert seen and seen[0] >= threshold
