"""The broken drivers do what their names say (each family on one small case)."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

broken = importlib.import_module("broken_drivers")
mutant_zoo = importlib.import_module("mutant_zoo")

from editspec.contract.drivers.reference import ReferenceDriver  # noqa: E402
from editspec.reference import EditSpec, ToolError  # noqa: E402


def _driver(tmp_path: Path, hook: Any) -> Any:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    state.mkdir()
    mutant_zoo.deactivate()
    return broken.BrokenDriver(ReferenceDriver(root, state), hook)


def test_a_dropped_field_is_missing_and_the_others_are_kept(tmp_path: Path) -> None:
    driver = _driver(tmp_path, broken._result_hook("ReadResult", "sha256", "drop"))
    (tmp_path / "ws" / "a.txt").write_text("one\n")
    result = driver.open_session("A").read("a.txt")
    assert not hasattr(result, "sha256")
    assert result.content == "one\n"


def test_a_bad_field_differs_and_items_are_changed_one_by_one(tmp_path: Path) -> None:
    driver = _driver(tmp_path, broken._result_hook("Replacement", "line", "bad"))
    (tmp_path / "ws" / "a.txt").write_text("one\ntwo\n")
    session = driver.open_session("A")
    session.read("a.txt")
    result = session.edit("a.txt", [EditSpec("two", "2")])
    assert [r.line for r in result.replacements] == [3]
    assert broken._wrong(True) is False
    assert broken._wrong("a" * 64) != "a" * 64
    assert broken._wrong(("x", "y")) == ("x",)


def test_a_reversed_diff_swaps_its_removed_and_added_lines() -> None:
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n"
    assert broken._reversed(diff) == "+++ a\n--- b\n@@ -1 +1 @@\n+old\n-new\n"


def test_a_swapped_code_is_another_code(tmp_path: Path) -> None:
    driver = _driver(tmp_path, broken._swap_hook("NOT_FOUND"))
    with pytest.raises(Exception) as caught:
        driver.open_session("A").read("missing.txt")
    assert getattr(caught.value, "code", None) == "IO_ERROR"


def test_an_accepted_refusal_reports_success_and_writes_nothing(tmp_path: Path) -> None:
    driver = _driver(tmp_path, broken._accept_hook("write"))
    (tmp_path / "ws" / "a.txt").write_text("old\n")
    result = driver.open_session("A").write("a.txt", "new\n")  # never read: NOT_READ
    assert result.path == "a.txt"
    assert (tmp_path / "ws" / "a.txt").read_text() == "old\n"


def test_a_refused_write_made_anyway_still_raises(tmp_path: Path) -> None:
    driver = _driver(tmp_path, broken._anyway_hook("write"))
    (tmp_path / "ws" / "a.txt").write_text("old\n")
    with pytest.raises(Exception) as caught:
        driver.open_session("A").write("a.txt", "new\n")
    assert getattr(caught.value, "code", None) == "NOT_READ"
    assert (tmp_path / "ws" / "a.txt").read_text() == "new\n"


def test_a_noop_success_leaves_the_disk_as_it_was(tmp_path: Path) -> None:
    driver = _driver(tmp_path, broken._noop_hook("write"))
    session = driver.open_session("A")
    (tmp_path / "ws" / "a.txt").write_text("old\n")
    session.read("a.txt")
    result = session.write("a.txt", "new\n")
    session.write("b.txt", "created\n")
    assert result.operation == "replace"
    assert (tmp_path / "ws" / "a.txt").read_text() == "old\n"
    assert (tmp_path / "ws" / "b.txt").read_bytes() == b""


def test_litter_is_left_beside_a_refused_target(tmp_path: Path) -> None:
    driver = _driver(tmp_path, broken._litter_hook)
    (tmp_path / "ws" / "a.txt").write_text("old\n")
    with pytest.raises(ToolError, match="NOT_READ"):
        driver.open_session("A").write("a.txt", "new\n")
    assert os.path.exists(tmp_path / "ws" / ".editspec.tmp~")
