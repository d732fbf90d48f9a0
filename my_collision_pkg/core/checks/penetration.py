"""Minimum translation distance (MTD) of two penetrating convex solids: a check of coal's answer and a fallback.

For convex bodies A and B, and a unit direction ``n`` (from A to B), the overlap along
``n`` is ``h_A(n) + h_B(-n)`` (``h`` the support function: the largest ``n . x`` over the
body): the length B must travel along ``n`` to leave A. The MTD is the smallest overlap
over all directions, and the direction attaining it is the contact normal.

coal's EPA gives the MTD for most posed pairs, but not all: a Panda finger box wholly
inside a long cylinder (issue 15) comes back at 624.7 mm through a cap where 28.2 mm
radially separates them. :func:`checked_mtd` therefore *checks* every penetrating
answer: the overlap along coal's normal must equal coal's depth (within
``CHECK_ABS_M + CHECK_REL * depth``), and no candidate direction (box face normals,
axes of cylinders, capsules and cones and the radial directions from the other body's
centre to them, the line between the centres, cross products of box edges and axes,
and eight neighbours of coal's normal 1 mrad away) may give a smaller overlap (convex
meshes' face normals are not candidates: EPA is exact on polytopes up to its tolerance, and
the local test catches a normal that is not a minimum). If the check fails, the best
of those directions and of a Fibonacci sampling of the sphere is refined by a pattern
search over the sphere, and the witness points are the support points along it.

:func:`checked_mtd` runs the check and the search compiled, one call per pair
(:mod:`my_collision_pkg.core.kernels.mtd`: ~0.2 ms of numpy per pair became a few
microseconds); :func:`checked_mtd_reference` is the same computation in numpy, the
reference the compiled one is tested against (test/core/test_penetration_compiled.py).

Convex solids here: the primitives (kernels.codes KIND_BOX .. KIND_CONE) and convex
vertex sets (convex meshes, and the hulls of meshes that are convex within
:data:`CONVEX_VOLUME_TOLERANCE`, see :func:`nearly_convex`).
"""
from __future__ import annotations

import math

import numpy as np

from my_collision_pkg.core.kernels import mtd as compiled
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER, \
    KIND_MESH, KIND_SPHERE

CHECK_ABS_M = 1e-6          # coal's depth must match the overlap along its normal to this, plus ...
CHECK_REL = 1e-6            # ... this fraction of the depth
# A closed mesh whose convex hull's volume exceeds its own by at most this fraction is a
# convex solid for contact numbers (its hull's MTD); the Panda's meshes: at most 0.03 %.
CONVEX_VOLUME_TOLERANCE = 1e-3
# Meshes above this many triangles keep the deepest-point rule (their hull, not kept once the
# shape is built, would be recomputed on their first contact: seconds per million triangles).
MAX_CONVEX_RULE_TRIANGLES = 100_000
SPHERE_SAMPLES = 2000       # directions of the fallback's coarse search
REFINE_START_RAD = 0.05     # first step of the pattern search
REFINE_STOP_RAD = 1e-9      # it stops below this step
LOCAL_CHECK_RAD = 1e-3     # the check's neighbours of coal's normal (coal's must be a local minimum)
_REFINE_SEEDS = 3           # best coarse directions refined
_CONVEX_KEY = "penetration: convex vertex set"      # CollisionWorld.cached key, with the shape index
_NO_VERTICES = np.zeros((1, 3))     # the compiled kernels' vertex array of a primitive (not read)
_NO_EXTRA = np.zeros((0, 3))
_BODY_KEY = "penetration: body parts"               # CollisionWorld.cached key, with the shape index


class Body:
    """One posed convex solid: kind, sizes (ShapeGeometry.solid_params), vertices (convex sets), pose."""
    __slots__ = ("kind", "params", "vertices_shape", "R", "t", "face_normals_shape", "T")

    def __init__(self, kind: int, params: np.ndarray, T_world_shape: np.ndarray, vertices_shape=None,
                 face_normals_shape=None) -> None:
        self.kind = int(kind)
        self.params = np.array(params, dtype=float)          # a writable copy: one kernel signature
        self.T = np.require(T_world_shape, dtype=float, requirements=["C", "W"])
        self.R = self.T[:3, :3]
        self.t = self.T[:3, 3]
        self.vertices_shape = vertices_shape
        self.face_normals_shape = face_normals_shape

    @classmethod
    def posed(cls, kind: int, params: np.ndarray, T_world_shape: np.ndarray, vertices_shape=None,
              face_normals_shape=None) -> Body:
        """A body from parts already in the kernels' types (int kind, float64 params and C-ordered writable
        vertices; :func:`body` keeps them per shape): only the pose is copied."""
        self = cls.__new__(cls)
        self.kind, self.params = kind, params
        self.T = np.array(T_world_shape, dtype=np.float64)
        self.R = self.T[:3, :3]
        self.t = self.T[:3, 3]
        self.vertices_shape = vertices_shape
        self.face_normals_shape = face_normals_shape
        return self

    def kernel_arguments(self) -> tuple:
        """(kind, params, vertices, T_world_shape) as the compiled kernels (kernels.mtd) take a body."""
        vertices = self.vertices_shape
        if vertices is None:
            vertices = _NO_VERTICES
        elif not (vertices.flags.c_contiguous and vertices.flags.writeable and vertices.dtype == np.float64):
            vertices = np.require(vertices, dtype=np.float64, requirements=["C", "W"])
        return self.kind, self.params, vertices, self.T

    def support(self, directions_world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(h (N,), points (N, 3)): the support function and a support point per unit direction (N, 3)."""
        d = directions_world @ self.R           # rows: directions in the shape frame
        p = self.params
        k = self.kind
        if k == KIND_BOX:
            local = np.where(d >= 0.0, 1.0, -1.0) * p
        elif k == KIND_SPHERE:
            local = p[0] * d / np.maximum(np.linalg.norm(d, axis=1), 1e-300)[:, None]
        elif k in (KIND_CYLINDER, KIND_CAPSULE, KIND_CONE):
            r, hl = p[0], p[1]
            rho = np.linalg.norm(d[:, :2], axis=1)
            safe = np.where(rho > 1e-15, rho, 1.0)
            radial = np.where((rho > 1e-15)[:, None], d[:, :2] / safe[:, None], 0.0)
            if k == KIND_CYLINDER:
                local = np.column_stack([r * radial, np.where(d[:, 2] >= 0.0, hl, -hl)])
            elif k == KIND_CAPSULE:
                unit = d / np.maximum(np.linalg.norm(d, axis=1), 1e-300)[:, None]
                local = r * unit
                local[:, 2] += np.where(d[:, 2] >= 0.0, hl, -hl)
            else:                                # cone: apex at +hl, base rim at -hl
                rim = np.column_stack([r * radial, np.full(len(d), -hl)])
                apex = np.tile([0.0, 0.0, hl], (len(d), 1))
                local = np.where((hl * d[:, 2] >= r * rho - hl * d[:, 2])[:, None], apex, rim)
        else:                                    # a convex vertex set
            values = d @ self.vertices_shape.T
            local = self.vertices_shape[np.argmax(values, axis=1)]
        h = np.einsum("ij,ij->i", d, local) + directions_world @ self.t
        return h, local @ self.R.T + self.t

    def candidate_directions(self, other_centre: np.ndarray) -> list[np.ndarray]:
        """Unit directions (world) that may carry the MTD: face normals, axis, radial to the axis."""
        out = []
        if self.kind == KIND_BOX:
            out.extend(self.R.T)
        elif self.kind in (KIND_CYLINDER, KIND_CAPSULE, KIND_CONE):
            axis = self.R[:, 2]
            out.append(axis)
            w = other_centre - self.t
            w = w - (w @ axis) * axis
            if np.linalg.norm(w) > 1e-12:
                out.append(w / np.linalg.norm(w))
            if self.kind == KIND_CONE:           # the side's normal in the plane of the radial direction
                r, hl = self.params[0], self.params[1]
                if np.linalg.norm(w) > 1e-12:
                    radial = w / np.linalg.norm(w)
                    side = 2.0 * hl * radial + r * axis
                    out.append(side / np.linalg.norm(side))
        elif self.kind == KIND_SPHERE:
            w = other_centre - self.t
            if np.linalg.norm(w) > 1e-12:
                out.append(w / np.linalg.norm(w))
        return out

    def edge_directions(self) -> list[np.ndarray]:
        if self.kind == KIND_BOX:
            return list(self.R.T)
        if self.kind in (KIND_CYLINDER, KIND_CAPSULE, KIND_CONE):
            return [self.R[:, 2]]
        return []


def overlap(body_a: Body, body_b: Body, directions_world: np.ndarray) -> np.ndarray:
    """Overlap ``h_A(n) + h_B(-n)`` (N,) along each unit direction (N, 3), from A to B."""
    return body_a.support(directions_world)[0] + body_b.support(-directions_world)[0]


def _unit_rows(directions: np.ndarray) -> np.ndarray:
    lengths = np.linalg.norm(directions, axis=1)
    keep = lengths > 1e-12
    return directions[keep] / lengths[keep, None]


def candidates(body_a: Body, body_b: Body, extra=()) -> np.ndarray:
    """Candidate MTD directions (both signs), unit rows (N, 3)."""
    dirs = list(body_a.candidate_directions(body_b.t)) + list(body_b.candidate_directions(body_a.t))
    dirs.append(body_b.t - body_a.t)
    for ea in body_a.edge_directions():
        for eb in body_b.edge_directions():
            dirs.append(np.cross(ea, eb))
    dirs.extend(extra)
    rows = _unit_rows(np.asarray(dirs, dtype=float).reshape(-1, 3))
    return np.vstack([rows, -rows])


def fibonacci_sphere(count: int) -> np.ndarray:
    """``count`` unit directions spread evenly over the sphere (N, 3)."""
    i = np.arange(count) + 0.5
    z = 1.0 - 2.0 * i / count
    phi = np.pi * (1.0 + 5.0 ** 0.5) * i
    rho = np.sqrt(1.0 - z * z)
    return np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])


def _tangent_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y, z = float(n[0]), float(n[1]), float(n[2])
    if abs(x) < 0.9:                 # n x (1, 0, 0)
        u = np.array([0.0, z, -y])
    else:                            # n x (0, 1, 0)
        u = np.array([-z, 0.0, x])
    u /= (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) ** 0.5
    return u, np.array([y * u[2] - z * u[1], z * u[0] - x * u[2], x * u[1] - y * u[0]])


_PATTERN = np.array([[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=float)
_PATTERN[4:] /= np.sqrt(2.0)


def refine(body_a: Body, body_b: Body, n: np.ndarray, value: float | None = None) -> tuple[np.ndarray, float]:
    """Pattern search on the sphere from unit ``n``: (direction, overlap) at a local minimum of the overlap."""
    n = n / np.linalg.norm(n)
    if value is None:
        value = float(overlap(body_a, body_b, n[None])[0])
    step = REFINE_START_RAD
    while step > REFINE_STOP_RAD:
        u, v = _tangent_basis(n)
        trial = _unit_rows(n + np.tan(step) * (_PATTERN[:, :1] * u + _PATTERN[:, 1:] * v))
        values = overlap(body_a, body_b, trial)
        best = int(np.argmin(values))
        if values[best] < value:
            n, value = trial[best], float(values[best])
            step *= 1.5
        else:
            step *= 0.5
    return n, value


def search_mtd(body_a: Body, body_b: Body, extra=(), samples: int = SPHERE_SAMPLES) -> tuple[np.ndarray, float]:
    """(direction, depth): the MTD over candidates and a sphere sampling, each best one refined."""
    dirs = np.vstack([candidates(body_a, body_b, extra), fibonacci_sphere(samples)])
    values = overlap(body_a, body_b, dirs)
    order = np.argsort(values, kind="stable")      # ties in a fixed order (the compiled search's)
    best_n, best = dirs[order[0]], float(values[order[0]])
    seen = []
    for i in order[: 4 * _REFINE_SEEDS]:
        if len(seen) >= _REFINE_SEEDS:
            break
        if any(float(dirs[i] @ s) > 0.999 for s in seen):
            continue
        seen.append(dirs[i])
        n, value = refine(body_a, body_b, dirs[i], float(values[i]))
        if value < best:
            best_n, best = n, value
    return best_n, best


def witness(body_a: Body, body_b: Body, n: np.ndarray, depth: float) -> tuple[np.ndarray, np.ndarray]:
    """Witness points along MTD direction ``n``: body A's support point, and it moved by ``-depth * n``
    (on body B's supporting plane, ``p1 - p0 == -depth * n``)."""
    pa = body_a.support(n[None])[1][0]
    pb = body_b.support(-n[None])[1][0]
    # the two support sets touch after the push; report the midpoint of their tangential offset on A's plane
    tangential = (pb - pa) - ((pb - pa) @ n) * n
    p0 = pa + 0.5 * tangential
    return p0, p0 - depth * n


_SPHERE = fibonacci_sphere(SPHERE_SAMPLES)       # the compiled search's coarse directions


def checked_mtd(body_a: Body, body_b: Body, depth: float, normal: np.ndarray) -> tuple[bool, np.ndarray, float]:
    """Check coal's (depth, normal) of a penetrating pair: (ok, direction, depth).

    ``ok``: the overlap along ``normal`` equals ``depth`` and no candidate direction gives less
    (both within ``CHECK_ABS_M + CHECK_REL * depth``); then the direction and depth are coal's, polished
    to the exact local minimum of the overlap (``kernels.mtd.polish_checked``: support features, for vertex
    sets, boxes and cylinders). Otherwise the result of :func:`search_mtd` seeded with coal's normal as
    well, polished likewise. Compiled
    (:mod:`kernels.mtd`); :func:`checked_mtd_reference` is the same in numpy.
    """
    depth = float(depth)
    tol = CHECK_ABS_M + CHECK_REL * abs(depth)
    arguments = body_a.kernel_arguments() + body_b.kernel_arguments()
    n = np.asarray(normal, dtype=float)
    n0, n1, n2 = n.tolist()
    length = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    extra = _NO_EXTRA
    if length > 1e-12 and math.isfinite(depth):
        n = n / length
        if compiled.check_mtd(*arguments, n, float(depth), tol, LOCAL_CHECK_RAD):
            # polished to the exact local minimum where that passes the check too (kernels.mtd.polish_checked)
            return True, n, -float(compiled.polish_checked(*arguments, n, float(depth), CHECK_ABS_M, CHECK_REL,
                                                           LOCAL_CHECK_RAD))
        extra = n[None].copy()
    direction = np.empty(3)
    value = compiled.search_mtd(*arguments, extra, _SPHERE, _REFINE_SEEDS, REFINE_START_RAD, REFINE_STOP_RAD,
                                direction)
    value = -compiled.polish_checked(*arguments, direction, float(value), CHECK_ABS_M, CHECK_REL, LOCAL_CHECK_RAD)
    return False, direction, float(value)


def checked_mtd_reference(body_a: Body, body_b: Body, depth: float,
                          normal: np.ndarray) -> tuple[bool, np.ndarray, float]:
    """:func:`checked_mtd` in numpy (the reference of the compiled path)."""
    tol = CHECK_ABS_M + CHECK_REL * abs(depth)
    n = np.asarray(normal, dtype=float)
    length = float(np.linalg.norm(n))
    if length > 1e-12 and np.isfinite(depth):
        n = n / length
        u, v = _tangent_basis(n)
        near = _unit_rows(n + np.tan(LOCAL_CHECK_RAD) * (_PATTERN[:, :1] * u + _PATTERN[:, 1:] * v))
        dirs = np.vstack([n[None], near, candidates(body_a, body_b)])
        values = overlap(body_a, body_b, dirs)
        if abs(values[0] - depth) <= tol and float(values.min()) >= depth - tol:
            return True, n, float(depth)
        extra = (n,)
    else:
        extra = ()
    n, value = search_mtd(body_a, body_b, extra)
    return False, n, value


def _hull_arrays(geometry) -> tuple[np.ndarray, np.ndarray] | None:
    """(hull vertices, hull face normals) of a mesh that is convex within CONVEX_VOLUME_TOLERANCE, else None."""
    mesh = geometry.source_mesh
    if mesh is None or geometry.coal_hull is None or len(mesh.faces) > MAX_CONVEX_RULE_TRIANGLES:
        return None
    if geometry.solid_kind == KIND_CONVEX:
        hull = mesh
    elif geometry.solid_kind == KIND_MESH:
        try:
            hull = mesh.convex_hull
            volume, hull_volume = abs(float(mesh.volume)), float(hull.volume)
        except Exception:  # qhull refuses flat or degenerate point sets: not a convex solid
            return None
        if not (hull_volume > 0.0 and hull_volume - volume <= CONVEX_VOLUME_TOLERANCE * hull_volume):
            return None
    else:
        return None
    vertices = np.array(hull.vertices, dtype=np.float64, order="C")     # a writable copy (the kernels' signature)
    normals = np.asarray(hull.face_normals, dtype=float)
    normals = np.unique(np.round(normals, 9), axis=0)
    return vertices, np.ascontiguousarray(normals)


def convex_arrays(world, shape: int):
    """:func:`_hull_arrays` of ``world.shapes[shape]``, once per world snapshot."""
    return world.cached((_CONVEX_KEY, shape), _hull_arrays, world.shapes[shape].geometry)


def nearly_convex(world, shape: int) -> bool:
    """Whether the shape is a convex solid for contact numbers: a primitive, a convex mesh, or a closed
    mesh whose hull's volume is within CONVEX_VOLUME_TOLERANCE of its own."""
    kind = world.shapes[shape].geometry.solid_kind
    if KIND_BOX <= kind <= KIND_CONE:
        return True
    return convex_arrays(world, shape) is not None


def _body_parts(world, shape: int) -> tuple:
    """(kind, params, vertices, face normals) of the convex solid of a shape, as Body keeps them."""
    g = world.shapes[shape].geometry
    if KIND_BOX <= g.solid_kind <= KIND_CONE:
        return g.solid_kind, np.array(g.solid_params, dtype=float), None, None
    vertices, normals = convex_arrays(world, shape)
    return KIND_CONVEX, np.zeros(3), vertices, normals


def kernel_parts(world, shape: int) -> tuple:
    """(kind, params, vertices) of the convex solid of a shape as the compiled kernels (kernels.mtd) take
    them (a placeholder vertex array for a primitive), kept per world snapshot; call only when nearly_convex."""
    kind, params, vertices, _ = world.cached((_BODY_KEY, shape), _body_parts, world, shape)
    return kind, params, _NO_VERTICES if vertices is None else vertices


def face_normals(world, shape: int):
    """The face normals (F, 3) of a shape's convex solid as :class:`Body` keeps them (None for a
    primitive), kept per world snapshot; call only when nearly_convex."""
    return world.cached((_BODY_KEY, shape), _body_parts, world, shape)[3]


def body(world, T_world_shape: np.ndarray, shape: int) -> Body:
    """The posed convex solid of a shape (its hull for a nearly convex mesh); call only when nearly_convex."""
    kind, params, vertices, normals = world.cached((_BODY_KEY, shape), _body_parts, world, shape)
    return Body.posed(kind, params, T_world_shape[shape], vertices, normals)
