"""The standard scenarios ``editspec explore`` runs, and the capabilities each needs.

For each the last step is the one explored; the steps before it set the workspace up
(reads, earlier writes that give rewind a history).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection.scenario import SESSION, Scenario


def _file(text: str) -> trees.Entry:
    return trees.Entry.file(text.encode("utf-8"), 0o644)


def _lines(name: str, count: int = 6) -> str:
    return "".join(f"{name} line {n}\n" for n in range(1, count + 1))


def _read(path: str) -> dict[str, Any]:
    return {"call": "read", "session": SESSION, "path": path}


def single_write() -> Scenario:
    old = b"the old contents\n"
    return Scenario(
        name="single-write",
        description="replace one file with Write (atomic replace, no journal)",
        initial={"notes.txt": trees.Entry.file(old, 0o644)},
        steps=(
            {
                "call": "write",
                "session": SESSION,
                "path": "notes.txt",
                "content": "the new contents, longer than before\n",
                "expected_sha256": hashlib.sha256(old).hexdigest(),
            },
        ),
    )


def plain_write() -> Scenario:
    """A single write as any writer can make it: read the file, then replace it (no
    ``expected_sha256``, so a tool without compare-and-swap can be crashed too)."""
    old = b"the old contents\n"
    return Scenario(
        name="plain-write",
        description="read one file, then replace it with Write (no expected_sha256)",
        initial={"notes.txt": trees.Entry.file(old, 0o644)},
        steps=(
            {"call": "read", "session": SESSION, "path": "notes.txt"},
            {
                "call": "write",
                "session": SESSION,
                "path": "notes.txt",
                "content": "the new contents, longer than before\n",
            },
        ),
    )


#: The scenarios of one file's write: a temp file its kill leaves beside the file is
#: only counted (the reference leaves one too; it never replaces the file).
SINGLE_WRITES = frozenset({"single-write", "plain-write"})


def update_ten_files() -> Scenario:
    paths = [f"{d}/file{n}.txt" for d in ("src", "lib", "docs") for n in range(1, 4)] + ["top.txt"]
    initial = {path: _file(_lines(path)) for path in paths}
    hunks = []
    for path in paths:
        hunks.append(
            f"*** Update File: {path}\n@@\n {path} line 2\n-{path} line 3\n+{path} LINE THREE\n"
        )
    patch = "*** Begin Patch\n" + "".join(hunks) + "*** End Patch\n"
    return Scenario(
        name="update-10-files",
        description="one ApplyPatch updating 10 files across 3 directories",
        initial=initial,
        steps=(
            *(_read(path) for path in paths),
            {"call": "apply_patch", "session": SESSION, "patch": patch, "message_id": "m1"},
        ),
    )


def add_delete_move() -> Scenario:
    initial = {
        "keep.txt": _file(_lines("keep")),
        "old/gone.txt": _file(_lines("gone")),
        "old/moving.txt": _file(_lines("moving")),
    }
    patch = (
        "*** Begin Patch\n"
        "*** Add File: new/deep/added.txt\n+added line 1\n+added line 2\n"
        "*** Delete File: old/gone.txt\n"
        "*** Update File: old/moving.txt\n*** Move to: moved/here/moving.txt\n"
        "@@\n moving line 1\n-moving line 2\n+moving line TWO\n"
        "*** End Patch\n"
    )
    return Scenario(
        name="add-delete-move",
        description="one ApplyPatch: add into new directories, delete, move into new ones",
        initial=initial,
        steps=(
            _read("old/gone.txt"),
            _read("old/moving.txt"),
            {"call": "apply_patch", "session": SESSION, "patch": patch, "message_id": "m1"},
        ),
    )


def rewind_five() -> Scenario:
    initial = {"a.txt": _file(_lines("a")), "b.txt": _file(_lines("b"))}
    steps: list[dict[str, Any]] = [_read("a.txt"), _read("b.txt")]
    for n in range(1, 6):
        steps.append(
            {
                "call": "write",
                "session": SESSION,
                "path": "a.txt",
                "content": _lines("a") + f"a change {n}\n",
                "message_id": f"m{n}",
            }
        )
        if n % 2 == 1:
            steps.append(
                {
                    "call": "write",
                    "session": SESSION,
                    "path": f"new{n}.txt",
                    "content": f"created at message {n}\n",
                    "message_id": f"m{n}",
                }
            )
    steps.append(
        {
            "call": "write",
            "session": SESSION,
            "path": "b.txt",
            "content": "b rewritten\n",
            "message_id": "m5",
        }
    )
    steps.append({"call": "rewind", "session": SESSION, "message_id": "m1"})
    return Scenario(
        name="rewind-5",
        description="rewind over 5 messages: restore 2 files, delete 3 created ones",
        initial=initial,
        steps=tuple(steps),
    )


def recovery_crash() -> Scenario:
    initial = {"one.txt": _file(_lines("one")), "two.txt": _file(_lines("two"))}
    patch = (
        "*** Begin Patch\n"
        "*** Update File: one.txt\n@@\n one line 1\n-one line 2\n+one line TWO\n"
        "*** Delete File: two.txt\n"
        "*** Add File: sub/three.txt\n+three\n"
        "*** End Patch\n"
    )
    return Scenario(
        name="recovery-crash",
        description="a 3-file patch crashed at every step, its recovery crashed at every step",
        initial=initial,
        steps=(
            _read("one.txt"),
            _read("two.txt"),
            {"call": "apply_patch", "session": SESSION, "patch": patch, "message_id": "m1"},
        ),
    )


def delete_tree() -> Scenario:
    initial = {
        "keep.txt": _file(_lines("keep")),
        "build/out.txt": _file(_lines("out")),
        "build/sub/deep.txt": _file(_lines("deep")),
    }
    tree = [
        ["out.txt", "file", hashlib.sha256(_lines("out").encode()).hexdigest()],
        ["sub", "dir", None],
        ["sub/deep.txt", "file", hashlib.sha256(_lines("deep").encode()).hexdigest()],
    ]
    body = json.dumps({"path": "build", "items": tree}, sort_keys=True, separators=(",", ":"))
    return Scenario(
        name="delete-tree",
        description="Delete of a 2-file tree: one rename into the quarantine, restorable",
        initial=initial,
        steps=(
            {
                "call": "delete",
                "session": SESSION,
                "path": "build",
                "kind": "tree",
                # the reference's manifest hash (``_manifest.manifest_hash``) of that tree
                "manifest_sha256": hashlib.sha256(body.encode("ascii")).hexdigest(),
                "message_id": "m1",
            },
        ),
    )


def move_file() -> Scenario:
    text = _lines("moving")
    return Scenario(
        name="move-file",
        description="Move of one file into new directories: link then unlink, never a clobber",
        initial={"keep.txt": _file(_lines("keep")), "old/moving.txt": _file(text)},
        steps=(
            {
                "call": "move",
                "session": SESSION,
                "path": "old/moving.txt",
                "dest": "new/deep/moving.txt",
                "expected_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "message_id": "m1",
            },
        ),
    )


@attrs.frozen
class Standard:
    build: Callable[[], Scenario]
    requires: frozenset[str]  # the capabilities a driver needs for it (DESIGN §2)
    recovery_crashes: bool = False


_PATCH_NEEDS = frozenset({"read", "read_before_write", "apply_patch"})


STANDARD: dict[str, Standard] = {
    "single-write": Standard(single_write, frozenset({"write", "cas"})),
    "plain-write": Standard(plain_write, frozenset({"read", "write"})),
    "update-10-files": Standard(update_ten_files, _PATCH_NEEDS),
    "add-delete-move": Standard(add_delete_move, _PATCH_NEEDS),
    "rewind-5": Standard(rewind_five, frozenset({"read", "write", "snapshots"})),
    "recovery-crash": Standard(recovery_crash, _PATCH_NEEDS, recovery_crashes=True),
    "delete-tree": Standard(delete_tree, frozenset({"delete"})),
    "move-file": Standard(move_file, frozenset({"move", "cas"})),
}


def missing_capabilities(
    name: str, capabilities: frozenset[str], runs_here: str = "python_fs"
) -> list[str]:
    """What a driver lacks for standard scenario ``name`` (``runs_here`` included: how
    faults reach it, ``python_fs`` or ``process``)."""
    return sorted((STANDARD[name].requires | {runs_here}) - capabilities)


#: Power-loss states enumerated per cut point, by model. The ordered model is never
#: bounded by this in the standard scenarios; "strict" is exhaustive only for small
#: traces: beyond the bound it covers the ordered states, then every single lost
#: entry operation, then every pair, and so on, and the table marks the row.
DEFAULT_LIMITS: dict[str, int] = {"ordered": 4096, "strict": 64}
