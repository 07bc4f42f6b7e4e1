"""Shared fixtures and Hypothesis profiles for the project's own tests.

Profiles: ``dev`` (default, quick), ``ci`` (sized to CI's budget, randomized) and
``thorough`` (long local runs). Select one with ``HYPOTHESIS_PROFILE=thorough``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

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
