"""The conformance matrix: implementations x clauses, from their JSON reports.

``build(entries)`` turns one report per implementation into the matrix record (format
``editspec-matrix/1``); ``render_html`` writes it as one static page (no external asset,
works from ``file://``: the data, the style and the script are inline), filterable by
level, outcome, kind and implementation, every cell showing its message;
``render_markdown`` is the summary and the failures as Markdown. The page's filters live
in the URL's fragment (``matrix.html#level=MUST&outcome=FAIL&kind=unsafe``), so a
filtered view can be linked to, and a headless browser can be shown one.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from editspec.contract import AREAS
from editspec.spec.report import FAIL, KINDS, OUTCOMES, outcome_label, profile_lines

MATRIX_FORMAT = "editspec-matrix/1"


def build(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The matrix of ``entries``: each ``{"name", "title", "version", "command", "report",
    "explore"}`` with ``report`` an editspec JSON report (or None when the run failed)."""
    implementations = []
    clauses: dict[str, dict[str, Any]] = {}
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    catalog_hashes = set()
    for entry in entries:
        report = entry.get("report")
        name = str(entry["name"])
        row: dict[str, Any] = {
            "name": name,
            "title": entry.get("title", name),
            "version": entry.get("version", ""),
            "command": entry.get("command", ""),
            "notes": entry.get("notes", ""),
            "explore": entry.get("explore"),
            "timing": entry.get("timing"),
            "error": entry.get("error"),
        }
        if report is not None:
            catalog_hashes.add(report.get("catalog_sha256"))
            row["capabilities"] = report["implementation"].get("capabilities", [])
            row["outcomes"] = report["summary"]["outcomes"]
            row["failure_kinds"] = report["summary"].get("failure_kinds", {})
            row["must_failures"] = report["summary"]["must_failures"]
            row["profiles"] = dict(profile_lines(report))
            cells[name] = {}
            for record in report["clauses"]:
                clauses.setdefault(
                    record["id"],
                    {
                        "id": record["id"],
                        "level": record["level"],
                        "area": record["area"],
                        "profile": record["profile"],
                        "text": record["text"],
                    },
                )
                cells[name][record["id"]] = {
                    "outcome": record["outcome"],
                    "kind": record.get("kind"),
                    "message": (record.get("message") or "")[:600],
                }
        implementations.append(row)
    ordered = sorted(clauses.values(), key=_clause_order)
    return {
        "format": MATRIX_FORMAT,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "catalog_sha256": sorted(h for h in catalog_hashes if h),
        "implementations": implementations,
        "clauses": ordered,
        "cells": cells,
    }


def _clause_order(record: Mapping[str, Any]) -> tuple[int, int]:
    area = record["area"]
    index = AREAS.index(area) if area in AREAS else len(AREAS)
    return (index, int(str(record["id"]).rsplit("-", 1)[1]))


def _kinds_text(row: Mapping[str, Any], level: str) -> str:
    counts = (row.get("failure_kinds") or {}).get(level) or {}
    parts = [f"{kind} {n}" for kind, n in counts.items() if n]
    return ", ".join(parts) if parts else "none"


def render_markdown(matrix: Mapping[str, Any]) -> str:
    lines = [
        "# Conformance matrix",
        "",
        f"Generated {matrix['generated']}.",
        "",
        "| implementation | version | profiles met | MUST failures by kind | crash explorer "
        "| run time |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in matrix["implementations"]:
        if row.get("error"):
            lines.append(
                f"| {row['title']} | {row['version']} | run failed: {row['error']} | | | "
                f"{_time_text(row)} |"
            )
            continue
        met = [name for name, cells in (row.get("profiles") or {}).items() if _met(cells)]
        explore = row.get("explore") or {}
        lines.append(
            f"| {row['title']} | {row['version']} | {', '.join(met) or '-'} | "
            f"{_kinds_text(row, 'MUST')} | {explore.get('summary', '-')} | {_time_text(row)} |"
        )
    lines += ["", "## MUST clauses not met", ""]
    for row in matrix["implementations"]:
        failing = [
            (clause, matrix["cells"][row["name"]][clause["id"]])
            for clause in matrix["clauses"]
            if row["name"] in matrix["cells"]
            and clause["level"] == "MUST"
            and matrix["cells"][row["name"]].get(clause["id"], {}).get("outcome")
            in (FAIL, "ERROR", "XPASS", "XFAIL")
        ]
        lines += [f"### {row['title']} {row['version']}", ""]
        if not failing:
            lines += ["None.", ""]
            continue
        lines += ["| clause | outcome | message |", "| --- | --- | --- |"]
        for clause, cell in failing:
            message = cell["message"].splitlines()[0][:160] if cell["message"] else ""
            message = message.replace("|", "\\|").replace("<", "&lt;")
            lines.append(f"| {clause['id']} | {outcome_label(cell)} | {message} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def _time_text(row: Mapping[str, Any]) -> str:
    """The run's wall time in minutes and its steps (``12.5 min: install 1.0, suite 11.5``)."""
    timing = row.get("timing") or {}
    if "total" not in timing:
        return "-"
    steps = ", ".join(f"{step} {s / 60:.1f}" for step, s in (timing.get("steps") or {}).items())
    return f"{timing['total'] / 60:.1f} min: {steps}"


def _met(cells: str) -> bool:
    """A profile cell of the report (``MUST 31/31, SHOULD 4/5 ...``) whose MUSTs all pass."""
    if "not declared" in cells or "MUST" not in cells:
        return False
    head = cells.split("MUST ", 1)[1].split(" ", 1)[0].rstrip(",")
    passed, total = head.split("/")
    return passed == total


_STYLE = """
body { font: 13px/1.35 system-ui, sans-serif; margin: 1em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .4em; }
.filters { position: sticky; top: 0; background: #fff; padding: .5em 0; z-index: 2;
  border-bottom: 1px solid #ddd; }
.filters label { margin-right: 1em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ddd; padding: 2px 4px; vertical-align: top; }
thead th { position: sticky; top: 2.6em; background: #f6f6f6; z-index: 1; }
td.clause { white-space: nowrap; font-family: monospace; }
td.text { max-width: 28em; }
tr.area th { background: #eef; text-align: left; }
.cell { min-width: 8em; max-width: 18em; }
.cell .msg { display: block; color: #555; font-size: 11px; max-height: 4.2em; overflow: hidden; }
.PASS { background: #e7f6e7; } .FAIL { background: #fde2e2; } .ERROR { background: #f4d6f4; }
.UNSUPPORTED, .SKIPPED, .WITHDRAWN { background: #f3f3f3; color: #777; }
.XFAIL { background: #fff1d6; } .XPASS { background: #ffd9b3; }
.INCONCLUSIVE { background: #e6eefc; }
.kind-unsafe { background: #f8b4b4; font-weight: 600; }
tr.hidden, th.hidden, td.hidden { display: none; }
.summary td { font-size: 12px; }
"""

_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('matrix-data').textContent);
  var controls = ['level', 'outcome', 'kind', 'implementation'];
  function current() {
    var state = {};
    controls.forEach(function (name) {
      state[name] = document.getElementById('filter-' + name).value;
    });
    return state;
  }
  function fromHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ''));
    controls.forEach(function (name) {
      var value = params.get(name);
      if (value !== null) { document.getElementById('filter-' + name).value = value; }
    });
  }
  function toHash(state) {
    var params = new URLSearchParams();
    controls.forEach(function (name) { if (state[name]) { params.set(name, state[name]); } });
    history.replaceState(null, '', '#' + params.toString());
  }
  function apply() {
    var state = current();
    var columns = document.querySelectorAll('[data-impl]');
    columns.forEach(function (node) {
      var hidden = state.implementation && node.dataset.impl !== state.implementation;
      node.classList.toggle('hidden', !!hidden);
    });
    var shown = 0;
    document.querySelectorAll('tr.clause-row').forEach(function (row) {
      var ok = !state.level || row.dataset.level === state.level;
      if (ok && (state.outcome || state.kind)) {
        ok = Array.prototype.some.call(row.querySelectorAll('td.cell'), function (cell) {
          if (cell.classList.contains('hidden')) { return false; }
          return (!state.outcome || cell.dataset.outcome === state.outcome) &&
                 (!state.kind || cell.dataset.kind === state.kind);
        });
      }
      row.classList.toggle('hidden', !ok);
      if (ok) { shown += 1; }
    });
    document.querySelectorAll('tr.area').forEach(function (header) {
      var area = header.dataset.area;
      var any = document.querySelector('tr.clause-row[data-area="' + area + '"]:not(.hidden)');
      header.classList.toggle('hidden', !any);
    });
    document.getElementById('shown').textContent = shown + ' of ' + data.clauses.length +
      ' clauses shown';
    document.body.dataset.shown = String(shown);
  }
  controls.forEach(function (name) {
    document.getElementById('filter-' + name).addEventListener('change', function () {
      toHash(current()); apply();
    });
  });
  window.addEventListener('hashchange', function () { fromHash(); apply(); });
  fromHash();
  apply();
})();
"""


def _options(values: Sequence[str], label: str) -> str:
    items = [f'<option value="">{html.escape(label)}</option>']
    items += [f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values]
    return "".join(items)


def render_html(matrix: Mapping[str, Any]) -> str:
    """One self-contained page: no external asset, works from ``file://``."""
    rows = [row for row in matrix["implementations"] if row["name"] in matrix["cells"]]
    esc = html.escape
    head = "".join(
        f'<th data-impl="{esc(row["name"])}">{esc(row["title"])}<br>'
        f"<small>{esc(str(row['version']))}</small></th>"
        for row in rows
    )
    summary = "".join(
        f'<td data-impl="{esc(row["name"])}">MUST failures: {row.get("must_failures", "?")}'
        f"<br>{esc(_kinds_text(row, 'MUST'))}"
        f"<br><small>{esc((row.get('explore') or {}).get('summary', ''))}</small>"
        f"<br><small>run time {esc(_time_text(row))}</small></td>"
        for row in rows
    )
    body: list[str] = []
    area = None
    for clause in matrix["clauses"]:
        if clause["area"] != area:
            area = clause["area"]
            body.append(
                f'<tr class="area" data-area="{esc(area)}"><th colspan="{3 + len(rows)}">'
                f"{esc(area)}</th></tr>"
            )
        cells = []
        for row in rows:
            cell = matrix["cells"][row["name"]].get(clause["id"])
            if cell is None:
                cells.append(f'<td class="cell" data-impl="{esc(row["name"])}"></td>')
                continue
            kind = cell.get("kind") or ""
            classes = f"cell {cell['outcome']}" + (f" kind-{kind}" if kind else "")
            cells.append(
                f'<td class="{esc(classes)}" data-impl="{esc(row["name"])}" '
                f'data-outcome="{esc(cell["outcome"])}" data-kind="{esc(kind)}" '
                f'title="{esc(cell["message"])}">{esc(outcome_label(cell))}'
                f'<span class="msg">{esc(cell["message"][:200])}</span></td>'
            )
        body.append(
            f'<tr class="clause-row" data-level="{esc(clause["level"])}" '
            f'data-area="{esc(clause["area"])}" data-clause="{esc(clause["id"])}">'
            f'<td class="clause">{esc(clause["id"])}</td><td>{esc(clause["level"])}</td>'
            f'<td class="text">{esc(clause["text"])}</td>{"".join(cells)}</tr>'
        )
    names = [str(row["name"]) for row in rows]
    data = json.dumps({"clauses": [c["id"] for c in matrix["clauses"]], "names": names})
    filters = (
        '<div class="filters">'
        f'<label>level <select id="filter-level">{_options(["MUST", "SHOULD", "MAY"], "all")}'
        "</select></label>"
        f'<label>outcome <select id="filter-outcome">{_options(list(OUTCOMES), "any")}'
        "</select></label>"
        f'<label>kind <select id="filter-kind">{_options(list(KINDS), "any")}</select></label>'
        f'<label>implementation <select id="filter-implementation">{_options(names, "all")}'
        '</select></label><span id="shown"></span></div>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>editspec conformance matrix</title>"
        f"<style>{_STYLE}</style></head><body>"
        "<h1>editspec conformance matrix</h1>"
        f"<p>Generated {esc(matrix['generated'])}: {len(rows)} implementations, "
        f"{len(matrix['clauses'])} clauses. Each cell is the clause's outcome for that "
        "implementation, with its message.</p>"
        f"{filters}<table><thead><tr><th>clause</th><th>level</th><th>text</th>{head}</tr>"
        f'<tr class="summary"><td colspan="3">summary</td>{summary}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
        f'<script type="application/json" id="matrix-data">{_script_safe(data)}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def _script_safe(text: str) -> str:
    return text.replace("</", "<\\/")
