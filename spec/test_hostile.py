"""Hostile input: refusals typed, answers bounded, no hang (PATH-060..069, LIMIT-030..049).

What any implementation owes a careless or hostile caller, whatever its limits are: a
path it cannot encode for the file system is refused with a code, not a crash; a path
far beyond PATH_MAX is refused quickly and leaves nothing behind; an error never repeats
a runaway input in full; a pattern that backtracks catastrophically does not hang the
tool. The bounds themselves (how long a pattern may be) are the implementation's.
"""

from __future__ import annotations

import os
import stat

import pytest

from editspec.spec import MUST, clause, raises_code, within
from editspec.spec._raw_stdio import RawServer

ERROR_TEXT_BOUND = 64 * 1024
"""An error's text may quote an input, but not beyond this many characters."""


@clause(
    "PATH-060",
    MUST,
    requires={"read", "write"},
    text="A path holding a lone surrogate (a string that is not Unicode text, so it cannot be "
    "encoded for the file system) is refused by read and write with INVALID_ARGUMENT, and "
    "nothing is created.",
    rationale="Such a string reaches an in-process tool from decoded JSON or a careless "
    "caller; encoding it with a replacement character writes a different file, and letting "
    "the encoder raise gives an untyped crash. (It needs a Python caller: the MCP SDK cannot "
    "send such a string, so over MCP the clause is UNSUPPORTED.)",
)
def test_unencodable_path_is_refused(session, disk):
    disk.write("a.txt", "inside\n")
    assert session.read("a.txt").content == "inside\n"  # positive control
    session.write("new.txt", "x\n")
    assert disk.read("new.txt") == b"x\n"
    before = disk.snapshot()
    for path in ("\ud800", "x\udbffy.txt", "sub/\ud83d.txt"):
        with raises_code("INVALID_ARGUMENT"):
            session.read(path)
        with raises_code("INVALID_ARGUMENT"):
            session.write(path, "y\n")
    disk.assert_unchanged(before)


@clause(
    "PATH-061",
    MUST,
    requires={"write"},
    text="A path of 1,000,000 bytes (far beyond PATH_MAX) is refused with INVALID_ARGUMENT or "
    "TOO_LARGE within 20 seconds; the error's text is at most 64 KiB, and nothing is created.",
    rationale="An error that repeats its input turned a 5 MB path into a 23 MB answer; a tool "
    "that walks such a path component by component takes seconds per call.",
)
def test_path_beyond_path_max_is_refused_briefly(session, disk):
    session.write("ok.txt", "x\n")  # positive control
    assert disk.read("ok.txt") == b"x\n"
    before = disk.snapshot()
    for path in ("p" * 1_000_000, "d/" * 500_000 + "f.txt"):
        error = within(20, lambda p=path: _refusal(session, p), what="write(a 1 MB path)")
        assert len(str(error)) <= ERROR_TEXT_BOUND, f"a {len(str(error))}-character error"
    disk.assert_unchanged(before)


def _refusal(session, path):
    with raises_code("INVALID_ARGUMENT", "TOO_LARGE") as caught:
        session.write(path, "x\n")
    return caught.exception


@clause(
    "PATH-062",
    MUST,
    requires={"write"},
    text="A write to a path 3,000 directories deep (beyond PATH_MAX) is refused within 10 "
    "seconds and leaves no directory behind.",
    rationale="Creating the missing parents one by one until the kernel says ENAMETOOLONG "
    "leaves thousands of directories in the user's tree and takes many seconds per call.",
)
def test_deep_path_leaves_no_directories(session, disk):
    session.write("sub/ok.txt", "x\n")  # positive control: parents are created
    assert disk.read("sub/ok.txt") == b"x\n"
    before = disk.snapshot()
    deep = "/".join(["d"] * 3000) + "/f.txt"

    def attempt() -> None:
        with raises_code("INVALID_ARGUMENT", "TOO_LARGE"):
            session.write(deep, "x\n")

    try:
        within(10, attempt, what="write(a path 3000 directories deep)")
        assert not disk.path("d").exists(), "directories were left behind"
        disk.assert_unchanged(before)
    finally:
        # A tool that made the tree leaves it far beyond PATH_MAX: removed here, or every
        # later clean-up of the temporary directories fails on it.
        _remove_deep(disk.path("d"))


def _remove_deep(top) -> None:
    """Remove a directory tree of any depth (names opened relative to their parent)."""
    if not os.path.lexists(top):
        return
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(top.parent, os.O_RDONLY | os.O_DIRECTORY)
    names = [top.name]
    try:
        child = os.open(top.name, flags, dir_fd=fd)
        os.close(fd)
        fd = child
        while names:
            below = None
            for entry in os.listdir(fd):
                if stat.S_ISDIR(os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode):
                    below = entry
                    break
                os.unlink(entry, dir_fd=fd)
            if below is not None:
                child = os.open(below, flags, dir_fd=fd)
                os.close(fd)
                fd = child
                names.append(below)
                continue
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)


@clause(
    "LIMIT-030",
    MUST,
    requires={"grep"},
    text="A grep with a pattern of one million characters answers within 30 seconds with a "
    "result or an error from the table, and an error's text is at most 64 KiB.",
    rationale="A 5 MB pattern took 23 s and 1.2 GB of memory, and its error quoted the "
    "pattern back in full.",
)
def test_huge_grep_pattern_is_bounded(session, disk):
    disk.write("a.txt", "needle\n")
    assert [m.line for m in session.grep("needle").matches] == [1]  # positive control
    pattern = "x" * 1_000_000 + "("  # not even a valid regex

    def attempt() -> object:
        try:
            return session.grep(pattern)
        except Exception as exc:
            assert getattr(exc, "code", None) is not None, f"an error without a code: {exc!r}"
            return exc

    outcome = within(30, attempt, what="grep(a 1 MB pattern)")
    if isinstance(outcome, Exception):
        assert len(str(outcome)) <= ERROR_TEXT_BOUND, f"a {len(str(outcome))}-character error"


@clause(
    "LIMIT-031",
    MUST,
    requires={"grep"},
    text="A grep whose pattern backtracks catastrophically ('(a+)+$' against a line of 27 "
    "a's and a b) answers within 5 seconds: with a result, or with CANCELLED, TOO_LARGE or "
    "INVALID_ARGUMENT.",
    rationale="A backtracking regex engine tries 2**25 ways to split that line; the call, and "
    "with it the server, stalls. A linear-time engine answers at once; a backtracking one "
    "must refuse the pattern or stop at its deadline.",
)
def test_catastrophic_pattern_does_not_hang(session, disk):
    disk.write("a.txt", "a" * 27 + "b\n")
    assert [m.line for m in session.grep("a+b").matches] == [1]  # positive control

    def attempt() -> None:
        try:
            session.grep(r"(a+)+$")
        except Exception as exc:
            assert getattr(exc, "code", None) in ("CANCELLED", "TOO_LARGE", "INVALID_ARGUMENT"), (
                f"expected a result, CANCELLED, TOO_LARGE or INVALID_ARGUMENT: {exc!r}"
            )

    within(5, attempt, what="grep('(a+)+$')")


_ANSWER_SECONDS = 10.0
_START_SECONDS = 120.0  # a server's start-up is not what LIMIT-032 is about
_REQUEST_LINES: tuple[tuple[str, bytes, int | None], ...] = (
    # (what it is, the line, its id when the line is JSON with a valid id; None: not JSON)
    (
        "a lone surrogate escape",
        b'{"jsonrpc":"2.0","id":11,"method":"ping","params":{"s":"\\ud800"}}',
        11,
    ),
    (
        "a raw control character",
        b'{"jsonrpc":"2.0","id":12,"method":"ping","params":{"s":"a\x01b"}}',
        None,
    ),
    ("an id written 013", b'{"jsonrpc":"2.0","id":013,"method":"ping"}', None),
    ("an id written 0x10", b'{"jsonrpc":"2.0","id":0x10,"method":"ping"}', None),
    (
        "params nested 300 deep",
        b'{"jsonrpc":"2.0","id":15,"method":"ping","params":{"x":'
        + b"[" * 300
        + b"]" * 300
        + b"}}",
        15,
    ),
    ("a truncated request", b'{"jsonrpc":"2.0","id":16,"method":"pi', None),
    ("a line that is not JSON", b"ping", None),
)


@clause(
    "LIMIT-032",
    MUST,
    requires={"process"},
    text="An MCP server over stdio answers every line that holds a request, valid or not: a "
    "request whose params hold a lone surrogate escape, params nested 300 deep, a raw "
    "control character in a string, an id written 013 or 0x10, a truncated line and a line "
    "that is not JSON each get a JSON-RPC response within 10 seconds (a line that is not "
    "JSON: error -32700 with a null id; a request whose id can be read: that id), and the "
    "server goes on answering.",
    rationale="The SDK's stdio transport drops a line it cannot parse and stays idle: the "
    "client waits forever for an answer that never comes. JSON-RPC 2.0 answers invalid JSON "
    "with a parse error (-32700, id null).",
)
def test_every_request_line_is_answered(driver_factory, editspec_base):
    root = editspec_base / "ws"
    root.mkdir(exist_ok=True)
    server = RawServer.start(driver_factory, root, editspec_base / "state")
    if server is None:
        pytest.skip("the driver declares process but names no command line to start")
    try:
        # Positive control: the handshake and a valid request are answered.
        assert server.initialize(_START_SECONDS) is not None, "initialize was not answered"
        server.request({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        control = server.answer(_ANSWER_SECONDS)
        assert isinstance(control, dict) and control.get("id") == 1 and "result" in control, (
            f"a valid ping got {control!r}"
        )
        for what, line, request_id in _REQUEST_LINES:
            server.send(line)
            answer = server.answer(_ANSWER_SECONDS)
            assert answer is not None, f"{what}: no answer within {_ANSWER_SECONDS:g} s"
            assert isinstance(answer, dict), f"{what}: answered with {answer!r}"
            if request_id is None:
                error = answer.get("error")
                assert isinstance(error, dict) and error.get("code") == -32700, (
                    f"{what}: not JSON, answered with {answer!r} (a parse error is -32700)"
                )
                assert answer.get("id") is None, f"{what}: a parse error has a null id"
            else:
                assert answer.get("id") == request_id, f"{what}: answered with {answer!r}"
        server.request({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        after = server.answer(_ANSWER_SECONDS)
        assert isinstance(after, dict) and after.get("id") == 2, f"then a ping got {after!r}"
    finally:
        server.close()
