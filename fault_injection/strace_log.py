"""strace's log, read: finished calls, their arguments, exact strings; and attaching.

``strace -f -y -xx -s BIG`` (``strace_words``) prints one line per call and thread, every
descriptor with the path it refers to (``3<\\x2f...>``), every string as hexadecimal
escapes, in full up to ``-s`` bytes (a longer one ends in ``...``: ``Inexact``). This
module turns such a log into ``Call`` values (unfinished and resumed halves joined, calls
that never returned dropped), splits their arguments, decodes strings and descriptors,
and attaches strace to a running process tree (``attach``, ``Tracer``).
``editspec.fault_injection.strace_record`` builds the power-loss trace from them.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence

import attrs

__all__ = [
    "HEX",
    "STRING_LIMIT",
    "SYSCALLS",
    "Call",
    "Inexact",
    "Tracer",
    "as_int",
    "attach",
    "calls_of",
    "clone_parents",
    "decode_string",
    "fd_and_path",
    "flags_of",
    "mode_of",
    "process_tree",
    "readable",
    "result_of",
    "split_args",
    "strace_words",
    "umask_of",
]

#: The calls strace is asked to show (``?``: skipped where the architecture lacks one).
SYSCALLS: tuple[str, ...] = (
    # descriptors and where they point
    "open", "openat", "openat2", "creat", "close", "close_range", "dup", "dup2", "dup3",
    "fcntl", "clone", "clone3", "fork", "vfork", "chdir", "fchdir", "umask",
    "read", "readv", "lseek",
    # data
    "write", "pwrite64", "writev", "pwritev", "pwritev2", "ftruncate", "truncate",
    "fallocate", "fsync", "fdatasync", "sync_file_range", "sync", "syncfs",
    "fchmod", "chmod", "fchmodat",
    # directory entries
    "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
    "unlink", "unlinkat", "mkdir", "mkdirat", "rmdir",
    # what the model cannot replay
    "mmap", "copy_file_range", "sendfile", "splice",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
)  # fmt: skip

#: strace's ``-s``: strings (a write's bytes) longer than this would be cut, and refused.
STRING_LIMIT = 64 * 1024 * 1024


def strace_words(log: str | os.PathLike[str]) -> list[str]:
    """strace and its options: every thread, descriptors as paths, strings whole in hex."""
    return [
        "strace", "-f", "-y", "-xx", "-s", str(STRING_LIMIT), "-o", os.fspath(log),
        "-e", "trace=" + ",".join(f"?{name}" for name in SYSCALLS),
    ]  # fmt: skip


# -- the log, as calls ---------------------------------------------------------------------

_LINE = re.compile(
    r"^(?P<tid>\d+)\s+(?:"
    r"<\.\.\. (?P<resumed>\w+) resumed>(?P<tail>.*)"
    r"|(?P<event>\+\+\+ .* \+\+\+|--- .* ---)"
    r"|(?P<name>\w+)\((?P<rest>.*))$"
)
_RESULT = re.compile(r"\)\s+= (?P<result>.*)$")
HEX = re.compile(r"\\x([0-9a-f]{2})")


@attrs.frozen
class Call:
    """A finished call: its thread, name, argument text and result text."""

    tid: int
    name: str
    args: str
    result: str


def calls_of(text: str) -> list[Call]:
    """The finished calls of an ``strace -f`` log, in the order they returned."""
    out: list[Call] = []
    pending: dict[int, tuple[str, str]] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None or match.group("event") is not None:
            continue
        tid = int(match.group("tid"))
        if match.group("resumed") is not None:
            started = pending.pop(tid, None)
            if started is None:
                continue
            name, head = started
            text_ = head + match.group("tail")
        else:
            name, text_ = match.group("name"), match.group("rest")
            if text_.endswith("<unfinished ...>"):
                pending[tid] = (name, text_[: -len("<unfinished ...>")].rstrip())
                continue
        found = _RESULT.search(text_)
        if found is None:
            continue  # never returned (the process died in it)
        out.append(Call(tid, name, text_[: found.start()], found.group("result").strip()))
    return out


def split_args(text: str) -> list[str]:
    """Top-level arguments (strings, arrays, structs and ``fd<path>`` kept whole)."""
    parts: list[str] = []
    depth, start, quoted = 0, 0, False
    for index, char in enumerate(text):
        if quoted:
            quoted = char != '"'
        elif char == '"':
            quoted = True
        elif char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


class Inexact(ValueError):
    """strace's output does not carry the exact bytes (a string cut by ``-s``)."""


def decode_string(token: str) -> bytes:
    """``"\\x41\\x42"`` -> ``b"AB"`` (``-xx`` prints every byte so); cut strings refused."""
    token = token.strip()
    if token.endswith('"...'):
        raise Inexact("a string longer than strace's -s")
    if len(token) < 2 or token[0] != '"' or token[-1] != '"':
        raise ValueError(f"not a string: {token[:40]}")
    return bytes(int(h, 16) for h in HEX.findall(token[1:-1]))


def fd_and_path(token: str) -> tuple[int | None, str | None]:
    """``3<\\x2f\\x61>`` -> (3, "/a"); ``AT_FDCWD<...>`` -> (None, the directory)."""
    head, _, decoration = token.partition("<")
    path: str | None = None
    if decoration.endswith(">"):
        inner = decoration[:-1]
        if inner.startswith("\\x"):
            path = os.fsdecode(bytes(int(h, 16) for h in HEX.findall(inner)))
            path = path.removesuffix(" (deleted)")
    head = head.strip()
    if head == "AT_FDCWD":
        return None, path
    try:
        return int(head, 0), path
    except ValueError:
        return None, path


def as_int(token: str) -> int:
    return int(token.split("<", 1)[0].strip(), 0)


def flags_of(token: str) -> set[str]:
    return {word.strip() for word in token.split("|")}


def mode_of(token: str) -> int:
    return int(token.strip(), 8) if token.strip().startswith("0") else int(token.strip(), 0)


def result_of(call: Call) -> int | None:
    """The call's return value, None when it failed (``-1 ENOENT ...``)."""
    value = call.result.split("<", 1)[0].split(" ", 1)[0]
    try:
        number = (
            int(value, 8)
            if value.startswith("0") and len(value) > 1 and value[1].isdigit()
            else int(value, 0)
        )
    except ValueError:
        return None
    return None if number < 0 else number


def readable(call: Call, base: str = "") -> str:
    def text(match: re.Match[str]) -> str:
        data = bytes(int(h, 16) for h in HEX.findall(match.group(0)))
        shown = data.decode("utf-8", "backslashreplace")
        if base:
            shown = shown.replace(base + os.sep, "")
        shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in shown)
        if len(shown) > 48:
            shown = shown[:32] + f"...({len(data)} bytes)"
        return shown

    args = re.sub(r"(?:\\x[0-9a-f]{2})+", text, call.args)
    return f"{call.name}({args}) = {call.result.split('<', 1)[0].strip()}"


def clone_parents(calls: Sequence[Call]) -> dict[int, tuple[int, set[str]]]:
    """Child tid -> (parent tid, clone flags), from every clone/fork in the log."""
    out: dict[int, tuple[int, set[str]]] = {}
    for call in calls:
        if call.name not in ("clone", "clone3", "fork", "vfork"):
            continue
        child = result_of(call)
        if child is None or child == 0:
            continue
        found = re.search(r"flags=([A-Z0-9_|]+)", call.args)
        flags = flags_of(found.group(1)) if found else set()
        if call.name == "vfork":
            flags = {"CLONE_VM", "CLONE_VFORK"}
        out[child] = (call.tid, flags)
    return out


# -- running and attaching ---------------------------------------------------------------


def umask_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process descended from it (from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, queue = [], [pid]
    while queue:
        current = queue.pop(0)
        found.append(current)
        queue.extend(sorted(children.get(current, [])))
    return found


class Tracer:
    """strace attached to a process tree; ``stop()`` detaches and returns the log."""

    def __init__(self, pid: int, log: str, process: subprocess.Popen[str]) -> None:
        self.pid, self.log, self.process = pid, log, process
        self.cwd = os.path.realpath(f"/proc/{pid}/cwd")
        self.umask = umask_of(pid)

    def stop(self, timeout: float = 15.0) -> str:

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # strace detaches on SIGINT
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        with open(self.log, encoding="ascii", errors="replace") as handle:
            return handle.read()


def attach(pid: int, log: str) -> Tracer:
    """Trace ``pid`` and its descendants (every thread) from now on."""
    strace = shutil.which("strace")
    if strace is None:
        raise RuntimeError("strace is not installed (apt-get install strace)")
    targets = process_tree(pid)
    words = [*strace_words(log), *(word for p in targets for word in ("-p", str(p)))]
    words[0] = strace
    tracer = subprocess.Popen(
        words,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert tracer.stderr is not None
    for _ in targets:
        said = tracer.stderr.readline()
        if "attached" not in said:
            tracer.kill()
            tracer.wait()
            raise RuntimeError(f"strace could not attach to {pid}: {said.strip()}")
    return Tracer(pid, log, tracer)
