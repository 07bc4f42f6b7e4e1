"""Ignore rules for search: git's ``.gitignore`` semantics, explainable (DESIGN §4 "Glob").

Rules, as git applies them (``dir.c``; a property test compares with ``git ls-files
--others --exclude-standard`` on generated trees):

* Every directory's ``.gitignore`` applies to the paths below that directory. For one
  path, the deepest file with a matching line decides; inside a file the last matching
  line decides. ``.git/info/exclude`` of the workspace root comes after all of them.
  User-global excludes (``core.excludesFile``) are not read: the result must not depend
  on the machine that runs the search.
* A line is a wildmatch pattern (``_wildmatch``): ``!`` negates, a trailing ``/`` makes it
  match directories only, a pattern without a ``/`` (other than the trailing one) matches
  the name at any depth, any other is anchored at its file's directory (a leading ``/``
  only anchors). Comments (``#``), blank lines, trailing unescaped spaces, a CR before
  the newline and a UTF-8 BOM are dropped as git drops them. Matching is on bytes.
* An excluded directory is not entered, so nothing below it can be re-included (git's
  documented rule); that is the walker's part (``_walk``).
* A symlink is never a directory here, whatever it points to (git does not follow it).
* A ``.gitignore`` that is a symlink is not read (git refuses to follow it).
* Built in, always: ``.git`` (any entry of that name) and the engine's state directory
  when it lies inside the workspace.

Why not ``pathspec.GitIgnoreSpec`` for these rules: it answers "is this file excluded",
folding matches of the file's parent directories into the answer, so it cannot say
whether one line matches one path exactly. Nested files need exactly that: with
``*.txt`` at the root and ``!build/`` in ``sub/.gitignore``, git excludes
``sub/build/a.txt`` (``!build/`` matches the directory, not the file), while the spec of
``sub/.gitignore`` reports the file as re-included. Its ``foo/**/`` also matches the file
``foo/x``, which git keeps. ``pathspec`` is used where its semantics are the wanted ones:
Grep's ``include`` filter (``_search``).

Compiled files are cached process-wide by their bytes and place; a directory's rule
stack is cached by the files in it, so a walk compiles each distinct stack once.

Each compiled file also tells whether its bytes keep to a portable subset of the syntax
(``portable_syntax``): one that ripgrep's gitignore parser reads as git does, so that
ripgrep may walk a tree itself where every ignore file is portable (``_grep_rg``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import attrs

from editspec.reference.search import _wildmatch
from editspec.reference.search._ignore_portable import portable_syntax

BUILTIN = "<builtin>"
GITIGNORE = ".gitignore"
INFO_EXCLUDE = ".git/info/exclude"
_BOM = b"\xef\xbb\xbf"
_CACHE_LIMIT = 4096


@attrs.frozen(kw_only=True, eq=False)
class IgnoreRule:
    """One line of an ignore file (or a built-in exclusion), compiled."""

    source: str  # "sub/.gitignore", ".git/info/exclude" or BUILTIN
    line: int | None
    pattern: str  # as written, after git's trimming (with its "!" and trailing "/")
    negated: bool
    dir_only: bool
    basename: bool  # no "/" inside: matched against the entry's name at any depth
    regex: re.Pattern[bytes] | None = None
    # A path rule without "**", brackets or escapes matches paths of exactly this many
    # segments below its file's directory; None: any number.
    segments: int | None = None
    # A name rule without wildcards (``literal``) or of the form "*" + literal (``suffix``),
    # in byte units: tested with ``==`` / ``endswith``, as git does.
    literal: str | None = None
    suffix: str | None = None


def builtin_rule(pattern: str) -> IgnoreRule:
    return IgnoreRule(
        source=BUILTIN, line=None, pattern=pattern, negated=False, dir_only=False, basename=False
    )


def _trim_trailing_spaces(line: bytes) -> bytes:
    """git's trim_trailing_spaces: drop unescaped trailing spaces (not tabs)."""
    last_space: int | None = None
    index = 0
    while index < len(line):
        ch = line[index]
        if ch == 0x20:
            if last_space is None:
                last_space = index
        elif ch == 0x5C:  # backslash escapes the next byte
            index += 1
            if index >= len(line):
                return line
            last_space = None
        else:
            last_space = None
        index += 1
    return line if last_space is None else line[:last_space]


def _compile_rule(units: str, source: str, line: int) -> IgnoreRule:
    """Compile one trimmed line (bytes as Latin-1 units), after git's parse_path_pattern."""
    shown = units.encode("latin-1").decode("utf-8", "replace")
    negated = units.startswith("!")
    body = units[1:] if negated else units
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    basename = "/" not in body
    segments: int | None = None
    literal = suffix = None
    if basename:
        # Atomic stars keep a hostile line (*a*a*a*a*a*a*b) from backtracking on every
        # long name, where that adds no group: the rules' combined regex numbers them.
        source_regex = _wildmatch.translate(
            body, pathname=False, atomic=not _wildmatch.ATOMIC_ADDS_GROUPS
        )
        if not _wildmatch.has_wildcard(body):
            literal = body
        elif body.startswith("*") and not _wildmatch.has_wildcard(body[1:]):
            suffix = body[1:]
    else:
        if not any(mark in body for mark in ("**", "[", "\\")):
            segments = body.strip("/").count("/") + 1 if not body.startswith("//") else None
        # match_pathname: a literal prefix is compared first and the rest is wildmatched as
        # a pattern of its own (so "foo**/bar" has a "**" at the start of that rest).
        prefix_length = _wildmatch.simple_length(body)
        if body.startswith("/"):
            body = body[1:]
            prefix_length -= 1
        source_regex = re.escape(body[:prefix_length]) + _wildmatch.translate(
            body[prefix_length:], pathname=True, atomic=not _wildmatch.ATOMIC_ADDS_GROUPS
        )
    return IgnoreRule(
        source=source,
        line=line,
        pattern=shown,
        negated=negated,
        dir_only=dir_only,
        basename=basename,
        regex=_wildmatch.compile_units(source_regex),
        segments=segments,
        literal=literal,
        suffix=suffix,
    )


def parse_rules(content: bytes, source: str) -> list[IgnoreRule]:
    """The rules of one ignore file, in file order (git's add_patterns_from_buffer)."""
    if content.startswith(_BOM):
        content = content[len(_BOM) :]
    rules: list[IgnoreRule] = []
    for number, raw in enumerate(content.split(b"\n"), start=1):
        if not raw or raw.startswith(b"#"):
            continue
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        # git handles the line as a C string from here on: a NUL byte ends it.
        raw = _trim_trailing_spaces(raw.split(b"\0", 1)[0])
        if not raw or raw in (b"!", b"/", b"!/"):
            continue  # a pattern that matches nothing
        rules.append(_compile_rule(raw.decode("latin-1"), source, number))
    return rules


def _source(rule: IgnoreRule) -> bytes:
    """The regex source of a rule read from a file (built-in rules have none)."""
    assert rule.regex is not None, rule
    return rule.regex.pattern


def _alternation(rules: Sequence[IgnoreRule]) -> re.Pattern[bytes] | None:
    """One regex whose group ``k`` is ``rules[-k]``: the first alternative that matches is
    the last rule in file order, which is the one git applies."""
    if not rules:
        return None
    parts = [b"(" + _source(rule) + b")" for rule in reversed(rules)]
    return re.compile(b"|".join(parts), re.DOTALL)


class IgnoreFile:
    """The compiled rules of one ignore file, rooted at ``base`` (root-relative, "" = root)."""

    def __init__(
        self, source: str, base: str, rules: Sequence[IgnoreRule], portable: bool = False
    ) -> None:
        self.source = source
        self.base = base
        self.rules = tuple(rules)
        self.portable = portable  # ``portable_syntax`` of the bytes it was compiled from
        self.prefix = (base + "/").encode("utf-8", "surrogateescape") if base else b""
        names = [r for r in self.rules if r.basename]
        paths = [r for r in self.rules if not r.basename]
        self._names = (
            [r for r in names if not r.dir_only],
            names,
        )
        self._paths = (
            [r for r in paths if not r.dir_only],
            paths,
        )
        self._name_rx = (_alternation(self._names[0]), _alternation(self._names[1]))
        self._path_rx = (_alternation(self._paths[0]), _alternation(self._paths[1]))

    def name_rules(self, is_dir: bool) -> list[IgnoreRule]:
        return self._names[is_dir]

    def path_rules(self, is_dir: bool) -> list[IgnoreRule]:
        return self._paths[is_dir]

    def last_match(self, name: bytes, relative: bytes, is_dir: bool) -> IgnoreRule | None:
        """The rule git applies to the entry ``relative`` (to ``base``), or None."""
        best: IgnoreRule | None = None
        best_line = 0
        name_rx = self._name_rx[is_dir]
        if name_rx is not None:
            found = name_rx.fullmatch(name)
            if found is not None and found.lastindex:
                candidates = self._names[is_dir]
                best = candidates[len(candidates) - found.lastindex]
                best_line = best.line or 0
        path_rx = self._path_rx[is_dir]
        if path_rx is not None:
            found = path_rx.fullmatch(relative)
            if found is not None and found.lastindex:
                candidates = self._paths[is_dir]
                rule = candidates[len(candidates) - found.lastindex]
                if best is None or (rule.line or 0) > best_line:
                    best = rule
        return best


_file_cache: dict[tuple[str, str, bytes], IgnoreFile] = {}
_stack_cache: dict[tuple[IgnoreFile, ...], StackMatcher] = {}
_cache_lock = threading.Lock()


def ignore_file(content: bytes, source: str, base: str) -> IgnoreFile:
    """The compiled ignore file for these bytes at this place (cached process-wide)."""
    key = (source, base, content)
    cached = _file_cache.get(key)
    if cached is not None:
        return cached
    compiled = IgnoreFile(source, base, parse_rules(content, source), portable_syntax(content))
    with _cache_lock:
        if len(_file_cache) >= _CACHE_LIMIT:
            _file_cache.clear()
        _file_cache[key] = compiled
    return compiled


_Gate = Callable[[Any], object]  # truthy when it matches


def _name_parts(rules: list[IgnoreRule], text: bool) -> tuple[frozenset[Any], tuple[Any, ...], Any]:
    """The name rules split for speed: literal names (a set lookup), "*.ext" suffixes (one
    ``endswith``) and one regex ``fullmatch`` for the rest (None when there is none)."""

    def unit(value: str) -> Any:
        return value if text else value.encode("latin-1")

    literals = frozenset(unit(r.literal) for r in rules if r.literal is not None)
    suffixes = tuple(unit(r.suffix) for r in rules if r.suffix is not None)
    others = [_source(r) for r in rules if r.literal is None and r.suffix is None]
    regex: Any = None
    if others:
        source = b"|".join(others)
        regex = re.compile(source.decode("latin-1") if text else source, re.DOTALL).fullmatch
    return literals, suffixes, regex


def _name_gate(rules: list[IgnoreRule], text: bool) -> _Gate | None:
    """One test for "does any of these name rules match": a set lookup for literal names,
    one ``endswith`` for "*.ext" rules, a regex for the rest (fastest first)."""
    if not rules:
        return None
    literals, suffixes, regex = _name_parts(rules, text)
    if regex is None and not suffixes:
        return literals.__contains__
    if regex is None and not literals:
        return lambda name: name.endswith(suffixes)
    if not literals and not suffixes:
        return regex  # type: ignore[no-any-return]
    return lambda name: (
        name in literals or (suffixes and name.endswith(suffixes)) or (regex and regex(name))
    )


class _Gates(NamedTuple):
    """Fast tests for the entries of directories at one depth: does any rule that
    excludes (positive) or re-includes (negative) match the name or the path?"""

    positive_name: _Gate | None
    positive_path: _Gate | None
    negative_name: _Gate | None
    negative_path: _Gate | None
    # ``positive_name`` taken apart, for a walk that tests names inline: literal names,
    # suffixes and the regex ``fullmatch`` of the other rules (empty, empty, None: no rule).
    positive_parts: tuple[frozenset[Any], tuple[Any, ...], Any]


class StackMatcher:
    """The ignore files that apply in one directory, deepest first, with fast gates.

    ``excluded`` first asks whether any excluding rule of the stack matches the entry
    (one regex over its name, one over its root-relative path); if none does, the entry
    is kept; if one does and no re-including rule matches, it is excluded; only when both
    kinds match do the files decide, deepest first, by their last matching rule. Path
    rules of fixed depth join the gates only at the depth they can match.
    """

    def __init__(self, files: tuple[IgnoreFile, ...]) -> None:
        self.files = files
        self.empty = not any(file.rules for file in self.files)
        self._gates: dict[tuple[int, bool, bool], _Gates] = {}
        self._inline: dict[int, tuple[Any, ...]] = {}

    def _compile_gates(self, depth: int, is_dir: bool, text: bool) -> _Gates:
        """Gates for entries of a directory at ``depth`` (0 = the root)."""
        names: dict[bool, list[IgnoreRule]] = {False: [], True: []}
        paths: dict[bool, list[bytes]] = {False: [], True: []}
        for file in self.files:
            for rule in file.name_rules(is_dir):
                names[rule.negated].append(rule)
            base_depth = file.base.count("/") + 1 if file.base else 0
            by_sign: dict[bool, list[bytes]] = {False: [], True: []}
            for rule in file.path_rules(is_dir):
                if rule.segments is not None and base_depth + rule.segments != depth + 1:
                    continue
                by_sign[rule.negated].append(_source(rule))
            for negated, patterns in by_sign.items():
                if patterns:
                    paths[negated].append(
                        re.escape(file.prefix) + b"(?:" + b"|".join(patterns) + b")"
                    )

        def gate(parts: list[bytes]) -> _Gate | None:
            if not parts:
                return None
            source = b"|".join(parts)
            if text:
                return re.compile(source.decode("latin-1"), re.DOTALL).fullmatch
            return re.compile(source, re.DOTALL).fullmatch

        return _Gates(
            _name_gate(names[False], text),
            gate(paths[False]),
            _name_gate(names[True], text),
            gate(paths[True]),
            _name_parts(names[False], text),
        )

    def gates(self, depth: int, is_dir: bool, text: bool) -> _Gates:
        """The gates for entries of directories at ``depth``, over ``str`` (ASCII
        subjects) or ``bytes``."""
        key = (depth, is_dir, text)
        gates = self._gates.get(key)
        if gates is None:
            gates = self._gates[key] = self._compile_gates(depth, is_dir, text)
        return gates

    def inline_gates(self, depth: int) -> tuple[Any, ...]:
        """The ``str`` gates of entries at ``depth`` for a walk that tests names inline, flat:
        for files, then for directories, the parts of the excluding name rules (literal
        names, suffixes, regex), the excluding path gate and both re-including gates."""
        flat = self._inline.get(depth)
        if flat is None:
            flat = ()
            for is_dir in (False, True):
                gates = self.gates(depth, is_dir, True)
                flat += (*gates.positive_parts, gates.positive_path, *gates[2:4])
            self._inline[depth] = flat
        return flat

    def excluded(
        self, directory: str, depth: int, name: str, is_dir: bool, ascii_directory: bool
    ) -> bool:
        """Whether entry ``name`` of ``directory`` (root-relative, "" or ending in "/", at
        ``depth``) is excluded. For an ASCII name in an ASCII directory, bytes and
        characters coincide (and a pattern's non-ASCII units match nothing), so the gates
        run over ``str`` and nothing is encoded."""
        text = ascii_directory and name.isascii()
        gates = self.gates(depth, is_dir, text)
        subject: Any = name if text else name.encode("utf-8", "surrogateescape")
        path: Any = None
        if gates.positive_name is None or not gates.positive_name(subject):
            if gates.positive_path is None:
                return False
            path = directory + name
            if not text:
                path = path.encode("utf-8", "surrogateescape")
            if not gates.positive_path(path):
                return False
        if gates.negative_name is None or not gates.negative_name(subject):
            if gates.negative_path is None:
                return True
            if path is None:
                path = directory + name
                if not text:
                    path = path.encode("utf-8", "surrogateescape")
            if not gates.negative_path(path):
                return True
        rule = self.check(
            directory.encode("utf-8", "surrogateescape"),
            name.encode("utf-8", "surrogateescape"),
            is_dir,
        )
        return rule is not None and not rule.negated

    def check(self, directory: bytes, name: bytes, is_dir: bool) -> IgnoreRule | None:
        """The deciding rule for entry ``name`` of ``directory`` (root-relative, b"" or
        ending in b"/"), or None when no rule matches."""
        path = directory + name
        for file in self.files:
            rule = file.last_match(name, path[len(file.prefix) :], is_dir)
            if rule is not None:
                return rule
        return None


def stack_matcher(files: tuple[IgnoreFile, ...]) -> StackMatcher:
    """The matcher for these files (deepest first), cached process-wide."""
    cached = _stack_cache.get(files)
    if cached is not None:
        return cached
    matcher = StackMatcher(files)
    with _cache_lock:
        if len(_stack_cache) >= _CACHE_LIMIT:
            _stack_cache.clear()
        _stack_cache[files] = matcher
    return matcher


class RuleStack:
    """An immutable chain of ignore files from the root down to one directory."""

    __slots__ = ("_matcher", "files")

    def __init__(self, files: tuple[IgnoreFile, ...] = ()) -> None:
        self.files = files  # deepest first, ``.git/info/exclude`` last
        self._matcher: StackMatcher | None = None

    def push(self, file: IgnoreFile) -> RuleStack:
        if not file.rules:
            return self
        return RuleStack((file, *self.files))

    @property
    def matcher(self) -> StackMatcher:
        if self._matcher is None:
            self._matcher = stack_matcher(self.files)
        return self._matcher
