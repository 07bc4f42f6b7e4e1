"""list_directory at scale (file-io-design §8): glob, default exclusions, counts, changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from editspec.fault_injection import FaultyFileSystem
from editspec.reference import Workspace
from editspec.reference.search._listing import DEFAULT_EXCLUDED


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for path in ("src/a.py", "src/b.txt", "src/deep/c.py", "node_modules/x/index.js", "build/o"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x\n")
    return root


def test_dependency_and_build_directories_are_excluded_and_reported(
    root: Path, tmp_path: Path
) -> None:
    session = Workspace(root, tmp_path / "state").session("s")
    result = session.list_directory(".", depth=3)
    paths = [entry.path for entry in result.entries]
    assert "node_modules" not in paths and "build" not in paths
    assert not any(path.startswith(("node_modules/", "build/")) for path in paths)
    assert set(result.excluded) == {"node_modules", "build"}
    assert result.exclusions == DEFAULT_EXCLUDED
    everything = session.list_directory(".", depth=3, exclude=())
    assert "node_modules/x/index.js" in [entry.path for entry in everything.entries]
    assert everything.excluded == ()
    only_build = session.list_directory(".", exclude=["build"])
    assert [entry.path for entry in only_build.entries] == ["node_modules", "src"]


def test_glob_filters_entries_and_counts_cover_every_page(root: Path, tmp_path: Path) -> None:
    session = Workspace(root, tmp_path / "state").session("s")
    result = session.list_directory("src", depth=2, glob="*.py")
    assert [entry.path for entry in result.entries] == ["src/deep/c.py", "src/a.py"]
    assert result.total_entries == 2
    first = session.list_directory("src", depth=2, max_entries=2)
    assert first.truncated and first.total_entries == 4
    second = session.list_directory("src", depth=2, max_entries=2, cursor=first.next_cursor)
    assert second.total_entries == 4 and not second.truncated
    seen = [e.path for e in first.entries + second.entries]
    assert seen == ["src/deep", "src/deep/c.py", "src/a.py", "src/b.txt"]
    assert not first.changed_during_listing


def test_a_directory_that_changes_while_listed_is_flagged(root: Path, tmp_path: Path) -> None:
    class Adding(FaultyFileSystem):
        def scandir(self, path: str):  # type: ignore[no-untyped-def]
            entries = super().scandir(path)
            if path.endswith("/src"):
                (root / "src" / "late.txt").write_text("late\n")  # a writer, mid-listing
            return entries

    session = Workspace(root, tmp_path / "state", fs=Adding()).session("s")
    result = session.list_directory("src")
    assert result.changed_during_listing
    assert "src/late.txt" not in [entry.path for entry in result.entries]
