"""Verdicts of the EDIT, PATCH, TXN, RECOV and SNAP clauses on tools built differently.

Each clause added or changed for DESIGN §7 is run through ``editspec check`` against small
implementations, broken and sound, built otherwise than the reference:

* an editor that truncates the file and writes it back in place (no stale detection) fails
  EDIT-045; one that writes a temp file and renames it passes;
* a patcher that only has ``apply_patch`` and applies a patch file by file, stopping at the
  first failing hunk, fails the all-or-nothing clauses (PATCH-034, PATCH-043); a tiny
  independent patcher that checks every hunk before writing anything passes PATCH-034;
* a driver whose session "B" raises on every call fails TXN-009;
* a reference whose last check reads only the backup's bytes (not whether the name still
  links it) loses a save by rename and fails TXN-012;
* a recovery that ignores the journal's version, and one that follows a journal path
  outside the root, fail RECOV-011 and RECOV-012 once the crafted journal is sealed, and
  pass them when it is not (what the clauses did before contract 1.3); a journal_layout
  driver without ``seal_journal`` fails both;
* the reference started in another directory fails every negative clause whose positive
  control was added.

The driver factories live in this module: the subprocess finds it on ``PYTHONPATH``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from editspec.contract.drivers.reference import CAPABILITIES, ReferenceDriver

HERE = Path(__file__).resolve().parent


class Refused(Exception):
    """A refusal with an error code of the contract."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details: dict[str, Any] = {}


class _Result:
    """A few result fields: the clauses proven here look at the disk, not at results."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


# -- editors -------------------------------------------------------------------------------


class _EditorSession:
    def __init__(self, root: Path, publish: Any) -> None:
        self._root = root
        self._publish = publish

    def edit(self, path: str, edits: Any, **_: Any) -> _Result:
        target = self._root / path
        if not target.exists():
            if len(edits) == 1 and edits[0].old_string == "":
                self._publish(target, edits[0].new_string.encode())
                return _Result(path=path)
            raise Refused("NOT_FOUND", f"{path} does not exist")
        text = target.read_bytes().decode()
        for edit in edits:
            count = text.count(edit.old_string) if edit.old_string else 0
            if count == 0:
                raise Refused("NO_MATCH", f"{edit.old_string!r} not found")
            if count > 1:
                raise Refused("AMBIGUOUS", f"{edit.old_string!r} found {count} times")
            text = text.replace(edit.old_string, edit.new_string, 1)
        self._publish(target, text.encode())
        return _Result(path=path)


def _in_place(target: Path, data: bytes) -> None:
    """Truncate, then write back in 64 KiB pieces: the file is torn until the last one."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for start in range(0, len(data), 1 << 16):
            os.write(fd, data[start : start + (1 << 16)])
    finally:
        os.close(fd)


class InPlaceEditor:
    """Edits by truncating and rewriting the file; declares no stale detection."""

    name = "in-place-editor"
    capabilities = frozenset({"edit", "python_fs"})

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = Path(root)
        self.state_dir = Path(state_dir)

    def open_session(self, session_id: str) -> _EditorSession:
        return _EditorSession(self.root, _in_place)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        pass


class AtomicEditor(InPlaceEditor):
    """Edits through a temp file in the state directory, fsynced and renamed over the file."""

    name = "atomic-editor"

    def open_session(self, session_id: str) -> _EditorSession:
        def publish(target: Path, data: bytes) -> None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            temp = self.state_dir / f"edit-{os.getpid()}-{target.name}"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, target)

        return _EditorSession(self.root, publish)


# -- patchers that only have apply_patch ----------------------------------------------------

_OPERATIONS = ("*** Add File: ", "*** Delete File: ", "*** Update File: ")


def _named_paths(patch: str) -> list[str]:
    """The existing paths a patch (Codex or unified) updates, deletes or moves."""
    named = []
    for line in patch.splitlines():
        for prefix in ("*** Delete File: ", "*** Update File: ", "--- a/"):
            if line.startswith(prefix):
                named.append(line[len(prefix) :].split("\t")[0])
        if line.startswith("--- ") and not line.startswith(("--- a/", "--- /dev/null")):
            named.append(line[4:].split("\t")[0])
    return named


class _PatchOnlySession:
    """The reference's session, reached only through apply_patch (the reads it needs are
    this driver's own business, as a tool without read-before-write has none)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _apply_whole(self, patch: str, **options: Any) -> Any:
        for path in _named_paths(patch):
            with contextlib.suppress(Exception):  # a missing file: the patch says NOT_FOUND
                self._inner.read(path)
        return self._inner.apply_patch(patch, **options)

    def apply_patch(self, patch: str, **options: Any) -> Any:
        return self._apply_whole(patch, **options)


class PatchOnlyReference(ReferenceDriver):
    """The reference, declaring only apply_patch."""

    name = "patch-only-reference"
    capabilities = frozenset({"apply_patch"})

    def open_session(self, session_id: str) -> Any:
        return _PatchOnlySession(super().open_session(session_id))


def _sections(patch: str) -> list[str]:
    """The patch split into one patch per file operation (Codex) or per file (unified)."""
    lines = patch.splitlines(keepends=True)
    if lines and lines[0].startswith("*** Begin Patch"):
        body, parts = lines[1:-1], []
        for line in body:
            if line.startswith(_OPERATIONS) or not parts:
                parts.append([])
            parts[-1].append(line)
        return ["*** Begin Patch\n" + "".join(part) + "*** End Patch\n" for part in parts]
    parts = []
    for line in lines:
        if line.startswith("--- ") or not parts:
            parts.append([])
        parts[-1].append(line)
    return ["".join(part) for part in parts]


class _OneByOneSession(_PatchOnlySession):
    def apply_patch(self, patch: str, **options: Any) -> Any:
        result = None
        for section in _sections(patch):
            result = self._apply_whole(section, **options)  # the first failure stops here
        return result


class OneByOnePatcher(PatchOnlyReference):
    """Applies a multi-file patch file by file and stops at the first failing hunk,
    leaving the files before it changed."""

    name = "one-by-one-patcher"

    def open_session(self, session_id: str) -> Any:
        return _OneByOneSession(ReferenceDriver.open_session(self, session_id))


_ASCII = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u2013": "-"})


def _loose(line: str) -> str:
    return line.strip().translate(_ASCII)


def _apply_hunk(lines: list[str], hunk: list[str], path: str, keep_context: bool) -> list[str]:
    """``hunk`` applied once: exact comparison first, then whitespace and punctuation
    tolerated; context lines keep the file's bytes only with ``keep_context``."""
    old = [line[1:] for line in hunk if line[:1] in (" ", "-")]
    if not old:
        return lines + [line[1:] for line in hunk if line[:1] == "+"]
    span = range(len(lines) - len(old) + 1)
    places = [i for i in span if lines[i : i + len(old)] == old]
    if not places:
        wanted = [_loose(line) for line in old]
        places = [i for i in span if [_loose(x) for x in lines[i : i + len(old)]] == wanted]
    if not places:
        raise Refused("NO_MATCH", f"a hunk of {path} matches nowhere")
    if len(places) > 1:
        raise Refused("AMBIGUOUS", f"a hunk of {path} matches {len(places)} times")
    at, replacement, position = places[0], [], places[0]
    for line in hunk:
        kind, text = line[:1], line[1:]
        if kind == " ":
            replacement.append(lines[position] if keep_context else text)
        elif kind == "+":
            replacement.append(text)
        position += kind in (" ", "-")
    return lines[:at] + replacement + lines[at + len(old) :]


class _TinySession:
    """An independent Codex patcher: parse, plan every file in memory, then write."""

    def __init__(self, root: Path, keep_context: bool = True) -> None:
        self._root = root
        self._keep_context = keep_context

    def _parse(self, patch: str) -> list[dict[str, Any]]:
        lines = patch.splitlines()
        if len(lines) < 2 or lines[0] != "*** Begin Patch" or lines[-1] != "*** End Patch":
            raise Refused("PATCH_SYNTAX", "not a Codex patch")
        ops: list[dict[str, Any]] = []
        for line in lines[1:-1]:
            if line.startswith(_OPERATIONS):
                kind = line.split()[1].lower()
                ops.append({"op": kind, "path": line.split(": ", 1)[1], "lines": []})
            elif not ops:
                raise Refused("PATCH_SYNTAX", f"unexpected line {line!r}")
            elif line.startswith("*** Move to: "):
                ops[-1]["move_to"] = line.split(": ", 1)[1]
            else:
                ops[-1]["lines"].append(line)
        return ops

    def apply_patch(self, patch: str, **_: Any) -> _Result:
        plan: list[tuple[str, Path, bytes | None]] = []  # every check before any write
        for op in self._parse(patch):
            target = self._root / op["path"]
            if op["op"] == "add":
                if target.exists():
                    raise Refused("ALREADY_EXISTS", f"{op['path']} exists")
                added = [line[1:] for line in op["lines"] if line.startswith("+")]
                plan.append(("write", target, "".join(f"{x}\n" for x in added).encode()))
                continue
            if not target.is_file():
                raise Refused("NOT_FOUND", f"{op['path']} does not exist")
            if op["op"] == "delete":
                plan.append(("delete", target, None))
                continue
            lines = target.read_bytes().decode().split("\n")[:-1]
            hunks: list[list[str]] = []
            for line in op["lines"]:
                if line.startswith("@@"):
                    hunks.append([])
                elif line != "*** End of File":
                    if not hunks:
                        hunks.append([])
                    hunks[-1].append(line)
            for hunk in hunks:
                lines = _apply_hunk(lines, hunk, op["path"], self._keep_context)
            data = "".join(f"{x}\n" for x in lines).encode()
            if "move_to" in op:
                destination = self._root / op["move_to"]
                if destination.exists():
                    raise Refused("ALREADY_EXISTS", f"{op['move_to']} exists")
                plan += [("write", destination, data), ("delete", target, None)]
            else:
                plan.append(("write", target, data))
        for action, target, data in plan:
            if action == "delete":
                target.unlink()
            else:
                assert data is not None
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        return _Result(changes=())


class TinyPatcher:
    """A patch-only tool written from scratch, all or nothing by planning first."""

    name = "tiny-patcher"
    capabilities = frozenset({"apply_patch"})

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = Path(root)

    def open_session(self, session_id: str) -> _TinySession:
        return _TinySession(self.root)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        pass


class TinyPatcherRewritingContext(TinyPatcher):
    """The tiny patcher writing back the patch's spelling of tolerantly matched context."""

    name = "tiny-patcher-rewriting-context"

    def open_session(self, session_id: str) -> _TinySession:
        return _TinySession(self.root, keep_context=False)


class TinyPatcherElsewhere(TinyPatcher):
    """The tiny patcher started in another directory: relative paths resolve elsewhere."""

    name = "tiny-patcher-elsewhere"

    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = Path(state_dir) / "elsewhere"
        self.root.mkdir(parents=True, exist_ok=True)


# -- hints that make a match ----------------------------------------------------------------


class _HintPullingSession:
    """The reference's session, except that an edit that matches nowhere but has an
    ``after=`` hint replaces the line before that text ("the nearest place meant")."""

    def __init__(self, inner: Any, root: Path) -> None:
        self._inner = inner
        self._root = root

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def edit(self, path: str, edits: Any, **options: Any) -> Any:
        try:
            return self._inner.edit(path, edits, **options)
        except Exception as exc:
            hinted = [e for e in edits if getattr(e, "after", None)]
            if getattr(exc, "code", None) != "NO_MATCH" or len(edits) != 1 or not hinted:
                raise
            target = self._root / path
            lines = target.read_text().split("\n")
            at = next(i for i, line in enumerate(lines) if hinted[0].after in line)
            lines[max(at - 1, 0)] = hinted[0].new_string
            target.write_text("\n".join(lines))
            return _Result(path=path)


class HintPulls(ReferenceDriver):
    name = "hint-pulls"

    def __init__(self, root: Path, state_dir: Path) -> None:
        super().__init__(root, state_dir)
        self.root = Path(root)

    def open_session(self, session_id: str) -> Any:
        return _HintPullingSession(super().open_session(session_id), self.root)


# -- moves without hunks: Codex's grammar has none ----------------------------------------


def _hunkless_moves(patch: str) -> list[tuple[str, str]]:
    """The (source, destination) of each Update section that has no hunk at all."""
    moves, lines = [], patch.splitlines()
    for at, line in enumerate(lines):
        if line.startswith("*** Update File: ") and at + 1 < len(lines):
            following = lines[at + 1]
            if following.startswith("*** Move to: ") and (
                at + 2 >= len(lines) or lines[at + 2].startswith("*** ")
            ):
                moves.append((line.split(": ", 1)[1], following.split(": ", 1)[1]))
    return moves


class _StrictCodexSession:
    """Refuses an update without hunks as Codex's parser does ("Update file hunk for path
    '...' is empty"); everything else is the reference's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def apply_patch(self, patch: str, **options: Any) -> Any:
        for source, _ in _hunkless_moves(patch):
            raise Refused("PATCH_SYNTAX", f"Update file hunk for path '{source}' is empty")
        return self._inner.apply_patch(patch, **options)


class StrictCodexGrammar(ReferenceDriver):
    """The reference, refusing what Codex's grammar refuses: a move without a hunk."""

    name = "strict-codex-grammar"

    def open_session(self, session_id: str) -> Any:
        return _StrictCodexSession(super().open_session(session_id))


class _NormalisingMoveSession(_StrictCodexSession):
    def __init__(self, inner: Any, root: Path) -> None:
        super().__init__(inner)
        self._root = root

    def apply_patch(self, patch: str, **options: Any) -> Any:
        result = self._inner.apply_patch(patch, **options)
        for _, destination in _hunkless_moves(patch):
            target = self._root / destination
            target.write_bytes(target.read_bytes().replace(b"\r\n", b"\n"))
        return result


class PureMoveNormalises(ReferenceDriver):
    """Accepts a move without hunks, but writes the moved file back with LF line ends."""

    name = "pure-move-normalises"

    def __init__(self, root: Path, state_dir: Path) -> None:
        super().__init__(root, state_dir)
        self.root = Path(root)

    def open_session(self, session_id: str) -> Any:
        return _NormalisingMoveSession(super().open_session(session_id), self.root)


# -- sessions that die, started the wrong way ----------------------------------------------


class _DeadSession:
    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"session B crashed ({name})")

        return call


class SessionBDies(ReferenceDriver):
    """The reference, except that session "B" raises on every call."""

    name = "session-b-dies"

    def open_session(self, session_id: str) -> Any:
        if session_id == "B":
            return _DeadSession()
        return super().open_session(session_id)


class WrongRoot(ReferenceDriver):
    """The reference started in another directory: relative paths resolve elsewhere."""

    name = "wrong-root"

    def __init__(self, root: Path, state_dir: Path) -> None:
        elsewhere = Path(state_dir) / "elsewhere"
        elsewhere.mkdir(parents=True, exist_ok=True)
        super().__init__(elsewhere, Path(state_dir) / "state")


# -- mutants of the reference's transaction and recovery ------------------------------------


def _backup_bytes_only() -> None:
    """The last check before publishing reads the backup's bytes only (as before TXN-012)."""
    from editspec.reference.transactions import _transaction

    _transaction.as_planned = lambda fs, step: fs.read_bytes(step.backup) == step.old_bytes


def _ignore_version() -> None:
    """Recovery takes a journal of any version (its checksum still checked)."""
    from editspec.reference.transactions import _journal

    original = _journal._decode
    if getattr(original, "mutant", False):
        return

    def decode(data: bytes, *, root: str, txn_id: str | None) -> Any:
        try:
            body = json.loads(data.decode("ascii"))
        except ValueError:
            return original(data, root=root, txn_id=txn_id)
        if isinstance(body, dict) and "version" in body:
            checksum = body.pop("checksum", None)
            if checksum == hashlib.sha256(_journal._canonical(body)).hexdigest():
                body["version"] = _journal.VERSION
                data = _journal.seal(json.dumps(body).encode())
        return original(data, root=root, txn_id=txn_id)

    decode.mutant = True  # type: ignore[attr-defined]
    _journal._decode = decode


def _follow_outside() -> None:
    """Recovery takes any non-empty journal path, '..' and absolute ones included."""
    from editspec.reference.transactions import _journal

    original = _journal.check_relative
    _journal.check_relative = lambda path: (
        path if isinstance(path, str) and path else original(path)
    )


class BackupBytesOnly(ReferenceDriver):
    name = "backup-bytes-only"

    def __init__(self, root: Path, state_dir: Path) -> None:
        _backup_bytes_only()
        super().__init__(root, state_dir)


class IgnoresVersion(ReferenceDriver):
    name = "ignores-version"

    def __init__(self, root: Path, state_dir: Path) -> None:
        _ignore_version()
        super().__init__(root, state_dir)


class FollowsOutside(ReferenceDriver):
    name = "follows-outside"

    def __init__(self, root: Path, state_dir: Path) -> None:
        _follow_outside()
        super().__init__(root, state_dir)


class IgnoresVersionUnsealed(IgnoresVersion):
    """The same mutant, its seal a no-op: the crafted journal fails its checksum."""

    def seal_journal(self, data: bytes) -> bytes:
        return data


class FollowsOutsideUnsealed(FollowsOutside):
    def seal_journal(self, data: bytes) -> bytes:
        return data


class NoSealJournal(ReferenceDriver):
    """Declares journal_layout but has no seal_journal hook."""

    name = "no-seal-journal"
    seal_journal = None


assert "journal_layout" in CAPABILITIES


# -- running the clauses --------------------------------------------------------------------


def check(tmp_path: Path, selection: str, *target: str, parallel: bool = False) -> dict[str, Any]:
    """``editspec check -k selection`` against ``target``; the JSON report's records by id."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *(p for p in sys.path if p)])
    report = tmp_path / f"report-{len(list(tmp_path.glob('report-*.json')))}.json"
    words = [sys.executable, "-m", "editspec.spec.cli", "check", *target, "-k", selection]
    words += ["--report", str(report)] + (["-n", "2"] if parallel else [])
    done = subprocess.run(
        words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    records = json.loads(report.read_text())["clauses"]
    return {record["id"]: record for record in records}


def outcomes(records: dict[str, Any]) -> dict[str, str]:
    return {clause: record["outcome"] for clause, record in records.items()}


def driver(name: str) -> tuple[str, str]:
    return ("--driver", f"test_verdicts_b:{name}")


CHANGED = (
    "EDIT-026",
    "EDIT-045",
    "PATCH-034",
    "PATCH-037",
    "PATCH-043",
    "PATCH-047",
    "TXN-009",
    "TXN-012",
    "RECOV-011",
    "RECOV-012",
)


def test_the_reference_passes_every_changed_clause(tmp_path: Path) -> None:
    records = check(tmp_path, " or ".join(CHANGED), parallel=True)
    assert outcomes(records) == dict.fromkeys(CHANGED, "PASS")


def test_an_in_place_editor_fails_edit_045_and_an_atomic_one_passes(tmp_path: Path) -> None:
    torn = check(tmp_path, "EDIT-045", *driver("InPlaceEditor"))
    assert outcomes(torn) == {"EDIT-045": "FAIL"}
    assert torn["EDIT-045"]["kind"] == "unsafe"
    assert "torn file after a crash" in torn["EDIT-045"]["message"]
    assert outcomes(check(tmp_path, "EDIT-045", *driver("AtomicEditor"))) == {"EDIT-045": "PASS"}


def test_edit_026_fails_an_after_hint_that_makes_a_match(tmp_path: Path) -> None:
    records = check(tmp_path, "EDIT-026", *driver("HintPulls"))
    assert outcomes(records) == {"EDIT-026": "FAIL"}
    assert records["EDIT-026"]["kind"] == "unsafe"  # the call succeeded: the file changed


def test_a_file_by_file_patcher_fails_the_all_or_nothing_clauses(tmp_path: Path) -> None:
    selection = "PATCH-034 or PATCH-043"
    partial = check(tmp_path, selection, *driver("OneByOnePatcher"))
    assert outcomes(partial) == {"PATCH-034": "FAIL", "PATCH-043": "FAIL"}
    assert {record["kind"] for record in partial.values()} == {"unsafe"}
    sound = check(tmp_path, selection, *driver("PatchOnlyReference"))
    assert outcomes(sound) == {"PATCH-034": "PASS", "PATCH-043": "PASS"}


def test_a_tiny_patcher_that_plans_first_passes_patch_034(tmp_path: Path) -> None:
    assert outcomes(check(tmp_path, "PATCH-034", *driver("TinyPatcher"))) == {"PATCH-034": "PASS"}
    wrong = check(tmp_path, "PATCH-034", *driver("TinyPatcherElsewhere"))
    assert outcomes(wrong) == {"PATCH-034": "FAIL"}  # its positive control fails


def test_patch_047_fails_a_patcher_that_rewrites_tolerant_context(tmp_path: Path) -> None:
    rewriting = check(tmp_path, "PATCH-047", *driver("TinyPatcherRewritingContext"))
    assert outcomes(rewriting) == {"PATCH-047": "FAIL"}
    assert rewriting["PATCH-047"]["kind"] == "unsafe"
    assert outcomes(check(tmp_path, "PATCH-047", *driver("TinyPatcher"))) == {"PATCH-047": "PASS"}


def test_txn_009_fails_when_a_session_dies(tmp_path: Path) -> None:
    records = check(tmp_path, "TXN-009", *driver("SessionBDies"))
    assert outcomes(records) == {"TXN-009": "FAIL"}
    assert "session B crashed" in records["TXN-009"]["message"]


def test_txn_012_fails_a_last_check_that_reads_only_the_backup(tmp_path: Path) -> None:
    records = check(tmp_path, "TXN-012", *driver("BackupBytesOnly"))
    assert outcomes(records) == {"TXN-012": "FAIL"}
    assert "was not caught" in records["TXN-012"]["message"]


@pytest.mark.parametrize(
    ("mutant", "clause"),
    [("IgnoresVersion", "RECOV-011"), ("FollowsOutside", "RECOV-012")],
)
def test_journal_mutants_fail_only_once_the_journal_is_sealed(
    tmp_path: Path, mutant: str, clause: str
) -> None:
    assert outcomes(check(tmp_path, clause, *driver(mutant))) == {clause: "FAIL"}
    # Not re-sealed, the crafted journal is refused by its checksum: the mutant passes.
    assert outcomes(check(tmp_path, clause, *driver(f"{mutant}Unsealed"))) == {clause: "PASS"}


def test_a_journal_layout_driver_without_the_seal_hook_fails(tmp_path: Path) -> None:
    records = check(tmp_path, "RECOV-011 or RECOV-012", *driver("NoSealJournal"))
    assert outcomes(records) == {"RECOV-011": "FAIL", "RECOV-012": "FAIL"}
    for record in records.values():
        assert record["kind"] == "missing-field"
        assert "seal_journal" in record["message"]


# The negative clauses that gained a positive control: the reference started in another
# directory refuses their calls for the wrong reason, and must fail every one of them.
CONTROLLED = [
    *(f"EDIT-{n:03}" for n in (3, 5, 6, 9, 11, 15, 16, 23, 26, 31, 32, 37, 39, 42)),
    *(f"PATCH-{n:03}" for n in (9, 17, 18, *range(22, 35), 37, 43)),
    *(f"SNAP-{n:03}" for n in (10, 11, 13, 14)),
]


def test_the_reference_started_elsewhere_fails_every_controlled_clause(tmp_path: Path) -> None:
    records = check(tmp_path, " or ".join(CONTROLLED), *driver("WrongRoot"), parallel=True)
    assert set(records) == set(CONTROLLED)
    assert {c: o for c, o in outcomes(records).items() if o != "FAIL"} == {}


MOVING = (
    "PATCH-006",
    "PATCH-007",
    "PATCH-026",
    "PATCH-027",
    "PATCH-028",
    "PATCH-030",
    "PATCH-032",
    "PATCH-033",
    "PATCH-034",
    "PATCH-036",
    "SNAP-009",
)


def test_a_tool_that_follows_codex_grammar_on_moves_is_not_failed(tmp_path: Path) -> None:
    """Codex's parser refuses an update without hunks; the clauses about moves check such a
    move only where the tool accepts one (PATCH-006 is about nothing else: UNSUPPORTED)."""
    strict = check(tmp_path, " or ".join(MOVING), *driver("StrictCodexGrammar"), parallel=True)
    assert outcomes(strict) == {**dict.fromkeys(MOVING, "PASS"), "PATCH-006": "UNSUPPORTED"}
    assert "without hunks" in strict["PATCH-006"]["message"]
    reference = check(tmp_path, " or ".join(MOVING), parallel=True)
    assert outcomes(reference) == dict.fromkeys(MOVING, "PASS")


def test_a_pure_move_that_rewrites_line_ends_fails(tmp_path: Path) -> None:
    records = check(tmp_path, "PATCH-006 or PATCH-007", *driver("PureMoveNormalises"))
    assert outcomes(records) == {"PATCH-006": "FAIL", "PATCH-007": "PASS"}
