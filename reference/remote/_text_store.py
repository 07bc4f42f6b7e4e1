"""The ``FileStore`` of a remote workspace: its files through a ``FileService`` (``_store``).

A file is the text the service gives: its bytes are that text's UTF-8 (lone
surrogates kept, so that a text goes back exactly as it came), it is never binary,
has no BOM and no other encoding, and U+0000 is a character like any other. Nothing
is remembered between calls (every call asks the client again). One file and a whole
patch are published the same way, by ``_remote_commit.publish``: each file re-read and
compared with the text it was planned from, written, read back; on failure the files
already written are restored in reverse order. The service declares what it supports
(``WHOLE_TEXT`` for every ``FileService``: two calls are all it has).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._store import Loaded, PatchFile, Published
from editspec.reference._supports import WHOLE_TEXT, Supports
from editspec.reference.patch._patch_model import check_patch_size
from editspec.reference.remote._fileservice import FileService
from editspec.reference.remote._remote_commit import RemoteChange, publish, read_or_none
from editspec.reference.remote._remote_paths import RemotePath, client_bytes, text_sha256
from editspec.reference.text._memo import LineIndex
from editspec.reference.text._text import UTF8, DecodedText, newline_style

if TYPE_CHECKING:
    from editspec.reference.remote._remote import RemoteWorkspace


def declared_by(files: FileService) -> Supports:
    """What ``files`` declares; ``WHOLE_TEXT`` for a service that declares nothing."""
    declared = getattr(files, "supports", WHOLE_TEXT)
    return declared if isinstance(declared, Supports) else WHOLE_TEXT


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _as_text(text: str) -> DecodedText:
    return DecodedText(text=text, encoding=UTF8, bom=False, newline=newline_style(text))


class TextStore:
    """A remote workspace's files, through its ``FileService``. Spec: REMOTE-*."""

    def __init__(self, workspace: RemoteWorkspace) -> None:
        self.workspace = workspace

    @property
    def supports(self) -> Supports:
        return declared_by(self.workspace.files)

    def resolve(self, path: str | os.PathLike[str]) -> RemotePath:
        return self.workspace.resolve(path)

    def hold(self, keys: Iterable[str]) -> AbstractContextManager[None]:
        return self.workspace.locks.hold(keys)

    # -- reading ---------------------------------------------------------------------

    def load(self, target: RemotePath, encoding: str) -> Loaded:
        text = self.workspace.files.read_text(target.absolute)
        data = client_bytes(text, target)
        return Loaded(
            data=data,
            digest=hashlib.sha256(data).hexdigest(),
            decoded=_as_text(text),
            mtime_ns=0,
        )

    def _current(self, target: RemotePath) -> bytes | None:
        text = read_or_none(self.workspace.files, target.absolute)
        return None if text is None else _bytes(text)

    def read_for_write(self, target: RemotePath) -> bytes | None:
        return self._current(target)

    def read_for_edit(self, target: RemotePath) -> bytes | None:
        return self._current(target)

    def read_for_patch(self, target: RemotePath, display: str) -> tuple[bytes, int | None]:
        data = self._current(target)
        if data is None:
            raise ToolError(_errors.NOT_FOUND, f"{display} does not exist", path=display)
        check_patch_size(self.workspace.limits, display, len(data))
        return data, None

    def exists(self, target: RemotePath) -> bool:
        return self._current(target) is not None

    def is_link(self, target: RemotePath) -> bool:
        return False  # the client owns its links: a path is confined lexically

    # -- texts -------------------------------------------------------------------------

    def text_of(self, data: bytes) -> DecodedText | None:
        return _as_text(_text(data))

    def encode_text(self, text: str, like: DecodedText | None) -> bytes:
        return _bytes(text)

    def decode(self, target: RemotePath, data: bytes) -> DecodedText | None:
        return self.text_of(data)

    def line_index(self, target: RemotePath, data: bytes) -> LineIndex | None:
        return None

    def sha256_later(self, target: RemotePath, data: bytes) -> Callable[[], str]:
        digest = hashlib.sha256(data).hexdigest()
        return lambda: digest

    def remember_text(
        self,
        target: RemotePath,
        data: bytes,
        decoded: DecodedText,
        *,
        nul_free: bool,
        lines: LineIndex | None,
    ) -> None:
        """Nothing is remembered: the next call asks the client again."""

    # -- publishing --------------------------------------------------------------------

    def replace(
        self,
        session_id: str,
        target: RemotePath,
        old_bytes: bytes | None,
        new_bytes: bytes,
        *,
        message_id: str | None,
        new_sha256: Callable[[], str] | None,
        operation: str,
    ) -> tuple[bool, tuple[str, ...]]:
        old = None if old_bytes is None else _text(old_bytes)
        change = RemoteChange(
            path=target.absolute, shown=target.relative, old_text=old, new_text=_text(new_bytes)
        )
        publish(self.workspace.files, [change])
        self._record_write(session_id, target, new_bytes)
        return False, ()

    def publish_patch(
        self,
        session_id: str,
        files: Sequence[PatchFile],
        *,
        message_id: str | None,
    ) -> Published:
        limit = self.workspace.limits.transaction_bytes
        with self.hold(item.source.canonical_key for item in files):
            total = sum(len(item.new_bytes or b"") for item in files)
            if total > limit:
                raise ToolError(
                    _errors.TOO_LARGE,
                    f"the patch writes {total} bytes; a transaction is at most {limit}",
                    limit="transaction_bytes",
                    maximum=limit,
                )
            remote = [
                RemoteChange(
                    path=item.source.absolute,
                    shown=item.source.relative,
                    old_text=None if item.old_bytes is None else _text(item.old_bytes),
                    new_text=_text(item.new_bytes or b""),
                )
                for item in files
            ]
            publish(self.workspace.files, remote)
            for item in files:
                self._record_write(session_id, item.source, item.new_bytes or b"")
        return Published(snapshot_created=False, transaction_id="")

    def _record_write(self, session_id: str, target: RemotePath, data: bytes) -> None:
        self.workspace.access.record_write(
            session_id,
            target.canonical_key,
            sha256=text_sha256(_text(data)),
            size=len(data),
            mtime_ns=0,
        )
