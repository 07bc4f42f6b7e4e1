"""What the engine already knows about large files' bytes: their hash and decoded text.

An agent reads a file and then edits it, or edits it twice in a row. Each step reads the
file's bytes from disk, hashes them (the hash is what freshness compares, TRACK-*) and
decodes them; for a large file that is most of the work, done again on the same bytes.
This memo keeps, per canonical key, the last bytes seen with their sha256 and decoded
text. Nothing here weakens a check: a remembered value is used only for bytes equal,
byte for byte, to the bytes it belongs to (a comparison costs a fraction of a sha256),
so an entry never needs invalidating: once the file changes, it simply does not match.
"""

from __future__ import annotations

import bisect
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from editspec.reference.text._text import DecodedText, decode, sha256_hex, sha256_later

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem

# Below this size hashing and decoding are cheap, and keeping the bytes alive would not pay.
MIN_BYTES = 256 * 1024
# Memory kept alive in all (bytes and texts); the least recently used entries go first.
CAPACITY_BYTES = 64 * 1024 * 1024


# Characters between two checkpoints of a line index.
LINE_INDEX_STEP = 1 << 20


@attrs.frozen
class LineIndex:
    """Checkpoints ``(offset, newlines before offset)`` of one text, in offset order.

    A line number is the count of ``\\n`` before an offset; from the checkpoint below it,
    only the characters since are counted (at most ``LINE_INDEX_STEP``).
    """

    offsets: tuple[int, ...]
    newlines: tuple[int, ...]

    @classmethod
    def build(cls, text: str) -> LineIndex:
        """Count the line breaks of ``text`` once, keeping a checkpoint every step."""
        offsets, newlines, count = [0], [0], 0
        for start in range(0, len(text), LINE_INDEX_STEP):
            stop = min(start + LINE_INDEX_STEP, len(text))
            count += text.count("\n", start, stop)
            offsets.append(stop)
            newlines.append(count)
        return cls(offsets=tuple(offsets), newlines=tuple(newlines))

    @property
    def total(self) -> int:
        """The line breaks of the whole text."""
        return self.newlines[-1]

    def newlines_before(self, text: str, offset: int) -> int:
        """``text.count("\\n", 0, offset)``, for the text this index was built for."""
        k = bisect.bisect_right(self.offsets, offset) - 1
        return self.newlines[k] + text.count("\n", self.offsets[k], offset)

    def after_edit(
        self, old_text: str, new_text: str, unchanged_prefix: int, unchanged_suffix: int
    ) -> LineIndex:
        """The index of ``new_text``, which equals ``old_text`` outside the changed region.

        Checkpoints before the region stay; those after it move with the text; those
        inside are dropped (the next index built from scratch restores them).
        """
        old_end = len(old_text) - unchanged_suffix
        new_end = len(new_text) - unchanged_suffix
        shift = len(new_text) - len(old_text)
        added = new_text.count("\n", unchanged_prefix, new_end) - old_text.count(
            "\n", unchanged_prefix, old_end
        )
        offsets: list[int] = []
        newlines: list[int] = []
        for offset, count in zip(self.offsets, self.newlines, strict=True):
            if offset == len(old_text) and offset:
                continue  # the end of the text: it moves to the new end, below
            if offset <= unchanged_prefix:
                offsets.append(offset)
                newlines.append(count)
            elif offset >= old_end:
                offsets.append(offset + shift)
                newlines.append(count + added)
        if offsets[-1] != len(new_text):  # the first checkpoint, 0, always stays
            offsets.append(len(new_text))
            newlines.append(self.total + added)
        return LineIndex(offsets=tuple(offsets), newlines=tuple(newlines))


@attrs.frozen
class _Entry:
    data: bytes
    sha256: str | None
    decoded: DecodedText | None  # None: not known (binary files are not remembered)
    lines: LineIndex | None = None

    @property
    def size(self) -> int:
        text = sys.getsizeof(self.decoded.text) if self.decoded is not None else 0
        return len(self.data) + text


class ContentMemo:
    """sha256 and decoded text of large files by canonical key, for identical bytes only."""

    def __init__(self, capacity_bytes: int = CAPACITY_BYTES, min_bytes: int = MIN_BYTES) -> None:
        self._capacity = capacity_bytes
        self._min = min_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def _lookup(self, key: str, data: bytes) -> _Entry | None:
        if len(data) < self._min:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or len(entry.data) != len(data):
                return None
            self._entries.move_to_end(key)
            if entry.data is data:
                return entry
            if entry.data != data:
                return None
            # Equal bytes in another object: keep the caller's, so that its next question
            # about these very bytes (hash, then text) is answered without comparing again.
            entry = attrs.evolve(entry, data=data)
            self._entries[key] = entry
            return entry

    def _store(self, key: str, entry: _Entry) -> None:
        size = entry.size
        if len(entry.data) < self._min or size > self._capacity:
            return
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._held -= previous.size
                if previous.data is entry.data or previous.data == entry.data:
                    # Merge what each one knows.
                    entry = _Entry(
                        data=entry.data,
                        sha256=entry.sha256 or previous.sha256,
                        decoded=entry.decoded or previous.decoded,
                        lines=entry.lines or previous.lines,
                    )
                    size = entry.size
            self._entries[key] = entry
            self._held += size
            while self._held > self._capacity:
                _, evicted = self._entries.popitem(last=False)
                self._held -= evicted.size

    def known_bytes(self, key: str) -> bytes | None:
        """The last bytes remembered for ``key``: pass them to ``FileSystem.read_bytes_unless``
        so that, when the file still holds them, its read returns this very object (and
        every later question about it is answered without comparing again)."""
        with self._lock:
            entry = self._entries.get(key)
            return entry.data if entry is not None else None

    def read(self, fs: FileSystem, key: str, path: str) -> bytes:
        """``fs.read_bytes(path)``; the remembered bytes object itself while the file holds them."""
        known = self.known_bytes(key)
        return fs.read_bytes(path) if known is None else fs.read_bytes_unless(path, known)

    def sha256_later(self, key: str, data: bytes) -> Callable[[], str]:
        """As ``_text.sha256_later``: a remembered hash at once, else one computed aside."""
        entry = self._lookup(key, data)
        if entry is not None and entry.sha256 is not None:
            known = entry.sha256
            return lambda: known
        if len(data) < self._min:
            digest = sha256_hex(data)
            return lambda: digest
        pending = sha256_later(data)
        remembered: list[str] = []

        def result() -> str:
            if not remembered:
                remembered.append(pending())
                self._store(key, _Entry(data=data, sha256=remembered[0], decoded=None))
            return remembered[0]

        return result

    def decode(self, key: str, data: bytes, *, count_lines: bool = False) -> DecodedText | None:
        """As ``_text.decode``, remembering the text of large files.

        ``count_lines``: also know ``line_breaks`` (counted once, with a ``LineIndex``,
        then remembered).
        """
        entry = self._lookup(key, data)
        decoded = entry.decoded if entry is not None else None
        if decoded is None:
            decoded = decode(data)
            if decoded is None:
                return None
        elif not count_lines or decoded.line_breaks is not None:
            return decoded
        lines = None
        if count_lines:
            lines = LineIndex.build(decoded.text)
            decoded = attrs.evolve(decoded, line_breaks=lines.total)
        self._store(key, _Entry(data=data, sha256=None, decoded=decoded, lines=lines))
        return decoded

    def line_index(self, key: str, data: bytes) -> LineIndex | None:
        """The remembered ``LineIndex`` of the text of ``data``, if any."""
        entry = self._lookup(key, data)
        return entry.lines if entry is not None else None

    def remember_text(
        self,
        key: str,
        data: bytes,
        decoded: DecodedText,
        *,
        nul_free: bool = False,
        lines: LineIndex | None = None,
    ) -> None:
        """Remember that ``decode(data)`` is ``decoded`` (the caller encoded it so).

        Ignored unless ``decoded`` is what ``_text.decode`` would give back: no U+0000
        (that is binary; ``nul_free``: the caller knows there is none), and no U+FEFF at
        the start of a text written without a BOM (it would read back as one).
        """
        if len(data) < self._min or (not nul_free and "\0" in decoded.text):
            return
        if not decoded.bom and decoded.text.startswith("\ufeff"):
            return
        self._store(key, _Entry(data=data, sha256=None, decoded=decoded, lines=lines))
