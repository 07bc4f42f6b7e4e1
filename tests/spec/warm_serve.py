"""``editspec serve`` processes forked from one parent that has already imported the SDK.

A cold ``editspec serve`` spends about 1.5 s of CPU importing the MCP SDK before it answers
``initialize``; a test that runs the whole suite over stdio starts one server per clause,
so those imports were most of its cost. Here one parent process (the *zygote*) imports the
server's modules once and then forks a server for each client. The client's command is the
small stdlib-only ``launch`` script: it connects to the zygote's UNIX socket, hands over its
stdin, stdout and stderr with the command line, working directory and environment, and
exits with the forked server's exit status. The forked process runs ``editspec.spec.cli``'s
``main`` with that command line on those descriptors: the same code on the same wire as a
cold server; only the imports were done earlier.

What a forked server cannot be is the process its client started: a signal to the launcher
(``kill`` of its process group, ``strace -p``) does not reach the server. Clauses that need
the ``process`` capability therefore run against cold servers (``test_mcp_agreement``).

    zygote = Zygote.start(tmp_path)   # ... zygote.command  (an ``--mcp`` command line)
    zygote.stop()                     # the number of servers it forked
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import shlex
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
_HEADER = struct.Struct("!I")
_MAX_REQUEST = 1 << 20


def _preload() -> None:
    """Import what a server imports on its way to answering ``initialize``."""
    import anyio.to_thread  # noqa: F401
    import mcp.server
    import mcp.server.stdio
    import mcp.shared.exceptions
    import mcp.types  # noqa: F401

    import editspec.spec.cli
    import editspec.spec.serve  # noqa: F401


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One launch request: (command line, cwd, environment) and the three descriptors."""
    data, fds, _flags, _address = socket.recv_fds(connection, _MAX_REQUEST, 3)
    if len(data) < _HEADER.size:
        raise ValueError("short launch request")
    (size,) = _HEADER.unpack_from(data)
    data = data[_HEADER.size :]
    while len(data) < size:
        more = connection.recv(size - len(data))
        if not more:
            raise ValueError("truncated launch request")
        data += more
    if len(fds) != 3:
        raise ValueError(f"a launch request carries 3 descriptors, not {len(fds)}")
    return json.loads(data.decode("utf-8")), fds


def _become_server(request: dict[str, Any], fds: list[int], keep_closed: list[int]) -> None:
    """In the forked child: take the client's descriptors and run the command. Never returns."""
    code = 70
    try:
        for fd in keep_closed:
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        random.seed()
        from editspec.spec.cli import main

        sys.argv = ["editspec", *request["argv"]]
        try:
            code = main(request["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        # As at a normal interpreter exit: non-daemon threads finish first.
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
    except BaseException as exc:
        with contextlib.suppress(Exception):
            print(f"warm serve: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve_forever(path: str) -> None:
    """The zygote: preload, listen at ``path``, fork a server per connection, reap them.

    Single-threaded (a fork of a process with threads can deadlock), so it polls: accept,
    forward a launcher's signal byte to its server, and report each exit status back.
    """
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    children: dict[int, socket.socket] = {}
    forked = 0
    print("ready", flush=True)
    while True:
        readable, _, _ = select.select([listener, sys.stdin, *children.values()], [], [], 0.05)
        for connection in readable:
            if connection is sys.stdin:  # the test closed our stdin: stop
                sys.stdin.readline()
                listener.close()
                import resource

                usage = resource.getrusage(resource.RUSAGE_CHILDREN)
                print(f"forked {forked} cpu {usage.ru_utime + usage.ru_stime:.2f}", flush=True)
                return
            if connection is listener:
                client, _ = listener.accept()
                try:
                    request, fds = _receive(client)
                except (OSError, ValueError) as exc:
                    print(f"refused a launch: {exc}", file=sys.stderr, flush=True)
                    client.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    others = [listener.fileno(), *(c.fileno() for c in children.values())]
                    _become_server(request, fds, others)
                for fd in fds:
                    os.close(fd)
                children[pid] = client
                forked += 1
                continue
            pid = next(p for p, c in children.items() if c is connection)
            message = b""
            with contextlib.suppress(OSError):
                message = connection.recv(1)
            # The launcher forwards SIGTERM/SIGINT as a byte; a launcher that is gone
            # (killed) takes its server with it.
            number = {b"T": signal.SIGTERM, b"I": signal.SIGINT}.get(message, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, number)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            client = children.pop(pid)
            with contextlib.suppress(OSError):
                client.sendall(struct.pack("!i", os.waitstatus_to_exitcode(status)))
            client.close()


def launch(path: str, argv: list[str]) -> int:
    """The client's side: hand our descriptors to the zygote and wait for the exit status."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    socket.send_fds(client, [_HEADER.pack(len(request)) + request], [0, 1, 2])
    # Our copies of the wire would keep it open after the server is gone.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    for number, byte in ((signal.SIGTERM, b"T"), (signal.SIGINT, b"I")):
        signal.signal(number, lambda *_, b=byte: client.send(b))
    status = b""
    while len(status) < 4:
        more = client.recv(4 - len(status))
        if not more:
            return 70
        status += more
    code: int = struct.unpack("!i", status)[0]
    return code


class Zygote:
    """A running zygote; ``command`` is an ``--mcp`` command line that starts a server."""

    def __init__(self, process: subprocess.Popen[str], path: str) -> None:
        self.process, self.path = process, path
        launcher = f"{shlex.quote(sys.executable)} -S -E {shlex.quote(str(HERE))}"
        self.command = (
            f"{launcher} launch {shlex.quote(path)} serve {{root}} --state-dir {{state_dir}}"
        )

    @classmethod
    def start(cls, directory: Path) -> Zygote:
        # A UNIX socket path has at most 107 bytes: the socket gets a short directory.
        import tempfile

        short = tempfile.mkdtemp(prefix="es-zygote-")
        path = os.path.join(short, "s")
        process = subprocess.Popen(
            [sys.executable, str(HERE), "zygote", path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=directory,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip() == "ready", f"the zygote did not start: {line!r}"
        return cls(process, path)

    def stop(self) -> int:
        """Stop accepting; the number of servers forked."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("stop\n")
        self.process.stdin.close()
        line = self.process.stdout.readline()
        self.process.wait(timeout=60)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
            os.rmdir(os.path.dirname(self.path))
        assert line.startswith("forked "), line
        return int(line.split()[1])


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        serve_forever(sys.argv[2])
    elif sys.argv[1] == "launch":
        raise SystemExit(launch(sys.argv[2], sys.argv[3:]))
