"""The suite checks itself: clause ids, capabilities, tests for every clause, the catalog page."""

from __future__ import annotations

import importlib.util
import itertools
import textwrap
from pathlib import Path

import pytest

from editspec.contract import AREAS, CAPABILITIES, PROFILES, profile_for
from editspec.spec import _clauses, catalog
from editspec.spec._clauses import MUST, SHOULD, ClauseDefinitionError, Registry, clause

_counter = itertools.count()


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Registry:
    """Clauses defined by these tests go to a private registry, not the suite's."""
    registry = Registry()
    monkeypatch.setattr(_clauses, "REGISTRY", registry)
    return registry


def _load(tmp_path: Path, source: str, name: str = "test_fake"):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(f"fake_suite_{next(_counter)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the real suite ----------------------------------------------------------------------------


def test_the_suite_passes_its_own_checks():
    assert catalog.self_check() == []


def test_clause_ids_are_unique_and_well_formed():
    clauses = catalog.load()
    ids = [c.id for c in clauses]
    assert len(ids) == len(set(ids))
    assert all(c.area in AREAS and c.id.startswith(c.area + "-") for c in clauses)


def test_every_requirement_is_a_known_capability():
    for item in catalog.load():
        assert item.requires <= CAPABILITIES, item.id
        assert item.profile in PROFILES, item.id


def test_every_must_clause_has_a_collected_test():
    names = {c.id: c.function for c in catalog.load() if c.level == MUST}
    assert names
    assert all(function.split(".")[-1].startswith("test") for function in names.values())


def test_the_catalog_page_is_up_to_date():
    expected = catalog.render_markdown(catalog.load())
    assert catalog.CATALOG_FILE.read_text(encoding="utf-8") == expected, (
        "run: editspec catalog --write spec/CLAUSES.md"
    )


def test_core_areas_are_covered_thoroughly():
    clauses = catalog.load()
    core = [
        c for c in clauses if c.area in {"PATH", "READ", "WRITE", "TRACK", "EDIT", "LOCK", "LIMIT"}
    ]
    assert len(core) >= 100
    assert all(c.text and c.rationale for c in clauses)


# -- the checker finds problems --------------------------------------------------------------


def test_an_undecorated_test_is_reported(tmp_path, fresh_registry):
    module = _load(
        tmp_path,
        """
        from editspec.spec import MUST, clause

        @clause("READ-900", MUST, requires={"read"}, text="A text.", rationale="A reason.")
        def test_with_clause():
            pass

        def test_without_clause():
            pass
        """,
    )
    problems = catalog.self_check(None, modules=[module])
    assert any("test_without_clause checks no clause" in p for p in problems), problems
    assert not any("test_with_clause" in p for p in problems), problems


def test_a_clause_pytest_would_not_collect_is_reported(tmp_path, fresh_registry):
    module = _load(
        tmp_path,
        """
        from editspec.spec import MUST, clause

        @clause("READ-901", MUST, requires={"read"}, text="A text.", rationale="A reason.")
        def helper_not_a_test():
            pass
        """,
    )
    problems = catalog.self_check(None, modules=[module])
    assert any("READ-901" in p and "not collected" in p for p in problems), problems


def test_a_private_engine_import_is_reported(tmp_path, fresh_registry):
    module = _load(
        tmp_path,
        """
        from editspec.reference._errors import ToolError
        """,
    )
    problems = catalog.self_check(None, modules=[module])
    assert any("editspec.reference._errors" in p for p in problems), problems


def test_a_private_engine_import_from_a_folder_is_reported(tmp_path, fresh_registry):
    module = _load(
        tmp_path,
        """
        from editspec.reference.tools import _edit
        from editspec.reference.text._text import decode
        """,
    )
    problems = catalog.self_check(None, modules=[module])
    assert any("editspec.reference.tools._edit" in p for p in problems), problems
    assert any("editspec.reference.text._text" in p for p in problems), problems


def test_an_outdated_catalog_page_is_reported(tmp_path):
    stale = tmp_path / "CLAUSES.md"
    stale.write_text(catalog.CATALOG_FILE.read_text(encoding="utf-8").replace("MUST", "MAY", 1))
    problems = catalog.self_check(stale)
    assert any("out of date" in p for p in problems), problems


# -- the decorator refuses malformed clauses ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("READ-1", MUST), {}, "AREA-NNN"),
        (("read-001", MUST), {}, "AREA-NNN"),
        (("FOO-001", MUST), {}, "unknown area"),
        (("READ-950", "MUSTN'T"), {}, "level"),
        (("READ-951", MUST), {"requires": {"teleport"}}, "unknown capabilities"),
        (("READ-952", MUST), {"requires": "read"}, "not a string"),
        (("READ-953", MUST), {"text": " "}, "text and a rationale"),
        (("READ-954", MUST), {"rationale": ""}, "text and a rationale"),
    ],
)
def test_malformed_clauses_are_refused(fresh_registry, args, kwargs, message):
    options = {"text": "A text.", "rationale": "A reason.", **kwargs}
    with pytest.raises(ClauseDefinitionError, match=message):
        clause(*args, **options)


def test_a_reused_id_is_refused(fresh_registry):
    @clause("EDIT-960", SHOULD, text="First.", rationale="Reason.")
    def test_first():
        pass

    with pytest.raises(ClauseDefinitionError, match="already used"):

        @clause("EDIT-960", SHOULD, text="Second.", rationale="Reason.")
        def test_second():
            pass

    assert fresh_registry.get("EDIT-960").function.endswith("test_first")


def test_redefinition_by_the_same_function_replaces(fresh_registry):
    # The same module imported under two names (pytest's importlib mode and the catalog).
    for _ in range(2):

        @clause("EDIT-961", SHOULD, text="Same.", rationale="Reason.")
        def test_same():
            pass

    assert len(fresh_registry) == 1


def test_one_test_checks_one_clause(fresh_registry):
    with pytest.raises(ClauseDefinitionError, match="exactly one clause"):

        @clause("EDIT-962", MUST, text="A.", rationale="R.")
        @clause("EDIT-963", MUST, text="B.", rationale="R.")
        def test_two():
            pass


def test_profiles_follow_requirements():
    assert profile_for(frozenset({"read"})) == "Core"
    assert profile_for(frozenset({"read", "write", "stale_detection"})) == "Guarded"
    assert profile_for(frozenset({"read", "apply_patch"})) == "Transactional"
    assert profile_for(frozenset({"snapshots", "write"})) == "Rewindable"
    assert profile_for(frozenset({"grep"})) == "Search"
    assert profile_for(frozenset({"read", "write", "python_fs"})) == "Crash-testable"
    assert profile_for(frozenset({"process", "edit"})) == "Crash-testable"
    assert profile_for(frozenset({"remote_acp", "read"})) == "Remote"
    assert profile_for(frozenset({"notebook"})) == "Notebook"
    assert PROFILES["Crash-testable"].supported_by(frozenset({"process"}))
    assert not PROFILES["Guarded"].supported_by(frozenset({"read", "write", "edit"}))
