"""A broken unified-diff applier that only a SHOULD clause catches (PATCH-068).

The zoo (``mutant_zoo.py``) holds mutants a MUST clause catches; this one reads a diff
whose every line ends in CRLF as if its CRs were content: applied to an LF file, its
context matches only tolerantly and its added lines gain a CR. ``factory`` is a
``DriverFactory`` (``unified_should:factory`` with this directory on ``PYTHONPATH``).
"""

from __future__ import annotations

from pathlib import Path

from editspec.contract.drivers.reference import ReferenceDriver
from editspec.reference.patch import _patch_parse


def factory(root: Path, state_dir: Path) -> ReferenceDriver:
    _patch_parse.crlf_transport = lambda text: False  # type: ignore[assignment]
    driver = ReferenceDriver(root, state_dir)
    driver.name = "mutant:crlf_transport_ignored"
    return driver
