"""Host hooks: deny rules, validators and change events, checked on the bytes on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from editspec.fault_injection import FaultyFileSystem
from editspec.reference import EditSpec, ToolError, Workspace
from editspec.reference.guards._hooks import ChangeEvent, ValidationRequest
from editspec.reference.text._text import sha256_hex


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / ".env").write_text("TOKEN=secret\n")
    (root / "src" / "app.py").write_text("TOKEN = 1\n")
    (root / "settings.json").write_text('{"a": 1}\n')
    return root


def _code(call: object) -> str:
    with pytest.raises(ToolError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() or path.is_symlink()
    }


# -- deny rules ------------------------------------------------------------------------------


def test_denied_paths_are_refused_by_every_tool(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    ws.hooks.deny(".env", "secrets/")
    session = ws.session("s")
    assert session.read("src/app.py").content == "TOKEN = 1\n"  # the positive control
    before = _tree(root)
    digest = sha256_hex(b"TOKEN=secret\n")
    patch = (
        "*** Begin Patch\n*** Update File: .env\n@@\n-TOKEN=secret\n+TOKEN=stolen\n*** End Patch\n"
    )
    for call in (
        lambda: session.read(".env"),
        lambda: session.write(".env", "x", expected_sha256=digest),
        lambda: session.edit(".env", [EditSpec("secret", "x")], expected_sha256=digest),
        lambda: session.apply_patch(patch),
        lambda: session.delete(".env", kind="file", expected_sha256=digest),
        lambda: session.move(".env", "env.txt", expected_sha256=digest),
        lambda: session.move("src/app.py", "secrets/app.py"),
        lambda: session.write("secrets/new.txt", "planted"),
        lambda: session.list_directory("secrets"),
        lambda: session.grep("TOKEN", path=".env"),
    ):
        assert _code(call) == "DENIED"
    assert _tree(root) == before


def test_a_denial_does_not_reveal_existence(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    ws.hooks.deny("*.pem")
    session = ws.session("s")
    (root / "key.pem").write_text("-----BEGIN-----\n")
    messages = []
    for name in ("key.pem", "missing.pem"):
        with pytest.raises(ToolError) as caught:
            session.read(name)
        assert caught.value.code == "DENIED"
        messages.append(caught.value.message.replace(name, "NAME"))
    assert messages[0] == messages[1]


def test_a_lexical_denial_touches_no_disk(root: Path, tmp_path: Path) -> None:
    fs = FaultyFileSystem(count="all")
    ws = Workspace(root, tmp_path / "state", fs=fs)
    ws.hooks.deny(".env")
    session = ws.session("s")
    fs.arm()
    assert _code(lambda: session.read(".env")) == "DENIED"
    assert _code(lambda: session.write("sub/../.env", "x")) == "DENIED"
    touched = [op for op in fs.log if any(path.startswith(str(root)) for path in op.paths)]
    assert touched == []


def test_a_link_to_a_denied_file_is_denied(root: Path, tmp_path: Path) -> None:
    (root / "innocent.txt").symlink_to(".env")
    ws = Workspace(root, tmp_path / "state")
    ws.hooks.deny(".env")
    assert _code(lambda: ws.session("s").read("innocent.txt")) == "DENIED"


def test_searches_and_listings_leave_denied_entries_out(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    ws.hooks.deny(".env", "src/")
    session = ws.session("s")
    listed = {
        entry.path for entry in session.list_directory(".", include_hidden=True, depth=2).entries
    }
    assert listed == {"settings.json"}
    assert session.glob("**/*").paths == ("settings.json",)
    assert [match.path for match in session.grep("TOKEN|a").matches] == ["settings.json"]


def test_a_tree_with_denied_entries_is_not_deleted(root: Path, tmp_path: Path) -> None:
    (root / "conf").mkdir()
    (root / "conf" / "public.txt").write_text("p\n")
    (root / "conf" / "private.key").write_text("k\n")
    ws = Workspace(root, tmp_path / "state")
    ws.hooks.deny("*.key")
    session = ws.session("s")
    listing = session.manifest("conf")
    assert [item.path for item in listing.items] == ["public.txt"]
    assert (
        _code(lambda: session.delete("conf", kind="tree", manifest_sha256=listing.manifest_sha256))
        == "STALE"
    )
    assert (root / "conf" / "private.key").read_text() == "k\n"


# -- validators ------------------------------------------------------------------------------


def _must_parse(request: ValidationRequest) -> str | None:
    try:
        json.loads(request.new_content)
    except ValueError as exc:
        return f"not JSON: {exc}"
    return None


def test_a_validator_refuses_before_anything_is_written(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    seen: list[ValidationRequest] = []

    def check(request: ValidationRequest) -> str | None:
        seen.append(request)
        return _must_parse(request)

    ws.hooks.validate("*.json", check)
    session = ws.session("s")
    session.read("settings.json")
    before = _tree(root)
    broken = (
        '*** Begin Patch\n*** Update File: settings.json\n@@\n-{"a": 1}\n+{"a": \n*** End Patch\n'
    )
    for call in (
        lambda: session.write("settings.json", '{"a": '),
        lambda: session.edit("settings.json", [EditSpec("1}", "1,")]),
        lambda: session.apply_patch(broken),
        lambda: session.write("new.json", "nope"),
    ):
        with pytest.raises(ToolError) as caught:
            call()
        assert caught.value.code == "INVALID_ARGUMENT"
        assert "not JSON" in caught.value.message
    assert _tree(root) == before
    assert not list(root.glob(".*.tmp")) and not list(root.glob(".*stage*"))
    assert seen[0].old_content == b'{"a": 1}\n' and seen[0].new_content == b'{"a": '
    assert [request.operation for request in seen] == ["write", "edit", "apply_patch", "write"]
    session.write("settings.json", '{"a": 2}\n')  # valid content passes
    assert (root / "settings.json").read_bytes() == b'{"a": 2}\n'


def test_a_validator_guards_a_move_and_a_secret_pattern(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    ws.hooks.validate("memory/**", lambda r: "a secret" if b"TOKEN=" in r.new_content else None)
    (root / "notes.txt").write_text("TOKEN=abc\n")
    session = ws.session("s")
    session.read("notes.txt")
    with pytest.raises(ToolError) as caught:
        session.move("notes.txt", "memory/notes.txt")
    assert caught.value.code == "INVALID_ARGUMENT" and "a secret" in caught.value.message
    assert (root / "notes.txt").read_text() == "TOKEN=abc\n"
    assert not (root / "memory").exists()
    with pytest.raises(ToolError):
        session.write("memory/today.md", "TOKEN=xyz\n")
    session.write("memory/today.md", "nothing secret\n")
    assert (root / "memory" / "today.md").read_text() == "nothing secret\n"


# -- change events ---------------------------------------------------------------------------


def test_events_one_per_file_in_commit_order_after_durability(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    events: list[ChangeEvent] = []
    on_disk: list[bytes | None] = []

    def listener(event: ChangeEvent) -> None:
        events.append(event)
        target = root / (event.move_to or event.path)
        on_disk.append(target.read_bytes() if target.exists() else None)

    ws.hooks.subscribe(listener)
    session = ws.session("s")
    session.read("src/app.py")
    session.write("src/app.py", "TOKEN = 2\n", message_id="m1")
    patch = (
        "*** Begin Patch\n*** Add File: b.txt\n+b\n*** Update File: src/app.py\n@@\n-TOKEN = 2\n"
        "+TOKEN = 3\n*** Delete File: settings.json\n*** End Patch\n"
    )
    session.read("settings.json")
    session.apply_patch(patch, message_id="m2")
    session.move("b.txt", "c.txt", expected_sha256=sha256_hex(b"b\n"))
    assert [(e.path, e.operation) for e in events] == [
        ("src/app.py", "replace"),
        ("b.txt", "add"),
        ("src/app.py", "update"),
        ("settings.json", "delete"),
        ("b.txt", "move"),
    ]
    assert on_disk == [b"TOKEN = 2\n", b"b\n", b"TOKEN = 3\n", None, b"b\n"]
    first = events[0]
    assert first.old_sha256 == sha256_hex(b"TOKEN = 1\n")
    assert first.new_sha256 == sha256_hex(b"TOKEN = 2\n")
    assert "+TOKEN = 2" in first.diff
    assert first.old_bytes() == b"TOKEN = 1\n"  # from the snapshot of m1
    assert events[2].new_bytes() == b"TOKEN = 3\n"
    assert first.new_bytes() is None  # the file has moved on since: not its bytes


def test_a_raising_listener_neither_undoes_nor_hides(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    received: list[str] = []

    def broken(event: ChangeEvent) -> None:
        raise RuntimeError("listener bug")

    ws.hooks.subscribe(broken)
    ws.hooks.subscribe(lambda event: received.append(event.path))
    result = ws.session("s").write("new.txt", "hello\n")
    assert result.operation == "create"
    assert (root / "new.txt").read_bytes() == b"hello\n"
    assert received == ["new.txt"]
    assert len(ws.hooks.listener_errors) == 1


def test_unsubscribe_and_failed_calls_emit_nothing(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    received: list[str] = []
    stop = ws.hooks.subscribe(lambda event: received.append(event.path))
    session = ws.session("s")
    with pytest.raises(ToolError):
        session.write("src/app.py", "unread\n")
    assert received == []
    session.write("one.txt", "1\n")
    stop()
    session.write("two.txt", "2\n")
    assert received == ["one.txt"]
    assert os.path.exists(root / "two.txt")


def test_a_validator_that_raises_value_error_refuses(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")

    def strict(request: ValidationRequest) -> str | None:
        if b"TODO" in request.new_content:
            raise ValueError("no TODO allowed")
        if b"FIXME" in request.new_content:
            raise ValueError()  # no message: the exception's name stands for it
        return None

    ws.hooks.validate(["*.py", "!tests/*.py"], strict)
    session = ws.session("s")
    session.read("src/app.py")
    for content, message in (("# TODO\n", "no TODO allowed"), ("# FIXME\n", "ValueError")):
        with pytest.raises(ToolError) as caught:
            session.write("src/app.py", content)
        assert caught.value.code == "INVALID_ARGUMENT"
        assert caught.value.details["validator"] == message
        assert (root / "src" / "app.py").read_bytes() == b"TOKEN = 1\n"
    session.write("tests/test_x.py", "# TODO\n")  # excluded by the pattern's negation
    assert (root / "tests" / "test_x.py").read_bytes() == b"# TODO\n"


def test_unsubscribing_twice_keeps_the_other_listeners(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    first: list[str] = []
    second: list[str] = []
    stop = ws.hooks.subscribe(lambda event: first.append(event.path))
    ws.hooks.subscribe(lambda event: second.append(event.path))
    stop()
    stop()  # a second call is a no-op, not an error, and removes nobody else
    ws.session("s").write("one.txt", "1\n")
    assert first == [] and second == ["one.txt"]


def test_delete_and_rewind_events_name_every_file(root: Path, tmp_path: Path) -> None:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.txt").write_bytes(b"a\n")
    (root / "pkg" / "sub" / "b.txt").write_bytes(b"b\n")
    ws = Workspace(root, tmp_path / "state")
    events: list[ChangeEvent] = []
    ws.hooks.subscribe(events.append)
    session = ws.session("s")
    session.read("settings.json")
    session.delete("settings.json", kind="file", message_id="m1")
    digest = session.manifest("pkg").manifest_sha256
    session.delete("pkg", kind="tree", manifest_sha256=digest, message_id="m2")
    assert [(e.path, e.operation, e.old_sha256, e.new_sha256) for e in events] == [
        ("settings.json", "delete", sha256_hex(b'{"a": 1}\n'), None),
        ("pkg/a.txt", "delete", sha256_hex(b"a\n"), None),
        ("pkg/sub/b.txt", "delete", sha256_hex(b"b\n"), None),
    ]
    assert events[0].old_bytes() == b'{"a": 1}\n'  # from the snapshot of m1
    assert events[0].new_bytes() is None  # a deleted file has no new content
    events.clear()
    session.rewind("m1")
    assert (root / "settings.json").read_bytes() == b'{"a": 1}\n'
    assert (root / "pkg" / "sub" / "b.txt").read_bytes() == b"b\n"
    # The tree's directories come back too (DEL-012), each with its own event.
    assert sorted((e.path, e.operation) for e in events) == [
        ("pkg", "recreated"),
        ("pkg/a.txt", "recreated"),
        ("pkg/sub", "recreated"),
        ("pkg/sub/b.txt", "recreated"),
        ("settings.json", "recreated"),
    ]
    assert all(e.old_bytes() is None and e.new_bytes() is None for e in events)


def test_event_contents_that_cannot_be_known_are_none(root: Path, tmp_path: Path) -> None:
    ws = Workspace(root, tmp_path / "state")
    events: list[ChangeEvent] = []
    ws.hooks.subscribe(events.append)
    session = ws.session("s")
    session.write("new.txt", "fresh\n")  # a new file: no old content
    session.read("src/app.py")
    session.write("src/app.py", "TOKEN = 2\n")  # no message_id: no snapshot of the old bytes
    created, replaced = events
    assert created.old_bytes() is None and created.new_bytes() == b"fresh\n"
    assert replaced.old_sha256 == sha256_hex(b"TOKEN = 1\n")
    assert replaced.old_bytes() is None
    assert replaced.new_bytes() == b"TOKEN = 2\n"
    (root / "new.txt").unlink()
    (root / "new.txt").mkdir()  # the path is a directory now: IS_A_DIRECTORY, swallowed
    assert created.new_bytes() is None
    ws.hooks.deny("src/")  # a denied path is DENIED when looked up again: swallowed too
    assert replaced.new_bytes() is None
