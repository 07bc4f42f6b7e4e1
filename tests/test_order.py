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
