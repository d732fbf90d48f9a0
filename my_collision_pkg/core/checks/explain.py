"""Explain: why one configuration is refused, with its colliding bodies and contacts.

The verdict of each pair is the predicate's own (:meth:`pair_tests.PosedPairs.collides`),
so explain and the predicate never disagree. The contacts come from the checker's
distance function (:func:`narrowphase.pair_contacts`): the exact signed distance of
primitive and convex pairs (coal), the deepest point of each overlap region where a
closed mesh penetrates, the exact separation of meshes that are apart. A pair with an
open mesh (no inside) keeps fcl's triangle contacts. Self contacts come before
environment ones; near misses (``contact_distance > 0``) after the contacts that refuse
the configuration.

The common pair, two nearly convex solids one of which is a closed mesh, refused without
padding (the hull rule: their hulls' MTD, ``narrowphase.hull_mtd``), is worked a phase at a
time over all such pairs of the configuration (:meth:`Explainer._hull_rule_contacts`,
``kernels/explain_batch.py``): the same tests and numbers with one compiled call for each
phase instead of several calls per pair. At ``contact_distance`` 0 explain starts as the
predicate does (one compiled call from named values to the pairs that survive culling).

:class:`Explainer` is also what the motion checks use of the configuration checks: the
resolver of named joint values, the batch predicate's first collision, and explain itself.
"""
from __future__ import annotations

import functools
import threading
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from my_collision_pkg.core.checks.contact_builder import ContactBuilder, single_contact_point
from my_collision_pkg.core.checks.narrowphase import (checked_convex, coal_distance, coal_transform, hull_mtd,
                                                      pair_contacts)
from my_collision_pkg.core.checks.penetration import (CHECK_ABS_M, CHECK_REL, LOCAL_CHECK_RAD, kernel_parts,
                                                      nearly_convex)
from my_collision_pkg.core.geometry.coal_setup import coal   # coal with its box support pinned (see there)
from my_collision_pkg.core.kernels.codes import KIND_CONVEX, KIND_SPHERE
from my_collision_pkg.core.kernels import explain_batch
from my_collision_pkg.core.kernels.culling import single_configuration_candidates
from my_collision_pkg.core.kernels.explain_batch import (CODE_BVH, CODE_CLOSED, CODE_HULL, CODE_KNOWN, ROWS,
                                                         hull_contact_rows, plan_pairs)
from my_collision_pkg.core.checks.pair_tests import (PairTestScratch, PosedPairs, any_collision, first_collision,
                                                     posed_candidates)
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

    def any_collision(self, world: CollisionWorld, q: np.ndarray, selection: PairSelection) -> int:
        """The first row of ``q`` (N, A), in row order, that collides, or -1 (:func:`pair_tests.any_collision`)."""
        return any_collision(self.scratch, world, q, selection)

    def explain(self, joint_names, positions, request: CheckRequest, stop=None) -> Explanation:
        """See :meth:`checker.CollisionChecker.explain` (never raises on bad input).

        ``stop``: a :class:`limits.WorkMeter` whose stop event is looked at between pairs
        (:class:`errors.RequestStopped` when it is set)."""
        resolver = self.resolver
        scene = resolver.scene
        robot = scene.robot
        names = robot.active_joint_names
        posed = self._posed_single(joint_names, positions, request)
        if posed is not None:
            world, selection, buffers, n = posed
            q = buffers.q[0].copy()
            refusing, all_contacts = self._pair_contacts_posed(world, selection, request.contact_distance,
                                                               buffers.T_world_link[0], buffers.T_world_shape[0],
                                                               buffers.survivors[:n], stop)
        else:
            try:
                world = request.world_of(scene)
                q = resolver.single_configuration(joint_names, positions)
                request.check_contact_distance()
                selection = request.selection(world)
            except CollisionPkgError as exc:
                return Explanation(False, Status.INVALID_REQUEST, str(exc), joint_names=names,
                                   positions=scene.current_positions.copy())
            limits = resolver.limits_message(q[0])
            if limits is not None:
                return Explanation(False, Status.OUT_OF_BOUNDS, limits, joint_names=names, positions=q[0])
            refusing, all_contacts = self._pair_contacts_at(world, q, selection, request.contact_distance, stop)
            q = q[0]
        budget = self.budget(request.max_contacts)
        spent = False
        if len(all_contacts) > budget:
            all_contacts, spent = all_contacts[:budget], True
        if not refusing:
            return Explanation(True, Status.VALID, "valid", (), tuple(all_contacts), names, q, spent)
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
        return Explanation(False, Status.IN_COLLISION, message, tuple(links), tuple(all_contacts), names, q, spent)

    def _posed_single(self, joint_names, positions, request: CheckRequest):
        """The common request's fast start, as the predicate's (``CollisionChecker.check``): completion, the
        finite-value and limits checks, kinematics, shape poses and culling in one compiled call on this
        thread's buffers (``PairTestScratch.single_buffers``). (world, selection, buffers, number of
        survivors), or None where explain's own steps decide (a malformed request, a configuration out of
        bounds or not finite, ``contact_distance`` > 0, which culls differently): those then name the fault
        exactly as before. (The kernel culls with the selection's margins, explain's own steps with their
        maximum with ``contact_distance``: the same at 0, as the scene takes no negative padding.)"""
        if request.contact_distance != 0.0:
            return None
        resolver = self.resolver
        try:
            values = np.asarray(positions, dtype=float)
            indices = resolver.indices_by_names.get(tuple(joint_names))
        except Exception:       # (explain's own steps raise or report it)
            return None
        if indices is None or values.ndim != 1 or values.shape[0] != indices.shape[0]:
            return None
        world = request.world_of(resolver.scene)
        try:
            selection = request.selection(world)
        except CollisionPkgError:
            return None
        if not (values.flags.c_contiguous and values.flags.writeable):
            values = np.array(values)                         # one compiled signature for every caller
        buffers, arguments = self.scratch.single_buffers(world, selection)
        n = single_configuration_candidates(values, indices, resolver.scene.current_positions,
                                            bool(resolver.check_joint_limits), *arguments)
        if n < 0:
            return None
        return world, selection, buffers, n

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
        cull = np.maximum(selection.margins, contact_distance)
        T_world_links, T_world_shape, candidates = posed_candidates(world, q, selection.pairs, cull)
        return self._pair_contacts_posed(world, selection, contact_distance, T_world_links[0], T_world_shape[0],
                                         np.flatnonzero(candidates[0]), stop)

    def _pair_contacts_posed(self, world: CollisionWorld, selection: PairSelection, contact_distance: float,
                             T_world_link: np.ndarray, T_world_shape: np.ndarray, survivors: np.ndarray,
                             stop=None) -> tuple[list[tuple[int, Contact]], list[Contact]]:
        """:meth:`_pair_contacts_at` at link and shape poses ``T_world_link`` (L, 4, 4) and ``T_world_shape``
        (S, 4, 4), over the selection's rows ``survivors`` (those that survive culling, in row order)."""
        pairs, margins = selection.pairs, selection.margins
        posed = self.scratch.posed(world, T_world_shape)
        build = ContactBuilder(world, T_world_link, T_world_shape)
        coal_poses: dict = {}           # the shapes' coal poses at this configuration, made on use
        # explain's order (self pairs first), which pairs the hull rule takes (nearly convex solids, one a
        # closed mesh, one a mesh, refused without padding) and their solid-body tests: one compiled call
        tables = world.cached(_TABLES_KEY, _BatchTables, world)
        n = len(survivors)
        order = np.empty(n, dtype=np.int64)
        hull_rule = np.empty(n, dtype=np.bool_)
        inside = np.empty(n, dtype=np.int64)
        survivors = np.ascontiguousarray(survivors, dtype=np.int64)
        state = tables.state
        count = -1
        while count < 0:        # (-1: a shape met for the first time; at most once)
            count = plan_pairs(survivors, selection.index, world.pair_is_self, pairs, margins, state.code,
                               T_world_shape, state.probe_start, state.probe_stop, state.probes, state.obb_center,
                               state.obb_axes, state.obb_half, state.triangle_start, state.triangle_stop,
                               state.triangles, order, hull_rule, inside)
            if count < 0:
                state = tables.extend(np.unique(pairs[survivors]))
        order_rows, rule_rows = order.tolist(), hull_rule.tolist()
        hull_results = self._hull_rule_contacts(state, posed, build, order_rows, rule_rows, inside.tolist(),
                                                selection, coal_poses, stop) if count > 0 else {}
        colliding, near = [], []
        refusing: list[tuple[int, Contact]] = []
        calls, swapped = selection.calls, selection.swapped
        for p, rule in zip(order_rows, rule_rows):
            found = None
            if rule:
                found, contact = hull_results[p]
                if contact is not None:
                    refusing.append((p, contact))
                    colliding.append(contact)
                    continue
                if not found and contact_distance <= 0.0:
                    continue
            if stop is not None:
                stop.check_stop()
            a, b = pairs[p].tolist()
            found, contacts = self.pair_contacts(build, posed, a, b, calls[p], bool(swapped[p]), float(margins[p]),
                                                 contact_distance, coal_poses=coal_poses, found=found)
            if found:
                refusing.append((p, contacts[0]))
                colliding.extend(contacts)
            else:
                near.extend(contacts)
        return refusing, colliding + near

    @staticmethod
    def _hull_rule_contacts(state: "_TableState", posed: PosedPairs, build: ContactBuilder, order: list[int],
                            hull_rule: list[bool], inside: list[int], selection: PairSelection, coal_poses: dict,
                            stop) -> dict[int, tuple[bool, Contact | None]]:
        """The predicate's verdict and the contact of the pairs under the hull rule (selection rows ``order``
        where ``hull_rule``; ``inside``: ``kernels.explain_batch.plan_pairs``' solid-body tests), by row:
        (in collision, contact from the hulls' MTD, or None where the pair is apart or its hulls come out
        apart: the full rules then).

        The verdict is the predicate's (``PosedPairs.collides`` without padding: fcl finds the surfaces
        crossing, or one body lies inside a closed mesh of the other), the two tests asked the other way round:
        the solid-body test first (compiled, every pair at once), then fcl only for the pairs it left. The
        contacts are ``narrowphase.hull_mtd``'s numbers: coal on the hulls per pair, then the check of coal's
        answers and the contacts' points in one compiled call (``kernels.explain_batch.hull_contact_rows``).
        """
        T_c = build.T_world_shape
        pairs, calls = selection.pairs, selection.calls
        results: dict[int, tuple[bool, Contact | None]] = {}
        hulls, distances, witnesses, hit_rows, hit_a, hit_b = state.coal_hull, [], [], [], [], []
        answer = coal.DistanceResult()      # cleared before each call (the same answers as a fresh one)
        for p, rule, outer in zip(order, hull_rule, inside):
            if not rule:
                continue
            if stop is not None:
                stop.check_stop()
            if outer < 0 and not posed.surfaces_cross(calls[p]):
                results[p] = (False, None)
                continue
            sa, sb = pairs[p].tolist()
            pose_a = coal_poses.get(sa)
            if pose_a is None:
                pose_a = coal_poses[sa] = coal_transform(T_c[sa])
            pose_b = coal_poses.get(sb)
            if pose_b is None:
                pose_b = coal_poses[sb] = coal_transform(T_c[sb])
            distance, p0, p1, hint = coal_distance(hulls[sa], hulls[sb], pose_a, pose_b, answer)
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
        polished = np.array(distances)           # coal's distances, polished in place where checked
        hull_contact_rows(T_c, state.kind, state.params, state.vertex_start, state.vertex_stop, state.vertices,
                          build.T_world_link, state.owner_link, np.array(hit_a, dtype=np.int64),
                          np.array(hit_b, dtype=np.int64), polished, np.array(witnesses), CHECK_ABS_M,
                          CHECK_REL, LOCAL_CHECK_RAD, out, is_mtd)
        distances = polished.tolist()
        owner_link, single_with, sphere = state.owner_link, state.single_with, state.sphere
        singles = [bool(single_with[sa] and single_with[sb] and (sphere[sa] or sphere[sb]))
                   for sa, sb in zip(hit_a, hit_b)]
        links_only = [], [], [], [], [], []      # the common case: both owners robot links, coal's answer the MTD
        for k, (p, sa, sb, distance, ok, single) in enumerate(zip(hit_rows, hit_a, hit_b, distances, is_mtd.tolist(),
                                                                   singles)):
            p0 = witnesses[k][0]
            if ok and owner_link[sa] >= 0 and owner_link[sb] >= 0:
                for column, value in zip(links_only, (k, sa, sb, p0, distance, single)):
                    column.append(value)
                continue
            if ok:
                contact = build.make(sa, sb, p0, out[k, 0], distance, -1, -1, single=single)
            else:
                result = checked_convex(build.world, T_c, sa, sb, distance, p0, out[k, 0].copy())
                contact = build.make(sa, sb, result.p0_world, result.normal_world, result.distance_m,
                                     *result.subshapes, single=single, rule=result.rule)
            results[p] = (True, contact)
        picked, a_rows, b_rows, p0_rows, distance_rows, single_rows = links_only
        if picked:
            rows = out if len(picked) == n else out[picked]
            for k, contact in zip(picked, build.hull_contacts(a_rows, b_rows, p0_rows, rows, distance_rows,
                                                              single_rows)):
                results[hit_rows[k]] = (True, contact)
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
    shapes whose code has CODE_KNOWN are filled; a shape's stacked rows (vertices, probe points, triangles)
    are ``start[s]:stop[s]``."""
    code: np.ndarray            # (S,) uint8: kernels.explain_batch's CODE_* bits
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


_COLUMNS = ("code", "single_with", "sphere", "owner_link", "kind", "params", "vertex_start", "vertex_stop",
            "probe_start", "probe_stop", "triangle_start", "triangle_stop")


@functools.cache
def _warm_up_kernels() -> None:
    """``kernels.explain_batch``'s kernels compiled (or loaded) once per process, on the first explain (kernels'
    own warm-up, run when a checker is built, does not call them)."""
    explain_batch.warm_up()


class _BatchTables:
    """Per-shape tables of one world snapshot for ``kernels.explain_batch``, filled as shapes first come up
    in a configuration's candidate pairs (a shape's hull is made on its first contact, as before).

    :attr:`state` is replaced, never changed, so a thread reads one consistent state while another extends it.
    """

    def __init__(self, world: CollisionWorld) -> None:
        _warm_up_kernels()
        self.world = world
        self._lock = threading.Lock()
        n = len(world.shapes)
        never = np.zeros(n, dtype=bool)
        none = np.zeros(n, dtype=np.int64)
        self.state = _TableState(np.zeros(n, dtype=np.uint8), never, never, np.full(n, -1, dtype=np.int64),
                                 [None] * n, none, np.zeros((n, 3)), none, none, np.zeros((0, 3)), none, none,
                                 np.zeros((0, 3)), none, none, np.zeros((0, 3, 3)), world.obb_center,
                                 world.obb_axes, world.obb_half)

    def extend(self, shapes: np.ndarray) -> _TableState:
        """The state with the rows of ``shapes`` (indices into ``world.shapes``) filled."""
        with self._lock:
            old = self.state
            new = [int(s) for s in shapes if not old.code[s] & CODE_KNOWN]
            if not new:
                return old
            world = self.world
            columns = {name: getattr(old, name).copy() for name in _COLUMNS}
            coal_hulls = list(old.coal_hull)
            stacks = {"vertices": [old.vertices], "probes": [old.probes], "triangles": [old.triangles]}
            sizes = {name: len(getattr(old, name)) for name in stacks}
            for s in new:
                entry = world.shapes[s]
                g = entry.geometry
                code = CODE_KNOWN | (CODE_CLOSED if g.is_closed_bvh else 0) | (CODE_BVH if g.is_bvh else 0)
                columns["owner_link"][s] = entry.link_index if entry.body_type == BodyType.ROBOT_LINK else -1
                parts = hull_parts(world, s)
                if parts is not None:
                    code |= CODE_HULL
                    columns["single_with"][s] = parts[5]
                    columns["sphere"][s] = parts[6]
                    coal_hulls[s] = parts[0]
                    columns["kind"][s] = parts[1]
                    columns["params"][s] = parts[2]
                    blocks = {"vertex": ("vertices", np.asarray(parts[3], dtype=np.float64).reshape(-1, 3)),
                              "probe": ("probes", np.asarray(g.probe_points_shape, dtype=np.float64).reshape(-1, 3))}
                    if g.is_closed_bvh:
                        blocks["triangle"] = ("triangles",
                                              np.asarray(g.triangles_shape, dtype=np.float64).reshape(-1, 3, 3))
                    for prefix, (name, block) in blocks.items():
                        columns[f"{prefix}_start"][s] = sizes[name]
                        sizes[name] += len(block)
                        columns[f"{prefix}_stop"][s] = sizes[name]
                        stacks[name].append(block)
                columns["code"][s] = code
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
