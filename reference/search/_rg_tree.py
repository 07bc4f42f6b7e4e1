"""Ripgrep walking the search root itself: the tree mode of ``_grep_rg``.

See ``_grep_rg``'s docstring for when it applies. ``walks_alike`` decides whether
ripgrep's walk keeps the engine's files on this tree; ``search_tree`` runs it with
``--json`` and checks that every match and the count of files searched are what the
engine's walk would give (None otherwise: the caller falls back to the file list).
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
from editspec.reference._results import GrepMatch
from editspec.reference.search._grep_py import SKIPPED_ERRNOS
from editspec.reference.search._grep_query import (
    BINARY_SNIFF_BYTES,
    BOM,
    GrepQuery,
    decode_line,
    may_match,
)
from editspec.reference.search._grep_rg import RipgrepFailed, spawn
from editspec.reference.search._grep_worker import match_lines, search_files
from editspec.reference.search._ignore import GITIGNORE, INFO_EXCLUDE
from editspec.reference.search._walk import DIR, FILE, GIT_DIR, OTHER, SYMLINK

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem
    from editspec.reference.search._walk import SearchTree

# Whether ripgrep may walk the tree itself where its walk provably equals the engine's.
RG_WALKS = True


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

    matches: list[GrepMatch]
    searched: int  # files ripgrep searched (its own count)
    files: list[str]  # the files it printed lines of, relative to the search root


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
) -> TreeSearch | None:
    """Let ripgrep walk ``start`` (root-relative directory) itself while ``walk(given)``
    runs the engine's walk and counts its candidates; None when ``walk`` finds ripgrep's
    walk would differ (it returns None; ``given``: the root's ignore files ripgrep got,
    for ``walks_alike``). Without candidates ripgrep is not waited for.

    Results are named ``reported`` + the path below ``start``. Raises ``RipgrepFailed``
    when ripgrep fails, prints anything on its standard error or output that is not its
    JSON; the caller then searches its own candidate list.
    """
    given = root_ignore_files(fs, root, start)
    command = _tree_command(executable, query, root, start, given, max_bytes)
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(spawn, command, root, check, stop)
        try:
            listed = walk(given)
        except BaseException:
            stop.set()
            raise
        if not listed:
            stop.set()
            with contextlib.suppress(RipgrepFailed):
                running.result()
            return None if listed is None else TreeSearch([], 0, [])
        returncode, out, err = running.result()
    if returncode not in (0, 1) or err.strip():
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise RipgrepFailed(message[0] if message else f"exit status {returncode}")
    lines, binary, searched = _messages(out, start)
    matches = _verify_tree(fs, query, root, start, reported, lines, binary, check)
    return TreeSearch(matches, searched, list(lines))


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


def _json_string(raw: bytes) -> str:
    """A JSON string's body as text; the usual escaped newline at its end is cheap."""
    body = raw[:-2] if raw.endswith(b"\\n") else raw
    if b"\\" in body:
        return str(json.loads(b'"' + raw + b'"'))
    text = body.decode("utf-8")
    return text if body is raw else text + "\n"


def _messages(
    out: bytes, start: str
) -> tuple[dict[str, list[tuple[int, str | bytes]]], dict[str, int], int]:
    """ripgrep's JSON lines: candidate lines and NUL offsets per path below ``start``,
    and the number of files searched."""
    head = "./" + start + "/" if start else ""
    lines: dict[str, list[tuple[int, str | bytes]]] = {}
    binary: dict[str, int] = {}
    searched: int | None = None
    match = _MATCH.match
    texts: dict[bytes, list[tuple[int, str | bytes]]] = {}  # by the path as printed
    try:
        for raw in out.split(b"\n"):
            if not raw or raw.startswith(b'{"type":"begin"'):
                continue
            fast = match(raw)
            if fast is not None:
                printed, text, digits = fast.groups()
                candidate: tuple[int, str | bytes] = (int(digits), _json_string(text))
                if printed in texts:
                    texts[printed].append(candidate)
                else:
                    texts[printed] = [candidate]
                continue
            if raw.startswith(b'{"type":"end"') and b'"binary_offset":null' in raw:
                continue
            message = json.loads(raw)
            kind = message["type"]
            data = message["data"]
            if kind == "match":
                path = _below(_json_text(data["path"]), head)
                number = data["line_number"]
                if not isinstance(number, int):
                    raise RipgrepFailed(f"unexpected ripgrep output: {message!r}")
                lines.setdefault(path, []).append((number, _json_text(data["lines"])))
            elif kind == "end":
                offset = data["binary_offset"]
                if offset is not None:
                    binary[_below(_json_text(data["path"]), head)] = int(offset)
            elif kind == "summary":
                searched = int(data["stats"]["searches"])
            elif kind != "begin":
                raise RipgrepFailed(f"unexpected ripgrep output: {message!r}")
        for printed, candidates in texts.items():
            lines.setdefault(_below(_json_string(printed), head), []).extend(candidates)
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise RipgrepFailed(f"unexpected ripgrep output: {exc!r}") from exc
    if searched is None:
        raise RipgrepFailed("ripgrep printed no summary")
    return lines, binary, searched


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


def _verify_tree(
    fs: FileSystem,
    query: GrepQuery,
    root: str,
    start: str,
    reported: str,
    lines: dict[str, list[tuple[int, str | bytes]]],
    binary: dict[str, int],
    check: Callable[[], None],
) -> list[GrepMatch]:
    """Python's verdict on ripgrep's candidate lines: a file with a NUL in its first
    8 KiB is binary; one with a NUL further on is searched again by the Python backend
    (ripgrep split its lines at the NUL); every other line is checked with ``re``."""
    prefix = reported + "/" if reported else ""
    candidates: list[tuple[str, int, str]] = []
    again: dict[str, list[str]] = {}
    for below, found in lines.items():
        offset = binary.get(below)
        if offset is not None:
            if offset >= BINARY_SNIFF_BYTES:
                directory, _, name = below.rpartition("/")
                again.setdefault(directory, []).append(name)
            continue
        path = prefix + below
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
            candidates.append((path, number, line))
    matches = match_lines(query, candidates, check)  # in a grep worker: a deadline stops it
    base = os.path.join(root, *start.split("/")) if start else root
    for directory, names in sorted(again.items()):
        check()
        absolute = os.path.join(base, *directory.split("/")) if directory else base
        shown = prefix + directory + "/" if directory else prefix
        for name, data in fs.read_files(absolute, names):
            if isinstance(data, OSError):
                if data.errno in SKIPPED_ERRNOS:
                    continue
                raise _errors.from_oserror(data, shown + name, action="grep")
            if may_match(query, data):
                matches.extend(search_files(query, [(shown + name, data)], check))
    return matches
