"""The checker's one distance function: signed distance between two posed shapes.

Explain's contacts (:func:`pair_contacts`) and the motion checks
(:func:`pair_distance`) stand on the same computation; the configuration check's
padding test uses the cheaper :func:`pair_distance_lower_bound`.

Which library does what, and why (measured here, see the README):

- **coal** computes the signed distance of primitive and convex pairs (GJK for
  separated shapes, EPA for penetrating ones). It returns the exact distance,
  witness points on the bodies and the normal for every pair python-fcl gets
  wrong (non-minimal GJK distances, box-cone depths, witness points off the
  bodies), and is faster per call than python-fcl's ``distance``.
- For a pair involving a triangle mesh checked as a BVH, coal's distance is the
  exact distance between the two surfaces while they are apart. A surface
  distance knows nothing of volumes: a body wholly inside a closed mesh is
  "apart" from its surface, so the solid-body test (generalised winding number,
  :func:`kernels.mesh_queries.contains_probe`) decides penetration there too.
- For a penetrating pair of **convex solids**, the distance is minus the **minimum
  translation distance** (MTD): coal's EPA answer, checked against the two support
  functions and replaced by a direction search where it fails
  (:mod:`core.checks.penetration`: coal 3.0.3 returns 624.7 mm through a cap for a
  Panda finger box inside the post, where 28.1 mm radially separates them). Convex
  solids are the primitives, convex meshes, and closed meshes convex to within
  ``penetration.CONVEX_VOLUME_TOLERANCE`` (hull volume within 0.1 % of the mesh's:
  the Panda's are within 0.03 %), which get their hulls' MTD once the mesh rule
  below has found them penetrating (so the sign never disagrees with the mesh
  distance), as Drake and Tesseract treat them. ``PairDistance.rule`` /
  ``Contact.depth_rule`` say "mtd".
- For a penetrating pair involving a (genuinely non-convex) closed mesh, the depth is that of the
  **deepest point** of the overlap (:func:`pair_contacts`): the surface samples of
  each body (vertices, edge midpoints and face centroids of its mesh or of a
  primitive's tessellation; a primitive's deepest sample refined by its support
  point) that lie inside the other body, each with its distance to the other
  body's surface (kernels/depth.py: analytic for primitives, face planes for
  convex meshes; for closed meshes the nearest point through an AABB tree and the
  side from the nearest feature's pseudo-normal, or the winding number where the
  mesh is not a clean 2-manifold). The deepest gives the depth, the witness points
  (the inside point and its nearest point on the other surface) and the normal.
  This is not the translation that separates the bodies where the two differ (a
  thin plate through a block is shallow at every point yet needs a long push).
  When no sample is inside (an edge through an edge), the value is coal's
  triangle-level one, ``exact=False``.

Conventions (those of :mod:`core.checks.results`): body ``a`` is body 0, body ``b`` body 1;
the normal is a unit vector from body 0 to body 1; ``p1 - p0 == distance * normal``;
everything in metres in the planning frame.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from my_collision_pkg.core.checks import penetration
from my_collision_pkg.core.geometry.coal_setup import coal   # coal with its box support pinned (see there)
from my_collision_pkg.core.kernels.clearance_rows import sphere_gaps
from my_collision_pkg.core.kernels.mtd import polished_coal_answer
from my_collision_pkg.core.kernels.depth import SolidArrays, SurfaceSamples, pair_overlaps, pair_regions
from my_collision_pkg.core.kernels.mesh_queries import MeshTree, contains_any_point, contains_probe

# coal's GJK and EPA stop when the signed distance is known to this absolute precision
# (metres); coal's default (1e-6) leaves witness points a micrometre off curved surfaces.
# (The motion checks ask coal for a looser precision of their own: see checks/motion.py.)
WITNESS_PRECISION_M = 1e-9
_FALLBACK_NORMAL = np.array([0.0, 0.0, 1.0])
# Support-point refinements of a primitive's or convex mesh's deepest point (each step
# moves it to the body's extreme point along the current push-out direction).
REFINE_STEPS = 3
_NO_TRIANGLES = np.zeros((1, 3, 3))
_NO_TREE = MeshTree.of(np.eye(3), np.array([[0, 1, 2]]))      # placeholder arrays for kinds without a tree
_BODY_PACKS = "narrowphase: depth kernel packs"                 # CollisionWorld.cached key, with the shape index


class PairDistance(NamedTuple):
    """Signed distance between two shapes and where it is attained."""
    distance_m: float          # > 0 apart, < 0 penetrating (then -distance_m is the depth)
    p0_world: np.ndarray       # (3,) witness point on body a
    p1_world: np.ndarray       # (3,) witness point on body b
    normal_world: np.ndarray   # (3,) unit, from body a to body b; p1 - p0 == distance_m * normal
    exact: bool                # False where the value is a fallback (see pair_distance)
    subshapes: tuple = (-1, -1)  # triangle of each body the witness point lies on (-1: none or not a mesh)
    # which rule gave a penetrating pair's numbers: "mtd" (convex solids: minus the minimum
    # translation distance; also every separated pair's plain distance) or "deepest_point"
    # (non-convex meshes: the deepest surface point of the overlap)
    rule: str = "mtd"


# EPA may fail to converge at the tight tolerance (coal then returns -DBL_MAX and points
# at infinity: seen with a Panda finger box against a cylinder); retry looser, down to
# coal's default. An answer beyond this size is such a failure.
_RETRY_TOLERANCES_M = (1e-7, 1e-6)
_SANE_DISTANCE_M = 1e6


def _request(tolerance_gjk: float = WITNESS_PRECISION_M, tolerance_epa: float = WITNESS_PRECISION_M) -> coal.DistanceRequest:
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = tolerance_gjk
    request.epa_tolerance = tolerance_epa
    return request


_REQUEST = _request()
_RETRY_REQUESTS = tuple(_request(t, t) for t in _RETRY_TOLERANCES_M)
_REQUESTS = (_REQUEST,) + _RETRY_REQUESTS


def coal_transform(T_world_shape: np.ndarray) -> coal.Transform3s:
    """coal pose of a shape from its (4, 4) pose in the planning frame (eigenpy reads the strided
    views as they are: no contiguous copies needed)."""
    return coal.Transform3s(T_world_shape[:3, :3], T_world_shape[:3, 3])


def _sane(distance: float, p0: np.ndarray, p1: np.ndarray) -> bool:
    """Whether coal's answer is finite and of a sane size (not EPA's failure: -DBL_MAX, points at infinity)."""
    a0, a1, a2 = p0.tolist()
    b0, b1, b2 = p1.tolist()
    s = _SANE_DISTANCE_M       # (a NaN fails every comparison)
    return (abs(distance) < s and abs(a0) < s and abs(a1) < s and abs(a2) < s and abs(b0) < s and abs(b1) < s
            and abs(b2) < s)


def coal_pose(T_world_shape: np.ndarray, shape: int, poses: dict | None) -> coal.Transform3s:
    """coal pose of shape ``shape`` at the poses ``T_world_shape`` (S, 4, 4); ``poses``: the ones made for
    these poses so far, by shape (filled here; None: none kept)."""
    if poses is None:
        return coal_transform(T_world_shape[shape])
    pose = poses.get(shape)
    if pose is None:
        pose = poses[shape] = coal_transform(T_world_shape[shape])
    return pose


def _coal_distance(geom_a, T_a: np.ndarray, geom_b, T_b: np.ndarray, pose_a=None, pose_b=None):
    """coal's signed distance, witness points and normal; ``pose_a``, ``pose_b``: coal poses of T_a, T_b
    when the caller has them."""
    if pose_a is None:
        pose_a = coal_transform(T_a)
    if pose_b is None:
        pose_b = coal_transform(T_b)
    return coal_distance(geom_a, geom_b, pose_a, pose_b)


def coal_distance(geom_a, geom_b, pose_a: coal.Transform3s, pose_b: coal.Transform3s,
                  result: coal.DistanceResult | None = None):
    """(signed distance, witness point on a, on b, coal's normal) of two coal geometries at coal poses, retried
    at looser tolerances where EPA fails (see _RETRY_TOLERANCES_M). ``result``: a coal result to use (cleared
    first: the same answers as a fresh one, measured on 13,200 Panda hull pairs, without the ~2 us of making
    one) for the first try; None: a fresh one."""
    for request in _REQUESTS:
        if result is None:
            result = coal.DistanceResult()
        else:
            result.clear()
        distance = float(coal.distance(geom_a, pose_a, geom_b, pose_b, request, result))
        p0, p1 = result.getNearestPoint1(), result.getNearestPoint2()      # fresh float64 arrays (eigenpy copies)
        if _sane(distance, p0, p1):
            break
    return distance, p0, p1, np.array(result.normal)


def _unit_normal(p0: np.ndarray, p1: np.ndarray, distance: float, hint: np.ndarray, T_a, T_b) -> np.ndarray:
    """The unit normal from body a to body b, consistent with the sign of the distance."""
    delta = p1 - p0
    d0, d1, d2 = delta.tolist()
    norm = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if norm > 1e-12 and abs(distance) > 1e-12:
        return delta / (norm if distance > 0.0 else -norm)
    h0, h1, h2 = hint.tolist()
    length = math.sqrt(h0 * h0 + h1 * h1 + h2 * h2)
    if length > 1e-12:
        return hint / length
    between = T_b[:3, 3] - T_a[:3, 3]
    length = float(np.linalg.norm(between))
    return between / length if length > 1e-12 else _FALLBACK_NORMAL.copy()


_OCTREE_REQUESTS: dict[float, object] = {}      # coal's boolean request per security margin (read-only once made)


def _octree_request(margin: float):
    """coal's boolean collision request with security margin ``margin`` (kept for the few margins a scene has)."""
    request = coal.CollisionRequest()
    request.num_max_contacts = 1
    request.enable_contact = False
    request.security_margin = float(margin)
    if len(_OCTREE_REQUESTS) < 64:
        _OCTREE_REQUESTS[margin] = request
    return request


def octree_pair_collides(world, T_world_shape: np.ndarray, a: int, b: int, margin: float) -> bool:
    """The predicate's test of a pair one of whose shapes is an occupancy octree (the other a
    robot shape): coal's collision with the tree, a cell within ``margin`` metres counting as
    touching (coal's security margin), then the solid-body test (a cell wholly inside a closed
    robot mesh, :func:`_cell_inside_closed_mesh`)."""
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    request = _OCTREE_REQUESTS.get(margin) or _octree_request(margin)
    result = coal.CollisionResult()
    pose_a = world.cached(("octomap", "fixed_pose", a), coal_transform, T_world_shape[a]) if ga.fcl_geometry is None \
        else coal_transform(T_world_shape[a])            # the tree is world-fixed: its pose made once
    pose_b = world.cached(("octomap", "fixed_pose", b), coal_transform, T_world_shape[b]) if gb.fcl_geometry is None \
        else coal_transform(T_world_shape[b])
    if coal.collide(ga.coal_geometry, pose_a, gb.coal_geometry, pose_b, request, result):
        return True
    mesh, tree = (a, b) if ga.is_closed_bvh else (b, a)
    if not world.shapes[mesh].geometry.is_closed_bvh:
        return False
    return _cell_inside_closed_mesh(world, T_world_shape, mesh, tree)


def _cell_inside_closed_mesh(world, T_world_shape: np.ndarray, mesh: int, tree: int) -> bool:
    """The solid-body test of an octree against a closed mesh whose surfaces coal found apart:
    whether a cell centre lies inside the mesh (no cell crosses the surface, so such a cell is
    wholly inside). Only the centres in the x-y window of the mesh's box are looked at, hull
    planes before the winding number
    (:func:`~my_collision_pkg.core.kernels.mesh_queries.contains_any_point`). Measured with
    ``benchmarks/bench_octomap.py`` against a first coal call on the mesh's box shrunk by half a
    cell (none meeting it: no cell inside): the scan alone made the predicate's mean 0.16-0.25 ->
    0.08 ms, as the extra traversal cost more than the scan it saved.
    """
    geom, tree_geom = world.shapes[mesh].geometry, world.shapes[tree].geometry
    return bool(contains_any_point(T_world_shape[mesh], T_world_shape[tree], tree_geom.probe_points_shape,
                                   geom.obb_center_shape, geom.obb_axes_shape, geom.obb_half_extents_m,
                                   geom.solid_planes, geom.triangles_shape))


def inside_closed_mesh(world, T_world_shape: np.ndarray, a: int, b: int) -> tuple[int, int] | None:
    """(outer, inner) when one shape lies wholly inside a closed mesh of the other."""
    for outer, inner in ((a, b), (b, a)):
        geom = world.shapes[outer].geometry
        if geom.is_closed_bvh and contains_probe(T_world_shape[outer], T_world_shape[inner],
                                                 world.shapes[inner].geometry.probe_points_shape,
                                                 geom.obb_center_shape, geom.obb_axes_shape,
                                                 geom.obb_half_extents_m, geom.triangles_shape):
            return outer, inner
    return None


def pair_distance(world, T_world_shape: np.ndarray, a: int, b: int) -> PairDistance:
    """Signed distance between shapes ``a`` and ``b`` of ``world`` at the poses ``T_world_shape``.

    Parameters
    ----------
    world : CollisionWorld
    T_world_shape : (S, 4, 4) array
        Every shape's pose in the planning frame for one configuration, as
        ``CollisionWorld.shape_transforms`` gives it.
    a, b : int
        Indices into ``world.shapes``; ``a`` is body 0.

    Returns
    -------
    PairDistance
        Exact for primitive and convex pairs (coal) and for separated pairs involving a
        mesh. For a penetrating pair involving a closed BVH mesh, minus the depth of the
        deepest point of the overlap (see :func:`pair_contacts`). The value is a fallback
        (``exact=False``, coal's triangle-level value) for a penetrating open mesh and when
        no surface point of either body lies inside the other.
    """
    return pair_contacts(world, T_world_shape, a, b, 1)[0]


def pair_contacts(world, T_world_shape: np.ndarray, a: int, b: int, max_regions: int,
                  likely_penetrating: bool = False, surfaces_cross: bool = False,
                  penetrating: bool = False, coal_poses: dict | None = None) -> list[PairDistance]:
    """The pair's signed distance, and for penetrating closed meshes one entry per overlap region.

    Same as :func:`pair_distance` for primitive and convex pairs and for separated
    pairs (one entry). For a penetrating pair involving a closed mesh: the deepest
    point of each separate region of the overlap (inside surface points grouped by
    the mesh edges joining them, regions of the two bodies merged where they meet),
    deepest first, at most ``max_regions``. ``likely_penetrating`` (e.g. the predicate
    refused the pair) only changes the order of the work: the overlap regions are
    looked for first, and coal's distance is not needed when there are some (a surface
    point inside the other body means the bodies overlap, whatever coal says); for two
    nearly convex solids, whose regions the hulls' MTD replaces, only whether there is one
    (:func:`regions_exist`, stopped at the first surface point inside), the regions
    themselves only where the hulls then come out apart.
    ``surfaces_cross`` (fcl found the two surfaces intersecting) or ``penetrating`` (the caller
    knows the pair penetrates, e.g. the predicate refused it without padding: its surfaces cross
    or one body is inside the other) makes the pair penetrating for certain: two nearly convex
    solids then get their hulls' MTD at once, the answer the deepest-point search would have
    been replaced by (:func:`_as_convex`). ``coal_poses``: a dict the caller keeps for one
    ``T_world_shape``, where the coal poses of its shapes are kept (:func:`coal_pose`).
    """
    T_a, T_b = T_world_shape[a], T_world_shape[b]
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    solids = ga.solid_kind >= 0 and gb.solid_kind >= 0
    if (surfaces_cross or penetrating) and solids and (ga.is_bvh or gb.is_bvh) \
            and penetration.nearly_convex(world, a) and penetration.nearly_convex(world, b):
        hulls = hull_mtd(world, T_world_shape, a, b, None, coal_poses)
        if hulls is not None:           # (None: the hulls came out apart, numerically; the full rules then)
            return [hulls]
    if likely_penetrating and solids and (ga.is_closed_bvh or gb.is_closed_bvh):
        if penetration.nearly_convex(world, a) and penetration.nearly_convex(world, b):
            # the regions' numbers would be replaced by the hulls' MTD (_as_convex) unless the hulls come out
            # apart: whether there is a region is all that is needed first (the same answer, less work)
            if not regions_exist(world, T_world_shape, a, b):
                likely_penetrating = False          # no region: what follows, as when deepest_regions is empty
            else:
                hulls = hull_mtd(world, T_world_shape, a, b, None, coal_poses)
                if hulls is not None:
                    return [hulls]
        if likely_penetrating:
            regions = deepest_regions(world, T_world_shape, a, b, max_regions)
            if regions:
                return _as_convex(world, T_world_shape, a, b, regions)
    distance, p0, p1, hint = _coal_distance(ga.coal_geometry, T_a, gb.coal_geometry, T_b)
    if not (ga.is_bvh or gb.is_bvh):
        normal = _unit_normal(p0, p1, distance, hint, T_a, T_b)
        if distance < 0.0:
            return [checked_convex(world, T_world_shape, a, b, distance, p0, normal)]
        return [PairDistance(distance, p0, p0 + distance * normal, normal, True)]
    return _as_convex(world, T_world_shape, a, b,
                      _mesh_contacts(world, T_world_shape, a, b, max_regions, distance, p0, p1, hint))


def _as_convex(world, T_world_shape, a, b, results: list[PairDistance]) -> list[PairDistance]:
    """The convex-mesh rule: a penetrating pair of nearly convex solids gets its hulls' MTD (one entry).
    A distance of exactly 0 (coal's mesh distance where the surfaces cross, and no surface sample
    inside the other body: a thin overlap) is a penetration too: the hulls' MTD gives its depth
    (issue 40: a 0.239 mm Panda link0 / link6 overlap was reported as distance 0)."""
    if results[0].distance_m <= 0.0 and penetration.nearly_convex(world, a) and penetration.nearly_convex(world, b):
        return [hull_mtd(world, T_world_shape, a, b, results[0])]
    return results


def checked_convex(world, T_world_shape: np.ndarray, a: int, b: int, distance: float, p0: np.ndarray,
                   normal: np.ndarray) -> PairDistance:
    """coal's penetrating answer for two convex solids, checked and polished (:func:`penetration.checked_mtd`);
    the searched (and polished) MTD with support-point witnesses where the check fails."""
    body_a = penetration.body(world, T_world_shape, a)
    body_b = penetration.body(world, T_world_shape, b)
    ok, n, depth = penetration.checked_mtd(body_a, body_b, -distance, normal)
    if ok:          # coal's answer polished to the exact local minimum (the same witness p0)
        return PairDistance(-depth, p0, p0 - depth * n, n, True)
    w0, _ = penetration.witness(body_a, body_b, n, depth)
    return PairDistance(-depth, w0, w0 - depth * n, n, True)


def hull_mtd(world, T_world_shape: np.ndarray, a: int, b: int, mesh_result: PairDistance,
             coal_poses: dict | None = None) -> PairDistance:
    """A penetrating pair of nearly convex solids (penetration.nearly_convex) as convex solids: coal on their
    hulls, checked. ``mesh_result`` (the deepest-point answer) stays where the hulls come out apart.
    ``coal_poses``: see :func:`coal_pose`."""
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    T_a, T_b = T_world_shape[a], T_world_shape[b]
    distance, p0, p1, hint = _coal_distance(ga.coal_hull, T_a, gb.coal_hull, T_b,
                                            coal_pose(T_world_shape, a, coal_poses),
                                            coal_pose(T_world_shape, b, coal_poses))
    if not distance < 0.0:
        return mesh_result
    # the normal, the check and the polish to the exact local minimum in one compiled call (kernels.mtd); the search
    # where the check fails
    answer = np.empty((3, 3))
    if polished_coal_answer(*penetration.kernel_parts(world, a), _kernel_pose(T_a), *penetration.kernel_parts(world, b),
                            _kernel_pose(T_b), distance, p0, p1, hint, penetration.CHECK_ABS_M, penetration.CHECK_REL,
                            penetration.LOCAL_CHECK_RAD, answer):
        return PairDistance(float(answer[2, 0]), p0, answer[1].copy(), answer[0].copy(), True)
    return checked_convex(world, T_world_shape, a, b, distance, p0, answer[0].copy())


def _kernel_pose(T: np.ndarray) -> np.ndarray:
    """A (4, 4) pose as the compiled kernels take it: float64, C-ordered, writable (a copy only if not)."""
    flags = T.flags
    if flags.c_contiguous and flags.writeable and T.dtype == np.float64:
        return T
    return np.array(T, dtype=np.float64, order="C")


def _mesh_contacts(world, T_world_shape, a, b, max_regions, distance, p0, p1, hint) -> list[PairDistance]:
    """pair_contacts for a pair involving a BVH mesh, from coal's distance of the two shapes."""
    T_a, T_b = T_world_shape[a], T_world_shape[b]
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    solids = ga.solid_kind >= 0 and gb.solid_kind >= 0
    closed = ga.is_closed_bvh or gb.is_closed_bvh
    inside = None
    if distance > 0.0:
        inside = inside_closed_mesh(world, T_world_shape, a, b) if closed else None
        if inside is None:
            normal = _unit_normal(p0, p1, distance, hint, T_a, T_b)
            return [PairDistance(distance, p0, p0 + distance * normal, normal, True)]
    if solids:
        regions = deepest_regions(world, T_world_shape, a, b, max_regions)
        if regions:
            return regions
    if inside is not None:
        # the surfaces are apart but one body is inside the other: it penetrates at least
        # as deep as the gap; the normal points so that moving body 1 along it frees the inner one
        outer, _ = inside
        normal = _unit_normal(p0, p1, distance, hint, T_a, T_b)
        normal = -normal if outer == a else normal
        return [PairDistance(-distance, p0, p0 - distance * normal, normal, False, rule="deepest_point")]
    normal = _unit_normal(p0, p1, distance, hint, T_a, T_b)
    depth = min(distance, 0.0)
    return [PairDistance(depth, p0, p0 + depth * normal, normal, False, rule="deepest_point" if depth < 0 else "mtd")]


def _body_arguments(g) -> tuple[tuple, tuple]:
    """One body's packs for ``kernels.depth.pair_regions``: its surface samples and itself as a solid
    (:class:`SurfaceSamples`, :class:`SolidArrays`), each as the plain tuple of its fields that the
    kernel's entry takes."""
    triangles = g.triangles_shape if g.triangles_shape is not None else _NO_TRIANGLES
    tree = g.mesh_tree if g.mesh_tree is not None else _NO_TREE
    samples = SurfaceSamples(g.surface_points_shape, g.surface_parents, g.surface_edges, g.surface_adjacency_start,
                             g.surface_adjacency, g.surface_faces)
    solid = SolidArrays(g.solid_kind, g.solid_params, g.solid_planes, triangles, tree.bounds, tree.nodes, tree.order,
                        tree.pseudo_normals, tree.manifold, g.obb_center_shape, g.obb_axes_shape,
                        g.obb_half_extents_m, tree.face_normals)
    return tuple(samples), tuple(solid)


def body_packs(world, shape: int) -> tuple[tuple, tuple]:
    """:func:`_body_arguments` of ``world.shapes[shape]``, built once per world snapshot."""
    return world.cached((_BODY_PACKS, shape), _body_arguments, world.shapes[shape].geometry)


def regions_exist(world, T_world_shape: np.ndarray, a: int, b: int) -> bool:
    """Whether :func:`deepest_regions` finds a region (a surface point of either solid inside the other),
    in one compiled call that stops at the first such point (``kernels.depth.pair_overlaps``)."""
    samples_a, solid_a = body_packs(world, a)
    samples_b, solid_b = body_packs(world, b)
    return bool(pair_overlaps(samples_a, solid_a, T_world_shape[a], samples_b, solid_b, T_world_shape[b]))


def deepest_regions(world, T_world_shape: np.ndarray, a: int, b: int, max_regions: int) -> list[PairDistance]:
    """Deepest point of each separate overlap region of two solids, deepest first (empty: none found).

    Body 0's points inside body 1 and body 1's inside body 0 are grouped per body by
    the edges joining them (``surface_edges``); two such groups (of either body) are
    the same region when their boxes, grown by the deeper of the two depths, meet
    (samples of one patch that no inside edge joins are not told apart as regions).
    In each region, the deepest point of each body that has a support function (a
    primitive or a convex mesh) is moved to its support point along the push-out.
    All in one compiled call (``kernels.depth.pair_regions``).
    """
    samples_a, solid_a = body_packs(world, a)
    samples_b, solid_b = body_packs(world, b)
    depth, p0, p1, normal, subshapes = pair_regions(int(max_regions), REFINE_STEPS, samples_a, solid_a, T_world_shape[a],
                                                    samples_b, solid_b, T_world_shape[b])
    return [PairDistance(-float(depth[m]), p0[m], p1[m], normal[m], True, (int(subshapes[m, 0]), int(subshapes[m, 1])),
                         "deepest_point")
            for m in range(len(depth))]


def _sphere_tables(world) -> tuple[np.ndarray, np.ndarray]:
    centre = np.array([e.geometry.obb_center_shape for e in world.shapes], dtype=float).reshape(-1, 3)
    radius = np.array([float(e.geometry.bounding_radius_m) for e in world.shapes])
    return centre, radius


def bounding_sphere_gaps(world, T_world_shape: np.ndarray, configuration: np.ndarray, a: np.ndarray,
                         b: np.ndarray) -> np.ndarray:
    """The first bound of :func:`pair_distance_lower_bound` for many pairs at once (never above their distances).

    Parameters
    ----------
    world : CollisionWorld
    T_world_shape : (N, S, 4, 4) array
        Every shape's pose at N configurations (``CollisionWorld.shape_transforms`` of a batch).
    configuration, a, b : (K,) int arrays
        Row k: shapes ``a[k]`` and ``b[k]`` at configuration ``configuration[k]``.

    Returns
    -------
    (K,) array: the distance between the shapes' bounding spheres (centre of the shape's box,
    ``bounding_radius_m``), negative when they overlap.
    """
    centre, radius = world.cached(("narrowphase", "bounding spheres"), _sphere_tables, world)
    gaps = np.empty(len(configuration))
    sphere_gaps(np.ascontiguousarray(T_world_shape, dtype=float), np.ascontiguousarray(configuration, dtype=np.int64),
                np.ascontiguousarray(a, dtype=np.int64), np.ascontiguousarray(b, dtype=np.int64), centre, radius, gaps)
    return gaps


def pair_distance_lower_bound(world, T_world_shape: np.ndarray, a: int, b: int, enough_m: float) -> float:
    """A value never above ``pair_distance(world, T_world_shape, a, b).distance_m``.

    Cheap when it can be: the distance between bounding spheres (:func:`bounding_sphere_gaps` for
    many pairs at once), then (for meshes)
    between the convex hulls (a hull contains its mesh, so the hull distance is a
    lower bound of the mesh distance), returned as soon as one is ``>= enough_m``.
    Otherwise the exact signed distance of :func:`pair_distance`.
    """
    ea, eb = world.shapes[a], world.shapes[b]
    ga, gb = ea.geometry, eb.geometry
    T_a, T_b = T_world_shape[a], T_world_shape[b]
    centre_a = T_a[:3, :3] @ ga.obb_center_shape + T_a[:3, 3]
    centre_b = T_b[:3, :3] @ gb.obb_center_shape + T_b[:3, 3]
    spheres = float(np.linalg.norm(centre_b - centre_a)) - ga.bounding_radius_m - gb.bounding_radius_m
    if spheres >= enough_m:
        return spheres
    hulls = hull_distance_lower_bound(world, T_world_shape, a, b)
    if hulls >= enough_m:
        return hulls
    return pair_distance(world, T_world_shape, a, b).distance_m


def hull_distance_lower_bound(world, T_world_shape: np.ndarray, a: int, b: int) -> float:
    """The distance of the convex hulls of a pair involving a mesh (never above the pair's
    :func:`pair_distance`: a hull contains its mesh), or -inf when the pair has no hulls to
    compare (primitive and convex pairs: their exact distance costs no more)."""
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    if (ga.is_bvh or gb.is_bvh) and ga.coal_hull is not None and gb.coal_hull is not None:
        return _coal_distance(ga.coal_hull, T_world_shape[a], gb.coal_hull, T_world_shape[b])[0]
    return -math.inf
