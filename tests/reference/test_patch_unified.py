"""Unified diffs read as git apply reads them: CRs, markers, names, modes, copies, binaries."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from editspec.reference._errors import (
    ALREADY_EXISTS,
    INVALID_ARGUMENT,
    NO_MATCH,
    PATCH_SYNTAX,
    UNSUPPORTED,
    ToolError,
)
from editspec.reference._limits import Limits
from editspec.reference.patch._patch_parse import crlf_transport, parse_patch
from editspec.reference.patch._patch_plan import apply_hunks


def parse(text: str):
    return parse_patch(text, Limits())


def apply_diff(old: str, diff: str) -> str:
    (op,) = parse(diff).ops
    return apply_hunks(old, op.hunks, path=op.path)[0]


def refused(text: str) -> ToolError:
    with pytest.raises(ToolError) as info:
        parse(text)
    return info.value


# --------------------------------------------------------------------------- line ends


@pytest.mark.parametrize(
    ("text", "transport"),
    [
        ("--- a\r\n+++ a\r\n", True),
        ("--- a\r\n+++ a\r\n@@ -1 +1 @@\r\n-x\r\r\n", True),  # a content CR survives
        ("--- a\n+++ a\r\n", False),
        ("--- a\n", False),
        ("no line break", False),
        ("", False),
    ],
)
def test_crlf_transport_is_every_line_break_crlf(text: str, transport: bool) -> None:
    assert crlf_transport(text) is transport


def test_a_cr_before_the_break_is_content() -> None:
    (op,) = parse("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+b\n").ops
    assert op.hunks[0].lines == ((" ", "a\r"), ("-", "b\r"), ("+", "b"))
    assert op.hunks[0].exact_newlines
    # headers lose a CR: only hunk lines are the file's
    (op,) = parse("--- a/f\r\n+++ b/f\n@@ -1 +1 @@\r\n-a\r\n+b\n").ops
    assert (op.path, op.hunks[0].lines) == ("f", (("-", "a\r"), ("+", "b")))


def test_a_transport_crlf_diff_follows_the_files_newline() -> None:
    diff = "--- a/f\r\n+++ b/f\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+B\r\n"
    (op,) = parse(diff).ops
    assert not op.hunks[0].exact_newlines
    assert apply_diff("a\nb\n", diff) == "a\nB\n"
    assert apply_diff("a\r\nb\r\n", diff) == "a\r\nB\r\n"
    naive = "--- a/f\r\n+++ b/f\r\n@@ -1,2 +1,2 @@\r\n a\r\r\n-b\r\r\n+B\r\r\n"
    assert apply_diff("a\r\nb\r\n", naive) == "a\r\nB\r\n"


def test_added_files_keep_their_crs_and_markers() -> None:
    diff = (
        "diff --git a/w.bat b/w.bat\nnew file mode 100644\n--- /dev/null\n+++ b/w.bat\n"
        "@@ -0,0 +1,2 @@\n+a\r\n+b\r\n\\ No newline at end of file\n"
    )
    (op,) = parse(diff).ops
    assert (op.op, op.content, op.executable) == ("add", "a\r\nb\r", False)


@pytest.mark.parametrize(
    ("old", "diff", "new"),
    [
        # an end-of-line conversion, both ways
        ("a\nb\n", "@@ -1,2 +1,2 @@\n-a\n-b\n+a\r\n+b\r\n", "a\r\nb\r\n"),
        ("a\r\nb\r\n", "@@ -1,2 +1,2 @@\n-a\r\n-b\r\n+a\n+b\n", "a\nb\n"),
        # mixed endings: untouched lines keep theirs, added ones are as written
        ("a\r\nb\nc\r\n", "@@ -2 +2,2 @@\n-b\n+B\r\n+n\n", "a\r\nB\r\nn\nc\r\n"),
        # a lone CR is content, not a break
        ("a\rb\nc\n", "@@ -1,2 +1,2 @@\n a\rb\n-c\n+C\n", "a\rb\nC\n"),
        # the final newline removed and added by the markers
        ("a\r\n", "@@ -1 +1 @@\n-a\r\n+a\r\n\\ No newline at end of file\n", "a\r"),
        ("a", "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\r\n", "a\r\n"),
        # a context line at the end without a newline, matched tolerantly, gets one back
        ("x\ny", "@@ -1,2 +1,3 @@\n x\n y\n+z\n", "x\nyz\n".replace("yz", "y\nz")),
        # empty file, and emptying one
        ("", "@@ -0,0 +1 @@\n+a\r\n", "a\r\n"),
        ("a\r\n", "@@ -1 +0,0 @@\n-a\r\n", ""),
    ],
)
def test_unified_lines_are_the_files_bytes(old: str, diff: str, new: str) -> None:
    assert apply_diff(old, "--- a/f\n+++ b/f\n" + diff) == new


def test_a_line_end_mismatch_matches_only_tolerantly() -> None:
    (op,) = parse("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n").ops
    text, warnings = apply_hunks("a\r\nb\r\n", op.hunks, path="f")
    assert text == "a\r\nB\n"
    assert "trailing whitespace tolerance" in warnings[0]


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("header", "minus", "plus", "path"),
    [
        ("a/x/y b/x/y", "a/x/y", "b/x/y", "x/y"),
        ("x/y x/y", "x/y", "x/y", "x/y"),  # --no-prefix
        ("a/f a/f", "a/f", "a/f", "a/f"),  # --no-prefix, a directory named a
        ("old/f new/f", "old/f", "new/f", "f"),  # --src-prefix/--dst-prefix
        ("a/my file b/my file", "a/my file\t", "b/my file\t", "my file"),
        ("a/end  b/end ", "a/end \t", "b/end \t", "end "),  # a trailing space
    ],
)
def test_git_prefixes_come_from_the_diff_git_line(
    header: str, minus: str, plus: str, path: str
) -> None:
    diff = f"diff --git {header}\nindex 1..2 100644\n--- {minus}\n+++ {plus}\n@@ -1 +1 @@\n-a\n+b\n"
    (op,) = parse(diff).ops
    assert (op.op, op.path, op.move_to) == ("update", path, None)


def test_prefixes_of_added_and_header_only_files() -> None:
    diff = (
        "diff --git new/n.txt new/n.txt\nnew file mode 100755\n--- /dev/null\n+++ new/n.txt\n"
        "@@ -0,0 +1 @@\n+x\n"
        "diff --git p/e q/e\nnew file mode 100644\nindex 0000000..e69de29\n"
    )
    assert [(op.op, op.path, op.executable) for op in parse(diff).ops] == [
        ("add", "new/n.txt", True),
        ("add", "e", False),
    ]


def test_quoted_names_with_core_quote_path() -> None:
    diff = (
        'diff --git "a/\\303\\274n\\303\\257.txt" "b/\\303\\274n\\303\\257.txt"\n'
        'similarity index 100%\nrename from "\\303\\274n\\303\\257.txt"\nrename to "t\\tab"\n'
    )
    (op,) = parse(diff).ops
    assert (op.path, op.move_to) == ("ünï.txt", "t\tab")


# --------------------------------------------------------------------------- git headers


def test_copies_name_their_source_without_counting_it() -> None:
    diff = (
        "diff --git a/s b/s\n--- a/s\n+++ b/s\n@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/s b/c\nsimilarity index 100%\ncopy from s\ncopy to c\n"
        "diff --git a/s b/d\nold mode 100644\nnew mode 100755\nsimilarity index 50%\n"
        "copy from s\ncopy to d\n--- a/s\n+++ b/d\n@@ -1 +1 @@\n-a\n+z\n"
    )
    ops = parse(diff).ops
    assert [(op.op, op.path, op.move_to, op.executable) for op in ops] == [
        ("update", "s", None, None),
        ("copy", "s", "c", None),
        ("copy", "s", "d", True),
    ]
    assert refused(diff + "diff --git a/x b/c\nnew file mode 100644\n").code == INVALID_ARGUMENT


@pytest.mark.parametrize(
    "section",
    [
        "diff --git a/b.png b/b.png\nindex 1..2 100644\nBinary files a/b.png and b/b.png differ\n",
        "diff --git a/b.png b/b.png\nnew file mode 100644\nindex 0..1\nGIT binary patch\n"
        "literal 1\nIcmZP)00031\n\nliteral 0\nHcmV?d00001\n\n",
        "diff --git a/b.png b/b.png\ndeleted file mode 100644\nBinary files a/b.png and "
        "/dev/null differ\n",
    ],
)
def test_binary_patches_are_unsupported(section: str) -> None:
    error = refused("--- a/t\n+++ b/t\n@@ -1 +1 @@\n-a\n+b\n" + section)
    assert error.code == UNSUPPORTED
    assert "binary patch" in error.message


@pytest.mark.parametrize(("mode", "kind"), [("120000", "symbolic link"), ("160000", "submodule")])
def test_links_and_submodules_are_unsupported(mode: str, kind: str) -> None:
    error = refused(f"diff --git a/l b/l\nnew file mode {mode}\nindex 0..1\n")
    assert (error.code, error.details["mode"]) == (UNSUPPORTED, mode)
    assert kind in error.message


def test_a_bad_mode_is_a_syntax_error() -> None:
    error = refused("diff --git a/l b/l\nnew mode 1007x5\n")
    assert (error.code, error.details["line"]) == (PATCH_SYNTAX, 2)


@pytest.mark.parametrize(
    "section",
    [
        "diff --git a/f b/g\ncopy to g\n",
        "diff --git a/f b/g\nnew file mode 100644\ncopy from f\ncopy to g\n",
    ],
)
def test_a_copy_needs_both_names_and_both_files(section: str) -> None:
    assert refused(section).code == PATCH_SYNTAX


def test_mode_changes_alone_and_with_content() -> None:
    diff = (
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
        "diff --git a/t b/t\nold mode 100755\nnew mode 100644\n--- a/t\n+++ b/t\n"
        "@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/w b/w\nindex 1..2 100644\n"  # nothing at all (git diff -w)
    )
    assert [(op.op, op.path, len(op.hunks), op.executable) for op in parse(diff).ops] == [
        ("update", "run.sh", 0, True),
        ("update", "t", 1, False),
    ]


# --------------------------------------------------------------------------- the engine


def _files(root: Path) -> dict[str, tuple[bytes, bool]]:
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            found[path.relative_to(root).as_posix()] = (
                path.read_bytes(),
                bool(path.stat().st_mode & stat.S_IXUSR),
            )
    return found


def _write(root: Path, name: str, data: bytes, mode: int = 0o644) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_bytes(data)
    (root / name).chmod(mode)


def test_modes_are_applied(root: Path, session) -> None:
    _write(root, "run.sh", b"echo\n", 0o640)
    _write(root, "t", b"a\n", 0o755)
    for name in ("run.sh", "t"):
        session.read(name)
    session.apply_patch(
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
        "diff --git a/t b/u\nold mode 100755\nnew mode 100644\nsimilarity index 50%\n"
        "rename from t\nrename to u\n--- a/t\n+++ b/u\n@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/x.sh b/x.sh\nnew file mode 100755\n--- /dev/null\n+++ b/x.sh\n"
        "@@ -0,0 +1 @@\n+run\n"
    )
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o750  # x where readable
    assert stat.S_IMODE((root / "u").stat().st_mode) == 0o644
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((root / "x.sh").stat().st_mode) == 0o777 & ~umask
    assert _files(root) == {
        "run.sh": (b"echo\n", True),
        "u": (b"b\n", False),
        "x.sh": (b"run\n", True),
    }


def test_copies_read_the_source_before_the_patch(root: Path, session) -> None:
    _write(root, "s", b"one\r\ntwo\r\n", 0o755)
    session.read("s")
    session.apply_patch(
        "diff --git a/s b/s\n--- a/s\n+++ b/s\n@@ -1,2 +1,2 @@\n-one\r\n+ONE\r\n two\r\n"
        "diff --git a/s b/c\nsimilarity index 100%\ncopy from s\ncopy to c\n"
        "diff --git a/s b/d/e\nsimilarity index 50%\ncopy from s\ncopy to d/e\n"
        "--- a/s\n+++ b/d/e\n@@ -1,2 +1,2 @@\n one\r\n-two\r\n+2\r\n"
    )
    assert _files(root) == {
        "s": (b"ONE\r\ntwo\r\n", True),
        "c": (b"one\r\ntwo\r\n", True),  # the source's mode
        "d/e": (b"one\r\n2\r\n", True),
    }


def test_a_copy_needs_no_read_and_does_not_clobber(root: Path, session) -> None:
    _write(root, "s", b"x\n")
    copy = "diff --git a/s b/c\nsimilarity index 100%\ncopy from s\ncopy to c\n"
    result = session.apply_patch(copy)  # the source is only read
    assert [(c.path, c.op) for c in result.changes] == [("c", "add")]
    assert "+x" in result.changes[0].diff
    with pytest.raises(ToolError) as info:
        session.apply_patch(copy)
    assert info.value.code == ALREADY_EXISTS
    _write(root, "bin", b"\x00\x01")
    session.apply_patch(
        "diff --git a/bin b/bin2\nsimilarity index 100%\ncopy from bin\ncopy to bin2\n"
    )
    assert (root / "bin2").read_bytes() == b"\x00\x01"


def test_a_unified_deletion_must_cover_the_file(root: Path, session) -> None:
    _write(root, "f", b"a\nb\n")
    session.read("f")
    with pytest.raises(ToolError) as info:
        session.apply_patch("--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-b\n")
    assert info.value.code == NO_MATCH
    assert (root / "f").read_bytes() == b"a\nb\n"
    session.apply_patch("--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n")
    assert not (root / "f").exists()


def test_a_bom_the_diff_names_is_the_first_lines(root: Path, session) -> None:
    _write(root, "b.txt", "\ufeffa\nb\n".encode())
    session.read("b.txt")
    session.apply_patch("--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-\ufeffa\n+a\n b\n")
    assert (root / "b.txt").read_bytes() == b"a\nb\n"
    _write(root, "k.txt", "\ufeffa\nb\n".encode())
    session.read("k.txt")
    session.apply_patch("--- a/k.txt\n+++ b/k.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n")
    assert (root / "k.txt").read_bytes() == "\ufeffa\nB\n".encode()  # written by hand: kept


def test_an_update_without_hunks_or_mode_is_a_syntax_error(root: Path, session) -> None:
    from editspec.reference.patch._patch import _plan_one
    from editspec.reference.patch._patch_parse import FileOp

    _write(root, "f", b"a\n")
    session.read("f")
    target = session.workspace.resolve("f")
    empty = FileOp(op="update", path="f", move_to=None, content=None, hunks=(), source_line=1)
    with pytest.raises(ToolError) as info:
        _plan_one(session, empty, target, None)
    assert info.value.code == PATCH_SYNTAX


def test_a_transport_crlf_diff_honours_its_markers() -> None:
    drop = "--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n\\ No newline at end of file\r\n"
    assert apply_diff("a\n", drop) == "b"
    add = "--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-a\r\n\\ No newline at end of file\r\n+b\r\n"
    assert apply_diff("a", add) == "b\n"


@pytest.mark.parametrize(
    "diff",
    [
        "diff --git a/x y/z\nold mode 100644\nnew mode 100755\n",  # names unreadable
        "diff --git a/x y/z\nsimilarity index 100%\nrename from x\n",  # one of two names
    ],
)
def test_git_sections_whose_names_cannot_be_read(diff: str) -> None:
    assert refused(diff).code == PATCH_SYNTAX
