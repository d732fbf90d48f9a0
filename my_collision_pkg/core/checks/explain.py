"""Explain: why one configuration is refused, with its colliding bodies and contacts.

The verdict of each pair is the predicate's own (:meth:`pair_tests.PosedPairs.collides`),
so explain and the predicate never disagree. The contacts come from the checker's
distance function (:func:`narrowphase.pair_contacts`): the exact signed distance of
primitive and convex pairs (coal), the deepest point of each overlap region where a
closed mesh penetrates, the exact separation of meshes that are apart. A pair with an
open mesh (no inside) keeps fcl's triangle contacts. Self contacts come before
environment ones; near misses (``contact_distance > 0``) after the contacts that refuse
the configuration.

:class:`Explainer` is also what the motion checks use of the configuration checks: the
resolver of named joint values, the batch predicate's first collision, and explain itself.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from my_collision_pkg.core.checks.contact_builder import ContactBuilder, single_contact_point
from my_collision_pkg.core.checks.narrowphase import (checked_convex, coal_distance, coal_transform, hull_mtd,
                                                      pair_contacts)
from my_collision_pkg.core.checks.penetration import (CHECK_ABS_M, CHECK_REL, LOCAL_CHECK_RAD, kernel_parts,
                                                      nearly_convex)
from my_collision_pkg.core.kernels.codes import KIND_CONVEX, KIND_SPHERE
from my_collision_pkg.core.kernels.mtd import coal_answer_is_mtd
from my_collision_pkg.core.checks.pair_tests import PairTestScratch, PosedPairs, first_collision, posed_candidates
from my_collision_pkg.core.checks.request import CheckRequest, ConfigurationResolver
from my_collision_pkg.core.checks.results import Contact, Explanation, Status
from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.scene.planning_scene import CollisionWorld, PairSelection

_HULL_KEY = "explain: hull parts"       # CollisionWorld.cached key, with the shape index
_OWNERS_KEY = "explain: shape owners"   # CollisionWorld.cached key


def _shape_owners(world: CollisionWorld) -> list[str]:
    return [entry.owner for entry in world.shapes]


class Explainer:
    """Explain over one scene, with a checker's contact budgets.

    Parameters
    ----------
    resolver : ConfigurationResolver
        Named joint values to configurations, and the limits check.
    scratch : PairTestScratch
        The checker's per-thread fcl posing state.
    max_contacts : int
        Contact budget of a request that names none.
    contacts_per_pair : int
        Most contacts kept for one pair of shapes.
    """

    def __init__(self, resolver: ConfigurationResolver, scratch: PairTestScratch, *, max_contacts: int,
                 contacts_per_pair: int) -> None:
        self.resolver = resolver
        self.scratch = scratch
        self.max_contacts = int(max_contacts)
        self.contacts_per_pair = int(contacts_per_pair)

    def budget(self, max_contacts: int | None) -> int:
        """The contact budget of a request asking for ``max_contacts`` (None or 0: the checker's own)."""
        return self.max_contacts if not max_contacts else int(max_contacts)

    def first_collision(self, world: CollisionWorld, q: np.ndarray, selection: PairSelection, *,
                        shapes: np.ndarray | None = None, stop=None) -> np.ndarray:
        """Per configuration of ``q`` (N, A), the index into ``selection.pairs`` of the first colliding pair, or -1
        (``shapes``, ``stop``: see :func:`pair_tests.first_collision`)."""
        return first_collision(self.scratch, world, q, selection, shapes=shapes, stop=stop)

    def explain(self, joint_names, positions, request: CheckRequest, stop=None) -> Explanation:
        """See :meth:`checker.CollisionChecker.explain` (never raises on bad input).

        ``stop``: a :class:`limits.WorkMeter` whose stop event is looked at between pairs
        (:class:`errors.RequestStopped` when it is set)."""
        resolver = self.resolver
        scene = resolver.scene
        robot = scene.robot
        try:
            world = request.world_of(scene)
            q = resolver.single_configuration(joint_names, positions)
            request.check_contact_distance()
            selection = request.selection(world)
        except CollisionPkgError as exc:
            return Explanation(False, Status.INVALID_REQUEST, str(exc), joint_names=robot.active_joint_names,
                               positions=scene.current_positions.copy())
        names = robot.active_joint_names
        limits = resolver.limits_message(q[0])
        if limits is not None:
            return Explanation(False, Status.OUT_OF_BOUNDS, limits, joint_names=names, positions=q[0])
        budget = self.budget(request.max_contacts)
        refusing, all_contacts = self._pair_contacts_at(world, q, selection, request.contact_distance, stop)
        spent = False
        if len(all_contacts) > budget:
            all_contacts, spent = all_contacts[:budget], True
        if not refusing:
            return Explanation(True, Status.VALID, "valid", (), tuple(all_contacts), names, q[0], spent)
        owners = world.cached(_OWNERS_KEY, _shape_owners, world)
        links: dict[str, None] = {}         # the colliding bodies, in order of first appearance
        body_pairs = set()
        for a, b in selection.pairs[[k for k, _ in refusing]].tolist():
            owner_a, owner_b = owners[a], owners[b]
            links[owner_a] = links[owner_b] = None
            body_pairs.add((owner_a, owner_b) if owner_a <= owner_b else (owner_b, owner_a))
        p, first = refusing[0]
        message = collision_message(world, selection.index[p], first, selection.margins[p], request,
                                    len(body_pairs))
        return Explanation(False, Status.IN_COLLISION, message, tuple(links), tuple(all_contacts), names, q[0], spent)

    def contacts_over(self, world: CollisionWorld, q: np.ndarray, selection: PairSelection,
                      contact_distance: float, stop=None) -> tuple[list[tuple[int, Contact]], list[Contact]]:
        """At configuration ``q`` (1, A), over the pairs of ``selection`` (which may be a subset of a
        request's, e.g. a motion's culled pairs): the refusing pairs (index into ``selection``,
        first contact) and every contact, refusing pairs' first, self pairs first (no budget)."""
        return self._pair_contacts_at(world, q, selection, contact_distance, stop)

    def _pair_contacts_at(self, world: CollisionWorld, q: np.ndarray, selection: PairSelection,
                          contact_distance: float, stop=None) -> tuple[list[tuple[int, Contact]], list[Contact]]:
        """At configuration ``q`` (1, A): the refusing pairs (index into the selection, first
        contact) and every contact (colliding pairs' first, then near misses), self pairs first."""
        index, pairs, margins = selection.index, selection.pairs, selection.margins
        cull = np.maximum(margins, contact_distance)
        T_world_links, T_world_shape, candidates = posed_candidates(world, q, pairs, cull)
        posed = self.scratch.posed(world, T_world_shape[0])
        build = ContactBuilder(world, T_world_links[0], T_world_shape[0])
        survivors = np.flatnonzero(candidates[0])
        is_self = world.pair_is_self[index[survivors]]
        order = np.concatenate([survivors[is_self], survivors[~is_self]])
        colliding, near = [], []
        refusing: list[tuple[int, Contact]] = []
        coal_poses: dict = {}           # the shapes' coal poses at this configuration, made on use
        for p, (a, b), call, margin, swapped in zip(order.tolist(), pairs[order].tolist(),
                                                    selection.calls[order].tolist(), margins[order].tolist(),
                                                    selection.swapped[order].tolist()):
            if stop is not None:
                stop.check_stop()
            found = None
            ha, hb = hull_parts(world, a), hull_parts(world, b)
            if ha is not None and hb is not None and margin <= 0.0 and (ha[4] or hb[4]) and (ha[7] or hb[7]):
                # nearly convex solids refused without padding (the common case): the predicate's verdict,
                # then their hulls' MTD (pair_contacts' first rule, with less Python around the native calls)
                found = posed.collides(a, b, call, margin)
                if not found and contact_distance <= 0.0:
                    continue
                contact = self._hull_contact(build, a, b, ha, hb, coal_poses) if found else None
                if contact is not None:
                    refusing.append((p, contact))
                    colliding.append(contact)
                    continue
            found, contacts = self.pair_contacts(build, posed, a, b, call, swapped, margin, contact_distance,
                                                 coal_poses=coal_poses, found=found)
            if found:
                refusing.append((p, contacts[0]))
                colliding.extend(contacts)
            else:
                near.extend(contacts)
        return refusing, colliding + near

    def pair_contacts(self, build: ContactBuilder, posed: PosedPairs, a: int, b: int, call, swapped: bool,
                      margin: float, contact_distance: float, *,
                      coal_poses: dict | None = None, found: bool | None = None) -> tuple[bool, list[Contact]]:
        """(in collision, contacts) for one shape pair, at most ``contacts_per_pair`` contacts.

        ``call`` (2,) and ``swapped``: the pair's fcl call order; ``margin``: its padding,
        metres; pairs closer than ``contact_distance`` (metres) are reported too.
        ``coal_poses``: a dict kept for this configuration (``narrowphase.coal_pose``); ``found``: the
        predicate's verdict on the pair when the caller has it already (None: asked here).
        """
        world, T_c = build.world, build.T_world_shape
        ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
        if ga.solid_kind < 0 or gb.solid_kind < 0:
            return posed.fcl_contacts(build, a, b, call, swapped, margin, contact_distance, self.contacts_per_pair)
        if found is None:
            found = posed.collides(a, b, call, margin)
        threshold = max(margin, contact_distance)
        if not found and threshold <= 0.0:
            return False, []
        # nearly convex meshes that penetrate for certain: their hulls' MTD without the deepest-point search.
        # Refused without padding, the pair penetrates (fcl found the surfaces crossing, or one body is
        # inside the other); refused with padding, only where fcl finds the surfaces crossing.
        closed = ga.is_closed_bvh or gb.is_closed_bvh
        penetrating = found and closed and margin <= 0.0
        if penetrating and (ga.is_bvh or gb.is_bvh) and nearly_convex(world, a) and nearly_convex(world, b):
            hulls = hull_mtd(world, T_c, a, b, None, coal_poses)     # narrowphase.pair_contacts' first rule
            if hulls is not None:
                return True, [build.make(a, b, hulls.p0_world, hulls.normal_world, hulls.distance_m, *hulls.subshapes,
                                         single=single_contact_point(ga, gb), rule=hulls.rule)]
        cross = found and closed and not penetrating and posed.surfaces_cross(call)
        results = pair_contacts(world, T_c, a, b, self.contacts_per_pair if found else 1, likely_penetrating=found,
                                surfaces_cross=cross, penetrating=penetrating, coal_poses=coal_poses)
        if found and not results[0].exact:
            # penetrating meshes with no surface point inside the other body (an edge through
            # an edge): fcl's contacts against single triangles, marked as such
            contacts = posed.fcl_contacts(build, a, b, call, swapped, margin, contact_distance,
                                          self.contacts_per_pair)[1]
            if contacts:
                return True, [replace(c, depth_is_fallback=True) for c in contacts]
        if not found:
            results = [r for r in results if r.distance_m < threshold]
        single = single_contact_point(ga, gb)
        return found, [build.from_distance(a, b, r, single) for r in results]

    @staticmethod
    def _hull_contact(build: ContactBuilder, a: int, b: int, ha: tuple, hb: tuple, coal_poses: dict) -> Contact | None:
        """The contact of a penetrating pair of nearly convex solids from their hulls' MTD
        (:func:`narrowphase.hull_mtd`, the same numbers), or None where the hulls come out apart.
        ``ha``, ``hb``: :func:`hull_parts` of the two shapes."""
        T_c = build.T_world_shape
        T_a, T_b = T_c[a], T_c[b]
        pose_a = coal_poses.get(a)
        if pose_a is None:
            pose_a = coal_poses[a] = coal_transform(T_a)
        pose_b = coal_poses.get(b)
        if pose_b is None:
            pose_b = coal_poses[b] = coal_transform(T_b)
        distance, p0, p1, hint = coal_distance(ha[0], hb[0], pose_a, pose_b)
        if not distance < 0.0:
            return None
        normal_and_p1 = np.empty((2, 3))
        if coal_answer_is_mtd(ha[1], ha[2], ha[3], T_a, hb[1], hb[2], hb[3], T_b, distance, p0, p1, hint,
                              CHECK_ABS_M, CHECK_REL, LOCAL_CHECK_RAD, normal_and_p1):
            return build.make(a, b, p0, normal_and_p1[0], distance, -1, -1, single=ha[5] and hb[5] and (ha[6] or hb[6]))
        result = checked_convex(build.world, T_c, a, b, distance, p0, normal_and_p1[0].copy())
        return build.make(a, b, result.p0_world, result.normal_world, result.distance_m, *result.subshapes,
                          single=single_contact_point(build.world.shapes[a].geometry, build.world.shapes[b].geometry),
                          rule=result.rule)


def _hull_parts(world: CollisionWorld, shape: int) -> tuple | None:
    g = world.shapes[shape].geometry
    if g.solid_kind < 0 or not nearly_convex(world, shape):
        return None
    kind, params, vertices = kernel_parts(world, shape)
    convex = g.solid_kind <= KIND_CONVEX
    return (g.coal_hull, kind, params, vertices, bool(g.is_closed_bvh), convex, g.solid_kind == KIND_SPHERE,
            bool(g.is_bvh))


def hull_parts(world: CollisionWorld, shape: int) -> tuple | None:
    """What explain's hull rule uses of a shape, kept per world snapshot: None unless the shape is a solid that
    is nearly convex (penetration.nearly_convex); else (coal hull, kernel kind, params, vertices (kernels.mtd),
    whether it is a closed mesh, a convex solid, a sphere, a mesh)."""
    return world.cached((_HULL_KEY, shape), _hull_parts, world, shape)


def collision_message(world: CollisionWorld, pair_index: int, contact: Contact, margin: float,
                      request: CheckRequest, n_pairs: int) -> str:
    """Explain's one-line message: the first refusing pair (``pair_index`` into ``world.pairs``),
    its contact, its padding ``margin`` (metres) when the request pads it, and how many more
    body pairs collide (``n_pairs`` in all)."""
    self_pair = world.pair_is_self[pair_index]
    kind = "self-collision" if self_pair else "environment collision"
    a, b = contact.link_names
    if contact.distance < 0:
        what = f"penetration {contact.penetration_depth * 1000:.2f} mm"
        if contact.depth_is_fallback:
            what += " (triangle contact: no vertex of either body inside the other)"
    else:
        what = f"distance {contact.distance * 1000:.2f} mm"
    padded = request.pad_self_collisions if self_pair else request.pad_environment_collisions
    hint = f", padding {margin * 1000:.2f} mm applied" if padded and margin > 0 else ""
    others = f" (+{n_pairs - 1} more colliding body pair{'s' if n_pairs > 2 else ''})" if n_pairs > 1 else ""
    return f"{kind} between '{a}' and '{b}': {what}{hint}{others}"
