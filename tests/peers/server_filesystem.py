"""Run the conformance suite against @modelcontextprotocol/server-filesystem (npm) over MCP.

    python tests/peers/server_filesystem.py [--report out.md] [--update-expectations]
                                            [-- EXTRA editspec check ARGS]

The server (a pinned version) is installed once with npm into a cache directory
(``$EDITSPEC_PEER_CACHE``, else ``$XDG_CACHE_HOME/editspec/peers``, else
``~/.cache/editspec/peers``), then started by the MCP adapter for every clause with the
clause's workspace root as its only allowed directory (``spec/mcp_maps/
server-filesystem.toml``). Its known failures are ``spec/expectations/
server-filesystem.toml``: the run passes while the server behaves as recorded, and fails
when a clause changes outcome. Without node and npm on PATH it prints why and exits 0
(tox -e peer-mcp-filesystem).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "@modelcontextprotocol/server-filesystem"
VERSION = "2026.8.31"
REPOSITORY = Path(__file__).resolve().parents[2]
MAP = REPOSITORY / "spec" / "mcp_maps" / "server-filesystem.toml"
EXPECTATIONS = REPOSITORY / "spec" / "expectations" / "server-filesystem.toml"


def cache_dir() -> Path:
    explicit = os.environ.get("EDITSPEC_PEER_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "editspec" / "peers"


def install(prefix: Path) -> Path:
    """The server's entry script, installed with npm into ``prefix`` if not there yet."""
    entry = prefix / "node_modules" / PACKAGE / "dist" / "index.js"
    if not entry.is_file():
        prefix.mkdir(parents=True, exist_ok=True)
        command = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                   "--loglevel=error", f"{PACKAGE}@{VERSION}"]  # fmt: skip
        print("installing:", " ".join(command), flush=True)
        subprocess.run(command, check=True)
    return entry


def scrub(text: str) -> str:
    """Reasons without the temporary paths of one run."""
    text = re.sub(r"\beditspec(\.\w+)+\.(?=\w+:)", "", text)
    return re.sub(r"/\S*/(ws|outside|state)\b", r"<\1>", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="append", default=[], help="also write .md/.json")
    parser.add_argument(
        "--update-expectations",
        action="store_true",
        help=f"rewrite {EXPECTATIONS.name} from this run's failures instead of checking them",
    )
    parser.add_argument("-n", dest="workers", default="2", help="pytest-xdist workers")
    parser.add_argument("extra", nargs="*", help="more arguments for editspec check")
    args = parser.parse_args(argv)

    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        print(f"peer-mcp-filesystem: skipped: {' and '.join(missing)} not found on PATH "
              f"(needed to install and run {PACKAGE})")  # fmt: skip
        return 0
    entry = install(cache_dir() / f"server-filesystem-{VERSION}")
    command = f"node {entry} {{root}}"
    with tempfile.TemporaryDirectory(prefix="editspec-peer-") as scratch:
        run_report = Path(scratch) / "run.json"
        check = [sys.executable, "-m", "editspec.spec.cli", "check", "--mcp", command]
        check += ["--mcp-map", str(MAP), "--report", str(run_report), "-n", args.workers]
        for path in args.report:
            check += ["--report", path]
        if not args.update_expectations:
            check += ["--expectations", str(EXPECTATIONS)]
        status = subprocess.run([*check, *args.extra]).returncode
        if args.update_expectations and run_report.exists():
            from editspec.spec import expectations, report

            found = [
                expectations.Expectation(clause_id=item.clause_id, reason=scrub(item.reason))
                for item in expectations.from_report(report.load(str(run_report)))
            ]
            header = (
                f"Known failures of {PACKAGE} {VERSION} (the MCP project's reference filesystem "
                "server),\nthrough spec/mcp_maps/server-filesystem.toml. Regenerate with\n"
                "python tests/peers/server_filesystem.py --update-expectations"
            )
            EXPECTATIONS.write_text(expectations.dumps(found, header=header), encoding="utf-8")
            print(f"{len(found)} expectation(s) written to {EXPECTATIONS}")
            return 0
    return status


if __name__ == "__main__":
    raise SystemExit(main())
