"""The clause registry: ``@clause`` turns a test function into one numbered clause.

A clause is a test with its normative text beside it (CONVENTIONS, "The executable
spec"). The decorator validates the clause where it is written, so a malformed id, an
unknown level or a capability outside the closed list fails at import, and records it
in ``REGISTRY`` for the catalog, the report and the self-checks.

Identity: a clause is defined by one function. The same module may be imported twice
under different names (pytest's ``importlib`` mode next to the catalog loader, or a
source checkout next to an installed copy); a re-definition from the same file name and
function name replaces the earlier entry, while the same id on a different function is a
``ClauseDefinitionError``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Final, TypeVar

import attrs

from editspec.contract import AREAS, CAPABILITIES, profile_for

MUST: Final = "MUST"
SHOULD: Final = "SHOULD"
MAY: Final = "MAY"
LEVELS: tuple[str, ...] = (MUST, SHOULD, MAY)

CLAUSE_ATTRIBUTE = "__editspec_clause__"
_ID = re.compile(r"^(?P<area>[A-Z]+)-(?P<number>\d{3})$")

F = TypeVar("F", bound=Callable[..., object])


class ClauseDefinitionError(ValueError):
    """A clause is malformed or its id is already taken by another test."""


@attrs.frozen(kw_only=True)
class Clause:
    """One numbered, normative statement and the test that checks it."""

    id: str
    level: str
    text: str
    rationale: str
    requires: frozenset[str]
    area: str
    profile: str
    withdrawn: str | None = None
    module: str = ""
    function: str = ""
    source: str = ""

    @property
    def number(self) -> int:
        return int(self.id.rsplit("-", 1)[1])

    @property
    def sort_key(self) -> tuple[int, int]:
        return (AREAS.index(self.area), self.number)

    def to_dict(self) -> dict[str, object]:
        """The catalog entry (what the catalog hash covers)."""
        return {
            "id": self.id,
            "level": self.level,
            "area": self.area,
            "profile": self.profile,
            "requires": sorted(self.requires),
            "text": self.text,
            "rationale": self.rationale,
            "withdrawn": self.withdrawn,
        }


class Registry:
    """Every clause defined so far, by id."""

    def __init__(self) -> None:
        self._by_id: dict[str, Clause] = {}

    def add(self, item: Clause) -> None:
        previous = self._by_id.get(item.id)
        if previous is not None and _identity(previous) != _identity(item):
            raise ClauseDefinitionError(
                f"clause id {item.id} is already used by {previous.function} in "
                f"{os.path.basename(previous.source)}; ids are never reused"
            )
        self._by_id[item.id] = item

    def get(self, clause_id: str) -> Clause | None:
        return self._by_id.get(clause_id)

    def all(self) -> list[Clause]:
        """Every clause, in catalog order (area, then number)."""
        return sorted(self._by_id.values(), key=lambda c: c.sort_key)

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, clause_id: object) -> bool:
        return clause_id in self._by_id


def _identity(item: Clause) -> tuple[str, str]:
    return (os.path.basename(item.source), item.function)


REGISTRY = Registry()


def clause(
    clause_id: str,
    level: str,
    *,
    text: str,
    rationale: str,
    requires: Iterable[str] = (),
    profile: str | None = None,
    withdrawn: str | None = None,
) -> Callable[[F], F]:
    """Declare the decorated test as clause ``clause_id`` at ``level`` (MUST/SHOULD/MAY).

    ``requires`` names the driver capabilities the clause needs; a driver without one of
    them gets the clause reported UNSUPPORTED. ``profile`` overrides the profile derived
    from ``requires``. ``withdrawn`` (a reason) retires a clause without freeing its id.
    """
    match = _ID.match(clause_id) if isinstance(clause_id, str) else None
    if match is None:
        raise ClauseDefinitionError(f"clause id {clause_id!r} is not of the form AREA-NNN")
    area = match.group("area")
    if area not in AREAS:
        raise ClauseDefinitionError(f"{clause_id}: unknown area {area} (known: {', '.join(AREAS)})")
    if level not in LEVELS:
        raise ClauseDefinitionError(
            f"{clause_id}: level must be MUST, SHOULD or MAY, not {level!r}"
        )
    if isinstance(requires, str):
        raise ClauseDefinitionError(f"{clause_id}: requires must be a set of names, not a string")
    needed = frozenset(requires)
    unknown = sorted(needed - CAPABILITIES)
    if unknown:
        raise ClauseDefinitionError(f"{clause_id}: unknown capabilities {unknown}")
    if not text.strip() or not rationale.strip():
        raise ClauseDefinitionError(f"{clause_id}: a clause needs a text and a rationale")
    chosen_profile = profile if profile is not None else profile_for(needed)

    def decorate(function: F) -> F:
        if hasattr(function, CLAUSE_ATTRIBUTE):
            raise ClauseDefinitionError(
                f"{clause_id}: {function.__qualname__} already is clause "
                f"{getattr(function, CLAUSE_ATTRIBUTE).id}; a test checks exactly one clause"
            )
        code = getattr(function, "__code__", None)
        item = Clause(
            id=clause_id,
            level=level,
            text=" ".join(text.split()),
            rationale=" ".join(rationale.split()),
            requires=needed,
            area=area,
            profile=chosen_profile,
            withdrawn=withdrawn,
            module=getattr(function, "__module__", ""),
            function=function.__qualname__,
            source=code.co_filename if code is not None else "",
        )
        REGISTRY.add(item)
        setattr(function, CLAUSE_ATTRIBUTE, item)
        return function

    return decorate


def clause_of(obj: object) -> Clause | None:
    """The clause a test function checks, or None."""
    found = getattr(obj, CLAUSE_ATTRIBUTE, None)
    return found if isinstance(found, Clause) else None
