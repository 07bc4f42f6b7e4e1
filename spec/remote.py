"""Remote sessions for the REMOTE clauses: an in-memory ACP client and the driver's agent side.

``RemoteKit`` holds a ``FakeAcpClient`` (``editspec.fault_injection.acp_client``: the
editor, its files in memory under the clause's root path, faults on demand) and opens
sessions of the driver over it through the contract's ``open_remote_session`` (DESIGN
§2, contract 1.1): every session gets a fresh socket whose other end the client serves.
The client's root is the clause's local workspace root, so a clause can also check that
nothing was read from or written to a local file of the same name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from editspec.fault_injection.acp_client import ClientFault, FakeAcpClient
from editspec.spec._assertions import UncodedError


class RemoteKit:
    """The fake ACP client of one clause and the remote sessions opened over it."""

    def __init__(self, driver: Any, root: Path) -> None:
        self.driver = driver
        self.root = str(root)
        self.client = FakeAcpClient(self.root)

    def open_session(self, session_id: str = "A") -> Any:
        """A remote session of the driver whose files are this client's."""
        opener = getattr(self.driver, "open_remote_session", None)
        if opener is None:
            raise UncodedError(
                "the driver declares remote_acp but has no open_remote_session(session_id, *, "
                "channel, acp_session_id, root)"
            )
        return opener(
            session_id,
            channel=self.client.connect(),
            acp_session_id=self.client.session_id,
            root=self.root,
        )

    def put(self, name: str, text: str) -> None:
        self.client.put(name, text)

    def get(self, name: str) -> str | None:
        return self.client.get(name)

    def files(self) -> dict[str, str]:
        return self.client.relative_files()

    def arm(self, *faults: ClientFault) -> None:
        self.client.arm(*faults)

    def writes(self) -> int:
        return sum(1 for call in self.client.log if call.method == "write")

    def close(self) -> None:
        self.client.close()


__all__ = ["ClientFault", "RemoteKit"]
