"""A state machine over a remote workspace: the fake ACP client's files against a model.

Rules: reads, external edits in the editor, writes, edits and Update patches, each change
with a fault drawn from the client's repertoire (a failed, dropped or garbled write, a
failed or corrupt read-back, faults that last, another writer during the change). After
every step the client's files equal the model. A change that succeeded left exactly its
new text; a change that failed left every file as before, or its error names exactly
the files that are not (``not_restored``, or ``unknown``), and those named
``not_restored`` are indeed not as before.
"""

from __future__ import annotations

import hashlib

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from editspec.fault_injection.acp_client import FOREVER, ClientFault, FakeAcpClient
from editspec.reference import EditSpec, RemoteWorkspace, ToolError

ROOT = "/editor/project"
NAMES = ("a.txt", "b.txt", "c.txt", "d.txt")
LINES = st.sampled_from(["alpha", "beta", "gamma", "delta", "epsilon"])


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@st.composite
def faults(draw: st.DrawFn) -> tuple[ClientFault, ...]:
    kind = draw(
        st.sampled_from(
            [
                "none",
                "fail-write",
                "drop-write",
                "garble-write",
                "fail-readback",
                "corrupt-readback",
                "writes-down",
                "readbacks-down",
                "garbled-restores",
                "other-writer",
            ]
        )
    )
    at = draw(st.integers(min_value=1, max_value=4))
    if kind == "none":
        return ()
    if kind == "writes-down":
        return (ClientFault(method="write", at=at, action="fail", through=FOREVER),)
    if kind == "readbacks-down":
        return (ClientFault(method="readback", at=at, action="fail", through=FOREVER),)
    if kind == "garbled-restores":
        return (
            ClientFault(method="write", at=at, action="fail"),
            ClientFault(method="write", at=at + 1, action="garble", through=FOREVER),
        )
    if kind == "other-writer":
        victim = draw(st.sampled_from(NAMES))
        return (
            ClientFault(
                method="write",
                at=at,
                action="change",
                path=f"{ROOT}/{victim}",
                text=f"{victim} typed in the editor\n",
            ),
        )
    action, method = kind.split("-")
    return (ClientFault(method=method, at=at, action=action),)


class RemoteMachine(RuleBasedStateMachine):
    """The client's files and this session's reads, against a remote session."""

    def __init__(self) -> None:
        super().__init__()
        self.client = FakeAcpClient(ROOT)
        self.workspace = RemoteWorkspace.over_socket(
            self.client.connect(), self.client.session_id, ROOT, timeout=10
        )
        self.session = self.workspace.session("A")
        self.model: dict[str, str] = {}
        self.read_hash: dict[str, str] = {}  # what this session last saw (or wrote)

    @initialize(texts=st.lists(LINES, min_size=len(NAMES), max_size=len(NAMES)))
    def files(self, texts: list[str]) -> None:
        for name, line in zip(NAMES, texts, strict=True):
            text = f"{name}\n{line}\n"
            self.client.put(name, text)
            self.model[name] = text

    # -- rules -------------------------------------------------------------------------

    @rule(name=st.sampled_from(NAMES))
    def read(self, name: str) -> None:
        self.client.arm()
        result = self.session.read(name)
        assert result.content == self.model[name]
        self.read_hash[name] = _sha(self.model[name])

    @rule(name=st.sampled_from(NAMES), line=LINES)
    def typed_in_editor(self, name: str, line: str) -> None:
        text = f"{self.model[name]}{line}\n"
        self.client.put(name, text)
        self.model[name] = text

    @rule(name=st.sampled_from(NAMES), line=LINES, fault=faults())
    def write(self, name: str, line: str, fault: tuple[ClientFault, ...]) -> None:
        new = f"{name}\nwritten {line}\n"
        self._change({name: new}, fault, lambda: self.session.write(name, new))

    @rule(name=st.sampled_from(NAMES), line=LINES, fault=faults())
    def edit(self, name: str, line: str, fault: tuple[ClientFault, ...]) -> None:
        old = self.model[name]
        new = f"{name}\n" + old.split("\n", 1)[1] + f"edited {line}\n"
        self._change(
            {name: new},
            fault,
            lambda: self.session.edit(name, [EditSpec(old, new)]),
        )

    @precondition(lambda self: len(self.read_hash) >= 2)
    @rule(
        names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True),
        line=LINES,
        fault=faults(),
    )
    def patch(self, names: list[str], line: str, fault: tuple[ClientFault, ...]) -> None:
        parts, after = [], {}
        for name in names:
            first = self.model[name].split("\n", 1)[0]
            parts.append(f"*** Update File: {name}\n@@\n-{first}\n+{first} {line}\n")
            after[name] = self.model[name].replace(first, f"{first} {line}", 1)
        patch = "*** Begin Patch\n" + "".join(parts) + "*** End Patch\n"
        self._change(after, fault, lambda: self.session.apply_patch(patch))

    # -- the check of one change -----------------------------------------------------------

    def _change(self, after: dict[str, str], fault: tuple[ClientFault, ...], call) -> None:
        before = dict(self.model)
        fresh = all(self.read_hash.get(name) == _sha(before[name]) for name in after)
        self.client.arm(*fault)
        try:
            call()
        except ToolError as error:
            self._failed(before, after, error, fresh, fault)
            return
        # Success: every file of the change holds its new text, nothing else changed.
        assert fresh, "a change succeeded without a fresh read of every file"
        files = self.client.relative_files()
        assert {name: files[name] for name in after} == after
        for name in set(NAMES) - set(after):
            assert files[name] == before[name] or self._typed(fault, name), name
        self.model = files
        for name, text in after.items():
            self.read_hash[name] = _sha(text)

    def _typed(self, fault: tuple[ClientFault, ...], name: str) -> bool:
        return any(f.action == "change" and f.path == f"{ROOT}/{name}" for f in fault)

    def _failed(
        self,
        before: dict[str, str],
        after: dict[str, str],
        error: ToolError,
        fresh: bool,
        fault: tuple[ClientFault, ...],
    ) -> None:
        files = self.client.relative_files()
        assert fault or not fresh, f"a fresh change failed without a fault: {error}"
        if not fresh:
            assert error.code in ("NOT_READ", "STALE"), error
            assert self.client.writes == 0
            assert files == before
            return
        states = {entry["path"]: entry["state"] for entry in error.details.get("files", [])}
        if states:
            assert set(states) == set(after), (states, after)
        named = {name for name, state in states.items() if state in ("not_restored", "unknown")}
        assert set(error.details.get("not_restored", [])) == named
        for name in NAMES:
            if files[name] == before[name]:
                assert states.get(name) != "not_restored", (name, error)
                continue
            # Not as before: named by the error, or another writer's text (left alone).
            assert name in named or self._typed_text(files[name], name), (name, error)
        for name, state in states.items():
            if state in ("untouched", "restored"):
                assert files[name] == before[name], (name, state)
        self.model = files
        for name in after:
            if files[name] != before[name]:
                self.read_hash.pop(name, None)  # the session must read it again

    def _typed_text(self, text: str, name: str) -> bool:
        return text == f"{name} typed in the editor\n"

    @invariant()
    def client_matches_model(self) -> None:
        if self.model:
            assert self.client.relative_files() == self.model

    def teardown(self) -> None:
        self.workspace.close()
        self.client.close()


TestRemoteMachine = RemoteMachine.TestCase
