"""REMOTE: workspaces whose files live in an editor, reached only through an ACP client.

The agent may only call the client's ``fs/read_text_file`` and ``fs/write_text_file``:
no rename, no fsync, no directory operation. These clauses say what an implementation
promises there (DESIGN §2 profile Remote): the same read-before-write and stale rules
on the hash of the text the client returns, every write read back, and a failure that
either leaves the client's files as they were or names exactly which are not.

Sessions are opened with the contract's ``open_remote_session`` (``spec/remote.py``);
the fake client's root is the clause's local root, so a local file of the same name is
there to catch any fallback to the local disk.
"""

from __future__ import annotations

import pytest

from editspec.contract import REMOTE_FILE_STATES
from editspec.reference import EditSpec
from editspec.spec import MUST, SHOULD, clause, raises_code
from editspec.spec.fixtures import sha256
from editspec.spec.remote import ClientFault, RemoteKit

FOREVER = 1 << 40


@pytest.fixture
def remote(driver, disk):
    kit = RemoteKit(driver, disk.root)
    yield kit
    kit.close()


@pytest.fixture
def rsession(remote):
    return remote.open_session("A")


def _update_patch(files: dict[str, tuple[str, str]]) -> str:
    """A Codex patch that replaces one line in each file: name -> (old line, new line)."""
    lines = ["*** Begin Patch"]
    for name, (old, new) in files.items():
        lines += [f"*** Update File: {name}", "@@", f"-{old}", f"+{new}"]
    lines.append("*** End Patch")
    return "\n".join(lines) + "\n"


def _control_write(remote, rsession, name: str = "control-write.txt") -> int:
    """Positive control: this session reads a client file and replaces it; the number of
    client writes so far (the clause's refusals must add none)."""
    remote.put(name, "control\n")
    rsession.read(name)
    rsession.write(name, "control, replaced\n")
    assert remote.get(name) == "control, replaced\n"
    return remote.writes()


def _control_edit(remote, rsession, name: str = "control-edit.txt") -> int:
    """Positive control: an edit of a client file this session read lands in the client."""
    remote.put(name, "control one\n")
    rsession.read(name)
    rsession.edit(name, [EditSpec("one", "two")])
    assert remote.get(name) == "control two\n"
    return remote.writes()


def _control_patch(remote, rsession, name: str = "control-patch.txt") -> int:
    """Positive control: an Update patch of a client file this session read lands."""
    remote.put(name, "control one\n")
    rsession.read(name)
    rsession.apply_patch(_update_patch({name: ("control one", "control two")}))
    assert remote.get(name) == "control two\n"
    return remote.writes()


def _states(error) -> dict[str, str]:
    details = getattr(error, "details", None) or {}
    files = details.get("files")
    assert isinstance(files, list), f"the error does not list the files of the change: {details}"
    states = {entry["path"]: entry["state"] for entry in files}
    assert set(states.values()) <= set(REMOTE_FILE_STATES), states
    return states


@clause(
    "REMOTE-001",
    MUST,
    requires={"remote_acp"},
    text="A remote session reads the text the ACP client holds, with sha256 of its UTF-8 "
    "bytes, and never the local file of the same name.",
    rationale="In an editor the buffer is the truth; reading the disk shows the agent text the "
    "user has already changed, and its hash would authorize writes against the wrong base.",
)
def test_read_is_the_clients_text(remote, rsession, disk):
    disk.write("a.txt", "local text\n")
    remote.put("a.txt", "client text\nsecond line\n")
    result = rsession.read("a.txt")
    assert result.content == "client text\nsecond line\n"
    assert result.sha256 == sha256("client text\nsecond line\n")
    assert result.total_lines == 2


@clause(
    "REMOTE-002",
    MUST,
    requires={"remote_acp"},
    text="A remote write creates or replaces the file in the ACP client, with exactly the given "
    "text, and leaves every local file untouched.",
    rationale="An agent inside an editor that writes the disk under the editor's buffer loses "
    "the user's unsaved work and is overwritten by the next save.",
)
def test_write_goes_to_the_client(remote, rsession, disk):
    disk.write("a.txt", "local text\n")
    remote.put("a.txt", "old\n")
    before = disk.snapshot()
    rsession.read("a.txt")
    result = rsession.write("a.txt", "new text\n")
    created = rsession.write("sub/b.txt", "created\n")
    assert remote.get("a.txt") == "new text\n"
    assert remote.get("sub/b.txt") == "created\n"
    assert result.new_sha256 == sha256("new text\n")
    assert created.operation == "create"
    disk.assert_unchanged(before)


@clause(
    "REMOTE-003",
    MUST,
    requires={"remote_acp"},
    text="Replacing a client file that this session has not read in full fails with NOT_READ, "
    "and nothing is written to the client.",
    rationale="Read-before-write does not depend on where the file lives; a blind write to an "
    "editor buffer destroys text the agent never saw.",
)
def test_replace_without_read_is_refused(remote, rsession):
    writes = _control_write(remote, rsession)
    remote.put("a.txt", "old\n")
    with raises_code("NOT_READ"):
        rsession.write("a.txt", "new\n")
    assert remote.get("a.txt") == "old\n"
    assert remote.writes() == writes


@clause(
    "REMOTE-004",
    MUST,
    requires={"remote_acp"},
    text="A client file whose text changed since this session read it is refused with STALE "
    "(for write, edit and patch), judged by the hash of the text the client returns, and "
    "nothing is written.",
    rationale="The user types in the editor while the agent thinks; a change of the buffer must "
    "invalidate the agent's read exactly as a change on disk does.",
)
def test_changed_client_file_is_stale(remote, rsession):
    _control_write(remote, rsession)
    _control_edit(remote, rsession)
    writes = _control_patch(remote, rsession)
    remote.put("a.txt", "one\ntwo\n")
    rsession.read("a.txt")
    remote.put("a.txt", "one\ntwo, typed by the user\n")
    with raises_code("STALE"):
        rsession.write("a.txt", "replaced\n")
    with raises_code("STALE"):
        rsession.edit("a.txt", [EditSpec("one", "ONE")])
    with raises_code("STALE"):
        rsession.apply_patch(_update_patch({"a.txt": ("one", "ONE")}))
    assert remote.get("a.txt") == "one\ntwo, typed by the user\n"
    assert remote.writes() == writes


@clause(
    "REMOTE-005",
    MUST,
    requires={"remote_acp"},
    text="expected_sha256 equal to the hash of the client's text stands in for a read; a "
    "different one is STALE and nothing is written.",
    rationale="Compare-and-swap is how a caller that knows the content proves it; it must mean "
    "the same over a client as on disk.",
)
def test_expected_sha256_over_the_client(remote, rsession):
    # Positive control: the right hash stands in for a read of a file never read.
    remote.put("b.txt", "b text\n")
    rsession.write("b.txt", "b other\n", expected_sha256=sha256("b text\n"))
    assert remote.get("b.txt") == "b other\n"
    writes = remote.writes()
    remote.put("a.txt", "text\n")
    with raises_code("STALE"):
        rsession.write("a.txt", "other\n", expected_sha256=sha256("not the text\n"))
    assert remote.writes() == writes
    assert remote.get("a.txt") == "text\n"
    rsession.write("a.txt", "other\n", expected_sha256=sha256("text\n"))
    assert remote.get("a.txt") == "other\n"


@clause(
    "REMOTE-006",
    MUST,
    requires={"remote_acp"},
    text="Edit works on a client file as on a local one: the match is applied to the client's "
    "text, the result is written to the client, and the result reports the old and new hash.",
    rationale="Edit is the agent's commonest change; over a client it must keep its semantics, "
    "not degrade to a whole-file rewrite from the agent's memory.",
)
def test_edit_over_the_client(remote, rsession):
    remote.put("m.py", "def f():\n    return 1\n")
    rsession.read("m.py")
    result = rsession.edit("m.py", [EditSpec("return 1", "return 2")])
    assert remote.get("m.py") == "def f():\n    return 2\n"
    assert result.old_sha256 == sha256("def f():\n    return 1\n")
    assert result.new_sha256 == sha256("def f():\n    return 2\n")


@clause(
    "REMOTE-007",
    MUST,
    requires={"remote_acp"},
    text="Writing binary content to a remote workspace fails with UNSUPPORTED, and nothing is "
    "written to the client.",
    rationale="fs/write_text_file carries text; pushing bytes through it mangles them silently.",
)
def test_binary_write_is_unsupported(remote, rsession):
    # Positive control: a text file is created in the client.
    rsession.write("text.txt", "text\n")
    assert remote.get("text.txt") == "text\n"
    writes = remote.writes()
    with raises_code("UNSUPPORTED"):
        rsession.write("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    assert remote.writes() == writes
    assert remote.get("image.png") is None


@clause(
    "REMOTE-008",
    MUST,
    requires={"remote_acp"},
    text="An ApplyPatch of Update File operations changes every named file in the client and "
    "reports each change.",
    rationale="Multi-file refactors are what patches are for; Update is the one operation a "
    "whole-file write can carry.",
)
def test_update_patch_over_the_client(remote, rsession):
    for name in ("a.txt", "b.txt", "c.txt"):
        remote.put(name, f"{name} one\n{name} two\n")
        rsession.read(name)
    patch = _update_patch(
        {name: (f"{name} two", f"{name} 2") for name in ("a.txt", "b.txt", "c.txt")}
    )
    result = rsession.apply_patch(patch)
    assert remote.files() == {
        name: f"{name} one\n{name} 2\n" for name in ("a.txt", "b.txt", "c.txt")
    }
    assert sorted(change.path for change in result.changes) == ["a.txt", "b.txt", "c.txt"]


@clause(
    "REMOTE-009",
    MUST,
    requires={"remote_acp"},
    text="A patch with an Add, Delete or Move File operation fails with UNSUPPORTED before "
    "anything is written, even when it also has Update operations.",
    rationale="The client cannot delete or rename; doing half of a patch and refusing the rest "
    "leaves a tree that is neither before nor after.",
)
def test_add_delete_move_fail_closed(remote, rsession):
    remote.put("a.txt", "a\n")
    remote.put("b.txt", "b\n")
    rsession.read("a.txt")
    rsession.read("b.txt")
    writes = _control_patch(remote, rsession)
    update = "*** Update File: a.txt\n@@\n-a\n+A\n"
    for operation in (
        "*** Add File: new.txt\n+new\n",
        "*** Delete File: b.txt\n",
        "*** Update File: b.txt\n*** Move to: moved.txt\n@@\n-b\n+B\n",
    ):
        with raises_code("UNSUPPORTED"):
            rsession.apply_patch(f"*** Begin Patch\n{update}{operation}*** End Patch\n")
    assert remote.files() == {"a.txt": "a\n", "b.txt": "b\n", "control-patch.txt": "control two\n"}
    assert remote.writes() == writes


@clause(
    "REMOTE-010",
    MUST,
    requires={"remote_acp"},
    text="Every remote write is read back: a client that stores other text than was written "
    "makes the call fail (never a success), and the file is restored to its previous text.",
    rationale="A write call that returns no error proves nothing about an editor buffer "
    "(format-on-save, a plugin, a concurrent keystroke); only the read-back does.",
)
def test_write_is_read_back(remote, rsession):
    _control_write(remote, rsession)
    remote.put("a.txt", "old\n")
    rsession.read("a.txt")
    remote.arm(ClientFault(method="write", at=1, action="garble"))
    with raises_code("CONFLICT", "IO_ERROR"):
        rsession.write("a.txt", "new\n")
    assert remote.get("a.txt") == "old\n"


@clause(
    "REMOTE-011",
    MUST,
    requires={"remote_acp"},
    text="When a write fails in the middle of a multi-file remote patch, the files already "
    "written are restored, and the client's files are all as before the patch.",
    rationale="Without rename there is no atomic publish; restoring what was written is the only "
    "way back to a tree the agent knows.",
)
def test_failed_write_restores_the_patch(remote, rsession, disk):
    names = ("a.txt", "b.txt", "c.txt")
    for name in names:
        remote.put(name, f"{name}\n")
        rsession.read(name)
    _control_patch(remote, rsession)
    before = dict(remote.files())
    snapshot = disk.snapshot()
    remote.arm(ClientFault(method="write", at=3, action="fail"))
    with raises_code("IO_ERROR"):
        rsession.apply_patch(_update_patch({name: (name, name.upper()) for name in names}))
    assert remote.files() == before
    disk.assert_unchanged(snapshot)


@clause(
    "REMOTE-012",
    MUST,
    requires={"remote_acp"},
    text="When a restore fails too, the error lists every file of the change with its state "
    "(untouched, restored, not_restored, unknown): files said untouched or restored hold their "
    "previous text, and files said not_restored do not.",
    rationale="After a half-applied change the agent must know exactly which files to look at; "
    "an error that only says 'failed' hides the damage.",
)
def test_failed_restore_names_the_files(remote, rsession):
    names = ("a.txt", "b.txt", "c.txt")
    for name in names:
        remote.put(name, f"{name}\n")
        rsession.read(name)
    _control_patch(remote, rsession)
    # The client stops accepting writes after the first: the restore of a.txt fails too.
    remote.arm(ClientFault(method="write", at=2, action="fail", through=FOREVER))
    with raises_code("IO_ERROR", "CONFLICT") as caught:
        rsession.apply_patch(_update_patch({name: (name, name.upper()) for name in names}))
    states = _states(caught.exception)
    assert set(states) == set(names)
    for name, state in states.items():
        if state in ("untouched", "restored"):
            assert remote.get(name) == f"{name}\n", name
        elif state == "not_restored":
            assert remote.get(name) != f"{name}\n", name
    assert states["a.txt"] == "not_restored"


@clause(
    "REMOTE-013",
    MUST,
    requires={"remote_acp"},
    text="A read-back that answers other text than was written fails the change, which is then "
    "undone: the client's files end as they were before it.",
    rationale="A corrupt read-back is indistinguishable from a corrupt write; the only safe "
    "answer is to treat it as one.",
)
def test_corrupt_read_back_fails_and_restores(remote, rsession):
    names = ("a.txt", "b.txt", "c.txt")
    for name in names:
        remote.put(name, f"{name}\n")
        rsession.read(name)
    _control_patch(remote, rsession)
    before = dict(remote.files())
    # The read that follows the write of the second file answers other text.
    remote.arm(ClientFault(method="readback", at=2, action="corrupt"))
    with raises_code("CONFLICT", "IO_ERROR"):
        rsession.apply_patch(_update_patch({name: (name, name.upper()) for name in names}))
    assert remote.files() == before


@clause(
    "REMOTE-014",
    MUST,
    requires={"remote_acp"},
    text="Remote paths are confined to the root: '..' escapes and absolute paths outside it are "
    "OUTSIDE_WORKSPACE, and the client is never asked for them.",
    rationale="The client owns the files, but the agent's confinement is the agent's job; an "
    "editor will happily serve ~/.ssh/id_rsa.",
)
def test_remote_paths_are_confined(remote, rsession, outside):
    # Positive controls: a relative path that climbs and an absolute path, both inside the
    # root, are read and written through the client.
    remote.put("inside.txt", "inside\n")
    assert rsession.read("sub/../inside.txt").content == "inside\n"
    assert rsession.read(remote.root + "/inside.txt").content == "inside\n"
    rsession.write("sub/../made.txt", "made\n")
    rsession.write(remote.root + "/made-abs.txt", "made\n")
    assert remote.get("made.txt") == remote.get("made-abs.txt") == "made\n"
    for path in (
        "../secret.txt",
        "sub/../../secret.txt",
        str(outside / "secret.txt"),
        "/etc/passwd",
    ):
        with raises_code("OUTSIDE_WORKSPACE"):
            rsession.read(path)
        with raises_code("OUTSIDE_WORKSPACE"):
            rsession.write(path, "x\n")
    assert all(path.startswith(remote.root + "/") for path in remote.client.paths_asked())


@clause(
    "REMOTE-015",
    MUST,
    requires={"remote_acp"},
    text="A failed client call is never retried on a local file: after the client refuses a "
    "write, no local file is created or changed.",
    rationale="Falling back to the disk writes a file the editor does not show, under the name "
    "of one it does: the user's next save overwrites it, or it surfaces as a mystery.",
)
def test_no_local_fallback(remote, rsession, disk):
    disk.write("a.txt", "local\n")
    remote.put("a.txt", "client\n")
    rsession.read("a.txt")
    rsession.write("fresh-control.txt", "made\n")  # positive control: the client takes writes
    assert remote.get("fresh-control.txt") == "made\n"
    snapshot = disk.snapshot()
    remote.arm(ClientFault(method="write", at=1, action="fail", through=FOREVER))
    with raises_code("IO_ERROR"):
        rsession.write("a.txt", "new\n")
    with raises_code("IO_ERROR"):
        rsession.write("fresh.txt", "new\n")
    disk.assert_unchanged(snapshot)
    assert remote.get("a.txt") == "client\n"


@clause(
    "REMOTE-016",
    MUST,
    requires={"remote_acp"},
    text="A client file changed by another writer while a remote patch is being published is "
    "not overwritten: the patch fails (STALE or CONFLICT), the other writer's text stays, and "
    "the files already written are restored.",
    rationale="Without a lock on the editor's buffers, re-checking each file just before writing "
    "it is what keeps the agent from erasing a keystroke made a moment earlier.",
)
def test_change_during_publish_is_not_overwritten(remote, rsession):
    names = ("a.txt", "b.txt")
    for name in names:
        remote.put(name, f"{name}\n")
        rsession.read(name)
    _control_patch(remote, rsession)
    typed = "b.txt typed by the user\n"
    remote.arm(
        ClientFault(
            method="write", at=1, action="change", path=remote.client.absolute("b.txt"), text=typed
        )
    )
    with raises_code("STALE", "CONFLICT"):
        rsession.apply_patch(_update_patch({name: (name, name.upper()) for name in names}))
    assert remote.get("b.txt") == typed
    assert remote.get("a.txt") == "a.txt\n"


@clause(
    "REMOTE-017",
    SHOULD,
    requires={"remote_acp"},
    text="After a verified remote write the session may change the file again without reading "
    "it, as locally.",
    rationale="The read-back proved what the client holds; demanding another read doubles the "
    "calls of every edit sequence.",
)
def test_written_file_counts_as_read(remote, rsession):
    remote.put("a.txt", "one\n")
    rsession.read("a.txt")
    rsession.edit("a.txt", [EditSpec("one", "two")])
    rsession.edit("a.txt", [EditSpec("two", "three")])
    assert remote.get("a.txt") == "three\n"


@clause(
    "REMOTE-018",
    MUST,
    requires={"remote_acp"},
    text="A string edit or a patch of a .ipynb file in a remote workspace fails with "
    "UNSUPPORTED, and nothing is written.",
    rationale="Notebook JSON edited as text breaks its structure; the remote path has no "
    "notebook tool to point to, so it must refuse.",
)
def test_remote_notebook_text_edit_is_unsupported(remote, rsession):
    remote.put("nb.ipynb", '{\n "cells": []\n}\n')
    rsession.read("nb.ipynb")
    _control_edit(remote, rsession)
    writes = _control_patch(remote, rsession)
    with raises_code("UNSUPPORTED"):
        rsession.edit("nb.ipynb", [EditSpec('"cells"', '"cellz"')])
    with raises_code("UNSUPPORTED"):
        rsession.apply_patch(_update_patch({"nb.ipynb": (' "cells": []', ' "cells": [1]')}))
    assert remote.writes() == writes
