"""Shape specifications: what a URDF ``<collision>`` or a world object names (plain data).

Sizes are metres, in the shape's own frame. Each primitive carries its ``kind``, the
code of :mod:`my_collision_pkg.core.kernels.codes` that the geometry and the kernels use;
meshes get theirs (convex, closed or open) only when their triangles are known.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CYLINDER, KIND_SPHERE

# Largest length or coordinate accepted anywhere in a model or a scene (joint origins,
# shape sizes, mesh vertices, object positions), metres. Beyond it, distances and
# contact computations lose all precision (a 1e300 m box crashes the geometry code).
MAX_COORDINATE_M = 1.0e4

# Most triangles accepted in one mesh (a link's mesh file, an object's inline mesh). The
# robot meshes here have at most ~10k (example-robot-data's UR3 upper arm: 10,263; the
# Panda's collision meshes: a few hundred); building the geometry of a mesh costs about
# 30 s and 1.5 GB per million triangles on 2 cores, so a bigger one is refused by name.
MAX_MESH_TRIANGLES = 1_000_000


@dataclass(frozen=True)
class Box:
    """Box centred on its frame; ``size_m`` is the full extent (x, y, z)."""
    kind: ClassVar[int] = KIND_BOX
    size_m: tuple[float, float, float]


@dataclass(frozen=True)
class Sphere:
    kind: ClassVar[int] = KIND_SPHERE
    radius_m: float


@dataclass(frozen=True)
class Cylinder:
    """Cylinder centred on its frame, axis along z."""
    kind: ClassVar[int] = KIND_CYLINDER
    radius_m: float
    length_m: float


@dataclass(frozen=True)
class Capsule:
    """Capsule centred on its frame, axis along z; ``length_m`` excludes the caps."""
    kind: ClassVar[int] = KIND_CAPSULE
    radius_m: float
    length_m: float


@dataclass(frozen=True)
class Cone:
    """Cone centred on its frame, axis along z, apex at +length/2."""
    kind: ClassVar[int] = KIND_CONE
    radius_m: float
    length_m: float


@dataclass(frozen=True)
class MeshRef:
    """A mesh file named by URI or path, scaled per axis."""
    uri: str
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class TriangleMesh:
    """A mesh given inline (vertices (V, 3) metres, triangles (T, 3) indices)."""
    vertices_m: np.ndarray = field(compare=False)
    triangles: np.ndarray = field(compare=False)


@dataclass(frozen=True)
class OcTree:
    """An occupancy octree: every occupied cell a solid cube (the world object ``<octomap>``).

    ``occupancy`` is the map snapshot
    (:class:`~my_collision_pkg.core.perception.occupancy.OccupancyMap`; typed loosely here
    so that the model does not import perception). Cell centres are in the shape frame.
    """
    occupancy: object = field(compare=False)


ShapeSpec = Box | Sphere | Cylinder | Capsule | Cone | MeshRef | TriangleMesh | OcTree

PRIMITIVE_SPECS = (Box, Sphere, Cylinder, Capsule, Cone)


def is_primitive(spec: ShapeSpec) -> bool:
    """Whether ``spec`` is a primitive solid (it has a ``kind`` of its own)."""
    return isinstance(spec, PRIMITIVE_SPECS)
