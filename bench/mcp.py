"""Benchmark: per-call latency over MCP, editspec serve beside the servers people use instead.

Every server is started over stdio through the same client (the MCP Python SDK), on its
own copy of the same files, and is called, in interleaved rounds (``pairs.interleave``),
with the same operations:

* read a 1 KiB file, read a 1 MiB file (whole);
* edit one line in the 1 MiB file (the line changes back and forth; each edit is preceded,
  untimed, by a read, which editspec requires and the others do not need);
* write a new 4 KiB file (editspec creates it durably: fsyncs of the file and directory);
* glob ``**/*.py`` and grep ``TODO`` in a tree of ``--files`` files (no ignore files, so
  every server sees the same files).

Peers, installed with the peer catalog's recipe (``spec/peers/catalog.toml``) into the
peer cache: ``@modelcontextprotocol/server-filesystem`` and Desktop Commander (where it
installs). An operation a server has no single tool for is left out for it
(server-filesystem has no content search; Desktop Commander searches in a background
session polled by further calls, which is not one call).

One round times ``--calls`` calls of each operation on each server; the time per call is
the round's time divided by that. CPU time is the server process's own (its children
included, such as ripgrep), read from ``/proc``. It prints, per operation and peer, the
median of the per-round ratios editspec / peer with their range. For the edit and the
write it also times, in the same rounds, what the two fsyncs of a durable replace cost
(the file's and its directory's): a durable replace of a file of that size minus the same
replace without them, the ``fsync floor``; the part of editspec's extra time per call that
durability alone explains (the peers do not fsync). Target: every read-only operation
(read, glob, grep) at most as slow as the fastest peer (median of wall ratios <= 1.0).
Exit status 1 when one is missed.

    python bench/mcp.py [--runs 7] [--calls 20] [--files 2000] [--skip NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pairs

# This file is named like the SDK's package: while the SDK is imported, the benchmarks'
# folder (first on the path when a script there runs) is taken off the path.
_HERE = os.path.dirname(os.path.abspath(__file__))
_PATH = list(sys.path)
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
try:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
finally:
    sys.path[:] = _PATH

from editspec.spec.peers.catalog import CatalogError, cache_dir, load_catalog  # noqa: E402

KiB, MiB = 1024, 1024 * 1024
PEERS = ("server-filesystem", "desktop-commander")
READ_ONLY = ("read 1 KiB", "read 1 MiB", "glob", "grep")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def code_lines(size: int, seed: int) -> str:
    lines, total, number = [], 0, 0
    while total < size:
        line = f"    value_{seed}_{number:07d} = compute(alpha, beta, {number % 97})  # note\n"
        lines.append(line)
        total += len(line)
        number += 1
    return "".join(lines)[:size]


def make_files(root: Path, files: int) -> None:
    """The same files for every server: two to read and edit, a tree to search."""
    root.mkdir(parents=True)
    (root / "small.txt").write_text(code_lines(KiB, 1))
    (root / "big.py").write_text(code_lines(MiB, 2))
    (root / "new").mkdir()
    for number in range(files):
        directory = root / "tree" / f"d{number % 40}" / f"e{number % 7}"
        directory.mkdir(parents=True, exist_ok=True)
        text = code_lines(600 + 37 * (number % 50), number)
        if number % 20 == 0:
            text += "# TODO: revisit\n"
        suffix = (".py", ".md", ".txt")[number % 3]
        (directory / f"f{number}{suffix}").write_text(text)


class Loop:
    """One event loop in a thread; the benchmark calls into it and waits."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


def children() -> set[int]:
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as listing:
            found.update(int(pid) for pid in listing.read().split())
    return found


class Server:
    """A server over stdio, held open by a task on the loop until ``close``."""

    def __init__(self, loop: Loop, name: str, argv: list[str], cwd: Path, env: dict[str, str]):
        self.name, self.loop = name, loop
        before = children()
        ready: concurrent.futures.Future[ClientSession] = concurrent.futures.Future()
        self.stop = asyncio.Event()
        params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(cwd), env=env)

        async def hold() -> None:
            try:
                async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                    await s.initialize()
                    ready.set_result(s)
                    await self.stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        self.task = asyncio.run_coroutine_threadsafe(hold(), loop.loop)
        self.session = ready.result(timeout=120)
        new = children() - before
        self.pid = new.pop() if len(new) == 1 else None

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = self.loop.run(self.session.call_tool(tool, arguments))
        if result.is_error:
            text = " ".join(getattr(part, "text", "") for part in result.content)
            raise RuntimeError(f"{self.name} {tool}: {text[:300]}")
        return result

    def cpu(self) -> float:
        """The server's CPU seconds so far, its waited-for children included."""
        if self.pid is None:
            return 0.0
        with open(f"/proc/{self.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return sum(int(value) for value in fields[11:15]) / CLOCK_TICKS

    def close(self) -> None:
        self.loop.loop.call_soon_threadsafe(self.stop.set)
        with contextlib.suppress(Exception):  # a peer that fails to stop is not measured
            self.task.result(timeout=20)


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def whole(call: Callable[[int], Any], last_line: str) -> Callable[[int], object]:
    """``call``, checked to return the whole file (its last line): the same work for all."""

    def run(number: int) -> object:
        result = call(number)
        if last_line not in text_of(result):
            raise RuntimeError(f"a read did not return the whole file: {text_of(result)[-200:]}")
        return result

    return run


def last_line(path: Path) -> str:
    return path.read_text().rstrip("\n").rsplit("\n", 1)[-1].strip()


def operations(name: str, server: Server, root: Path) -> dict[str, Callable[[int], object]]:
    """What each operation is for this server: a call taking the round number."""
    ops = _operations(name, server, root)
    for operation, path in (("read 1 KiB", "small.txt"), ("read 1 MiB", "big.py")):
        ops[operation] = whole(ops[operation], last_line(root / path))
    return ops


def _operations(name: str, server: Server, root: Path) -> dict[str, Callable[[int], object]]:
    old = f"value_2_{5000:07d} = compute(alpha, beta, {5000 % 97})  # note"  # in big.py, once
    new = old.replace("# note", "# edited")
    big = str(root / "big.py")

    def pair(run: int, keys: tuple[str, str]) -> dict[str, str]:
        """The replacement of call ``run``: there and back, so every call finds its text."""
        return dict(zip(keys, (old, new) if run % 2 == 0 else (new, old), strict=True))

    if name == "editspec":
        read = {"path": "big.py", "max_bytes": 2 * MiB}
        return {
            "read 1 KiB": lambda run: server.call("read", {"path": "small.txt"}),
            "read 1 MiB": lambda run: server.call("read", read),
            "edit 1 MiB": lambda run: server.call(
                "edit",
                {"path": "big.py", "edits": [pair(run, ("old_string", "new_string"))]},
            ),
            "write 4 KiB": lambda run: server.call(
                "write", {"path": f"new/w{run}.txt", "content": code_lines(4 * KiB, run)}
            ),
            "glob": lambda run: server.call("glob", {"pattern": "**/*.py", "path": "tree"}),
            "grep": lambda run: server.call("grep", {"pattern": "TODO", "path": "tree"}),
            "(read before edit)": lambda run: server.call("read", read),
        }
    if name == "server-filesystem":
        return {
            "read 1 KiB": lambda run: server.call(
                "read_text_file", {"path": str(root / "small.txt")}
            ),
            "read 1 MiB": lambda run: server.call("read_text_file", {"path": big}),
            "edit 1 MiB": lambda run: server.call(
                "edit_file",
                {"path": big, "edits": [pair(run, ("oldText", "newText"))]},
            ),
            "write 4 KiB": lambda run: server.call(
                "write_file",
                {"path": str(root / f"new/w{run}.txt"), "content": code_lines(4 * KiB, run)},
            ),
            "glob": lambda run: server.call(
                "search_files", {"path": str(root / "tree"), "pattern": "**/*.py"}
            ),
            "(read before edit)": lambda run: server.call("read_text_file", {"path": big}),
        }
    read_all = {"path": big, "offset": 0, "length": 10**7}
    return {
        "read 1 KiB": lambda run: server.call(
            "read_file", {"path": str(root / "small.txt"), "offset": 0, "length": 10**7}
        ),
        "read 1 MiB": lambda run: server.call("read_file", read_all),
        "edit 1 MiB": lambda run: server.call(
            "edit_block",
            {**pair(run, ("old_string", "new_string")), "file_path": big},
        ),
        "write 4 KiB": lambda run: server.call(
            "write_file",
            {"path": str(root / f"new/w{run}.txt"), "content": code_lines(4 * KiB, run)},
        ),
        "(read before edit)": lambda run: server.call("read_file", read_all),
    }


def replace_file(directory: Path, data: bytes, durable: bool) -> Callable[[int], object]:
    """A replace of ``directory``'s file with ``data``: temp, write, rename; ``durable``
    also fsyncs the file before the rename and the directory after it. The difference
    between the two is what the fsyncs cost (the ``fsync floor``)."""
    target = directory / f"target-{durable}"
    target.write_bytes(data)

    def run(_run: int) -> object:
        temp = directory / f"temp-{durable}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
        if durable:
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return None

    return run


def start(loop: Loop, name: str, root: Path, state: Path) -> Server:
    if name == "editspec":
        argv = [
            sys.executable,
            "-m",
            "editspec.spec.cli",
            "serve",
            str(root),
            "--state-dir",
            str(state),
        ]
        return Server(loop, name, argv, root, dict(os.environ))
    peer = load_catalog()[name]
    cache = cache_dir()
    peer.install(cache, log=lambda line: print(line, file=sys.stderr))
    command = peer.server_command(cache).replace("{root}", str(root))
    command = command.replace("{state_dir}", str(state))
    server = Server(loop, name, shlex.split(command), root, peer.environment(cache))
    if name == "desktop-commander":  # its reads stop at 1 000 lines unless told otherwise
        server.call("set_config_value", {"key": "fileReadLineLimit", "value": 10**7})
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed rounds (median of ratios)")
    parser.add_argument("--calls", type=int, default=20, help="calls per operation per round")
    parser.add_argument("--files", type=int, default=2000, help="files in the searched tree")
    parser.add_argument("--skip", action="append", default=[], choices=PEERS)
    parser.add_argument("--dir", default=None, help="where to put the files (default: temp)")
    args = parser.parse_args(argv)
    print(
        f"MCP per-call latency, {args.calls} calls per round, {args.runs} rounds\n{pairs.stamp()}"
    )
    base = Path(tempfile.mkdtemp(prefix="editspec-bench-mcp-", dir=args.dir))
    loop = Loop()
    servers: dict[str, Server] = {}
    try:
        for name in ("editspec", *[peer for peer in PEERS if peer not in args.skip]):
            root, state = base / name / "root", base / name / "state"
            make_files(root, args.files)
            state.mkdir()
            try:
                servers[name] = start(loop, name, root, state)
            except (CatalogError, OSError, RuntimeError, concurrent.futures.TimeoutError) as exc:
                print(f"{name}: not measured ({exc})")
        cases: dict[str, pairs.Case] = {}
        for name, server in servers.items():
            ops = operations(name, server, base / name / "root")
            before_edit = ops.pop("(read before edit)")
            for operation, call in ops.items():

                def batch(run: int, call: Callable[[int], object] = call) -> object:
                    for number in range(args.calls):
                        call(run * args.calls + number)
                    return None

                # Before a round of edits, one untimed read: editspec requires it (an edit
                # keeps the file fresh for the next one); the peers get it too.
                setup = before_edit if operation == "edit 1 MiB" else None
                cases[f"{name}: {operation}"] = pairs.Case(batch, setup, cpu=server.cpu)
        for label, size in (("1 MiB", MiB), ("4 KiB", 4 * KiB)):
            floor_dir = base / f"fsync-floor-{size}"
            floor_dir.mkdir()
            for durable in (True, False):
                replace = replace_file(floor_dir, code_lines(size, 2).encode(), durable)
                cases[f"{'durable' if durable else 'plain'} replace {label}"] = pairs.Case(
                    lambda run, replace=replace: [replace(run) for _ in range(args.calls)] and None
                )
        samples = pairs.interleave(cases, args.runs)
        return report(samples, servers, args.calls)
    finally:
        for server in servers.values():
            server.close()
        shutil.rmtree(base, ignore_errors=True)


def report(samples: dict[str, pairs.Samples], servers: dict[str, Server], calls: int) -> int:
    """Per operation: ms per call of each server; editspec / each peer (median of ratios)."""
    names = list(servers)
    operations_seen = [key.split(": ", 1)[1] for key in samples if key.startswith("editspec: ")]
    print(f"\n{'operation':12} " + " ".join(f"{name:>19}" for name in names) + "   (ms per call)")
    for operation in operations_seen:
        cells = []
        for name in names:
            entry = samples.get(f"{name}: {operation}")
            cells.append("-" if entry is None else f"{entry.median_wall / calls * 1000:.2f}")
        print(f"{operation:12} " + " ".join(f"{cell:>19}" for cell in cells))
    floors = {}
    for operation in ("edit 1 MiB", "write 4 KiB"):
        size = operation.split(" ", 1)[1]
        durable = samples[f"durable replace {size}"].median_wall / calls
        plain = samples[f"plain replace {size}"].median_wall / calls
        floors[operation] = durable - plain
        print(
            f"{'fsync ' + size:12} {(durable - plain) * 1000:19.2f}   (a durable {size} replace "
            f"{durable * 1000:.2f} ms, without its two fsyncs {plain * 1000:.2f} ms)"
        )
    print("\neditspec / peer, median of per-round ratios (range); CPU: the server processes'")
    failed = False
    for operation in operations_seen:
        engine = f"editspec: {operation}"
        peers = [name for name in names[1:] if f"{name}: {operation}" in samples]
        if not peers:
            print(f"{operation:12} no peer has this operation as one call")
            continue
        fastest = min(peers, key=lambda name: samples[f"{name}: {operation}"].median_wall)
        for name in peers:
            value = pairs.ratio(samples, engine, f"{name}: {operation}")
            goal = ""
            if operation in READ_ONLY and name == fastest:
                goal = f"  target <= 1.0x the fastest peer: {pairs.verdict(value, 1.0)}"
                failed |= value.median > 1.0
            print(f"{operation:12} vs {name:18} {value.text()}{goal}")
        if operation in floors:
            floor = floors[operation]
            for name in peers:
                gap = (
                    samples[engine].median_wall - samples[f"{name}: {operation}"].median_wall
                ) / calls
                if gap <= 0:
                    print(f"{'':12} vs {name:18} editspec is faster: no extra time to explain")
                    continue
                print(
                    f"{'':12} vs {name:18} editspec's extra time per call {gap * 1000:.2f} ms, "
                    f"of which the fsync floor {floor * 1000:.2f} ms ({floor / gap:.0%})"
                )
    print(pairs.stamp())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
