"""Targets and scenarios for ``strace_kill``: an MCP server command as a ``ProcessTarget``
(``mcp_target``), and the standard operations a server is killed in (``patch_scenario``,
``replace_scenario``; ``files`` builds their trees).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from editspec.fault_injection import trees

#: System calls worth a kill, grouped by what they do. ``?`` lets strace skip a name the
#: architecture does not have (aarch64 has no plain ``rename``).


Operation = Callable[[Any], object]  # given the MCP driver (``McpDriver``)


@attrs.frozen(kw_only=True)
class ProcessTarget:
    """An MCP server to kill: its command (with ``{root}``/``{state_dir}``), map, calls.

    ``attach``: start the server plainly and attach strace (``-p``, all threads) once
    ``prepare`` is done, so counting starts at the operation. For servers whose threads
    make many of the traced calls while starting (Node's libuv pool reads modules and
    signals an eventfd with ``write`` after each task): started under strace, nearly
    every ``when=N`` would kill them before the operation. Needs ptrace attach rights.
    """

    name: str
    command: tuple[str, ...]
    server_map: Any  # editspec.contract.drivers._mcp_map.ServerMap
    syscalls: tuple[str, ...]
    attach: bool = False


@attrs.frozen(kw_only=True)
class ProcessScenario:
    """An initial tree, calls that prepare (same server), and the operation to crash."""

    name: str
    initial: trees.Tree
    operation: Operation
    prepare: Operation | None = None


def mcp_target(
    command: str | Sequence[str],
    server_map: Any,
    syscalls: Sequence[str],
    *,
    name: str | None = None,
    attach: bool = False,
) -> ProcessTarget:
    """The target for an MCP server command line (a string is split as a shell would)."""
    words = tuple(shlex.split(command) if isinstance(command, str) else command)
    label = name or getattr(server_map, "name", "") or os.path.basename(words[0])
    return ProcessTarget(
        name=label, command=words, server_map=server_map, syscalls=tuple(syscalls), attach=attach
    )


def patch_scenario(count: int) -> ProcessScenario:
    """One patch that updates ``count`` files (some in a subdirectory), each read first."""
    names = [f"pkg/mod{n}.py" if n % 2 else f"mod{n}.py" for n in range(count)]
    initial = {
        name: f"# {name}\nVALUE = {n}\n\ndef f():\n    return VALUE\n"
        for n, name in enumerate(names)
    }
    patch = (
        "*** Begin Patch\n"
        + "".join(
            f"*** Update File: {name}\n@@\n # {name}\n-VALUE = {n}\n+VALUE = {n * 10 + 1}\n"
            for n, name in enumerate(names)
        )
        + "*** End Patch\n"
    )

    def prepare(driver: Any) -> None:
        session = driver.open_session("s1")
        for name in names:
            session.read(name)

    def operation(driver: Any) -> None:
        driver.open_session("s1").apply_patch(patch)

    return ProcessScenario(
        name=f"{count}-file patch", initial=files(initial), prepare=prepare, operation=operation
    )


def replace_scenario(path: str, old: str, new: str) -> ProcessScenario:
    """``write`` over an existing file, read first."""

    def prepare(driver: Any) -> None:
        driver.open_session("s1").read(path)

    def operation(driver: Any) -> None:
        driver.open_session("s1").write(path, new)

    return ProcessScenario(
        name=f"write over {path} ({len(old)} -> {len(new)} bytes)",
        initial=files({path: old}),
        prepare=prepare,
        operation=operation,
    )


def files(contents: Mapping[str, bytes | str], mode: int | None = 0o644) -> trees.Tree:
    """A tree of regular files (``str`` as UTF-8)."""
    return {
        path: trees.Entry.file(data.encode("utf-8") if isinstance(data, str) else data, mode)
        for path, data in contents.items()
    }
