"""The checker's one distance function: signed distance between two posed shapes.

Explain's contacts and the motion checks both stand on :func:`pair_distance`;
the motion checks' step sizes stand on :func:`pair_distance_lower_bound`.

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
  :func:`kernels.contains_probe`) decides penetration there too.

Conventions (those of :mod:`contacts`): body ``a`` is body 0, body ``b`` body 1;
the normal is a unit vector from body 0 to body 1; ``p1 - p0 == distance * normal``;
everything in metres in the planning frame.
"""
from __future__ import annotations

from typing import NamedTuple

import coal
import numpy as np

from .kernels import contains_probe

# GJK/EPA stop when the distance is known to this absolute precision (metres);
# coal's default (1e-6) leaves witness points a micrometre off curved surfaces.
GJK_TOLERANCE_M = 1e-9
EPA_TOLERANCE_M = 1e-9
_FALLBACK_NORMAL = np.array([0.0, 0.0, 1.0])


class PairDistance(NamedTuple):
    """Signed distance between two shapes and where it is attained."""
    distance_m: float          # > 0 apart, < 0 penetrating (then -distance_m is the depth)
    p0_world: np.ndarray       # (3,) witness point on body a
    p1_world: np.ndarray       # (3,) witness point on body b
    normal_world: np.ndarray   # (3,) unit, from body a to body b; p1 - p0 == distance_m * normal
    exact: bool                # False where the value is a fallback (see pair_distance)


def _request() -> coal.DistanceRequest:
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = GJK_TOLERANCE_M
    request.epa_tolerance = EPA_TOLERANCE_M
    return request


_REQUEST = _request()


def coal_transform(T_world_shape: np.ndarray) -> coal.Transform3s:
    """coal pose of a shape from its (4, 4) pose in the planning frame."""
    return coal.Transform3s(np.ascontiguousarray(T_world_shape[:3, :3]), np.ascontiguousarray(T_world_shape[:3, 3]))


def _coal_distance(geom_a, T_a: np.ndarray, geom_b, T_b: np.ndarray):
    result = coal.DistanceResult()
    distance = coal.distance(geom_a, coal_transform(T_a), geom_b, coal_transform(T_b), _REQUEST, result)
    return float(distance), np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2()), \
        np.array(result.normal)


def _unit_normal(p0: np.ndarray, p1: np.ndarray, distance: float, hint: np.ndarray, T_a, T_b) -> np.ndarray:
    """The unit normal from body a to body b, consistent with the sign of the distance."""
    delta = p1 - p0
    norm = float(np.linalg.norm(delta))
    if norm > 1e-12 and abs(distance) > 1e-12:
        return delta / norm * np.sign(distance)
    length = float(np.linalg.norm(hint))
    if length > 1e-12:
        return hint / length
    between = T_b[:3, 3] - T_a[:3, 3]
    length = float(np.linalg.norm(between))
    return between / length if length > 1e-12 else _FALLBACK_NORMAL.copy()


def _contained(world, T_world_shape: np.ndarray, a: int, b: int) -> tuple[int, int] | None:
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
        mesh. For a penetrating pair involving a BVH mesh the distance is negative but a
        fallback (``exact=False``): coal's triangle-level value, or for a body inside a
        closed mesh minus its surface gap (the depth is at least that).
    """
    T_a, T_b = T_world_shape[a], T_world_shape[b]
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    distance, p0, p1, hint = _coal_distance(ga.coal_geometry, T_a, gb.coal_geometry, T_b)
    if not (ga.is_bvh or gb.is_bvh):
        normal = _unit_normal(p0, p1, distance, hint, T_a, T_b)
        return PairDistance(distance, p0, p0 + distance * normal, normal, True)
    if distance > 0.0:
        inside = _contained(world, T_world_shape, a, b) if (ga.is_closed_bvh or gb.is_closed_bvh) else None
        normal = _unit_normal(p0, p1, distance, hint, T_a, T_b)
        if inside is None:
            return PairDistance(distance, p0, p0 + distance * normal, normal, True)
        # the surfaces are apart but one body is inside the other: it penetrates at least
        # as deep as the gap; the normal points so that moving body 1 along it frees the inner one
        outer, _ = inside
        normal = -normal if outer == a else normal
        return PairDistance(-distance, p0, p0 - distance * normal, normal, False)
    normal = _unit_normal(p0, p1, distance, hint, T_a, T_b)
    depth = min(distance, 0.0)
    return PairDistance(depth, p0, p0 + depth * normal, normal, False)


def pair_distance_lower_bound(world, T_world_shape: np.ndarray, a: int, b: int, enough_m: float) -> float:
    """A value never above ``pair_distance(world, T_world_shape, a, b).distance_m``.

    Cheap when it can be: the distance between bounding spheres, then (for meshes)
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
    if (ga.is_bvh or gb.is_bvh) and ga.coal_hull is not None and gb.coal_hull is not None:
        hulls = _coal_distance(ga.coal_hull, T_a, gb.coal_hull, T_b)[0]
        if hulls >= enough_m:
            return hulls
    return pair_distance(world, T_world_shape, a, b).distance_m
