"""The predicate's pair tests: fcl objects posed for one configuration, and which pair collides first.

A pair is in collision when fcl finds a contact, when its signed distance is below the
pair's padding margin (coal's exact distance, :func:`narrowphase.pair_distance_lower_bound`),
or when one body lies wholly inside a closed mesh of the other (the solid-body test,
:func:`narrowphase.inside_closed_mesh`, which fcl's surface-only mesh check misses).

- :class:`PairTestScratch`: per-thread state of a checker (which fcl objects already carry
  the current configuration's pose; the fast path's kernel buffers).
- :class:`PosedPairs`: the pair tests at one configuration (shape poses ``T_world_shape``
  (S, 4, 4)); an fcl object is posed on its first use only.
- :func:`posed_candidates` and :func:`first_collision`: poses, culling and the first
  colliding pair of many configurations (the batch predicate and discrete motions).
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import fcl
import numpy as np

from my_collision_pkg.core.checks.contact_builder import ContactBuilder
from my_collision_pkg.core.checks.narrowphase import inside_closed_mesh, octree_pair_collides, pair_distance_lower_bound
from my_collision_pkg.core.checks.sweep import convex_solids
from my_collision_pkg.core.kernels.culling import first_candidate_row_packed, obb_candidates, screen_pack
from my_collision_pkg.core.kernels.kinematics import shape_poses
from my_collision_pkg.core.scene.planning_scene import CollisionWorld, PairSelection

# first_collision poses and culls at most this many configurations, and this many bytes of
# link and shape poses, at a time (a 2000-object world: about 60 configurations per chunk)
POSE_CHUNK = 4096
POSE_CHUNK_BYTES = 16 * 2 ** 20
_BOOL_REQUEST = fcl.CollisionRequest()
_DISTANCE_REQUEST = fcl.DistanceRequest(enable_nearest_points=True, enable_signed_distance=True)


class SingleBuffers(NamedTuple):
    """What :func:`kernels.single_configuration_candidates` fills for one world snapshot."""
    world: CollisionWorld
    q: np.ndarray                 # (1, A) the complete configuration
    T_world_link: np.ndarray      # (1, L, 4, 4)
    T_world_shape: np.ndarray     # (1, S, 4, 4)
    candidates: np.ndarray        # (1, P) bool, P = every pair of the world
    survivors: np.ndarray         # (P,) indices of the candidate pairs of the selection

    @classmethod
    def for_world(cls, world: CollisionWorld) -> "SingleBuffers":
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


class PairTestScratch(threading.local):
    """Per-thread state of one checker: marks of which fcl objects already carry a check's
    pose, and the buffers the one-configuration kernel fills (for one world snapshot at a time)."""

    def __init__(self) -> None:
        self.stamp: dict[int, list[int]] = {}
        self.counter = 0
        self.single: tuple | None = None     # (buffers, selection, kernel arguments)
        self.screen: tuple | None = None     # (world, selection, the convex pre-test's kernel arguments)
        self.packed: tuple | None = None     # (kernel arguments, screen arguments, their culling.ScreenPack)

    def posed(self, world: CollisionWorld, T_world_shape: np.ndarray) -> "PosedPairs":
        """The pair tests of ``world`` at shape poses ``T_world_shape`` (S, 4, 4), on this thread's fcl objects."""
        objects = world.fcl_objects()
        stamp = self.stamp.get(id(objects))
        if stamp is None or len(stamp) != len(objects):
            stamp = [-1] * len(objects)
            self.stamp = {id(objects): stamp}
        self.counter += 1
        return PosedPairs(world, objects, stamp, self.counter, T_world_shape)

    def single_buffers(self, world: CollisionWorld, selection: PairSelection) -> tuple[SingleBuffers, tuple]:
        """This thread's buffers for the one-configuration kernel, sized for ``world``, and the
        kernel's arguments for ``selection`` (both kept until the snapshot or selection changes)."""
        single = self.single
        if single is not None and single[1] is selection and single[0].world is world:
            return single[0], single[2]
        buffers = single[0] if single is not None and single[0].world is world else SingleBuffers.for_world(world)
        arguments = buffers.kernel_arguments(selection)
        self.single = (buffers, selection, arguments)
        return buffers, arguments

    def screen_pack(self, world: CollisionWorld, selection: PairSelection):
        """(buffers, pack): :meth:`single_buffers`' buffers and a :class:`kernels.culling.ScreenPack` of
        the kernel's and :meth:`screen_arguments`' arguments (kept while both are the same objects)."""
        buffers, arguments = self.single_buffers(world, selection)
        screen = self.screen_arguments(world, selection)
        packed = self.packed
        if packed is None or packed[0] is not arguments or packed[1] is not screen:
            packed = self.packed = (arguments, screen, screen_pack(*arguments, *screen))
        return buffers, packed[2]

    def screen_arguments(self, world: CollisionWorld, selection: PairSelection) -> tuple:
        """The convex pre-test's arguments of :func:`kernels.culling.first_candidate_row` for
        ``selection`` of ``world`` (kept until the snapshot or selection changes): the world's
        convex solids (``sweep.convex_solids``, as a plain tuple), per pair whether both of
        its shapes have one, and this thread's GJK directions per pair."""
        screen = self.screen
        if screen is not None and screen[1] is selection and screen[0] is world:
            return screen[2]
        convex = convex_solids(world)
        pairs = selection.pairs
        measurable = np.ascontiguousarray(convex.supported[pairs[:, 0]] & convex.supported[pairs[:, 1]])
        arguments = (tuple(convex), measurable, np.zeros((len(pairs), 3)))
        self.screen = (world, selection, arguments)
        return arguments


class PosedPairs:
    """The pair tests of one world at one configuration.

    Parameters
    ----------
    world : CollisionWorld
    objects : list
        This thread's fcl objects of ``world`` (:meth:`CollisionWorld.fcl_objects`).
    stamp : list of int
        Per fcl object, the ``tick`` of the last posing (shared by the thread's checks).
    tick : int
        This configuration's mark: an object whose stamp equals it already carries its pose.
    T_world_shape : (S, 4, 4)
        Shape poses in the planning frame at the configuration.
    """
    __slots__ = ("world", "T_world_shape", "_objects", "_stamp", "_tick", "_n_shapes", "_shape_link")

    def __init__(self, world: CollisionWorld, objects: list, stamp: list[int], tick: int,
                 T_world_shape: np.ndarray) -> None:
        self.world = world
        self.T_world_shape = T_world_shape
        self._objects = objects
        self._stamp = stamp
        self._tick = tick
        self._n_shapes = len(world.shapes)
        self._shape_link = world.shape_link

    def pose(self, k: int):
        """fcl object k (a shape, or a shape's variant), posed for this configuration."""
        objects, stamp, tick = self._objects, self._stamp, self._tick
        if stamp[k] != tick:
            s = k % self._n_shapes
            if self._shape_link[s] >= 0:              # world-fixed shapes keep their pose
                T = self.T_world_shape[s]
                obj = objects[k]
                obj.setRotation(T[:3, :3])       # as setTransform(fcl.Transform(R, t)), at half the cost
                obj.setTranslation(T[:3, 3])
                stamp[k] = tick
        return objects[k]

    def collides(self, a: int, b: int, call, margin: float) -> bool:
        """Whether shapes a and b (fcl objects ``call`` (2,), in call order) are in collision
        with padding ``margin`` in metres."""
        objects = self._objects
        if objects[call[0]] is None or objects[call[1]] is None:      # an occupancy octree: coal's own test
            return octree_pair_collides(self.world, self.T_world_shape, a, b, margin)
        oa = self.pose(call[0])
        ob = self.pose(call[1])
        result = fcl.CollisionResult()
        if fcl.collide(oa, ob, _BOOL_REQUEST, result):
            return True
        world, T_c = self.world, self.T_world_shape
        # padding: coal's exact distance (python-fcl's GJK distance may overestimate); the
        # bound is exact whenever it is below the margin
        if margin > 0.0 and pair_distance_lower_bound(world, T_c, a, b, margin) < margin:
            return True
        if world.shapes[a].geometry.is_closed_bvh or world.shapes[b].geometry.is_closed_bvh:
            return inside_closed_mesh(world, T_c, a, b) is not None
        return False

    def surfaces_cross(self, call) -> bool:
        """Whether fcl finds the surfaces of the pair's shapes (fcl objects ``call`` (2,)) intersecting."""
        objects = self._objects
        if objects[call[0]] is None or objects[call[1]] is None:
            return False
        return bool(fcl.collide(self.pose(call[0]), self.pose(call[1]), _BOOL_REQUEST, fcl.CollisionResult()))

    def first_hit(self, selection: PairSelection, candidates) -> int:
        """The first of the candidate pairs (indices into ``selection.pairs``, in order) that
        collides, or -1."""
        pairs, margins, calls = selection.pairs, selection.margins, selection.calls
        collides = self.collides
        for p in candidates.tolist():
            a, b = pairs[p].tolist()
            if collides(a, b, calls[p], margins[p]):
                return p
        return -1

    def fcl_contacts(self, build: ContactBuilder, a: int, b: int, call, swapped: bool, margin: float,
                     contact_distance: float, contacts_per_pair: int):
        """(in collision, contacts) from fcl's own contacts, for pairs with an open mesh.

        fcl is called in ``call`` order; when that is body 1 first (``swapped``) its
        normals, witness points and sub-shape ids are turned back to body 0 first. At most
        ``contacts_per_pair`` contacts; pairs closer than ``max(margin, contact_distance)``
        (metres) get one contact from fcl's distance.
        """
        world, T_c = self.world, self.T_world_shape
        oa = self.pose(call[0])
        ob = self.pose(call[1])
        request = fcl.CollisionRequest(num_max_contacts=contacts_per_pair, enable_contact=True)
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


def posed_candidates(world: CollisionWorld, q: np.ndarray, pairs: np.ndarray, margins: np.ndarray):
    """Poses and culling of configurations ``q`` (N, A) for shape pairs ``pairs`` (P, 2).

    Returns
    -------
    T_world_link : (N, L, 4, 4); T_world_shape : (N, S, 4, 4);
    candidates : (N, P) bool, False where the pair's bounding boxes grown by ``margins`` (P,) are apart.
    """
    robot = world.robot
    T_world_link = robot.link_transforms_batch(q)
    T_world_shape = world.shape_transforms(T_world_link)
    candidates = np.empty((q.shape[0], len(pairs)), dtype=np.bool_)
    obb_candidates(T_world_shape, world.obb_center, world.obb_axes, world.obb_half, pairs, margins, candidates)
    return T_world_link, T_world_shape, candidates


def first_collision(scratch: PairTestScratch, world: CollisionWorld, q: np.ndarray,
                    selection: PairSelection, *, shapes: np.ndarray | None = None, stop=None) -> np.ndarray:
    """Per configuration of ``q`` (N, A), the index (into ``selection.pairs``) of the first colliding pair, or -1.

    Configurations are posed and culled a chunk at a time (at most ``POSE_CHUNK_BYTES`` of
    link and shape poses, and ``POSE_CHUNK`` configurations), so memory does not grow with
    N. ``shapes``: sorted indices of the shapes to pose (every shape of the selection's pairs
    must be among them; None: every shape of the world), so that a selection culled down
    to a few pairs (a motion's) poses only their shapes. ``stop``: a
    :class:`limits.WorkMeter` whose stop event is looked at between chunks.
    """
    n = q.shape[0]
    first = np.full(n, -1, dtype=np.int64)
    if n == 0 or len(selection.pairs) == 0:
        return first
    robot = world.robot
    if shapes is None:
        shape_link, T_frame_shape = world.shape_link, world.T_frame_shape
        obb = (world.obb_center, world.obb_axes, world.obb_half)
        local_pairs, n_posed = selection.pairs, len(world.shapes)
    else:
        shapes = np.asarray(shapes, dtype=np.int64)
        shape_link = np.ascontiguousarray(world.shape_link[shapes])
        T_frame_shape = np.ascontiguousarray(world.T_frame_shape[shapes])
        obb = tuple(np.ascontiguousarray(x[shapes]) for x in (world.obb_center, world.obb_axes, world.obb_half))
        local_pairs = np.ascontiguousarray(np.searchsorted(shapes, selection.pairs))
        n_posed = len(shapes)
    chunk = int(max(1, min(POSE_CHUNK, POSE_CHUNK_BYTES // (128 * (n_posed + len(robot.link_names))))))
    T_full = None                    # every shape's pose, the posed ones written per configuration
    for start in range(0, n, chunk):
        if stop is not None:
            stop.check_stop()
        T_link = robot.link_transforms_batch(q[start:start + chunk])
        T_shape = np.empty((T_link.shape[0], n_posed, 4, 4))
        shape_poses(T_link, shape_link, T_frame_shape, T_shape)
        candidates = np.empty((T_link.shape[0], len(local_pairs)), dtype=np.bool_)
        obb_candidates(T_shape, *obb, local_pairs, selection.margins, candidates)
        rows, cols = np.nonzero(candidates)
        if rows.size == 0:
            continue
        starts = np.searchsorted(rows, np.arange(T_link.shape[0] + 1))
        for c in np.flatnonzero(starts[1:] > starts[:-1]):
            if shapes is None:
                T_c = T_shape[c]
            else:
                if T_full is None:
                    T_full = world.shape_transforms(T_link[c])
                T_full[shapes] = T_shape[c]
                T_c = T_full
            posed = scratch.posed(world, T_c)
            first[start + c] = posed.first_hit(selection, cols[starts[c]:starts[c + 1]])
    return first


def any_collision(scratch: PairTestScratch, world: CollisionWorld, q: np.ndarray, selection: PairSelection) -> int:
    """The row of ``q`` (N, A) that is the first, in row order, with a colliding pair of ``selection``, or -1.

    The verdicts are :func:`first_collision`'s, but the rows are posed and culled one at a time
    in one compiled call (:func:`kernels.culling.first_candidate_row_packed`), which also drops the
    candidate pairs whose convex solids GJK proves farther apart than their margin, and
    returns at the next row with a pair left; its pair tests run (unless the call found one of
    its pairs overlapping: a vertex of one shape deep inside the other, a box, sphere or
    cylinder, which the pair tests would call colliding too), and the call goes on from
    the row after it, so nothing past the first colliding row is computed: the screen that a
    motion's bool check runs before its certificate (the caller orders the rows so that a
    collision is likely met early). N is at most ``POSE_CHUNK`` (the caller's samples).
    """
    n = q.shape[0]
    if n == 0 or len(selection.pairs) == 0:
        return -1
    if not (q.flags.c_contiguous and q.flags.writeable and q.dtype == np.float64):
        q = np.array(q, dtype=np.float64)               # one compiled signature for every caller
    buffers, pack = scratch.screen_pack(world, selection)
    row = 0
    while True:
        row, count, overlap = first_candidate_row_packed(q, row, pack)
        if row < 0:
            return -1
        if overlap or scratch.posed(world, buffers.T_world_shape[0]).first_hit(selection, buffers.survivors[:count]) >= 0:
            return int(row)
        row += 1
