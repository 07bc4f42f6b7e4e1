"""Judging the disk after a killed server restarted: the root against the trees before
and after the operation, file by file (``judge``).

``before`` / ``after`` (every file old or new, all on one side), ``mixed`` (some old and
some new: not atomic across files), ``torn`` (a file holding neither), ``mode`` (the
right bytes with the wrong permission bits), and strays (files in neither tree).
"""

from __future__ import annotations

import attrs

from editspec.fault_injection import trees

#: System calls worth a kill, grouped by what they do. ``?`` lets strace skip a name the
#: architecture does not have (aarch64 has no plain ``rename``).


@attrs.frozen
class Judgement:
    """The workspace after a crash and a restart, compared with the trees before and after."""

    state: str  # "before" | "after" | "mixed" | "torn" | "mode"
    torn: tuple[str, ...] = ()  # paths holding neither their old nor their new bytes
    mode: tuple[str, ...] = ()  # right bytes, wrong permission bits
    old: tuple[str, ...] = ()  # paths as before (when the change had new ones)
    new: tuple[str, ...] = ()  # paths as after
    strays: tuple[str, ...] = ()  # paths in neither tree
    lines: tuple[str, ...] = ()

    @property
    def atomic(self) -> bool:
        return self.state in ("before", "after")


def _same(a: trees.Entry | None, b: trees.Entry | None, *, modes: bool = True) -> bool:
    if a is None or b is None:
        return a is b
    if not modes:
        a, b = attrs.evolve(a, mode=None), attrs.evolve(b, mode=None)
    return trees.equal({"x": a}, {"x": b})


def judge(before: trees.Tree, after: trees.Tree, actual: trees.Tree) -> Judgement:
    """Is ``actual`` all-before or all-after, file by file? Strays are listed apart."""
    changed = sorted(
        path
        for path in before.keys() | after.keys()
        if not _same(before.get(path), after.get(path))
    )
    torn, mode, old, new, lines = [], [], [], [], []
    for path in changed:
        got, was, will = actual.get(path), before.get(path), after.get(path)
        if _same(got, was):
            old.append(path)
        elif _same(got, will):
            new.append(path)
        elif _same(got, was, modes=False) or _same(got, will, modes=False):
            mode.append(path)
            assert got is not None
            lines.append(f"{path}: the right bytes with mode {got.mode:o}")
        else:
            torn.append(path)
            found = "missing" if got is None else got.describe()
            want = " or ".join(
                "absent" if entry is None else entry.describe() for entry in (was, will)
            )
            lines.append(f"{path}: torn: expected {want}, found {found}")
    unchanged = [p for p in before.keys() & after.keys() if p not in changed]
    for path in sorted(unchanged):
        if not _same(actual.get(path), before[path]):
            torn.append(path)
            lines.append(f"{path}: an untouched file changed: {trees.diff(before, actual)[:1]}")
    strays = sorted(set(actual) - set(before) - set(after))
    lines.extend(f"{path}: stray {actual[path].describe()}" for path in strays)
    if torn:
        state = "torn"
    elif mode:
        state = "mode"
    elif old and new:
        state = "mixed"
        lines.append(f"mixed: {', '.join(old)} old; {', '.join(new)} new")
    else:
        state = "after" if new else "before"
    return Judgement(
        state, tuple(torn), tuple(mode), tuple(old), tuple(new), tuple(strays), tuple(lines)
    )
