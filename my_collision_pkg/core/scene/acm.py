"""The allowed collision matrix: which bodies (link names, object ids) may touch."""
from __future__ import annotations

from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.srdf import SemanticModel


class AllowedCollisionMatrix:
    """Which bodies (link names, object ids) may touch.

    Built from adjacency (links joined by a joint, geometry-less links in
    between skipped) and the SRDF (see :meth:`from_model`); entries set at run
    time override both.
    """

    def __init__(self, defaults: frozenset[frozenset[str]] = frozenset(),
                 overrides: dict[frozenset[str], bool] | None = None) -> None:
        self._defaults = defaults
        self._overrides = dict(overrides or {})
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
        return key in self._defaults

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
        overrides = dict(self._overrides)
        overrides[frozenset((a, b))] = allowed
        return AllowedCollisionMatrix(self._defaults, overrides)


def _nearest_geometric_ancestor(robot: RobotModel, link: str, has_geometry: set[str]) -> str | None:
    parent = robot.parent_link(link)
    while parent is not None and parent not in has_geometry:
        parent = robot.parent_link(parent)
    return parent
