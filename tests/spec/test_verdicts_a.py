"""Verdicts of the PATH, READ, WRITE, TRACK, LOCK and LIMIT clauses on tools built differently.

Each test runs a few clauses through ``editspec check`` against a small driver defined
here (the factories at the top of this module, named on the command line as
``test_verdicts_a:<factory>``) and asserts the JSON report's outcome and FAIL kind: the
clause fails a broken tool for the right reason, and passes one that is built differently
but correct. "Started the wrong way" drivers (relative paths resolved in another
directory, a session that refuses every call) must fail the negative clauses through
their positive controls instead of passing them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from editspec.contract.drivers.reference import CAPABILITIES, ReferenceDriver
from editspec.reference import ToolError, Workspace
from editspec.reference._fs import FileSystem

HERE = Path(__file__).resolve().parent
PATH_OPERATIONS = ("read", "write", "edit")


# -- drivers ----------------------------------------------------------------------------


class _Session:
    """Delegates to a reference session; subclasses change what they must."""

    def __init__(self, inner: Any, driver: _Driver) -> None:
        self._inner = inner
        self._driver = driver

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Driver:
    """A reference driver behind a session wrapper, with its own capability list."""

    name = "verdict-driver"
    session_class: type[_Session] = _Session
    capabilities: frozenset[str] = CAPABILITIES

    def __init__(self, root: Path, state_dir: Path, inner: ReferenceDriver | None = None) -> None:
        self.root = Path(root)
        self.inner = inner if inner is not None else ReferenceDriver(root, state_dir)

    def open_session(self, session_id: str) -> _Session:
        return self.session_class(self.inner.open_session(session_id), self)

    def recover(self) -> Any:
        return self.inner.recover()

    def close(self) -> None:
        self.inner.close()


class _NoSecureWalk(ReferenceDriver):
    """The reference with its dir_fd/O_NOFOLLOW walk switched off (paths used as strings)."""

    name = "no-secure-walk"

    def __init__(self, root: Path, state_dir: Path) -> None:
        super().__init__(root, state_dir)
        self.workspace.close()
        self.workspace = Workspace(root, state_dir, fs=FileSystem(secure_walk=False))


def no_secure_walk(root: Path, state_dir: Path) -> _NoSecureWalk:
    return _NoSecureWalk(root, state_dir)


class _ElsewhereSession(_Session):
    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        if name not in PATH_OPERATIONS:
            return method
        elsewhere = self._driver.elsewhere  # type: ignore[attr-defined]

        def call(path: str, *args: Any, **kwargs: Any) -> Any:
            if not os.path.isabs(path):
                path = os.path.join(elsewhere, path)
            return method(path, *args, **kwargs)

        return call


class _ElsewhereDriver(_Driver):
    """A server started in the wrong working directory: relative paths resolve there."""

    name = "wrong-directory"
    session_class = _ElsewhereSession

    def __init__(self, root: Path, state_dir: Path) -> None:
        super().__init__(root, state_dir)
        self.elsewhere = tempfile.mkdtemp(prefix="editspec-elsewhere-")

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.elsewhere, ignore_errors=True)


def wrong_directory(root: Path, state_dir: Path) -> _ElsewhereDriver:
    return _ElsewhereDriver(root, state_dir)


class _RefusingSession:
    """A session that answers every call with one error code (a dead or unmapped tool)."""

    code = "OUTSIDE_WORKSPACE"

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise ToolError(self.code, f"{name} is not available")

        return refuse


def _refusing(code: str) -> Any:
    session_type = type(f"Refusing{code.title()}", (_RefusingSession,), {"code": code})

    class Refusing(_Driver):
        name = f"refuses-{code}"

        def open_session(self, session_id: str) -> Any:
            return session_type()

    def factory(root: Path, state_dir: Path) -> Refusing:
        return Refusing(root, state_dir)

    return factory


refuse_outside = _refusing("OUTSIDE_WORKSPACE")
refuse_not_found = _refusing("NOT_FOUND")
refuse_not_read = _refusing("NOT_READ")
refuse_stale = _refusing("STALE")
refuse_too_large = _refusing("TOO_LARGE")
refuse_invalid = _refusing("INVALID_ARGUMENT")
refuse_is_a_directory = _refusing("IS_A_DIRECTORY")


def _symlink_in(root: Path, path: str) -> Path | None:
    """The first symlink among the components of ``path`` under ``root`` (None if none)."""
    current = root
    for part in Path(path).parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


class _StrictSession(_Session):
    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        if name not in PATH_OPERATIONS:
            return method
        root = self._driver.root

        def call(path: str, *args: Any, **kwargs: Any) -> Any:
            link = None if os.path.isabs(path) else _symlink_in(root, path)
            if link is not None:
                if not link.exists():
                    raise ToolError("NOT_FOUND", f"{path}: dangling symlink")
                raise ToolError("INVALID_ARGUMENT", f"{path}: symlinks are not supported")
            return method(path, *args, **kwargs)

        return call


class _StrictDriver(_Driver):
    """Safe but blunt: refuses every symlinked path, with NOT_FOUND or INVALID_ARGUMENT."""

    name = "refuses-symlinks"
    session_class = _StrictSession


def refuses_symlinks(root: Path, state_dir: Path) -> _StrictDriver:
    return _StrictDriver(root, state_dir)


def _naive_result(path: str, data: bytes) -> SimpleNamespace:
    return SimpleNamespace(
        path=path, content=data.decode("utf-8", errors="replace"), operation="replace"
    )


class _FollowingSession(_Session):
    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        if name not in PATH_OPERATIONS:
            return method
        root = os.path.realpath(self._driver.root)

        def call(path: str, *args: Any, **kwargs: Any) -> Any:
            real = os.path.realpath(os.path.join(root, path))
            if real == root or real.startswith(root + os.sep):
                return method(path, *args, **kwargs)
            # The escape: the resolved target is used as it is, wherever it lies.
            if name == "read":
                with open(real, "rb") as handle:
                    return _naive_result(path, handle.read())
            os.makedirs(os.path.dirname(real), exist_ok=True)
            if name == "write":
                content = args[0] if args else kwargs["content"]
                data = content.encode() if isinstance(content, str) else content
            else:
                with open(real, "rb") as handle:
                    data = handle.read()
                for edit in args[0] if args else kwargs["edits"]:
                    data = data.replace(edit.old_string.encode(), edit.new_string.encode(), 1)
            with open(real, "wb") as handle:
                handle.write(data)
            return _naive_result(path, data)

        return call


class _FollowingDriver(_Driver):
    """Confines the path string, then follows symlinks wherever they lead."""

    name = "follows-symlinks"
    session_class = _FollowingSession


def follows_symlinks(root: Path, state_dir: Path) -> _FollowingDriver:
    return _FollowingDriver(root, state_dir)


class _LinkReplacingSession(_Session):
    def write(self, path: str, *args: Any, **kwargs: Any) -> Any:
        link = self._driver.root / path
        if not os.path.isabs(path) and link.is_symlink():
            link.unlink()  # the link is replaced by a regular file inside the root
        return self._inner.write(path, *args, **kwargs)


class _LinkReplacingDriver(_Driver):
    """Never writes through a final symlink: it replaces the link by a new file instead."""

    name = "replaces-links"
    session_class = _LinkReplacingSession


def replaces_links(root: Path, state_dir: Path) -> _LinkReplacingDriver:
    return _LinkReplacingDriver(root, state_dir)


class _RefreshingSession(_Session):
    """Reads the file itself before each change: a change is never stale, old text NO_MATCH."""

    def _refresh(self, path: str) -> None:
        with contextlib.suppress(ToolError):
            self._inner.read(path, max_bytes=64 << 20)

    def edit(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self._refresh(path)
        return self._inner.edit(path, *args, **kwargs)

    def write(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self._refresh(path)
        return self._inner.write(path, *args, **kwargs)


class _NoStaleDriver(_Driver):
    """A tool without read tracking or stale detection (it declares neither)."""

    name = "no-stale-detection"
    session_class = _RefreshingSession
    capabilities = CAPABILITIES - {"read_before_write", "stale_detection", "cas"}


def no_stale_detection(root: Path, state_dir: Path) -> _NoStaleDriver:
    return _NoStaleDriver(root, state_dir)


class _LeakySession(_Session):
    """Each edit holds a per-file lock of the driver; a failed edit never releases it."""

    def edit(self, path: str, *args: Any, **kwargs: Any) -> Any:
        lock = self._driver.lock_for(path)  # type: ignore[attr-defined]
        if not lock.acquire(timeout=2):
            raise ToolError("CONFLICT", f"{path} is locked by another operation")
        result = self._inner.edit(path, *args, **kwargs)  # an error leaves the lock held
        lock.release()
        return result


class _LeakyDriver(_Driver):
    name = "leaks-locks"
    session_class = _LeakySession

    def __init__(self, root: Path, state_dir: Path) -> None:
        super().__init__(root, state_dir)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock_for(self, path: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(os.path.normpath(path), threading.Lock())


def leaks_locks(root: Path, state_dir: Path) -> _LeakyDriver:
    return _LeakyDriver(root, state_dir)


HUGE_READ = 16 << 20


class _ModestSession(_Session):
    largest = HUGE_READ

    def read(self, path: str, *args: Any, **kwargs: Any) -> Any:
        max_bytes = kwargs.get("max_bytes")
        if max_bytes is not None and max_bytes > self.largest:
            raise ToolError("INVALID_ARGUMENT", f"max_bytes above {self.largest} is refused")
        return self._inner.read(path, *args, **kwargs)


class _ModestDriver(_Driver):
    """The reference, except that a read with max_bytes above 16 MiB is refused."""

    name = "refuses-huge-max-bytes"
    session_class = _ModestSession


def refuses_huge_max_bytes(root: Path, state_dir: Path) -> _ModestDriver:
    return _ModestDriver(root, state_dir)


class _TwoMibSession(_ModestSession):
    largest = 2 << 20


class _TwoMibDriver(_Driver):
    """Reads at most 2 MiB at once (LIMIT-003's bound), refusing any larger max_bytes."""

    name = "reads-at-most-2-mib"
    session_class = _TwoMibSession


def reads_at_most_2_mib(root: Path, state_dir: Path) -> _TwoMibDriver:
    return _TwoMibDriver(root, state_dir)


# -- running clauses --------------------------------------------------------------------


def check(tmp_path: Path, clauses: list[str], driver: str | None) -> dict[str, dict[str, Any]]:
    """Run ``clauses`` against ``driver`` (None: the reference); the report's records."""
    report = tmp_path / f"{(driver or 'reference').replace(':', '-')}.json"
    command = [sys.executable, "-m", "editspec.spec.cli", "check", "-k", " or ".join(clauses)]
    command += ["--report", str(report)]
    if driver is not None:
        command += ["--driver", driver]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *(p for p in sys.path if p)])
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    records = {r["id"]: r for r in json.loads(report.read_text())["clauses"]}
    assert set(records) == set(clauses), (sorted(records), done.stdout[-3000:])
    return records


def verdicts(records: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str | None]]:
    return {cid: (r["outcome"], r.get("kind")) for cid, r in records.items()}


def _all(records: dict[str, dict[str, Any]], outcome: str, kind: str | None = None) -> None:
    wrong = {
        cid: (r["outcome"], r.get("kind"), r["message"][:300])
        for cid, r in records.items()
        if r["outcome"] != outcome or (kind is not None and r.get("kind") != kind)
    }
    assert not wrong, wrong


# -- PATH-029: the TOCTOU defence itself, not the stale check ---------------------------


def test_directory_swap_needs_the_secure_walk(tmp_path):
    _all(check(tmp_path, ["PATH-029"], None), "PASS")
    records = check(tmp_path, ["PATH-029"], "test_verdicts_a:no_secure_walk")
    _all(records, "FAIL", "unsafe")
    assert "swap before mutating call" in records["PATH-029"]["message"]


# -- positive controls: tools started the wrong way fail the negative clauses -----------

RELATIVE_ESCAPES = [
    "PATH-003", "PATH-004", "PATH-005", "PATH-008", "PATH-009", "PATH-010", "PATH-011",
    "PATH-012", "PATH-013", "PATH-014", "PATH-015", "PATH-016", "PATH-017", "PATH-031",
]  # fmt: skip


def test_a_server_in_the_wrong_directory_fails_the_escape_clauses(tmp_path):
    """Relative paths resolved elsewhere are refused OUTSIDE_WORKSPACE: the right code for
    the wrong reason. The controls (inside files through the same shapes) catch it."""
    records = check(tmp_path, RELATIVE_ESCAPES, "test_verdicts_a:wrong_directory")
    _all(records, "FAIL", "wrong-code")
    for record in records.values():
        assert "OUTSIDE_WORKSPACE" in record["message"], record


def test_the_reference_passes_the_escape_clauses(tmp_path):
    _all(check(tmp_path, [*RELATIVE_ESCAPES, "PATH-006", "PATH-007"], None), "PASS")


REFUSALS = {
    "refuse_outside": [*RELATIVE_ESCAPES, "PATH-006", "PATH-007", "PATH-025"],
    "refuse_invalid": ["PATH-018", "PATH-019", "READ-023"],
    "refuse_not_found": ["READ-019", "WRITE-019"],
    "refuse_is_a_directory": ["READ-020", "WRITE-013"],
    "refuse_not_read": [
        "PATH-024", "WRITE-005", "WRITE-006", "TRACK-003", "TRACK-010", "TRACK-011",
        "TRACK-012", "TRACK-015", "TRACK-021", "LOCK-006",
    ],
    "refuse_stale": [
        "WRITE-007", "WRITE-009", "TRACK-001", "TRACK-008", "TRACK-009", "TRACK-016",
        "TRACK-017", "TRACK-018", "LOCK-002", "LOCK-009",
    ],
    "refuse_too_large": [
        "LIMIT-004", "LIMIT-006", "LIMIT-007", "LIMIT-009", "LIMIT-010", "LIMIT-011",
        "LIMIT-012",
    ],
}  # fmt: skip


@pytest.mark.parametrize("factory", sorted(REFUSALS))
def test_a_session_that_refuses_everything_fails_every_negative_clause(tmp_path, factory):
    """A session answering each call with the very code a clause expects cannot pass it."""
    _all(check(tmp_path, REFUSALS[factory], f"test_verdicts_a:{factory}"), "FAIL")


# -- PATH-009..017: a safe refusal is wrong-code, only an escape is unsafe --------------

SYMLINK_ESCAPES = [
    "PATH-009", "PATH-010", "PATH-011", "PATH-012", "PATH-013", "PATH-014", "PATH-015",
    "PATH-016", "PATH-017",
]  # fmt: skip


def test_a_safe_refusal_with_another_code_is_wrong_code(tmp_path):
    records = check(tmp_path, SYMLINK_ESCAPES, "test_verdicts_a:refuses_symlinks")
    _all(records, "FAIL", "wrong-code")
    assert "got NOT_FOUND" in records["PATH-014"]["message"]
    assert "got NOT_FOUND" in records["PATH-015"]["message"]
    assert "got INVALID_ARGUMENT" in records["PATH-012"]["message"]


def test_following_a_link_outside_is_unsafe(tmp_path):
    records = check(tmp_path, SYMLINK_ESCAPES, "test_verdicts_a:follows_symlinks")
    _all(records, "FAIL", "unsafe")
    for cid in ("PATH-014", "PATH-015", "PATH-016"):
        assert "outside the root" in records[cid]["message"], records[cid]


def test_a_write_that_stays_inside_is_wrong_behaviour_not_unsafe(tmp_path):
    """Replacing the link by a file breaks the clause but reaches nothing outside."""
    records = check(tmp_path, ["PATH-010", "PATH-014"], "test_verdicts_a:replaces_links")
    _all(records, "FAIL", "wrong-behaviour")
    for record in records.values():
        assert "nothing outside the root changed" in record["message"], record


# -- LOCK-008/009: a tool without stale detection is judged on lock release only -------


def test_lock_release_without_stale_detection(tmp_path):
    assert verdicts(check(tmp_path, ["LOCK-008", "LOCK-009"], None)) == {
        "LOCK-008": ("PASS", None),
        "LOCK-009": ("PASS", None),
    }
    records = check(tmp_path, ["LOCK-008", "LOCK-009"], "test_verdicts_a:no_stale_detection")
    assert verdicts(records) == {"LOCK-008": ("PASS", None), "LOCK-009": ("UNSUPPORTED", None)}


def test_a_leaked_lock_fails_the_lock_release_clauses(tmp_path):
    records = check(tmp_path, ["LOCK-008", "LOCK-009"], "test_verdicts_a:leaks_locks")
    _all(records, "FAIL", "wrong-code")
    for record in records.values():
        assert "CONFLICT" in record["message"], record


# -- setup reads never pass a max_bytes a tool may refuse -------------------------------

SETUP_READERS = [
    "WRITE-012", "WRITE-021", "WRITE-022", "WRITE-023", "LOCK-001", "LOCK-002", "LOCK-003",
    "LOCK-004", "LOCK-005", "LOCK-007", "LIMIT-004", "LIMIT-005", "LIMIT-011", "LIMIT-012",
]  # fmt: skip


@pytest.mark.slow
def test_a_driver_refusing_huge_max_bytes_passes_unrelated_clauses(tmp_path):
    _all(check(tmp_path, SETUP_READERS, "test_verdicts_a:refuses_huge_max_bytes"), "PASS")


def test_a_driver_reading_at_most_2_mib_is_judged_on_its_limits(tmp_path):
    """Files beyond the limits may be refused a whole read; the change is still TOO_LARGE."""
    clauses = ["WRITE-012", "LIMIT-003", "LIMIT-004", "LIMIT-005", "LIMIT-011", "LIMIT-012"]
    _all(check(tmp_path, clauses, "test_verdicts_a:reads_at_most_2_mib"), "PASS")
