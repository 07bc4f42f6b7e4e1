"""The conformance matrix and the peer catalog: the page in a real headless browser, the
Markdown and JSON forms, the catalog's validation and the expectations comparison."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from editspec.spec import report
from editspec.spec.peers import catalog as peer_catalog
from editspec.spec.peers import matrix
from editspec.spec.peers.cli import (
    compare_with_expectations,
    explore_lacks,
    explore_scenario,
    main_peers,
    timing_lines,
    timing_text,
    write_matrix,
)


def _record(clause_id, outcome, kind=None, level="MUST"):
    return {
        "nodeid": f"t::{clause_id}",
        "clause": {"id": clause_id, "level": level, "area": clause_id.split("-")[0],
                   "profile": "Core", "requires": ["read"], "text": f"text of {clause_id}"},
        "outcome": outcome,
        "kind": kind,
        "message": f"{outcome} {kind or ''} <b>message</b> of {clause_id}",
        "duration": 0.1,
    }  # fmt: skip


def _report(name, records):
    return report.build(
        records,
        implementation={"name": name, "capabilities": ["confinement", "edit", "read", "write"]},
        catalog_hash="0" * 64,
        expectations=None,
        duration=1.0,
        started="now",
        workers=0,
    )


ENTRIES = [
    {
        "name": "careful",
        "title": "Careful tool",
        "version": "1.0",
        "command": "editspec peers run careful",
        "report": _report("careful", [
            _record("PATH-001", "PASS"), _record("PATH-008", "PASS"),
            _record("READ-001", "PASS"), _record("READ-027", "PASS", level="SHOULD"),
        ]),
    },
    {
        "name": "careless",
        "title": "Careless tool",
        "version": "0.1",
        "command": "editspec peers run careless",
        "timing": {"load_average": 2.0, "steps": {"install": 30.0, "suite": 120.0},
                   "total": 150.0},
        "report": _report("careless", [
            _record("PATH-001", "PASS"), _record("PATH-008", "FAIL", "unsafe"),
            _record("READ-001", "FAIL", "missing-field"),
            _record("READ-027", "FAIL", "wrong-behaviour", level="SHOULD"),
        ]),
    },
]  # fmt: skip


def test_the_matrix_record_and_markdown_show_every_cell():
    built = matrix.build(ENTRIES)
    assert built["format"] == "editspec-matrix/1"
    assert [c["id"] for c in built["clauses"]] == ["PATH-001", "PATH-008", "READ-001", "READ-027"]
    assert built["cells"]["careless"]["PATH-008"] == {
        "outcome": "FAIL",
        "kind": "unsafe",
        "message": "FAIL unsafe <b>message</b> of PATH-008",
    }
    markdown = matrix.render_markdown(built)
    assert "| Careful tool | 1.0 | Core | none | - | - |" in markdown
    assert (
        "| Careless tool | 0.1 | - | unsafe 1, missing-field 1 | - | "
        "2.5 min: install 0.5, suite 2.0 |"
    ) in markdown
    assert "| PATH-008 | FAIL unsafe | FAIL unsafe &lt;b>message&lt;/b> of PATH-008 |" in markdown
    html = matrix.render_html(built)
    assert "<b>message</b>" not in html  # messages are escaped
    assert "http://" not in html and "https://" not in html and "src=" not in html


def test_write_matrix_writes_three_forms(tmp_path):
    paths = write_matrix(ENTRIES, tmp_path)
    assert [p.name for p in paths] == ["matrix.html", "matrix.md", "matrix.json"]
    data = json.loads((tmp_path / "matrix.json").read_text())
    assert [row["name"] for row in data["implementations"]] == ["careful", "careless"]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _dump_dom(browser: str, url: str, profile: Path) -> str:
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=3000",
         "--dump-dom", url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _visible_rows(dom: str) -> list[str]:
    rows = re.findall(r'<tr class="clause-row( hidden)?"[^>]*data-clause="([A-Z]+-\d+)"', dom)
    return [clause for hidden, clause in rows if not hidden]


def test_the_page_shows_every_implementation_and_filters_in_a_real_browser(tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium); .ci/run installs it")
    write_matrix(ENTRIES, tmp_path)
    page = (tmp_path / "matrix.html").resolve().as_uri()
    dom = _dump_dom(browser, page, tmp_path / "profile")
    assert "Careful tool" in dom and "Careless tool" in dom
    assert _visible_rows(dom) == ["PATH-001", "PATH-008", "READ-001", "READ-027"]
    assert 'data-shown="4"' in dom
    unsafe = _dump_dom(browser, page + "#kind=unsafe", tmp_path / "profile")
    assert _visible_rows(unsafe) == ["PATH-008"]
    should = _dump_dom(browser, page + "#level=SHOULD", tmp_path / "profile")
    assert _visible_rows(should) == ["READ-027"]
    careful_fails = _dump_dom(
        browser, page + "#outcome=FAIL&implementation=careful", tmp_path / "profile"
    )
    assert _visible_rows(careful_fails) == []  # the careful tool fails nothing
    # a screenshot for a person to look at (kept out of the repository)
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", f"--user-data-dir={tmp_path / 'profile'}",
         f"--screenshot={tmp_path / 'matrix.png'}", "--window-size=1400,900", page],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert (tmp_path / "matrix.png").stat().st_size > 1000


def test_the_catalog_is_valid_and_refuses_mistakes(tmp_path):
    peers = peer_catalog.load_catalog()
    assert {"editspec", "server-filesystem", "server-filesystem-2025.3.28"} <= set(peers)
    for peer in peers.values():
        if peer.kind == "mcp":
            assert peer.map_path is not None and peer.map_path.is_file(), peer.name
    bad = tmp_path / "catalog.toml"
    bad.write_text('[x]\ntitle = "x"\nversion = "1"\nkind = "mcp"\n')
    with pytest.raises(peer_catalog.CatalogError, match="needs a command and a map"):
        peer_catalog.load_catalog(bad)
    bad.write_text('[x]\ntitle = "x"\nversion = "1"\nkind = "mcp"\ncolour = "red"\n')
    with pytest.raises(peer_catalog.CatalogError, match="unknown keys"):
        peer_catalog.load_catalog(bad)


def test_a_run_is_compared_with_its_expectations(tmp_path):
    expectations = tmp_path / "tool.toml"
    expectations.write_text('[PATH-001]\nreason = "thought broken"\n\n[READ-001]\nreason = "x"\n')
    built = ENTRIES[1]["report"]
    problems = compare_with_expectations(built, expectations)
    assert any(p.startswith("PATH-001 is listed") for p in problems)  # now passes
    assert any(p.startswith("PATH-008 FAIL unsafe is not listed") for p in problems)
    assert not any(p.startswith("READ-001") for p in problems)  # listed, still failing
    assert not any(p.startswith("READ-027") for p in problems)  # a SHOULD clause


def test_the_times_of_a_catalog_run_are_listed_with_their_total():
    timed = {"load_average": 3.5, "steps": {"install": 65.0, "suite": 130.4}, "total": 195.4}
    assert timing_text(timed) == "3m15s (install 1m05s, suite 2m10s; load average 3.5 at the start)"
    entries = [
        {"name": "one", "timing": timed},
        {"name": "two", "timing": {"steps": {"suite": 40.0}, "total": 40.0}},
        {"name": "failed", "timing": None},
    ]
    lines = timing_lines(entries)
    assert lines[0] == "times:"
    assert lines[2].split() == ["two", "40s", "(suite", "40s)"]
    assert lines[-1].split() == ["total", "3m55s", "(2", "of", "3", "entries)"]
    assert timing_lines([{"name": "failed", "timing": None}]) == []


def test_the_crash_explorer_runs_where_its_scenario_fits(tmp_path):
    peers = peer_catalog.load_catalog()
    assert explore_scenario(peers["editspec-serve"]) == "single-write"
    # server-filesystem has no expected_sha256 (cas), which the single write passes: it
    # is crashed in a write after a read instead
    assert explore_lacks(peers["server-filesystem"]) == {"single-write": ["cas"], "plain-write": []}
    assert explore_scenario(peers["server-filesystem"]) == "plain-write"
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "server-filesystem.json").write_text(json.dumps(ENTRIES[1]["report"]))
    (reports / "server-filesystem.explore.txt").write_text(
        "not run\nsingle-write needs cas, which server-filesystem.toml does not declare\n"
    )
    assert main_peers(["matrix", "server-filesystem", "--reuse", "--out", str(tmp_path)]) == 0
    markdown = (tmp_path / "matrix.md").read_text()
    assert "crash explorer: not run (single-write needs cas" in markdown
