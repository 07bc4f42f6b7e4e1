"""What ``strace_kill`` needs from strace: whether it can kill here, its options, and the
calls of a clean run.

``strace_unavailable()`` says why strace cannot inject a kill here (no strace, ptrace
refused, or signal injection unsupported), after running ``strace -f true`` once.
``parse_strace_log`` reads the log of a clean run under ``strace -f -e trace=...``:
every traced call with its thread and its ordinal in that thread (``TracedCall``), the
counts a ``when=N`` injection refers to.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import attrs

#: System calls worth a kill, grouped by what they do. ``?`` lets strace skip a name the
#: architecture does not have (aarch64 has no plain ``rename``).

#: System calls worth a kill, grouped by what they do. ``?`` lets strace skip a name the
#: architecture does not have (aarch64 has no plain ``rename``).
RENAME = ("rename", "renameat", "renameat2")


FSYNC = ("fsync", "fdatasync")


WRITE = ("write", "pwrite64", "writev", "pwritev", "pwritev2")


LINK = ("link", "linkat")


UNLINK = ("unlink", "unlinkat")


CHMOD = ("chmod", "fchmod", "fchmodat")


@lru_cache(maxsize=1)
def strace_unavailable() -> str | None:
    """Why strace cannot kill a process on this machine, or None when it can."""
    strace = shutil.which("strace")
    if strace is None:
        return "strace is not installed (apt-get install strace)"
    try:
        done = subprocess.run(
            [strace, "-f", "-o", os.devnull, "true"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace -f true failed: {exc}"
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return f"strace cannot trace here (ptrace refused?): {reason[0]}"
    # The shell's `cd` is one chdir: a kill there proves signal injection works.
    try:
        done = subprocess.run(
            [strace, "-f", "-o", os.devnull, "-e", "inject=chdir:signal=KILL", "sh", "-c", "cd /"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace signal injection failed: {exc}"
    if done.returncode not in (-signal.SIGKILL, 128 + signal.SIGKILL):
        return f"strace cannot inject a signal here: exit status {done.returncode} {done.stderr}"
    return None


def strace_options(
    log: str | os.PathLike[str],
    syscalls: Sequence[str],
    *,
    kill: tuple[str, int] | None = None,
) -> list[str]:
    """strace and its options: follow threads, trace ``syscalls``, maybe kill at one."""
    words = ["strace", "-f", "-y", "-s", "24", "-o", os.fspath(log)]
    words += ["-e", "trace=" + ",".join(f"?{name}" for name in syscalls)]
    if kill is not None:
        name, when = kill
        if when < 1:
            raise ValueError(f"when must be >= 1, not {when}")
        words += ["-e", f"inject={name}:signal=KILL:when={when}"]
    return words


def strace_prefix(
    log: str | os.PathLike[str],
    syscalls: Sequence[str],
    *,
    kill: tuple[str, int] | None = None,
) -> list[str]:
    """The words to put before a command to run it under strace (see ``strace_options``)."""
    return [*strace_options(log, syscalls, kill=kill), "--"]


@attrs.frozen
class TracedCall:
    """One call strace logged: its thread, its ordinal among that thread's calls of ``name``."""

    tid: int
    name: str
    ordinal: int
    args: str
    result: str  # what it returned, "?" if it never did (the process died in it)

    def describe(self, base: str = "") -> str:
        args = self.args.replace(base + os.sep, "") if base else self.args
        return f"{self.name}({args}) = {self.result}  [thread {self.tid}, #{self.ordinal}]"


@attrs.frozen
class StraceLog:
    """The calls of one run, in the order they were entered; and whether SIGKILL ended it."""

    calls: tuple[TracedCall, ...]
    killed: bool
    complete: bool  # the log ends with its process's exit or death

    def counts(self) -> dict[str, int]:
        """Calls per system call, over all threads."""
        out: dict[str, int] = {}
        for call in self.calls:
            out[call.name] = out.get(call.name, 0) + 1
        return out

    def per_thread_max(self) -> dict[str, int]:
        """Per system call, the most calls one thread made (the range of ``when=N``)."""
        out: dict[str, int] = {}
        for call in self.calls:
            out[call.name] = max(out.get(call.name, 0), call.ordinal)
        return out

    def find(self, name: str, ordinal: int) -> TracedCall | None:
        """The first call that was the ``ordinal``-th ``name`` of its thread."""
        return next((c for c in self.calls if c.name == name and c.ordinal == ordinal), None)


_LINE = re.compile(
    r"^(?P<tid>\d+)\s+(?:"
    r"<\.\.\. (?P<resumed>\w+) resumed>(?P<tail>.*)"
    r"|(?P<event>\+\+\+ .* \+\+\+|--- .* ---)"
    r"|(?P<name>\w+)\((?P<rest>.*))$"
)


_RESULT = re.compile(r"\)\s+= (?P<result>.*)$")


def _split_result(text: str) -> tuple[str, str | None]:
    """``args) = result`` -> (args, result); an unfinished call has no result yet."""
    if text.endswith("<unfinished ...>"):
        return text[: -len("<unfinished ...>")].rstrip(), None
    found = _RESULT.search(text)
    if found is None:
        return text, None
    return text[: found.start()], found.group("result").strip()


def parse_strace_log(text: str) -> StraceLog:
    """The calls of an ``strace -f -o`` log (one line per call, threads interleaved)."""
    calls: list[dict[str, Any]] = []
    open_calls: dict[int, int] = {}  # tid -> index of its unfinished call
    ordinals: dict[tuple[int, str], int] = {}
    killed = complete = False
    first_tid: int | None = None
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        tid = int(match.group("tid"))
        if first_tid is None:
            first_tid = tid
        if match.group("event") is not None:
            event = match.group("event")
            if "killed by SIGKILL" in event:
                killed = True
            if event.startswith("+++"):
                complete = True
            continue
        if match.group("resumed") is not None:
            index = open_calls.pop(tid, None)
            if index is not None:
                args, result = _split_result(match.group("tail"))
                calls[index]["args"] += args
                calls[index]["result"] = result or "?"
            continue
        name = match.group("name")
        key = (tid, name)
        ordinals[key] = ordinals.get(key, 0) + 1
        args, result = _split_result(match.group("rest"))
        calls.append(
            {"tid": tid, "name": name, "ordinal": ordinals[key], "args": args, "result": result}
        )
        if result is None:
            open_calls[tid] = len(calls) - 1
    return StraceLog(
        tuple(
            TracedCall(c["tid"], c["name"], c["ordinal"], c["args"], c["result"] or "?")
            for c in calls
        ),
        killed,
        complete,
    )
