"""The ``editspec`` command: run the conformance suite, manage expectations, print the catalog.

    editspec check [--driver MOD:FACTORY | --mcp "CMD" [--mcp-map FILE]
                    | --mcp-url URL --mcp-root DIR [--mcp-map FILE]]
                   [--report out.json|out.md]... [--expectations FILE] [-k EXPR] [-n N]
    editspec expectations update REPORT.json [-o FILE]
    editspec catalog [--write [FILE]] [--check [FILE]] [--power [FILE]]
    editspec audit [-k EXPR] [-n N]   (positive controls and minimal requirements)
    editspec replay ... | explore ... | serve ...

Exit codes of ``check``: 0 when every MUST clause that ran is met, 1 when one is FAIL,
ERROR or XPASS, 2 for a usage error or a suite that could not run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import editspec.spec
from editspec.spec import audit, catalog, expectations, report
from editspec.spec.report import suite_version

EXIT_OK = 0
EXIT_MUST_FAILED = 1
EXIT_USAGE = 2

# Subcommands owned by other packages: (module, function), imported only when used.
_DELEGATED: dict[str, tuple[str, str]] = {
    "replay": ("editspec.fault_injection.replay", "main_replay"),
    "explore": ("editspec.fault_injection.explore", "main_explore"),
    "serve": ("editspec.spec.serve", "main"),
    "peers": ("editspec.spec.peers.cli", "main_peers"),
}


def _package_dir() -> Path:

    return Path(editspec.spec.__file__).resolve().parent


def _plugin_is_autoloaded() -> bool:
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    from importlib.metadata import entry_points

    return any(ep.value == "editspec.spec.plugin" for ep in entry_points(group="pytest11"))


def pytest_arguments(args: argparse.Namespace, json_report: Path) -> list[str]:
    """The pytest command line for ``check`` (run on the installed suite package)."""
    package = _package_dir()
    argv = [
        str(package),
        "-c",
        os.devnull,  # the caller's own pytest configuration does not apply
        "--rootdir",
        str(package),
        "--import-mode=importlib",
        "-p",
        "no:cacheprovider",
        "--editspec-report",
        str(json_report),
    ]
    if not _plugin_is_autoloaded():
        argv += ["-p", "editspec.spec.plugin"]
        if args.numprocesses:
            argv += ["-p", "xdist.plugin"]
    for path in args.report:
        argv += ["--editspec-report", path]
    if args.driver:
        argv += ["--editspec-driver", args.driver]
    if args.mcp:
        argv += ["--editspec-mcp", args.mcp]
    if args.mcp_map:
        argv += ["--editspec-mcp-map", args.mcp_map]
    if args.mcp_url:
        argv += ["--editspec-mcp-url", args.mcp_url, "--editspec-mcp-root", args.mcp_root]
    if args.expectations:
        argv += ["--editspec-expectations", args.expectations]
    if args.keyword:
        argv += ["-k", args.keyword]
    if args.numprocesses:
        argv += ["-n", args.numprocesses]
    if args.exitfirst:
        argv.append("-x")
    if args.verbose:
        # One line per clause and pytest's tracebacks; the table follows them.
        argv += ["-v"] * args.verbose + ["--no-header"]
    else:
        # Only the table is printed (by ``cmd_check``), and a progress line on a terminal.
        argv += ["-p", "no:terminal", "--editspec-progress"]
    return argv + list(args.pytest_args)


def cmd_check(args: argparse.Namespace) -> int:
    import pytest

    if args.driver and args.mcp:
        print("editspec check: choose one of --driver and --mcp", file=sys.stderr)
        return EXIT_USAGE
    if args.mcp_map and not (args.mcp or args.mcp_url):
        print("editspec check: --mcp-map applies only with --mcp or --mcp-url", file=sys.stderr)
        return EXIT_USAGE
    if bool(args.mcp_url) != bool(args.mcp_root):
        print(
            "editspec check: --mcp-url needs --mcp-root, the workspace root that server serves "
            "(an empty directory alone in its parent: the suite empties it between clauses)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.mcp_url and args.numprocesses:
        print(
            "editspec check: with --mcp-url the clauses share the server's one root, so they "
            "run one at a time (no -n)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    for path in args.report:
        if Path(path).suffix not in (".json", ".md"):
            print(f"editspec check: --report {path} must end in .json or .md", file=sys.stderr)
            return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="editspec-check-") as scratch:
        json_report = Path(scratch) / "report.json"
        status = pytest.main(pytest_arguments(args, json_report))
        if status in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR):
            return EXIT_USAGE
        if status == pytest.ExitCode.NO_TESTS_COLLECTED:
            print("editspec check: no clause selected", file=sys.stderr)
            return EXIT_USAGE
        if status == pytest.ExitCode.INTERRUPTED or not json_report.exists():
            print("editspec check: the suite did not run to completion", file=sys.stderr)
            return EXIT_USAGE

        built = report.load(str(json_report))
    if not args.verbose:
        print(report.render_text(built))
        unknown = built.get("unknown_expectations")
        if unknown:
            print("the expectations name clauses the suite does not have: " + ", ".join(unknown))
    for path in args.report:
        print(f"report written to {path}")
    return EXIT_MUST_FAILED if built["summary"]["must_failures"] else EXIT_OK


def cmd_expectations_update(args: argparse.Namespace) -> int:

    try:
        built = report.load(args.report)
    except (OSError, ValueError) as exc:
        print(f"editspec expectations: {exc}", file=sys.stderr)
        return EXIT_USAGE
    found = expectations.from_report(built)
    name = built.get("implementation", {}).get("name", "?")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    header = (
        f"Known failures of {name}, from a report of suite {built.get('suite_version')} "
        f"({stamp}).\nEach entry is applied as a strict expected failure: fix the implementation, "
        "then delete the entry."
    )
    text = expectations.dumps(found, header=header)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"{len(found)} expectation(s) written to {args.output}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_catalog(args: argparse.Namespace) -> int:

    clauses = catalog.load()
    if args.write is not None:
        target = Path(args.write or catalog.CATALOG_FILE)
        target.write_text(catalog.render_markdown(clauses), encoding="utf-8")
        print(f"{len(clauses)} clauses written to {target}")
    if args.check is not None:
        target = Path(args.check or catalog.CATALOG_FILE)
        problems = catalog.self_check(target)
        for problem in problems:
            print(f"catalog: {problem}", file=sys.stderr)
        if problems:
            return EXIT_MUST_FAILED
        print(f"catalog OK: {len(clauses)} clauses, {target} up to date")
    if args.power is not None:
        return _catalog_power(catalog, clauses, Path(args.power))
    if args.write is None and args.check is None:
        for item in clauses:
            withdrawn = " (withdrawn)" if item.withdrawn else ""
            print(f"{item.id:<10} {item.level:<6} {item.text}{withdrawn}")
    return EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    """Run the suite against the reference with call logs, then check DESIGN §7's rules."""
    import pytest

    with tempfile.TemporaryDirectory(prefix="editspec-audit-") as scratch:
        logs = Path(scratch) / "calls"
        json_report = Path(scratch) / "report.json"
        argv = [
            str(_package_dir()),
            "-c",
            os.devnull,
            "--rootdir",
            str(_package_dir()),
            "--import-mode=importlib",
            "-p",
            "no:cacheprovider",
            "-q",
            "--no-header",
            "--tb=no",
            "--editspec-report",
            str(json_report),
            "--editspec-call-log",
            str(logs),
        ]
        if not _plugin_is_autoloaded():
            argv += ["-p", "editspec.spec.plugin"]
            if args.numprocesses:
                argv += ["-p", "xdist.plugin"]
        if args.keyword:
            argv += ["-k", args.keyword]
        if args.numprocesses:
            argv += ["-n", args.numprocesses]
        status = pytest.main(argv)
        if not json_report.exists() or status in (
            pytest.ExitCode.USAGE_ERROR,
            pytest.ExitCode.INTERNAL_ERROR,
            pytest.ExitCode.INTERRUPTED,
        ):
            print("editspec audit: the suite did not run to completion", file=sys.stderr)
            return EXIT_USAGE
        built = report.load(str(json_report))
        requires = {item.id: item.requires for item in catalog.load()}
        problems = audit.run(logs, built, requires)
    for problem in problems:
        print(problem)
    clauses = len({c["id"] for c in built["clauses"] if c["outcome"] == "PASS"})
    if problems:
        print(f"audit: {len(problems)} problem(s) in {clauses} clauses that pass")
        return EXIT_MUST_FAILED
    print(f"audit OK: {clauses} clauses that pass have positive controls and minimal requirements")
    return EXIT_OK


EXPLORE_URL_REFUSAL = (
    "editspec explore: --mcp-url is not supported: explore crashes a server at each of its "
    "file-system steps (strace kills the process) and restarts it over a fresh copy of the "
    "scenario's tree; a server that is already running is not this process's to kill or to "
    "restart, and it serves one fixed root. Give the command that starts the server instead: "
    'editspec explore --mcp "COMMAND {root} ..."'
)


def _catalog_power(catalog: Any, clauses: list[Any], path: Path) -> int:
    """Per MUST clause, the mutants that fail it (from a power file); 1 if one has none."""
    import json

    try:
        lines, uncovered = catalog.power_report(clauses, json.loads(path.read_text("utf-8")))
    except (OSError, ValueError) as exc:
        print(f"editspec catalog: --power {path}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print("clause     mutants that fail it (and the reference passes)")
    print("\n".join(lines))
    print(f"{len(lines) - len(uncovered)}/{len(lines)} MUST clauses fail for a mutant")
    if uncovered:
        print(f"no mutant fails: {', '.join(uncovered)}", file=sys.stderr)
        return EXIT_MUST_FAILED
    return EXIT_OK


def _delegate(name: str, argv: Sequence[str]) -> int:
    if name == "explore" and any(
        arg == "--mcp-url" or arg.startswith("--mcp-url=") for arg in argv
    ):
        print(EXPLORE_URL_REFUSAL, file=sys.stderr)
        return EXIT_USAGE
    module_name, function_name = _DELEGATED[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            print(
                f"editspec {name}: not available in this installation ({module_name} is missing)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        raise
    function: Callable[[list[str]], int | None] = getattr(module, function_name)
    result = function(list(argv))
    return int(result or 0)


def build_parser() -> argparse.ArgumentParser:

    parser = argparse.ArgumentParser(
        prog="editspec",
        description="The executable specification of file tools for coding agents.",
    )
    parser.add_argument("--version", action="version", version=f"editspec {suite_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="run the conformance suite and print the verdict")
    target = check.add_mutually_exclusive_group()
    target.add_argument("--driver", metavar="MODULE:FACTORY", help="a Python DriverFactory")
    target.add_argument("--mcp", metavar="COMMAND", help="an MCP server command line")
    target.add_argument(
        "--mcp-url", metavar="URL", help="an MCP server already running over Streamable HTTP"
    )
    check.add_argument(
        "--mcp-root",
        metavar="DIR",
        help="with --mcp-url: the root that server serves (empty, alone in its parent; "
        "emptied between clauses)",
    )
    check.add_argument("--mcp-map", metavar="FILE", help="tool map for the MCP server")
    check.add_argument(
        "--report", metavar="PATH", action="append", default=[], help="write .json or .md"
    )
    check.add_argument("--expectations", metavar="FILE", help="known failures (TOML)")
    check.add_argument("-k", dest="keyword", metavar="EXPR", help="select clauses (pytest -k)")
    check.add_argument(
        "-n", dest="numprocesses", metavar="N", help="parallel workers (pytest-xdist; 'auto')"
    )
    check.add_argument(
        "-x", dest="exitfirst", action="store_true", help="stop at the first failure"
    )
    check.add_argument(
        "-v",
        dest="verbose",
        action="count",
        default=0,
        help="one line per clause, and each failure's traceback",
    )
    check.add_argument("pytest_args", nargs="*", metavar="-- PYTEST_ARGS", help=argparse.SUPPRESS)
    check.set_defaults(handler=cmd_check)

    expectations = commands.add_parser("expectations", help="manage expectations files")
    actions = expectations.add_subparsers(dest="action", metavar="ACTION", required=True)
    update = actions.add_parser("update", help="write expectations from a report's failures")
    update.add_argument("report", metavar="REPORT.json")
    update.add_argument("-o", dest="output", metavar="FILE", help="write here (default: stdout)")
    update.set_defaults(handler=cmd_expectations_update)

    catalog = commands.add_parser("catalog", help="print, write or check the clause catalog")
    catalog.add_argument("--write", nargs="?", const="", metavar="FILE", help="write CLAUSES.md")
    catalog.add_argument("--check", nargs="?", const="", metavar="FILE", help="self-check")
    catalog.add_argument(
        "--power",
        nargs="?",
        const="tests/mutants/power.json",
        metavar="FILE",
        help="per MUST clause, the mutants that fail it (python tests/mutants/zoo.py power)",
    )
    catalog.set_defaults(handler=cmd_catalog)

    audit_parser = commands.add_parser(
        "audit",
        help="check that every clause has positive controls and minimal requirements",
        description="Runs the suite against the reference with each clause's driver calls "
        "recorded, then checks DESIGN section 7: every expected refusal follows a success of "
        "the same kind, and every clause requires exactly what it uses.",
    )
    audit_parser.add_argument("-k", dest="keyword", metavar="EXPR", help="select clauses")
    audit_parser.add_argument("-n", dest="numprocesses", metavar="N", help="parallel workers")
    audit_parser.set_defaults(handler=cmd_audit)

    for name, help_text in (
        ("replay", "re-run a recorded fault scenario step by step"),
        ("explore", "enumerate crash points and power-loss states"),
        ("serve", "serve the reference engine as an MCP server (stdio or --http)"),
        ("peers", "real implementations: the catalog, their runs and the matrix"),
    ):
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments and arguments[0] in _DELEGATED:
        return _delegate(arguments[0], arguments[1:])
    parser = build_parser()
    args = parser.parse_args(arguments)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(handler(args))
    except BrokenPipeError:  # the output was piped into a pager or head that quit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
