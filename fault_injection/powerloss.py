"""Power loss: which disk states can a power cut leave, given the trace of port operations?

Theory of operation (DESIGN §5, after ALICE and SQLite's crash VFS):

* ``TraceRecorder`` observes a ``FaultyFileSystem``. When started it captures an
  ``Image`` of its roots (the workspace root *and* the state directory, where
  journals live): every path with its node, and for files an inode identity, so hard
  links stay links. Then it records every port operation that succeeded.
* ``simulate`` replays a trace prefix over the image and tracks what is durable:
  per inode, the bytes as of its last ``fsync``; per directory operation (create,
  link, rename, unlink, mkdir, rmdir — an "entry operation"), the directories whose
  ``fsync_dir`` made it durable. A rename touches two directories; it is durable when
  both were synced after it. ``rename`` between two links of one inode does nothing
  (POSIX), and the model says so.
* A power cut after ``point`` operations can lose:
  - per file, the data written since its last fsync: all of it, or everything past a
    4 KiB boundary (the file keeps a prefix, as a file system writing whole blocks);
  - unsynced entry operations. Model ``"ordered"``: a *suffix* of the unsynced entry
    operations is lost, in the order they were issued, as with a file system that
    journals metadata in order (ext4 ``data=ordered``; ext4 itself is kinder: any
    later fsync commits every earlier operation). Model ``"strict"``: any subset of
    them is lost (POSIX promises nothing more without the directory's fsync).
  The surviving operations are replayed, in order, over the image; an operation
  whose parent directory did not survive does not happen either.
* ``check_power_loss`` materializes each distinct state in place (the roots are
  wiped and rewritten, so absolute paths recorded inside journals stay valid),
  opens a fresh ``Workspace`` (its constructor runs recovery), and checks the result:
  the root equals one of the acceptable trees, and no journal is left.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection._durability import (
    Model,
    PowerState,
    Simulation,
    TraceChanged,
    power_loss_states,
    rebuild_state,
    simulate,
    states_at,
)
from editspec.fault_injection._trace import (
    BLOCK,
    DirNode,
    FileNode,
    Image,
    LinkNode,
    TraceOp,
    TraceRecorder,
    capture_image,
)
from editspec.reference import Workspace

__all__ = [
    "BLOCK",
    "DirNode",
    "FileNode",
    "Image",
    "LinkNode",
    "Model",
    "PowerLossFailure",
    "PowerLossReport",
    "PowerState",
    "RecordedTrace",
    "Simulation",
    "TraceChanged",
    "TraceOp",
    "TraceRecorder",
    "capture_image",
    "check_power_loss",
    "check_recovered",
    "journal_leftovers",
    "materialize",
    "power_loss_states",
    "rebuild_state",
    "simulate",
    "state_of_fault",
    "states_at",
]


# -- a saved cut, rebuilt ---------------------------------------------------------------


def state_of_fault(image: Image, trace: Sequence[TraceOp], fault: Mapping[str, Any]) -> PowerState:
    """The state a scenario's ``power_loss`` fault names, over this run's ``trace``.

    ``point``: a number of operations, or ``"end"`` (after the last one); ``lost``: trace
    positions, or ``"unsynced"`` (every entry operation not durable at the point: the
    harshest cut, described without positions, so one scenario means the same cut for
    engines whose traces differ); or ``{"before_last": name, "path_suffix": suffix}``:
    right before the last operation ``name`` on a path ending in ``suffix`` (a place in
    the protocol, such as "before the journal is deleted", named without positions);
    ``cut``: ``[[creator, kept], ...]`` (``rebuild_state``).
    """
    point = _point_of(trace, fault["point"])
    lost = fault.get("lost", ())
    if lost == "unsynced":
        lost = [op.position for op in simulate(image, trace[:point]).entry_ops if not op.durable]
    cut = {str(key): int(kept) for key, kept in fault.get("cut", ())}
    return rebuild_state(image, trace, point, lost, cut)


def _point_of(trace: Sequence[TraceOp], point: Any) -> int:
    if point == "end":
        return len(trace)
    if not isinstance(point, Mapping):
        return int(point)
    name, suffix = point["before_last"], point.get("path_suffix", "")
    found = [op.position for op in trace if op.name == name and op.paths[-1].endswith(suffix)]
    if not found:
        raise TraceChanged(f"the trace has no {name} of a path ending in {suffix!r}")
    return found[-1]


# -- materialize and check ----------------------------------------------------------


def _require_disposable(root: str) -> None:
    temp = os.path.realpath(tempfile.gettempdir())
    real = os.path.realpath(root)
    if os.path.commonpath([temp, real]) != temp or real == temp:
        raise ValueError(f"refusing to wipe {root}: power-loss states are built under {temp}")


def materialize(state: PowerState, roots: Sequence[str]) -> None:
    """Wipe ``roots`` and write ``state`` there (hard links as links)."""
    for root in roots:
        _require_disposable(root)
        if os.path.lexists(root):
            shutil.rmtree(root)
    written: dict[int, str] = {}
    for path in sorted(state.entries, key=lambda p: p.split(os.sep)):
        node = state.entries[path]
        if isinstance(node, DirNode):
            os.makedirs(path, exist_ok=True)
            os.chmod(path, node.mode | 0o700)
        elif isinstance(node, LinkNode):
            os.symlink(node.target, path)
        elif node.inode in written:
            os.link(written[node.inode], path)
        else:
            with open(path, "wb") as handle:
                handle.write(state.contents[node.inode])
            os.chmod(path, state.modes[node.inode])
            written[node.inode] = path


@attrs.frozen
class PowerLossFailure:
    state: PowerState
    problems: tuple[str, ...]
    actual: trees.Tree


@attrs.frozen
class PowerLossReport:
    states: int
    truncated: bool
    failures: tuple[PowerLossFailure, ...]


def journal_leftovers(state_dir: str) -> list[str]:
    """Files under ``<state_dir>/journal`` (a finished recovery leaves none)."""
    base = os.path.join(state_dir, "journal")
    found: list[str] = []
    for directory, _dirnames, filenames in os.walk(base):
        found.extend(os.path.relpath(os.path.join(directory, f), state_dir) for f in filenames)
    return sorted(found)


def check_recovered(
    root: str,
    state_dir: str,
    acceptable: Sequence[trees.Tree],
    open_workspace: Callable[[str, str], object],
    ignore: Callable[[str], bool] | None = None,
    *,
    journals: bool = True,
) -> tuple[list[str], trees.Tree]:
    """Open a fresh workspace (recovery runs) and check the disk; return problems and tree.

    ``ignore(relative_path)``: paths left out of the comparison (for the reference, the
    temp file of an interrupted single-file write, which recovery cannot know about).
    """
    problems: list[str] = []
    try:
        workspace = open_workspace(root, state_dir)
    except Exception as exc:  # any error from recovery is a finding, not a crash of the harness
        problems.append(f"recovery raised {type(exc).__name__}: {exc}")
    else:
        close = getattr(workspace, "close", None)
        if close is not None:
            close()
    actual = trees.capture(root)
    if ignore is not None:
        actual = {path: entry for path, entry in actual.items() if not ignore(path)}
    if not any(trees.equal(tree, actual) for tree in acceptable):
        closest = min(acceptable, key=lambda tree: len(trees.diff(tree, actual)))
        problems.append("disk is neither all-before nor all-after:")
        problems.extend("  " + line for line in trees.diff(closest, actual))
    leftovers = journal_leftovers(state_dir) if journals else []
    if leftovers:
        problems.append("journal left after recovery: " + ", ".join(leftovers))
    return problems, actual


def default_open_workspace(root: str, state_dir: str) -> object:

    return Workspace(root, state_dir)


class RecordedTrace(Protocol):
    """What a power-loss check needs of a recorder: its roots, image and trace."""

    @property
    def roots(self) -> tuple[str, ...]: ...

    @property
    def image(self) -> Image: ...

    @property
    def ops(self) -> Sequence[TraceOp]: ...


def check_power_loss(
    recorder: RecordedTrace,
    *,
    root: str,
    state_dir: str,
    acceptable_at: Callable[[int], Sequence[trees.Tree]],
    model: Model = "ordered",
    open_workspace: Callable[[str, str], object] = default_open_workspace,
    limit: int = 4096,
    stop_after: int | None = None,
    ignore: Callable[[str], bool] | None = None,
    journals: bool = True,
) -> PowerLossReport:
    """Materialize, recover and check every state of ``recorder``'s trace under ``model``.

    ``acceptable_at(point)`` gives the trees the root may hold after recovery from a
    cut after ``point`` operations (all-before or all-after; only all-after once the
    operation has returned). States are deduplicated among points with equal answers.
    """
    trace = list(recorder.ops)
    groups: dict[tuple[int, ...], list[int]] = {}
    answers: dict[tuple[int, ...], Sequence[trees.Tree]] = {}
    for point in range(len(trace) + 1):
        acceptable = acceptable_at(point)
        group = tuple(id(tree) for tree in acceptable)
        groups.setdefault(group, []).append(point)
        answers[group] = acceptable
    total, truncated, failures = 0, False, []
    for group, points in groups.items():
        states, hit = power_loss_states(recorder.image, trace, model, points=points, limit=limit)
        truncated = truncated or hit
        for state in states:
            total += 1
            materialize(state, recorder.roots)
            problems, actual = check_recovered(
                root, state_dir, answers[group], open_workspace, ignore, journals=journals
            )
            if problems:
                failures.append(PowerLossFailure(state, tuple(problems), actual))
                if stop_after is not None and len(failures) >= stop_after:
                    return PowerLossReport(total, truncated, tuple(failures))
    return PowerLossReport(total, truncated, tuple(failures))
