"""``editspec serve`` with one mutant of the reference installed, for kill tests.

    python tests/fault_injection/mutant_serve.py MUTANT ROOT --state-dir STATE

``MUTANT`` names a mutant of the zoo that replaces an engine function
(``tests/mutants/mutant_zoo.py``) or a durability mutant
(``tests/mutants/durability.py``); it stays in place for the life of the server, so a
server killed by strace shows what the broken engine leaves on disk.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for tests.*

from editspec.spec.serve import main
from tests.mutants import durability, mutant_zoo


def serve(name: str, argv: list[str]) -> int:
    zoo = mutant_zoo.MUTANTS.get(name)
    if zoo is not None:
        if zoo.install is None:
            raise SystemExit(f"{name} changes a workspace, not the engine: it cannot be served")
        zoo.install()
        return main(argv)
    with durability.mutant_named(name).active():
        return main(argv)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1], sys.argv[2:]))
