"""Remote workspaces: the ACP file service, confinement, the verified publish and its restore."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from editspec.fault_injection.acp_client import FOREVER, ClientFault, FakeAcpClient
from editspec.reference import (
    AcpChannel,
    EditSpec,
    LocalFileService,
    RemoteWorkspace,
    ToolError,
    Workspace,
)
from editspec.reference.remote._remote import text_sha256
from editspec.reference.remote._remote_commit import (
    NOT_RESTORED,
    RESTORED,
    UNKNOWN,
    UNTOUCHED,
    RemoteChange,
    publish,
)

ROOT = "/project"
NAMES = tuple(f"f{index}.txt" for index in range(5))


@pytest.fixture
def client() -> Iterator[FakeAcpClient]:
    with FakeAcpClient(ROOT) as fake:
        yield fake


@pytest.fixture
def remote(client: FakeAcpClient) -> Iterator[RemoteWorkspace]:
    workspace = RemoteWorkspace.over_socket(client.connect(), client.session_id, ROOT, timeout=10)
    yield workspace
    workspace.close()


def _patch(names: tuple[str, ...]) -> str:
    body = "".join(f"*** Update File: {name}\n@@\n-{name} old\n+{name} new\n" for name in names)
    return f"*** Begin Patch\n{body}*** End Patch\n"


def _before(name: str) -> str:
    return f"{name} old\n"


# -- reading and writing through the client -----------------------------------------------


def test_read_reports_the_clients_text_and_ranges(client, remote):
    client.put("a.txt", "one\ntwo\nthree\n")
    session = remote.session("A")
    whole = session.read("a.txt")
    assert whole.content == "one\ntwo\nthree\n"
    assert whole.sha256 == text_sha256("one\ntwo\nthree\n")
    assert (whole.encoding, whole.newline, whole.bom) == ("utf-8", "lf", False)
    part = session.read("a.txt", start_line=2, end_line=2)
    assert (part.content, part.start_line, part.end_line) == ("two\n", 2, 2)
    assert session.read("a.txt", start_byte=4, max_bytes=3).content == "two"


def test_partial_read_does_not_authorize_a_write(client, remote):
    client.put("a.txt", "one\ntwo\n")
    session = remote.session("A")
    session.read("a.txt", start_line=1, end_line=1)
    with pytest.raises(ToolError) as caught:
        session.write("a.txt", "x\n")
    assert caught.value.code == "NOT_READ"
    assert client.get("a.txt") == "one\ntwo\n"


def test_reads_are_per_session(client, remote):
    client.put("a.txt", "text\n")
    remote.session("B").read("a.txt")
    with pytest.raises(ToolError) as caught:
        remote.session("A").edit("a.txt", [EditSpec("text", "other")])
    assert caught.value.code == "NOT_READ"


def test_missing_file_is_not_found_and_edit_with_empty_old_creates(client, remote):
    session = remote.session("A")
    with pytest.raises(ToolError) as caught:
        session.read("missing.txt")
    assert caught.value.code == "NOT_FOUND"
    result = session.edit("new.txt", [EditSpec("", "created\n")])
    assert result.old_sha256 is None
    assert client.get("new.txt") == "created\n"


def test_bytes_that_are_utf8_text_are_written_as_text(client, remote):
    session = remote.session("A")
    session.write("a.txt", "naïve\n".encode())
    assert client.get("a.txt") == "naïve\n"
    for data in (b"\xff\xfeA\x00", b"nul\x00byte", "bom".encode("utf-8-sig")):
        with pytest.raises(ToolError) as caught:
            session.write("b.txt", data)
        assert caught.value.code == "UNSUPPORTED"
    assert client.get("b.txt") is None


def test_message_id_is_accepted_without_a_snapshot(client, remote):
    client.put("a.txt", "one\n")
    session = remote.session("A")
    session.read("a.txt")
    result = session.edit("a.txt", [EditSpec("one", "two")], message_id="m1")
    assert result.snapshot_created is False
    assert any("snapshot" in warning for warning in result.warnings)


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda s: s.rewind("m1"), "UNSUPPORTED"),
        (lambda s: s.glob("*.py"), "UNSUPPORTED"),
        (lambda s: s.grep("x"), "UNSUPPORTED"),
        (lambda s: s.list_directory("."), "UNSUPPORTED"),
        (lambda s: s.edit_notebook("n.ipynb", index=0, source="x"), "UNSUPPORTED"),
        (lambda s: s.read("a.txt", encoding="binary"), "UNSUPPORTED"),
        (lambda s: s.why_ignored("a.txt"), "UNSUPPORTED"),
        (lambda s: s.manifest("."), "UNSUPPORTED"),
        (lambda s: s.delete("a.txt", kind="file"), "UNSUPPORTED"),
        (lambda s: s.move("a.txt", "b.txt"), "UNSUPPORTED"),
    ],
)
def test_what_a_client_cannot_do_is_unsupported(client, remote, call, code):
    with pytest.raises(ToolError) as caught:
        call(remote.session("A"))
    assert caught.value.code == code
    assert client.writes == 0


# -- paths ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../x.txt", "OUTSIDE_WORKSPACE"),
        ("/project_evil/x.txt", "OUTSIDE_WORKSPACE"),
        ("/etc/passwd", "OUTSIDE_WORKSPACE"),
        ("a/../../x", "OUTSIDE_WORKSPACE"),
        ("", "INVALID_ARGUMENT"),
        ("a\0b", "INVALID_ARGUMENT"),
        (".", "IS_A_DIRECTORY"),
        ("dir/", "IS_A_DIRECTORY"),
    ],
)
def test_paths_are_confined_lexically(client, remote, path, code):
    with pytest.raises(ToolError) as caught:
        remote.session("A").write(path, "x\n")
    assert caught.value.code == code
    assert client.log == []


def test_absolute_paths_inside_the_root_and_dotdot_inside_it(client, remote):
    session = remote.session("A")
    session.write("/project/sub/a.txt", "x\n")
    result = session.write("sub/../b.txt", "y\n")
    assert result.path == "b.txt"
    assert client.relative_files() == {"sub/a.txt": "x\n", "b.txt": "y\n"}


def test_windows_roots_use_windows_path_rules():
    service = LocalFileService()
    workspace = RemoteWorkspace(service, "C:\\proj")
    assert workspace.resolve("src\\a.py").absolute == "C:\\proj\\src\\a.py"
    with pytest.raises(ToolError) as caught:
        workspace.resolve("..\\x.py")
    assert caught.value.code == "OUTSIDE_WORKSPACE"


@pytest.mark.parametrize("root", ["relative/root", "", "a\0b"])
def test_the_root_must_be_absolute(root):
    with pytest.raises(ToolError) as caught:
        RemoteWorkspace(LocalFileService(), root)
    assert caught.value.code == "INVALID_ARGUMENT"


# -- the ACP file service --------------------------------------------------------------------


def test_client_capabilities_without_fs_make_calls_unsupported(client):
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    channel = AcpChannel.over_socket(client.connect())
    try:
        capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
        workspace = RemoteWorkspace(
            channel.file_service(client.session_id, client_capabilities=capabilities), ROOT
        )
        client.put("a.txt", "x\n")
        session = workspace.session("A")
        session.read("a.txt")
        with pytest.raises(ToolError) as caught:
            session.write("a.txt", "y\n")
        assert caught.value.code == "UNSUPPORTED"
        assert client.writes == 0
    finally:
        channel.close()


def test_a_wrong_session_id_is_an_io_error(client):
    workspace = RemoteWorkspace.over_socket(client.connect(), "not-the-session", ROOT)
    try:
        with pytest.raises(ToolError) as caught:
            workspace.session("A").read("a.txt")
        assert caught.value.code == "IO_ERROR"
    finally:
        workspace.close()


def test_a_closed_client_is_an_io_error_and_nothing_local_is_written(client, tmp_path):
    workspace = RemoteWorkspace.over_socket(client.connect(), client.session_id, str(tmp_path))
    try:
        client.close()
        with pytest.raises(ToolError) as caught:
            workspace.session("A").write("a.txt", "x\n")
        assert caught.value.code == "IO_ERROR"
        assert list(tmp_path.iterdir()) == []
    finally:
        workspace.close()


def test_a_call_from_the_connections_own_loop_is_refused(client):
    channel = AcpChannel.over_socket(client.connect())
    try:
        workspace = RemoteWorkspace(channel.file_service(client.session_id), ROOT)
        outcome: list[BaseException] = []

        def on_loop() -> None:
            try:
                workspace.session("A").read("a.txt")
            except BaseException as exc:
                outcome.append(exc)

        done = threading.Event()
        channel.loop.call_soon_threadsafe(lambda: (on_loop(), done.set()))
        assert done.wait(10)
        assert isinstance(outcome[0], ToolError)
        assert outcome[0].code == "INVALID_ARGUMENT"
    finally:
        channel.close()


def test_a_client_that_does_not_answer_times_out(client):
    class Silent:
        async def read_text_file(self, **_: object) -> None:
            await asyncio.sleep(60)

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        workspace = RemoteWorkspace.over_acp(Silent(), "s", ROOT, loop=loop, timeout=0.2)
        with pytest.raises(ToolError) as caught:
            workspace.session("A").read("a.txt")
        assert caught.value.code == "IO_ERROR"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def test_an_answer_without_text_is_an_io_error():
    class NoText:
        async def read_text_file(self, **_: object) -> object:
            return object()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        workspace = RemoteWorkspace.over_acp(NoText(), "s", ROOT, loop=loop)
        with pytest.raises(ToolError) as caught:
            workspace.session("A").read("a.txt")
        assert caught.value.code == "IO_ERROR"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


# -- the local file service runs the same protocol ------------------------------------------


def test_local_file_service_over_a_directory(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "bin").write_bytes(b"\x00\x01")
    (tmp_path / "a.txt").chmod(0o640)
    workspace = RemoteWorkspace(LocalFileService(), str(tmp_path))
    session = workspace.session("A")
    session.read("a.txt")
    session.edit("a.txt", [EditSpec("one", "two")])
    assert (tmp_path / "a.txt").read_text() == "two\n"
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o640
    session.write("new.txt", "created\n")
    assert (tmp_path / "new.txt").read_text() == "created\n"
    with pytest.raises(ToolError) as caught:
        session.read("bin")
    assert caught.value.code == "BINARY"


def test_local_sessions_are_not_remote(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    local = Workspace(root, tmp_path / "state").session("A")
    assert not hasattr(local, "files")


# -- publish: write, read back, restore in reverse order ------------------------------------


class _Recorder:
    """A FileService in memory that records calls and fails on a schedule."""

    kind = "test"

    def __init__(self, files: dict[str, str], fail: set[tuple[str, int]]) -> None:
        self.files = files
        self.fail = fail
        self.calls: list[tuple[str, str]] = []

    def read_text(self, path: str) -> str:
        self.calls.append(("read", path))
        if ("read", len(self.calls)) in self.fail:
            raise ToolError("IO_ERROR", "injected")
        if path not in self.files:
            raise ToolError("NOT_FOUND", "missing")
        return self.files[path]

    def write_text(self, path: str, text: str) -> None:
        self.calls.append(("write", path))
        if ("write", len(self.calls)) in self.fail:
            raise ToolError("IO_ERROR", "injected")
        self.files[path] = text


def test_restores_run_in_reverse_order_and_are_read_back():
    files = {f"/r/{n}": f"{n} old" for n in "abc"}
    changes = [
        RemoteChange(path=f"/r/{n}", shown=n, old_text=f"{n} old", new_text=f"{n} new")
        for n in "abc"
    ]
    service = _Recorder(files, {("write", 8)})  # the write of c (3 calls per file)
    with pytest.raises(ToolError) as caught:
        publish(service, changes)
    assert files == {f"/r/{n}": f"{n} old" for n in "abc"}
    restore_writes = [path for kind, path in service.calls[8:] if kind == "write"]
    assert restore_writes == ["/r/b", "/r/a"]
    restore_calls = service.calls[8:]
    for path in restore_writes:
        position = restore_calls.index(("write", path))
        assert restore_calls[position + 1] == ("read", path)
    assert [entry["state"] for entry in caught.value.details["files"]] == [RESTORED] * 3


def test_a_created_file_cannot_be_removed_and_is_reported():
    files: dict[str, str] = {}
    service = _Recorder(files, {("read", 3)})  # the read-back of the new file
    with pytest.raises(ToolError) as caught:
        publish(service, [RemoteChange(path="/r/n", shown="n", old_text=None, new_text="x")])
    assert caught.value.details["files"] == [
        {
            "path": "n",
            "state": NOT_RESTORED,
            "note": "was created by this change, and a file cannot be removed through the service",
        }
    ]
    assert caught.value.details["not_restored"] == ["n"]


# -- the fault matrix of a 5-file Update patch ----------------------------------------------


def _fresh(client: FakeAcpClient, remote: RemoteWorkspace):
    for name in list(client.relative_files()):
        client.remove(name)
    for name in NAMES:
        client.put(name, _before(name))
    session = remote.session("A")
    for name in NAMES:
        session.read(name)
    return session


def _check_outcome(client: FakeAcpClient, error: ToolError) -> None:
    """All-before, or the error names exactly the files that are not as before."""
    files = client.relative_files()
    states = {entry["path"]: entry["state"] for entry in error.details["files"]}
    assert set(states) == set(NAMES)
    differing = {name for name in NAMES if files[name] != _before(name)}
    for name, state in states.items():
        if state in (UNTOUCHED, RESTORED):
            assert files[name] == _before(name), (name, state, files[name])
        elif state == NOT_RESTORED:
            assert files[name] != _before(name), (name, state)
        else:
            assert state == UNKNOWN
    named = {name for name, state in states.items() if state in (NOT_RESTORED, UNKNOWN)}
    assert differing <= named
    assert set(error.details["not_restored"]) == named
    if named:
        assert error.code in ("IO_ERROR", "CONFLICT")


def test_a_clean_five_file_patch_writes_and_reads_back_each_file_once(client, remote):
    session = _fresh(client, remote)
    client.arm()
    session.apply_patch(_patch(NAMES))
    assert client.writes == 5
    assert client.readbacks == 5
    assert client.relative_files() == {name: f"{name} new\n" for name in NAMES}


@pytest.mark.parametrize("n", range(1, 6))
@pytest.mark.parametrize(
    "make",
    [
        lambda n: ClientFault(method="write", at=n, action="fail"),
        lambda n: ClientFault(method="write", at=n, action="drop"),
        lambda n: ClientFault(method="write", at=n, action="garble"),
        lambda n: ClientFault(method="readback", at=n, action="fail"),
        lambda n: ClientFault(method="readback", at=n, action="corrupt"),
    ],
    ids=["fail-write", "drop-write", "garble-write", "fail-readback", "corrupt-readback"],
)
def test_a_single_fault_at_any_write_or_read_back_leaves_all_before(client, remote, n, make):
    session = _fresh(client, remote)
    client.arm(make(n))
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(NAMES))
    assert client.relative_files() == {name: _before(name) for name in NAMES}
    _check_outcome(client, caught.value)
    states = [entry["state"] for entry in caught.value.details["files"]]
    assert states == [RESTORED] * n + [UNTOUCHED] * (5 - n)


@pytest.mark.parametrize("n", range(1, 6))
def test_writes_failing_from_the_nth_on_name_exactly_the_unrestored_files(client, remote, n):
    session = _fresh(client, remote)
    client.arm(ClientFault(method="write", at=n, action="fail", through=FOREVER))
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(NAMES))
    _check_outcome(client, caught.value)
    states = [entry["state"] for entry in caught.value.details["files"]]
    # Written before the fault and never restored; the n-th kept its text; the rest untouched.
    assert states == [NOT_RESTORED] * (n - 1) + [RESTORED] + [UNTOUCHED] * (5 - n)
    expected_code = "IO_ERROR"
    assert caught.value.code == expected_code
    assert caught.value.details["cause"]["code"] == "IO_ERROR"


@pytest.mark.parametrize("n", range(1, 6))
def test_read_backs_failing_from_the_nth_on_report_unknown_files(client, remote, n):
    session = _fresh(client, remote)
    client.arm(ClientFault(method="readback", at=n, action="fail", through=FOREVER))
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(NAMES))
    _check_outcome(client, caught.value)
    states = [entry["state"] for entry in caught.value.details["files"]]
    assert UNKNOWN in states
    assert states[n:] == [UNTOUCHED] * (5 - n)


@pytest.mark.parametrize("n", range(1, 6))
def test_a_restore_that_is_garbled_is_reported_not_restored(client, remote, n):
    session = _fresh(client, remote)
    # The n-th write fails; every restore write after it stores other text.
    client.arm(
        ClientFault(method="write", at=n, action="fail"),
        ClientFault(method="write", at=n + 1, action="garble", through=FOREVER),
    )
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(NAMES))
    _check_outcome(client, caught.value)
    states = [entry["state"] for entry in caught.value.details["files"]]
    assert states == [NOT_RESTORED] * (n - 1) + [RESTORED] + [UNTOUCHED] * (5 - n)
    assert caught.value.code == ("CONFLICT" if n > 1 else "IO_ERROR")


def test_a_file_changed_by_someone_else_after_its_write_is_not_clobbered(client, remote):
    session = _fresh(client, remote)
    typed = "typed after the agent wrote it\n"
    client.arm(
        ClientFault(
            method="write", at=3, action="change", path=client.absolute("f0.txt"), text=typed
        ),
        ClientFault(method="write", at=3, action="fail"),
    )
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(NAMES))
    _check_outcome(client, caught.value)
    assert client.get("f0.txt") == typed
    assert caught.value.details["files"][0]["state"] == NOT_RESTORED
    assert caught.value.code == "CONFLICT"


def test_a_stale_second_file_stops_before_it_is_written(client, remote):
    session = _fresh(client, remote)
    client.arm(ClientFault(method="write", at=1, action="change", path=client.absolute("f1.txt")))
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(NAMES))
    assert caught.value.code == "STALE"
    files = client.relative_files()
    assert files["f0.txt"] == _before("f0.txt")
    assert files["f1.txt"] != _before("f1.txt")
    assert [write.path for write in client.log if write.method == "write"] == [
        client.absolute("f0.txt"),
        client.absolute("f0.txt"),
    ]


def test_after_a_failure_the_session_must_read_a_changed_file_again(client, remote):
    session = _fresh(client, remote)
    client.arm(ClientFault(method="write", at=2, action="fail", through=FOREVER))
    with pytest.raises(ToolError):
        session.apply_patch(_patch(NAMES))
    client.arm()
    with pytest.raises(ToolError) as caught:
        session.edit("f0.txt", [EditSpec("new", "newer")])
    assert caught.value.code == "STALE"
    session.edit("f1.txt", [EditSpec("old", "older")])  # restored: the read still holds
    assert client.get("f1.txt") == "f1.txt older\n"


def test_patch_limits_and_missing_files(client, remote):
    session = _fresh(client, remote)
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(("f0.txt", "missing.txt")))
    assert caught.value.code == "NOT_FOUND"
    with pytest.raises(ToolError) as caught:
        session.apply_patch(
            "*** Begin Patch\n*** Update File: f0.txt\n@@\n-f0.txt old\n+a\n"
            "*** Update File: ./f0.txt\n@@\n-f0.txt old\n+b\n*** End Patch\n"
        )
    assert caught.value.code == "INVALID_ARGUMENT"
    assert client.writes == 0


# -- arguments and corners ------------------------------------------------------------------


class _Serving:
    """A FileService that answers from a dict (for corners the client cannot produce)."""

    kind = "test"

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise ToolError("NOT_FOUND", "missing")
        return self.files[path]

    def write_text(self, path: str, text: str) -> None:
        self.files[path] = text


def test_workspace_and_session_arguments():
    from pathlib import PurePosixPath

    with pytest.raises(ToolError) as caught:
        RemoteWorkspace(object(), ROOT)  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_ARGUMENT"
    workspace = RemoteWorkspace(_Serving({"/project/a.txt": "a\n"}), ROOT)
    for bad in ("", "a\0b", 3):
        with pytest.raises(ToolError) as caught:
            workspace.session(bad)  # type: ignore[arg-type]
        assert caught.value.code == "INVALID_ARGUMENT"
    assert workspace.resolve(PurePosixPath("sub/x.txt")).relative == "sub/x.txt"
    with pytest.raises(ToolError) as caught:
        workspace.resolve(7)  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_ARGUMENT"
    assert workspace.recover().rolled_back == ()
    workspace.ensure_writable()
    session = workspace.session("A")
    for kwargs in ({"start_line": 3, "end_line": 2}, {"start_line": 1, "start_byte": 0}):
        with pytest.raises(ToolError) as caught:
            session.read("a.txt", **kwargs)
        assert caught.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ToolError) as caught:
        session.apply_patch(b"*** Begin Patch")  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ToolError) as caught:
        session.write("b.txt", 12)  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ToolError) as caught:
        session.write("new.txt", "x", expected_sha256="0" * 64)
    assert caught.value.code == "STALE"


def test_client_text_that_is_not_unicode_is_an_io_error():
    workspace = RemoteWorkspace(_Serving({"/project/a.txt": "bad \ud800\n"}), ROOT)
    with pytest.raises(ToolError) as caught:
        workspace.session("A").read("a.txt")
    assert caught.value.code == "IO_ERROR"


def test_size_limits_apply_to_remote_files():
    from editspec.reference import Limits

    files = {"/project/a.txt": "x" * 100, "/project/b.txt": "b\n"}
    workspace = RemoteWorkspace(
        _Serving(files), ROOT, Limits(edit_file_bytes=50, transaction_bytes=60)
    )
    session = workspace.session("A")
    session.read("a.txt")
    session.read("b.txt")
    with pytest.raises(ToolError) as caught:
        session.edit("a.txt", [EditSpec("x", "y", replace_all=True)])
    assert caught.value.code == "TOO_LARGE"
    with pytest.raises(ToolError) as caught:
        session.apply_patch(
            "*** Begin Patch\n*** Update File: b.txt\n@@\n-b\n+" + "c" * 40 + "\n"
            "*** Update File: /project/b2.txt\n@@\n-b\n+d\n*** End Patch\n"
        )
    assert caught.value.code == "NOT_FOUND"
    files["/project/c.txt"] = "c\n"
    session.read("c.txt")
    with pytest.raises(ToolError) as caught:
        session.apply_patch(
            "*** Begin Patch\n*** Update File: b.txt\n@@\n-b\n+" + "x" * 40 + "\n"
            "*** Update File: c.txt\n@@\n-c\n+" + "y" * 40 + "\n*** End Patch\n"
        )
    assert caught.value.code == "TOO_LARGE"
    assert files["/project/b.txt"] == "b\n"


def test_the_same_file_named_relative_and_absolute_is_named_twice():
    workspace = RemoteWorkspace(_Serving({"/project/a.txt": "a\n"}), ROOT)
    session = workspace.session("A")
    session.read("a.txt")
    with pytest.raises(ToolError) as caught:
        session.apply_patch(
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n"
            "*** Update File: /project/a.txt\n@@\n-a\n+c\n*** End Patch\n"
        )
    assert caught.value.code == "INVALID_ARGUMENT"


def test_a_patch_with_a_message_id_warns_that_no_snapshot_is_kept():
    workspace = RemoteWorkspace(_Serving({"/project/a.txt": "a\n"}), ROOT)
    session = workspace.session("A")
    session.read("a.txt")
    result = session.apply_patch(
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n", message_id="m"
    )
    assert result.snapshot_created is False
    assert any("snapshot" in warning for warning in result.warnings)


def test_a_failed_pre_write_read_writes_nothing():
    files = {"/r/a": "a old", "/r/b": "b old"}
    changes = [
        RemoteChange(path=f"/r/{n}", shown=n, old_text=f"{n} old", new_text=f"{n} new")
        for n in "ab"
    ]
    service = _Recorder(files, {("read", 4)})  # the read just before b is written
    with pytest.raises(ToolError) as caught:
        publish(service, changes)
    assert files == {"/r/a": "a old", "/r/b": "b old"}
    states = [entry["state"] for entry in caught.value.details["files"]]
    assert states == [RESTORED, UNTOUCHED]


def test_a_created_file_that_cannot_be_read_is_unknown():
    files: dict[str, str] = {}
    # The read-back of the new file fails, and so does the read of the restore.
    service = _Recorder(files, {("read", 3), ("read", 4)})
    with pytest.raises(ToolError) as caught:
        publish(service, [RemoteChange(path="/r/n", shown="n", old_text=None, new_text="x")])
    assert caught.value.details["files"][0]["state"] == UNKNOWN
    assert caught.value.code == "IO_ERROR"


def test_an_unreadable_file_is_still_restored():
    files = {"/r/a": "a old", "/r/b": "b old"}
    changes = [
        RemoteChange(path=f"/r/{n}", shown=n, old_text=f"{n} old", new_text=f"{n} new")
        for n in "ab"
    ]
    # b's write fails (call 5); the first read of the restore of b (call 6) fails.
    service = _Recorder(files, {("write", 5), ("read", 6)})
    with pytest.raises(ToolError) as caught:
        publish(service, changes)
    assert files == {"/r/a": "a old", "/r/b": "b old"}
    assert [entry["state"] for entry in caught.value.details["files"]] == [RESTORED, RESTORED]


def test_acp_file_service_refusals(client):
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    from editspec.reference import AcpFileService

    channel = AcpChannel.over_socket(client.connect())
    try:
        no_read = AcpFileService(
            channel.connection,
            client.session_id,
            loop=channel.loop,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities()),
        )
        with pytest.raises(ToolError) as caught:
            no_read.read_text("/project/a.txt")
        assert caught.value.code == "UNSUPPORTED"
        with pytest.raises(ToolError) as caught:
            AcpFileService(channel.connection, "", loop=channel.loop)
        assert caught.value.code == "INVALID_ARGUMENT"
    finally:
        channel.close()
        channel.close()  # closing twice is harmless
    with pytest.raises(ToolError) as caught:
        channel.file_service(client.session_id).read_text("/project/a.txt")
    assert caught.value.code == "IO_ERROR"
    assert client.log == []


def test_local_file_service_errors(tmp_path):
    service = LocalFileService()
    with pytest.raises(ToolError) as caught:
        service.write_text(str(tmp_path / "missing" / "a.txt"), "x")
    assert caught.value.code in ("NOT_FOUND", "IO_ERROR")
    with pytest.raises(ToolError) as caught:
        service.read_text(str(tmp_path / "nothing.txt"))
    assert caught.value.code == "NOT_FOUND"


def _typed(name: str, at: int) -> ClientFault:
    """Another writer types into ``name`` during the ``at``-th write of the change."""
    return ClientFault(
        method="write", at=at, action="change", path=f"{ROOT}/{name}", text=f"{name} typed\n"
    )


def test_a_file_changed_before_it_is_written_is_named_not_restored(client, remote):
    session = _fresh(client, remote)
    client.arm(_typed("f3.txt", 2))  # while f1 is written: f3 is then found STALE
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(NAMES))
    assert caught.value.code == "STALE"  # the only file not as before: the other writer's
    states = [entry["state"] for entry in caught.value.details["files"]]
    assert states == [RESTORED, RESTORED, RESTORED, NOT_RESTORED, UNTOUCHED]
    assert caught.value.details["not_restored"] == ["f3.txt"]
    expected = {name: _before(name) for name in NAMES}
    assert client.relative_files() == {**expected, "f3.txt": "f3.txt typed\n"}


def test_a_file_changed_after_its_read_back_fails_the_change(client, remote):
    session = _fresh(client, remote)
    client.arm(_typed("f0.txt", 5))  # f0 was written and read back; f4 is written
    with pytest.raises(ToolError) as caught:
        session.apply_patch(_patch(NAMES))
    assert caught.value.code == "CONFLICT"
    _check_outcome(client, caught.value)
    states = [entry["state"] for entry in caught.value.details["files"]]
    assert states == [NOT_RESTORED] + [RESTORED] * 4
    assert client.relative_files()["f0.txt"] == "f0.txt typed\n"


# -- one Session, the host's hooks ------------------------------------------------------------


def test_a_remote_session_is_the_engines_session():
    from editspec.reference import Session

    session = RemoteWorkspace(_Serving({}), ROOT).session("A")
    assert isinstance(session, Session)
    # no tool of its own: every method is the Session's, routed to the same tools
    assert [name for name in vars(type(session)) if not name.startswith("__")] == []


def test_a_file_service_without_declarations_is_whole_text():
    from editspec.reference._supports import WHOLE_TEXT

    workspace = RemoteWorkspace(_Serving({}), ROOT)
    assert not hasattr(workspace.files, "supports")
    assert workspace.supports == WHOLE_TEXT
    assert RemoteWorkspace(LocalFileService(), ROOT).supports == WHOLE_TEXT


def test_a_file_service_cannot_declare_more_than_its_two_calls():
    import attrs

    from editspec.reference._supports import LOCAL_DISK, WHOLE_TEXT

    class Boasting(_Serving):
        supports = LOCAL_DISK

    for claimed in (LOCAL_DISK, attrs.evolve(WHOLE_TEXT, binary=True)):
        Boasting.supports = claimed
        with pytest.raises(ToolError) as caught:
            RemoteWorkspace(Boasting({}), ROOT)
        assert caught.value.code == "INVALID_ARGUMENT"


def test_remote_deny_rules_apply_to_the_path_as_spelled():
    files = {"/project/a.txt": "a\n", "/project/.env": "TOKEN=1\n"}
    workspace = RemoteWorkspace(_Serving(files), ROOT)
    workspace.hooks.deny(".env")
    session = workspace.session("A")
    assert session.read("a.txt").content == "a\n"  # the positive control
    for call in (
        lambda: session.read(".env"),
        lambda: session.read("/project/.env"),
        lambda: session.write(".env", "stolen\n"),
    ):
        with pytest.raises(ToolError) as caught:
            call()
        assert caught.value.code == "DENIED"
    assert files == {"/project/a.txt": "a\n", "/project/.env": "TOKEN=1\n"}


def test_remote_validators_refuse_before_anything_is_written():
    files = {"/project/a.txt": "a\n", "/project/b.json": "{}\n"}
    workspace = RemoteWorkspace(_Serving(files), ROOT)
    seen = []

    def check(request):
        seen.append((request.path, request.operation))
        return "not JSON" if not request.new_content.startswith(b"{") else None

    workspace.hooks.validate("*.json", check)
    session = workspace.session("A")
    session.read("b.json")
    assert session.write("b.json", '{"a": 1}\n').operation == "replace"  # the positive control
    session.read("a.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
        '*** Update File: b.json\n@@\n-{"a": 1}\n+nope\n*** End Patch\n'
    )
    for call in (
        lambda: session.edit("b.json", [EditSpec('{"a": 1}', "nope")]),
        lambda: session.apply_patch(patch),
    ):
        with pytest.raises(ToolError) as caught:
            call()
        assert caught.value.code == "INVALID_ARGUMENT"
    assert files == {"/project/a.txt": "a\n", "/project/b.json": '{"a": 1}\n'}
    assert seen == [("b.json", "write"), ("b.json", "edit"), ("b.json", "apply_patch")]


def test_remote_changes_reach_the_hosts_listeners():
    files = {"/project/a.txt": "one\n"}
    workspace = RemoteWorkspace(_Serving(files), ROOT)
    events = []
    workspace.hooks.subscribe(events.append)
    session = workspace.session("A")
    session.read("a.txt")
    session.edit("a.txt", [EditSpec("one", "two")], message_id="m")
    [event] = events
    assert (event.path, event.operation) == ("a.txt", "patch")
    assert event.new_sha256 == text_sha256("two\n")
    assert event.new_bytes() == b"two\n"  # read back through the client
    assert event.old_bytes() is None  # no snapshot is kept remotely
    files["/project/a.txt"] = "three\n"
    assert event.new_bytes() is None  # no longer what the change wrote


def test_a_notebook_is_not_edited_or_patched_as_text_through_the_client():
    files = {"/project/n.ipynb": '{"cells": []}\n', "/project/a.txt": "a\n"}
    workspace = RemoteWorkspace(_Serving(files), ROOT)
    session = workspace.session("A")
    session.read("a.txt")
    session.edit("a.txt", [EditSpec("a", "b")])  # the positive control
    session.read("n.ipynb")
    patch = '*** Begin Patch\n*** Update File: n.ipynb\n@@\n-{"cells": []}\n+{}\n*** End Patch\n'
    for call in (
        lambda: session.edit("n.ipynb", [EditSpec("[]", "[1]")]),
        lambda: session.apply_patch(patch),
    ):
        with pytest.raises(ToolError) as caught:
            call()
        assert caught.value.code == "UNSUPPORTED"
        assert "local workspace" in caught.value.message
    assert files == {"/project/n.ipynb": '{"cells": []}\n', "/project/a.txt": "b\n"}


def test_the_text_store_answers_for_paths_it_is_never_asked_to_create_or_unlink():
    files = {"/project/a.txt": "a\n"}
    workspace = RemoteWorkspace(_Serving(files), ROOT)
    store = workspace.store
    assert store.exists(workspace.resolve("a.txt"))
    assert not store.exists(workspace.resolve("b.txt"))
    assert not store.is_link(workspace.resolve("a.txt"))  # the client owns its links
