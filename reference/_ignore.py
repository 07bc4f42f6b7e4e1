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
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

import attrs

from editspec.reference import _wildmatch

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
    if basename:
        source_regex = _wildmatch.translate(body, pathname=False)
    else:
        # match_pathname: a literal prefix is compared first and the rest is wildmatched as
        # a pattern of its own (so "foo**/bar" has a "**" at the start of that rest).
        prefix_length = _wildmatch.simple_length(body)
        if body.startswith("/"):
            body = body[1:]
            prefix_length -= 1
        source_regex = re.escape(body[:prefix_length]) + _wildmatch.translate(
            body[prefix_length:], pathname=True
        )
    return IgnoreRule(
        source=source,
        line=line,
        pattern=shown,
        negated=negated,
        dir_only=dir_only,
        basename=basename,
        regex=_wildmatch.compile_units(source_regex),
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


def _alternation(rules: Sequence[IgnoreRule]) -> re.Pattern[bytes] | None:
    """One regex whose group ``k`` is ``rules[-k]``: the first alternative that matches is
    the last rule in file order, which is the one git applies."""
    if not rules:
        return None
    parts = [b"(" + rule.regex.pattern + b")" for rule in reversed(rules) if rule.regex]
    return re.compile(b"|".join(parts), re.DOTALL)


class IgnoreFile:
    """The compiled rules of one ignore file, rooted at ``base`` (root-relative, "" = root)."""

    def __init__(self, source: str, base: str, rules: Sequence[IgnoreRule]) -> None:
        self.source = source
        self.base = base
        self.rules = tuple(rules)
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
    compiled = IgnoreFile(source, base, parse_rules(content, source))
    with _cache_lock:
        if len(_file_cache) >= _CACHE_LIMIT:
            _file_cache.clear()
        _file_cache[key] = compiled
    return compiled


class StackMatcher:
    """The ignore files that apply in one directory, deepest first, with a fast gate.

    ``check`` first runs one regex over the entry's name and one over its root-relative
    path that match when *any* rule of the stack could; only then does it ask the files,
    deepest first, for their last matching rule.
    """

    def __init__(self, files: tuple[IgnoreFile, ...]) -> None:
        self.files = files
        self._gates = (self._gate(False), self._gate(True))

    def _gate(self, is_dir: bool) -> tuple[re.Pattern[bytes] | None, re.Pattern[bytes] | None]:
        names: list[bytes] = []
        paths: list[bytes] = []
        for file in self.files:
            names.extend(r.regex.pattern for r in file.name_rules(is_dir) if r.regex)
            rules = [r.regex.pattern for r in file.path_rules(is_dir) if r.regex]
            if rules:
                paths.append(re.escape(file.prefix) + b"(?:" + b"|".join(rules) + b")")
        name_gate = re.compile(b"|".join(names), re.DOTALL) if names else None
        path_gate = re.compile(b"|".join(paths), re.DOTALL) if paths else None
        return name_gate, path_gate

    @property
    def empty(self) -> bool:
        return not any(file.rules for file in self.files)

    def check(self, directory: bytes, name: bytes, is_dir: bool) -> IgnoreRule | None:
        """The deciding rule for entry ``name`` of ``directory`` (root-relative, b"" or
        ending in b"/"), or None when no rule matches."""
        name_gate, path_gate = self._gates[is_dir]
        path = directory + name
        if not (
            (name_gate is not None and name_gate.fullmatch(name) is not None)
            or (path_gate is not None and path_gate.fullmatch(path) is not None)
        ):
            return None
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
