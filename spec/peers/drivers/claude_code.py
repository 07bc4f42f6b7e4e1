"""Claude Code's own file tools (``@anthropic-ai/claude-code``) behind the driver contract.

    editspec check --driver editspec.spec.peers.drivers.claude_code:factory

Claude Code has no API for its tools, so they are reached through its agent loop with a
scripted model (``editspec.spec.peers.scripted_model``): each contract session is one
``claude -p --input-format stream-json`` process in the clause root, whose model endpoint
(``ANTHROPIC_BASE_URL``, a dummy key) is a loopback server speaking the Anthropic Messages
API. A contract call sends the CLI one user message; the model's answer is the tool call
(``Read``, ``Write`` or ``Edit`` with the arguments of its own schema, absolute paths as
the tool asks); the CLI runs its tool and sends the result in its next request, which the
server hands back here, then ends the turn. The process keeps its own state between calls,
so its read records (``Write``/``Edit`` refuse a file not read first) and its check that
the file did not change since it was read are the CLI's own.

Started with ``--permission-mode acceptEdits`` (file edits in the working directory run
without a prompt; in print mode anything else that needs a permission is denied) and
``--tools Read,Edit,Write``; ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` and the
telemetry, error-reporting and auto-update switches off; ``HOME`` in the clause's state
directory and no inherited ``ANTHROPIC_*`` or proxy variable. The driver refuses to start
the CLI unless its endpoint is the loopback server.

What comes back is the text the model would see: a read is ``cat -n`` style lines
(``N<TAB>text``), turned back into the text they number; writes and edits answer a sentence.
No hashes, sizes, encodings or diffs are reported (those fields are missing), there is no
``expected_sha256``, no byte range, no session id other than the process itself, no
patches, journals or snapshots.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from editspec.spec.peers.drivers._common import (
    NotExpressible,
    Result,
    ToolRefused,
    as_text,
    code_for,
    inside,
    refuse_arguments,
)
from editspec.spec.peers.scripted_model import LOOPBACK, AnthropicMessages, ScriptedModel

TOOL = "Claude Code"
PEER = "claude-code"
MODEL = "claude-sonnet-4-5"
TOOLS = frozenset({"Read", "Edit", "Write"})
# Its tool errors (the text inside <tool_use_error>), first match wins.
RULES = (
    (r"has not been read yet|Read it first", "NOT_READ"),
    (r"modified since read|has been modified", "STALE"),
    (r"String to replace not found", "NO_MATCH"),
    (r"Found \d+ matches of the string to replace", "AMBIGUOUS"),
    (r"No changes to make|exactly the same", "NO_CHANGE"),
    (r"already exists", "ALREADY_EXISTS"),
    (r"File does not exist|no such file|ENOENT", "NOT_FOUND"),
    (r"is a directory|EISDIR|directory, not a file", "IS_A_DIRECTORY"),
    (r"binary file|cannot read binary", "BINARY"),
    (r"exceeds maximum allowed|too large", "TOO_LARGE"),
    (
        r"haven't granted it yet|outside (of )?the (allowed )?working director|denied",
        "OUTSIDE_WORKSPACE",
    ),
    (r"Jupyter Notebook|NotebookEdit", "UNSUPPORTED"),
    (r"InputValidationError|Invalid input|cannot contain null bytes", "INVALID_ARGUMENT"),
    (r"file_path has \d+ characters, and \w+ takes at most \d+", "INVALID_ARGUMENT"),
)
_REMINDER = re.compile(r"\n*<system-reminder>.*?</system-reminder>\n*", re.DOTALL)
_ERROR = re.compile(r"<tool_use_error>(.*?)</tool_use_error>", re.DOTALL)
# "N<TAB>text"; an empty last line may come as the bare number (trailing whitespace trimmed)
_NUMBERED = re.compile(r"^\s*(\d+)(?:\t(.*))?$")
_TURN_TIMEOUT = 120.0


class HarnessError(RuntimeError):
    """The CLI could not be driven (it exited, or a turn did not come back): ERROR, not a
    verdict on its file tools."""

    suite_error = True


def executable(prefix: Path) -> Path:
    """The native ``claude`` of an npm prefix (the package's ``bin/claude.exe``)."""
    found = prefix / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
    if not found.is_file():
        raise RuntimeError(f"{TOOL}: not installed under {prefix}")
    return found


def cli_environment(endpoint: str, home: Path) -> dict[str, str]:
    """The CLI's whole environment: the loopback endpoint, a dummy key, traffic off."""
    if urlparse(endpoint).hostname != LOOPBACK:
        raise RuntimeError(
            f"refusing to start {TOOL}: its model endpoint {endpoint} is not loopback"
        )
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": endpoint,
        "ANTHROPIC_API_KEY": "sk-ant-editspec-offline",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    }


def cli_command(binary: Path) -> list[str]:
    return [str(binary), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
            "--verbose", "--permission-mode", "acceptEdits", "--tools", ",".join(sorted(TOOLS)),
            "--model", MODEL]  # fmt: skip


def numbered_text(text: str) -> str | None:
    """The text of ``cat -n`` style lines (``N<TAB>line``), or None when it is not that."""
    lines = text.split("\n")
    content = []
    for line in lines:
        found = _NUMBERED.match(line)
        if found is None:
            return None
        content.append(found.group(2) or "")
    return "\n".join(content)


class ClaudeSession:
    """One CLI process (its conversation is the session) and its scripted model."""

    def __init__(self, binary: Path, root: Path, home: Path) -> None:
        self.root = root
        self.model = ScriptedModel(AnthropicMessages(), TOOLS)
        self._lock = threading.Lock()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the session
        self.process = subprocess.Popen(
            cli_command(binary),
            cwd=root,
            env=cli_environment(self.model.endpoint, home),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )
        self._output: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._drain, daemon=True).start()
        try:
            self._started()
        except HarnessError:
            self.close()
            raise

    def _started(self) -> None:
        """Wait until the CLI has started: one turn the model answers with text only.

        The CLI's start (seconds on a loaded machine) belongs to opening the session, not
        to the first contract call: a clause that times a call (LOCK-008: another session
        edits "promptly") or races calls of several sessions (LOCK-006) would otherwise
        time the start-up, or see calls spread over the sessions' start-ups.
        """
        with self._lock:
            self._send("editspec: session start")
            self._wait_for_result_line()
        if self.process.poll() is not None:
            raise HarnessError(f"{TOOL} exited ({self.process.returncode}) while starting")

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._output.put(line)
        self._output.put(None)

    def close(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.model.close()
        self._stderr.close()

    def _turn(self, tool: str, arguments: dict[str, Any]) -> str:
        """One agent turn: the model calls ``tool``; the CLI's tool result comes back."""
        with self._lock:
            if self.process.poll() is not None:
                raise HarnessError(f"{TOOL} exited ({self.process.returncode})")
            self.model.call(tool, arguments)
            self._send("editspec: next tool call")
            try:
                outcome = self.model.outcome(_TURN_TIMEOUT)
            except queue.Empty:
                raise HarnessError(
                    f"{TOOL} sent no tool result within {_TURN_TIMEOUT:g} s"
                ) from None
            self._wait_for_result_line()
        text = _REMINDER.sub("", outcome.text)
        if outcome.is_error:
            found = _ERROR.search(text)
            message_text = (found.group(1) if found else text).strip()
            raise ToolRefused(message_text, code_for(message_text, RULES))
        return text

    def _send(self, text: str) -> None:
        """One user message on the CLI's stdin (stream-json)."""
        message = {"type": "user", "message": {"role": "user", "content": text}}
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise HarnessError(f"{TOOL} does not take input: {exc}") from None

    def _wait_for_result_line(self) -> None:
        """The CLI's end-of-turn line, so the next turn starts on a quiet process."""
        while True:
            try:
                line = self._output.get(timeout=_TURN_TIMEOUT)
            except queue.Empty:
                raise HarnessError(f"{TOOL} did not end its turn") from None
            if line is None:
                return
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "result":
                return

    def read(
        self,
        path: str,
        *,
        start_line: int | None = None,
        end_line: int | None = None,
        start_byte: int | None = None,
        max_bytes: int | None = None,
        encoding: str = "auto",
    ) -> Result:
        refuse_arguments(f"{TOOL} Read", {"start_byte": start_byte, "max_bytes": max_bytes,
                         "encoding": encoding}, {"start_byte": None, "max_bytes": None,
                         "encoding": "auto"})  # fmt: skip
        arguments: dict[str, Any] = {"file_path": inside(self.root, path)}
        if start_line is not None or end_line is not None:
            first = start_line if start_line is not None else 1
            arguments["offset"] = first
            if end_line is not None:
                if end_line < first:
                    raise NotExpressible(
                        f"{TOOL} Read has no way to ask for lines {first}-{end_line}"
                    )
                arguments["limit"] = end_line - first + 1
        text = self._turn("Read", arguments)
        content = numbered_text(text)
        return Result(f"the read result of {TOOL} (Read)", path=path,
                      content=content if content is not None else text)  # fmt: skip

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Result:
        refuse_arguments(f"{TOOL} Write", {"expected_sha256": expected_sha256,
                         "message_id": message_id}, {"expected_sha256": None,
                         "message_id": None})  # fmt: skip
        arguments = {"file_path": inside(self.root, path), "content": as_text(TOOL, content)}
        message = self._turn("Write", arguments)
        return Result(f"the write result of {TOOL} (Write)", path=path, message=message)

    def edit(
        self,
        path: str,
        edits: Sequence[Any],
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> Result:
        refuse_arguments(f"{TOOL} Edit", {"expected_sha256": expected_sha256,
                         "message_id": message_id}, {"expected_sha256": None,
                         "message_id": None})  # fmt: skip
        if len(edits) != 1:
            raise NotExpressible(f"{TOOL} Edit takes one edit per call, not {len(edits)}")
        spec = edits[0]
        for name in ("line", "before", "after"):
            if getattr(spec, name, None) is not None:
                raise NotExpressible(f"{TOOL} Edit has no argument for an edit's {name} hint")
        arguments = {"file_path": inside(self.root, path), "old_string": spec.old_string,
                     "new_string": spec.new_string,
                     "replace_all": bool(getattr(spec, "replace_all", False))}  # fmt: skip
        message = self._turn("Edit", arguments)
        return Result(f"the edit result of {TOOL} (Edit)", path=path, message=message)

    def __getattr__(self, name: str) -> Any:
        if name in ("apply_patch", "glob", "grep", "list_directory", "rewind", "edit_notebook"):

            def unsupported(*_: Any, **__: Any) -> Any:
                raise NotExpressible(f"{TOOL}'s driver maps Read, Write and Edit only: no {name}")

            return unsupported
        raise AttributeError(name)


class ClaudeCodeDriver:
    name = "claude-code"
    capabilities = frozenset(
        {"read", "write", "edit", "confinement", "read_before_write", "stale_detection"}
    )

    def __init__(self, root: Path, state_dir: Path, binary: Path) -> None:
        self.root = root
        self.home = state_dir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.binary = binary
        self.sessions: list[ClaudeSession] = []

    def open_session(self, session_id: str) -> ClaudeSession:
        session = ClaudeSession(self.binary, self.root, self.home)
        self.sessions.append(session)
        return session

    def recover(self) -> None:
        return None

    def close(self) -> None:
        for session in self.sessions:
            session.close()
        self.sessions.clear()


def factory(root: Path, state_dir: Path) -> ClaudeCodeDriver:
    """Claude Code's Read, Write and Edit, one CLI process per session, a scripted model."""
    from editspec.spec.peers.catalog import cache_dir, load_catalog

    binary = executable(load_catalog()[PEER].prefix(cache_dir()))
    return ClaudeCodeDriver(root, state_dir, binary)
