"""The MoveIt bridge's converters, fed stand-ins of moveit_msgs' messages (no DDS, no moveit_msgs).

The stand-ins below are plain dataclasses with the fields of moveit_msgs (``ros2`` branch,
2.6.0) for the types that package defines; the types it borrows (geometry_msgs, sensor_msgs,
shape_msgs, std_msgs) are the real ones. They are test inputs, not a moveit_msgs: nothing in
the package imports them.

Each scene message is checked against the same change made with the core's own updates on
a second scene: same objects (ids, links, touch links, shapes, poses), same joint values, the
same effective allowed collision matrix, and the same verdicts on a fixed random set.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pytest
from geometry_msgs.msg import Point, Pose, TransformStamped, Vector3
from sensor_msgs.msg import JointState, MultiDOFJointState
from shape_msgs.msg import Mesh, MeshTriangle, Plane, SolidPrimitive
from std_msgs.msg import Header

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import BodyType, Status
from my_collision_pkg.core.errors import SceneError
from my_collision_pkg.core.model.robot_model import Box, Cylinder, Sphere
from my_collision_pkg.core.model.transforms import make_transform, quaternion_to_matrix
from my_collision_pkg.core.perception.occupancy import OccupancyMap, binary_octomap_data
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.objects import AddObject, MoveObject, ObjectShape, RemoveObject, SceneObject
from my_collision_pkg.ros import moveit_bridge as mb

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
ARM = [f"panda_joint{i}" for i in range(1, 8)]
ELBOW_FOLDED = [0.0, -0.5, 0.0, -3.0, 0.0, 0.3, 0.785]       # the demo's self-collision (hand against link 2)
HOME = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
N_RANDOM = 300
SEED = 18


# ----- stand-ins with moveit_msgs' fields ------------------------------------------------------
@dataclass
class ObjectType:
    key: str = ""
    db: str = ""


@dataclass
class CollisionObject:
    # ``byte`` constants and field: rclpy gives them as one-byte bytes, as here
    ADD: ClassVar[bytes] = b"\x00"
    REMOVE: ClassVar[bytes] = b"\x01"
    APPEND: ClassVar[bytes] = b"\x02"
    MOVE: ClassVar[bytes] = b"\x03"
    header: Header = field(default_factory=Header)
    pose: Pose = field(default_factory=Pose)
    id: str = ""
    type: ObjectType = field(default_factory=ObjectType)
    primitives: list = field(default_factory=list)
    primitive_poses: list = field(default_factory=list)
    meshes: list = field(default_factory=list)
    mesh_poses: list = field(default_factory=list)
    planes: list = field(default_factory=list)
    plane_poses: list = field(default_factory=list)
    subframe_names: list = field(default_factory=list)
    subframe_poses: list = field(default_factory=list)
    operation: bytes = b"\x00"


@dataclass
class JointTrajectoryStandIn:
    joint_names: list = field(default_factory=list)
    points: list = field(default_factory=list)


@dataclass
class AttachedCollisionObject:
    link_name: str = ""
    object: CollisionObject = field(default_factory=CollisionObject)
    touch_links: list = field(default_factory=list)
    detach_posture: JointTrajectoryStandIn = field(default_factory=JointTrajectoryStandIn)
    weight: float = 0.0


@dataclass
class RobotState:
    joint_state: JointState = field(default_factory=JointState)
    multi_dof_joint_state: MultiDOFJointState = field(default_factory=MultiDOFJointState)
    attached_collision_objects: list = field(default_factory=list)
    is_diff: bool = False


@dataclass
class AllowedCollisionEntry:
    enabled: list = field(default_factory=list)


@dataclass
class AllowedCollisionMatrix:
    entry_names: list = field(default_factory=list)
    entry_values: list = field(default_factory=list)
    default_entry_names: list = field(default_factory=list)
    default_entry_values: list = field(default_factory=list)


@dataclass
class LinkPadding:
    link_name: str = ""
    padding: float = 0.0


@dataclass
class LinkScale:
    link_name: str = ""
    scale: float = 1.0


@dataclass
class Octomap:
    header: Header = field(default_factory=Header)
    binary: bool = False
    id: str = ""
    resolution: float = 0.0
    data: list = field(default_factory=list)


@dataclass
class OctomapWithPose:
    header: Header = field(default_factory=Header)
    origin: Pose = field(default_factory=Pose)
    octomap: Octomap = field(default_factory=Octomap)


@dataclass
class PlanningSceneWorld:
    collision_objects: list = field(default_factory=list)
    octomap: OctomapWithPose = field(default_factory=OctomapWithPose)


@dataclass
class PlanningScene:
    name: str = ""
    robot_state: RobotState = field(default_factory=RobotState)
    robot_model_name: str = ""
    fixed_frame_transforms: list = field(default_factory=list)
    allowed_collision_matrix: AllowedCollisionMatrix = field(default_factory=AllowedCollisionMatrix)
    link_padding: list = field(default_factory=list)
    link_scale: list = field(default_factory=list)
    object_colors: list = field(default_factory=list)
    world: PlanningSceneWorld = field(default_factory=PlanningSceneWorld)
    is_diff: bool = False


@dataclass
class JointConstraint:
    joint_name: str = ""
    position: float = 0.0
    tolerance_above: float = 0.0
    tolerance_below: float = 0.0
    weight: float = 0.0


@dataclass
class Constraints:
    name: str = ""
    joint_constraints: list = field(default_factory=list)
    position_constraints: list = field(default_factory=list)
    orientation_constraints: list = field(default_factory=list)
    visibility_constraints: list = field(default_factory=list)


@dataclass
class GetStateValidityRequest:
    robot_state: RobotState = field(default_factory=RobotState)
    group_name: str = ""
    constraints: Constraints = field(default_factory=Constraints)


@dataclass
class GetStateValidityResponse:
    valid: bool = False
    contacts: list = field(default_factory=list)
    cost_sources: list = field(default_factory=list)
    constraint_result: list = field(default_factory=list)


@dataclass
class ContactInformation:
    ROBOT_LINK: ClassVar[int] = 0
    WORLD_OBJECT: ClassVar[int] = 1
    ROBOT_ATTACHED: ClassVar[int] = 2
    header: Header = field(default_factory=Header)
    position: Point = field(default_factory=Point)
    normal: Vector3 = field(default_factory=Vector3)
    depth: float = 0.0
    contact_body_1: str = ""
    body_type_1: int = 0
    contact_body_2: str = ""
    body_type_2: int = 0


@dataclass
class ConstraintEvalResult:
    result: bool = False
    distance: float = 0.0


# ----- builders -------------------------------------------------------------------------------
def pose(xyz=(0.0, 0.0, 0.0), quat_xyzw=(0.0, 0.0, 0.0, 1.0)) -> Pose:
    p = Pose()
    p.position.x, p.position.y, p.position.z = (float(v) for v in xyz)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = (float(v) for v in quat_xyzw)
    return p


def T_of(xyz=(0.0, 0.0, 0.0), quat_xyzw=(0.0, 0.0, 0.0, 1.0)) -> np.ndarray:
    return make_transform(quaternion_to_matrix(np.array(quat_xyzw, dtype=float)), np.array(xyz, dtype=float))


def box_primitive(size) -> SolidPrimitive:
    return SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[float(s) for s in size])


def sphere_primitive(radius) -> SolidPrimitive:
    return SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[float(radius)])


def cylinder_primitive(radius, height) -> SolidPrimitive:
    dims = [0.0, 0.0]
    dims[SolidPrimitive.CYLINDER_HEIGHT] = float(height)
    dims[SolidPrimitive.CYLINDER_RADIUS] = float(radius)
    return SolidPrimitive(type=SolidPrimitive.CYLINDER, dimensions=dims)


def world_object(oid, primitive, at=(0.0, 0.0, 0.0), frame="panda_link0", op=CollisionObject.ADD,
                 quat=(0.0, 0.0, 0.0, 1.0)) -> CollisionObject:
    co = CollisionObject(id=oid, operation=op, pose=pose(at, quat))
    co.header.frame_id = frame
    if primitive is not None:
        co.primitives, co.primitive_poses = [primitive], [pose()]
    return co


def joint_state(names, values) -> JointState:
    return JointState(name=list(names), position=[float(v) for v in values])


def acm_msg(names, allowed_pairs, defaults=()) -> AllowedCollisionMatrix:
    index = {n: i for i, n in enumerate(names)}
    rows = [[False] * len(names) for _ in names]
    for a, b in allowed_pairs:
        rows[index[a]][index[b]] = rows[index[b]][index[a]] = True
    return AllowedCollisionMatrix(list(names), [AllowedCollisionEntry(r) for r in rows],
                                  [n for n, _ in defaults], [bool(v) for _, v in defaults])


def diff(**fields) -> PlanningScene:
    scene = PlanningScene(is_diff=True, **fields)
    scene.robot_state.is_diff = True
    return scene


# ----- fixtures -------------------------------------------------------------------------------
def make_scene():
    urdf, srdf = panda_paths()
    return load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)


@pytest.fixture(scope="module")
def panda_srdf() -> str:
    with open(panda_paths()[1], encoding="utf-8") as f:
        return f.read()


@pytest.fixture()
def scenes():
    """Two fresh Panda scenes (the table and post of config/panda_world.yaml): mirror and reference."""
    return make_scene(), make_scene()


@pytest.fixture(scope="module")
def panda_checker():
    return CollisionChecker(make_scene(), check_joint_limits=True)


def random_configurations(robot, n=N_RANDOM, seed=SEED) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(robot.lower_limits, robot.upper_limits, size=(n, len(robot.active_joint_names)))


def assert_same_scene(a, b, *, verdicts=True) -> None:
    """Same objects (ids, links, touch links, shapes, poses), joint values, effective matrix and verdicts."""
    wa, wb = a.world, b.world
    assert sorted(wa.objects) == sorted(wb.objects)
    for oid, x in wa.objects.items():
        y = wb.objects[oid]
        assert (x.link, tuple(sorted(x.touch_links))) == (y.link, tuple(sorted(y.touch_links))), oid
        np.testing.assert_allclose(x.T_frame_object, y.T_frame_object, atol=1e-12, err_msg=oid)
        assert len(x.shapes) == len(y.shapes), oid
        for sx, sy in zip(x.shapes, y.shapes):
            assert sx.spec == sy.spec, oid
            np.testing.assert_allclose(sx.T_object_shape, sy.T_object_shape, atol=1e-12)
    np.testing.assert_array_equal(a.current_positions, b.current_positions)
    names_a, matrix_a = a.allowed_collisions()
    names_b, matrix_b = b.allowed_collisions(names_a)
    np.testing.assert_array_equal(matrix_a, matrix_b)
    assert wa.link_padding_m == wb.link_padding_m
    if verdicts:
        robot = a.robot
        Q = random_configurations(robot)
        va, _ = CollisionChecker(a).check_batch(robot.active_joint_names, Q)
        vb, _ = CollisionChecker(b).check_batch(robot.active_joint_names, Q)
        np.testing.assert_array_equal(va, vb)


def mirror(scene, msg, aliases=("world",), fixed=None):
    change = mb.planning_scene_change(msg, scene, fixed_frames=fixed, aliases=aliases)
    mb.apply_scene_change(scene, change)
    return change


# ----- scene messages ------------------------------------------------------------------------
def test_planning_frame_aliases_are_the_fixed_virtual_joints_parents(panda_srdf):
    root = "panda_link0"
    srdf = ('<robot name="r"><virtual_joint name="v" type="fixed" parent_frame="/world" child_link="panda_link0"/>'
            '<virtual_joint name="m" type="floating" parent_frame="odom" child_link="panda_link0"/></robot>')
    assert mb.planning_frame_aliases(srdf, root) == ("world",)
    assert mb.planning_frame_aliases("<robot", root) == ()
    assert mb.planning_frame_aliases(srdf, "other_root") == ()
    assert isinstance(mb.planning_frame_aliases(panda_srdf, root), tuple)


def test_full_then_diffs_give_the_world_of_the_equivalent_core_updates(scenes):
    a, b = scenes
    robot = a.robot
    crate_T = T_of((0.5, -0.3, 0.4), (0.0, 0.0, math.sin(0.2), math.cos(0.2)))
    shelf_T = T_of((0.2, 0.6, 0.1))
    bottle_in_shelf = T_of((0.0, 0.0, 0.3))
    # 1. a full scene: joint values, a crate in the planning frame (called 'world', MoveIt's name),
    #    a bottle posed in a fixed frame; table and post of the world file are gone (full scene)
    full = PlanningScene(is_diff=False)
    full.robot_state.joint_state = joint_state(ARM, HOME)
    shelf = TransformStamped()
    shelf.header.frame_id, shelf.child_frame_id = "world", "shelf"
    shelf.transform.translation.x, shelf.transform.translation.y, shelf.transform.translation.z = 0.2, 0.6, 0.1
    full.fixed_frame_transforms = [shelf]
    full.world.collision_objects = [
        world_object("crate", box_primitive((0.2, 0.3, 0.1)), (0.5, -0.3, 0.4), frame="world",
                     quat=(0.0, 0.0, math.sin(0.2), math.cos(0.2))),
        world_object("bottle", cylinder_primitive(0.03, 0.2), (0.0, 0.0, 0.3), frame="shelf")]
    change = mirror(a, full)
    assert set(change.fixed_frames) == {"shelf"}
    b.set_current_positions(ARM, HOME)
    b.apply([RemoveObject("table"), RemoveObject("post"),
             AddObject(SceneObject("crate", (ObjectShape(Box((0.2, 0.3, 0.1))),), crate_T)),
             AddObject(SceneObject("bottle", (ObjectShape(Cylinder(0.03, 0.2)),), shelf_T @ bottle_in_shelf))])
    b.set_allowed_collisions(replace=True)
    assert_same_scene(a, b)
    fixed = change.fixed_frames

    # 2. a diff: a mug posed in the hand frame (a world object: fixed where the hand is now)
    mug_in_hand = T_of((0.0, 0.0, 0.15))
    change = mirror(a, diff(world=PlanningSceneWorld([world_object("mug", sphere_primitive(0.04), (0.0, 0.0, 0.15),
                                                                   frame="panda_hand")])), fixed=fixed)
    T_world_hand = robot.link_transforms(np.array(a.current_positions))[robot.link_index("panda_hand")]
    b.apply([AddObject(SceneObject("mug", (ObjectShape(Sphere(0.04)),), T_world_hand @ mug_in_hand))])
    assert_same_scene(a, b)

    # 3. a diff: MOVE the crate
    moved = world_object("crate", None, (0.4, -0.4, 0.5), frame="world", op=CollisionObject.MOVE)
    mirror(a, diff(world=PlanningSceneWorld([moved])), fixed=fixed)
    b.apply([MoveObject("crate", T_of((0.4, -0.4, 0.5)))])
    assert_same_scene(a, b)

    # 4. a diff: attach the bottle (the world object's geometry) to the hand with the fingers as touch links
    fingers = ["panda_leftfinger", "panda_rightfinger"]
    attach = AttachedCollisionObject("panda_hand", CollisionObject(id="bottle", operation=CollisionObject.ADD),
                                     list(fingers))
    before = a.world.objects["bottle"].T_frame_object
    mirror(a, diff(robot_state=RobotState(attached_collision_objects=[attach], is_diff=True)), fixed=fixed)
    bottle = b.world.objects["bottle"]
    b.apply([AddObject(SceneObject("bottle", bottle.shapes, np.linalg.inv(T_world_hand) @ bottle.T_frame_object,
                                   "panda_hand", tuple(fingers)))])
    assert_same_scene(a, b)
    # where it was: the attached bottle's pose in the world at the current joints is the world bottle's
    attached = a.world.objects["bottle"]
    np.testing.assert_allclose(T_world_hand @ attached.T_frame_object, before, atol=1e-12)

    # 5. a diff: new joint values and MoveIt's whole matrix (link2 and hand may touch, the mug allowed by default)
    q = [0.3, -0.2, 0.1, -2.0, 0.2, 1.8, 0.5]
    names = ["panda_link2", "panda_hand", "crate"]
    msg = diff(allowed_collision_matrix=acm_msg(names, [("panda_link2", "panda_hand")], [("mug", True)]))
    msg.robot_state.joint_state = joint_state(ARM, q)
    mirror(a, msg, fixed=fixed)
    b.set_current_positions(ARM, q)
    b.set_allowed_collisions([("panda_link2", "panda_hand", True), ("panda_link2", "crate", False),
                              ("panda_hand", "crate", False)], [("mug", True)], replace=True)
    assert_same_scene(a, b)
    assert a.world.acm.allowed("panda_link2", "panda_hand")

    # 6. a diff: detach the bottle (back into the world where the hand holds it now), remove the mug
    detach = AttachedCollisionObject("", CollisionObject(id="bottle", operation=CollisionObject.REMOVE))
    msg = diff(robot_state=RobotState(attached_collision_objects=[detach], is_diff=True),
               world=PlanningSceneWorld([CollisionObject(id="mug", operation=CollisionObject.REMOVE)]))
    mirror(a, msg, fixed=fixed)
    T_world_hand = robot.link_transforms(np.array(b.current_positions))[robot.link_index("panda_hand")]
    held = b.world.objects["bottle"]
    b.apply([AddObject(SceneObject("bottle", held.shapes, T_world_hand @ held.T_frame_object)), RemoveObject("mug")])
    assert_same_scene(a, b)
    assert not a.world.objects["bottle"].attached


def test_append_adds_shapes_and_link_padding_is_applied(scenes):
    a, b = scenes
    first = world_object("crate", box_primitive((0.1, 0.1, 0.1)), (0.5, 0.0, 0.6))
    mirror(a, diff(world=PlanningSceneWorld([first])))
    more = world_object("crate", sphere_primitive(0.05), (0.5, 0.1, 0.6), op=CollisionObject.APPEND)
    mirror(a, diff(world=PlanningSceneWorld([more]), link_padding=[LinkPadding("panda_hand", 0.02)],
                   link_scale=[LinkScale("panda_hand", 1.0)]))
    # MoveIt's APPEND: the object takes the new pose, old shapes keep their place in the object frame
    b.apply([AddObject(SceneObject("crate", (ObjectShape(Box((0.1, 0.1, 0.1))), ObjectShape(Sphere(0.05))),
                                   T_of((0.5, 0.1, 0.6))))])
    b.set_padding(link_padding_m={"panda_hand": 0.02})
    assert_same_scene(a, b)


def test_a_full_scene_with_unchanged_objects_keeps_their_geometry(scenes):
    a, _ = scenes
    full = PlanningScene(is_diff=False)
    full.world.collision_objects = [world_object("table", box_primitive((0.5, 1.0, 0.04)), (0.65, 0.0, 0.15)),
                                    world_object("post", cylinder_primitive(0.05, 0.8), (0.0, 0.55, 0.4))]
    geometry = dict(a.world.object_geometry)
    mirror(a, full)
    assert a.world.object_geometry["table"] is geometry["table"]     # same shapes: not rebuilt
    assert a.world.object_geometry["post"] is geometry["post"]


def _plane_object():
    co = world_object("floor", None)
    co.planes, co.plane_poses = [Plane(coef=[0.0, 0.0, 1.0, 0.0])], [pose()]
    return co


def _bad_diffs():
    """(message, words the refusal names): each also carries a valid change, which must not be applied."""
    good = world_object("crate", box_primitive((0.1, 0.1, 0.1)), (0.5, 0.0, 0.6))
    cases = []

    def case(words, **fields):
        msg = diff(**fields)
        msg.world.collision_objects.insert(0, good)
        if not len(msg.robot_state.joint_state.name):
            msg.robot_state.joint_state = joint_state(["panda_joint1"], [0.4])
        cases.append(pytest.param(msg, words, id=words[0]))

    case(["floor", "plane"], world=PlanningSceneWorld([_plane_object()]))
    case(["mug", "nowhere"], world=PlanningSceneWorld([world_object("mug", sphere_primitive(0.1), frame="nowhere")]))
    case(["ghost", "move"], world=PlanningSceneWorld([world_object("ghost", None, op=CollisionObject.MOVE)]))
    broken = world_object("spike", None)
    broken.meshes = [Mesh(triangles=[MeshTriangle(vertex_indices=[0, 1, 5])],
                          vertices=[Point(x=0.0), Point(x=1.0), Point(y=1.0)])]
    broken.mesh_poses = [pose()]
    case(["spike", "vertex"], world=PlanningSceneWorld([broken]))
    case(["panda_hand", "scale"], link_scale=[LinkScale("panda_hand", 1.5)])
    case(["panda_hand", "padding"], link_padding=[LinkPadding("panda_hand", -0.1)])
    case(["no_such_joint"], robot_state=RobotState(joint_state=joint_state(["no_such_joint"], [0.0]), is_diff=True))
    case(["unicorn"], allowed_collision_matrix=acm_msg(["panda_hand", "unicorn"], []))
    case(["symmetric"], allowed_collision_matrix=AllowedCollisionMatrix(
        ["panda_hand", "panda_link2"], [AllowedCollisionEntry([False, True]), AllowedCollisionEntry([False, False])]))
    case(["mug", "attach", "panda_nothing"], robot_state=RobotState(attached_collision_objects=[
        AttachedCollisionObject("panda_nothing", world_object("mug", sphere_primitive(0.02)))], is_diff=True))
    case(["mug", "no geometry"], robot_state=RobotState(attached_collision_objects=[
        AttachedCollisionObject("panda_hand", CollisionObject(id="mug"))], is_diff=True))
    case(["table", "detach"], robot_state=RobotState(attached_collision_objects=[
        AttachedCollisionObject("", CollisionObject(id="table", operation=CollisionObject.REMOVE))], is_diff=True))
    return cases


@pytest.mark.parametrize("msg, words", _bad_diffs())
def test_a_malformed_diff_leaves_the_scene_unchanged_and_names_the_fault(msg, words):
    scene = make_scene()
    world, q = scene.world, np.array(scene.current_positions)
    with pytest.raises(Exception) as raised:
        mirror(scene, msg)
    text = str(raised.value).lower()
    for word in words:
        assert word.lower() in text, text
    assert scene.world is world
    np.testing.assert_array_equal(scene.current_positions, q)


def test_a_fault_after_the_objects_are_applied_rolls_everything_back(monkeypatch):
    scene = make_scene()
    reference = make_scene()
    msg = diff(world=PlanningSceneWorld([world_object("crate", box_primitive((0.1, 0.1, 0.1)), (0.5, 0.0, 0.6)),
                                         world_object("post", None, (0.1, 0.5, 0.4), op=CollisionObject.MOVE)]),
               allowed_collision_matrix=acm_msg(["panda_hand", "table"], [("panda_hand", "table")]),
               link_padding=[LinkPadding("panda_link3", 0.05)])
    msg.robot_state.joint_state = joint_state(ARM, HOME)
    change = mb.planning_scene_change(msg, scene)

    def refuse(*args, **kwargs):
        raise SceneError("refused by the test")
    monkeypatch.setattr(scene, "set_allowed_collisions", refuse)
    with pytest.raises(SceneError, match="refused by the test"):
        mb.apply_scene_change(scene, change)
    assert_same_scene(scene, reference)


def test_robot_state_joints_mimic_dropped_multi_dof_refused(panda_checker):
    robot = panda_checker.scene.robot
    state = RobotState(joint_state=joint_state(ARM + ["panda_finger_joint1", "panda_finger_joint2"],
                                               HOME + [0.02, 0.02]))
    names, values = mb.robot_state_joint_values(state, robot)
    mimics = [j.name for j in robot.joints if j.mimic_of is not None]
    assert "panda_finger_joint2" in mimics and "panda_finger_joint1" in names
    assert not set(names) & set(mimics)
    assert dict(zip(names, values))["panda_joint4"] == HOME[3]
    multi = RobotState()
    multi.multi_dof_joint_state.joint_names = ["virtual_joint"]
    with pytest.raises(Exception, match="virtual_joint"):
        mb.robot_state_joint_values(multi, robot)


def octomap_msg(occupancy, *, frame="world", binary=True, tree="OcTree") -> OctomapWithPose:
    """An OctomapWithPose stand-in holding ``occupancy`` as octomap binary data (int8, as the message)."""
    data = np.frombuffer(binary_octomap_data(occupancy), dtype=np.uint8).view(np.int8).tolist()
    return OctomapWithPose(header=Header(frame_id=frame),
                           octomap=Octomap(binary=binary, id=tree, resolution=occupancy.resolution_m, data=data))


def box_cloud_map(lo=(0.35, -0.3, 0.2), hi=(0.55, 0.3, 0.6), resolution=0.02, seed=3) -> OccupancyMap:
    rng = np.random.default_rng(seed)
    return OccupancyMap.from_points(rng.uniform(lo, hi, size=(20000, 3)), resolution)


def test_an_octomap_is_mirrored_into_the_octomap_object(scenes):
    a, b = scenes
    occupancy = box_cloud_map()
    msg = diff()
    msg.world.octomap = octomap_msg(occupancy)
    mirror(a, msg)
    assert a.occupancy is not None
    np.testing.assert_array_equal(a.occupancy.cell_keys(), occupancy.cell_keys())
    b.set_occupancy(occupancy)                       # the reference: the same map set directly
    ca, cb = CollisionChecker(a), CollisionChecker(b)
    q = random_configurations(a.robot, n=60, seed=5)
    verdicts = [ca.is_valid(a.robot.active_joint_names, x) for x in q]
    assert verdicts == [cb.is_valid(b.robot.active_joint_names, x) for x in q]
    assert not all(verdicts)                         # the map reaches some configurations
    # a diff without a map keeps it; a full scene without one clears it (MoveIt's meaning)
    mirror(a, diff())
    assert a.occupancy is not None
    full = PlanningScene(is_diff=False)
    full.robot_state.joint_state = joint_state(ARM, HOME)
    mirror(a, full)
    assert a.occupancy is None


@pytest.mark.parametrize("fault, match", [
    ({"binary": False}, "non-binary"),
    ({"tree": "ColorOcTree"}, "ColorOcTree"),
    ({"frame": "panda_link7"}, "not in the planning frame"),
    ({"truncate": True}, "corrupt data"),
])
def test_a_bad_octomap_refuses_the_whole_message(scenes, fault, match):
    a, reference = scenes
    truncate = fault.pop("truncate", False)
    with_pose = octomap_msg(box_cloud_map(), **fault)
    if truncate:
        with_pose.octomap.data = with_pose.octomap.data[:-5]
    msg = diff(world=PlanningSceneWorld(collision_objects=[world_object("extra", box_primitive((0.1, 0.1, 0.1)), at=(0.0, 0.6, 0.3))],
                                        octomap=with_pose))
    with pytest.raises(Exception, match=match):
        mirror(a, msg)
    assert_same_scene(a, reference)
    assert a.occupancy is None


# ----- GetStateValidity ----------------------------------------------------------------------
def answer(checker, request, **options):
    result = mb.evaluate_state_validity(checker, request, aliases=("world",), **options)
    response = mb.fill_state_validity_response(GetStateValidityResponse(), result, contact_type=ContactInformation,
                                               constraint_result_type=ConstraintEvalResult, planning_frame="world")
    return result, response


def request_at(values, names=ARM, **fields):
    return GetStateValidityRequest(robot_state=RobotState(joint_state=joint_state(names, values)), **fields)


def test_valid_and_self_colliding_states_with_depths_of_explain(panda_checker):
    _, response = answer(panda_checker, request_at(HOME))
    assert response.valid and not response.contacts and not response.constraint_result
    _, response = answer(panda_checker, request_at(ELBOW_FOLDED))
    assert not response.valid and response.contacts
    explanation = panda_checker.explain(ARM, ELBOW_FOLDED)
    assert len(response.contacts) == len(explanation.contacts)
    for msg, contact in zip(response.contacts, explanation.contacts):
        assert msg.depth == pytest.approx(-contact.distance, abs=1e-12) and msg.depth > 0
        assert (msg.contact_body_1, msg.contact_body_2) == contact.link_names
        assert (msg.body_type_1, msg.body_type_2) == (ContactInformation.ROBOT_LINK, ContactInformation.ROBOT_LINK)
        assert msg.header.frame_id == "world"
        np.testing.assert_allclose([msg.normal.x, msg.normal.y, msg.normal.z], contact.normal)


def test_world_and_attached_contacts_carry_moveit_body_types(panda_checker):
    robot = panda_checker.scene.robot
    Q = random_configurations(robot, 2000, SEED + 1)
    hit = next(q for q in Q if any(c.body_types[1] == BodyType.WORLD_OBJECT
                                   for c in panda_checker.explain(robot.active_joint_names, q).contacts))
    _, response = answer(panda_checker, request_at(hit, robot.active_joint_names))
    assert not response.valid
    assert any(c.body_type_2 == ContactInformation.WORLD_OBJECT and c.contact_body_2 in ("table", "post")
               for c in response.contacts)
    # an attached sphere of the request, placed inside the post: ROBOT_ATTACHED against WORLD_OBJECT;
    # the scene itself is not changed
    world = panda_checker.scene.world
    held = AttachedCollisionObject("panda_hand", world_object("probe", sphere_primitive(0.04), (0.0, 0.55, 0.4)))
    request = request_at(HOME)
    request.robot_state.attached_collision_objects = [held]
    _, response = answer(panda_checker, request)
    assert not response.valid
    assert any((c.contact_body_1, c.body_type_1, c.contact_body_2, c.body_type_2)
               == ("probe", ContactInformation.ROBOT_ATTACHED, "post", ContactInformation.WORLD_OBJECT)
               for c in response.contacts)
    assert panda_checker.scene.world is world and "probe" not in world.objects


def test_is_diff_false_drops_the_scenes_attached_objects():
    scene = make_scene()
    checker = CollisionChecker(scene)
    # a sphere attached to the hand in the scene, placed inside the post when the arm is at HOME
    robot = scene.robot
    T_world_hand = robot.link_transforms(np.array(_full(robot, HOME)))[robot.link_index("panda_hand")]
    T_hand_block = np.linalg.inv(T_world_hand) @ T_of((0.0, 0.55, 0.4))       # inside the post at HOME
    scene.apply([AddObject(SceneObject("block", (ObjectShape(Sphere(0.03)),), T_hand_block, "panda_hand"))])
    request = request_at(HOME)
    request.robot_state.is_diff = True
    result, _ = answer(checker, request)
    assert not result.valid and any("block" in c.link_names for c in result.contacts)
    request.robot_state.is_diff = False        # MoveIt: a full state replaces the attached bodies
    result, _ = answer(checker, request)
    assert result.valid, result.message


def _full(robot, arm_values):
    q = robot.default_positions().copy()
    for name, value in zip(ARM, arm_values):
        q[robot.active_index(name)] = value
    return q


def test_joint_constraints_are_evaluated_and_others_reported_not_evaluated(panda_checker):
    inside = JointConstraint("panda_joint4", HOME[3] + 0.05, tolerance_above=0.1, tolerance_below=0.1, weight=2.0)
    outside = JointConstraint("panda_joint1", 1.0, tolerance_above=0.1, tolerance_below=0.1, weight=1.0)
    result, response = answer(panda_checker, request_at(HOME, constraints=Constraints(joint_constraints=[inside])))
    assert response.valid
    (r,) = response.constraint_result
    assert r.result and r.distance == pytest.approx(2.0 * 0.05)
    _, response = answer(panda_checker, request_at(HOME, constraints=Constraints(joint_constraints=[inside, outside])))
    assert not response.valid
    assert [r.result for r in response.constraint_result] == [True, False]
    assert response.constraint_result[1].distance == pytest.approx(1.0)
    result, response = answer(panda_checker, request_at(HOME, constraints=Constraints(
        joint_constraints=[inside], position_constraints=[object()])))
    assert not response.valid and "not evaluated" in result.message
    assert response.constraint_result[0].result and not response.constraint_result[1].result
    assert math.isnan(response.constraint_result[1].distance)


def test_validity_equals_check_validity_on_random_configurations(panda_checker):
    robot = panda_checker.scene.robot
    names = robot.active_joint_names
    Q = random_configurations(robot, 1000, SEED + 2)
    for q in Q:
        result, response = answer(panda_checker, request_at(q, names))
        verdict = panda_checker.check(names, q)
        assert response.valid == verdict.valid and result.status == verdict.status


def test_a_malformed_request_is_invalid_with_the_fault_named(panda_checker):
    result, response = answer(panda_checker, request_at([0.0], ["no_such_joint"]))
    assert not response.valid and result.status == Status.INVALID_REQUEST and "no_such_joint" in result.message
    result, _ = answer(panda_checker, request_at(HOME, group_name="no_such_group"))
    assert result.status == Status.INVALID_REQUEST and "no_such_group" in result.message


def test_multi_state_stops_at_the_first_invalid_state(panda_checker):
    states = [joint_state(ARM, HOME), joint_state(["panda_joint1"], [0.2]), joint_state(ARM, ELBOW_FOLDED),
              joint_state(ARM, HOME)]
    result, response = answer(panda_checker, GetStateValidityRequest(), joint_states=states)
    assert not response.valid and result.message.startswith("state 2 of 4")
    folded = _full(panda_checker.scene.robot, ELBOW_FOLDED)
    assert len(response.contacts) == len(panda_checker.explain(panda_checker.scene.robot.active_joint_names,
                                                               folded).contacts)
    result, response = answer(panda_checker, GetStateValidityRequest(), joint_states=states[:2])
    assert response.valid and result.message.startswith("state 1 of 2")


# ----- the node half without moveit_msgs ---------------------------------------------------------
@pytest.fixture()
def make_node():
    """Bare rclpy nodes in their own context (the bridge's parameter functions need only a node)."""
    import rclpy
    from rclpy.node import Node
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes = []

    def make(**overrides):
        from rclpy.parameter import Parameter
        node = Node(f"moveit_bridge_{len(nodes)}", context=context,
                    parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        nodes.append(node)
        return node
    yield make
    for node in nodes:
        node.destroy_node()
    rclpy.shutdown(context=context)


def test_parameters_are_declared_read_and_checked(make_node):
    from my_collision_pkg.ros.runtime import ConfigurationError
    node = make_node()
    mb.declare_moveit_parameters(node)
    assert mb.read_moveit_parameters(node) == {"moveit_compat": "auto", "moveit_global_names": False,
                                               "planning_scene_topic": "", "planning_scene_service": ""}
    node = make_node(moveit_compat="sometimes", planning_scene_topic="/monitored_planning_scene")
    mb.declare_moveit_parameters(node)
    with pytest.raises(ConfigurationError, match="moveit_compat.*sometimes"):
        mb.read_moveit_parameters(node)
    node = make_node(moveit_compat="false", planning_scene_topic="/monitored_planning_scene")
    mb.declare_moveit_parameters(node)
    assert mb.read_moveit_parameters(node)["planning_scene_topic"] == "/monitored_planning_scene"
    # ``-p moveit_compat:=true`` arrives as a bool, and a number is refused by name
    for given, read in ((True, "true"), (False, "false")):
        node = make_node(moveit_compat=given, moveit_global_names=True)
        mb.declare_moveit_parameters(node)
        if read == "true" and mb.import_moveit_msgs() is None:
            # required but missing: refused while reading, before the scene is loaded
            with pytest.raises(ConfigurationError, match="moveit_msgs cannot be imported"):
                mb.read_moveit_parameters(node)
            continue
        p = mb.read_moveit_parameters(node)
        assert p["moveit_compat"] == read and p["moveit_global_names"] is True
    node = make_node(moveit_compat=2)
    mb.declare_moveit_parameters(node)
    with pytest.raises(ConfigurationError, match="moveit_compat"):
        mb.read_moveit_parameters(node)


def test_without_moveit_msgs_auto_logs_and_true_refuses(make_node):
    from my_collision_pkg.ros.runtime import ConfigurationError
    if mb.import_moveit_msgs() is not None:
        pytest.skip("moveit_msgs is importable here: the bridge would start (test/nodes/test_moveit_dds.py)")
    node = make_node()
    parameters = {"moveit_compat": "auto", "moveit_global_names": False, "planning_scene_topic": "/scene",
                  "planning_scene_service": ""}
    assert mb.attach_moveit_bridge(node, parameters) is None
    assert mb.attach_moveit_bridge(node, dict(parameters, moveit_compat="false")) is None
    with pytest.raises(ConfigurationError, match="moveit_compat is true.*moveit_msgs"):
        mb.attach_moveit_bridge(node, dict(parameters, moveit_compat="true"))
    assert not any("state_validity" in s.srv_name for s in node.services)
    assert not list(node.subscriptions)


def test_moveits_own_attach_and_detach_diffs(scenes):
    """move_group's diff of an attach: the attached body (with its geometry) in the robot state and a
    REMOVE of the world copy; of a detach: a REMOVE in the robot state and the world copy ADDed."""
    a, b = scenes
    robot = a.robot
    mirror(a, diff(world=PlanningSceneWorld([world_object("can", cylinder_primitive(0.03, 0.1), (0.5, 0.2, 0.5))])))
    T_world_hand = robot.link_transforms(np.array(a.current_positions))[robot.link_index("panda_hand")]
    T_hand_can = np.linalg.inv(T_world_hand) @ T_of((0.5, 0.2, 0.5))
    xyz, quat = T_hand_can[:3, 3], _quaternion(T_hand_can)
    held = world_object("can", cylinder_primitive(0.03, 0.1), xyz, frame="panda_hand", quat=quat)
    attach = diff(robot_state=RobotState(attached_collision_objects=[
        AttachedCollisionObject("panda_hand", held, ["panda_leftfinger"])], is_diff=True),
        world=PlanningSceneWorld([CollisionObject(id="can", operation=CollisionObject.REMOVE)]))
    change = mirror(a, attach)
    assert not any("ignored" in w for w in change.warnings)
    b.apply([AddObject(SceneObject("can", (ObjectShape(Cylinder(0.03, 0.1)),), T_hand_can, "panda_hand",
                                   ("panda_leftfinger",)))])
    assert_same_scene(a, b)
    detach = diff(robot_state=RobotState(attached_collision_objects=[
        AttachedCollisionObject("panda_hand", CollisionObject(id="can", operation=CollisionObject.REMOVE))],
        is_diff=True), world=PlanningSceneWorld([world_object("can", cylinder_primitive(0.03, 0.1), (0.5, 0.2, 0.5))]))
    mirror(a, detach)
    b.apply([AddObject(SceneObject("can", (ObjectShape(Cylinder(0.03, 0.1)),), T_of((0.5, 0.2, 0.5))))])
    assert_same_scene(a, b)
    change = mirror(a, diff(world=PlanningSceneWorld([CollisionObject(id="ghost", operation=CollisionObject.REMOVE)])))
    assert any("ghost" in w for w in change.warnings)
    assert_same_scene(a, b, verdicts=False)


def _quaternion(T):
    from my_collision_pkg.core.model.transforms import matrix_to_quaternion
    return matrix_to_quaternion(T[:3, :3])


def test_the_mirror_logs_one_line_per_refused_message_and_keeps_fixed_frames():
    scene = make_scene()
    lines, worlds = [], []
    mirror_ = mb.SceneMirror(scene, ("world",), warn=lines.append, on_change=worlds.append)
    shelf = TransformStamped()
    shelf.header.frame_id, shelf.child_frame_id = "world", "shelf"
    shelf.transform.rotation.w = 1.0
    shelf.transform.translation.z = 0.5
    assert mirror_.apply(diff(fixed_frame_transforms=[shelf]), "/scene")
    assert set(mirror_.fixed_frames) == {"shelf"} and len(worlds) == 1 and not lines
    world = scene.world
    assert not mirror_.apply(diff(world=PlanningSceneWorld([_plane_object()])), "/scene")
    assert len(lines) == 1 and "floor" in lines[0] and "unchanged" in lines[0] and "\n" not in lines[0]
    assert scene.world is world and len(worlds) == 1
    # a later diff still finds the fixed frame of the first one
    assert mirror_.apply(diff(world=PlanningSceneWorld([world_object("mug", sphere_primitive(0.05), frame="shelf")])),
                         "/scene")
    np.testing.assert_allclose(scene.world.objects["mug"].T_frame_object, T_of((0.0, 0.0, 0.5)))
    assert (mirror_.applied, mirror_.refused) == (2, 1)


def test_operation_is_read_as_a_ros_byte_or_an_int(scenes):
    """rclpy gives ``CollisionObject.operation`` (a ROS ``byte``) as one-byte bytes; ints mean the same."""
    for op_int, op_byte in ((0, b"\x00"), (1, b"\x01"), (2, b"\x02"), (3, b"\x03")):
        assert mb.operation_of(CollisionObject(operation=op_byte)) == op_int
        assert mb.operation_of(CollisionObject(operation=op_int)) == op_int
        assert mb.operation_of(CollisionObject(operation=bytearray(op_byte))) == op_int
    for bad in (b"", b"\x00\x01", "ADD", 1.0, True):
        with pytest.raises(SceneError, match="operation"):
            mb.operation_of(CollisionObject(id="x", operation=bad))
    # the same diff sequence with byte and with int operations gives the same world
    by_byte, by_int = scenes
    for op_add, op_move, op_remove, scene in ((b"\x00", b"\x03", b"\x01", by_byte), (0, 3, 1, by_int)):
        added = [world_object("crate", box_primitive((0.1, 0.2, 0.3)), at=(0.4, 0.1, 0.5), op=op_add),
                 world_object("box2", sphere_primitive(0.05), at=(0.3, -0.2, 0.6), op=op_add)]
        mirror(scene, diff(world=PlanningSceneWorld(added)))
        changed = [world_object("crate", None, at=(0.5, 0.0, 0.6), op=op_move),
                   world_object("box2", None, op=op_remove)]
        mirror(scene, diff(world=PlanningSceneWorld(changed)))
    assert "crate" in by_byte.world.objects and "box2" not in by_byte.world.objects
    assert_same_scene(by_byte, by_int)
