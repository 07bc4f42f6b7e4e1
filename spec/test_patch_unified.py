"""PATCH: unified diffs with git apply's semantics (DESIGN §4 "ApplyPatch").

A unified diff's lines are the file's bytes: a CR before the line break is content, so a
diff that adds a CRLF file or changes a file's line endings yields what ``git apply``
yields; ``\\ No newline at end of file`` is honoured; git's renames and copies are
applied; what cannot be applied is a typed error, never a silent success. Every diff here
is what ``git diff`` prints (its headers end in LF whatever the files hold). Each clause
opens with a positive control: an LF diff of the same shape applied first.
"""

from __future__ import annotations

from editspec.spec import MUST, SHOULD, clause, raises_code


def _prepared(session, disk, rel, data):
    """A file on disk, read in full by ``session``."""
    disk.write(rel, data)
    session.read(rel, max_bytes=1 << 30)


def _added(name: str, *lines: str, no_newline: bool = False) -> str:
    """git's diff adding ``name`` with ``lines`` (each with its own line break)."""
    body = "".join(f"+{line}" for line in lines)
    marker = "\\ No newline at end of file\n" if no_newline else ""
    return (
        f"diff --git a/{name} b/{name}\n"
        "new file mode 100644\n"
        "index 0000000..1111111\n"
        "--- /dev/null\n"
        f"+++ b/{name}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}{marker}"
    )


@clause(
    "PATCH-060",
    MUST,
    requires={"apply_patch"},
    text="A unified diff that adds a file whose lines end in CRLF (a CR before each line "
    "break of its '+' lines, the diff's own headers ending in LF) creates the file with "
    "those CRLF line endings.",
    rationale="git diff prints a CRLF file's CRs as content; a tool that strips them writes "
    "a Windows batch file or a CRLF test fixture with LF, and reports success.",
)
def test_added_crlf_file(session, disk):
    session.apply_patch(_added("unix.txt", "one\n", "two\n"))
    assert disk.read("unix.txt") == b"one\ntwo\n"
    session.apply_patch(_added("make.bat", "@echo off\r\n", "exit /b 0\r\n"))
    assert disk.read("make.bat") == b"@echo off\r\nexit /b 0\r\n"


@clause(
    "PATCH-061",
    MUST,
    requires={"read", "apply_patch"},
    text="A unified diff that changes a file's line endings (LF to CRLF, or CRLF to LF) "
    "leaves exactly the new side's bytes: the '+' lines' CRs are content.",
    rationale="An end-of-line conversion is a real commit in many histories; applying it as "
    "a no-op succeeds and leaves the old endings, silently.",
)
def test_eol_change(session, disk):
    _prepared(session, disk, "plain.txt", b"a\nb\n")
    session.apply_patch("--- a/plain.txt\n+++ b/plain.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n")
    assert disk.read("plain.txt") == b"a\nB\n"
    _prepared(session, disk, "to-crlf.txt", b"a\nb\n")
    _prepared(session, disk, "to-lf.txt", b"c\r\nd\r\n")
    session.apply_patch(
        "diff --git a/to-crlf.txt b/to-crlf.txt\n--- a/to-crlf.txt\n+++ b/to-crlf.txt\n"
        "@@ -1,2 +1,2 @@\n-a\n-b\n+a\r\n+b\r\n"
        "diff --git a/to-lf.txt b/to-lf.txt\n--- a/to-lf.txt\n+++ b/to-lf.txt\n"
        "@@ -1,2 +1,2 @@\n-c\r\n-d\r\n+c\n+d\n"
    )
    assert disk.read("to-crlf.txt") == b"a\r\nb\r\n"
    assert disk.read("to-lf.txt") == b"c\nd\n"


@clause(
    "PATCH-062",
    MUST,
    requires={"apply_patch"},
    text="A unified diff that adds a file and ends its '+' lines with '\\ No newline at end "
    "of file' creates the file without a final line break (a CR before the marker stays).",
    rationale="The marker is the only way a diff says a file has no final newline; adding "
    "one changes the file's hash and, for some formats, its meaning.",
)
def test_added_file_without_final_newline(session, disk):
    session.apply_patch(_added("with.txt", "x\n", "y\n"))
    assert disk.read("with.txt") == b"x\ny\n"
    session.apply_patch(_added("without.txt", "x\n", "y\n", no_newline=True))
    assert disk.read("without.txt") == b"x\ny"
    session.apply_patch(_added("cr.txt", "x\r\n", "y\r\n", no_newline=True))
    assert disk.read("cr.txt") == b"x\r\ny\r"


@clause(
    "PATCH-063",
    MUST,
    requires={"read", "apply_patch"},
    text="In a file with mixed line endings, a unified diff changes only the lines it "
    "names: every other line keeps its own ending, and each '+' line ends as the diff "
    "writes it.",
    rationale="Mixed files exist (generated sections, merged histories); normalising them "
    "rewrites lines nobody asked to change.",
)
def test_mixed_endings(session, disk):
    _prepared(session, disk, "lf.txt", b"a\nb\nc\n")
    session.apply_patch("--- a/lf.txt\n+++ b/lf.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
    assert disk.read("lf.txt") == b"a\nB\nc\n"
    _prepared(session, disk, "mixed.txt", b"a\r\nb\nc\r\nd\n")
    session.apply_patch(
        "--- a/mixed.txt\n+++ b/mixed.txt\n@@ -1,4 +1,5 @@\n a\r\n-b\n+B\r\n+new\n c\r\n d\n"
    )
    assert disk.read("mixed.txt") == b"a\r\nB\r\nnew\nc\r\nd\n"


@clause(
    "PATCH-064",
    MUST,
    requires={"read", "apply_patch"},
    text="A git rename of a CRLF file with a content change ('similarity index', 'rename "
    "from', 'rename to' and hunks) leaves only the new name, with the old bytes changed by "
    "the hunks, CRLF endings included.",
    rationale="Renames with edits are where appliers create a copy, lose the endings, or "
    "leave the source behind.",
)
def test_rename_of_a_crlf_file(session, disk):
    _prepared(session, disk, "a.txt", b"one\ntwo\nthree\n")
    session.apply_patch(
        "diff --git a/a.txt b/b.txt\nsimilarity index 66%\nrename from a.txt\nrename to b.txt\n"
        "--- a/a.txt\n+++ b/b.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    )
    assert disk.tree() == {"b.txt": b"one\nTWO\nthree\n"}
    _prepared(session, disk, "win.ini", b"[a]\r\nk=1\r\nend\r\n")
    session.apply_patch(
        "diff --git a/win.ini b/conf/win.ini\nsimilarity index 66%\n"
        "rename from win.ini\nrename to conf/win.ini\nindex 1111111..2222222 100644\n"
        "--- a/win.ini\n+++ b/conf/win.ini\n@@ -1,3 +1,3 @@\n [a]\r\n-k=1\r\n+k=2\r\n end\r\n"
    )
    assert disk.tree() == {"b.txt": b"one\nTWO\nthree\n", "conf/win.ini": b"[a]\r\nk=2\r\nend\r\n"}


@clause(
    "PATCH-065",
    MUST,
    requires={"read", "apply_patch"},
    text="A git copy ('copy from' / 'copy to', with or without hunks) creates the new file "
    "from the source's bytes as they were before the patch, changed by its hunks, and "
    "leaves the source as the rest of the patch makes it.",
    rationale="git diff -C prints copies of files the same commit modifies; treating a copy "
    "as a rename deletes the source, ignoring it loses the new file.",
)
def test_copy(session, disk):
    _prepared(session, disk, "src.txt", b"one\r\ntwo\r\nthree\r\n")
    session.apply_patch(
        "diff --git a/src.txt b/renamed.txt\nsimilarity index 100%\n"
        "rename from src.txt\nrename to renamed.txt\n"
    )
    assert disk.tree() == {"renamed.txt": b"one\r\ntwo\r\nthree\r\n"}
    session.read("renamed.txt", max_bytes=1 << 30)
    session.apply_patch(
        "diff --git a/renamed.txt b/renamed.txt\n--- a/renamed.txt\n+++ b/renamed.txt\n"
        "@@ -1,3 +1,3 @@\n-one\r\n+ONE\r\n two\r\n three\r\n"
        "diff --git a/renamed.txt b/copy.txt\nsimilarity index 66%\n"
        "copy from renamed.txt\ncopy to copy.txt\n"
        "--- a/renamed.txt\n+++ b/copy.txt\n@@ -1,3 +1,3 @@\n one\r\n two\r\n-three\r\n+3\r\n"
        "diff --git a/renamed.txt b/same.txt\nsimilarity index 100%\n"
        "copy from renamed.txt\ncopy to same.txt\n"
    )
    assert disk.tree() == {
        "renamed.txt": b"ONE\r\ntwo\r\nthree\r\n",
        "copy.txt": b"one\r\ntwo\r\n3\r\n",
        "same.txt": b"one\r\ntwo\r\nthree\r\n",
    }


_BINARY_NEW = b"\x00\x01\x02\x03"
_LITERAL = (
    "diff --git a/blob.bin b/blob.bin\n"
    "new file mode 100644\n"
    "index 0000000000000000000000000000000000000000..eaf36c1daccfdf325514461cd1a2ffbc139b5464\n"
    "GIT binary patch\n"
    "literal 4\n"
    "LcmZQzWMT#Y01f~L\n"
    "\n"
    "literal 0\n"
    "HcmV?d00001\n"
    "\n"
)


@clause(
    "PATCH-066",
    MUST,
    requires={"read", "apply_patch"},
    text="A git binary patch ('GIT binary patch') is applied exactly or refused with "
    "UNSUPPORTED; a 'Binary files ... differ' section, which carries no data, is refused "
    "with UNSUPPORTED. A refusal changes nothing, also in the patch's text files.",
    rationale="A binary section skipped while the text files around it are patched is a "
    "success that did not land.",
)
def test_binary_patches(session, disk):
    _prepared(session, disk, "t.txt", b"a\n")
    session.apply_patch("--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n-a\n+b\n")
    assert disk.read("t.txt") == b"b\n"
    session.read("t.txt", max_bytes=1 << 30)
    text = "diff --git a/t.txt b/t.txt\n--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n-b\n+c\n"
    before = disk.snapshot()
    try:
        session.apply_patch(text + _LITERAL)
    except Exception as exc:  # refusing is allowed; the code is checked
        with raises_code("UNSUPPORTED"):
            raise exc
        disk.assert_unchanged(before)
    else:
        assert disk.tree() == {"t.txt": b"c\n", "blob.bin": _BINARY_NEW}
        return
    _prepared(session, disk, "img.png", b"\x89PNG\r\n\x1a\n\x00old")
    before = disk.snapshot()
    with raises_code("UNSUPPORTED"):
        session.apply_patch(
            text + "diff --git a/img.png b/img.png\nindex 1111111..2222222 100644\n"
            "Binary files a/img.png and b/img.png differ\n"
        )
    disk.assert_unchanged(before)


@clause(
    "PATCH-067",
    MUST,
    requires={"read", "apply_patch"},
    text="A git mode change ('old mode 100644' / 'new mode 100755'), with or without a "
    "content change, sets or clears the file's executable bit, or the whole patch is "
    "refused with a typed error and nothing changed; it is never reported applied while "
    "the mode stays.",
    rationale="Dropping a chmod silently makes a script unrunnable after a patch that "
    "reported success.",
)
def test_mode_change(session, disk):
    _prepared(session, disk, "t.txt", b"a\n")
    session.apply_patch("--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n-a\n+b\n")
    assert disk.read("t.txt") == b"b\n"
    session.read("t.txt", max_bytes=1 << 30)
    disk.write("run.sh", b"echo hi\n", mode=0o644)
    session.read("run.sh", max_bytes=1 << 30)
    before = disk.snapshot()
    patch = (
        "diff --git a/t.txt b/t.txt\n--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n-b\n+c\n"
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    )
    try:
        session.apply_patch(patch)
    except Exception as exc:  # refusing is allowed; the code is checked
        with raises_code():
            raise exc
        disk.assert_unchanged(before)
        return
    assert disk.read("t.txt") == b"c\n"
    assert disk.mode("run.sh") & 0o100, "the patch reported success; run.sh is not executable"


@clause(
    "PATCH-068",
    SHOULD,
    requires={"read", "apply_patch"},
    text="A unified diff whose every line, headers included, ends in CRLF is read as "
    "having LF line breaks (the CRs came with the transport): it applies to an LF file and "
    "adds no CR to it.",
    rationale="A diff pasted through a Windows clipboard or mail client gains a CR on every "
    "line; git's own headers never carry one, which is how the artifact is told apart.",
)
def test_crlf_transport_to_an_lf_file(session, disk):
    _prepared(session, disk, "a.txt", b"one\ntwo\n")
    diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
    session.apply_patch(diff)
    assert disk.read("a.txt") == b"one\nTWO\n"
    session.read("a.txt", max_bytes=1 << 30)
    crlf = diff.replace("-two", "-TWO").replace("+TWO", "+2").replace("\n", "\r\n")
    session.apply_patch(crlf)
    assert disk.read("a.txt") == b"one\n2\n"


@clause(
    "PATCH-069",
    MUST,
    requires={"read", "apply_patch"},
    text="A unified diff whose every line, headers included, ends in CRLF, applied to a "
    "CRLF file, leaves every line of the file ending in CRLF, the added ones included (as "
    "git apply does).",
    rationale="Whether its CRs are content (git's reading) or transport, such a diff of a "
    "CRLF file means CRLF lines; an added line that ends in LF alone mixes the file.",
)
def test_crlf_transport_to_a_crlf_file(session, disk):
    _prepared(session, disk, "a.txt", b"one\r\ntwo\r\n")
    diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\r\n-two\r\n+TWO\r\n"
    session.apply_patch(diff)
    assert disk.read("a.txt") == b"one\r\nTWO\r\n"
    session.read("a.txt", max_bytes=1 << 30)
    session.apply_patch(
        "--- a/a.txt\r\n+++ b/a.txt\r\n@@ -1,2 +1,3 @@\r\n one\r\n-TWO\r\n+2\r\n+3\r\n"
    )
    assert disk.read("a.txt") == b"one\r\n2\r\n3\r\n"
