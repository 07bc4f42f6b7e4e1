"""Shared fixtures and Hypothesis profiles for the project's own tests.

Profiles: ``dev`` (default, quick), ``ci`` (sized to CI's budget, randomized) and
``thorough`` (long local runs). Select one with ``HYPOTHESIS_PROFILE=thorough``.

Example database: with ``HYPOTHESIS_REDIS_URL`` set (e.g. ``redis://127.0.0.1:6379/0``)
every profile saves and replays examples through Redis as well as the local
``.hypothesis`` directory, so a failure found by one CI worker or machine is replayed
first by all of them (needs the ``redis`` package).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import ExampleDatabase

# The tests start many child interpreters (`editspec check`, `editspec serve`, xdist's
# workers). With PYTHONDONTWRITEBYTECODE set, every one of them compiles, and pytest
# assertion-rewrites, every module again: about three times the CPU of a cached start.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

settings.register_profile(
    "dev",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    stateful_step_count=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def example_database(
    redis_url: str | None, local: ExampleDatabase | None = None
) -> ExampleDatabase | None:
    """The local example database multiplexed with a Redis one at ``redis_url``."""
    if not redis_url:
        return None
    import redis
    from hypothesis.database import MultiplexedDatabase
    from hypothesis.extra.redis import RedisExampleDatabase

    shared = RedisExampleDatabase(redis.Redis.from_url(redis_url))
    if local is None:
        local = settings.get_profile("default").database
    return MultiplexedDatabase(local, shared)


_shared_database = example_database(os.environ.get("HYPOTHESIS_REDIS_URL"))
if _shared_database is not None:
    for _profile in ("dev", "ci", "thorough"):
        settings.register_profile(
            _profile, parent=settings.get_profile(_profile), database=_shared_database
        )
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty workspace root (a real temporary directory)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """The engine's state directory, outside the root."""
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
def workspace(root: Path, state_dir: Path) -> Iterator[object]:
    from editspec.reference import Workspace

    ws = Workspace(root, state_dir)
    yield ws
    ws.close()


@pytest.fixture
def session(workspace: object) -> object:
    return workspace.session("s1")  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long tests (marked ``slow``) first, each group in its collected order; among the
    long ones, those that wait on a download (marked ``download``) last.

    With pytest-xdist the workers take tests in this order: the long ones start at once
    and the short ones fill the gaps, instead of a long test starting last and the run
    waiting for it alone. A download test comes after the other long ones so that the
    prefetch (``pytest_configure``) has normally finished its download by then, and no
    worker sits idle waiting on the network.
    """
    items.sort(
        key=lambda item: (
            item.get_closest_marker("slow") is None,
            item.get_closest_marker("download") is not None,
        )
    )


# The catalog peers that tests install from npm into the peer cache when it lacks them: the
# agent CLIs, whose reproductions (tests/peers/test_findings.py) and smoke test
# (tests/peers/test_agent_cli_smoke.py) run on a fresh machine too.
PREFETCH = ("codex-apply-patch", "gemini-cli-core", "claude-code", "qwen-code-core")
_prefetching: list[threading.Thread] = []


def _runs_peer_tests(config: pytest.Config) -> bool:
    """Whether the paths this run was given include the tests that install the peers."""
    peers = Path(__file__).resolve().parent / "peers"
    wanted = {"peers", "test_findings.py", "test_agent_cli_smoke.py"}
    for arg in config.args or [str(config.rootpath / path) for path in config.getini("testpaths")]:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        if peers.is_relative_to(path) or (path.is_relative_to(peers) and path.name in wanted):
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    """Start downloading the npm peers the peer tests install, in the background.

    Only the controller does (or the one process, without pytest-xdist), only when the run
    includes those tests, and not with ``EDITSPEC_TEST_PREFETCH=0``. Each download runs
    under the peer's install lock (``Peer.install``): a test that needs the peer waits for
    it there, and a failed download is left for that test to retry and report.
    """
    if hasattr(config, "workerinput") or os.environ.get("EDITSPEC_TEST_PREFETCH") == "0":
        return
    if not _runs_peer_tests(config):
        return
    from editspec.spec.peers.catalog import CatalogError, cache_dir, load_catalog

    catalog, cache = load_catalog(), cache_dir()

    def fetch(name: str) -> None:
        with contextlib.suppress(CatalogError, OSError):
            catalog[name].install(cache, log=lambda _: None)

    for name in PREFETCH:
        if not catalog[name].installed(cache):
            thread = threading.Thread(target=fetch, args=(name,), name=f"prefetch {name}")
            thread.start()
            _prefetching.append(thread)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Wait for the downloads: an installer cut off would leave a half-installed peer."""
    for thread in _prefetching:
        thread.join()
