"""NB: editing one cell of a Jupyter notebook (DESIGN §2 profile Notebook).

``Session.edit_notebook(path, cell_id=None, index=None, mode="replace" | "insert" |
"delete", source=None, cell_type=None)`` of a driver that declares ``notebook``
(contract 1.1). Notebooks here are real ones, built with ``nbformat``: code cells with
outputs and execution counts, markdown cells with attachments, notebook metadata.
"""

from __future__ import annotations

import json

import pytest

from editspec.spec import MUST, SHOULD, assert_fields, clause, prepare_change, raises_code
from editspec.spec.fixtures import sha256

nbformat = pytest.importorskip("nbformat")
v4 = nbformat.v4


def _notebook(minor: int = 5):
    nb = v4.new_notebook()
    nb.nbformat_minor = minor
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.4"}
    nb.cells = [
        v4.new_markdown_cell(
            "# Analysis ✓\n![plot](attachment:plot.png)",
            attachments={"plot.png": {"image/png": "iVBORw0KGgoAAAANSUhEUg=="}},
        ),
        v4.new_code_cell(
            "import math\nmath.pi",
            execution_count=1,
            outputs=[
                v4.new_output(
                    "execute_result", data={"text/plain": "3.141592653589793"}, execution_count=1
                )
            ],
        ),
        v4.new_code_cell(
            "print('done')",
            execution_count=2,
            outputs=[v4.new_output("stream", name="stdout", text="done\n")],
            metadata={"tags": ["final"]},
        ),
    ]
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    return nb


def _write(disk, name: str, nb, *, text: str | None = None) -> str:
    content = text if text is not None else nbformat.writes(nb) + "\n"
    disk.write(name, content)
    return content


def _load(disk, name: str):
    document = json.loads(disk.read(name))
    nbformat.validate(document)
    return document


def _read(session, name: str) -> None:
    """Make ``name`` editable by this session, as the driver needs it (setup)."""
    prepare_change(session, name)


def _control_edit(session, disk, name: str, nb=None, **address) -> None:
    """Positive control: a cell edit of a valid notebook this session may change succeeds."""
    nb = nb if nb is not None else _notebook()
    _write(disk, name, nb)
    _read(session, name)
    session.edit_notebook(name, source="# control", **address)
    index = address.get("index")
    if index is None:
        index = [cell.get("id") for cell in nb.cells].index(address["cell_id"])
    assert "".join(_load(disk, name)["cells"][index]["source"]) == "# control"


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    import difflib

    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


@clause(
    "NB-001",
    MUST,
    requires={"notebook"},
    text="Replacing a cell addressed by its id sets that cell's source and leaves a valid "
    "notebook whose other cells are unchanged.",
    rationale="Cell ids (nbformat 4.5) are the stable address of a cell; an agent must be able "
    "to change one without rewriting the JSON around it.",
)
def test_replace_by_id(session, disk):
    nb = _notebook()
    _write(disk, "analysis.ipynb", nb)
    _read(session, "analysis.ipynb")
    result = session.edit_notebook(
        "analysis.ipynb", cell_id=nb.cells[1].id, mode="replace", source="import math\nmath.e"
    )
    document = _load(disk, "analysis.ipynb")
    assert "".join(document["cells"][1]["source"]) == "import math\nmath.e"
    assert document["cells"][0] == json.loads(nbformat.writes(nb))["cells"][0]
    assert document["cells"][2] == json.loads(nbformat.writes(nb))["cells"][2]
    assert_fields(result, "NotebookResult")
    assert result.new_sha256 == sha256(disk.read("analysis.ipynb"))


@clause(
    "NB-002",
    MUST,
    requires={"notebook"},
    text="A code cell whose source is replaced loses its outputs, and its execution_count is "
    "reset to null.",
    rationale="Outputs kept under changed code show results the code never produced; the next "
    "reader (human or agent) trusts them.",
)
def test_outputs_are_cleared(session, disk):
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    session.edit_notebook("n.ipynb", index=1, source="math.tau")
    cell = _load(disk, "n.ipynb")["cells"][1]
    assert cell["outputs"] == []
    assert cell["execution_count"] is None
    assert cell["cell_type"] == "code"


@clause(
    "NB-003",
    MUST,
    requires={"notebook"},
    text="A one-cell change is a one-cell diff: the file keeps its JSON layout (indent, key "
    "order, ensure_ascii style, trailing newline), so every changed line lies in the edited "
    "cell.",
    rationale="Notebooks live in version control; a cell edit that reformats the whole file "
    "buries the change and conflicts with every other branch.",
)
def test_layout_is_kept(session, disk):
    nb = _notebook()
    layouts = {
        "jupyter.ipynb": nbformat.writes(nb) + "\n",
        "escaped.ipynb": json.dumps(json.loads(nbformat.writes(nb)), indent=2, ensure_ascii=True),
        "unsorted.ipynb": json.dumps(
            {
                key: json.loads(nbformat.writes(nb))[key]
                for key in ("nbformat", "cells", "metadata", "nbformat_minor")
            },
            indent=4,
            ensure_ascii=False,
        )
        + "\n",
    }
    for name, text in layouts.items():
        _write(disk, name, nb, text=text)
        _read(session, name)
        session.edit_notebook(name, cell_id=nb.cells[2].id, source="print('finished')")
        after = disk.read(name).decode("utf-8")
        removed, added = _changed_lines(text, after)
        assert after.endswith("\n") == text.endswith("\n"), name
        assert any("finished" in line for line in added), name
        # Only the edited cell's source, outputs and execution count lines change.
        assert len(added) <= 3, (name, added)
        assert not any("Analysis" in line or "math" in line for line in removed + added), name
        assert after.replace("print('finished')", "print('done')").count("\n") <= text.count("\n")


@clause(
    "NB-004",
    MUST,
    requires={"notebook"},
    text="Inserting puts a new cell of the given type at the given index (or right after the "
    "cell with the given id), with a fresh unique id in an nbformat 4.5 notebook and no "
    "outputs.",
    rationale="Adding a cell is the commonest notebook change; an id that collides or is missing "
    "makes the notebook invalid.",
)
def test_insert(session, disk):
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    first = session.edit_notebook(
        "n.ipynb", index=0, mode="insert", source="## Setup", cell_type="markdown"
    )
    second = session.edit_notebook(
        "n.ipynb", cell_id=nb.cells[1].id, mode="insert", source="x = 1", cell_type="code"
    )
    cells = _load(disk, "n.ipynb")["cells"]
    assert len(cells) == 5
    assert cells[0]["cell_type"] == "markdown" and "".join(cells[0]["source"]) == "## Setup"
    assert cells[3]["cell_type"] == "code" and "".join(cells[3]["source"]) == "x = 1"
    assert cells[3]["outputs"] == [] and cells[3]["execution_count"] is None
    ids = [cell["id"] for cell in cells]
    assert len(set(ids)) == 5
    assert first.cell_id == cells[0]["id"] and second.cell_id == cells[3]["id"]


@clause(
    "NB-005",
    MUST,
    requires={"notebook"},
    text="Deleting removes exactly the addressed cell and nothing else.",
    rationale="Deleting by position after the notebook shifted is how the wrong cell disappears; "
    "the address must be exact.",
)
def test_delete(session, disk):
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    session.edit_notebook("n.ipynb", cell_id=nb.cells[1].id, mode="delete")
    cells = _load(disk, "n.ipynb")["cells"]
    assert [cell["id"] for cell in cells] == [nb.cells[0].id, nb.cells[2].id]


@clause(
    "NB-006",
    MUST,
    requires={"notebook"},
    text="Cells are addressed by 0-based index too, which is the only address in notebooks "
    "older than nbformat 4.5 (no cell ids).",
    rationale="Most notebooks in the wild predate cell ids; they must stay editable.",
)
def test_index_addressing_without_ids(session, disk):
    nb = _notebook(minor=4)
    _write(disk, "old.ipynb", nb)
    _read(session, "old.ipynb")
    session.edit_notebook("old.ipynb", index=2, source="print('again')")
    session.edit_notebook("old.ipynb", index=3, mode="insert", source="# end", cell_type="markdown")
    document = _load(disk, "old.ipynb")
    assert "".join(document["cells"][2]["source"]) == "print('again')"
    assert "".join(document["cells"][3]["source"]) == "# end"
    assert all("id" not in cell for cell in document["cells"])


@clause(
    "NB-007",
    MUST,
    requires={"notebook", "read_before_write"},
    text="Editing a cell of a notebook this session has not read in full fails with NOT_READ, "
    "and the file is unchanged.",
    rationale="A notebook is a file like any other: the agent must have seen it before changing "
    "it.",
)
def test_not_read(session, disk):
    _control_edit(session, disk, "seen.ipynb", index=0)
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.edit_notebook("n.ipynb", index=0, source="# changed")
    disk.assert_unchanged(before)


@clause(
    "NB-008",
    MUST,
    requires={"notebook", "stale_detection"},
    text="Editing a cell of a notebook that changed on disk since this session read it fails "
    "with STALE, and the file is unchanged.",
    rationale="Jupyter saves the notebook while the agent works; a cell edit against the old "
    "file would drop the user's cells or outputs.",
)
def test_stale(session, disk, external):
    _control_edit(session, disk, "fresh.ipynb", index=0)
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    nb.cells[2].source = "print('saved by jupyter')"
    external.write("n.ipynb", nbformat.writes(nb) + "\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.edit_notebook("n.ipynb", index=0, source="# changed")
    disk.assert_unchanged(before)


@clause(
    "NB-009",
    MUST,
    requires={"notebook"},
    text="An unknown cell id or an index past the last cell fails with NOT_FOUND, and the file "
    "is unchanged.",
    rationale="Falling back to another cell edits one the agent did not mean.",
)
def test_unknown_cell(session, disk):
    nb = _notebook()
    # Positive controls: a known id, the last index, and deleting the last cell succeed.
    _control_edit(session, disk, "by-id.ipynb", nb, cell_id=nb.cells[2].id)
    _control_edit(session, disk, "by-index.ipynb", nb, index=2)
    _write(disk, "delete.ipynb", nb)
    _read(session, "delete.ipynb")
    session.edit_notebook("delete.ipynb", index=2, mode="delete")
    assert len(_load(disk, "delete.ipynb")["cells"]) == 2
    _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    before = disk.snapshot()
    with raises_code("NOT_FOUND"):
        session.edit_notebook("n.ipynb", cell_id="no-such-cell", source="x")
    with raises_code("NOT_FOUND"):
        session.edit_notebook("n.ipynb", index=3, source="x")
    with raises_code("NOT_FOUND"):
        session.edit_notebook("n.ipynb", index=3, mode="delete")
    disk.assert_unchanged(before)


@clause(
    "NB-010",
    MUST,
    requires={"notebook"},
    text="A cell edit keeps the notebook's metadata, the attachments of markdown cells and the "
    "outputs of every other cell.",
    rationale="Attachments and outputs are content the agent cannot regenerate; losing them to "
    "an unrelated edit is data loss.",
)
def test_metadata_attachments_and_other_outputs_are_kept(session, disk):
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    original = json.loads(nbformat.writes(nb))
    _read(session, "n.ipynb")
    session.edit_notebook(
        "n.ipynb", index=0, source="# Analysis, revised\n![plot](attachment:plot.png)"
    )
    document = _load(disk, "n.ipynb")
    assert document["metadata"] == original["metadata"]
    assert document["cells"][0]["attachments"] == original["cells"][0]["attachments"]
    assert document["cells"][1]["outputs"] == original["cells"][1]["outputs"]
    assert document["cells"][2]["outputs"] == original["cells"][2]["outputs"]
    assert document["cells"][2]["metadata"] == {"tags": ["final"]}


@clause(
    "NB-011",
    MUST,
    requires={"notebook"},
    text="A .ipynb file that is not valid JSON, or not a valid notebook, is refused with "
    "INVALID_ARGUMENT and left unchanged.",
    rationale="Editing a broken notebook cell by cell pretends a structure that is not there.",
)
def test_invalid_notebooks_are_refused(session, disk):
    _control_edit(session, disk, "valid.ipynb", index=0)
    disk.write("broken.ipynb", '{"cells": [\n')
    disk.write(
        "wrong.ipynb",
        json.dumps(
            {"cells": [{"cell_type": "code"}], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}
        ),
    )
    for name in ("broken.ipynb", "wrong.ipynb"):
        _read(session, name)
    before = disk.snapshot()
    for name in ("broken.ipynb", "wrong.ipynb"):
        with raises_code("INVALID_ARGUMENT"):
            session.edit_notebook(name, index=0, source="x")
    disk.assert_unchanged(before)


@clause(
    "NB-012",
    MUST,
    requires={"notebook"},
    text="Changing a cell's type gives a valid cell of the new type: a code cell gains empty "
    "outputs and a null execution_count, a cell that stops being code loses them.",
    rationale="A markdown cell with outputs, or a code cell without them, fails validation in "
    "Jupyter and the notebook no longer opens.",
)
def test_cell_type_change(session, disk):
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    session.edit_notebook("n.ipynb", index=1, source="Some *prose*", cell_type="markdown")
    session.edit_notebook("n.ipynb", index=2, source="raw text", cell_type="raw")
    session.edit_notebook("n.ipynb", index=1, source="1 + 1", cell_type="code")
    cells = _load(disk, "n.ipynb")["cells"]
    assert cells[1]["cell_type"] == "code"
    assert cells[1]["outputs"] == [] and cells[1]["execution_count"] is None
    assert cells[2]["cell_type"] == "raw"
    assert "outputs" not in cells[2] and "execution_count" not in cells[2]


@clause(
    "NB-013",
    MUST,
    requires={"notebook"},
    text="A cell edit is atomic like any write: it leaves no temporary file, and a failed one "
    "leaves the file byte for byte as it was.",
    rationale="A notebook torn by a half-written save does not open at all.",
)
def test_atomic_and_no_leftovers(session, disk):
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    session.edit_notebook("n.ipynb", index=1, source="math.tau")
    disk.assert_no_leftovers()
    before = disk.snapshot()
    with raises_code("INVALID_ARGUMENT"):
        session.edit_notebook("n.ipynb", index=1, mode="bogus", source="x")
    disk.assert_unchanged(before)


@clause(
    "NB-014",
    SHOULD,
    requires={"notebook"},
    text="After a cell edit the session may edit the notebook again without reading it.",
    rationale="The engine wrote the file and knows its hash; demanding a read after each cell "
    "doubles the calls of every notebook session.",
)
def test_second_edit_needs_no_read(session, disk):
    nb = _notebook()
    _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    session.edit_notebook("n.ipynb", index=1, source="math.tau")
    session.edit_notebook("n.ipynb", index=2, source="print('twice')")
    assert "".join(_load(disk, "n.ipynb")["cells"][2]["source"]) == "print('twice')"


@clause(
    "NB-015",
    MUST,
    requires={"notebook", "snapshots"},
    text="A cell edit with a message_id is recorded like an edit: rewinding to that message "
    "restores the notebook byte for byte.",
    rationale="Undo must cover notebooks, or the agent's cell edits are the one change a user "
    "cannot take back.",
)
def test_rewind_restores_the_notebook(session, disk):
    nb = _notebook()
    original = _write(disk, "n.ipynb", nb)
    _read(session, "n.ipynb")
    result = session.edit_notebook("n.ipynb", index=1, source="math.tau", message_id="m1")
    assert result.snapshot_created is True
    session.rewind("m1")
    assert disk.read("n.ipynb") == original.encode("utf-8")


@clause(
    "NB-016",
    MUST,
    requires={"notebook"},
    text="edit_notebook on a file that is not a .ipynb notebook fails with INVALID_ARGUMENT, "
    "and the file is unchanged.",
    rationale="Cell addresses mean nothing in a Python file; the agent meant Edit.",
)
def test_not_a_notebook(session, disk):
    _control_edit(session, disk, "real.ipynb", index=0)
    disk.write("script.py", "print('x')\n")
    _read(session, "script.py")
    before = disk.snapshot()
    with raises_code("INVALID_ARGUMENT"):
        session.edit_notebook("script.py", index=0, source="x")
    disk.assert_unchanged(before)
