"""Notebook cells: layouts kept, outputs cleared, attachments, arguments, freshness, atomicity."""

from __future__ import annotations

import difflib
import json

import nbformat
import pytest
from nbformat import v4

from editspec.reference import EditSpec, NotebookResult, ToolError
from editspec.reference.tools._notebook import detect_style


def _notebook(minor: int = 5) -> nbformat.NotebookNode:
    nb = v4.new_notebook()
    nb.nbformat_minor = minor
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        v4.new_markdown_cell(
            "# Title ✓\n![fig](attachment:fig.png)",
            attachments={"fig.png": {"image/png": "iVBORw0KGgo="}},
        ),
        v4.new_code_cell(
            "x = 1\nx",
            execution_count=4,
            outputs=[
                v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=4),
                v4.new_output(
                    "display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}
                ),
            ],
        ),
        v4.new_raw_cell("raw text"),
    ]
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    return nb


def _put(root, name: str, text: str, session) -> None:
    (root / name).write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    session.read(name, max_bytes=1 << 30)


def _changed(before: str, after: str) -> tuple[str, str]:
    """The one removed and the one added line of a one-line change."""
    lines = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert len(lines) == 2, lines
    return lines[0], lines[1]


JUPYTER = nbformat.writes(_notebook()) + "\n"
DOCUMENT = json.loads(JUPYTER)


@pytest.mark.parametrize(
    "text",
    [
        JUPYTER,
        JUPYTER[:-1],  # no trailing newline
        json.dumps(DOCUMENT, indent=2, ensure_ascii=True) + "\n",
        json.dumps(DOCUMENT, indent=4, ensure_ascii=False, sort_keys=True),
        json.dumps(DOCUMENT, indent="\t", ensure_ascii=False) + "\n",
        json.dumps(DOCUMENT, indent=0),
        json.dumps(DOCUMENT),
        json.dumps(DOCUMENT, separators=(",", ":")),
        JUPYTER.replace("\n", "\r\n"),
    ],
    ids=[
        "jupyter",
        "no-newline",
        "indent2-ascii",
        "indent4",
        "tabs",
        "indent0",
        "one-line",
        "compact",
        "crlf",
    ],
)
def test_every_layout_is_reproduced_and_only_the_cell_changes(root, session, text):
    _put(root, "n.ipynb", text, session)
    result = session.edit_notebook("n.ipynb", index=2, source="changed raw")
    after = (root / "n.ipynb").read_bytes().decode("utf-8")
    assert not any("layout" in warning for warning in result.warnings)
    restored = json.loads(after)
    assert restored["cells"][2]["source"] == ["changed raw"]
    assert {**restored, "cells": []} == {**DOCUMENT, "cells": []}
    assert after.endswith("\n") == text.endswith("\n")
    assert ("\r\n" in after) == ("\r\n" in text)
    if "\n" in text.rstrip("\n"):  # a multi-line layout: one line out, one line in
        removed, added = _changed(text, after)
        assert "raw text" in removed[1:] and "changed raw" in added[1:]


def test_a_layout_no_style_reproduces_is_written_in_jupyters_with_a_warning(root, session):
    odd = JUPYTER.replace('"cells": [', '"cells":    [', 1)
    _put(root, "n.ipynb", odd, session)
    result = session.edit_notebook("n.ipynb", index=2, source="changed raw")
    assert any("layout" in warning for warning in result.warnings)
    assert (root / "n.ipynb").read_text(encoding="utf-8") == JUPYTER.replace(
        '"raw text"', '"changed raw"'
    )


def test_detect_style_of_jupyters_layout():
    style = detect_style(JUPYTER, DOCUMENT)
    assert (style.indent, style.separators, style.ensure_ascii) == (1, (",", ": "), False)
    assert style.exact and style.sorted_keys and style.trailing_newline


def test_replace_clears_outputs_keeps_id_metadata_and_reports(root, session):
    nb = _notebook()
    nb.cells[1].metadata["tags"] = ["keep"]
    _put(root, "n.ipynb", nbformat.writes(nb) + "\n", session)
    result = session.edit_notebook("n.ipynb", cell_id=nb.cells[1].id, source="y = 2\ny")
    assert isinstance(result, NotebookResult)
    cell = json.loads((root / "n.ipynb").read_text())["cells"][1]
    assert cell["outputs"] == [] and cell["execution_count"] is None
    assert cell["id"] == nb.cells[1].id and cell["metadata"] == {"tags": ["keep"]}
    assert cell["source"] == ["y = 2\n", "y"]
    assert (result.mode, result.index, result.cell_type) == ("replace", 1, "code")
    assert result.cell_id == nb.cells[1].id
    assert '-    "x = 1\\n",' in result.diff
    assert result.operation == "notebook"


def test_markdown_replace_keeps_attachments_and_code_conversion_drops_them(root, session):
    nb = _notebook()
    _put(root, "n.ipynb", nbformat.writes(nb) + "\n", session)
    session.edit_notebook("n.ipynb", index=0, source="# New title\n![fig](attachment:fig.png)")
    cell = json.loads((root / "n.ipynb").read_text())["cells"][0]
    assert cell["attachments"] == {"fig.png": {"image/png": "iVBORw0KGgo="}}
    result = session.edit_notebook("n.ipynb", index=0, source="print(1)", cell_type="code")
    cell = json.loads((root / "n.ipynb").read_text())["cells"][0]
    assert "attachments" not in cell and cell["outputs"] == []
    assert any("attachments" in warning for warning in result.warnings)
    nbformat.validate(json.loads((root / "n.ipynb").read_text()))


def test_string_sources_stay_strings(root, session):
    document = json.loads(JUPYTER)
    for cell in document["cells"]:
        cell["source"] = "".join(cell["source"])
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    _put(root, "n.ipynb", text, session)
    session.edit_notebook("n.ipynb", index=1, source="a = 1\nb = 2")
    session.edit_notebook("n.ipynb", mode="insert", source="c\nd", cell_type="markdown")
    cells = json.loads((root / "n.ipynb").read_text())["cells"]
    assert cells[1]["source"] == "a = 1\nb = 2"
    assert cells[-1]["source"] == "c\nd"


def test_inserted_cells_follow_the_files_key_order(root, session):
    document = json.loads(JUPYTER)
    order = ("source", "metadata", "cell_type", "id", "outputs", "execution_count", "attachments")
    document["cells"] = [
        {key: cell[key] for key in order if key in cell} for cell in document["cells"]
    ]
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    _put(root, "n.ipynb", text, session)
    session.edit_notebook("n.ipynb", index=3, mode="insert", source="z = 0", cell_type="code")
    new_cell = json.loads((root / "n.ipynb").read_text())["cells"][3]
    assert list(new_cell) == ["source", "metadata", "cell_type", "id", "outputs", "execution_count"]


def test_a_new_cell_of_a_type_the_file_lacks_takes_nbformats_key_order(root, session):
    document = json.loads(JUPYTER)
    document["cells"] = [{"source": [], "cell_type": "raw", "id": "r1", "metadata": {}}]
    _put(root, "n.ipynb", json.dumps(document, indent=1) + "\n", session)
    session.edit_notebook("n.ipynb", mode="insert", source="x = 1")
    new_cell = json.loads((root / "n.ipynb").read_text())["cells"][1]
    assert list(new_cell) == ["cell_type", "execution_count", "id", "metadata", "outputs", "source"]


def test_insert_into_an_empty_notebook_and_at_the_end(root, session):
    nb = v4.new_notebook()
    _put(root, "e.ipynb", nbformat.writes(nb) + "\n", session)
    first = session.edit_notebook("e.ipynb", mode="insert", source="a")
    last = session.edit_notebook("e.ipynb", mode="insert", source="b", cell_type="raw")
    cells = json.loads((root / "e.ipynb").read_text())["cells"]
    assert [cell["cell_type"] for cell in cells] == ["code", "raw"]
    assert (first.index, last.index) == (0, 1)
    assert first.cell_id and last.cell_id and first.cell_id != last.cell_id


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"mode": "move", "index": 0, "source": "x"}, "INVALID_ARGUMENT"),
        ({"index": 0, "cell_id": "abc", "source": "x"}, "INVALID_ARGUMENT"),
        ({"source": "x"}, "INVALID_ARGUMENT"),
        ({"index": -1, "source": "x"}, "INVALID_ARGUMENT"),
        ({"index": True, "source": "x"}, "INVALID_ARGUMENT"),
        ({"index": 0}, "INVALID_ARGUMENT"),
        ({"index": 0, "source": 3}, "INVALID_ARGUMENT"),
        ({"index": 0, "mode": "delete", "source": "x"}, "INVALID_ARGUMENT"),
        ({"index": 0, "source": "x", "cell_type": "heading"}, "INVALID_ARGUMENT"),
        ({"cell_id": "", "source": "x"}, "INVALID_ARGUMENT"),
        ({"index": 0, "source": "\ud800"}, "INVALID_ARGUMENT"),
        ({"index": 0, "source": "x", "expected_sha256": "nothex"}, "INVALID_ARGUMENT"),
        ({"index": 0, "source": "x", "message_id": ""}, "INVALID_ARGUMENT"),
        ({"index": 9, "mode": "insert", "source": "x"}, "NOT_FOUND"),
        ({"cell_id": "missing", "mode": "insert", "source": "x"}, "NOT_FOUND"),
        ({"index": 2, "source": "raw text"}, "NO_CHANGE"),
    ],
)
def test_bad_arguments_change_nothing(root, session, kwargs, code):
    _put(root, "n.ipynb", JUPYTER, session)
    with pytest.raises(ToolError) as caught:
        session.edit_notebook("n.ipynb", **kwargs)
    assert caught.value.code == code
    assert (root / "n.ipynb").read_text(encoding="utf-8") == JUPYTER


def test_cell_ids_need_nbformat_4_5(root, session):
    _put(root, "old.ipynb", nbformat.writes(_notebook(minor=4)) + "\n", session)
    with pytest.raises(ToolError) as caught:
        session.edit_notebook("old.ipynb", cell_id="abc", source="x")
    assert caught.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (
            json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "metadata": {}}),
            "UNSUPPORTED",
        ),
        (json.dumps([1, 2]), "INVALID_ARGUMENT"),
        ("not json", "INVALID_ARGUMENT"),
        (b"\x00\x01\x02binary", "BINARY"),
    ],
)
def test_what_is_not_a_notebook_4(root, session, content, code):
    _put(root, "n.ipynb", content, session)
    with pytest.raises(ToolError) as caught:
        session.edit_notebook("n.ipynb", index=0, source="x")
    assert caught.value.code == code


def test_missing_directory_and_other_suffix(root, session):
    (root / "dir.ipynb").mkdir()
    (root / "a.py").write_text("x\n")
    for path, code in (
        ("missing.ipynb", "NOT_FOUND"),
        ("dir.ipynb", "IS_A_DIRECTORY"),
        ("a.py", "INVALID_ARGUMENT"),
        ("../out.ipynb", "OUTSIDE_WORKSPACE"),
    ):
        with pytest.raises(ToolError) as caught:
            session.edit_notebook(path, index=0, source="x")
        assert caught.value.code == code, path


def test_expected_sha256_stands_in_for_a_read_and_stale_is_refused(root, workspace):
    (root / "n.ipynb").write_text(JUPYTER, encoding="utf-8")
    import hashlib

    digest = hashlib.sha256(JUPYTER.encode()).hexdigest()
    session = workspace.session("cas")
    session.edit_notebook("n.ipynb", index=2, source="v2", expected_sha256=digest)
    with pytest.raises(ToolError) as caught:
        session.edit_notebook("n.ipynb", index=2, source="v3", expected_sha256=digest)
    assert caught.value.code == "STALE"


def test_plain_edit_of_a_notebook_points_to_edit_notebook(root, session):
    _put(root, "n.ipynb", JUPYTER, session)
    with pytest.raises(ToolError) as caught:
        session.edit("n.ipynb", [EditSpec("raw text", "other")])
    assert caught.value.code == "UNSUPPORTED"
    assert "edit_notebook" in caught.value.message


def test_a_symlinked_notebook_is_edited_through_its_link(root, session):
    (root / "real.ipynb").write_text(JUPYTER, encoding="utf-8")
    (root / "link.ipynb").symlink_to("real.ipynb")
    session.read("link.ipynb", max_bytes=1 << 30)
    session.edit_notebook("link.ipynb", index=2, source="through the link")
    assert (root / "link.ipynb").is_symlink()
    assert "through the link" in (root / "real.ipynb").read_text()


def test_the_mode_bits_are_kept_and_no_temp_file_is_left(root, session):
    path = root / "n.ipynb"
    path.write_text(JUPYTER, encoding="utf-8")
    path.chmod(0o640)
    session.read("n.ipynb", max_bytes=1 << 30)
    session.edit_notebook("n.ipynb", index=2, source="x")
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in root.iterdir()) == ["n.ipynb"]
