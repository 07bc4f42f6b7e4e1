"""The power-loss model over the ``os``-level trace of a ``python_fs`` driver.

The drivers here are opaque to the harness: it reaches them only through the driver
contract (``factory(root, state_dir)``, ``open_session``, ``recover``), and sees their
effects only through ``spec.crash.OsInterceptor``. One is the reference engine built
with its default ``FileSystem`` (real ``os`` calls, no port wrapped); the others are
small writers of their own, one atomic and durable, two not.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from editspec.fault_injection import driver_power, harness, ostrace, trees
from editspec.fault_injection.osfaults import OsInterceptor
from editspec.fault_injection.powerloss import power_loss_states
from editspec.fault_injection.scenario import SESSION, Scenario
from tests.fault_injection.python_drivers import (
    Atomic,
    AtomicWithoutDirSync,
    Careless,
    Elsewhere,
    OpaqueReference,
)
from tests.mutants import durability

OLD = b"the old contents, synced\n" * 200  # over a 4 KiB block
NEW = b"THE NEW CONTENTS\n" * 400


def overwrite() -> Scenario:
    return Scenario(
        name="overwrite",
        initial={"f.txt": trees.Entry.file(OLD, 0o644)},
        steps=({"call": "write", "session": SESSION, "path": "f.txt", "content": NEW},),
    )


@pytest.fixture
def box(tmp_path: Path) -> harness.Sandbox:
    return harness.Sandbox(tmp_path / "box")


def _disk_effects(ops: Any, base: str) -> list[tuple[Any, ...]]:
    """The calls that change files or entries, as (name, relative paths, bytes)."""
    kept = []
    for op in ops:
        paths = tuple(os.path.relpath(p, base) for p in op.paths)
        if op.name in ("lock_file", "unlock", "close"):
            continue
        if any(p.startswith("state/locks") for p in paths):
            continue  # a lock file: opened to be locked, never written
        name = "create" if op.name in ("create_exclusive", "open") else op.name
        kept.append((name, paths, op.data))
    return kept


def test_the_os_trace_of_the_reference_is_its_port_trace(box: harness.Sandbox) -> None:
    """Recorded at the os level, the reference does what its port says it does."""
    scenario = durability.update_two()
    with durability.pinned_transaction_id(durability.PINNED_ID):  # the same names twice
        port = harness.baseline(box, scenario)
        at_os = driver_power.driver_baseline(OpaqueReference, box, scenario)
    assert at_os.outcome.ok and at_os.after == port.after
    # The os-level recorder resolved every name relative to a directory descriptor (the
    # reference walks from "/" and acts through dir_fd) back to the same paths.
    assert _disk_effects(at_os.recorder.ops, box.base) == _disk_effects(port.trace, box.base)
    assert any(op.name == "fsync_dir" for op in at_os.recorder.ops)


@pytest.mark.parametrize(
    "build",
    [durability.update_two, durability.move_one, durability.add_one],
    ids=lambda build: build.__name__,
)
def test_the_reference_as_an_opaque_driver_survives_every_ordered_power_loss_state(
    box: harness.Sandbox, build: Any
) -> None:
    report = driver_power.check_driver_power_loss(OpaqueReference, box, build(), "ordered")
    assert report.states > 10 and not report.truncated
    assert not report.failures, [f.state.describe() for f in report.failures[:3]]


@pytest.mark.parametrize("name", durability.POWER_EXPOSED)
def test_a_durability_mutant_is_caught_through_the_os_level_trace(
    box: harness.Sandbox, name: str
) -> None:
    mutant = durability.mutant_named(name)
    with mutant.active():
        report = driver_power.check_driver_power_loss(
            OpaqueReference, box, mutant.scenario(), "ordered", stop_after=1
        )
    assert report.failures, f"{name} survives every power-loss state of its os-level trace"
    failure = report.failures[0]
    assert failure.problems
    print(f"{name}: {failure.state.describe()}: {failure.problems[0]}")


def test_a_careless_writer_is_caught_and_an_atomic_one_passes(box: harness.Sandbox) -> None:
    careless = driver_power.check_driver_power_loss(Careless, box, overwrite(), "ordered")
    assert careless.failures
    found = {f.actual["f.txt"].data for f in careless.failures if "f.txt" in f.actual}
    assert b"" in found  # the truncation reached the disk, the new bytes did not
    assert any(0 < len(data) < len(NEW) and NEW.startswith(data) for data in found)  # torn
    assert NEW not in found  # all-after is always right
    # All-before is right until the call returns; the careless write returns with nothing
    # synced, so a cut right after it can still bring the old bytes back: a failure too.
    assert OLD in found

    # An interrupted atomic write leaves its temp file beside the old one (no recovery
    # removes it): not counted here, as the reference's own is not.
    def temp(path: str) -> bool:
        return os.path.basename(path).startswith(".tmp-")

    atomic = driver_power.check_driver_power_loss(Atomic, box, overwrite(), "ordered", ignore=temp)
    assert atomic.states > 1 and not atomic.failures, atomic.failures

    clean = driver_power.driver_baseline(AtomicWithoutDirSync, box, overwrite())
    lazy = driver_power.check_driver_power_loss(
        AtomicWithoutDirSync, box, overwrite(), "ordered", ignore=temp, baseline=clean
    )
    # Once the call returned the new file must stay; without the directory's fsync the
    # rename may be lost, and the old file comes back.
    assert lazy.failures and {f.actual["f.txt"].data for f in lazy.failures} == {OLD}
    assert {f.state.point for f in lazy.failures} == {len(clean.recorder.ops)}


def test_a_driver_that_does_not_run_here_is_refused(box: harness.Sandbox) -> None:
    with pytest.raises(ValueError, match="python_fs"):
        driver_power.driver_baseline(Elsewhere, box, overwrite())


def test_the_model_leaves_the_old_bytes_or_any_block_prefix_of_an_in_place_rewrite(
    box: harness.Sandbox,
) -> None:
    clean = driver_power.driver_baseline(Careless, box, overwrite())
    names = [op.name for op in clean.recorder.ops]
    assert names == ["open", "truncate", "write", "close"]
    assert clean.recorder.ops[2].data == NEW and clean.recorder.ops[2].offset == 0
    states, _ = power_loss_states(clean.recorder.image, clean.recorder.ops, "ordered")
    path = os.path.join(box.root, "f.txt")
    contents = {state.contents[state.entries[path].inode] for state in states}  # type: ignore[union-attr]
    blocks = {NEW[:size] for size in range(0, len(NEW), 4096)}
    assert contents == {OLD, NEW} | blocks


@contextlib.contextmanager
def _unintercepted_descriptor(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR)  # opened before the interceptor: the recorder never saw it
    try:
        yield fd
    finally:
        os.close(fd)


def test_writes_through_descriptors_it_did_not_see_opened_are_not_guessed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x")
    root = tmp_path / "root"
    root.mkdir()
    (root / "f").write_bytes(b"")
    recorder = ostrace.OsTraceRecorder([root])
    with _unintercepted_descriptor(outside) as fd, OsInterceptor() as interceptor:
        recorder.start(interceptor)
        os.write(fd, b"not in the roots")
        with open(root / "f", "ab") as handle:
            handle.write(b"appended")
        os.mkdir(root / "d", 0o755)
        os.symlink("f", root / "d" / "link")
        recorder.stop()
    assert [op.name for op in recorder.ops] == ["open", "write", "close", "mkdir", "symlink"]
    assert recorder.ops[1].data == b"appended" and recorder.ops[1].offset == 0
    assert recorder.ops[4].target == "f"
