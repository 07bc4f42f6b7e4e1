"""Mutants of Delete and Move: each the reference with one precondition or step left out."""

from __future__ import annotations

import os
from typing import Any

from mutant_zoo import Mutant, _replace, register

from editspec.reference import DeleteResult, MoveResult, MoveStep, ToolError, _errors
from editspec.reference._results import RecoveryReport
from editspec.reference.snapshots import _snapshots
from editspec.reference.tools import _delete, _move, _no_clobber
from editspec.reference.transactions import _recovery


def _mutant(name: str, defect: str, areas: tuple[str, ...], install: Any, *clauses: str) -> None:
    register(Mutant(name=name, defect=defect, areas=areas, install=install, clauses=clauses))


def _fake_delete(path: str, kind: str) -> DeleteResult:
    return DeleteResult(
        path=path,
        kind=kind,
        items=(),
        old_sha256=None,
        manifest_sha256=None,
        restore_ref=None,
        quarantine=None,
        snapshot_created=False,
    )


def _noop_delete() -> None:
    def delete_file(session: Any, target: Any, expected: Any, message_id: Any) -> DeleteResult:
        return _fake_delete(target.logical_relative, "file")

    _replace(_delete, "_delete_file", delete_file)


_mutant(
    "delete_reports_without_deleting",
    "A file delete reports success and leaves the file on disk.",
    ("DEL",),
    _noop_delete,
    "DEL-001",
)


def _no_freshness() -> None:
    def check_fresh(session: Any, target: Any, data: bytes, expected: Any) -> str:
        return _delete.sha256_hex(data)

    _replace(_delete, "check_fresh", check_fresh)
    _replace(_move, "check_fresh", check_fresh)


_mutant(
    "delete_and_move_unread",
    "Delete and Move take any file: no read, no expected_sha256 check.",
    ("DEL", "MOVE"),
    _no_freshness,
    "DEL-002",
    "DEL-003",
    "MOVE-003",
)


def _kind_trusted() -> None:
    _replace(_delete, "check_kind", lambda kind, actual, shown: None)


_mutant(
    "delete_kind_trusted",
    "The stated kind is not compared with the disk: an empty_dir delete of a full "
    "directory, or a tree delete of a file, goes ahead.",
    ("DEL",),
    _kind_trusted,
    "DEL-004",
)


def _manifest_ignored() -> None:
    _replace(_delete, "check_tree", lambda tree, expected, shown: None)
    _replace(_move, "check_tree", lambda tree, expected, shown: None)


_mutant(
    "tree_manifest_ignored",
    "A tree is deleted or moved whatever its manifest now is: entries added since go too.",
    ("DEL", "MOVE"),
    _manifest_ignored,
    "DEL-005",
    "MOVE-007",
)


def _manifest_optional() -> None:
    def require_manifest(manifest_hash: Any, shown: str, verb: str) -> Any:
        return manifest_hash

    def check_tree(tree: Any, expected: Any, shown: str) -> None:
        if expected is not None and tree.manifest_sha256 != expected:
            raise ToolError(_errors.STALE, f"{shown} changed", path=shown)

    _replace(_delete, "require_manifest", require_manifest)
    _replace(_delete, "check_tree", check_tree)


_mutant(
    "tree_without_manifest",
    "A tree delete without manifest_sha256 deletes the tree unchecked (rm -rf).",
    ("DEL",),
    _manifest_optional,
    "DEL-006",
)


def _nothing_kept() -> None:
    _replace(_snapshots.SnapshotStore, "record", lambda self, *args, **kwargs: None)


_mutant(
    "delete_and_move_not_recorded",
    "Deleted and moved content is not recorded: restore_ref names nothing rewind knows.",
    ("DEL", "MOVE"),
    _nothing_kept,
    "DEL-007",
    "MOVE-005",
)


def _tree_in_place() -> None:
    def delete_tree(session: Any, target: Any, expected: str, message_id: Any) -> DeleteResult:
        workspace = session.workspace
        fs = workspace.fs
        tree = _delete.scan_tree(workspace, target.real, target.relative)
        _delete.check_tree(tree, expected, target.logical_relative)
        for item in sorted(tree.items, key=lambda item: item.path.count("/"), reverse=True):
            real = os.path.join(target.real, item.path)
            if item.type == "dir":
                fs.rmdir(real)
            else:
                fs.unlink(real)
        fs.rmdir(target.real)
        return _fake_delete(target.logical_relative, "tree")

    _replace(_delete, "_delete_tree", delete_tree)


_mutant(
    "tree_deleted_file_by_file",
    "A tree is deleted entry by entry with no transaction: a crash leaves part of it.",
    ("DEL",),
    _tree_in_place,
    "DEL-008",
)


def _recover_nothing() -> None:
    _replace(_recovery, "_recover", lambda workspace: RecoveryReport())


_mutant(
    "delete_journal_not_recovered",
    "recover() leaves an interrupted file delete as it is: its backup link stays.",
    ("DEL",),
    _recover_nothing,
    "DEL-009",
)


def _unconfined() -> None:
    original = _delete.delete

    def delete(session: Any, path: str, **kwargs: Any) -> DeleteResult:
        root = session.workspace.root
        lexical = os.path.normpath(os.path.join(root, path))
        if not lexical.startswith(root + os.sep):
            os.unlink(lexical)  # the mutant's defect: no confinement for delete
            return _fake_delete(path, kwargs.get("kind", "file"))
        return original(session, path, **kwargs)

    _replace(_delete, "delete", delete)


_mutant(
    "delete_unconfined",
    "Delete joins the path to the root and removes what it names, outside the root too.",
    ("DEL",),
    _unconfined,
    "DEL-010",
)


def _missing_is_success() -> None:
    original = _delete.delete

    def delete(session: Any, path: str, **kwargs: Any) -> DeleteResult:
        try:
            return original(session, path, **kwargs)
        except ToolError as exc:
            if exc.code != _errors.NOT_FOUND:
                raise
            return _fake_delete(path, kwargs.get("kind", "file"))

    _replace(_delete, "delete", delete)


_mutant(
    "delete_missing_succeeds",
    "Deleting a path that does not exist reports success.",
    ("DEL",),
    _missing_is_success,
    "DEL-011",
)


def _files_only() -> None:
    original = _delete.tree_entries

    def tree_entries(root_relative: str, tree: Any, *, moved_to: Any) -> Any:
        entries = original(root_relative, tree, moved_to=moved_to)
        return [entry for entry in entries if entry.kind == "file"]

    _replace(_delete, "tree_entries", tree_entries)


_mutant(
    "tree_snapshot_files_only",
    "A tree delete keeps only its files in the snapshot: rewind brings back neither its "
    "empty directories nor its symlinks.",
    ("DEL",),
    _files_only,
    "DEL-012",
)


def _move_copies() -> None:
    original = _move._move

    def move(session: Any, src: Any, dst: Any, message_id: Any, **kwargs: Any) -> MoveResult:
        data = session.workspace.fs.read_bytes(src.real)
        result: MoveResult = original(session, src, dst, message_id, **kwargs)
        with open(src.real, "wb") as stream:  # the mutant's defect: the source stays
            stream.write(data)
        return result

    _replace(_move, "_move", move)


_mutant(
    "move_keeps_source",
    "A move copies the file and leaves the source in place.",
    ("MOVE",),
    _move_copies,
    "MOVE-001",
)


def _plain_rename(workspace: Any, source: str, dest: str) -> Any:
    workspace.fs.rename(source, dest)  # the mutants' defect: rename(2) replaces dest
    return ("rename",), ()


def _move_clobbers() -> None:
    _replace(_move, "_refuse_existing", lambda workspace, dst, shown: None)
    _replace(_no_clobber, "publish_file", _plain_rename)
    _replace(_no_clobber, "publish_dir", _plain_rename)


_mutant(
    "move_clobbers",
    "A move renames over an existing destination.",
    ("MOVE",),
    _move_clobbers,
    "MOVE-002",
)


def _check_then_rename() -> None:
    _replace(_no_clobber, "publish_file", _plain_rename)
    _replace(_no_clobber, "publish_dir", _plain_rename)


_mutant(
    "move_checks_then_renames",
    "A move checks that the destination is absent, then renames onto it: a file another "
    "process creates in between is replaced.",
    ("MOVE",),
    _check_then_rename,
    "MOVE-008",
)


def _exdev_hidden() -> None:
    def move_across(workspace: Any, src: Any, dst: Any, data: bytes, mode: int) -> Any:
        with open(dst.real, "wb") as stream:  # copied, never verified, source kept
            stream.write(data)
        return (MoveStep(step="rename", outcome="done"),), []

    _replace(_move, "_move_across", move_across)


_mutant(
    "exdev_presented_as_rename",
    "Across file systems the file is copied, the source kept, and the result says one "
    "atomic rename.",
    ("MOVE",),
    _exdev_hidden,
    "MOVE-004",
)


def _move_by_copy() -> None:
    original = _move._move

    def move(session: Any, src: Any, dst: Any, message_id: Any, **kwargs: Any) -> MoveResult:
        data = kwargs.get("data")
        if data is None:
            return original(session, src, dst, message_id, **kwargs)  # type: ignore[no-any-return]
        fs = session.workspace.fs
        fd = fs.create_exclusive(dst.real, 0o644)
        try:
            half = len(data) // 2
            fs.write(fd, data[:half])
            fs.write(fd, data[half:])
        finally:
            fs.close(fd)
        fs.unlink(src.real)
        return MoveResult(
            path=src.logical_relative,
            move_to=dst.logical_relative,
            kind="file",
            atomic=True,
            steps=(MoveStep(step="rename", outcome="done"),),
            sha256=None,
            items=(),
            restore_ref=None,
            snapshot_created=False,
        )

    _replace(_move, "_move", move)


_mutant(
    "move_by_write_then_unlink",
    "A move writes the new file in place and then unlinks the old one: a crash between "
    "leaves both, or a torn new file.",
    ("MOVE",),
    _move_by_copy,
    "MOVE-006",
)
