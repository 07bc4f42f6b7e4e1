"""The MUST clauses each mutant and broken driver must fail (and the reference passes).

One entry per mutant of the zoo that does not name its clauses itself (``Mutant.clauses``).
``tests/mutants/test_zoo.py`` runs exactly these pairs; ``python tests/mutants/zoo.py try
NAME --areas AREA`` shows which clauses a mutant fails, to extend this table.
"""

from __future__ import annotations

TARGETS: dict[str, tuple[str, ...]] = {}
