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

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable

import attrs

from editspec.reference._text import DecodedText, decode, sha256_hex, sha256_later

# Below this size hashing and decoding are cheap, and keeping the bytes alive would not pay.
MIN_BYTES = 256 * 1024
# Memory kept alive in all (bytes and texts); the least recently used entries go first.
CAPACITY_BYTES = 64 * 1024 * 1024


@attrs.frozen
class _Entry:
    data: bytes
    sha256: str | None
    decoded: DecodedText | None  # None: not known (binary files are not remembered)

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
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is None or len(entry.data) != len(data):
            return None
        if entry.data is data:
            return entry
        if entry.data != data:
            return None
        # Equal bytes in another object: keep the caller's, so that its next question
        # about these very bytes (hash, then text) is answered without comparing again.
        entry = attrs.evolve(entry, data=data)
        with self._lock:
            if self._entries.get(key) is not None:
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
                    )
                    size = entry.size
            self._entries[key] = entry
            self._held += size
            while self._held > self._capacity:
                _, evicted = self._entries.popitem(last=False)
                self._held -= evicted.size

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

        ``count_lines``: also know ``line_breaks`` (counted once, then remembered).
        """
        entry = self._lookup(key, data)
        decoded = entry.decoded if entry is not None else None
        if decoded is None:
            decoded = decode(data)
            if decoded is None:
                return None
        elif not count_lines or decoded.line_breaks is not None:
            return decoded
        if count_lines:
            decoded = attrs.evolve(decoded, line_breaks=decoded.text.count("\n"))
        self._store(key, _Entry(data=data, sha256=None, decoded=decoded))
        return decoded

    def remember_text(
        self, key: str, data: bytes, decoded: DecodedText, *, nul_free: bool = False
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
        self._store(key, _Entry(data=data, sha256=None, decoded=decoded))
