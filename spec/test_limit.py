"""LIMIT: bounds that turn runaway input into TOO_LARGE before any work (DESIGN §3 limits).

The numbers are DESIGN's defaults (read 256 KiB; a file 10 MiB for edit and patch; a patch
1 MiB, 100 file operations, 1000 hunks, 50 000 lines; a transaction 32 MiB). That a bound
exists and that a refusal changes nothing is a MUST; the exact default numbers are SHOULDs.
"""

from __future__ import annotations

from editspec.contract import is_error_code
from editspec.reference import EditSpec
from editspec.spec import MUST, SHOULD, clause, prepare_change, raises_code, setup
from editspec.spec.fixtures import sha256

KiB = 1024
MiB = 1024 * KiB


def _prepare_whole(session, path: str, size: int, *, may_refuse: bool = False) -> None:
    """``prepare_change`` for a file above the default read limit: a full read with a
    ``max_bytes`` of exactly its size, only for a driver that needs a read before a change.

    ``may_refuse``: the file is beyond the limits, so a tool may decline to read it whole
    (a coded refusal); the change must then still be refused as TOO_LARGE.
    """
    capabilities = getattr(session, "driver_capabilities", frozenset())
    if {"read_before_write", "stale_detection"} & set(capabilities):
        with setup():
            try:
                session.read(path, max_bytes=size)
            except Exception as exc:
                if not (may_refuse and is_error_code(getattr(exc, "code", None))):
                    raise


def _control_edit(session, disk) -> None:
    """A positive control: an edit of a small file succeeds in the same session."""
    disk.write("small.txt", "small = 1\n")
    prepare_change(session, "small.txt")
    session.edit("small.txt", [EditSpec("small = 1", "small = 2")])
    assert disk.read("small.txt") == b"small = 2\n", "control: the edit of a small file"


def _control_patch(session, disk) -> None:
    """A positive control: a small patch applies in the same session."""
    session.apply_patch(_add_file_patch("control.txt", ["within every limit"]))
    assert disk.read("control.txt") == b"within every limit\n", "control: a small patch"


def _lines_file(size: int) -> str:
    """ASCII text of about ``size`` bytes, in numbered lines of 100 bytes."""
    count = max(1, size // 100)
    return "".join(f"{i:09d}{'.' * 90}\n" for i in range(count))


def _add_file_patch(path: str, body_lines: list[str]) -> str:
    return (
        "*** Begin Patch\n*** Add File: "
        + path
        + "\n"
        + "".join(f"+{line}\n" for line in body_lines)
        + "*** End Patch\n"
    )


@clause(
    "LIMIT-001",
    MUST,
    requires={"read"},
    text="A read without max_bytes of a large file (4 MiB) returns a bounded prefix with "
    "truncated=True, and sha256 and total_bytes of the whole file.",
    rationale="An unbounded read of a generated file or a log floods the agent's context and "
    "the transport.",
)
def test_default_read_is_bounded(session, disk):
    text = _lines_file(4 * MiB)
    disk.write("big.log", text)
    result = session.read("big.log")
    assert result.truncated is True
    assert 0 < len(result.content.encode()) < len(text)
    assert text.startswith(result.content)
    assert result.total_bytes == len(text)
    assert result.sha256 == sha256(text)


@clause(
    "LIMIT-002",
    SHOULD,
    requires={"read"},
    text="The default read limit is 256 KiB: a read without max_bytes returns at most 256 KiB "
    "of a larger file.",
    rationale="A predictable default lets agents plan their paging.",
)
def test_default_read_limit_is_256_kib(session, disk):
    disk.write("big.log", _lines_file(MiB))
    result = session.read("big.log")
    assert result.truncated is True
    assert len(result.content.encode()) <= 256 * KiB


@clause(
    "LIMIT-003",
    MUST,
    requires={"read"},
    text="An explicit max_bytes above the default limit is honoured: a 1 MiB file read with "
    "max_bytes of 2 MiB comes back whole.",
    rationale="The default protects careless callers; a caller that asks for more knows why.",
)
def test_explicit_max_bytes_overrides_default(session, disk):
    text = _lines_file(MiB)
    disk.write("big.log", text)
    result = session.read("big.log", max_bytes=2 * MiB)
    assert result.truncated is False
    assert result.content == text


@clause(
    "LIMIT-004",
    SHOULD,
    requires={"edit"},
    text="An edit of a file larger than 10 MiB fails with TOO_LARGE and the file is unchanged.",
    rationale="String matching over huge files is slow and their edits are almost always "
    "mistakes (generated or vendored code).",
)
def test_edit_of_huge_file_is_too_large(session, disk):
    _control_edit(session, disk)
    text = _lines_file(10 * MiB + 200)
    disk.write("huge.txt", text)
    _prepare_whole(session, "huge.txt", len(text), may_refuse=True)
    before = disk.snapshot()
    with raises_code("TOO_LARGE"):
        session.edit("huge.txt", [EditSpec("000000001", "changed")])
    disk.assert_unchanged(before)


@clause(
    "LIMIT-005",
    MUST,
    requires={"edit"},
    text="An edit of a file well below the limits (2 MiB) succeeds.",
    rationale="Limits exist for runaway input; ordinary large source files must still be editable.",
)
def test_edit_of_large_file_succeeds(session, disk):
    text = _lines_file(2 * MiB)
    disk.write("large.txt", text)
    _prepare_whole(session, "large.txt", len(text))
    session.edit("large.txt", [EditSpec("000012345", "edited!!!")])
    assert disk.read("large.txt") == text.replace("000012345", "edited!!!").encode()


@clause(
    "LIMIT-006",
    SHOULD,
    requires={"apply_patch"},
    text="A patch text larger than 1 MiB fails with TOO_LARGE and nothing changes.",
    rationale="Parsing and planning cost grows with the patch; the bound is checked first.",
)
def test_patch_text_limit(session, disk):
    _control_patch(session, disk)
    lines = ["y" * 1000] * 1100  # about 1.1 MiB
    before = disk.snapshot()
    with raises_code("TOO_LARGE"):
        session.apply_patch(_add_file_patch("big.txt", lines))
    disk.assert_unchanged(before)


@clause(
    "LIMIT-007",
    SHOULD,
    requires={"apply_patch"},
    text="A patch with more than 100 file operations fails with TOO_LARGE and nothing changes.",
    rationale="A patch touching hundreds of files is a runaway, not a change to review.",
)
def test_patch_file_count_limit(session, disk):
    _control_patch(session, disk)
    sections = "".join(f"*** Add File: f{i:03d}.txt\n+x\n" for i in range(101))
    before = disk.snapshot()
    with raises_code("TOO_LARGE"):
        session.apply_patch(f"*** Begin Patch\n{sections}*** End Patch\n")
    disk.assert_unchanged(before)


@clause(
    "LIMIT-008",
    SHOULD,
    requires={"apply_patch"},
    text="A patch of exactly 100 file operations is within the limit and succeeds.",
    rationale="An off-by-one limit rejects the largest patch the documentation promises.",
)
def test_patch_file_count_boundary(session, disk):
    sections = "".join(f"*** Add File: f{i:03d}.txt\n+x\n" for i in range(100))
    session.apply_patch(f"*** Begin Patch\n{sections}*** End Patch\n")
    assert len(disk.tree()) == 100


@clause(
    "LIMIT-009",
    SHOULD,
    requires={"apply_patch"},
    text="A patch with more than 1000 hunks fails with TOO_LARGE and nothing changes.",
    rationale="Hunk matching is the expensive part of planning; its count is bounded.",
)
def test_patch_hunk_limit(session, disk):
    _control_patch(session, disk)
    disk.write("many.txt", "".join(f"line {i}\n" for i in range(1001)))
    prepare_change(session, "many.txt")
    hunks = "".join(f"@@\n-line {i}\n+LINE {i}\n" for i in range(1001))
    before = disk.snapshot()
    with raises_code("TOO_LARGE"):
        session.apply_patch(f"*** Begin Patch\n*** Update File: many.txt\n{hunks}*** End Patch\n")
    disk.assert_unchanged(before)


@clause(
    "LIMIT-010",
    SHOULD,
    requires={"apply_patch"},
    text="A patch of more than 50 000 lines fails with TOO_LARGE and nothing changes.",
    rationale="Line count bounds the parser's work independently of the byte size.",
)
def test_patch_line_limit(session, disk):
    _control_patch(session, disk)
    before = disk.snapshot()
    with raises_code("TOO_LARGE"):
        session.apply_patch(_add_file_patch("long.txt", ["x"] * 50_001))
    disk.assert_unchanged(before)


@clause(
    "LIMIT-011",
    SHOULD,
    requires={"apply_patch"},
    text="A patch that updates a file larger than 10 MiB fails with TOO_LARGE and nothing changes.",
    rationale="The per-file limit of Edit applies to the same change made through a patch.",
)
def test_patch_of_huge_file(session, disk):
    _control_patch(session, disk)
    text = _lines_file(10 * MiB + 200)
    disk.write("huge.txt", text)
    _prepare_whole(session, "huge.txt", len(text), may_refuse=True)
    first = _lines_file(200).splitlines()[0]
    before = disk.snapshot()
    with raises_code("TOO_LARGE"):
        session.apply_patch(
            f"*** Begin Patch\n*** Update File: huge.txt\n@@\n-{first}\n+changed\n*** End Patch\n"
        )
    disk.assert_unchanged(before)


@clause(
    "LIMIT-012",
    SHOULD,
    requires={"apply_patch"},
    text="A patch whose files together exceed 32 MiB fails with TOO_LARGE and nothing changes.",
    rationale="A transaction stages and backs up every file it touches; its total size bounds "
    "the disk space and time a rollback needs.",
)
def test_transaction_size_limit(session, disk):
    _control_patch(session, disk)
    sections = []
    # Files of at most 2 MiB each (a whole read LIMIT-003 guarantees), 34 MiB together.
    text = _lines_file(2 * MiB)
    assert 17 * len(text) > 32 * MiB
    for index in range(17):
        name = f"part{index:02d}.txt"
        disk.write(name, text)
        _prepare_whole(session, name, len(text))
        first = text.splitlines()[0]
        sections.append(f"*** Update File: {name}\n@@\n-{first}\n+changed {index}\n")
    before = disk.snapshot()
    with raises_code("TOO_LARGE"):
        session.apply_patch("*** Begin Patch\n" + "".join(sections) + "*** End Patch\n")
    disk.assert_unchanged(before)
