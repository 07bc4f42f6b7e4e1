"""GLOB: finding paths by pattern under git's ignore rules (DESIGN §4 "Glob")."""

from __future__ import annotations

import posixpath

from editspec.spec import MUST, SHOULD, assert_fields, clause, raises_code, within
from editspec.spec._search_kit import (
    escaping_paths,
    plant_symlink_loops,
    set_mtime,
)


def _paths(session, pattern, **options):
    return list(session.glob(pattern, **options).paths)


def _assert_relative_inside(paths):
    """Every path is root-relative, '/'-separated and never climbs out."""
    for path in paths:
        assert path and not path.startswith("/") and "\\" not in path, path
        assert ".." not in path.split("/"), path
        assert posixpath.normpath(path) == path, path


@clause(
    "GLOB-001",
    MUST,
    requires={"glob"},
    text="'**/*.py' finds the matching files at every depth, including the root; paths are "
    "relative to the workspace root and '/'-separated, and total_matches is the number of "
    "paths returned when nothing is cut.",
    rationale="Agents feed Glob paths straight into Read and Edit; an absolute, "
    "'./'-prefixed or backslash-separated path is a different string for the next tool.",
)
def test_globstar_finds_files_at_every_depth(session, disk):
    for rel in ("top.py", "pkg/mod.py", "pkg/sub/deep.py", "pkg/sub/notes.txt", "README.md"):
        disk.write(rel, "x\n")
    before = disk.snapshot()
    result = session.glob("**/*.py")
    assert_fields(result, "GlobResult")
    assert sorted(result.paths) == ["pkg/mod.py", "pkg/sub/deep.py", "top.py"]
    _assert_relative_inside(result.paths)
    assert result.truncated is False
    assert result.total_matches == len(result.paths)
    disk.assert_unchanged(before)


@clause(
    "GLOB-002",
    MUST,
    requires={"glob"},
    text="Files that the root .gitignore excludes, and everything below a directory it excludes, "
    "are not listed, even by a pattern that names them.",
    rationale="Ignored trees (node_modules, build output, virtualenvs) drown the agent's "
    "context in generated files and waste the search budget.",
)
def test_root_gitignore_excludes(session, disk):
    disk.write(".gitignore", "*.log\nnode_modules\n")
    disk.write("app.js", "x\n")
    disk.write("debug.log", "x\n")
    disk.write("src/trace.log", "x\n")
    disk.write("src/main.js", "x\n")
    disk.write("node_modules/lib/index.js", "x\n")
    disk.write("src/node_modules/dep/index.js", "x\n")
    assert sorted(_paths(session, "**/*.js")) == ["app.js", "src/main.js"]
    assert _paths(session, "**/*.log") == []
    assert _paths(session, "node_modules/**") == []
    assert not [p for p in _paths(session, "**") if "node_modules" in p.split("/")]


@clause(
    "GLOB-003",
    MUST,
    requires={"glob"},
    text="A .gitignore in a subdirectory, at any depth, applies to the paths below its own "
    "directory and to no others, its anchored patterns taken relative to that directory.",
    rationale="Monorepos keep per-package ignore files; applying them globally hides real "
    "sources, ignoring them floods results with a package's build output.",
)
def test_nested_gitignore_at_depth(session, disk):
    disk.write("a/b/c/.gitignore", "*.tmp\n/local.txt\n")
    for rel in (
        "x.tmp",
        "a/x.tmp",
        "a/b/x.tmp",
        "a/b/c/x.tmp",
        "a/b/c/d/y.tmp",
        "local.txt",
        "a/b/c/local.txt",
        "a/b/c/d/local.txt",
        "a/b/c/kept.txt",
    ):
        disk.write(rel, "x\n")
    assert sorted(_paths(session, "**/*.tmp")) == ["a/b/x.tmp", "a/x.tmp", "x.tmp"]
    assert sorted(_paths(session, "**/*.txt")) == [
        "a/b/c/d/local.txt",
        "a/b/c/kept.txt",
        "local.txt",
    ]


@clause(
    "GLOB-004",
    MUST,
    requires={"glob"},
    text="A '!' line re-includes a path an earlier line of the same .gitignore excluded; "
    "within one file the last matching line decides.",
    rationale="'*.log' then '!keep.log' is the standard way to keep one file; an engine that "
    "ignores negations hides exactly the file the project chose to keep.",
)
def test_negation_in_one_file(session, disk):
    disk.write(".gitignore", "*.log\n!keep.log\n*.dat\n!important.dat\nimportant.dat\n")
    for rel in ("a.log", "keep.log", "sub/keep.log", "sub/b.log", "x.dat", "important.dat"):
        disk.write(rel, "x\n")
    assert sorted(_paths(session, "**/*.log")) == ["keep.log", "sub/keep.log"]
    assert _paths(session, "**/*.dat") == []


@clause(
    "GLOB-005",
    MUST,
    requires={"glob"},
    text="A deeper .gitignore overrides a shallower one: its '!' line re-includes a file the "
    "parent's .gitignore excluded, and its exclusion applies where the parent's did not.",
    rationale="git gives lower-level ignore files precedence; another precedence lists files "
    "git ignores, or hides files git tracks.",
)
def test_deeper_gitignore_overrides(session, disk):
    disk.write(".gitignore", "*.gen\n")
    disk.write("pkg/.gitignore", "!schema.gen\n*.bak\n")
    for rel in ("schema.gen", "other.gen", "pkg/schema.gen", "pkg/other.gen", "root.bak"):
        disk.write(rel, "x\n")
    disk.write("pkg/old.bak", "x\n")
    assert _paths(session, "**/*.gen") == ["pkg/schema.gen"]
    assert _paths(session, "**/*.bak") == ["root.bak"]


@clause(
    "GLOB-006",
    SHOULD,
    requires={"glob"},
    text="A file below an excluded directory stays excluded even if a later '!' line names it "
    "(git's rule: a path whose parent directory is excluded cannot be re-included).",
    rationale="git never looks inside an excluded directory; a search that does shows files "
    "git ignores and the agent cannot commit.",
)
def test_no_reinclusion_below_an_excluded_directory(session, disk):
    disk.write(".gitignore", "build/\n!build/keep.txt\n")
    disk.write("build/keep.txt", "x\n")
    disk.write("build/other.txt", "x\n")
    disk.write("src.txt", "x\n")
    assert _paths(session, "**/*.txt") == ["src.txt"]


@clause(
    "GLOB-007",
    MUST,
    requires={"glob"},
    text="A pattern with a trailing '/' matches directories only: directories of that name at "
    "any depth are excluded with their contents, a file of that name is not.",
    rationale="'build/' must not hide a script called 'build'; treating it as a plain name "
    "pattern does.",
)
def test_directory_only_pattern(session, disk):
    disk.write(".gitignore", "build/\n")
    disk.write("build/out.txt", "x\n")
    disk.write("pkg/build/deep/out.txt", "x\n")
    disk.write("tools/build", "#!/bin/sh\n")
    disk.write("pkg/src.txt", "x\n")
    everything = _paths(session, "**")
    assert "tools/build" in everything
    assert "pkg/src.txt" in everything
    assert not [p for p in everything if p == "build" or p.startswith(("build/", "pkg/build"))]


@clause(
    "GLOB-008",
    MUST,
    requires={"glob"},
    text="A pattern with a leading or middle '/' is anchored at its .gitignore's directory: "
    "'/out' excludes only the root's out, 'docs/*.tmp' only docs/ beside the file.",
    rationale="Anchored patterns are how projects ignore one generated directory without "
    "hiding same-named sources deeper down.",
)
def test_anchored_patterns(session, disk):
    disk.write(".gitignore", "/out\ndocs/*.tmp\n")
    disk.write("pkg/.gitignore", "/cache\n")
    for rel in (
        "out/a.txt",
        "src/out/a.txt",
        "docs/x.tmp",
        "src/docs/x.tmp",
        "docs/keep.txt",
        "pkg/cache/c.txt",
        "cache/c.txt",
        "pkg/sub/cache/c.txt",
    ):
        disk.write(rel, "x\n")
    assert sorted(_paths(session, "**/*.txt")) == [
        "cache/c.txt",
        "docs/keep.txt",
        "pkg/sub/cache/c.txt",
        "src/out/a.txt",
    ]
    assert _paths(session, "**/*.tmp") == ["src/docs/x.tmp"]


@clause(
    "GLOB-009",
    MUST,
    requires={"glob"},
    text="Nothing inside a .git directory (at the root or nested) is ever listed, even with "
    "no .gitignore, a '!.git' line, or a pattern that names it.",
    rationale="Git's object store is large, binary and not the agent's to edit; listing it "
    "floods results and invites writes that corrupt the repository.",
)
def test_git_directory_always_excluded(session, disk):
    disk.write(".gitignore", "!.git\n!.git/\n!.git/**\n")
    disk.write(".git/HEAD", "ref: refs/heads/main\n")
    disk.write(".git/config", "[core]\n")
    disk.write(".git/objects/ab/cdef", b"\x78\x01")
    disk.write("vendor/lib/.git/HEAD", "ref: refs/heads/main\n")
    disk.write("vendor/lib/code.py", "x\n")
    disk.write("main.py", "x\n")
    for pattern in ("**", "**/*", ".git/**", "**/HEAD", "**/.git/**", "**/config"):
        found = _paths(session, pattern)
        assert not [p for p in found if ".git" in p.split("/")], (pattern, found)
    assert sorted(_paths(session, "**/*.py")) == ["main.py", "vendor/lib/code.py"]


@clause(
    "GLOB-010",
    SHOULD,
    requires={"glob"},
    text="Patterns in the root's .git/info/exclude apply like those of the root .gitignore.",
    rationale="Developers keep personal ignores there; git honours them and so should a "
    "search of the same repository.",
)
def test_info_exclude_applies(session, disk):
    disk.write(".git/info/exclude", "scratch/\n*.private\n")
    disk.write("scratch/notes.md", "x\n")
    disk.write("plan.private", "x\n")
    disk.write("README.md", "x\n")
    assert _paths(session, "**/*.md") == ["README.md"]
    assert _paths(session, "**/*.private") == []


@clause(
    "GLOB-011",
    MUST,
    requires={"glob"},
    text="With a path argument, the ignore files of the directories above it still apply.",
    rationale="The repository's ignore rules do not change with where the search starts; "
    "scoping a search to src/ must not reveal its ignored build output.",
)
def test_rules_above_the_search_path_apply(session, disk):
    disk.write(".gitignore", "*.log\ngen/\n")
    disk.write("src/app.py", "x\n")
    disk.write("src/trace.log", "x\n")
    disk.write("src/gen/out.py", "x\n")
    assert _paths(session, "**/*.log", path="src") == []
    assert _paths(session, "**/*.py", path="src") == ["src/app.py"]


@clause(
    "GLOB-012",
    MUST,
    requires={"glob"},
    text="A symlink to a directory outside the root (absolute or relative target, at any depth) "
    "is never traversed: no listed path passes through it and no name from outside appears.",
    rationale="Following such a link hands the agent the file names, then the contents, of "
    "a home directory, another project or /etc.",
)
def test_link_to_outside_directory_not_traversed(session, disk, alias, symlinks):
    (alias.outside / "nested").mkdir()
    (alias.outside / "outside-only.txt").write_text("secret\n")
    (alias.outside / "nested" / "deeper-outside.txt").write_text("secret\n")
    disk.write("inside.txt", "x\n")
    disk.write("sub/inside2.txt", "x\n")
    links = ("out", "rel-out", "sub/deep-out")
    alias.symlink("out", alias.outside)
    alias.symlink("rel-out", "../outside")
    alias.symlink("sub/deep-out", "../../outside")
    before = disk.snapshot()
    for pattern in ("**", "**/*", "**/*.txt", "out/**", "rel-out/*", "**/deeper-outside.txt"):
        found = _paths(session, pattern)
        _assert_relative_inside(found)
        through = [p for p in found if p.startswith(tuple(link + "/" for link in links))]
        assert not through, (pattern, through)
        leaked = [p for p in found if p.rsplit("/", 1)[-1].endswith("-outside.txt")]
        assert not leaked, (pattern, leaked)
        assert not [p for p in found if "outside-only" in p], (pattern, found)
    assert sorted(_paths(session, "**/*.txt")) == ["inside.txt", "sub/inside2.txt"]
    disk.assert_unchanged(before)


@clause(
    "GLOB-013",
    MUST,
    requires={"glob"},
    text="A symlink to a directory inside the root is not entered either: its files are listed "
    "once, under their real path.",
    rationale="Following internal links lists one file under several names (or forever, with "
    "a cycle); the agent then edits what it thinks are different files.",
)
def test_link_to_inside_directory_not_entered(session, disk, alias, symlinks):
    disk.write("real/a.py", "x\n")
    disk.write("real/deep/b.py", "x\n")
    alias.symlink("linked", "real")
    alias.symlink("pkg/abs-linked", disk.root / "real")
    found = _paths(session, "**/*.py")
    assert sorted(found) == ["real/a.py", "real/deep/b.py"]


@clause(
    "GLOB-014",
    MUST,
    requires={"glob"},
    text="Symlink loops (a self-link, two links to each other, a link to an ancestor) do not "
    "hang a glob: it returns within seconds, with the real files listed.",
    rationale="A walker that follows links into a cycle never returns, and the agent's turn "
    "dies with it.",
)
def test_symlink_loops_do_not_hang(session, disk, alias, symlinks):
    disk.write("a.txt", "x\n")
    disk.write("sub/b.txt", "x\n")
    # Positive control, outside the bound (a server's start is not the glob): the files
    # are found before the loops are planted.
    assert sorted(session.glob("**/*.txt").paths) == ["a.txt", "sub/b.txt"]
    loops = plant_symlink_loops(disk, alias)
    before = disk.snapshot()
    for pattern in ("**", "**/*.txt", "sub/**"):
        found = list(within(10, lambda p=pattern: session.glob(p).paths, what=f"glob({pattern!r})"))
        assert not [p for p in found if p.startswith(loops)], (pattern, found)
    txt = within(10, lambda: session.glob("**/*.txt").paths, what="glob('**/*.txt')")
    assert sorted(txt) == ["a.txt", "sub/b.txt"]
    disk.assert_unchanged(before)


@clause(
    "GLOB-015",
    MUST,
    requires={"glob"},
    text="Results list every matching file before any matching directory, whatever their mtimes.",
    rationale="Agents usually want files; a directory listed among them takes a result slot "
    "and a wasted Read.",
)
def test_files_before_directories(session, disk):
    for name in ("alpha-file", "omega-file"):
        disk.write(name, "x\n")
    for name in ("beta-dir", "zeta-dir"):
        disk.mkdir(name)
    set_mtime(disk, "alpha-file", 10)
    set_mtime(disk, "omega-file", 20)
    set_mtime(disk, "beta-dir", 900)
    set_mtime(disk, "zeta-dir", 800)
    found = _paths(session, "*-*")
    assert found[:2] in (["omega-file", "alpha-file"], ["alpha-file", "omega-file"]), found
    assert sorted(found[2:]) == ["beta-dir", "zeta-dir"], found


@clause(
    "GLOB-016",
    MUST,
    requires={"glob"},
    text="Within files, and within directories, results are ordered by mtime, newest first, "
    "then by path for equal mtimes, across all depths.",
    rationale="The file changed most recently is usually the one the agent works on; a fixed "
    "tie-break keeps repeated searches identical.",
)
def test_order_by_mtime_then_path(session, disk):
    for rel in ("old.txt", "new.txt", "mid-b.txt", "mid-a.txt", "sub/deep.txt"):
        disk.write(rel, "x\n")
    for rel in ("adir", "mdir", "zdir"):
        disk.mkdir(rel)
    set_mtime(disk, "old.txt", 0)
    set_mtime(disk, "new.txt", 300)
    set_mtime(disk, "sub/deep.txt", 200)
    set_mtime(disk, "mid-a.txt", 100)
    set_mtime(disk, "mid-b.txt", 100)
    set_mtime(disk, "zdir", 500)
    set_mtime(disk, "adir", 50)
    set_mtime(disk, "mdir", 50)
    assert _paths(session, "**/*.txt") == [
        "new.txt",
        "sub/deep.txt",
        "mid-a.txt",
        "mid-b.txt",
        "old.txt",
    ]
    assert _paths(session, "*dir") == ["zdir", "adir", "mdir"]


@clause(
    "GLOB-017",
    MUST,
    requires={"glob"},
    text="With more matches than max_results, exactly max_results matching paths are returned "
    "with truncated=True and total_matches equal to the number returned.",
    rationale="An agent that is not told the list was cut concludes the missing files do not "
    "exist.",
)
def test_max_results_truncates(session, disk):
    names = [f"f{i}.py" for i in range(7)]
    for name in names:
        disk.write(name, "x\n")
    result = session.glob("*.py", max_results=3)
    assert result.truncated is True
    assert len(result.paths) == 3
    assert result.total_matches == 3
    assert len(set(result.paths)) == 3 and set(result.paths) <= set(names)


@clause(
    "GLOB-018",
    MUST,
    requires={"glob"},
    text="With no more matches than max_results (fewer, or exactly max_results), every match "
    "is returned with truncated=False and total_matches equal to the number returned.",
    rationale="A false truncation flag sends the agent searching for files that are not there.",
)
def test_under_max_results_is_not_truncated(session, disk):
    for name in ("a.py", "b.py"):
        disk.write(name, "x\n")
    for limit in (10, 2):
        result = session.glob("*.py", max_results=limit)
        assert sorted(result.paths) == ["a.py", "b.py"], limit
        assert result.truncated is False, limit
        assert result.total_matches == 2, limit


@clause(
    "GLOB-019",
    MUST,
    requires={"glob"},
    text="A path argument limits the search to that directory, and results are still named "
    "relative to the workspace root.",
    rationale="A path relative to the search directory is a different file when the agent "
    "passes it to Read.",
)
def test_path_argument_scopes_the_search(session, disk):
    for rel in ("top.py", "src/a.py", "src/pkg/b.py", "tests/t.py"):
        disk.write(rel, "x\n")
    assert sorted(_paths(session, "**/*.py", path="src")) == ["src/a.py", "src/pkg/b.py"]
    absolute = str(disk.root / "src")
    assert sorted(_paths(session, "**/*.py", path=absolute)) == ["src/a.py", "src/pkg/b.py"]


@clause(
    "GLOB-020",
    MUST,
    requires={"glob", "confinement"},
    text="A path argument outside the root ('..', an absolute path outside, a symlink to an "
    "outside directory) fails with OUTSIDE_WORKSPACE and changes nothing.",
    rationale="Glob's path is a path like any other; confining only Read and Write leaves "
    "Glob to map the rest of the disk.",
)
def test_path_argument_is_confined(session, disk, alias):
    (alias.outside / "secret.txt").write_text("secret\n")
    disk.write("inside.txt", "x\n")
    disk.write("sub/kept.txt", "x\n")
    # Positive control: the same call, through a relative path that climbs and an
    # absolute path, both inside, lists the root's files.
    assert "inside.txt" in _paths(session, "**", path="sub/..")
    assert "inside.txt" in _paths(session, "**", path=str(disk.root))
    paths = escaping_paths(alias, {"out": alias.outside})
    before = disk.snapshot()
    for path in paths:
        with raises_code("OUTSIDE_WORKSPACE"):
            session.glob("**", path=path)
    disk.assert_unchanged(before)


@clause(
    "GLOB-021",
    SHOULD,
    requires={"glob"},
    text="A pattern that matches nothing is a success with no paths, truncated=False and "
    "total_matches 0.",
    rationale="'No such files' is an answer; an error makes agents retry or give up on a "
    "correct search.",
)
def test_no_match_is_an_empty_success(session, disk):
    disk.write("a.py", "x\n")
    result = session.glob("**/*.rs")
    assert list(result.paths) == []
    assert result.truncated is False
    assert result.total_matches == 0
