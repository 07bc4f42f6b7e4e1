"""The request guard of ``editspec serve`` (``spec/_jsonrpc_guard.py``), branch by branch.

Each minimal input the SDK's transport drops without an answer has its own test here
(and, end to end against a server, in ``test_serve_fuzz.py``).
"""

from __future__ import annotations

import io
import json

import anyio
import pytest

from editspec.spec import _guarded_stdio
from editspec.spec._jsonrpc_guard import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Accepted,
    Rejected,
    check_message,
    check_parsed,
    error_response,
    excerpt,
    valid_id,
)

PING = b'{"jsonrpc":"2.0","id":7,"method":"ping"}'


def _rejected(raw: bytes | str, code: int, **options: int) -> Rejected:
    verdict = check_message(raw, **options)
    assert isinstance(verdict, Rejected), verdict
    assert verdict.code == code, verdict.response
    json.loads(verdict.line())  # always a line of strict JSON
    assert verdict.line().isascii()
    return verdict


def test_a_valid_request_is_accepted() -> None:
    verdict = check_message(PING)
    assert verdict == Accepted({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    assert isinstance(check_message(PING.decode()), Accepted)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"a\x01b"}}',  # control char
        b'{"jsonrpc":"2.0","id":01,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":0x10,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":NaN}}',
        b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":-Infinity}}',
        b'{"jsonrpc":"2.0","id":7,"method":"ping"} trailing',
        b'{"jsonrpc":"2.0","id":1' + b"0" * 5000 + b',"method":"ping"}',  # past 4300 digits
        b"\xff\xfe",
        b"",
        b"   ",
        b"[" * 100_000 + b"]" * 100_000,  # deeper than the parser goes
    ],
    ids=[
        "control-char",
        "leading-zero",
        "hex",
        "nan",
        "infinity",
        "trailing-data",
        "huge-integer",
        "not-utf8",
        "empty",
        "blank",
        "recursion",
    ],
)
def test_parse_errors(raw: bytes) -> None:
    verdict = _rejected(raw, PARSE_ERROR)
    assert verdict.response["id"] is None


def test_too_large_is_refused_before_parsing() -> None:
    verdict = _rejected(PING, PARSE_ERROR, max_bytes=10)
    assert verdict.response["error"]["data"] == {"max_bytes": 10}
    _rejected(PING.decode(), PARSE_ERROR, max_bytes=10)


@pytest.mark.parametrize(
    ("message", "answered_id"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"\\ud800"}}', 7),
        ('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"\\udfff":1}}', 7),
        ('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":' + "[" * 80 + "]" * 80 + "}}", 7),
        ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', None),
        ('{"jsonrpc":"2.0","id":null,"method":"ping"}', None),
        ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None),
        ('{"jsonrpc":"2.0","id":"' + "i" * 2000 + '","method":"ping"}', None),
        ('{"jsonrpc":"2.0","id":' + str(2**64) + ',"method":"ping"}', None),
        ('{"id":7,"method":"ping"}', 7),
        ('{"jsonrpc":"1.0","id":7,"method":"ping"}', 7),
        ('{"jsonrpc":"2.0","id":7,"method":5}', 7),
        ('{"jsonrpc":"2.0","id":7,"method":"ping","params":5}', 7),
        ('{"jsonrpc":"2.0","id":7,"method":"ping","params":[1]}', 7),
        ('{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}', 7),
        ('{"jsonrpc":"2.0"}', None),
        ('{"jsonrpc":"2.0","id":7}', 7),
        ('{"jsonrpc":"2.0","id":7,"result":{},"error":{}}', 7),
        ('{"jsonrpc":"2.0","id":7,"error":5}', 7),
        ('[{"jsonrpc":"2.0","id":7,"method":"ping"}]', None),
        ("[]", None),
        ("5", None),
        ('"ping"', None),
        ("null", None),
    ],
)
def test_invalid_requests(message: str, answered_id: object) -> None:
    verdict = _rejected(message, INVALID_REQUEST)
    assert verdict.response["id"] == answered_id


@pytest.mark.parametrize(
    "message",
    [
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":"abc","method":"ping","params":{}}',
        '{"jsonrpc":"2.0","id":3,"result":{}}',
        '{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}',
        '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
        '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":"\\udc80\\ud83d\\ude00"}}',
    ],
)
def test_accepted_messages(message: str) -> None:
    verdict = check_message(message)
    # A surrogate pair is one character once decoded; "\udc80" alone is not.
    if "\\udc80" in message:
        assert isinstance(verdict, Rejected)
    else:
        assert isinstance(verdict, Accepted), verdict


def test_error_answers_quote_bounded_excerpts() -> None:
    verdict = _rejected('{"jsonrpc":"2.0","id":"' + "x" * 1_000_000 + '\\ud800"}', INVALID_REQUEST)
    assert len(verdict.line()) < 1000
    verdict = _rejected("[" + "1," * 100_000 + "1", PARSE_ERROR)
    assert len(verdict.line()) < 1000
    assert excerpt("abc") == "abc"
    assert excerpt("x" * 200).endswith("(200 characters)")
    assert excerpt(5) == "5"
    assert check_parsed([]) == check_parsed([1])  # one answer for every batch


def test_error_response_and_ids() -> None:
    assert error_response(True, -1, "m")["id"] is None
    assert error_response("a", -1, "m", x=1)["error"] == {
        "code": -1,
        "message": "m",
        "data": {"x": 1},
    }
    assert valid_id(0) and valid_id("") and not valid_id(False) and not valid_id(2.0)


# -- the stdio transport's line reader --------------------------------------------------


class _Sink(io.BytesIO):
    pass


def _serve_lines(data: bytes, max_bytes: int) -> tuple[list[str], list[dict[str, object]]]:
    """What GuardedInput hands on, and what it answers itself."""
    sink = _Sink()
    output = _guarded_stdio.WireOutput(sink)
    source = _guarded_stdio.GuardedInput(io.BytesIO(data), output, max_bytes=max_bytes)

    async def collect() -> list[str]:
        return [line async for line in source]

    passed = anyio.run(collect)
    answers = [json.loads(line) for line in sink.getvalue().splitlines()]
    return passed, answers


def test_guarded_input_hands_on_good_lines_and_answers_the_rest() -> None:
    data = PING + b"\n" + b"x" * 300 + b"\n" + b"{bad\n" + PING + b"\r\n" + PING
    passed, answers = _serve_lines(data, max_bytes=200)
    assert passed == [PING.decode(), PING.decode() + "\r", PING.decode()]
    assert [a["error"]["code"] for a in answers] == [PARSE_ERROR, PARSE_ERROR]
    assert "300 bytes" in answers[0]["error"]["message"]


def test_guarded_input_skips_an_unterminated_long_line() -> None:
    passed, answers = _serve_lines(b"y" * 500, max_bytes=100)
    assert passed == []
    assert "500 bytes" in answers[0]["error"]["message"]


def test_guarded_input_answers_what_the_sdk_model_refuses() -> None:
    pytest.importorskip("mcp_types")
    # Valid JSON-RPC for the guard, but not an MCP error object (code must be an integer).
    odd = b'{"jsonrpc":"2.0","id":9,"error":{"code":"x","message":"m"}}'
    passed, answers = _serve_lines(odd + b"\n", max_bytes=1000)
    assert passed == []
    assert answers[0]["id"] == 9 and answers[0]["error"]["code"] == INVALID_REQUEST


def test_wire_output_writes_whole_lines() -> None:
    sink = _Sink()
    output = _guarded_stdio.WireOutput(sink)

    async def write() -> None:
        await output.write('{"a":"\\u00e9"}\n')
        await output.flush()
        await output.write_line("{}")

    anyio.run(write)
    assert sink.getvalue() == b'{"a":"\\u00e9"}\n{}\n'
