"""What the Python drivers of third-party file tools share.

A driver here maps one tool's own API and exceptions to the driver contract (DESIGN §2) and
nothing more: a result field the tool does not report is absent (the clause that reads it
fails as ``missing-field``), an argument the tool cannot take makes the clause UNSUPPORTED
(``NotExpressible``, as an MCP map's ``Inexpressible``), and an error is given the code its
message or exception type names, or none (a ``wrong-code`` failure, never a guess).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from editspec.spec import MissingField


class NotExpressible(Exception):
    """The clause asked for something the tool's API has no way to say.

    Neither the suite's error nor the tool's failure: the clause is UNSUPPORTED for this
    tool (DESIGN §7: a clause does not demand what the tool lacks), as an MCP map's
    ``Inexpressible`` is.
    """

    suite_error = True
    unsupported = True


class FieldNotReported(MissingField):
    """A clause read a result field the tool does not report."""


class ToolRefused(Exception):
    """The tool refused the call; ``code`` is what its message or exception type names."""

    def __init__(self, message: str, code: str | None) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        if code is not None:
            self.code = code


class Result:
    """A result of the tool, its fields read as attributes; an absent one is reported."""

    __slots__ = ("_fields", "_what")

    def __init__(self, what: str, **fields: Any) -> None:
        self._fields = fields
        self._what = what

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._fields[name]
        except KeyError:
            raise FieldNotReported(
                f"{self._what} has no field {name!r} (fields: {sorted(self._fields)})"
            ) from None

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={value!r}" for key, value in self._fields.items())
        return f"Result({inner})"


def code_for(message: str, rules: Iterable[tuple[str, str]]) -> str | None:
    """The code of the first rule whose pattern matches the message, else None."""
    for pattern, code in rules:
        if re.search(pattern, message):
            return code
    return None


def refuse_arguments(tool: str, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """``NotExpressible`` for the first argument not at its default the tool cannot take."""
    for name, default in defaults.items():
        if given.get(name, default) != default:
            raise NotExpressible(f"{tool} has no argument for {name}={given[name]!r}")


def refuse_edit_fields(tool: str, edits: Iterable[Any]) -> None:
    """``NotExpressible`` for replace_all or the line/before/after hints, when unmappable."""
    for spec in edits:
        for name in ("line", "before", "after"):
            if getattr(spec, name, None) is not None:
                raise NotExpressible(f"{tool} has no argument for an edit's {name} hint")
        if getattr(spec, "replace_all", False):
            raise NotExpressible(f"{tool} has no argument for replace_all=True")


def as_text(tool: str, content: str | bytes) -> str:
    """Content for a tool that writes text only: bytes must be UTF-8."""
    if isinstance(content, str):
        return content
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise NotExpressible(f"{tool} writes text only; these bytes are not UTF-8") from None


def inside(root: Path, path: str) -> str:
    """``path`` as the tool's caller gives it: relative paths under the root, absolute as is."""
    return path if Path(path).is_absolute() else str(root / path)


def relative(root: Path, path: str) -> str:
    """An absolute path the tool reported, relative to the root when it is inside."""
    for base in {str(root), str(root.resolve())}:
        if path == base:
            return "."
        if path.startswith(base.rstrip("/") + "/"):
            return path[len(base.rstrip("/")) + 1 :]
    return path
