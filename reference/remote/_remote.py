"""Remote workspaces: sessions whose files live in an editor, reached through a ``FileService``.

A session is remote because of how it was opened — ``RemoteWorkspace(files, root)``,
``RemoteWorkspace.over_acp(connection, acp_session_id, root, loop=...)`` or
``RemoteWorkspace.over_socket(sock, acp_session_id, root)`` — never because of what a
path looks like. Its session is the engine's one ``Session`` (``_session``): the same
Read, Write, Edit, ApplyPatch and notebook logic, over this workspace's store
(``_text_store.TextStore``), with behaviour chosen from what the service declares
(``WHOLE_TEXT``: whole-file text reads and writes, nothing else). What that gives
(DESIGN §2 profile Remote, REMOTE-*):

* Read: the whole text the client returns; ranges are cut from it. The hash of that
  text (its UTF-8 bytes) is what read-before-write and stale detection compare,
  exactly as locally. Text only: the client has no bytes to give.
* Write (text; bytes only when they are UTF-8 text, else UNSUPPORTED) and Edit (the
  same matching cascade as locally): the freshness check, then ``_remote_commit.publish``
  — re-read, write, read back, restore on failure.
* ApplyPatch: Update only. Add, Delete and Move (and any patch of a notebook) fail
  closed with UNSUPPORTED before anything is written; the Updates are published in
  patch order with the verified restore of ``_remote_commit``.
* Rewind, Glob, Grep, List directory, Delete, Move and notebook cells: UNSUPPORTED (no
  directory operations, no delete; no snapshots are kept, and a ``message_id`` is
  accepted with ``snapshot_created=False`` and a warning).
* Paths are confined to the root lexically: the client owns the files and their links.
  A failed call is never retried on a local file of the same name. The host's deny
  rules (``hooks``) apply to the path as spelled, its validators and listeners as
  locally.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
import socket
from typing import TYPE_CHECKING, Any

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._limits import Limits
from editspec.reference._results import RecoveryReport
from editspec.reference._session import Session
from editspec.reference._supports import WHOLE_TEXT, Supports
from editspec.reference.guards._access import AccessTracker
from editspec.reference.guards._hooks import Hooks
from editspec.reference.remote._fileservice import FileService
from editspec.reference.remote._remote_paths import (
    KeyLocks,
    RemotePath,
    resolve_remote,
    text_sha256,
)
from editspec.reference.remote._text_store import TextStore, declared_by

if TYPE_CHECKING:
    from editspec.reference.remote._acp import AcpChannel

__all__ = ["RemoteSession", "RemoteWorkspace", "text_sha256"]

_WINDOWS_ROOT = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


class RemoteWorkspace:
    """A workspace whose files are reached only through a ``FileService``. Spec: REMOTE-*."""

    def __init__(
        self,
        files: FileService,
        root: str,
        limits: Limits | None = None,
        *,
        channel: AcpChannel | None = None,
    ) -> None:
        if not isinstance(files, FileService):
            raise ToolError(_errors.INVALID_ARGUMENT, "files must be a FileService")
        if declared_by(files) != WHOLE_TEXT:  # two text calls cannot give more
            raise ToolError(
                _errors.INVALID_ARGUMENT,
                "a FileService offers whole-file text reads and writes only; it cannot "
                f"declare {declared_by(files)}",
            )
        if not isinstance(root, str) or not root or "\0" in root:
            raise ToolError(_errors.INVALID_ARGUMENT, "the remote root must be a non-empty path")
        self._pathmod = ntpath if _WINDOWS_ROOT.match(root) else posixpath
        if not self._pathmod.isabs(root):
            raise ToolError(
                _errors.INVALID_ARGUMENT, f"the remote root must be an absolute path, not {root!r}"
            )
        self.files = files
        self.root: str = self._pathmod.normpath(root)
        self.limits = limits if limits is not None else Limits()
        self.access = AccessTracker()
        self.locks = KeyLocks()
        self.hooks = Hooks()  # the host's deny rules (as spelled), validators and listeners
        self.store = TextStore(self)  # what the file tools read and publish through
        self._channel = channel

    @property
    def supports(self) -> Supports:
        """What the service declares (every ``FileService``: ``WHOLE_TEXT``)."""
        return self.store.supports

    @classmethod
    def over_acp(
        cls,
        connection: Any,
        acp_session_id: str,
        root: str,
        *,
        loop: Any,
        timeout: float | None = None,
        client_capabilities: Any = None,
        limits: Limits | None = None,
    ) -> RemoteWorkspace:
        """Files of an ACP client: ``connection`` is the agent side, running on ``loop``."""
        from editspec.reference.remote._acp import DEFAULT_TIMEOUT, AcpFileService

        files = AcpFileService(
            connection,
            acp_session_id,
            loop=loop,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            client_capabilities=client_capabilities,
        )
        return cls(files, root, limits)

    @classmethod
    def over_socket(
        cls,
        sock: socket.socket,
        acp_session_id: str,
        root: str,
        *,
        timeout: float | None = None,
        client_capabilities: Any = None,
        limits: Limits | None = None,
    ) -> RemoteWorkspace:
        """Files of the ACP client at the other end of ``sock``; ``close()`` closes it."""
        from editspec.reference.remote._acp import DEFAULT_TIMEOUT, AcpChannel

        channel = AcpChannel.over_socket(sock)
        files = channel.file_service(
            acp_session_id,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            client_capabilities=client_capabilities,
        )
        return cls(files, root, limits, channel=channel)

    def session(self, session_id: str) -> RemoteSession:
        """A session: its own read records. Spec: TRACK-*, REMOTE-*."""
        if not isinstance(session_id, str) or not session_id or "\0" in session_id:
            raise ToolError(_errors.INVALID_ARGUMENT, "session id must be a non-empty string")
        return RemoteSession(self, session_id)

    def resolve(self, path: str | os.PathLike[str]) -> RemotePath:
        """Confine ``path`` to the root, lexically (the client owns links). Spec: REMOTE-*."""
        resolved = resolve_remote(self._pathmod, self.root, path)
        if self.hooks.denies_anything:
            self.hooks.check_denied(resolved.relative, resolved.relative, is_dir=None)
        return resolved

    def ensure_writable(self) -> None:
        """Nothing is journaled remotely, so nothing ever waits for recovery."""

    def before_change(self) -> None:
        """What every mutating call runs first: nothing here (no journal is ever left)."""

    def recover(self) -> RecoveryReport:
        """Nothing to recover: a remote change has no journal (its failures are reported)."""
        return RecoveryReport()

    def close(self) -> None:
        """Close the ACP channel this workspace opened (``over_socket``)."""
        if self._channel is not None:
            self._channel.close()


class RemoteSession(Session):
    """A ``Session`` of a ``RemoteWorkspace``: the same tools, over its ``FileService``."""
