"""The Codex format against a second implementation: openai-agents' ``apply_diff``.

Hypothesis generates a tree of text files (LF, CRLF or mixed line endings, with and
without a final newline) and an edit of it (files updated, added, deleted, moved). The
edit is written as one Codex patch (``@@`` hunks with up to three context lines, from
``difflib``) and applied through editspec's ``apply_patch``; the same file sections go
through ``agents.apply_diff.apply_diff`` one file at a time (``mode="create"`` for an Add),
as the Agents SDK's own apply_patch tool does. The trees must agree, except where README
lists a departure ("Where the implementation departs from the design"):

- all or nothing: editspec refuses the whole patch when one file fails, apply_diff has
  changed the files before it;
- no clobber: an Add or a Move onto an existing file is ALREADY_EXISTS;
- ambiguity: editspec refuses a context that matches twice (AMBIGUOUS), apply_diff takes
  the first match;
- an added file ends with a newline after its last '+' line (as the Codex CLI writes
  it); apply_diff's ``create`` mode leaves the last line unterminated;
- a file with mixed line endings keeps each line's own ending; apply_diff rewrites every
  line with CRLF once the file holds one.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from editspec.reference import ToolError, Workspace

apply_diff_module = pytest.importorskip("agents.apply_diff")
apply_diff = apply_diff_module.apply_diff

EXAMPLES = settings(max_examples=max(10, settings.default.max_examples // 2))
LINES = ("alpha", "beta", "gamma", "", "  indented", "x = 1", "}", "trailing  ", "naïve — ok")
NAMES = ("a.txt", "b.txt", "c.txt", "d/e.txt", "f g.txt")

Files = dict[str, str]


def split(text: str) -> list[str]:
    return text.splitlines()


@st.composite
def text_file(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=10))
    style = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    breaks = [draw(st.sampled_from(["\n", "\r\n"])) if style == "mixed" else style for _ in lines]
    if draw(st.booleans()):
        breaks[-1] = ""
    return "".join(a + b for a, b in zip(lines, breaks, strict=True))


@st.composite
def edited_text(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        kind = draw(st.sampled_from(["replace", "insert", "delete"]))
        ending = next(
            (line[len(line.rstrip("\r\n")) :] for line in lines if line.strip("\r\n") != line), "\n"
        )
        new = draw(st.sampled_from(LINES)) + ending
        if kind == "insert" or not lines:
            lines.insert(at, new)
        elif kind == "replace":
            keep = lines[at][len(lines[at].rstrip("\r\n")) :]
            lines[at] = new.rstrip("\r\n") + keep
        elif len(lines) > 1:
            del lines[at]
    if lines and not lines[-1].endswith("\n") and any(line.endswith("\n") for line in lines[:-1]):
        pass  # the last line keeps having no newline
    for k in range(len(lines) - 1):  # only the last line may lack a line break
        if not lines[k].endswith("\n"):
            lines[k] += "\n"
    return "".join(lines)


def codex_hunks(old: str, new: str) -> str:
    """Codex ``@@`` hunks turning ``old`` into ``new`` (lines compared without ends)."""
    a, b = split(old), split(new)
    out: list[str] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(3):
        out.append("@@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(f" {line}\n" for line in a[i1:i2])
            else:
                out.extend(f"-{line}\n" for line in a[i1:i2])
                out.extend(f"+{line}\n" for line in b[j1:j2])
    return "".join(out)


@st.composite
def edits(draw: st.DrawFn) -> tuple[Files, list[tuple[str, str, str | None, str]]]:
    """A tree, and operations (op, path, move_to, text: new content or new text)."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    tree = {name: draw(text_file()) for name in names}
    ops: list[tuple[str, str, str | None, str]] = []
    free = [name for name in NAMES if name not in tree]
    for name in names:
        kind = draw(st.sampled_from(["update", "update", "move", "delete", "keep"]))
        if kind == "update" or (kind == "move" and free):
            new = draw(edited_text(tree[name]))
            dest = free.pop() if kind == "move" and free else None
            if new != tree[name] or dest:
                ops.append(("update", name, dest, new))
        elif kind == "delete":
            ops.append(("delete", name, None, ""))
    if free and draw(st.booleans()):
        ops.append(("add", free.pop(), None, draw(text_file())))
    untouched = [name for name in names if all(name != op[1] for op in ops)]
    if untouched and draw(st.booleans()):  # sometimes an Add onto an existing file
        ops.append(("add", untouched[0], None, "clobber\n"))
    return tree, ops


def codex_patch(tree: Files, ops: list[tuple[str, str, str | None, str]]) -> str:
    parts = ["*** Begin Patch\n"]
    for op, path, move_to, text in ops:
        if op == "add":
            parts.append(f"*** Add File: {path}\n" + "".join(f"+{line}\n" for line in split(text)))
        elif op == "delete":
            parts.append(f"*** Delete File: {path}\n")
        else:
            parts.append(f"*** Update File: {path}\n")
            if move_to:
                parts.append(f"*** Move to: {move_to}\n")
            parts.append(codex_hunks(tree[path], text))
    parts.append("*** End Patch\n")
    return "".join(parts)


def through_apply_diff(
    tree: Files, ops: list[tuple[str, str, str | None, str]]
) -> tuple[Files, str | None]:
    """Each file section through ``apply_diff``, in order, as the Agents SDK's tool does."""
    files = dict(tree)
    for op, path, move_to, text in ops:
        try:
            if op == "add":
                files[path] = apply_diff(
                    "", "".join(f"+{line}\n" for line in split(text)), mode="create"
                )
            elif op == "delete":
                del files[path]
            else:
                new = apply_diff(files[path], codex_hunks(tree[path], text))
                del files[path]
                files[move_to or path] = new
        except (ValueError, KeyError) as exc:
            return files, f"{path}: {exc}"
    return files, None


def through_editspec(
    root: Path, state: Path, tree: Files, patch: str
) -> tuple[Files, ToolError | None]:
    for name, text in tree.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())
    workspace = Workspace(root, state)
    try:
        session = workspace.session("oracle")
        for name in tree:
            session.read(name)
        try:
            session.apply_patch(patch)
            error = None
        except ToolError as exc:
            error = exc
    finally:
        workspace.close()
    files = {
        path.relative_to(root).as_posix(): path.read_bytes().decode()
        for path in root.rglob("*")
        if path.is_file()
    }
    return files, error


def normalised(text: str) -> str:
    return text.replace("\r\n", "\n")


@EXAMPLES
@given(case=edits())
def test_codex_patches_agree_with_openai_agents_apply_diff(
    tmp_path_factory: pytest.TempPathFactory, case
) -> None:
    tree, ops = case
    if not ops:
        return
    base = tmp_path_factory.mktemp("codex")
    (base / "root").mkdir()
    (base / "state").mkdir()
    patch = codex_patch(tree, ops)
    ours, error = through_editspec(base / "root", base / "state", tree, patch)
    theirs, their_error = through_apply_diff(tree, ops)
    added = {path for op, path, _, _ in ops if op == "add"}
    clobber = any(op == "add" and path in tree for op, path, _, _ in ops)
    if error is not None:
        assert ours == tree, f"editspec refused ({error}) and changed files"
        if error.code == "ALREADY_EXISTS":
            assert clobber, error
            event("departure: no clobber")
        elif error.code == "AMBIGUOUS":
            event("departure: ambiguous context")
        else:
            # apply_diff must fail too (it may have changed earlier files: all-or-nothing)
            assert their_error is not None, f"editspec refused ({error}); apply_diff applied"
            event("both refused")
        return
    assert not clobber
    assert their_error is None, f"editspec applied; apply_diff refused: {their_error}"
    assert set(ours) == set(theirs)
    origin = {move_to: path for op, path, move_to, _ in ops if move_to}
    for path, text in ours.items():
        other = theirs[path]
        before = tree.get(origin.get(path, path), "")
        if path in added:
            # apply_diff's create mode leaves the last line unterminated
            assert text == (other + "\n" if text else other), path
        elif "\r\n" in before and "\n" in before.replace("\r\n", ""):
            assert normalised(text) == normalised(other), path  # mixed: apply_diff makes CRLF
            event("departure: mixed endings")
        else:
            assert text == other, path
    event("agreed")
