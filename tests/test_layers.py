"""The packages import one way (DESIGN §1, docs/internals.md "Layers").

From the bottom up: ``reference`` (the engine) <- ``contract`` (the driver protocol, the
verdict kinds and the drivers, MCP adapter included) <- ``fault_injection`` <- ``spec``
(clauses, fixtures, the pytest plugin, the report) <- the command line (``editspec``,
``editspec serve``, ``editspec peers`` and what only they use). A module may import its
own layer and the layers below it, never one above; and no two modules of the product
import each other, whatever the path between them (a cycle is a sign that code sits in
the wrong layer, and the usual dodge, an import moved into a function, is still an
import: grimp sees it, as it sees one under ``TYPE_CHECKING``).

The graph is grimp's (every ``import`` statement of the source, at any depth).
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

PACKAGES = ("editspec.reference", "editspec.contract", "editspec.fault_injection", "editspec.spec")

#: The command line: the modules that only the commands use. Everything else of
#: ``editspec.spec`` is the suite's layer.
COMMAND_LINE = frozenset(
    {
        "editspec.spec.cli",
        "editspec.spec.audit",
        "editspec.spec.serve",
        "editspec.spec._serve_http",
        "editspec.spec._serve_text",
        "editspec.spec._mcp_tools",
        "editspec.spec._guarded_stdio",
        "editspec.spec._jsonrpc_guard",
        "editspec.spec.peers.cli",
        "editspec.spec.peers.matrix",
    }
)

LAYERS = ("reference", "contract", "fault_injection", "spec", "command line")

CHECKOUT = Path(__file__).resolve().parents[1]


def layer_of(module: str) -> int:
    """The index of ``module``'s layer in ``LAYERS`` (0 is the bottom)."""
    if module in COMMAND_LINE:
        return LAYERS.index("command line")
    package = module.split(".")[1]
    return LAYERS.index(package)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def product_imports(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    """Every (importer, imported) pair between two modules of the product."""
    return sorted(
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported.startswith(PACKAGES)
    )


def describe(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    lines = [
        detail["line_number"]
        for detail in graph.get_import_details(importer=importer, imported=imported)
    ]
    where = ", ".join(f"line {line}" for line in lines)
    return (
        f"{importer} ({LAYERS[layer_of(importer)]}) imports {imported} "
        f"({LAYERS[layer_of(imported)]}) at {where}"
    )


def test_every_module_has_a_layer(graph: grimp.ImportGraph) -> None:
    assert {layer_of(module) for module in graph.modules} == set(range(len(LAYERS)))
    assert graph.modules >= COMMAND_LINE, sorted(COMMAND_LINE - graph.modules)


def test_no_import_points_up(graph: grimp.ImportGraph) -> None:
    upward = [
        describe(graph, importer, imported)
        for importer, imported in product_imports(graph)
        if layer_of(imported) > layer_of(importer)
    ]
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_the_command_line_is_used_by_no_other_layer(graph: grimp.ImportGraph) -> None:
    # what only the commands use sits with them: a module the suite needs is the suite's
    for module in sorted(COMMAND_LINE):
        users = graph.find_modules_that_directly_import(module) - COMMAND_LINE
        assert not users, f"{module} is in the command line's layer, but {sorted(users)} use it"


def test_no_cycle_between_modules(graph: grimp.ImportGraph) -> None:
    cycles = []
    for importer, imported in product_imports(graph):
        if importer.startswith("editspec.reference"):
            continue  # the engine's modules among themselves: the engine's layout holds them
        back = graph.find_shortest_chain(importer=imported, imported=importer)
        if back is not None:
            cycles.append(" -> ".join((importer, *back)))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_product_module_is_over_500_lines() -> None:
    # CONVENTIONS: one concept per module, split by responsibility before 500 lines
    # (the clause files group a whole area and are not held to it).
    long = []
    for folder in ("contract", "fault_injection", "spec"):
        for path in sorted((CHECKOUT / folder).rglob("*.py")):
            if path.name.startswith("test_"):
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > 500:
                long.append(f"{path.relative_to(CHECKOUT)}: {lines} lines")
    assert not long, "modules over 500 lines:\n" + "\n".join(long)


#: The engine's folders, each importing only those after it (docs/internals.md "The
#: engine's folders"); the top-level modules are outside this order.
ENGINE_FOLDERS = (
    "remote",
    "tools",
    "patch",
    "snapshots",
    "transactions",
    "search",
    "matching",
    "guards",
    "paths",
    "text",
)
#: The facade: the modules that open sessions, imported only by one another and the API.
FACADE = ("editspec.reference._workspace", "editspec.reference._session")


def _engine_folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "reference" else None


def test_the_engines_folders_import_down_their_list(graph: grimp.ImportGraph) -> None:
    assert {_engine_folder(m) for m in graph.modules} - {None} == set(ENGINE_FOLDERS)
    upward = []
    for importer, imported in product_imports(graph):
        source, target = _engine_folder(importer), _engine_folder(imported)
        if not (source and target) or source == target:
            continue
        if ENGINE_FOLDERS.index(target) < ENGINE_FOLDERS.index(source):
            upward.append(describe(graph, importer, imported))
    assert not upward, "engine folders importing up their list:\n" + "\n".join(upward)


def test_only_the_api_and_the_workspaces_import_the_facade(graph: grimp.ImportGraph) -> None:
    allowed = {"editspec.reference", "editspec.reference.remote._remote", *FACADE}
    for module in FACADE:
        users = graph.find_modules_that_directly_import(module) - allowed
        assert not users, f"{module} is imported by {sorted(users)}"
