"""git as the oracle for unified diffs: build histories with git, apply each diff both ways.

A tree is ``{path: (bytes, executable)}``. ``Repo`` commits trees with the real ``git`` in a
directory of its own (no user or system configuration, ``core.autocrlf=false``) and prints
``git diff`` between commits in the forms of ``FORMS``. ``compare`` applies one diff to a
copy of the parent tree through editspec's ``apply_patch`` and to another through
``git apply``, and says whether they agree: identical trees, or both refusing with editspec
raising a typed ``ToolError`` and changing nothing. The departures editspec documents
(README, "Where the implementation departs from the design") are the only disagreements
it accepts: a binary patch is UNSUPPORTED.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import attrs

from editspec.reference import ERROR_CODES, ToolError, Workspace

Tree = dict[str, tuple[bytes, bool]]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's hash of the empty tree


@attrs.frozen
class Form:
    """A way to print a diff (``git diff`` options) and what ``git apply`` then needs."""

    name: str
    diff: tuple[str, ...]
    apply: tuple[str, ...] = ()
    config: tuple[str, ...] = ()


FORMS: tuple[Form, ...] = (
    Form("default", ()),
    Form("-U0", ("-U0",), ("--unidiff-zero",)),  # git apply wants context unless told
    Form("-U1", ("-U1",)),
    Form("--no-renames", ("--no-renames",)),
    Form("-M", ("-M",)),
    Form("-C", ("-C", "-C")),  # copies from unmodified files too
    Form("--binary", ("--binary", "-M")),
    Form("--no-prefix", ("--no-prefix", "-M"), ("-p0",)),
    Form("custom prefixes", ("--src-prefix=old/", "--dst-prefix=new/", "-C")),
    Form("quotePath off", ("-M",), config=("-c", "core.quotePath=false")),
)


def git_env(home: Path) -> dict[str, str]:
    """An environment in which no configuration but the command line's applies."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") and key not in ("HOME", "XDG_CONFIG_HOME")
    }
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        LC_ALL="C",
        GIT_AUTHOR_DATE="2024-01-01T00:00:00Z",
        GIT_COMMITTER_DATE="2024-01-01T00:00:00Z",
    )
    return env


def have_git() -> bool:
    return shutil.which("git") is not None


class Repo:
    """A git repository in ``path`` whose commits are trees given in full."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.env = git_env(path.parent)
        path.mkdir(parents=True)
        self.git("init", "-q", ".")
        for key, value in (
            ("user.name", "editspec"),
            ("user.email", "editspec@example.com"),
            ("core.autocrlf", "false"),
            ("core.filemode", "true"),
            ("diff.renames", "true"),
        ):
            self.git("config", key, value)

    def git(self, *args: str, input: bytes | None = None) -> bytes:
        done = subprocess.run(
            ("git", *args), cwd=self.path, env=self.env, input=input, capture_output=True
        )
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.decode()}")
        return done.stdout

    def commit(self, tree: Tree, message: str = "step") -> str:
        for entry in self.path.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        write_tree(self.path, tree)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").decode().strip()

    def diff(self, old: str, new: str, form: Form) -> bytes:
        return self.git(*form.config, "diff", *form.diff, old, new)


def write_tree(root: Path, tree: Tree) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, (data, executable) in tree.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if executable else 0o644)


def read_tree(root: Path) -> Tree:
    """Every file under ``root`` (which holds no ``.git``), with its executable bit."""
    tree: Tree = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            mode = path.lstat().st_mode
            assert stat.S_ISREG(mode), path
            tree[path.relative_to(root).as_posix()] = (path.read_bytes(), bool(mode & 0o100))
    return tree


def apply_with_editspec(root: Path, state: Path, patch: str) -> ToolError | None:
    """``patch`` through editspec, after a full read of every file; its error or None."""
    workspace = Workspace(root, state)
    try:
        session = workspace.session("oracle")
        for name in read_tree(root):
            session.read(name, max_bytes=1 << 30)
        try:
            session.apply_patch(patch)
        except ToolError as error:
            return error
        return None
    finally:
        workspace.close()


def apply_with_git(root: Path, diff: bytes, form: Form, env: dict[str, str]) -> str | None:
    """``diff`` through ``git apply`` in ``root`` (not a repository); its error or None."""
    done = subprocess.run(
        ("git", "apply", "--whitespace=nowarn", *form.apply, "-"),
        cwd=root,
        env=env,
        input=diff,
        capture_output=True,
    )
    return None if done.returncode == 0 else done.stderr.decode(errors="replace") or "failed"


def is_departure(error: ToolError, diff: str) -> bool:
    """The refusals README lists where git applies: binary patches."""
    return (
        error.code == "UNSUPPORTED"
        and "binary patch" in error.message
        and ("\nGIT binary patch\n" in diff or "\nBinary files " in diff)
    )


def compare(
    work: Path,
    parent: Tree,
    diff: bytes,
    form: Form,
    env: dict[str, str],
    child: Tree | None = None,
) -> str:
    """Apply ``diff`` to ``parent`` both ways; the outcome, or AssertionError on disagreement.

    Outcomes: "applied" (identical trees), "refused" (both refused), "departure". ``child``
    is the tree the diff was made from: where ``git apply --unidiff-zero`` does not give it
    back (a ``-U0`` hunk that deletes a last line without a newline also takes the newline
    of the line before: git's manual discourages ``--unidiff-zero`` for such reasons) and
    editspec does, that is a listed departure, not a disagreement.
    """
    text = diff.decode("utf-8")
    ours, theirs = work / "editspec", work / "git"
    for path in (ours, theirs, work / "state"):
        if path.exists():
            shutil.rmtree(path)
    write_tree(ours, parent)
    write_tree(theirs, parent)
    (work / "state").mkdir()
    error = apply_with_editspec(ours, work / "state", text)
    git_error = apply_with_git(theirs, diff, form, env)
    got, expected = read_tree(ours), read_tree(theirs)
    where = f"form {form.name!r}, diff:\n{text}"
    if error is None and git_error is None:
        unidiff_zero = "--unidiff-zero" in form.apply
        if unidiff_zero and got != expected and got == child and expected != child:
            return "departure"
        assert got == expected, f"trees differ ({_tree_difference(got, expected)}); {where}"
        return "applied"
    if error is not None:
        assert isinstance(error.code, str) and error.code in ERROR_CODES, error
        assert got == parent, f"editspec refused ({error}) but changed the tree; {where}"
        if git_error is not None:
            return "refused"
        assert is_departure(error, text), f"editspec refused ({error}), git applied; {where}"
        return "departure"
    raise AssertionError(f"editspec applied what git refuses ({git_error}); {where}")


def _tree_difference(got: Tree, expected: Tree) -> str:
    names = sorted(set(got) | set(expected))
    shown = [
        f"{name}: editspec {got.get(name)!r} git {expected.get(name)!r}"
        for name in names
        if got.get(name) != expected.get(name)
    ]
    return "; ".join(shown[:5])
