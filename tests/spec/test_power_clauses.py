"""WRITE-027 and TXN-011, the power-cut clauses, fail the implementations they describe.

The clause bodies are called as the suite calls them, with a driver factory and a base
directory: the reference passes both; a writer that truncates in place, and one that
does not fsync the directory after its rename, fail WRITE-027; every durability mutant
of the reference that a power cut can expose fails TXN-011 when the reference is
reached only through the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from editspec.contract.drivers.reference import ReferenceDriver
from editspec.spec.test_txn import test_power_cut_during_a_patch as txn_011
from editspec.spec.test_write import test_power_cut_during_replace as write_027
from tests.fault_injection.python_drivers import (
    AtomicOutsideTheRoot,
    AtomicWithoutDirSync,
    Careless,
    OpaqueReference,
)
from tests.mutants import durability

Clause = Callable[[Callable[[Path, Path], object], Path], None]


@pytest.mark.parametrize("clause", [write_027, txn_011], ids=["WRITE-027", "TXN-011"])
def test_the_reference_meets_both(clause: Clause, tmp_path: Path) -> None:
    clause(ReferenceDriver, tmp_path)


def test_a_durable_atomic_writer_meets_write_027(tmp_path: Path) -> None:
    write_027(AtomicOutsideTheRoot, tmp_path)


@pytest.mark.parametrize(
    ("writer", "found"),
    [
        (Careless, "found file 0 bytes"),  # truncated, the new bytes not yet durable
        (AtomicWithoutDirSync, "expected file 10800 bytes"),  # returned, then the rename lost
    ],
    ids=["truncates in place", "no directory fsync"],
)
def test_write_027_fails_a_writer_that_can_lose_the_file(
    writer: Callable[[Path, Path], object], found: str, tmp_path: Path
) -> None:
    with pytest.raises(AssertionError) as failed:
        write_027(writer, tmp_path)
    assert "power cut after" in str(failed.value) and found in str(failed.value)


@pytest.mark.parametrize("name", durability.POWER_EXPOSED)
def test_txn_011_fails_every_power_exposed_durability_mutant(name: str, tmp_path: Path) -> None:
    mutant = durability.mutant_named(name)
    with mutant.active(), pytest.raises(AssertionError) as failed:
        txn_011(OpaqueReference, tmp_path)
    assert "power cut after" in str(failed.value), str(failed.value)[:400]
