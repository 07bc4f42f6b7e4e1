"""Ripgrep walking the search root itself: the tree mode of ``_grep_rg``.

See ``_grep_rg``'s docstring for when it applies. ``walks_alike`` decides whether
ripgrep's walk keeps the engine's files on this tree; ``search_tree`` runs it with
``--json`` and checks that every match and the count of files searched are what the
engine's walk would give (None otherwise: the caller falls back to the file list).

ripgrep's output is read by ``_Messages``: whole once ripgrep has exited, or, for a Grep
with ``max_results``, as ripgrep writes it (``_grep_rg.stream``), each file's lines checked
once its end message is in and only the matches the result may hold kept, so that memory
does not grow with the matches.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import stat
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import GrepMatch
from editspec.reference.search._grep_py import SKIPPED_ERRNOS, Selection
from editspec.reference.search._grep_query import (
    BINARY_SNIFF_BYTES,
    BOM,
    GrepQuery,
    decode_line,
    may_match,
)
from editspec.reference.search._grep_rg import RipgrepFailed, spawn, stream
from editspec.reference.search._grep_worker import BATCH_BYTES, match_lines, search_files
from editspec.reference.search._ignore import GITIGNORE, INFO_EXCLUDE
from editspec.reference.search._walk import DIR, FILE, GIT_DIR, OTHER, SYMLINK

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem
    from editspec.reference.search._walk import SearchTree

# Whether ripgrep may walk the tree itself where its walk provably equals the engine's.
RG_WALKS = True
UNCHECKED_FILES = 1 << 16
"""The most files ripgrep printed lines of before the engine's walk listed them; past it,
ripgrep waits for the walk to catch up (``_Messages``)."""
_CATCH_UP_SECONDS = 0.005
_AGAIN_FILES = 256  # files with a late NUL searched again together
_LINE_COST = 200  # bytes a candidate line held costs besides its text (``BATCH_BYTES``)


def root_ignore_files(fs: FileSystem, root: str, start: str) -> list[str]:
    """The workspace root's ignore files, root-relative, lowest precedence first, that
    ripgrep is given (``--ignore-file``) for a search below the root: in the tree mode it
    reads no parent directory's (``--no-ignore-parent``). Nothing for the root itself."""
    if not start:
        return []
    return [
        relative
        for relative in (INFO_EXCLUDE, GITIGNORE)
        if _lstat_kind(fs, os.path.join(root, *relative.split("/"))) == FILE
    ]


def walks_alike(tree: SearchTree, start: str, given: list[str]) -> bool:
    """Whether ripgrep, walking from ``start`` with the options of the tree mode and the
    root's ignore files ``given`` (``root_ignore_files``), keeps exactly the files that
    ``tree``'s walk just kept (called after that walk).

    ripgrep reads every ``.gitignore`` the walk read below ``start`` (each must be
    ``portable``), also a ``.gitignore`` that is a symlink or a directory (the walk reads
    neither), and ``.git/info/exclude`` below every directory it enters (the walk only
    the workspace root's). Of the directories above ``start`` it knows only the root's
    files it is given, so the others must hold no rule.
    """
    if not all(file.portable for file in tree.ignore_reads):
        return False
    for relative, kind in tree.odd_entries:
        if relative != GIT_DIR or kind not in (DIR, FILE):
            return False
    if not start:
        return True
    read: list[str] = []
    for file in tree.ignore_reads:
        if file.source in (INFO_EXCLUDE, GITIGNORE):
            read.append(file.source)
        elif file.rules and file.base != start and start.startswith(file.base + "/"):
            return False  # an ignore file between the root and ``start`` with rules
    return set(read) == set(given)


def _lstat_kind(fs: FileSystem, path: str) -> str | None:
    try:
        mode = fs.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return OTHER  # cannot tell: not alike
    if stat.S_ISLNK(mode):
        return SYMLINK
    if stat.S_ISDIR(mode):
        return DIR
    return FILE if stat.S_ISREG(mode) else OTHER


class TreeSearch(NamedTuple):
    """What ripgrep found walking the tree itself."""

    matches: list[GrepMatch]  # with ``keep``, the ``keep`` first (``Selection``)
    searched: int  # files ripgrep searched (its own count)
    # Of the files it printed lines of (relative to the search root): those the walk had
    # not listed when they were read, and whether the walk was found not to keep one.
    unchecked: list[str]
    alien: bool
    error: ToolError | None  # the first failure of the checks, raised once the walk agrees


def _tree_command(
    executable: str, query: GrepQuery, root: str, start: str, given: list[str], max_bytes: int
) -> list[str]:
    command = [
        executable,
        "--no-config",
        # Ignore rules: .gitignore and .git/info/exclude only, in every directory and
        # whether or not a repository is there, none above the search root but the
        # workspace root's given ones; hidden files searched; .git never.
        "--no-require-git",
        "--no-ignore-dot",
        "--no-ignore-global",
        "--no-ignore-parent",
        *(f"--ignore-file={os.path.join(root, *file.split('/'))}" for file in given),
        "--hidden",
        "--glob",
        "!.git",
        "--max-filesize",
        str(max_bytes),
        # Every file is searched whole; a NUL makes ripgrep report its offset (and split
        # the line there: such a file is dropped or searched again by Python).
        "--binary",
        "--encoding",
        "none",
        "--fixed-strings",
        "--ignore-case" if query.rg_ignore_case else "--case-sensitive",
        "--json",
    ]
    literals = sorted(text for text, _ in query.rg_literals) if query.rg_literals else [""]
    for literal in literals:
        command += ["-e", literal]
    command.append("--")
    if start:
        command.append("./" + start)  # "-" alone would name standard input, even after "--"
    return command


def search_tree(
    fs: FileSystem,
    query: GrepQuery,
    root: str,
    start: str,
    reported: str,
    max_bytes: int,
    executable: str,
    check: Callable[[], None],
    walk: Callable[[list[str]], int | None],
    lists: Callable[[str], bool | None],
    keep: int | None = None,
) -> TreeSearch | None:
    """Let ripgrep walk ``start`` (root-relative directory) itself while ``walk(given)``
    runs the engine's walk and counts its candidates; None when ``walk`` finds ripgrep's
    walk would differ (it returns None; ``given``: the root's ignore files ripgrep got,
    for ``walks_alike``). Without candidates ripgrep is not waited for. ``lists(path)``
    tells whether the walk keeps a file below ``start``, None while it has not listed the
    file's directory yet. With ``keep``, the ``keep`` first matches (``Selection``).

    Results are named ``reported`` + the path below ``start``. Raises ``RipgrepFailed``
    when ripgrep fails, prints anything on its standard error or output that is not its
    JSON; the caller then searches its own candidate list.
    """
    given = root_ignore_files(fs, root, start)
    command = _tree_command(executable, query, root, start, given, max_bytes)
    stop = threading.Event()
    messages = _Messages(fs, query, root, start, reported, keep, lists, check, stop)
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(_run, command, root, check, stop, messages, keep is not None)
        try:
            listed = walk(given)
        except BaseException:
            stop.set()
            raise
        if not listed:
            stop.set()
            with contextlib.suppress(RipgrepFailed):
                running.result()  # a failure of its checks is the file-list mode's to meet
            return None if listed is None else TreeSearch([], 0, [], False, None)
        found = running.result()
    if found.error is not None:
        raise found.error
    return found


def _run(
    command: list[str],
    root: str,
    check: Callable[[], None],
    stop: threading.Event,
    messages: _Messages,
    streamed: bool,
) -> TreeSearch:
    if streamed:
        returncode, err = stream(command, root, check, stop, messages.feed)
        return messages.finish(returncode, err)
    returncode, out, err = spawn(command, root, check, stop)
    return messages.finish(returncode, err, out)


def _json_text(value: object) -> str | bytes:
    """A JSON "arbitrary data" object: {"text": ...} or {"bytes": base64}."""
    if isinstance(value, dict):
        text, data = value.get("text"), value.get("bytes")
        if isinstance(text, str):
            return text
        if isinstance(data, str):
            return base64.b64decode(data, validate=True)
    raise RipgrepFailed(f"unexpected ripgrep output: {value!r}")


# ripgrep's match message as it prints it, path and line as text: read without building
# the whole JSON object (a few microseconds each, which adds up over thousands). Any other
# form (bytes, another field order) is decoded as JSON.
_JSON_STRING = rb'"([^"\\]*(?:\\.[^"\\]*)*)"'
_MATCH = re.compile(
    rb'\{"type":"match","data":\{"path":\{"text":'
    + _JSON_STRING
    + rb'\},"lines":\{"text":'
    + _JSON_STRING
    + rb'\},"line_number":(\d+),'
)
_END = re.compile(
    rb'\{"type":"end","data":\{"path":\{"text":' + _JSON_STRING + rb'\},"binary_offset":null,'
)


def _json_string(raw: bytes) -> str:
    """A JSON string's body as text; the usual escaped newline at its end is cheap."""
    body = raw[:-2] if raw.endswith(b"\\n") else raw
    if b"\\" in body:
        return str(json.loads(b'"' + raw + b'"'))
    text = body.decode("utf-8")
    return text if body is raw else text + "\n"


# An empty, "." or ".." segment: not a path a walk below the search root prints.
_ODD_PATH = re.compile(r"(?:^|/)\.{0,2}(?:/|$)")


def _below(path: str | bytes, head: str) -> str:
    """A path ripgrep printed, relative to the search root; it must lie below it."""
    text = os.fsdecode(path)
    if not text.startswith(head):
        raise RipgrepFailed(f"ripgrep reported a path outside its root: {text!r}")
    below = text[len(head) :]
    if _ODD_PATH.search(below) is not None:
        raise RipgrepFailed(f"ripgrep reported an unexpected path: {text!r}")
    return below


class _Messages:
    """ripgrep's JSON lines, read as they come (``feed``), and Python's verdict on them.

    A file's candidate lines are held until its end message tells whether it is binary:
    a NUL in its first 8 KiB drops it, a NUL further on has it searched again by the
    Python backend (ripgrep split its lines at the NUL), and otherwise its lines are
    checked with ``re`` in batches of ``BATCH_BYTES``; the matches go to a ``Selection``.
    The outcome is the one of reading the whole output first: ripgrep's failure or an
    output that is not its JSON wins (``RipgrepFailed``), so a failure of the checks is
    held until ripgrep has exited, its output is read and the walks are found alike (a
    cancellation is not held).
    Each file printed is looked up in the walk's listing as soon as the walk has listed
    its directory; past ``UNCHECKED_FILES`` waiting, ripgrep waits for the walk.
    """

    def __init__(
        self,
        fs: FileSystem,
        query: GrepQuery,
        root: str,
        start: str,
        reported: str,
        keep: int | None,
        lists: Callable[[str], bool | None],
        check: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        self.fs = fs
        self.query = query
        self.lists = lists
        self.check = check
        self.stop = stop
        self.head = "./" + start + "/" if start else ""
        self.prefix = reported + "/" if reported else ""
        self.base = os.path.join(root, *start.split("/")) if start else root
        self.found = Selection(keep)
        self.files: dict[str, list[tuple[int, str | bytes]]] = {}  # until the file's end
        self.lines: list[tuple[str, int, str]] = []  # candidate lines to check
        self.line_bytes = 0
        self.again: list[str] = []  # files to search again
        self.unchecked: list[str] = []
        self.alien = False
        self.searched: int | None = None
        self.error: ToolError | None = None
        self.rest = b""  # a line not ended yet
        self.printed: bytes | None = None  # the last path read fast, as printed
        self.below = ""  # and below the search root

    def feed(self, chunk: bytes) -> None:
        """The next bytes of ripgrep's output."""
        lines = (self.rest + chunk if self.rest else chunk).split(b"\n")
        self.rest = lines.pop()
        for raw in lines:
            self._read(raw)

    def finish(self, returncode: int, err: bytes, rest: bytes = b"") -> TreeSearch:
        """The outcome, once ripgrep has exited (``rest``: output not fed yet)."""
        if returncode not in (0, 1) or err.strip():
            message = err.decode("utf-8", "replace").strip().splitlines()
            raise RipgrepFailed(message[0] if message else f"exit status {returncode}")
        if rest:
            self.feed(rest)
        if self.rest:
            self._read(self.rest)  # a last line without a newline
            self.rest = b""
        if self.searched is None:
            raise RipgrepFailed("ripgrep printed no summary")
        for below in list(self.files):
            self._end(below, None)
        self._check_lines()
        self._search_again()
        matches = self.found.matches()
        return TreeSearch(matches, self.searched, self.unchecked, self.alien, self.error)

    def _read(self, raw: bytes) -> None:
        """One JSON line."""
        if not raw or raw.startswith(b'{"type":"begin"'):
            return
        try:
            fast = _MATCH.match(raw)
            if fast is not None:
                printed, text, digits = fast.groups()
                self._line(self._path(printed), int(digits), _json_string(text))
                return
            fast = _END.match(raw)
            if fast is not None:
                self._end(self._path(fast.group(1)), None)
                return
            message = json.loads(raw)
            kind = message["type"]
            data = message["data"]
            if kind == "match":
                number = data["line_number"]
                if not isinstance(number, int):
                    raise RipgrepFailed(f"unexpected ripgrep output: {message!r}")
                below = _below(_json_text(data["path"]), self.head)
                self._line(below, number, _json_text(data["lines"]))
                return
            if kind == "summary":
                self.searched = int(data["stats"]["searches"])
                return
            if kind == "begin":
                return
            if kind != "end":
                raise RipgrepFailed(f"unexpected ripgrep output: {message!r}")
            below = _below(_json_text(data["path"]), self.head)
            offset = data["binary_offset"]
            offset = None if offset is None else int(offset)
        except (KeyError, TypeError, ValueError, RecursionError) as exc:
            raise RipgrepFailed(f"unexpected ripgrep output: {exc!r}") from exc
        self._end(below, offset)

    def _path(self, printed: bytes) -> str:
        if printed != self.printed:
            self.below = _below(_json_string(printed), self.head)
            self.printed = printed
        return self.below

    def _line(self, below: str, number: int, raw: str | bytes) -> None:
        found = self.files.get(below)
        if found is None:
            self.files[below] = [(number, raw)]
        else:
            found.append((number, raw))

    def _end(self, below: str, offset: int | None) -> None:
        """A file's output is complete (``offset``: of its first NUL, if any)."""
        found = self.files.pop(below, None)
        if found is None:
            return
        self._note(below)
        if offset is not None:
            if offset >= BINARY_SNIFF_BYTES:
                self.again.append(below)
                if len(self.again) >= _AGAIN_FILES:
                    self._search_again()
            return
        path = self.prefix + below
        for number, raw in found:
            if number == 1 and raw in (BOM, "\ufeff"):
                continue  # the file is nothing but a BOM: no line at all
            if isinstance(raw, bytes):
                line = decode_line(raw.removesuffix(b"\n"), number == 1)
            else:
                line = raw.removesuffix("\n")
                if number == 1:
                    line = line.removeprefix("\ufeff")
                line = line.removesuffix("\r")
            self.lines.append((path, number, line))
            self.line_bytes += len(line) + _LINE_COST
        if self.line_bytes >= BATCH_BYTES:
            self._check_lines()

    def _note(self, below: str) -> None:
        """Look ``below`` up in the walk's listing, or keep it for later."""
        if self._known(below):
            return
        self.unchecked.append(below)
        if len(self.unchecked) <= UNCHECKED_FILES:
            return
        while True:  # until the walk has listed half of them: ripgrep waits meanwhile
            self.unchecked = [name for name in self.unchecked if not self._known(name)]
            if len(self.unchecked) <= UNCHECKED_FILES // 2:
                return
            if self.stop.wait(_CATCH_UP_SECONDS):
                raise RipgrepFailed("stopped")
            self.check()

    def _known(self, below: str) -> bool:
        listed = self.lists(below)
        if listed is False:
            self.alien = True
        return listed is not None

    def _held(self, work: Callable[[], None]) -> None:
        """Run a check, holding its failure (the first) for ``search_tree``."""
        if self.error is not None:
            return
        try:
            work()
        except ToolError as exc:
            if exc.code == _errors.CANCELLED:
                raise
            self.error = exc

    def _check_lines(self) -> None:
        lines, self.lines, self.line_bytes = self.lines, [], 0
        if lines:  # in a grep worker: a deadline stops it
            self._held(lambda: self.found.add(match_lines(self.query, lines, self.check)))

    def _search_again(self) -> None:
        by_directory: dict[str, list[str]] = {}
        for below in self.again:
            directory, _, name = below.rpartition("/")
            by_directory.setdefault(directory, []).append(name)
        self.again = []
        if by_directory:
            self._held(lambda: self._search_files(by_directory))

    def _search_files(self, by_directory: dict[str, list[str]]) -> None:
        for directory, names in sorted(by_directory.items()):
            self.check()
            absolute = os.path.join(self.base, *directory.split("/")) if directory else self.base
            shown = self.prefix + directory + "/" if directory else self.prefix
            for name, data in self.fs.read_files(absolute, names):
                if isinstance(data, OSError):
                    if data.errno in SKIPPED_ERRNOS:
                        continue
                    raise _errors.from_oserror(data, shown + name, action="grep")
                if may_match(self.query, data):
                    self.found.add(search_files(self.query, [(shown + name, data)], self.check))
