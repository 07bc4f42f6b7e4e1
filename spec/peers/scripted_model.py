"""A scripted model on loopback: an agent CLI's file tools driven without a real model.

The CLI's model endpoint (its base-URL setting) points at this server. The server speaks the
CLI's model API (a ``Dialect``: the request and streaming-response format, and how a tool
call and its result are written), and answers each turn of the CLI's agent loop with what
the driver scripted:

1. the driver queues one tool call (``call(name, input)``) and sends the CLI a user
   message (its own stdin protocol, not this module's business);
2. the CLI's next model request gets that tool call as the answer;
3. the CLI runs its own tool and sends the result in its following request; the server
   hands that result to the driver and ends the turn with a short text.

Requests that are not the agent loop's (a title, a token count, a quota probe) get a short
text answer. The server binds 127.0.0.1 only, and ``endpoint`` is what the CLI is given; the
driver refuses to start a CLI whose endpoint is not this loopback address.
"""

from __future__ import annotations

import json
import queue
import secrets
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

LOOPBACK = "127.0.0.1"


@attrs.frozen(kw_only=True)
class ToolOutcome:
    """What the CLI sent back for a scripted tool call: its text, and whether it is an error."""

    text: str
    is_error: bool
    raw: Any = None


class Dialect:
    """One model API: how a request is read and a streamed answer written."""

    name = "abstract"

    def tool_results(self, request: Mapping[str, Any]) -> dict[str, ToolOutcome]:
        """The tool results of the request's last message, by tool-call id."""
        raise NotImplementedError

    def is_agent_turn(self, request: Mapping[str, Any], tools: frozenset[str]) -> bool:
        """Whether the request is the agent loop's (it offers the scripted tools)."""
        raise NotImplementedError

    def stream(self, request: Mapping[str, Any], answer: Mapping[str, Any]) -> Iterator[bytes]:
        """The streamed answer: ``{"text": ...}`` or ``{"tool": name, "input": ..., "id": ...}``."""
        raise NotImplementedError

    def plain(self, request: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
        """The same answer unstreamed."""
        raise NotImplementedError


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class AnthropicMessages(Dialect):
    """The Anthropic Messages API (``POST /v1/messages``), streamed as server-sent events."""

    name = "anthropic-messages"

    def tool_results(self, request: Mapping[str, Any]) -> dict[str, ToolOutcome]:
        messages = request.get("messages") or []
        if not messages or messages[-1].get("role") != "user":
            return {}
        content = messages[-1].get("content")
        found = {}
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    # the CLI's own notes ride along as parts of their own: not the tool's
                    text = "\n".join(
                        part.get("text", "")
                        for part in inner
                        if isinstance(part, dict)
                        and not part.get("text", "").lstrip().startswith("<system-reminder>")
                    )
                else:
                    text = str(inner or "")
                found[str(block.get("tool_use_id"))] = ToolOutcome(
                    text=text, is_error=bool(block.get("is_error")), raw=block
                )
        return found

    def is_agent_turn(self, request: Mapping[str, Any], tools: frozenset[str]) -> bool:
        offered = {
            tool.get("name") for tool in request.get("tools") or [] if isinstance(tool, dict)
        }
        return bool(tools & offered)

    def _blocks(self, answer: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        if "tool" in answer:
            block = {"type": "tool_use", "id": answer["id"], "name": answer["tool"],
                     "input": answer["input"]}  # fmt: skip
            return block, "tool_use"
        return {"type": "text", "text": answer["text"]}, "end_turn"

    def _message(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "id": f"msg_{secrets.token_hex(8)}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "scripted"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }

    def stream(self, request: Mapping[str, Any], answer: Mapping[str, Any]) -> Iterator[bytes]:
        block, stop = self._blocks(answer)
        yield _sse("message_start", {"type": "message_start", "message": self._message(request)})
        if block["type"] == "tool_use":
            start = {"type": "content_block_start", "index": 0,
                     "content_block": {**block, "input": {}}}  # fmt: skip
            yield _sse("content_block_start", start)
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            yield _sse("content_block_start", {"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}})  # fmt: skip
            delta = {"type": "text_delta", "text": block["text"]}
        yield _sse(
            "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield _sse("message_delta", {"type": "message_delta", "usage": {"output_tokens": 1},
                   "delta": {"stop_reason": stop, "stop_sequence": None}})  # fmt: skip
        yield _sse("message_stop", {"type": "message_stop"})

    def plain(self, request: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
        block, stop = self._blocks(answer)
        return {**self._message(request), "content": [block], "stop_reason": stop}


class ScriptedModel:
    """The loopback server: queue a tool call, get back what the CLI's tool answered."""

    def __init__(self, dialect: Dialect, tools: frozenset[str]) -> None:
        self.dialect = dialect
        self.tools = tools
        self._pending: queue.Queue[dict[str, Any]] = queue.Queue()
        self._outcomes: queue.Queue[ToolOutcome] = queue.Queue()
        self.requests: list[str] = []  # the paths asked for, for the record
        self._server = ThreadingHTTPServer((LOOPBACK, 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def call(self, tool: str, tool_input: Mapping[str, Any]) -> None:
        """Script the next agent turn: the model asks for this tool call."""
        call_id = f"toolu_{secrets.token_hex(10)}"
        self._pending.put({"tool": tool, "input": dict(tool_input), "id": call_id})

    def outcome(self, timeout: float) -> ToolOutcome:
        """The result of the scripted call, as the CLI sent it (queue.Empty on timeout)."""
        return self._outcomes.get(timeout=timeout)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to one model request (the agent loop's, or any other)."""
        if not self.dialect.is_agent_turn(request, self.tools):
            return {"text": "ok"}
        results = self.dialect.tool_results(request)
        if results:
            for outcome in results.values():
                self._outcomes.put(outcome)
            return {"text": "done"}
        try:
            return self._pending.get_nowait()
        except queue.Empty:
            return {"text": "done"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                model.requests.append(f"GET {self.path}")
                self._json({})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                model.requests.append(f"POST {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    request = {}
                if "count_tokens" in self.path:
                    self._json({"input_tokens": 1})
                    return
                answer = model.answer(request)
                if request.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in model.dialect.stream(request, answer):
                        self.wfile.write(chunk)
                    self.wfile.flush()
                    self.close_connection = True
                else:
                    self._json(model.dialect.plain(request, answer))

            def _json(self, data: Any) -> None:
                body = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
