"""The allowed collision matrix: which bodies (link names, object ids) may touch."""
from __future__ import annotations

from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.srdf import SemanticModel


class AllowedCollisionMatrix:
    """Which bodies (link names, object ids) may touch.

    Built from adjacency (links joined by a joint, geometry-less links in
    between skipped) and the SRDF (see :meth:`from_model`): the model's entries,
    each "allowed". Run-time entries (:meth:`with_entry`, :meth:`with_entries`)
    override them. Default entries (MoveIt's ``default_entry_names``) say whether
    a body may touch everything it has no entry with.

    Precedence of :meth:`allowed` (MoveIt's): a run-time entry for the pair, else a
    model entry (allowed), else the default entries of the two bodies (one given:
    that one; both: allowed only if both allow), else not allowed.
    """

    def __init__(self, defaults: frozenset[frozenset[str]] = frozenset(),
                 overrides: dict[frozenset[str], bool] | None = None,
                 default_entries: dict[str, bool] | None = None) -> None:
        self._defaults = defaults
        self._overrides = dict(overrides or {})
        self._default_entries = dict(default_entries or {})
        self._naming_other: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}

    @classmethod
    def from_model(cls, robot: RobotModel, semantic: SemanticModel, allow_adjacent: bool) -> "AllowedCollisionMatrix":
        """The SRDF's disabled pairs, plus (with ``allow_adjacent``) each link with geometry
        and its nearest ancestor with geometry."""
        with_geometry = {e.link for e in robot.collision_elements}
        defaults = set(semantic.disabled_pairs)
        if allow_adjacent:
            for link in with_geometry:
                ancestor = _nearest_geometric_ancestor(robot, link, with_geometry)
                if ancestor is not None:
                    defaults.add(frozenset((link, ancestor)))
        return cls(frozenset(defaults))

    def allowed(self, a: str, b: str) -> bool:
        key = frozenset((a, b))
        if key in self._overrides:
            return self._overrides[key]
        if key in self._defaults:
            return True
        if self._default_entries:
            da, db = self._default_entries.get(a), self._default_entries.get(b)
            if da is None:
                return bool(db)
            return da if db is None else (da and db)
        return False

    @property
    def has_default_entries(self) -> bool:
        return bool(self._default_entries)

    @property
    def default_entries(self) -> dict[str, bool]:
        """Body name -> allowed with every body it has no entry with (a copy)."""
        return dict(self._default_entries)

    def entries(self) -> dict[frozenset[str], bool]:
        """Every explicit entry, pair -> allowed: the model's (allowed) under the run-time ones."""
        found = {pair: True for pair in self._defaults}
        found.update(self._overrides)
        return found

    def pairs_naming_other_than(self, names) -> tuple[tuple[str, str], ...]:
        """Every pair of bodies this matrix has an entry for (default or set) that names a
        body outside ``names`` (e.g. outside the robot's links: an object), as (a, b).

        Computed once per matrix and ``names``: a scene asks it on every update.
        """
        key = tuple(names)
        found = self._naming_other.get(key)
        if found is None:
            known = frozenset(key)
            found = tuple(tuple(sorted(pair)) for pair in (set(self._defaults) | set(self._overrides))
                          if len(pair) == 2 and not pair <= known)
            self._naming_other[key] = found
        return found

    def with_entry(self, a: str, b: str, allowed: bool) -> "AllowedCollisionMatrix":
        """A copy in which ``a`` and ``b`` may touch (``allowed``) or not, whatever the defaults say."""
        return self.with_entries([(a, b, allowed)])

    def with_entries(self, entries=(), default_entries=(), *, replace: bool = False) -> "AllowedCollisionMatrix":
        """A copy with run-time ``entries`` ((a, b, allowed) triples) and ``default_entries``
        ((name, allowed) pairs) set; with ``replace``, the model's matrix with only these.

        Names are not checked here (see ``PlanningScene.set_allowed_collisions``).
        """
        overrides = {} if replace else dict(self._overrides)
        for a, b, allowed in entries:
            overrides[frozenset((a, b))] = bool(allowed)
        defaults = {} if replace else dict(self._default_entries)
        for name, allowed in default_entries:
            defaults[name] = bool(allowed)
        return AllowedCollisionMatrix(self._defaults, overrides, defaults)


def _nearest_geometric_ancestor(robot: RobotModel, link: str, has_geometry: set[str]) -> str | None:
    parent = robot.parent_link(link)
    while parent is not None and parent not in has_geometry:
        parent = robot.parent_link(parent)
    return parent
