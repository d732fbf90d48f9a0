"""Contacts from the narrow phase's answers for one posed configuration.

:class:`ContactBuilder` turns fcl contacts, the checker's signed distances
(:class:`narrowphase.PairDistance`), witness point pairs and the solid-body test's
containments into :class:`results.Contact` objects: body 0 then body 1, the normal from
body 0 to body 1, the witness points in the planning frame and in each body's own frame
(link frame for a link, object frame for an object), the owners' frames. Explain and the
motion checks both build their contacts here.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from my_collision_pkg.core.checks.narrowphase import PairDistance
from my_collision_pkg.core.checks.results import BodyType, Contact, ContactType, NO_SUBSHAPE
from my_collision_pkg.core.kernels.codes import KIND_CONVEX, KIND_SPHERE
from my_collision_pkg.core.kernels.contact_points import contact_points
from my_collision_pkg.core.kernels.mesh_queries import closest_point_on_triangles
from my_collision_pkg.core.model.transforms import invert_transform, transform_points
from my_collision_pkg.core.scene.planning_scene import CollisionWorld

# make() fills a Contact's fields directly (a frozen dataclass's __init__ sets each field through
# object.__setattr__: ~4 us of a contact's ~8); the fields with defaults start from them
_new_object = object.__new__
_CONTACT_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Contact) if f.default is not dataclasses.MISSING}
_INFO_KEY = "contact_builder: shape info"     # CollisionWorld.cached key, with the shape index
_PAIR_INFO_KEY = "contact_builder: pair info"  # CollisionWorld.cached key: a dict by (shape a, shape b)
_NO_SUBSHAPES = (NO_SUBSHAPE, NO_SUBSHAPE)


def _shape_info(world: CollisionWorld, shape: int) -> tuple:
    entry = world.shapes[shape]
    return (entry.owner, BodyType(entry.body_type), entry.shape_id, bool(entry.geometry.is_bvh), bool(entry.on_robot),
            int(entry.link_index))


class ContactBuilder:
    """Turns narrow-phase results for one posed configuration into :class:`Contact` objects.

    Parameters
    ----------
    world : CollisionWorld
    T_world_link : (L, 4, 4) link poses in the planning frame at the configuration.
    T_world_shape : (S, 4, 4) shape poses in the planning frame at the configuration.
    """

    def __init__(self, world: CollisionWorld, T_world_link: np.ndarray, T_world_shape: np.ndarray) -> None:
        self.world = world
        self.T_world_link = T_world_link
        self.T_world_shape = T_world_shape
        self._frames: dict[int, tuple] = {}     # shape -> (owner frame in world, world in owner frame)
        self._link_from_world: np.ndarray | None = None
        self._local: dict[int, tuple] = {}      # shape -> (rotation^T, translation) of world in owner frame
        self._shape_info: dict[int, tuple] = {}  # shape -> what a contact records of it

    def _info(self, shape: int) -> tuple:
        """(owner, body type, shape id, is a BVH, on the robot, link index) of a shape."""
        info = self._shape_info.get(shape)
        if info is None:
            info = self._shape_info[shape] = self.world.cached((_INFO_KEY, shape), _shape_info, self.world, shape)
        return info

    def _to_owner(self, shape: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(owner frame in world, R^T, t) with ``p @ R^T + t`` a world point in the owner frame
        (the very operations of ``transform_points`` with the inverse frame)."""
        local = self._local.get(shape)
        if local is None:
            entry = self.world.shapes[shape]
            if entry.body_type == BodyType.ROBOT_LINK and self._link_from_world is None:
                # a link's frame alone (not every link's inverse): R^T of the inverse is R itself, its
                # translation -R^T t (the same sum as the inverse's)
                T_world_owner = self.T_world_link[entry.link_index]
                R = T_world_owner[:3, :3]
                local = (T_world_owner, np.ascontiguousarray(R), -(T_world_owner[:3, 3] @ R))
            else:
                T_world_owner, owner_from_world = self._owner_frames(shape)
                # C-ordered copies (the contact_points kernel's one signature); the same numbers
                local = (T_world_owner, np.ascontiguousarray(owner_from_world[:3, :3].T),
                         np.ascontiguousarray(owner_from_world[:3, 3]))
            self._local[shape] = local
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

        ``single``: :func:`single_contact_point` of the pair, when the caller knows it already."""
        if single is None:
            single = single_contact_point(self.world.shapes[a].geometry, self.world.shapes[b].geometry)
        return self.make(a, b, np.asarray(result.p0_world, dtype=float), np.asarray(result.normal_world, dtype=float),
                         float(result.distance_m), *result.subshapes, single=single, fallback=not result.exact,
                         rule=result.rule)

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
        return self.make(a, b, p0, normal, -depth, *subshape, rule="deepest_point")

    def make(self, a, b, p0, normal, distance, b1, b2, *, single: bool = False, fallback: bool = False,
             rule: str = "mtd") -> Contact:
        """A contact from the point on body 0, the normal and the signed distance.

        The point on body 1 is ``p0 + distance * normal``, so the documented
        invariant holds exactly.
        """
        owner_a, type_a, id_a, bvh_a, robot_a, _ = self._info(a)
        owner_b, type_b, id_b, bvh_b, robot_b, _ = self._info(b)
        distance = float(distance)
        kind = ContactType.SELF if (robot_a and robot_b) else ContactType.ENVIRONMENT
        sub0 = int(b1) if bvh_a and b1 is not None and b1 >= 0 else NO_SUBSHAPE
        sub1 = int(b2) if bvh_b and b2 is not None and b2 >= 0 else NO_SUBSHAPE
        T_world_a, R_a, t_a = self._to_owner(a)
        T_world_b, R_b, t_b = self._to_owner(b)
        p0 = _vector(p0)
        normal = _vector(normal)
        points = np.empty((4, 3))       # p1, the midpoint, p0 and p1 in their owners' frames
        contact_points(p0, normal, distance, R_a, t_a, R_b, t_b, points)
        contact = _new_object(Contact)      # Contact(...) without its frozen fields' one setattr each
        values = contact.__dict__
        values.update(_CONTACT_DEFAULTS)
        values.update(type=kind, link_names=(owner_a, owner_b), body_types=(type_a, type_b), shape_ids=(id_a, id_b),
                      subshape_ids=(sub0, sub1), position=points[1], nearest_points=(p0, points[0]),
                      nearest_points_local=(points[2], points[3]), normal=normal, distance=distance,
                      penetration_depth=max(0.0, -distance), single_contact_point=single, depth_is_fallback=fallback,
                      transforms=(T_world_a.copy(), T_world_b.copy()), depth_rule=rule)
        return contact

    def hull_contacts(self, a: list[int], b: list[int], p0: list[np.ndarray], rows: np.ndarray, distance: list[float],
                      single: list[bool]) -> list[Contact]:
        """:meth:`make` of penetrating pairs of two robot links' shapes with no sub-shapes (rule "mtd"), their
        numbers already computed (``kernels.explain_batch.hull_contact_rows``): per pair k, shapes ``a[k]``,
        ``b[k]``, ``p0[k]`` (3,) the point on body 0, ``rows[k]`` (6, 3) the unit normal, (unused), p1, the
        midpoint, p0 and p1 in their links' frames, all as :meth:`make` computes them, ``distance[k]`` metres
        (negative) and ``single[k]``. Each contact's arrays are its own (views of arrays made for these
        contacts, none shared by two contacts)."""
        world = self.world
        pair_info = world.cached(_PAIR_INFO_KEY, dict)
        infos = []
        for sa, sb in zip(a, b):
            info = pair_info.get((sa, sb))
            if info is None:
                info = pair_info[(sa, sb)] = _pair_info(self._info(sa), self._info(sb))
            infos.append(info)
        links = [link for info in infos for link in info[4]]
        frames = list(self.T_world_link[links])       # one copy of the links' frames, a (4, 4) view per body
        vectors = list(rows.reshape(-1, 3))            # one view per row
        contacts = []
        for k, (info, p0_k, d, one) in enumerate(zip(infos, p0, distance, single)):
            kind, link_names, body_types, shape_ids, _ = info
            r = 6 * k
            contact = _new_object(Contact)
            values = contact.__dict__
            values.update(_CONTACT_DEFAULTS)
            d = float(d)
            values.update(type=kind, link_names=link_names, body_types=body_types, shape_ids=shape_ids,
                          subshape_ids=_NO_SUBSHAPES, position=vectors[r + 3], nearest_points=(p0_k, vectors[r + 2]),
                          nearest_points_local=(vectors[r + 4], vectors[r + 5]), normal=vectors[r],
                          distance=d, penetration_depth=max(0.0, -d), single_contact_point=one,
                          transforms=(frames[2 * k], frames[2 * k + 1]))
            contacts.append(contact)
        return contacts


def _pair_info(info_a: tuple, info_b: tuple) -> tuple:
    """What a hull contact records of its two shapes (:meth:`ContactBuilder._info` of each): (contact type, link
    names, body types, shape ids, the owners' link indices)."""
    owner_a, type_a, id_a, _, robot_a, link_a = info_a
    owner_b, type_b, id_b, _, robot_b, link_b = info_b
    return (ContactType.SELF if (robot_a and robot_b) else ContactType.ENVIRONMENT, (owner_a, owner_b),
            (type_a, type_b), (id_a, id_b), (link_a, link_b))


def _vector(v) -> np.ndarray:
    """A (3,) point or direction as the contact_points kernel takes it: float64, contiguous, writable (a copy
    only if not)."""
    if isinstance(v, np.ndarray) and v.dtype == np.float64 and v.ndim == 1 and v.flags.c_contiguous \
            and v.flags.writeable:
        return v
    return np.array(v, dtype=np.float64).reshape(3)


def single_contact_point(ga, gb) -> bool:
    """Whether a pair can only ever touch at one point (Contact.single_contact_point).

    Rule: a sphere against a convex solid (a primitive or a convex mesh). Such bodies
    touch at exactly one point, and their overlap is one convex region whose contact
    is the single one reported. Every other pair may touch along a line or a patch, or
    (with a non-convex mesh) in several places.
    """
    convex = ga.solid_kind <= KIND_CONVEX and gb.solid_kind <= KIND_CONVEX and ga.solid_kind >= 0 \
        and gb.solid_kind >= 0
    return bool(convex and KIND_SPHERE in (ga.solid_kind, gb.solid_kind))
