"""Codex CLI's ``apply_patch`` (``@openai/codex``) behind the driver contract.

    editspec check --driver editspec.spec.peers.drivers.codex_apply_patch:factory

The npm package ships one native executable (``@openai/codex-<platform>``'s
``vendor/<target triple>/bin/codex``; ``bin/codex.js`` finds it the same way). When it is
started with ``argv[0]`` named ``apply_patch`` it runs nothing but the patch tool
(``codex-rs/arg0``: ``arg0_dispatch`` calls ``codex_apply_patch::main()``): the patch is its
one argument, paths are resolved against its working directory, it prints ``Success.
Updated the following files:`` and one ``A``/``M``/``D`` line per file, or an error on
stderr and exit 1. Codex itself runs the same code for the model's ``apply_patch`` calls
(``codex --codex-run-as-apply-patch PATCH``, under its sandbox); this driver starts the
executable exactly under that arg0, in the clause's root, once per call.

It has the patch tool only: no read, write or edit tool, no read records, hashes,
journals or snapshots, and no confinement of its own (in Codex the sandbox confines it,
not the tool). So the only capability declared is ``apply_patch``. Its answer names each
file and a letter; the changes are reported with those (``path``, ``op``) and nothing else.
"""

from __future__ import annotations

import errno
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from editspec.spec.peers.drivers._common import NotExpressible, Result, ToolRefused, code_for

TOOL = "Codex CLI apply_patch"
PEER = "codex-apply-patch"
# The native package and target triple per platform, as bin/codex.js chooses them.
_TARGETS = {
    ("linux", "x86_64"): ("@openai/codex-linux-x64", "x86_64-unknown-linux-musl"),
    ("linux", "aarch64"): ("@openai/codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("darwin", "x86_64"): ("@openai/codex-darwin-x64", "x86_64-apple-darwin"),
    ("darwin", "arm64"): ("@openai/codex-darwin-arm64", "aarch64-apple-darwin"),
}
# Its messages (codex-rs/apply-patch), first match wins.
RULES = (
    (r"^Invalid patch|^Invalid patch hunk|is not a valid hunk header", "PATCH_SYNTAX"),
    (r"Failed to find expected lines|Failed to find context", "NO_MATCH"),
    (r"No such file or directory", "NOT_FOUND"),
    (r"Is a directory", "IS_A_DIRECTORY"),
    (r"File exists", "ALREADY_EXISTS"),
)
_OPS = {"A": "add", "M": "update", "D": "delete"}
_TIMEOUT = 60.0


def executable(prefix: Path) -> Path:
    """The native ``codex`` inside an npm prefix (``bin/codex.js``'s lookup)."""
    key = (sys.platform if sys.platform != "linux" else "linux", platform.machine())
    if key not in _TARGETS:
        raise RuntimeError(f"{TOOL}: no native package for {key}")
    package, triple = _TARGETS[key]
    for vendor in (
        prefix / "node_modules" / package / "vendor",
        prefix / "node_modules" / "@openai" / "codex" / "vendor",
    ):
        found = vendor / triple / "bin" / "codex"
        if found.is_file():
            return found
    raise RuntimeError(f"{TOOL}: {package} is not installed under {prefix}")


def _installed_executable() -> Path:
    from editspec.spec.peers.catalog import cache_dir, load_catalog

    peer = load_catalog()[PEER]
    return executable(peer.prefix(cache_dir()))


def changes_from(stdout: str) -> tuple[Result, ...]:
    """The files of its success summary (``A path``, ``M path``, ``D path``)."""
    found = []
    for line in stdout.splitlines():
        letter, _, path = line.partition(" ")
        if letter in _OPS and path:
            found.append(Result(f"a change reported by {TOOL}", path=path, op=_OPS[letter]))
    return tuple(found)


class CodexPatchSession:
    def __init__(self, binary: Path, root: Path, home: Path) -> None:
        self.binary = binary
        self.root = root
        self.home = home

    def apply_patch(self, patch: str, *, message_id: str | None = None) -> Result:
        if message_id is not None:
            raise NotExpressible(f"{TOOL} has no message id (no snapshots)")
        if "\0" in patch:
            raise NotExpressible(f"{TOOL} takes the patch as an argument: it cannot hold NUL")
        try:
            patch.encode("utf-8")
        except UnicodeEncodeError:
            raise NotExpressible(f"{TOOL} takes a UTF-8 argument only") from None
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)}
        try:
            done = subprocess.run(
                ["apply_patch", patch],
                executable=self.binary,
                cwd=self.root,
                env=env,
                capture_output=True,
                text=True,
                timeout=_TIMEOUT,
            )
        except OSError as exc:
            if exc.errno != errno.E2BIG:
                raise
            # Codex passes the patch the same way (one argv word): it cannot take this one.
            raise ToolRefused(f"the patch does not fit in one argument: {exc}", None) from None
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
            raise ToolRefused(message, code_for(message, RULES))
        return Result(f"the patch result of {TOOL}", changes=changes_from(done.stdout))

    def __getattr__(self, name: str) -> Any:
        if name in ("read", "write", "edit", "glob", "grep", "list_directory", "rewind",
                    "edit_notebook"):  # fmt: skip

            def unsupported(*_: Any, **__: Any) -> Any:
                raise NotExpressible(f"{TOOL} is a patch tool only: it has no {name}")

            return unsupported
        raise AttributeError(name)


class CodexPatchDriver:
    name = "codex-apply-patch"
    capabilities = frozenset({"apply_patch"})

    def __init__(self, root: Path, state_dir: Path, binary: Path) -> None:
        self.root = root
        self.home = state_dir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.binary = binary

    def open_session(self, session_id: str) -> CodexPatchSession:
        return CodexPatchSession(self.binary, self.root, self.home)

    def recover(self) -> None:
        return None

    def close(self) -> None:
        return None


def factory(root: Path, state_dir: Path) -> CodexPatchDriver:
    """Codex's native executable run as ``apply_patch`` in the root, one process per call."""
    return CodexPatchDriver(root, state_dir, _installed_executable())
