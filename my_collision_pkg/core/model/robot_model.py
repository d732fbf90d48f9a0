"""Robot kinematics and collision geometry read from URDF.

The planning frame is the URDF root link. Joint values are radians for
revolute and continuous joints, metres for prismatic ones. Only the *active*
joints (movable and not mimicking another) are free variables; mimic joints
follow ``value = multiplier * leader + offset``, chains of mimics included.
``floating`` and ``planar`` joints are held at their origin pose (as if fixed):
a planning scene for a mobile base places the robot root, it does not move it.
"""
from __future__ import annotations

import dataclasses
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import urdf_parser_py.urdf as urdf_parser
import urdf_parser_py.xml_reflection.core as xml_reflection_core

from my_collision_pkg.core.errors import ModelError
from my_collision_pkg.core.kernels.codes import JOINT_PRISMATIC, JOINT_REVOLUTE
from my_collision_pkg.core.kernels.kinematics import forward_kinematics
from my_collision_pkg.core.model.description_files import parse_file
from my_collision_pkg.core.model.shapes import (MAX_COORDINATE_M, Box, Capsule, Cone, Cylinder, MeshRef,  # noqa: F401
                                                Sphere, ShapeSpec, TriangleMesh)
from my_collision_pkg.core.model.transforms import make_transform, rpy_to_matrix

MOVABLE_TYPES = ("revolute", "continuous", "prismatic")
HELD_TYPES = ("fixed", "floating", "planar")
# URDF elements that urdf-parser-py 0.0.4 may refuse and that carry nothing we use
# (old-style transmissions, textures inside materials, simulator extensions).
IGNORED_URDF_ELEMENTS = ("transmission", "gazebo", "visual", "material")
DEFAULT_ROBOT_NAME = "robot"


@dataclass(frozen=True)
class CollisionElement:
    """One ``<collision>`` of a link; ``shape_id`` is its index within the link."""
    link: str
    shape_id: int
    T_link_shape: np.ndarray = field(compare=False)
    shape: ShapeSpec


@dataclass(frozen=True)
class Joint:
    """One URDF joint: ``T_parent_joint`` is the joint origin in the parent link frame,
    ``axis`` a unit vector in the joint frame (movable joints), limits in rad or m
    (-inf/inf when unlimited), and the leader, multiplier and offset of a mimic."""
    name: str
    type: str
    parent: str
    child: str
    T_parent_joint: np.ndarray = field(compare=False)
    axis: np.ndarray = field(compare=False)
    lower: float
    upper: float
    mimic_of: str | None = None
    mimic_multiplier: float = 1.0
    mimic_offset: float = 0.0


def _finite_numbers(values, what: str, bound: float | None = None) -> np.ndarray:
    """``values`` as a float array; a ModelError naming ``what`` for non-finite values or
    (with ``bound``) magnitudes beyond it."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} {values!r} is not a list of numbers") from exc
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} has non-finite values {[float(v) for v in np.ravel(arr)]}")
    if bound is not None and np.any(np.abs(arr) > bound):
        raise ModelError(f"{what} {[float(v) for v in np.ravel(arr)]} is beyond the bound of {bound:g} m")
    return arr


def _origin_transform(origin, what: str = "origin") -> np.ndarray:
    """Transform of a URDF ``<origin>``.

    Raises
    ------
    ModelError
        Naming ``what``, for non-finite values or a translation beyond MAX_COORDINATE_M.
    """
    if origin is None:
        return np.eye(4)
    xyz = origin.xyz if origin.xyz is not None else [0.0, 0.0, 0.0]
    rpy = origin.rpy if origin.rpy is not None else [0.0, 0.0, 0.0]
    xyz = _finite_numbers(xyz, f"{what} xyz", MAX_COORDINATE_M)
    rpy = _finite_numbers(rpy, f"{what} rpy")
    return make_transform(rpy_to_matrix(*rpy), xyz)


def robot_element(xml: str, what: str) -> ET.Element:
    """The ``<robot>`` root element of URDF or SRDF text (``what`` names which, for errors).

    Raises
    ------
    ModelError
        If the text is not well-formed XML or its root is not ``<robot>``.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ModelError(f"{what} is not well-formed XML: {exc}") from exc
    if root.tag != "robot":
        raise ModelError(f"{what} root element is <{root.tag}>, expected <robot>")
    return root


def _sanitize_urdf(xml: str) -> str:
    """Drop elements that carry nothing for collision checking, name a nameless robot."""
    root = robot_element(xml, "URDF")
    for parent in root.iter():
        for child in list(parent):
            if child.tag in IGNORED_URDF_ELEMENTS:
                parent.remove(child)
    if not root.get("name"):
        root.set("name", DEFAULT_ROBOT_NAME)
    return ET.tostring(root, encoding="unicode")


_PARSER_LOCK = threading.Lock()


def _parse_with_urdf_parser(xml: str):
    """Run urdf-parser-py, collecting its warnings instead of printing them."""
    warnings: list[str] = []
    with _PARSER_LOCK:
        previous = xml_reflection_core.on_error
        xml_reflection_core.on_error = warnings.append
        try:
            return urdf_parser.URDF.from_xml_string(xml)
        except Exception as exc:  # urdf-parser-py raises assorted types on bad input
            raise ModelError(f"URDF cannot be parsed: {exc}") from exc
        finally:
            xml_reflection_core.on_error = previous


def _shape_from_urdf(geometry, owner: str) -> ShapeSpec:
    if isinstance(geometry, urdf_parser.Box):
        return Box(tuple(float(v) for v in geometry.size))
    if isinstance(geometry, urdf_parser.Sphere):
        return Sphere(float(geometry.radius))
    if isinstance(geometry, urdf_parser.Cylinder):
        return Cylinder(float(geometry.radius), float(geometry.length))
    if isinstance(geometry, urdf_parser.Mesh):
        if not geometry.filename:
            raise ModelError(f"link '{owner}': <mesh> without a filename")
        scale = geometry.scale if geometry.scale is not None else (1.0, 1.0, 1.0)
        if isinstance(scale, (int, float)):
            scale = (scale, scale, scale)
        return MeshRef(geometry.filename, tuple(float(s) for s in scale))
    raise ModelError(f"link '{owner}': unsupported collision geometry {type(geometry).__name__}")


def _repeated(names) -> list[str]:
    """The names that occur more than once, sorted."""
    names = list(names)
    return sorted({n for n in names if names.count(n) > 1})


def _link_names(urdf_links) -> list[str]:
    """The link names in URDF order.

    Raises
    ------
    ModelError
        If there is no link or a name occurs twice.
    """
    names = [link.name for link in urdf_links]
    if not names:
        raise ModelError("URDF has no links")
    repeated = _repeated(names)
    if repeated:
        raise ModelError(f"URDF names link(s) {repeated} more than once")
    return names


def _joints_from_urdf(urdf_joints, link_names: list[str]) -> list[Joint]:
    """Every URDF joint as a :class:`Joint`, in URDF order.

    Raises
    ------
    ModelError
        If a joint names an unknown link, a link is the child of two joints, or a
        joint's type, axis, limits, mimic or origin is invalid.
    """
    known = set(link_names)
    joints, joint_of_child = [], {}
    for j in urdf_joints:
        if j.parent not in known or j.child not in known:
            missing = j.parent if j.parent not in known else j.child
            raise ModelError(f"joint '{j.name}' names unknown link '{missing}'")
        if j.child in joint_of_child:
            raise ModelError(f"link '{j.child}' is the child of both joints "
                             f"'{joint_of_child[j.child]}' and '{j.name}'")
        joint_of_child[j.child] = j.name
        joints.append(_joint_from_urdf(j))
    return joints


def _joint_from_urdf(j) -> Joint:
    """One URDF joint: type, unit axis (movable joints), limits, mimic and origin, checked."""
    if j.type not in MOVABLE_TYPES + HELD_TYPES:
        raise ModelError(f"joint '{j.name}' has unsupported type '{j.type}'")
    axis = _finite_numbers(j.axis if j.axis is not None else [1.0, 0.0, 0.0], f"joint '{j.name}' axis")
    if j.type in MOVABLE_TYPES:
        norm = np.linalg.norm(axis)
        if not np.isfinite(norm) or norm < 1e-12:
            raise ModelError(f"joint '{j.name}' has a zero axis")
        axis = axis / norm
    lower, upper = _joint_limits(j)
    mimic_of, multiplier, offset = _joint_mimic(j)
    T_parent_joint = _origin_transform(j.origin, f"joint '{j.name}' origin")
    return Joint(j.name, j.type, j.parent, j.child, T_parent_joint, axis, lower, upper, mimic_of, multiplier, offset)


def _joint_limits(j) -> tuple[float, float]:
    """(lower, upper) of a revolute or prismatic joint with a ``<limit>``, else (-inf, inf)."""
    if j.type not in ("revolute", "prismatic") or j.limit is None:
        return -np.inf, np.inf
    lower = float(j.limit.lower) if j.limit.lower is not None else 0.0
    upper = float(j.limit.upper) if j.limit.upper is not None else 0.0
    _finite_numbers([lower, upper], f"joint '{j.name}' limits")
    if lower > upper:
        raise ModelError(f"joint '{j.name}' has lower limit {lower} above upper {upper}")
    return lower, upper


def _joint_mimic(j) -> tuple[str | None, float, float]:
    """(leader, multiplier, offset) of a movable joint's ``<mimic>``, else (None, 1, 0)."""
    if j.mimic is None or j.type not in MOVABLE_TYPES:
        return None, 1.0, 0.0
    multiplier = float(j.mimic.multiplier) if j.mimic.multiplier is not None else 1.0
    offset = float(j.mimic.offset) if j.mimic.offset is not None else 0.0
    _finite_numbers([multiplier, offset], f"joint '{j.name}' mimic multiplier and offset")
    return j.mimic.joint, multiplier, offset


def _release_orphan_mimics(joints: list[Joint]) -> tuple[list[Joint], tuple[str, ...]]:
    """Joints in which a mimic of an unknown or fixed joint moves on its own (as in MoveIt),
    and a warning for each such mimic."""
    warnings = []
    movable_names = {j.name for j in joints if j.type in MOVABLE_TYPES}
    released = []
    for j in joints:
        if j.mimic_of is not None and j.mimic_of not in movable_names:
            warnings.append(f"mimic joint '{j.name}' follows unknown or fixed joint '{j.mimic_of}'; "
                            "it is treated as an independent joint")
            j = dataclasses.replace(j, mimic_of=None, mimic_multiplier=1.0, mimic_offset=0.0)
        released.append(j)
    return released, tuple(warnings)


def _single_root(link_names: list[str], joints: list[Joint]) -> str:
    """The one link that is no joint's child.

    Raises
    ------
    ModelError
        If there are none or several.
    """
    children = {j.child for j in joints}
    roots = [n for n in link_names if n not in children]
    if len(roots) != 1:
        raise ModelError(f"URDF must have exactly one root link, found {roots}")
    return roots[0]


def _breadth_first(root: str, link_names: list[str], joints: list[Joint]) -> tuple[list[str], list[Joint]]:
    """Links and joints in breadth-first order from the root, so parents precede children.

    Raises
    ------
    ModelError
        If some links cannot be reached from the root.
    """
    by_parent: dict[str, list[Joint]] = {}
    for j in joints:
        by_parent.setdefault(j.parent, []).append(j)
    order, ordered_joints, frontier = [root], [], [root]
    while frontier:
        below = []
        for link in frontier:
            for j in by_parent.get(link, []):
                order.append(j.child)
                ordered_joints.append(j)
                below.append(j.child)
        frontier = below
    if len(order) != len(link_names):
        unreached = sorted(set(link_names) - set(order))
        raise ModelError(f"links {unreached} are not connected to the root '{root}'")
    return order, ordered_joints


def _collision_elements(urdf_links) -> list[CollisionElement]:
    """Every ``<collision>`` of every link, in URDF order.

    Raises
    ------
    ModelError
        For a collision without geometry, an invalid origin or an unsupported shape.
    """
    elements = []
    for link in urdf_links:
        for shape_id, col in enumerate(link.collisions or []):
            if col.geometry is None:
                raise ModelError(f"link '{link.name}': <collision> {shape_id} has no geometry")
            where = f"link '{link.name}' <collision> {shape_id} origin"
            elements.append(CollisionElement(link.name, shape_id, _origin_transform(col.origin, where),
                                             _shape_from_urdf(col.geometry, link.name)))
    return elements


class RobotModel:
    """Kinematic tree, joint limits and collision elements of one robot.

    Build it with :meth:`from_urdf_string` or :meth:`from_urdf_file`.
    """

    def __init__(self, name: str, root_link: str, link_names: list[str], joints: list[Joint],
                 collision_elements: list[CollisionElement], warnings: tuple[str, ...] = ()) -> None:
        self._name = name
        self._warnings = tuple(warnings)
        self._root_link = root_link
        self._link_names = tuple(link_names)
        self._link_index = {n: i for i, n in enumerate(self._link_names)}
        self._joints = tuple(joints)
        self._joint_by_name = {j.name: j for j in joints}
        self._joint_by_child = {j.child: j for j in joints}
        self._collision_elements = tuple(collision_elements)
        self._compile()

    # ----- construction -------------------------------------------------
    @classmethod
    def from_urdf_file(cls, path: str) -> "RobotModel":
        """Read a URDF file.

        Raises
        ------
        ModelError
            If the file cannot be read or the URDF is malformed.
        """
        return parse_file(path, "URDF", cls.from_urdf_string)

    @classmethod
    def from_urdf_string(cls, xml: str) -> "RobotModel":
        """Parse URDF XML.

        Raises
        ------
        ModelError
            If the XML is malformed, a joint names an unknown link, a link has two
            parents, the tree has no single root, or a mimic joint names an unknown
            or cyclic leader.
        """
        if not xml or not xml.strip():
            raise ModelError("URDF is empty")
        robot = _parse_with_urdf_parser(_sanitize_urdf(xml))
        link_names = _link_names(robot.links)
        joints, warnings = _release_orphan_mimics(_joints_from_urdf(robot.joints, link_names))
        root = _single_root(link_names, joints)
        repeated = _repeated(j.name for j in joints)
        if repeated:
            raise ModelError(f"URDF names joint(s) {repeated} more than once")
        order, ordered_joints = _breadth_first(root, link_names, joints)
        elements = _collision_elements(robot.links)
        return cls(robot.name or DEFAULT_ROBOT_NAME, root, order, ordered_joints, elements, warnings)

    def _compile(self) -> None:
        """Precompute the arrays forward kinematics runs on."""
        self._movable = [j for j in self._joints if j.type in MOVABLE_TYPES]
        self._active = [j for j in self._movable if j.mimic_of is None]
        active_index = {j.name: i for i, j in enumerate(self._active)}
        # Resolve every movable joint to (active index, multiplier, offset).
        resolved: dict[str, tuple[int, float, float]] = {}

        def resolve(joint: Joint, seen: tuple[str, ...]) -> tuple[int, float, float]:
            if joint.name in resolved:
                return resolved[joint.name]
            if joint.mimic_of is None:
                result = (active_index[joint.name], 1.0, 0.0)
            else:
                leader = self._joint_by_name.get(joint.mimic_of)
                if leader is None or leader.type not in MOVABLE_TYPES:
                    raise ModelError(f"mimic joint '{joint.name}' follows unknown or fixed joint "
                                     f"'{joint.mimic_of}'")
                if leader.name in seen:
                    raise ModelError(f"mimic joints form a cycle through '{joint.name}'")
                idx, m, o = resolve(leader, seen + (joint.name,))
                result = (idx, joint.mimic_multiplier * m, joint.mimic_multiplier * o + joint.mimic_offset)
            resolved[joint.name] = result
            return result

        n_mov, n_act = len(self._movable), len(self._active)
        self._mimic_matrix = np.zeros((n_mov, n_act))
        self._mimic_offset = np.zeros(n_mov)
        for k, j in enumerate(self._movable):
            idx, m, o = resolve(j, ())
            self._mimic_matrix[k, idx] = m
            self._mimic_offset[k] = o
        self._lower = np.array([j.lower for j in self._active])
        self._upper = np.array([j.upper for j in self._active])
        self._active_names = tuple(j.name for j in self._active)
        self._active_index = active_index
        self._movable_names = tuple(j.name for j in self._movable)

        # Per link (topological order): parent index, fixed origin, moving joint.
        movable_pos = {j.name: k for k, j in enumerate(self._movable)}
        n_links = len(self._link_names)
        link_parent = np.full(n_links, -1, dtype=np.int64)
        T_parent_origin = np.broadcast_to(np.eye(4), (n_links, 4, 4)).copy()
        link_joint = np.full(n_links, -1, dtype=np.int64)
        for k, child in enumerate(self._link_names[1:], start=1):
            joint = self._joint_by_child[child]
            link_parent[k] = self._link_index[joint.parent]
            T_parent_origin[k] = joint.T_parent_joint
            link_joint[k] = movable_pos.get(joint.name, -1)
        joint_kind = np.array([JOINT_PRISMATIC if j.type == "prismatic" else JOINT_REVOLUTE for j in self._movable],
                              dtype=np.int64)
        joint_axis = np.array([j.axis for j in self._movable], dtype=float).reshape(-1, 3)
        self._fk_arrays = (np.ascontiguousarray(self._mimic_matrix), self._mimic_offset, joint_kind,
                           joint_axis, link_parent, T_parent_origin, link_joint)
        self._link_parent_of = {c: self._joint_by_child[c].parent for c in self._link_names[1:]}

    # ----- read-only properties ----------------------------------------
    @property
    def warnings(self) -> tuple[str, ...]:
        """What was tolerated while reading the URDF (e.g. a mimic of an unknown joint)."""
        return self._warnings

    @property
    def name(self) -> str:
        return self._name

    @property
    def root_link(self) -> str:
        """The planning frame."""
        return self._root_link

    @property
    def link_names(self) -> tuple[str, ...]:
        """Every link, parents before children (index order of :meth:`link_transforms`)."""
        return self._link_names

    @property
    def joints(self) -> tuple[Joint, ...]:
        return self._joints

    @property
    def active_joint_names(self) -> tuple[str, ...]:
        """The free variables, in the order configurations are stored."""
        return self._active_names

    @property
    def movable_joint_names(self) -> tuple[str, ...]:
        """Every movable joint, mimics included (order of :meth:`movable_values`)."""
        return self._movable_names

    @property
    def lower_limits(self) -> np.ndarray:
        """(A,) lower limits of the active joints (-inf for continuous)."""
        return self._lower.copy()

    @property
    def upper_limits(self) -> np.ndarray:
        return self._upper.copy()

    @property
    def collision_elements(self) -> tuple[CollisionElement, ...]:
        return self._collision_elements

    def link_index(self, link: str) -> int:
        """Index of a link in :attr:`link_names`.

        Raises
        ------
        KeyError
            If the robot has no such link.
        """
        return self._link_index[link]

    def has_link(self, link: str) -> bool:
        return link in self._link_index

    def joint(self, name: str) -> Joint:
        return self._joint_by_name[name]

    def has_joint(self, name: str) -> bool:
        return name in self._joint_by_name

    def active_index(self, joint_name: str) -> int | None:
        """Index of an active joint among the variables, None for other joints."""
        return self._active_index.get(joint_name)

    def parent_link(self, link: str) -> str | None:
        return self._link_parent_of.get(link)

    def subtree_links(self, link: str) -> list[str]:
        """The link and every link below it."""
        out, stack = [], [link]
        while stack:
            cur = stack.pop()
            out.append(cur)
            stack.extend(j.child for j in self._joints if j.parent == cur)
        return out

    def default_positions(self) -> np.ndarray:
        """(A,) zeros clamped into the joint limits."""
        return np.clip(np.zeros(len(self._active)), self._lower, self._upper)

    def movable_values(self, positions: np.ndarray) -> np.ndarray:
        """Values (..., M) of every movable joint (mimics applied) from active positions (..., A)."""
        return positions @ self._mimic_matrix.T + self._mimic_offset

    def out_of_bounds(self, positions: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
        """Indices of active joints outside their limits (positions (A,))."""
        return np.flatnonzero((positions < self._lower - tolerance) | (positions > self._upper + tolerance))

    # ----- kinematics ---------------------------------------------------
    def link_transforms_batch(self, positions: np.ndarray) -> np.ndarray:
        """Poses of every link in the planning frame.

        Parameters
        ----------
        positions : (N, A) array
            Active joint positions (rad or m), one configuration per row.

        Returns
        -------
        T_world_link : (N, L, 4, 4) array, links in :attr:`link_names` order.
        """
        positions = np.ascontiguousarray(np.atleast_2d(positions), dtype=float)
        out = np.empty((positions.shape[0], len(self._link_names), 4, 4))
        forward_kinematics(positions, *self._fk_arrays, out)
        return out

    def link_transforms(self, positions: np.ndarray) -> np.ndarray:
        """Poses (L, 4, 4) of every link in the planning frame for one configuration (A,)."""
        return self.link_transforms_batch(np.asarray(positions, dtype=float)[None, :])[0]

    # ----- arrays for compiled kernels ----------------------------------
    @property
    def kinematics_arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays :func:`~my_collision_pkg.core.kernels.kinematics.forward_kinematics` runs on, after the positions.

        (mimic_matrix (M, A), mimic_offset (M,), joint_kind (M,), joint_axis (M, 3) in the
        joint's child frame, link_parent (L,), T_parent_origin (L, 4, 4), link_joint (L,)),
        with M movable joints (mimics included), A active joints and L links. Shared, not
        copies: do not write to them."""
        return self._fk_arrays

    @property
    def limit_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) limits (A,) of the active joints, shared, not copies: do not write to them."""
        return self._lower, self._upper
