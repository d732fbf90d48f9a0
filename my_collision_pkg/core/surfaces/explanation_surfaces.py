"""Contact surfaces for the penetrating pairs of an explanation.

For every pair of shapes that penetrate, the surface is computed (see
``surfaces.compute_contact_surface``) on the plane through the midpoint of the
deepest contact's witness points, perpendicular to its normal.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from my_collision_pkg.core.checks import octomap_cells
from my_collision_pkg.core.checks.results import BodyType, Explanation
from my_collision_pkg.core.scene.objects import OCTOMAP_ID
from my_collision_pkg.core.scene.planning_scene import CollisionWorld
from my_collision_pkg.core.surfaces.contact_surface import ContactSurfaceError, SurfacePatch, compute_contact_surface, overlap_extent_along

# Pressure per metre of overlap. 1e6 Pa/m: a 1 mm overlap gives 1 kPa, the order
# of a soft rubber pad; only the colours and the force arrows scale with it.
DEFAULT_STIFFNESS_PA_PER_M = 1.0e6


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
        meshes = []
        for owner, shape_id in zip(names, shape_ids):
            k = _shape_index(world, owner, shape_id)
            meshes.append(world.shapes[k].geometry.triangle_mesh().copy().apply_transform(T_world_shape[k]))
        midpoint = 0.5 * (contact.nearest_points[0] + contact.nearest_points[1])
        normal = np.asarray(contact.normal)
        try:
            patch = compute_contact_surface(meshes[0], meshes[1], midpoint, normal, stiffness_pa_per_m)
            if patch is None:
                # Witness points of a mesh contact are those of one triangle: their plane can
                # miss the overlap. Then cut it halfway through the overlap along the normal.
                extent = overlap_extent_along(meshes[0], meshes[1], normal)
                if extent is not None:
                    middle = midpoint + (0.5 * (extent[0] + extent[1]) - midpoint @ normal) * normal
                    patch = compute_contact_surface(meshes[0], meshes[1], middle, normal, stiffness_pa_per_m)
        except ContactSurfaceError:
            # an open mesh bounds no volume: that pair has contacts but no surface
            continue
        if patch is not None:
            surfaces.append(ContactSurface(names, shape_ids, contact.body_types, patch))
    return tuple(surfaces)
