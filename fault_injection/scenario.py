"""Scenarios: a workspace, a list of operations and a fault, as data that can be re-run.

A ``Scenario`` is what a failure found by the state machines or the explorer is saved
as (JSON, ``FORMAT``): the initial tree of the workspace root, the steps (each a plain
dict such as ``{"call": "write", "session": "s1", "path": "a.txt", "content": "x"}``,
optionally with the trees the model accepts after it, ``"expect"``), the fault and the
step it hits, the trees expected and found, the problems seen, and the versions of
editspec and Python that produced it.

Calls: ``read``, ``write``, ``edit``, ``apply_patch``, ``rewind`` (a session's), and
``recover`` (the workspace's); outside the engine, ``external_write`` (optionally keeping
size and mtime, the change stale detection must still see), ``external_delete``,
``symlink``, ``hardlink`` and ``mkdir``, done with ``os`` directly as another program
would. ``perform`` runs one step and returns its ``Outcome``.

Faults (``fault``): ``{"kind": "crash", "step": i, "at": k}``,
``{"kind": "fail", "step": i, "at": k, "errno": "ENOSPC"}``,
``{"kind": "power_loss", "step": i, "model": "ordered", "point": p, "lost": [...],
"cut": [[creator, kept], ...]}`` (optionally with ``"fail_at": k, "errno": "EIO"``: an
injected error during the step, before the cut) and ``{"kind": "recovery_crash",
"step": i, "at": k, "recovery_at": j}``. After a faulted step the process "restarts": a
fresh ``Workspace`` is opened (its constructor recovers) before the next step.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from editspec.fault_injection import trees

FORMAT = "editspec-scenario/1"
SESSION = "s1"


def versions() -> dict[str, str]:
    from importlib import metadata

    try:
        editspec_version = metadata.version("editspec")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        editspec_version = "unknown"
    return {"editspec": editspec_version, "python": platform.python_version()}


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

    @property
    def fault_step(self) -> int | None:
        return None if self.fault is None else int(self.fault["step"])

    def to_json(self) -> dict[str, Any]:
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
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Scenario:
        if value.get("format") != FORMAT:
            raise ValueError(f"not an editspec scenario (format {value.get('format')!r})")
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
    return out


def _step_from_json(step: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(step)
    if isinstance(out.get("content"), dict):
        out["content"] = trees.bytes_from_json(out["content"])
    if "expect" in out:
        out["expect"] = [trees.from_json(tree) for tree in out["expect"]]
    return out


def describe_step(step: Mapping[str, Any]) -> str:
    """One line for a step, for logs and replay output."""
    hidden = ("call", "expect", "session", "fault", "outcomes")
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


SESSION_CALLS = frozenset({"read", "write", "edit", "apply_patch", "rewind"})
EXTERNAL_CALLS = frozenset({"external_write", "external_delete", "symlink", "hardlink", "mkdir"})


def _content(value: Any) -> str | bytes:
    if isinstance(value, (str, bytes)):
        return value
    return trees.bytes_from_json(value)


def _edits(value: Sequence[Mapping[str, Any]]) -> list[Any]:
    from editspec.reference import EditSpec

    return [EditSpec(**dict(edit)) for edit in value]


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
