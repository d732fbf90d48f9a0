"""Real robot models (example-robot-data) and a pinocchio + coal peer on the same shape pairs.

The peer is built from the same URDF by pinocchio's own parser (its own kinematics,
its own mesh loading through coal), then given exactly the shape pairs our scene
checks: each of our shapes is matched to the pinocchio geometry object of the same
link (parent frame) and the same ``<collision>`` index, and only those pairs are
added to the pinocchio ``GeometryModel``. No padding on either side.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import coal
import numpy as np
import pinocchio as pin
import pytest

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.model.example_robots import example_robot_data_share, panda_paths
from my_collision_pkg.core.model.transforms import make_transform
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.model.robot_model import Box, Capsule, Cone, Cylinder, Sphere
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject

RANDOM_SEED = 20_260_611          # fixed: the same Panda set in every run
N_RANDOM_CONFIGURATIONS = 2000
CONTINUOUS_RANGE_RAD = np.pi      # continuous joints are drawn in [-pi, pi]


PANDA_WORLD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "config", "panda_world.yaml")
# A 1 mm plate standing on the table, across the arc the fingertips sweep when joint 1 turns
# (issue 37): 0.01 rad sampling jumps over it, a certified check does not.
PLATE_RADIUS_M, PLATE_ANGLE_RAD, PLATE_TOP_Z_M, TABLE_TOP_Z_M = 0.792, 0.025, 0.245, 0.17


@pytest.fixture
def thin_plate_scene(panda_files) -> PlanningScene:
    """A new scene of the Panda with config/panda_world.yaml and the thin plate ``thin_plate``
    (0.06 x 0.001 m, table top to PLATE_TOP_Z_M) at PLATE_RADIUS_M from the base,
    PLATE_ANGLE_RAD around joint 1's axis."""
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    height = PLATE_TOP_Z_M - TABLE_TOP_Z_M
    c, s = np.cos(PLATE_ANGLE_RAD), np.sin(PLATE_ANGLE_RAD)
    T = np.eye(4)
    T[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    T[:3, 3] = (PLATE_RADIUS_M * c, PLATE_RADIUS_M * s, TABLE_TOP_Z_M + height / 2)
    scene.apply([AddObject(SceneObject("thin_plate", (ObjectShape(Box((0.06, 0.001, height))),), T))])
    return scene


# The bool motion check's harder scene (issue 37): every pair padded by this, a tool on the hand.
TOOL_SCENE_PADDING_M = 0.01


@pytest.fixture(scope="module")
def padded_tool_scene(panda_files) -> PlanningScene:
    """A new scene of the Panda with config/panda_world.yaml, TOOL_SCENE_PADDING_M padding and a
    0.04 x 0.04 x 0.12 m box ``tool`` attached to the hand (touching the hand and fingers)."""
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    scene.set_padding(default_padding_m=TOOL_SCENE_PADDING_M)
    tool = SceneObject("tool", (ObjectShape(Box((0.04, 0.04, 0.12))),), make_transform(None, (0.0, 0.0, 0.16)),
                       "panda_hand", ("panda_hand", "panda_leftfinger", "panda_rightfinger"))
    scene.apply([AddObject(tool)])
    return scene


def sample_configurations(lower: np.ndarray, upper: np.ndarray, n: int, seed: int) -> np.ndarray:
    """(n, A) configurations drawn uniformly within the limits (continuous joints in [-pi, pi])."""
    lo = np.where(np.isfinite(lower), lower, -CONTINUOUS_RANGE_RAD)
    hi = np.where(np.isfinite(upper), upper, CONTINUOUS_RANGE_RAD)
    return np.random.default_rng(seed).uniform(lo, hi, size=(n, len(lo)))


@dataclass
class CoalPeer:
    """pinocchio + coal on the pairs of one of our scenes.

    Attributes
    ----------
    geometry_index : (S,) int array
        For each of our shapes, the index of its pinocchio geometry object.
    pair_links : list of frozenset
        For each collision pair (same order as ``scene.world.pairs``), the two owners.
    """
    model: object
    data: object
    geometry_model: object
    geometry_data: object
    geometry_index: np.ndarray
    pair_links: list
    q_source: list          # per pinocchio joint: (idx_q, nq, index into our movable values or -1)

    def pin_configuration(self, robot, q: np.ndarray) -> np.ndarray:
        """pinocchio's q for our active positions (A,): mimic joints follow their leaders."""
        movable = robot.movable_values(np.asarray(q, dtype=float))
        q_pin = pin.neutral(self.model)
        for idx_q, nq, source in self.q_source:
            if source < 0:
                continue
            if nq == 1:
                q_pin[idx_q] = movable[source]
            else:                         # continuous joint: (cos, sin)
                q_pin[idx_q:idx_q + 2] = np.cos(movable[source]), np.sin(movable[source])
        return q_pin

    def update(self, robot, q: np.ndarray) -> None:
        """Pose every geometry object for configuration q (A,)."""
        pin.updateGeometryPlacements(self.model, self.data, self.geometry_model, self.geometry_data,
                                     self.pin_configuration(robot, q))

    def pair_collisions(self, robot, q: np.ndarray) -> np.ndarray:
        """(P,) bool: coal's verdict on every pair (``computeCollisions`` without early stop)."""
        pin.computeCollisions(self.model, self.data, self.geometry_model, self.geometry_data,
                              self.pin_configuration(robot, q), False)
        return np.array([r.isCollision() for r in self.geometry_data.collisionResults], dtype=bool)

    def in_collision(self, robot, q: np.ndarray) -> bool:
        """coal's verdict for the configuration (stops at the first colliding pair)."""
        return bool(pin.computeCollisions(self.model, self.data, self.geometry_model, self.geometry_data,
                                          self.pin_configuration(robot, q), True))

    def pair_distance(self, robot, q: np.ndarray, pair: int) -> float:
        """coal's distance (m) between the two shapes of one pair at configuration q."""
        self.update(robot, q)
        return float(pin.computeDistance(self.geometry_model, self.geometry_data, pair).min_distance)

    def colliding_link_pairs(self, colliding: np.ndarray) -> set:
        return {self.pair_links[k] for k in np.flatnonzero(colliding)}


def _coal_geometry(shape_geometry):
    """A coal geometry for one of our world-object shapes."""
    spec = shape_geometry.spec
    if isinstance(spec, Box):
        return coal.Box(*spec.size_m)
    if isinstance(spec, Sphere):
        return coal.Sphere(spec.radius_m)
    if isinstance(spec, Cylinder):
        return coal.Cylinder(spec.radius_m, spec.length_m)
    if isinstance(spec, Capsule):
        return coal.Capsule(spec.radius_m, spec.length_m)
    if isinstance(spec, Cone):
        return coal.Cone(spec.radius_m, spec.length_m)
    mesh = shape_geometry.triangle_mesh()
    bvh = coal.BVHModelOBBRSS()
    bvh.beginModel(len(mesh.faces), len(mesh.vertices))
    bvh.addVertices(np.asarray(mesh.vertices, dtype=float))
    bvh.addTriangles(np.asarray(mesh.faces, dtype=np.int64))
    bvh.endModel()
    return bvh


def build_coal_peer(scene: PlanningScene, urdf_path: str, package_dirs=()) -> CoalPeer:
    """pinocchio model and geometry of ``urdf_path`` restricted to the pairs of ``scene``.

    World objects of the scene are added as geometry objects fixed to the universe.
    Raises AssertionError when pinocchio's collision geometry cannot be matched to ours
    one to one (link, collision index).
    """
    dirs = list(package_dirs) + [example_robot_data_share()]
    model, geometry_model = pin.buildModelsFromUrdf(urdf_path, dirs, geometry_types=pin.GeometryType.COLLISION)
    by_link: dict[str, list[int]] = {}
    for k, obj in enumerate(geometry_model.geometryObjects):
        by_link.setdefault(model.frames[obj.parentFrame].name, []).append(k)
    world = scene.world
    index = []
    for shape in world.shapes:
        if shape.link_index >= 0:
            candidates = by_link.get(shape.owner, [])
            assert shape.shape_id < len(candidates), \
                f"pinocchio has {len(candidates)} collision objects on '{shape.owner}', we have shape {shape.shape_id}"
            k = candidates[shape.shape_id]
            assert geometry_model.geometryObjects[k].name == f"{shape.owner}_{shape.shape_id}", \
                f"pinocchio object {geometry_model.geometryObjects[k].name} is not {shape.owner} #{shape.shape_id}"
            index.append(k)
        else:                                     # world object: fixed to the universe
            T = shape.T_frame_shape
            obj = pin.GeometryObject(f"{shape.owner}_{shape.shape_id}", 0, 0, pin.SE3(T[:3, :3].copy(), T[:3, 3].copy()),
                                     _coal_geometry(shape.geometry))
            index.append(geometry_model.addGeometryObject(obj))
    n_robot = sum(1 for s in world.shapes if s.link_index >= 0)
    assert n_robot == sum(len(v) for v in by_link.values()), "pinocchio and we disagree on the number of robot shapes"
    pair_links = []
    for a, b in world.pairs:
        geometry_model.addCollisionPair(pin.CollisionPair(index[a], index[b]))
        pair_links.append(frozenset((world.shapes[a].owner, world.shapes[b].owner)))
    assert len(geometry_model.collisionPairs) == len(world.pairs)
    movable = {name: i for i, name in enumerate(scene.robot.movable_joint_names)}
    q_source = []
    for j in range(1, model.njoints):
        q_source.append((model.joints[j].idx_q, model.joints[j].nq, movable.get(model.names[j], -1)))
    data = model.createData()
    geometry_data = pin.GeometryData(geometry_model)
    for request in geometry_data.collisionRequests:
        assert request.security_margin == 0.0
    return CoalPeer(model, data, geometry_model, geometry_data, np.array(index), pair_links, q_source)


# ----- fixtures ------------------------------------------------------------------
@pytest.fixture(scope="module")
def panda_files() -> tuple[str, str]:
    return panda_paths()


@pytest.fixture(scope="module")
def panda_scene(panda_files) -> PlanningScene:
    urdf, srdf = panda_files
    return load_scene(urdf_path=urdf, srdf_path=srdf)


@pytest.fixture(scope="module")
def panda_checker(panda_scene) -> CollisionChecker:
    return CollisionChecker(panda_scene, check_joint_limits=True)


@pytest.fixture(scope="module")
def panda_peer(panda_scene, panda_files) -> CoalPeer:
    return build_coal_peer(panda_scene, panda_files[0])


@pytest.fixture(scope="session")
def random_configurations():
    """:func:`sample_configurations` (lower, upper, n, seed) -> (n, A) within the limits."""
    return sample_configurations


@pytest.fixture(scope="session")
def coal_peer_factory():
    """:func:`build_coal_peer`, for tests that build a peer for their own scene."""
    return build_coal_peer


@pytest.fixture(scope="module")
def panda_configurations(panda_scene) -> np.ndarray:
    """The fixed random Panda set: (2000, 8) configurations within the limits."""
    robot = panda_scene.robot
    return sample_configurations(robot.lower_limits, robot.upper_limits, N_RANDOM_CONFIGURATIONS, RANDOM_SEED)
