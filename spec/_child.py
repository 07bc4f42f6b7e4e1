"""A worker process for multi-process clauses: builds the driver again and edits a file.

Run as ``python -m editspec.spec._child JSON`` where JSON names the driver (a
``DriverSpec``), the root, the state directory, the session id, the file, the markers
to insert, and two paths for a start barrier: the child creates ``ready`` once its
driver is up (a server that starts on first use is started first: ``start_now``) and
starts editing when ``go`` exists, so all children race from the same moment. Each
marker is inserted before the line ``END`` by one edit, retried while the implementation
answers STALE; a driver that needs a read before a change (it declares
``read_before_write`` or ``stale_detection``) gets a plain full read before each attempt,
as preparation. Prints a JSON summary: ``{"applied": [...], "errors": [...]}``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from editspec.contract.drivers import DriverSpec, factory_for
from editspec.reference import EditSpec
from editspec.spec._calls import setup

NEEDS_READ = frozenset({"read_before_write", "stale_detection"})


def start_now(driver: Any) -> None:
    """Start the implementation behind ``driver`` now, if it starts on first use (an MCP
    server): a start barrier is only one if every racer has started before it."""
    start = getattr(driver, "start", None)
    if callable(start):
        start()


def insert_markers(
    session: Any,
    path: str,
    markers: list[str],
    *,
    attempts: int = 500,
    capabilities: frozenset[str] | None = None,
) -> dict[str, list[str]]:
    """Insert each marker before END, one edit each; STALE means read again and retry.

    ``capabilities`` (default: the session's ``driver_capabilities``, as the suite's
    proxy carries them) decide whether each attempt is prepared by a plain read.
    """

    if capabilities is None:
        capabilities = frozenset(getattr(session, "driver_capabilities", frozenset()))
    needs_read = bool(NEEDS_READ & capabilities)
    applied: list[str] = []
    errors: list[str] = []
    for marker in markers:
        for _ in range(attempts):
            if needs_read:
                with setup():
                    session.read(path)
            try:
                session.edit(path, [EditSpec("END", f"{marker}\nEND")])
            except Exception as exc:
                code = getattr(exc, "code", None)
                if code == "STALE":
                    continue
                errors.append(f"{marker}: {code or type(exc).__name__}: {exc}")
                break
            applied.append(marker)
            break
        else:
            errors.append(f"{marker}: still STALE after {attempts} attempts")
    return {"applied": applied, "errors": errors}


def main(argv: list[str] | None = None) -> int:

    args = json.loads((argv if argv is not None else sys.argv[1:])[0])
    factory = factory_for(DriverSpec.from_dict(args["driver"]))
    driver = factory(Path(args["root"]), Path(args["state_dir"]))
    try:
        session = driver.open_session(args["session"])
        start_now(driver)
        Path(args["ready"]).touch()
        deadline = time.monotonic() + 60
        while not Path(args["go"]).exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        summary = insert_markers(
            session,
            args["path"],
            list(args["markers"]),
            capabilities=frozenset(driver.capabilities),
        )
    finally:
        driver.close()
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
