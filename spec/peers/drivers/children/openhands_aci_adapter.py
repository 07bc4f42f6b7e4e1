"""The adapter of ``openhands-aci``'s ``OHEditor`` in its own interpreter (Python >= 3.12).

See _child_loop.py. ``open(editor, root)`` makes an ``OHEditor(workspace_root=root)`` under
the caller's id (one per driver: its undo history is per editor), ``call(editor, **kw)``
is ``editor(**kw)`` with the ``CLIResult`` returned as a dict, ``close(editor)`` drops it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from _child_loop import serve  # this script's directory is on sys.path
from openhands_aci.editor import OHEditor

EDITORS: dict[str, Any] = {}


def open_editor(editor: str, root: str) -> None:
    EDITORS[editor] = OHEditor(workspace_root=root)


def call(editor: str, **arguments: Any) -> dict[str, Any]:
    return dataclasses.asdict(EDITORS[editor](**arguments))


def close_editor(editor: str) -> None:
    EDITORS.pop(editor, None)


if __name__ == "__main__":
    serve({"open": open_editor, "call": call, "close": close_editor})
