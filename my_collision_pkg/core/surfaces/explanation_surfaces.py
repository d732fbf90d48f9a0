"""Contact surfaces for the penetrating pairs of an explanation.

For every pair of shapes that penetrate, the surface (the footprint of their overlap, see
``surfaces.contact_surface``) is drawn on the plane through the midpoint of the deepest
contact's witness points, perpendicular to its normal. Primitive pairs with a closed form
(``surfaces.primitive_surfaces``) get the analytic surface; other pairs the surface of their
triangle meshes, whose preparation (``convex_overlap.prepare_solid``) is kept per mesh.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from my_collision_pkg.core.checks import octomap_cells
from my_collision_pkg.core.checks.results import BodyType, Explanation
from my_collision_pkg.core.scene.objects import OCTOMAP_ID
from my_collision_pkg.core.scene.planning_scene import CollisionWorld
from my_collision_pkg.core.surfaces.contact_surface import (ContactSurfaceError, SurfacePatch, contact_surface_of_solids,
                                                            prepared_solid)
from my_collision_pkg.core.surfaces.convex_overlap import PreparedSolid
from my_collision_pkg.core.surfaces.primitive_surfaces import primitive_contact_surface

# Pressure per metre of overlap. 1e6 Pa/m: a 1 mm overlap gives 1 kPa, the order
# of a soft rubber pad; only the colours and the force arrows scale with it.
DEFAULT_STIFFNESS_PA_PER_M = 1.0e6

# Prepared solids of the shapes' meshes (shape frame), by the id of the mesh object; an entry
# leaves when its mesh is collected. A mesh that bounds no volume is kept as None.
_PREPARED_BY_MESH_ID: dict[int, PreparedSolid | None] = {}


@dataclass(frozen=True)
class ContactSurface:
    """A contact surface between two shapes, named like the contacts."""
    body_names: tuple[str, str]
    shape_ids: tuple[int, int]
    body_types: tuple[BodyType, BodyType]
    patch: SurfacePatch


def _shape_index(world: CollisionWorld, owner: str, shape_id: int) -> int:
    for k, entry in enumerate(world.shapes):
        if entry.owner == owner and entry.shape_id == shape_id:
            return k
    raise KeyError(f"no shape {shape_id} of '{owner}' in the scene")


def explanation_surfaces(world: CollisionWorld, explanation: Explanation,
                         stiffness_pa_per_m: float = DEFAULT_STIFFNESS_PA_PER_M) -> tuple[ContactSurface, ...]:
    """One surface per penetrating pair of shapes of ``explanation`` (deepest contact's plane).

    When that plane misses the overlap (the witness points of a contact with a
    mesh are those of one triangle), the plane halfway through the overlap along
    the normal is used. Pairs with an open mesh (no volume) get no surface.

    ``world`` must be the snapshot the explanation was computed on (the scene's
    current world when called right after explain).
    """
    deepest = {}
    for contact in explanation.contacts:
        if contact.distance >= 0:
            continue
        key = (contact.link_names, contact.shape_ids)
        if key not in deepest or contact.distance < deepest[key].distance:
            deepest[key] = contact
    if not deepest:
        return ()
    if octomap_cells.has_octree(world):          # the octomap's cells named by the contacts, as boxes
        cells = {c.shape_ids[c.link_names.index(OCTOMAP_ID)] for c in deepest.values() if OCTOMAP_ID in c.link_names}
        world = octomap_cells.with_cells(world, np.array(sorted(cells), dtype=np.int64), len(cells))
    T_world_shape = world.shape_transforms(world.robot.link_transforms(explanation.positions))
    surfaces = []
    for (names, shape_ids), contact in deepest.items():
        indices = [_shape_index(world, owner, shape_id) for owner, shape_id in zip(names, shape_ids)]
        entries = [world.shapes[k] for k in indices]
        poses = [T_world_shape[k] for k in indices]
        midpoint = 0.5 * (np.asarray(contact.nearest_points[0]) + np.asarray(contact.nearest_points[1]))
        normal = np.asarray(contact.normal, dtype=float)
        normal = normal / np.linalg.norm(normal)
        patch = primitive_contact_surface(entries[0].geometry.spec, poses[0], entries[1].geometry.spec, poses[1],
                                          midpoint, normal, stiffness_pa_per_m, plane_into_overlap=True)
        if patch is None:
            solids = [_prepared(entry.geometry) for entry in entries]
            if solids[0] is None or solids[1] is None:
                continue                         # an open mesh bounds no volume: contacts but no surface
            patch = contact_surface_of_solids(solids[0].transformed(poses[0]), solids[1].transformed(poses[1]),
                                              midpoint, normal, stiffness_pa_per_m, plane_into_overlap=True,
                                              known_to_overlap=True, subtract_pockets=True)
        if patch is not None:
            surfaces.append(ContactSurface(names, shape_ids, contact.body_types, patch))
    return tuple(surfaces)


def _prepared(geometry) -> PreparedSolid | None:
    """The prepared solid of a shape's mesh in its own frame (None if it bounds no volume), kept."""
    mesh = geometry.triangle_mesh()
    key = id(mesh)
    if key in _PREPARED_BY_MESH_ID:
        return _PREPARED_BY_MESH_ID[key]
    try:
        solid = prepared_solid(mesh, "shape mesh")
    except ContactSurfaceError:
        solid = None
    _PREPARED_BY_MESH_ID[key] = solid
    weakref.finalize(mesh, _PREPARED_BY_MESH_ID.pop, key, None)
    return solid
