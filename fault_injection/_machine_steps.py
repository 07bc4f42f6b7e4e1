"""What the state machines draw: the strategies of contents, sessions and fault points,
and the steps they build (writes, edits, patches in the Codex format).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from editspec.fault_injection.model import Model

WORDS = ("alpha", "gamma", "delta", "omega", "sigma")  # same length: same-size rewrites


SESSIONS = ("s1", "s2")


ERRNOS = ("ENOSPC", "EIO", "EACCES", "EXDEV", "EROFS")


lines = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)


contents = st.one_of(
    lines.map(lambda words: "".join(w + "\n" for w in words)),
    # Now and then a file larger than a 4 KiB block, so power cuts can tear its data.
    st.tuples(st.sampled_from(WORDS), st.integers(700, 1000)).map(lambda t: (t[0] + "\n") * t[1]),
)


# Where a fault lands, as a fraction of the operations the same call issued last time it
# ran cleanly in this machine (``WorkspaceMachine.point``), so faults spread over the
# whole publish instead of bunching at its first operations.
# Whether a write or an edit reads its file first (as an agent mostly does); without it
# most of them would stop at NOT_READ and never reach the disk.
reads_first = st.sampled_from((True, True, True, True, False))


crash_points = st.floats(min_value=0.0, max_value=1.0, exclude_max=True)


fail_points = crash_points


def write_step(session: str, path: str, text: str, message: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"call": "write", "session": session, "path": path, "content": text}
    if message is not None:
        step["message_id"] = message
    return step


def edit_step(
    session: str, path: str, old: str, new: str, message: str | None = None
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "call": "edit",
        "session": session,
        "path": path,
        "edits": [{"old_string": old, "new_string": new}],
    }
    if message is not None:
        step["message_id"] = message
    return step


def patch_text(ops: Sequence[Mapping[str, str]]) -> str:
    parts = ["*** Begin Patch\n"]
    for op in ops:
        if op["op"] == "add":
            body = "".join("+" + line + "\n" for line in op["content"].splitlines())
            parts.append(f"*** Add File: {op['path']}\n{body}")
        elif op["op"] == "delete":
            parts.append(f"*** Delete File: {op['path']}\n")
        else:
            move = f"*** Move to: {op['dest']}\n" if op["op"] == "move" else ""
            parts.append(f"*** Update File: {op['path']}\n{move}@@\n-{op['old']}\n+{op['new']}\n")
    parts.append("*** End Patch\n")
    return "".join(parts)


PATCH_PATHS = ("a.txt", "b.txt", "d/c.txt", "d/e.txt", "n/f.txt", "n/m/g.txt")


def draw_patch(data: st.DataObject, model: Model) -> list[dict[str, str]]:
    """Patch operations that are valid against ``model``, now and then deliberately not."""
    ops: list[dict[str, str]] = []
    used: set[str] = set()
    for _ in range(data.draw(st.integers(1, 3), label="files")):
        existing = [p for p in PATCH_PATHS if p in model.files and p not in used]
        absent = [p for p in PATCH_PATHS if p not in model.files and p not in used]
        kinds = (["add"] if absent else []) + (["delete", "update", "move"] if existing else [])
        kind = data.draw(st.sampled_from(kinds), label="op")
        if kind == "move" and len(absent) == 0:
            kind = "update"
        if kind == "add":
            path = data.draw(st.sampled_from(absent), label="path")
            text = data.draw(lines.map(lambda words: "".join(w + "\n" for w in words)))
            ops.append({"op": "add", "path": path, "content": text})
            used.add(path)
            continue
        path = data.draw(st.sampled_from(existing), label="path")
        used.add(path)
        if kind == "delete":
            ops.append({"op": "delete", "path": path})
            continue
        old = data.draw(
            st.sampled_from(model.files[path].decode("utf-8").splitlines()), label="old"
        )
        new = data.draw(st.sampled_from([w for w in (*WORDS, "kappa") if w != old]), label="new")
        op = {"op": kind, "path": path, "old": old, "new": new}
        if kind == "move":
            op["dest"] = data.draw(st.sampled_from(absent), label="dest")
            used.add(op["dest"])
        ops.append(op)
    # One in five patches is broken on purpose: it must fail and change nothing.
    breakage = data.draw(
        st.sampled_from(("none",) * 4 + ("add-existing", "delete-missing", "twice", "no-match")),
        label="breakage",
    )
    if breakage == "add-existing" and model.files:
        ops.append({"op": "add", "path": sorted(model.files)[0], "content": "x\n"})
    elif breakage == "delete-missing":
        ops.append({"op": "delete", "path": "missing.txt"})
    elif breakage == "twice":
        ops.append(dict(ops[0]))
    elif breakage == "no-match":
        updates = [op for op in ops if op["op"] in ("update", "move")]
        if updates:
            updates[0]["old"] = "zulu"
    return ops


def patch_step(
    session: str, ops: Sequence[Mapping[str, str]], message: str | None = None
) -> dict[str, Any]:
    step: dict[str, Any] = {"call": "apply_patch", "session": session, "patch": patch_text(ops)}
    if message is not None:
        step["message_id"] = message
    return step
