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

import threading
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from my_collision_pkg.core.checks.contact_builder import ContactBuilder, single_contact_point
from my_collision_pkg.core.checks.narrowphase import (checked_convex, coal_distance, coal_transform, hull_mtd,
                                                      pair_contacts)
from my_collision_pkg.core.checks.penetration import (CHECK_ABS_M, CHECK_REL, LOCAL_CHECK_RAD, kernel_parts,
                                                      nearly_convex)
from my_collision_pkg.core.kernels.codes import KIND_CONVEX, KIND_SPHERE
from my_collision_pkg.core.kernels.explain_batch import ROWS, hull_contact_rows, pairs_inside
from my_collision_pkg.core.checks.pair_tests import PairTestScratch, PosedPairs, first_collision, posed_candidates
from my_collision_pkg.core.checks.request import CheckRequest, ConfigurationResolver
from my_collision_pkg.core.checks.results import BodyType, Contact, Explanation, Status
from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.scene.planning_scene import CollisionWorld, PairSelection

_HULL_KEY = "explain: hull parts"       # CollisionWorld.cached key, with the shape index
_OWNERS_KEY = "explain: shape owners"   # CollisionWorld.cached key
_TABLES_KEY = "explain: batch tables"   # CollisionWorld.cached key


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
        T_c = T_world_shape[0]
        posed = self.scratch.posed(world, T_c)
        build = ContactBuilder(world, T_world_links[0], T_c)
        survivors = np.flatnonzero(candidates[0])
        is_self = world.pair_is_self[index[survivors]]
        order = np.concatenate([survivors[is_self], survivors[~is_self]])
        coal_poses: dict = {}           # the shapes' coal poses at this configuration, made on use
        # the hull rule's pairs (nearly convex solids, one a closed mesh, one a mesh, refused without padding):
        # their tests and contacts a phase at a time over all of them (_hull_rule_contacts)
        tables = world.cached(_TABLES_KEY, _BatchTables, world)
        state = tables.state
        shape_a, shape_b = pairs[order, 0], pairs[order, 1]
        if not (state.known[shape_a].all() and state.known[shape_b].all()):
            state = tables.extend(np.union1d(shape_a, shape_b))
        fast = state.hull[shape_a] & state.hull[shape_b] & (state.closed[shape_a] | state.closed[shape_b]) \
            & (state.bvh[shape_a] | state.bvh[shape_b]) & (margins[order] <= 0.0)
        hull_results = self._hull_rule_contacts(state, posed, build, order[fast], shape_a[fast], shape_b[fast],
                                                selection, coal_poses, stop) if fast.any() else {}
        colliding, near = [], []
        refusing: list[tuple[int, Contact]] = []
        for p, (a, b), call, margin, swapped, hull_rule in zip(order.tolist(), pairs[order].tolist(),
                                                               selection.calls[order].tolist(),
                                                               margins[order].tolist(),
                                                               selection.swapped[order].tolist(), fast.tolist()):
            found = None
            if hull_rule:
                found, contact = hull_results[p]
                if contact is not None:
                    refusing.append((p, contact))
                    colliding.append(contact)
                    continue
                if not found and contact_distance <= 0.0:
                    continue
            if stop is not None:
                stop.check_stop()
            found, contacts = self.pair_contacts(build, posed, a, b, call, swapped, margin, contact_distance,
                                                 coal_poses=coal_poses, found=found)
            if found:
                refusing.append((p, contacts[0]))
                colliding.extend(contacts)
            else:
                near.extend(contacts)
        return refusing, colliding + near

    @staticmethod
    def _hull_rule_contacts(state: "_TableState", posed: PosedPairs, build: ContactBuilder, pair_rows: np.ndarray,
                            a: np.ndarray, b: np.ndarray, selection: PairSelection, coal_poses: dict,
                            stop) -> dict[int, tuple[bool, Contact | None]]:
        """The predicate's verdict and the contact of pairs under the hull rule (selection rows ``pair_rows``,
        shapes ``a``, ``b``), by row: (in collision, contact from the hulls' MTD, or None where the pair is apart
        or its hulls come out apart: the full rules then).

        The verdict is the predicate's (``PosedPairs.collides`` without padding: fcl finds the surfaces
        crossing, or one body lies inside a closed mesh of the other), the two tests asked the other way round:
        the solid-body test of every pair in one compiled call, then fcl only for the pairs it left. The
        contacts are ``narrowphase.hull_mtd``'s numbers: coal on the hulls per pair, then the check of coal's
        answers and the contacts' points in one compiled call (``kernels.explain_batch``).
        """
        T_c = build.T_world_shape
        inside = np.empty(len(a), dtype=np.int64)
        pairs_inside(T_c, a, b, state.closed, state.probe_start, state.probe_stop, state.probes, state.obb_center,
                     state.obb_axes, state.obb_half, state.triangle_start, state.triangle_stop, state.triangles,
                     inside)
        rows = pair_rows.tolist()
        results: dict[int, tuple[bool, Contact | None]] = {}
        hulls, distances, witnesses, hit_rows, hit_a, hit_b = state.coal_hull, [], [], [], [], []
        calls = selection.calls
        for p, sa, sb, outer in zip(rows, a.tolist(), b.tolist(), inside.tolist()):
            if stop is not None:
                stop.check_stop()
            if outer < 0 and not posed.surfaces_cross(calls[p]):
                results[p] = (False, None)
                continue
            pose_a = coal_poses.get(sa)
            if pose_a is None:
                pose_a = coal_poses[sa] = coal_transform(T_c[sa])
            pose_b = coal_poses.get(sb)
            if pose_b is None:
                pose_b = coal_poses[sb] = coal_transform(T_c[sb])
            distance, p0, p1, hint = coal_distance(hulls[sa], hulls[sb], pose_a, pose_b)
            if not distance < 0.0:
                results[p] = (True, None)
                continue
            distances.append(distance)
            witnesses.append((p0, p1, hint))
            hit_rows.append(p)
            hit_a.append(sa)
            hit_b.append(sb)
        if not hit_rows:
            return results
        n = len(hit_rows)
        out = np.empty((n, ROWS, 3))
        is_mtd = np.empty(n, dtype=np.bool_)
        hull_contact_rows(T_c, state.kind, state.params, state.vertex_start, state.vertex_stop, state.vertices,
                          build.T_world_link, state.owner_link, np.array(hit_a, dtype=np.int64),
                          np.array(hit_b, dtype=np.int64), np.array(distances), np.array(witnesses), CHECK_ABS_M,
                          CHECK_REL, LOCAL_CHECK_RAD, out, is_mtd)
        owner_link, single_of = state.owner_link, state.single_with
        for k, (p, sa, sb, distance, ok) in enumerate(zip(hit_rows, hit_a, hit_b, distances, is_mtd.tolist())):
            p0 = witnesses[k][0]
            single = bool(single_of[sa] and single_of[sb] and (state.sphere[sa] or state.sphere[sb]))
            if ok and owner_link[sa] >= 0 and owner_link[sb] >= 0:
                contact = build.make_from_rows(sa, sb, p0, out[k], distance, single)
            elif ok:
                contact = build.make(sa, sb, p0, out[k, 0], distance, -1, -1, single=single)
            else:
                result = checked_convex(build.world, T_c, sa, sb, distance, p0, out[k, 0].copy())
                contact = build.make(sa, sb, result.p0_world, result.normal_world, result.distance_m,
                                     *result.subshapes, single=single, rule=result.rule)
            results[p] = (True, contact)
        return results

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


class _TableState(NamedTuple):
    """The per-shape tables of :class:`_BatchTables` at one time (never changed once made). Only the rows of
    ``known`` shapes are filled; a shape's stacked rows (vertices, probe points, triangles) are
    ``start[s]:stop[s]``."""
    known: np.ndarray           # (S,) bool: the shape's rows are filled
    hull: np.ndarray            # (S,) bool: hull_parts is not None (a nearly convex solid)
    closed: np.ndarray          # (S,) bool: a closed mesh
    bvh: np.ndarray             # (S,) bool: a mesh
    single_with: np.ndarray     # (S,) bool: a convex solid (single_contact_point's rule, with a sphere)
    sphere: np.ndarray          # (S,) bool
    owner_link: np.ndarray      # (S,) int64: the owner's link index, -1 for an object's shape
    coal_hull: list             # (S,) the shape's coal hull (hull shapes), else None
    kind: np.ndarray            # (S,) int64: kernels.mtd's kind (hull shapes)
    params: np.ndarray          # (S, 3) kernels.mtd's params (hull shapes)
    vertex_start: np.ndarray    # (S,) int64
    vertex_stop: np.ndarray     # (S,) int64
    vertices: np.ndarray        # (V, 3) kernels.mtd's vertices, stacked (a primitive: one placeholder row)
    probe_start: np.ndarray     # (S,) int64
    probe_stop: np.ndarray      # (S,) int64
    probes: np.ndarray          # (P, 3) probe points (ShapeGeometry.probe_points_shape) of hull shapes, stacked
    triangle_start: np.ndarray  # (S,) int64
    triangle_stop: np.ndarray   # (S,) int64
    triangles: np.ndarray       # (T, 3, 3) triangles of closed hull shapes, stacked
    obb_center: np.ndarray      # CollisionWorld.obb_center, .obb_axes, .obb_half
    obb_axes: np.ndarray
    obb_half: np.ndarray


class _BatchTables:
    """Per-shape tables of one world snapshot for ``kernels.explain_batch``, filled as shapes first come up
    in a configuration's candidate pairs (a shape's hull is made on its first contact, as before).

    :attr:`state` is replaced, never changed, so a thread reads one consistent state while another extends it.
    """

    def __init__(self, world: CollisionWorld) -> None:
        self.world = world
        self._lock = threading.Lock()
        n = len(world.shapes)
        never = np.zeros(n, dtype=bool)
        none = np.zeros(n, dtype=np.int64)
        self.state = _TableState(never, never, never, never, never, never, np.full(n, -1, dtype=np.int64),
                                 [None] * n, none, np.zeros((n, 3)), none, none, np.zeros((0, 3)), none, none,
                                 np.zeros((0, 3)), none, none, np.zeros((0, 3, 3)), world.obb_center,
                                 world.obb_axes, world.obb_half)

    def extend(self, shapes: np.ndarray) -> _TableState:
        """The state with the rows of ``shapes`` (indices into ``world.shapes``) filled."""
        with self._lock:
            old = self.state
            new = [int(s) for s in shapes if not old.known[s]]
            if not new:
                return old
            world = self.world
            columns = {name: getattr(old, name).copy() for name in
                       ("known", "hull", "closed", "bvh", "single_with", "sphere", "owner_link", "kind", "params",
                        "vertex_start", "vertex_stop", "probe_start", "probe_stop", "triangle_start",
                        "triangle_stop")}
            coal_hulls = list(old.coal_hull)
            stacks = {"vertices": [old.vertices], "probes": [old.probes], "triangles": [old.triangles]}
            sizes = {name: len(getattr(old, name)) for name in stacks}
            for s in new:
                entry = world.shapes[s]
                g = entry.geometry
                columns["known"][s] = True
                columns["closed"][s] = bool(g.is_closed_bvh)
                columns["bvh"][s] = bool(g.is_bvh)
                columns["owner_link"][s] = entry.link_index if entry.body_type == BodyType.ROBOT_LINK else -1
                parts = hull_parts(world, s)
                if parts is None:
                    continue
                columns["hull"][s] = True
                columns["single_with"][s] = parts[5]
                columns["sphere"][s] = parts[6]
                coal_hulls[s] = parts[0]
                columns["kind"][s] = parts[1]
                columns["params"][s] = parts[2]
                blocks = {"vertices": np.asarray(parts[3], dtype=np.float64).reshape(-1, 3),
                          "probes": np.asarray(g.probe_points_shape, dtype=np.float64).reshape(-1, 3)}
                if g.is_closed_bvh:
                    blocks["triangles"] = np.asarray(g.triangles_shape, dtype=np.float64).reshape(-1, 3, 3)
                for name, block in blocks.items():
                    prefix = name[:-1] if name != "vertices" else "vertex"
                    columns[f"{prefix}_start"][s] = sizes[name]
                    sizes[name] += len(block)
                    columns[f"{prefix}_stop"][s] = sizes[name]
                    stacks[name].append(block)
            stacked = {name: np.ascontiguousarray(np.concatenate(parts)) if len(parts) > 1 else parts[0]
                       for name, parts in stacks.items()}
            self.state = _TableState(**columns, coal_hull=coal_hulls, **stacked, obb_center=old.obb_center,
                                     obb_axes=old.obb_axes, obb_half=old.obb_half)
            return self.state


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
