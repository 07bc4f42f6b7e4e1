"""Where a session's files live: the ``FileService`` port and its local implementation.

A session opened with ``Workspace.session`` works on a local directory through the fs
port (``_fs``) with the whole transaction protocol: exclusive temp files, fsync, rename,
hard-link backups and a journal. A session opened on a *remote* workspace
(``RemoteWorkspace``, ``_remote``) reaches its files only through a ``FileService``: two
calls, read a whole text file and write a whole text file. Nothing else exists there:
no rename, no fsync, no directory operation, no delete. The remote operations are
written against this port alone, so what they promise is what two calls can give
(DESIGN §2 profile Remote):

* ``read_text(path) -> str``: the whole text the file holds now; NOT_FOUND when there is
  no such file, IO_ERROR when the service fails.
* ``write_text(path, text)``: create or replace the whole file; IO_ERROR when the
  service fails. A successful call proves nothing about what the file holds: the
  caller reads it back.

Which service a session uses is decided by how the session is opened, never guessed
from a path. ``LocalFileService`` answers the two calls from a local directory (strict
UTF-8 text, atomic replacement), so the remote algorithm can run against a local tree;
``AcpFileService`` (``_acp``) answers them through an Agent Client Protocol client.
"""

from __future__ import annotations

import stat
from typing import Protocol, runtime_checkable

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._fs import FileSystem
from editspec.reference._supports import WHOLE_TEXT, Supports
from editspec.reference.text._text import UTF8, decode
from editspec.reference.tools._atomic import atomic_create, atomic_replace


@runtime_checkable
class FileService(Protocol):
    """The two calls a remote session has: whole-file text read and write."""

    @property
    def kind(self) -> str:
        """ "local" or "acp": reported in results and errors."""
        ...

    def read_text(self, path: str) -> str:
        """The whole text of ``path`` (absolute); NOT_FOUND, IO_ERROR, BINARY."""
        ...

    def write_text(self, path: str, text: str) -> None:
        """Create or replace ``path`` (absolute) with ``text``; IO_ERROR."""
        ...


class LocalFileService:
    """``FileService`` over a local directory through the fs port (strict UTF-8 text)."""

    kind = "local"
    #: Text calls only, although a local directory is behind them (the remote algorithm).
    supports: Supports = WHOLE_TEXT

    def __init__(self, fs: FileSystem | None = None) -> None:
        self.fs = fs if fs is not None else FileSystem()

    def read_text(self, path: str) -> str:
        """Read and strictly decode ``path``; a file that is not BOM-less UTF-8 is BINARY."""
        try:
            data = self.fs.read_bytes(path)
        except OSError as exc:
            raise _errors.from_oserror(exc, path, action="read") from exc
        decoded = decode(data)
        if decoded is None or decoded.encoding != UTF8 or decoded.bom:
            raise ToolError(_errors.BINARY, f"{path} is not UTF-8 text", path=path)
        return decoded.text

    def write_text(self, path: str, text: str) -> None:
        """Replace (or create) ``path`` atomically with the UTF-8 encoding of ``text``."""
        data = text.encode("utf-8", "surrogatepass")
        try:
            try:
                mode: int | None = stat.S_IMODE(self.fs.stat(path).st_mode)
            except FileNotFoundError:
                mode = None
            if mode is not None:
                atomic_replace(self.fs, path, data, mode=mode)
            else:
                atomic_create(self.fs, path, data)
        except OSError as exc:
            raise _errors.from_oserror(exc, path, action="write") from exc
