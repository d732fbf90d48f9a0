"""Validity predicate, batch predicate and explain over a planning scene.

One pipeline serves all three: compiled kernels compute link and shape poses
and cull shape pairs whose oriented bounding boxes (grown by the pair's margin)
cannot touch; only the survivors reach fcl. A pair is in collision when fcl
finds a contact, when its signed distance is below the summed padding, or when
one body lies wholly inside a closed mesh of the other (the solid-body test,
which fcl's surface-only mesh check misses).

Order: the predicate tests environment pairs first, then self pairs, and stops
at the first collision; explain reports self contacts before environment ones.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from typing import NamedTuple

import fcl
import numpy as np

from my_collision_pkg.core.checks.results import BodyType, Contact, ContactType, Explanation, NO_SUBSHAPE, Status, Verdict
from my_collision_pkg.core.errors import CollisionPkgError, RequestError
from my_collision_pkg.core.kernels.depth import KIND_CONVEX, KIND_SPHERE
from my_collision_pkg.core.kernels.depth import warm_up as warm_up_contacts
from my_collision_pkg.core.kernels.kinematics import (NON_FINITE, closest_point_on_triangles, obb_candidates,
                      single_configuration_candidates, warm_up)
from my_collision_pkg.core.checks.narrowphase import PairDistance, inside_closed_mesh, pair_contacts, pair_distance_lower_bound
from my_collision_pkg.core.checks import motion
from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M, MotionMode, MotionResult, TrajectoryResult
from my_collision_pkg.core.scene.planning_scene import CollisionWorld, PairSelection, PlanningScene
from my_collision_pkg.core.model.transforms import invert_transform, transform_points

DEFAULT_MAX_CONTACTS = 100
DEFAULT_CONTACTS_PER_PAIR = 4
MAX_BATCH_CONFIGURATIONS = 1_000_000      # the largest max_batch (the node's parameter has this range)
BATCH_CHUNK = 4096                        # configurations posed and culled together in check_batch
_NAME_CACHE_SIZE = 64
_BOOL_REQUEST = fcl.CollisionRequest()
_DISTANCE_REQUEST = fcl.DistanceRequest(enable_nearest_points=True, enable_signed_distance=True)


class _ThreadScratch(threading.local):
    """Per-thread state: marks of which fcl objects already carry this check's pose, and
    the buffers the one-configuration kernel fills (for one world snapshot at a time)."""

    def __init__(self) -> None:
        self.stamp: dict[int, list[int]] = {}
        self.counter = 0
        self.single: tuple | None = None     # (buffers, selection, kernel arguments)


class _SingleBuffers(NamedTuple):
    """What :func:`kernels.single_configuration_candidates` fills for one world snapshot."""
    world: CollisionWorld
    q: np.ndarray                 # (1, A) the complete configuration
    T_world_link: np.ndarray      # (1, L, 4, 4)
    T_world_shape: np.ndarray     # (1, S, 4, 4)
    candidates: np.ndarray        # (1, P) bool, P = every pair of the world
    survivors: np.ndarray         # (P,) indices of the candidate pairs of the selection

    @classmethod
    def for_world(cls, world: CollisionWorld) -> "_SingleBuffers":
        robot, n_pairs = world.robot, len(world.pairs)
        return cls(world, np.empty((1, len(robot.active_joint_names))), np.empty((1, len(robot.link_names), 4, 4)),
                   np.empty((1, len(world.shapes), 4, 4)), np.empty((1, n_pairs), dtype=np.bool_),
                   np.empty(n_pairs, dtype=np.int64))

    def kernel_arguments(self, selection: PairSelection) -> tuple:
        """The arguments of the kernel after (values, indices, current, check_limits)."""
        world = self.world
        robot = world.robot
        return (*robot.limit_arrays, *robot.kinematics_arrays, world.shape_link, world.T_frame_shape,
                world.obb_center, world.obb_axes, world.obb_half, selection.pairs, selection.margins, self.q,
                self.T_world_link, self.T_world_shape, self.candidates, self.survivors)


class CollisionChecker:
    """Checks configurations against a :class:`PlanningScene`.

    Parameters
    ----------
    scene : PlanningScene
    check_joint_limits : bool
        Refuse configurations outside the joint limits (status OUT_OF_BOUNDS).
    max_contacts : int
        Default contact budget of :meth:`explain`.
    contacts_per_pair : int
        Most contacts kept for one pair of shapes.
    """

    def __init__(self, scene: PlanningScene, *, check_joint_limits: bool = True,
                 max_contacts: int = DEFAULT_MAX_CONTACTS, contacts_per_pair: int = DEFAULT_CONTACTS_PER_PAIR) -> None:
        if max_contacts < 1 or contacts_per_pair < 1:
            raise ValueError("max_contacts and contacts_per_pair must be at least 1")
        self._scene = scene
        self.check_joint_limits = check_joint_limits
        self.max_contacts = int(max_contacts)
        self.contacts_per_pair = int(contacts_per_pair)
        self._name_cache: OrderedDict[tuple[str, ...], np.ndarray] = OrderedDict()
        self._name_lock = threading.Lock()
        self._scratch = _ThreadScratch()
        warm_up()
        warm_up_contacts()

    @property
    def scene(self) -> PlanningScene:
        return self._scene

    # ----- request handling ---------------------------------------------
    def _joint_indices(self, joint_names) -> np.ndarray:
        key = tuple(joint_names)
        cached = self._name_cache.get(key)
        if cached is not None:
            return cached
        robot = self._scene.robot
        if not key:
            raise RequestError("the request names no joints")
        seen: set[str] = set()
        indices = []
        for name in key:
            if name in seen:
                raise RequestError(f"joint '{name}' is named twice")
            seen.add(name)
            index = robot.active_index(name)
            if index is None:
                if not robot.has_joint(name):
                    raise RequestError(f"unknown joint '{name}'")
                joint = robot.joint(name)
                if joint.mimic_of is not None:
                    raise RequestError(f"joint '{name}' mimics '{joint.mimic_of}'; give '{joint.mimic_of}' instead")
                raise RequestError(f"joint '{name}' is {joint.type}, not a variable")
            indices.append(index)
        result = np.array(indices, dtype=np.int64)
        with self._name_lock:
            self._name_cache[key] = result
            while len(self._name_cache) > _NAME_CACHE_SIZE:
                self._name_cache.popitem(last=False)
        return result

    def full_configurations(self, joint_names, positions, *, max_batch: int = MAX_BATCH_CONFIGURATIONS) -> np.ndarray:
        """Complete configurations (N, A) from named joint values (N, K) or (K,).

        Joints not named keep the scene's current values.

        Raises
        ------
        RequestError
            Unknown, repeated or non-variable joint, length mismatch, NaN or infinity,
            an empty request or more than ``max_batch`` configurations.
        """
        indices, values = self._named_values(joint_names, positions, max_batch)
        self._check_finite(joint_names, values, 0, values.shape[0] > 1)
        return self._complete(indices, values)

    def _named_values(self, joint_names, positions, max_batch: int) -> tuple[np.ndarray, np.ndarray]:
        """Active indices (K,) of the named joints and the values as (N, K) (a view when possible).

        Raises
        ------
        RequestError
            As :meth:`full_configurations`, except non-finite values (see :meth:`_check_finite`).
        """
        indices = self._joint_indices(joint_names)
        values = np.asarray(positions, dtype=float)
        if values.ndim == 1:
            if values.size % len(indices) != 0 or values.size == 0:
                raise RequestError(f"{len(indices)} joint names but {values.size} positions")
            values = values.reshape(-1, len(indices))
        if values.ndim != 2 or values.shape[1] != len(indices):
            raise RequestError(f"positions must have {len(indices)} columns, one per joint name")
        if values.shape[0] > max_batch:
            raise RequestError(f"{values.shape[0]} configurations exceed max_batch = {max_batch}")
        return indices, values

    @staticmethod
    def _check_finite(joint_names, values: np.ndarray, first_row: int, numbered: bool) -> None:
        finite = np.isfinite(values)
        if not finite.all():
            row, col = np.argwhere(~finite)[0]
            raise RequestError(f"joint '{joint_names[col]}' has non-finite position {values[row, col]}"
                               + (f" in configuration {first_row + row}" if numbered else ""))

    def _complete(self, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        q = np.repeat(self._scene.current_positions[None, :], values.shape[0], axis=0)
        q[:, indices] = values
        return q

    def single_configuration(self, joint_names, positions) -> np.ndarray:
        """The complete configuration (1, A) for one named configuration (K,).

        Raises
        ------
        RequestError
            As :meth:`full_configurations`, or when the positions are not exactly one per name.
        """
        values = np.asarray(positions, dtype=float)
        if values.ndim != 1 or len(values) != len(joint_names):
            raise RequestError(f"{len(joint_names)} joint names but {values.size} positions")
        return self.full_configurations(joint_names, values)

    def _limits_message(self, q: np.ndarray) -> str | None:
        if not self.check_joint_limits:
            return None
        robot = self._scene.robot
        bad = robot.out_of_bounds(q)
        if bad.size == 0:
            return None
        k = bad[0]
        name = robot.active_joint_names[k]
        return (f"joint '{name}' at {q[k]:.6g} is outside its limits "
                f"[{robot.lower_limits[k]:.6g}, {robot.upper_limits[k]:.6g}]")

    # ----- pipeline -----------------------------------------------------
    def _candidates(self, world: CollisionWorld, q: np.ndarray, pairs: np.ndarray, margins: np.ndarray):
        robot = world.robot
        T_world_link = robot.link_transforms_batch(q)
        T_world_shape = world.shape_transforms(T_world_link)
        candidates = np.empty((q.shape[0], len(pairs)), dtype=np.bool_)
        obb_candidates(T_world_shape, world.obb_center, world.obb_axes, world.obb_half, pairs, margins, candidates)
        return T_world_link, T_world_shape, candidates

    def _posed_objects(self, world: CollisionWorld):
        objects = world.fcl_objects()
        scratch = self._scratch
        stamp = scratch.stamp.get(id(objects))
        if stamp is None or len(stamp) != len(objects):
            stamp = [-1] * len(objects)
            scratch.stamp = {id(objects): stamp}
        scratch.counter += 1
        return objects, stamp, scratch.counter

    @staticmethod
    def _pose(world, objects, stamp, tick, T_world_shape_c, k):
        """fcl object k (a shape, or a shape's variant), posed for this configuration."""
        s = k % len(world.shapes)
        if stamp[k] != tick and world.shape_link[s] >= 0:
            T = T_world_shape_c[s]
            obj = objects[k]
            obj.setRotation(T[:3, :3])       # as setTransform(fcl.Transform(R, t)), at half the cost
            obj.setTranslation(T[:3, 3])
            stamp[k] = tick
        return objects[k]

    def _pair_collides(self, world, objects, stamp, tick, T_world_shape_c, a, b, call, margin) -> bool:
        oa = self._pose(world, objects, stamp, tick, T_world_shape_c, call[0])
        ob = self._pose(world, objects, stamp, tick, T_world_shape_c, call[1])
        result = fcl.CollisionResult()
        if fcl.collide(oa, ob, _BOOL_REQUEST, result):
            return True
        # padding: coal's exact distance (python-fcl's GJK distance may overestimate); the
        # bound is exact whenever it is below the margin
        if margin > 0.0 and pair_distance_lower_bound(world, T_world_shape_c, a, b, margin) < margin:
            return True
        if world.shapes[a].geometry.is_closed_bvh or world.shapes[b].geometry.is_closed_bvh:
            return inside_closed_mesh(world, T_world_shape_c, a, b) is not None
        return False

    # ----- predicate ----------------------------------------------------
    def check(self, joint_names, positions, *, group_name: str = "", pad_environment_collisions: bool = True,
              pad_self_collisions: bool = False, world: CollisionWorld | None = None) -> Verdict:
        """Validity of one configuration, with a status and a one-line message.

        Bad input gives ``Status.INVALID_REQUEST`` (never raises on it). ``world`` is the
        snapshot to check against (default: the scene's current one); a request made of
        several steps (explain, then surfaces) passes one snapshot to all of them.

        The fast path: completion, the finite-value and limits checks, kinematics, shape
        poses and culling are one compiled call on per-thread buffers; only the pairs
        that survive culling cost Python. Verdicts, statuses and messages are those of
        :meth:`check_batch` and :meth:`single_configuration` (whose code names every fault).
        """
        try:
            world = self._scene.world if world is None else world
            values = np.asarray(positions, dtype=float)
            indices = self._name_cache.get(tuple(joint_names))
            if indices is None or values.ndim != 1 or values.shape[0] != indices.shape[0]:
                self.single_configuration(joint_names, values)   # raises the fault; else caches the names
                indices = self._joint_indices(joint_names)
            try:
                selection = world.pair_selection(group_name, pad_environment_collisions, pad_self_collisions)
            except CollisionPkgError:
                self.single_configuration(joint_names, values)   # a fault of the configuration comes first
                raise
            if not (values.flags.c_contiguous and values.flags.writeable):
                values = np.array(values)                         # one compiled signature for every caller
            buffers, arguments = self._single_buffers(world, selection)
            n = single_configuration_candidates(values, indices, self._scene.current_positions,
                                                bool(self.check_joint_limits), *arguments)
            if n == NON_FINITE:
                self.single_configuration(joint_names, values)   # raises, naming the joint
        except CollisionPkgError as exc:
            return Verdict(False, Status.INVALID_REQUEST, str(exc))
        if n < 0:
            return Verdict(False, Status.OUT_OF_BOUNDS, self._limits_message(buffers.q[0]))
        if n == 0:
            return Verdict(True, Status.VALID, "valid")
        objects, stamp, tick = self._posed_objects(world)
        hit = self._first_hit(world, selection, objects, stamp, tick, buffers.T_world_shape[0],
                              buffers.survivors[:n])
        if hit < 0:
            return Verdict(True, Status.VALID, "valid")
        a, b = selection.pairs[hit]
        kind = "self-collision" if world.pair_is_self[selection.index[hit]] else "environment collision"
        return Verdict(False, Status.IN_COLLISION,
                       f"{kind} between '{world.shapes[a].owner}' and '{world.shapes[b].owner}'")

    def _single_buffers(self, world: CollisionWorld, selection: PairSelection) -> tuple[_SingleBuffers, tuple]:
        """This thread's buffers for the one-configuration kernel, sized for ``world``, and the
        kernel's arguments for ``selection`` (both kept until the snapshot or selection changes)."""
        single = self._scratch.single
        if single is not None and single[1] is selection and single[0].world is world:
            return single[0], single[2]
        buffers = single[0] if single is not None and single[0].world is world else _SingleBuffers.for_world(world)
        arguments = buffers.kernel_arguments(selection)
        self._scratch.single = (buffers, selection, arguments)
        return buffers, arguments

    def is_valid(self, joint_names, positions, **options) -> bool:
        """True when the configuration is within limits and collision-free.

        Raises
        ------
        RequestError
            On a malformed request (see :meth:`full_configurations`) or an unknown group.
        """
        verdict = self.check(joint_names, positions, **options)
        if verdict.status == Status.INVALID_REQUEST:
            raise RequestError(verdict.message)
        return verdict.valid

    def _first_collision(self, world: CollisionWorld, q: np.ndarray, selection: PairSelection):
        """Per configuration, the index (into ``selection.pairs``) of the first colliding pair, or -1."""
        _, T_world_shape, candidates = self._candidates(world, q, selection.pairs, selection.margins)
        objects, stamp, _ = self._posed_objects(world)
        first = np.full(q.shape[0], -1, dtype=np.int64)
        rows, cols = np.nonzero(candidates)
        if rows.size == 0:
            return first
        starts = np.searchsorted(rows, np.arange(q.shape[0] + 1))
        for c in np.flatnonzero(starts[1:] > starts[:-1]):
            self._scratch.counter += 1
            first[c] = self._first_hit(world, selection, objects, stamp, self._scratch.counter, T_world_shape[c],
                                       cols[starts[c]:starts[c + 1]])
        return first

    def _first_hit(self, world, selection: PairSelection, objects, stamp, tick, T_world_shape_c: np.ndarray,
                   candidates) -> int:
        """The first of the candidate pairs (indices into ``selection.pairs``, in order) that
        collides at one configuration whose shape poses are ``T_world_shape_c`` (S, 4, 4), or -1."""
        pairs, margins, calls = selection.pairs, selection.margins, selection.calls
        for p in candidates.tolist():
            a, b = pairs[p].tolist()
            if self._pair_collides(world, objects, stamp, tick, T_world_shape_c, a, b, calls[p], margins[p]):
                return p
        return -1

    def check_batch(self, joint_names, positions, *, group_name: str = "", pad_environment_collisions: bool = True,
                    pad_self_collisions: bool = False, world: CollisionWorld | None = None,
                    max_batch: int = MAX_BATCH_CONFIGURATIONS) -> tuple[np.ndarray, Verdict]:
        """Validity of N configurations given as (N, K) or flat row-major (N*K,).

        Configurations are checked BATCH_CHUNK at a time, so the memory used beyond
        the request and the answer does not grow with N. More than ``max_batch``
        configurations are refused before any work.

        Returns
        -------
        valid : (N,) bool array (empty on an invalid request)
        summary : Verdict
            INVALID_REQUEST with the fault, else VALID when all are valid, else the
            status of the first refused configuration with a count.
        """
        try:
            world = self._scene.world if world is None else world
            indices, values = self._named_values(joint_names, positions, max_batch)
            n = values.shape[0]
            for start in range(0, n, BATCH_CHUNK):
                self._check_finite(joint_names, values[start:start + BATCH_CHUNK], start, n > 1)
            selection = world.pair_selection(group_name, pad_environment_collisions, pad_self_collisions)
        except CollisionPkgError as exc:
            return np.zeros(0, dtype=bool), Verdict(False, Status.INVALID_REQUEST, str(exc))
        valid = np.ones(n, dtype=bool)
        first_bad, first_status = -1, Status.VALID
        robot = world.robot
        lower, upper = robot.lower_limits, robot.upper_limits
        for start in range(0, n, BATCH_CHUNK):
            q = self._complete(indices, values[start:start + BATCH_CHUNK])
            ok = valid[start:start + len(q)]            # a view: written through
            out = np.zeros(len(q), dtype=bool)
            if self.check_joint_limits:
                out = np.any((q < lower) | (q > upper), axis=1)
                ok &= ~out
            inside = np.flatnonzero(ok)
            if inside.size:
                first = self._first_collision(world, q[inside], selection)
                ok[inside[first >= 0]] = False
            if first_bad < 0 and not ok.all():
                k = int(np.flatnonzero(~ok)[0])
                first_bad, first_status = start + k, Status.OUT_OF_BOUNDS if out[k] else Status.IN_COLLISION
        n_bad = int(n - np.count_nonzero(valid))
        if n_bad == 0:
            return valid, Verdict(True, Status.VALID, f"all {n} configurations valid")
        return valid, Verdict(False, first_status,
                              f"{n_bad} of {n} configurations invalid (first: index {first_bad})")

    # ----- explain ------------------------------------------------------
    def explain(self, joint_names, positions, *, group_name: str = "", pad_environment_collisions: bool = True,
                pad_self_collisions: bool = False, contact_distance: float = 0.0,
                max_contacts: int | None = None, world: CollisionWorld | None = None) -> Explanation:
        """Why a configuration is refused: status, message, colliding bodies and contacts.

        ``valid`` is exactly the predicate's verdict on the same request. With
        ``contact_distance > 0`` pairs closer than that are reported too (positive
        distance) without making the configuration invalid. At most ``max_contacts``
        contacts are returned; the verdict does not depend on the budget.
        """
        robot = self._scene.robot
        try:
            world = self._scene.world if world is None else world
            q = self.single_configuration(joint_names, positions)
            if not np.isfinite(contact_distance) or contact_distance < 0:
                raise RequestError(f"contact_distance {contact_distance} m must be finite and >= 0")
            selection = world.pair_selection(group_name, pad_environment_collisions, pad_self_collisions)
        except CollisionPkgError as exc:
            return Explanation(False, Status.INVALID_REQUEST, str(exc), joint_names=robot.active_joint_names,
                               positions=self._scene.current_positions.copy())
        budget = self.max_contacts if not max_contacts else int(max_contacts)
        names = robot.active_joint_names
        limits = self._limits_message(q[0])
        if limits is not None:
            return Explanation(False, Status.OUT_OF_BOUNDS, limits, joint_names=names, positions=q[0])
        index, pairs, margins = selection.index, selection.pairs, selection.margins
        cull = np.maximum(margins, contact_distance)
        T_world_links, T_world_shape, candidates = self._candidates(world, q, pairs, cull)
        objects, stamp, tick = self._posed_objects(world)
        build = _ContactBuilder(world, T_world_links[0], T_world_shape[0])
        survivors = np.flatnonzero(candidates[0])
        is_self = world.pair_is_self[index[survivors]]
        order = np.concatenate([survivors[is_self], survivors[~is_self]])
        colliding, near = [], []
        refusing: list[tuple[int, Contact]] = []
        spent = False
        for p in order:
            a, b = pairs[p]
            found, contacts = self._pair_contacts(build, objects, stamp, tick, a, b, selection.calls[p],
                                                  selection.swapped[p], margins[p], contact_distance)
            if found:
                refusing.append((p, contacts[0]))
                colliding.extend(contacts)
            else:
                near.extend(contacts)
        all_contacts = colliding + near
        if len(all_contacts) > budget:
            all_contacts, spent = all_contacts[:budget], True
        if not refusing:
            return Explanation(True, Status.VALID, "valid", (), tuple(all_contacts), names, q[0], spent)
        links: list[str] = []
        for p, _ in refusing:
            for s in pairs[p]:
                if world.shapes[s].owner not in links:
                    links.append(world.shapes[s].owner)
        p, first = refusing[0]
        body_pairs = {frozenset(world.shapes[s].owner for s in pairs[k]) for k, _ in refusing}
        message = self._collision_message(world, index[p], first, margins[p], pad_self_collisions,
                                          pad_environment_collisions, len(body_pairs))
        return Explanation(False, Status.IN_COLLISION, message, tuple(links), tuple(all_contacts), names, q[0], spent)

    def _collision_message(self, world, pair_index, contact, margin, pad_self, pad_env, n_pairs) -> str:
        self_pair = world.pair_is_self[pair_index]
        kind = "self-collision" if self_pair else "environment collision"
        a, b = contact.link_names
        if contact.distance < 0:
            what = f"penetration {contact.penetration_depth * 1000:.2f} mm"
            if contact.depth_is_fallback:
                what += " (triangle contact: no vertex of either body inside the other)"
        else:
            what = f"distance {contact.distance * 1000:.2f} mm"
        padded = pad_self if self_pair else pad_env
        hint = f", padding {margin * 1000:.2f} mm applied" if padded and margin > 0 else ""
        others = f" (+{n_pairs - 1} more colliding body pair{'s' if n_pairs > 2 else ''})" if n_pairs > 1 else ""
        return f"{kind} between '{a}' and '{b}': {what}{hint}{others}"

    def _pair_contacts(self, build: "_ContactBuilder", objects, stamp, tick, a, b, call, swapped, margin,
                       contact_distance):
        """(in collision, contacts) for one shape pair, contacts capped per pair.

        The verdict is the predicate's own (:meth:`_pair_collides`), so explain and the
        predicate never disagree. The contacts come from the checker's distance function
        (``narrowphase.pair_contacts``): the exact signed distance of primitive and convex
        pairs (coal), the deepest point of each overlap region where a closed mesh
        penetrates, the exact separation of meshes that are apart. A pair with an open
        mesh (no inside) keeps fcl's triangle contacts (:meth:`_fcl_contacts`).
        """
        world, T_c = build.world, build.T_world_shape
        ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
        if ga.solid_kind < 0 or gb.solid_kind < 0:
            return self._fcl_contacts(build, objects, stamp, tick, a, b, call, swapped, margin, contact_distance)
        found = self._pair_collides(world, objects, stamp, tick, T_c, a, b, call, margin)
        threshold = max(margin, contact_distance)
        if not found and threshold <= 0.0:
            return False, []
        results = pair_contacts(world, T_c, a, b, self.contacts_per_pair if found else 1, likely_penetrating=found)
        if found and not results[0].exact:
            # penetrating meshes with no surface point inside the other body (an edge through
            # an edge): fcl's contacts against single triangles, marked as such
            contacts = self._fcl_contacts(build, objects, stamp, tick, a, b, call, swapped, margin,
                                          contact_distance)[1]
            if contacts:
                return True, [replace(c, depth_is_fallback=True) for c in contacts]
        if not found:
            results = [r for r in results if r.distance_m < threshold]
        single = _single_contact_point(ga, gb)
        return found, [build.from_distance(a, b, r, single) for r in results]

    def _fcl_contacts(self, build: "_ContactBuilder", objects, stamp, tick, a, b, call, swapped, margin,
                      contact_distance):
        """(in collision, contacts) from fcl's own contacts, for pairs with an open mesh.

        fcl is called in ``call`` order; when that is body 1 first (``swapped``) its
        normals, witness points and sub-shape ids are turned back to body 0 first.
        """
        world, T_c = build.world, build.T_world_shape
        oa = self._pose(world, objects, stamp, tick, T_c, call[0])
        ob = self._pose(world, objects, stamp, tick, T_c, call[1])
        request = fcl.CollisionRequest(num_max_contacts=self.contacts_per_pair, enable_contact=True)
        result = fcl.CollisionResult()
        if fcl.collide(oa, ob, request, result):
            contacts = [build.from_fcl(a, b, c, swapped) for c in result.contacts]
            contacts.sort(key=lambda c: c.distance)
            return True, contacts
        solid = world.shapes[a].geometry.is_closed_bvh or world.shapes[b].geometry.is_closed_bvh
        inside = inside_closed_mesh(world, T_c, a, b) if solid else None
        if inside is not None:
            return True, [build.containment(a, b, inside)]
        threshold = max(margin, contact_distance)
        if threshold > 0.0:
            dres = fcl.DistanceResult()
            distance = fcl.distance(oa, ob, _DISTANCE_REQUEST, dres)
            if distance < threshold:
                points, subshapes = list(dres.nearest_points), [dres.b1, dres.b2]
                if swapped:
                    points.reverse()
                    subshapes.reverse()
                contact = build.from_points(a, b, np.asarray(points[0]), np.asarray(points[1]), distance, *subshapes)
                return distance < margin, [contact]
        return False, []


    # ----- motions (see motion.py) ----------------------------------------
    def check_motion(self, joint_names, start, goal, *, group_name: str = "", pad_environment_collisions: bool = True,
                     pad_self_collisions: bool = False, mode: MotionMode = MotionMode.CERTIFIED,
                     max_step: float = 0.0, contact_distance: float = 0.0, max_contacts: int | None = None,
                     tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M,
                     world: CollisionWorld | None = None) -> MotionResult:
        """Validity of the joint-space straight line from ``start`` to ``goal`` (a :class:`motion.MotionResult`).

        ``mode`` CERTIFIED (default) cannot skip a collision; DISCRETE samples at most
        ``max_step`` (rad or m) apart. Pairs closer than ``tolerance_m`` (default
        ``motion.DEFAULT_TOUCH_TOLERANCE_M``) plus their padding count as touching.
        Bad input gives ``Status.INVALID_REQUEST`` (never raises on it).
        """
        return motion.check_motion(self, joint_names, start, goal, group_name=group_name,
                                   pad_environment_collisions=pad_environment_collisions,
                                   pad_self_collisions=pad_self_collisions,
                                   mode=mode, max_step=max_step,
                                   contact_distance=contact_distance, max_contacts=max_contacts,
                                   tolerance_m=tolerance_m, world=world)

    def check_trajectory(self, joint_names, points, times_s, *, group_name: str = "",
                         pad_environment_collisions: bool = True, pad_self_collisions: bool = False,
                         mode: MotionMode = MotionMode.CERTIFIED, max_step: float = 0.0,
                         stop_at_first_contact: bool = True, tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M,
                         world: CollisionWorld | None = None) -> TrajectoryResult:
        """Validity of a joint-linear trajectory through ``points`` (N, K) at ``times_s`` (N,)
        (a :class:`motion.TrajectoryResult` with per body pair contact intervals).

        All-zero times mean the waypoint index as seconds. Bad input gives
        ``Status.INVALID_REQUEST`` (never raises on it).
        """
        return motion.check_trajectory(self, joint_names, points, times_s, group_name=group_name,
                                       pad_environment_collisions=pad_environment_collisions,
                                       pad_self_collisions=pad_self_collisions,
                                       mode=mode,
                                       max_step=max_step, stop_at_first_contact=stop_at_first_contact,
                                       tolerance_m=tolerance_m, world=world)


class _ContactBuilder:
    """Turns fcl results for one posed configuration into :class:`Contact` objects."""

    def __init__(self, world: CollisionWorld, T_world_link: np.ndarray, T_world_shape: np.ndarray) -> None:
        self.world = world
        self.T_world_link = T_world_link
        self.T_world_shape = T_world_shape
        self._frames: dict[int, tuple] = {}     # shape -> (owner frame in world, world in owner frame)
        self._link_from_world: np.ndarray | None = None
        self._local: dict[int, tuple] = {}      # shape -> (rotation^T, translation) of world in owner frame
        self._shape_info: dict[int, tuple] = {}  # shape -> what a contact records of it

    def _info(self, shape: int) -> tuple:
        """(owner, body type, shape id, is a BVH, on the robot) of a shape."""
        info = self._shape_info.get(shape)
        if info is None:
            entry = self.world.shapes[shape]
            info = self._shape_info[shape] = (entry.owner, BodyType(entry.body_type), entry.shape_id,
                                              bool(entry.geometry.is_bvh), bool(entry.on_robot))
        return info

    def _to_owner(self, shape: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(owner frame in world, R^T, t) with ``p @ R^T + t`` a world point in the owner frame
        (the very operations of ``transform_points`` with the inverse frame)."""
        local = self._local.get(shape)
        if local is None:
            T_world_owner, owner_from_world = self._owner_frames(shape)
            local = self._local[shape] = (T_world_owner, owner_from_world[:3, :3].T, owner_from_world[:3, 3])
        return local

    def _owner_frames(self, shape: int) -> tuple[np.ndarray, np.ndarray]:
        frames = self._frames.get(shape)
        if frames is None:
            entry = self.world.shapes[shape]
            if entry.body_type == BodyType.ROBOT_LINK:      # every link's inverse at once, on first use
                if self._link_from_world is None:
                    R_world_link = self.T_world_link[:, :3, :3]
                    inverse = np.zeros_like(self.T_world_link)
                    inverse[:, :3, :3] = np.swapaxes(R_world_link, 1, 2)
                    inverse[:, :3, 3] = -np.einsum("lji,lj->li", R_world_link, self.T_world_link[:, :3, 3])
                    inverse[:, 3, 3] = 1.0
                    self._link_from_world = inverse
                k = entry.link_index
                frames = (self.T_world_link[k], self._link_from_world[k])
            else:
                T_world_owner = self.world.shape_owner_frame(shape, self.T_world_link)
                frames = (T_world_owner, invert_transform(T_world_owner))
            self._frames[shape] = frames
        return frames

    def from_fcl(self, a, b, c, swapped: bool) -> Contact:
        normal = np.asarray(c.normal, dtype=float)
        norm = np.linalg.norm(normal)
        normal = normal / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
        b1, b2 = c.b1, c.b2
        if swapped:
            normal, b1, b2 = -normal, b2, b1
        depth = float(c.penetration_depth)
        position = np.asarray(c.pos, dtype=float)
        p0 = position + 0.5 * depth * normal
        return self.make(a, b, p0, normal, -depth, b1, b2)

    def from_distance(self, a, b, result: PairDistance, single: bool | None = None) -> Contact:
        """A contact from the checker's distance function (witness points, normal, signed distance).

        ``single``: :func:`_single_contact_point` of the pair, when the caller knows it already."""
        if single is None:
            single = _single_contact_point(self.world.shapes[a].geometry, self.world.shapes[b].geometry)
        return self.make(a, b, np.asarray(result.p0_world, dtype=float), np.asarray(result.normal_world, dtype=float),
                         float(result.distance_m), *result.subshapes, single=single, fallback=not result.exact)

    def from_points(self, a, b, p0, p1, distance, b1, b2) -> Contact:
        delta = p1 - p0
        norm = np.linalg.norm(delta)
        if norm > 1e-12:
            normal = delta / norm
        else:  # touching: fall back to the line between the shape origins
            between = self.T_world_shape[b][:3, 3] - self.T_world_shape[a][:3, 3]
            length = np.linalg.norm(between)
            normal = between / length if length > 1e-12 else np.array([0.0, 0.0, 1.0])
        return self.make(a, b, p0, normal, float(distance), b1, b2)

    def containment(self, a, b, inside) -> Contact:
        """Contact for a body wholly inside a closed mesh: push it out through the nearest face."""
        outer, inner = inside
        world, T_c = self.world, self.T_world_shape
        T_world_outer = T_c[outer]
        inner_points_world = transform_points(T_c[inner], np.asarray(world.shapes[inner].geometry.triangle_mesh()
                                                                      .vertices))
        center_world = inner_points_world.mean(axis=0)
        center_outer = transform_points(invert_transform(T_world_outer), center_world)
        closest, triangle = closest_point_on_triangles(center_outer, world.shapes[outer].geometry.triangles_shape)
        surface_world = transform_points(T_world_outer, closest)
        out_dir = surface_world - center_world
        norm = np.linalg.norm(out_dir)
        out_dir = out_dir / norm if norm > 1e-12 else T_world_outer[:3, 2]
        # Depth: how far the inner body must travel along out_dir to leave through that face.
        depth = max(float(np.max((surface_world - inner_points_world) @ out_dir)), 0.0)
        # normal points from body 0 to body 1 and separates them when body 1 moves along it
        normal = out_dir if inner == b else -out_dir
        p0 = surface_world if outer == a else surface_world - depth * out_dir
        subshape = (int(triangle), NO_SUBSHAPE) if outer == a else (NO_SUBSHAPE, int(triangle))
        return self.make(a, b, p0, normal, -depth, *subshape)

    def make(self, a, b, p0, normal, distance, b1, b2, *, single: bool = False, fallback: bool = False) -> Contact:
        """A contact from the point on body 0, the normal and the signed distance.

        The point on body 1 is ``p0 + distance * normal``, so the documented
        invariant holds exactly.
        """
        owner_a, type_a, id_a, bvh_a, robot_a = self._info(a)
        owner_b, type_b, id_b, bvh_b, robot_b = self._info(b)
        distance = float(distance)
        p1 = p0 + distance * normal
        kind = ContactType.SELF if (robot_a and robot_b) else ContactType.ENVIRONMENT
        sub0 = int(b1) if bvh_a and b1 is not None and b1 >= 0 else NO_SUBSHAPE
        sub1 = int(b2) if bvh_b and b2 is not None and b2 >= 0 else NO_SUBSHAPE
        T_world_a, R_a, t_a = self._to_owner(a)
        T_world_b, R_b, t_b = self._to_owner(b)
        return Contact(kind, (owner_a, owner_b), (type_a, type_b), (id_a, id_b), (sub0, sub1), 0.5 * (p0 + p1),
                       (p0, p1), (p0 @ R_a + t_a, p1 @ R_b + t_b), normal, distance, max(0.0, -distance), single,
                       depth_is_fallback=fallback, transforms=(T_world_a.copy(), T_world_b.copy()))


def _single_contact_point(ga, gb) -> bool:
    """Whether a pair can only ever touch at one point (Contact.single_contact_point).

    Rule: a sphere against a convex solid (a primitive or a convex mesh). Such bodies
    touch at exactly one point, and their overlap is one convex region whose contact
    is the single one reported. Every other pair may touch along a line or a patch, or
    (with a non-convex mesh) in several places.
    """
    convex = ga.solid_kind <= KIND_CONVEX and gb.solid_kind <= KIND_CONVEX and ga.solid_kind >= 0 \
        and gb.solid_kind >= 0
    return bool(convex and KIND_SPHERE in (ga.solid_kind, gb.solid_kind))
