"""Scenarios: a workspace, a list of operations and a fault, as data that can be re-run.

A ``Scenario`` is what a failure found by the state machines or the explorer is saved
as (JSON, ``FORMAT``): the initial tree of the workspace root, the steps (each a plain
dict such as ``{"call": "write", "session": "s1", "path": "a.txt", "content": "x"}``,
optionally with the trees the model accepts after it, ``"expect"``, or, keyed by the
answer the step gives, ``"expect_if"``: ``{"ok": [after], "IO_ERROR": [before]}``), the
fault and the step it hits, the trees expected and found, the problems seen, and the
versions of editspec and Python that produced it.

Calls: ``read``, ``write``, ``edit``, ``apply_patch``, ``rewind`` (a session's), and
``recover`` (the workspace's); outside the engine, ``external_write`` (optionally keeping
size and mtime, the change stale detection must still see), ``external_delete``,
``symlink``, ``hardlink`` and ``mkdir``, done with ``os`` directly as another program
would. ``perform`` runs one step and returns its ``Outcome``.

Faults (``fault``): ``{"kind": "crash", "step": i, "at": k}``,
``{"kind": "fail", "step": i, "at": k, "errno": "ENOSPC"}``,
``{"kind": "power_loss", "step": i, "model": "ordered", "point": p, "lost": [...],
"cut": [[creator, kept], ...]}`` (optionally with ``"fail_at": k, "errno": "EIO"``: an
injected error during the step, before the cut, and ``"fail_again_at": [k2, ...]``, more
of them; ``"crash_at": c``: the step's process is killed at its call c, and
``"recoveries": [{}, {"fail_at": j, "errno": "EIO"}, ...]``, fresh workspaces that
recover before the cut, over the same page cache, their calls in the trace (one by
default after a kill; listed without a kill, they follow the step's answer);
``"point": "end"`` and ``"lost": "unsynced"`` name the harshest cut after the step
without trace positions, ``"point": {"before_last": name, "path_suffix": s}`` the cut
right before the last such call) and
``{"kind": "recovery_crash", "step": i, "at": k, "recovery_at": j}``. After a faulted
step the process "restarts": a fresh ``Workspace`` is opened (its constructor recovers)
before the next step.

A scenario may name a server process instead (``"server": {"command": [...], "map":
"FILE.toml"}``, ``{python}`` standing for the running interpreter): its steps are sent
over MCP, and a ``power_loss`` fault is rebuilt from a fresh strace trace of the last
step (``editspec.fault_injection.process_power``).

A scenario may name a Python driver (``"driver": "module:factory"``, a ``DriverFactory``
of an implementation that declares ``python_fs``): its steps then run through that
driver's contract, and its faults count the driver's mutating ``os`` calls instead of
the reference's port operations (``editspec.fault_injection.driver_runner``).

Several processes (``FORMAT_PROCESSES``): a scenario with ``phases`` instead of
``steps``. Each ``Phase`` names a process and the steps it runs, in order; a process is
opened (a fresh ``Workspace`` over the same root and state directory, its constructor
recovering) where it is first named, optionally with ``"open_fault": {"kind": "crash",
"at": m}`` (its recovery dies at its m-th counted operation). A ``crash`` fault kills the
process for good: nothing restarts it, and later phases are other processes. A step with
``"pause_after": n`` stops after its n-th port call (queries included, counted from the
start of the step) while the phases after it run; the phase ``{"process": P, "resume":
true}`` lets it finish. A process still paused when the phases end is killed where it
waits. Then a fresh workspace recovers, and the disk must be one of ``expected`` with
no journal left. A step's ``"expect"`` is compared with the disk right after the step,
with no recovery in between. Crashes and errors are per process; ``power_loss`` and
``recovery_crash`` faults belong to single-process scenarios. A scenario without phases
is written as ``FORMAT``, exactly as before.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from editspec.fault_injection import trees
from editspec.reference import EditSpec

FORMAT = "editspec-scenario/1"
FORMAT_PROCESSES = "editspec-scenario/2"  # with phases: several processes, one after another
SESSION = "s1"

#: Fault kinds a step of a phase may carry (the others need the single-process restart).
PHASE_FAULTS = frozenset({"crash", "fail"})


def versions() -> dict[str, str]:

    try:
        editspec_version = metadata.version("editspec")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        editspec_version = "unknown"
    return {"editspec": editspec_version, "python": platform.python_version()}


@attrs.frozen(kw_only=True)
class Phase:
    """What one process does next in a scenario of several processes (see the module)."""

    process: str
    steps: tuple[Mapping[str, Any], ...] = ()
    resume: bool = False  # first, the step this process paused in goes on
    open_fault: Mapping[str, Any] | None = None  # a crash of the recovery that opens it
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"process": self.process}
        if self.description:
            out["description"] = self.description
        if self.resume:
            out["resume"] = True
        if self.open_fault is not None:
            out["open_fault"] = dict(self.open_fault)
        out["steps"] = [_step_to_json(step) for step in self.steps]
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Phase:
        open_fault = value.get("open_fault")
        return cls(
            process=str(value["process"]),
            steps=tuple(_step_from_json(step) for step in value.get("steps", ())),
            resume=bool(value.get("resume", False)),
            open_fault=None if open_fault is None else dict(open_fault),
            description=value.get("description", ""),
        )


def validate_phases(phases: Sequence[Phase]) -> None:
    """Raise ``ValueError`` if ``phases`` cannot be run in order (see the module)."""
    dead: set[str] = set()
    paused: dict[str, bool] = {}  # process -> its paused step carries a crash
    opened: set[str] = set()
    for number, phase in enumerate(phases, 1):
        name = phase.process
        where = f"phase {number} (process {name})"
        if not name:
            raise ValueError(f"phase {number} names no process")
        if name in dead:
            raise ValueError(f"{where}: the process is dead")
        if phase.resume != (name in paused):
            raise ValueError(
                f"{where}: " + ("nothing to resume" if phase.resume else "the process is paused")
            )
        if phase.open_fault is not None:
            if name in opened:
                raise ValueError(f"{where}: an open_fault on a process already open")
            if phase.open_fault.get("kind") != "crash":
                raise ValueError(f"{where}: an open_fault is a crash")
            if phase.steps:
                raise ValueError(f"{where}: steps after a crash at open")
        if paused.pop(name, False):
            dead.add(name)  # the crash comes once the step goes on
            if phase.steps:
                raise ValueError(f"{where}: steps after a crash")
        opened.add(name)
        if phase.open_fault is not None:
            dead.add(name)
            continue
        for index, step in enumerate(phase.steps):
            last = index == len(phase.steps) - 1
            fault = step.get("fault")
            if fault is not None and fault.get("kind") not in PHASE_FAULTS:
                raise ValueError(
                    f"{where}: a {fault.get('kind')!r} fault needs a single-process scenario"
                )
            if "pause_after" in step:
                if not last:
                    raise ValueError(f"{where}: a paused step must end its phase")
                if int(step["pause_after"]) < 1:
                    raise ValueError(f"{where}: pause_after counts port calls from 1")
                paused[name] = fault is not None and fault.get("kind") == "crash"
            elif fault is not None and fault.get("kind") == "crash":
                if not last:
                    raise ValueError(f"{where}: steps after a crash")
                dead.add(name)


@attrs.frozen(kw_only=True)
class Scenario:
    """A re-runnable failure (or a standard exploration scenario)."""

    name: str
    initial: trees.Tree = attrs.field(factory=dict)
    steps: tuple[Mapping[str, Any], ...] = ()
    fault: Mapping[str, Any] | None = None
    count: str = "mutating"
    expected: tuple[trees.Tree, ...] = ()
    actual: trees.Tree | None = None
    problems: tuple[str, ...] = ()
    trace: tuple[str, ...] = ()  # the port operations of the faulted step, in a clean run
    description: str = ""
    versions: Mapping[str, str] = attrs.field(factory=versions)
    phases: tuple[Phase, ...] = ()  # several processes (then ``steps`` is empty)
    driver: str = ""  # "module:factory" of a python_fs driver; empty: the reference's port
    # A server process (``process_power``): {"command": [...], "map": "path.toml"}; its
    # steps run over MCP and a power cut is rebuilt from a fresh strace trace.
    server: Mapping[str, Any] | None = None

    def __attrs_post_init__(self) -> None:
        if self.server is not None and (self.driver or self.phases):
            raise ValueError("a server scenario names no Python driver and has no phases")
        if self.driver and self.phases:
            raise ValueError("a scenario of several processes runs the reference engine only")
        if self.phases:
            if self.steps:
                raise ValueError("a scenario has steps (one process) or phases, not both")
            validate_phases(self.phases)

    @property
    def fault_step(self) -> int | None:
        return None if self.fault is None else int(self.fault["step"])

    def faults(self) -> list[tuple[int | None, int | None, Mapping[str, Any]]]:
        """Every injected fault: (phase index, step index or None for an open, fault)."""
        if not self.phases:
            return [(None, i, s["fault"]) for i, s in enumerate(self.steps) if "fault" in s]
        found: list[tuple[int | None, int | None, Mapping[str, Any]]] = []
        for number, phase in enumerate(self.phases):
            if phase.open_fault is not None:
                found.append((number, None, phase.open_fault))
            found.extend((number, i, s["fault"]) for i, s in enumerate(phase.steps) if "fault" in s)
        return found

    def to_json(self) -> dict[str, Any]:
        if self.phases:
            return {
                "format": FORMAT_PROCESSES,
                "name": self.name,
                "description": self.description,
                "versions": dict(self.versions),
                "initial": trees.to_json(self.initial),
                "phases": [phase.to_json() for phase in self.phases],
                "count": self.count,
                "expected": [trees.to_json(tree) for tree in self.expected],
                "actual": None if self.actual is None else trees.to_json(self.actual),
                "problems": list(self.problems),
            }
        return {
            "format": FORMAT,
            "name": self.name,
            "description": self.description,
            "versions": dict(self.versions),
            "initial": trees.to_json(self.initial),
            "steps": [_step_to_json(step) for step in self.steps],
            "fault": None if self.fault is None else dict(self.fault),
            "count": self.count,
            "trace": list(self.trace),
            "expected": [trees.to_json(tree) for tree in self.expected],
            "actual": None if self.actual is None else trees.to_json(self.actual),
            "problems": list(self.problems),
            **({"driver": self.driver} if self.driver else {}),
            **({"server": dict(self.server)} if self.server is not None else {}),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Scenario:
        if value.get("format") not in (FORMAT, FORMAT_PROCESSES):
            raise ValueError(f"not an editspec scenario (format {value.get('format')!r})")
        if value.get("format") == FORMAT and "phases" in value:
            raise ValueError(f"phases need the format {FORMAT_PROCESSES!r}")
        actual = value.get("actual")
        return cls(
            name=value["name"],
            description=value.get("description", ""),
            versions=value.get("versions", {}),
            initial=trees.from_json(value.get("initial", {})),
            steps=tuple(_step_from_json(step) for step in value.get("steps", ())),
            fault=value.get("fault"),
            count=value.get("count", "mutating"),
            trace=tuple(value.get("trace", ())),
            expected=tuple(trees.from_json(tree) for tree in value.get("expected", ())),
            actual=None if actual is None else trees.from_json(actual),
            problems=tuple(value.get("problems", ())),
            phases=tuple(Phase.from_json(phase) for phase in value.get("phases", ())),
            driver=str(value.get("driver") or ""),
            server=None if value.get("server") is None else dict(value["server"]),
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n")
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Scenario:
        return cls.from_json(json.loads(Path(path).read_text()))


def _step_to_json(step: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(step)
    if isinstance(out.get("content"), bytes):
        out["content"] = trees.bytes_to_json(out["content"])
    if "expect" in out:
        out["expect"] = [trees.to_json(tree) for tree in out["expect"]]
    if "expect_if" in out:
        out["expect_if"] = {
            code: [trees.to_json(tree) for tree in accepted]
            for code, accepted in out["expect_if"].items()
        }
    return out


def _step_from_json(step: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(step)
    if isinstance(out.get("content"), dict):
        out["content"] = trees.bytes_from_json(out["content"])
    if "expect" in out:
        out["expect"] = [trees.from_json(tree) for tree in out["expect"]]
    if "expect_if" in out:
        out["expect_if"] = {
            str(code): [trees.from_json(tree) for tree in accepted]
            for code, accepted in out["expect_if"].items()
        }
    return out


def describe_step(step: Mapping[str, Any]) -> str:
    """One line for a step, for logs and replay output."""
    hidden = ("call", "expect", "expect_if", "session", "fault", "outcomes", "pause_after")
    shown = {k: v for k, v in step.items() if k not in hidden}
    for key in ("content", "patch"):
        value = shown.get(key)
        if isinstance(value, (bytes, str)) and len(value) > 40:
            shown[key] = f"<{len(value)} {'bytes' if isinstance(value, bytes) else 'chars'}>"
    session = f"[{step['session']}] " if "session" in step else ""
    args = ", ".join(f"{k}={v!r}" for k, v in shown.items())
    return f"{session}{step['call']}({args})"


# -- performing steps ------------------------------------------------------------------


@attrs.frozen
class Outcome:
    """How a step ended: ``"ok"`` or the error code it raised."""

    code: str
    message: str = ""
    result: Any = None

    @property
    def ok(self) -> bool:
        return self.code == "ok"


SESSION_CALLS = frozenset({"read", "write", "edit", "apply_patch", "rewind", "delete", "move"})
EXTERNAL_CALLS = frozenset({"external_write", "external_delete", "symlink", "hardlink", "mkdir"})


def _content(value: Any) -> str | bytes:
    if isinstance(value, (str, bytes)):
        return value
    return trees.bytes_from_json(value)


def _edits(value: Sequence[Mapping[str, Any]]) -> list[Any]:

    return [EditSpec(**dict(edit)) for edit in value]


class DriverWorkspace:
    """A driver seen as ``perform`` expects a workspace."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def session(self, session_id: str) -> Any:
        return self.driver.open_session(session_id)

    def recover(self) -> Any:
        return self.driver.recover()


def perform(workspace: Any, step: Mapping[str, Any], root: str) -> Outcome:
    """Run one step against ``workspace`` (an ``editspec.reference.Workspace``)."""
    call = step["call"]
    if call in EXTERNAL_CALLS:
        external(root, step)
        return Outcome("ok")
    try:
        if call == "recover":
            return Outcome("ok", result=workspace.recover())
        if call not in SESSION_CALLS:
            raise ValueError(f"unknown call {call!r}")
        session = workspace.session(step.get("session", SESSION))
        message_id = step.get("message_id")
        if call == "read":
            result = session.read(step["path"])
        elif call == "write":
            result = session.write(
                step["path"],
                _content(step["content"]),
                message_id=message_id,
                expected_sha256=step.get("expected_sha256"),
            )
        elif call == "edit":
            result = session.edit(
                step["path"],
                _edits(step["edits"]),
                message_id=message_id,
                expected_sha256=step.get("expected_sha256"),
            )
        elif call == "apply_patch":
            result = session.apply_patch(step["patch"], message_id=message_id)
        elif call == "delete":
            result = session.delete(
                step["path"],
                kind=step.get("kind", "file"),
                expected_sha256=step.get("expected_sha256"),
                manifest_sha256=step.get("manifest_sha256"),
                message_id=message_id,
            )
        elif call == "move":
            result = session.move(
                step["path"],
                step["dest"],
                expected_sha256=step.get("expected_sha256"),
                manifest_sha256=step.get("manifest_sha256"),
                message_id=message_id,
            )
        else:
            result = session.rewind(step["message_id"])
    except Exception as exc:
        code = getattr(exc, "code", None)
        if not isinstance(code, str):
            raise
        return Outcome(code, getattr(exc, "message", str(exc)))
    return Outcome("ok", result=result)


def external(root: str, step: Mapping[str, Any]) -> None:
    """A change made by another program, straight through ``os``."""
    call = step["call"]
    path = os.path.join(root, *str(step["path"]).split("/"))
    if call == "external_write":
        data = _content(step["content"])
        payload = data.encode("utf-8") if isinstance(data, str) else data
        previous = os.stat(path) if step.get("keep_mtime") and os.path.exists(path) else None
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(payload)
        if previous is not None:  # the same size and mtime: only the hash can tell
            os.utime(path, ns=(previous.st_atime_ns, previous.st_mtime_ns))
    elif call == "external_delete":
        os.unlink(path)
    elif call == "symlink":
        os.symlink(step["target"], path)
    elif call == "hardlink":
        os.link(os.path.join(root, *str(step["target"]).split("/")), path)
    elif call == "mkdir":
        os.makedirs(path, exist_ok=True)
