"""No module of the product packages uses another module's private names.

A private name (``_x``) belongs to the module that defines it: a function, class or
constant of ``reference/tools/_edit.py`` named ``_apply`` is used in that file only, and
what two modules share is a public name of one of them (CONVENTIONS "Layout"). Private
*modules* (``reference/tools/_edit.py`` itself) are the implementation of their product
package: any module of ``editspec.reference`` may import them, a module of
``editspec.spec`` or ``editspec.fault_injection`` may not (it reaches the engine through
its public API).

The check reads the source with ``ast`` (nothing is imported): every ``from M import n``,
``import M``, and every ``m._n`` where ``m`` names an imported module. ``KNOWN`` lists
violations outside ``reference/`` that are still to be fixed; an entry that no longer
occurs fails the test too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "editspec.reference": ROOT / "reference",
    "editspec.contract": ROOT / "contract",
    "editspec.spec": ROOT / "spec",
    "editspec.fault_injection": ROOT / "fault_injection",
}

# (importing module, the private name it uses): to be emptied.
KNOWN: frozenset[tuple[str, str]] = frozenset()


def _module_files() -> Iterator[tuple[str, Path]]:
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join([package, *parts]), path


MODULES = dict(_module_files())


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _product(module: str) -> str | None:
    return next((p for p in PACKAGES if module == p or module.startswith(p + ".")), None)


def _absolute(importer: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _module_problems(importer: str, module: str) -> list[str]:
    """A private module used outside its product package (each private component)."""
    problems = []
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        if _is_private(parts[depth - 1]) and _product(importer) != _product(module):
            problems.append(".".join(parts[:depth]))
    return problems


def _violations(importer: str, path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module_aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _product(alias.name):
                    yield from _module_problems(importer, alias.name)
                    if alias.asname:
                        module_aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(importer, path, node)
            if not _product(source):
                continue
            yield from _module_problems(importer, source)
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in MODULES:  # a submodule
                    yield from _module_problems(importer, full)
                    module_aliases[alias.asname or alias.name] = full
                elif _is_private(alias.name) and source != importer:
                    yield full
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in module_aliases
            and _is_private(node.attr)
        ):
            owner = module_aliases[node.value.id]
            full = f"{owner}.{node.attr}"
            if full in MODULES:
                yield from _module_problems(importer, full)
            elif owner != importer:
                yield full


@functools.cache
def _all_violations() -> frozenset[tuple[str, str]]:
    return frozenset(
        (importer, name)
        for importer, path in MODULES.items()
        for name in _violations(importer, path)
    )


def test_no_module_uses_another_modules_private_names() -> None:
    found = _all_violations()
    new = sorted(found - KNOWN)
    assert not new, "private names used outside their module:\n  " + "\n  ".join(
        f"{importer} uses {name}" for importer, name in new
    )


def test_the_reference_engine_has_no_known_violation() -> None:
    assert not [entry for entry in KNOWN if _product(entry[0]) == "editspec.reference"]


def test_every_known_violation_still_occurs() -> None:
    gone = sorted(KNOWN - _all_violations())
    assert not gone, f"fixed: remove from KNOWN: {gone}"


def test_the_check_sees_a_private_name_and_a_private_module(tmp_path: Path) -> None:
    """The check itself can fail: a private function and a foreign private module."""
    source = tmp_path / "probe.py"
    source.write_text(
        "from editspec.reference.tools._edit import _plan\n"
        "from editspec.reference.tools import _edit\n"
        "_edit._refuse_notebook\n"
    )
    assert sorted(set(_violations("editspec.reference.probe", source))) == [
        "editspec.reference.tools._edit._plan",
        "editspec.reference.tools._edit._refuse_notebook",
    ]
    assert "editspec.reference.tools._edit" in set(_violations("editspec.spec.probe", source))
