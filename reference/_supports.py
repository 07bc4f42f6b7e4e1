"""What a file service can do: the declarations a session reads its behaviour from.

A session runs the same tools over either file service: the fs port of a local
workspace (``_fs.FileSystem``) or a ``FileService`` whose files live in an editor
(``remote/``). The tools never ask which class they run over; they ask the service's
``Supports``:

* ``binary``: the service holds bytes (binary files, encodings and byte-order marks,
  U+0000 in a text). Without it a file is the text the service gives, hashed as its
  UTF-8 bytes: a read may not ask for another encoding, bytes are written only when
  they are UTF-8 text, and a notebook's cells (edited on its bytes, its JSON's own
  style kept byte for byte) are not edited there.
* ``directories``: directories can be listed, created and removed. Glob, Grep, directory
  listings, Delete, Move, a patch's Add, Delete and Move, missing parent directories and
  the did-you-mean of a NOT_FOUND need it.
* ``atomic_rename``, ``fsync``, ``journal``: a file can be replaced by a rename of a
  synced temp file, and a state directory holds journals and snapshots. With all three
  a change is published by the journaled transaction (``transactions/``) and
  ``message_id`` records a snapshot that ``rewind`` restores; without them a change is
  published by whole-file writes, each read back, restored in reverse order on failure
  (``remote/_remote_commit``), no snapshot is kept and there is nothing to recover.
"""

from __future__ import annotations

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError

NOTEBOOK_SUFFIX = ".ipynb"
NO_SNAPSHOT_WARNING = (
    "no snapshot was recorded: a remote workspace keeps no snapshots, and rewind is "
    "not available for it"
)


@attrs.frozen(kw_only=True)
class Supports:
    """The declarations of one file service (see the module docstring)."""

    binary: bool
    directories: bool
    atomic_rename: bool
    fsync: bool
    journal: bool

    @property
    def transactions(self) -> bool:
        """Whether changes are journaled transactions (else: verified whole-file writes)."""
        return self.atomic_rename and self.fsync and self.journal

    @property
    def snapshots(self) -> bool:
        """Whether ``message_id`` records a snapshot that ``rewind`` restores."""
        return self.transactions and self.directories


#: The fs port of a local workspace: every operation of the engine.
LOCAL_DISK = Supports(binary=True, directories=True, atomic_rename=True, fsync=True, journal=True)

#: A service with two calls, read a whole text file and write one (ACP ``fs/*_text_file``).
WHOLE_TEXT = Supports(
    binary=False, directories=False, atomic_rename=False, fsync=False, journal=False
)


def snapshot_message(supports: Supports, message_id: str | None) -> str | None:
    """The ``message_id`` a store snapshots under: None where no snapshot is kept."""
    return message_id if supports.snapshots else None


def snapshot_warning(supports: Supports, message_id: str | None) -> tuple[str, ...]:
    """A ``message_id`` where no snapshot is kept is accepted, with this warning."""
    if message_id is not None and not supports.snapshots:
        return (NO_SNAPSHOT_WARNING,)
    return ()


def unsupported(what: str) -> ToolError:
    """UNSUPPORTED for a tool the service cannot serve (a whole-text service's words)."""
    return ToolError(
        _errors.UNSUPPORTED,
        f"{what} is not available in a remote workspace: the client offers only whole-file "
        "text reads and writes",
    )


def refuse_text_notebook(shown: str) -> None:
    """Without ``binary``, a notebook is not edited as text either: UNSUPPORTED."""
    if shown.lower().endswith(NOTEBOOK_SUFFIX):
        raise ToolError(
            _errors.UNSUPPORTED,
            f"{shown} is a Jupyter notebook; notebook cells are edited with "
            "Session.edit_notebook in a local workspace, not as text through the client",
            path=shown,
        )
