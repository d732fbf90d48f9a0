"""The validator never goes down: guarded callbacks, one world per request, extreme input,
parallel callers, start-ups that cannot be served (issue 9)."""
from __future__ import annotations

import os
import subprocess
import threading

import numpy as np
import pytest
from geometry_msgs.msg import Pose
from node_processes import ARM, FREE, INTO_TABLE, PANDA_WORLD, executable, panda_params, ros_args
from shape_msgs.msg import Mesh, MeshTriangle, SolidPrimitive
from geometry_msgs.msg import Point

from my_collision_pkg.ros import conversions
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.core.errors import SceneError
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.msg import CollisionObject
from my_collision_pkg.ros.runtime import SERVICE_QOS, CallbackGuard, refuse
from my_collision_pkg.core.model.robot_model import Box
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, RemoveObject, SceneObject
from my_collision_pkg.srv import ApplyCollisionObjects, CheckValidity, CheckValidityBatch, ExplainCollision
from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces
from my_collision_pkg.core.model.transforms import make_transform

INVALID = CheckValidity.Response.INVALID_REQUEST
PARALLEL_CALLERS = 32
CALLS_PER_CALLER = 40
MOVER_SIZE_M = 0.1
MOVER_AT = [(0.3, 0.0, 0.6), (0.05, 0.0, 0.35)]     # overlapping links 6/7/hand, then links 1/2 at FREE


def box_object(oid, xyz, size=(0.1, 0.1, 0.1), operation=CollisionObject.ADD, quat=(0.0, 0.0, 0.0, 1.0)):
    msg = CollisionObject()
    msg.id = oid
    msg.operation = operation
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in xyz)
    (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
     msg.pose.orientation.w) = (float(v) for v in quat)
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[float(v) for v in size])]
    msg.primitive_poses = [Pose()]
    return msg


def remove(oid):
    msg = CollisionObject()
    msg.id, msg.operation = oid, CollisionObject.REMOVE
    return msg


# ----- the guard itself, without DDS ------------------------------------------------
class _Logger:
    def __init__(self):
        self.errors = []

    def error(self, text):
        self.errors.append(text)


def test_guard_answers_an_exception_and_logs_its_traceback_once():
    logger = _Logger()
    guard = CallbackGuard(logger)
    calls = []

    def broken(request, response):
        calls.append(request)
        raise KeyError("no shape 0 of 'mover' in the scene")

    served = guard.service(broken, ExplainCollision)
    for _ in range(3):
        answer = served(ExplainCollision.Request(), ExplainCollision.Response())
        assert isinstance(answer, ExplainCollision.Response)
        assert not answer.valid and answer.status == INVALID
        assert answer.message == "internal error, request not served: KeyError: \"no shape 0 of 'mover' in the scene\""
    assert len(calls) == 3 and guard.failures == 3
    assert len(logger.errors) == 3
    assert "Traceback" in logger.errors[0] and "broken" in logger.errors[0]
    assert all("Traceback" not in e and "KeyError" in e for e in logger.errors[1:])


def test_guard_passes_answers_through_and_refuses_every_response_kind():
    guard = CallbackGuard(_Logger())

    def fine(request, response):
        response.valid, response.message = True, "valid"
        return response

    assert guard.service(fine, CheckValidity)(CheckValidity.Request(), CheckValidity.Response()).valid
    batch = refuse(CheckValidityBatch.Response, "x")
    assert list(batch.valid) == [] and batch.status == INVALID and batch.message == "x"
    apply = refuse(ApplyCollisionObjects.Response, "y")
    assert apply.success is False and apply.message == "y"
    logger = _Logger()
    timer = CallbackGuard(logger).timer(lambda: 1 / 0)
    assert timer() is None and "ZeroDivisionError" in logger.errors[0]


def test_service_qos_is_deep():
    assert SERVICE_QOS.depth >= 1000


# ----- conversions of poses and requests ----------------------------------------------
def test_quaternions_normalised_or_refused_with_words():
    robot = load_scene(urdf_path=panda_paths()[0]).robot
    warnings = []
    zero = conversions.collision_object_to_updates(box_object("z", (0, 0, 1), quat=(0, 0, 0, 0)), robot, warnings)
    np.testing.assert_allclose(zero[0].object.T_frame_object[:3, :3], np.eye(3))
    assert warnings == ["object 'z' pose has a zero quaternion, taken as the identity"]
    warnings.clear()
    half = conversions.collision_object_to_updates(box_object("h", (0, 0, 1), quat=(0, 0, 0.5, 0.5)), robot, warnings)
    R = half[0].object.T_frame_object[:3, :3]
    np.testing.assert_allclose(R, [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)   # 90 degrees about z
    assert warnings == ["object 'h' pose quaternion of norm 0.707107 normalised"]
    warnings.clear()
    conversions.collision_object_to_updates(box_object("u", (0, 0, 1), quat=(0, 0, 0.7071, 0.7071)), robot, warnings)
    assert warnings == []                   # rounded unit quaternions pass silently
    with pytest.raises(SceneError, match="norm that is not finite"):
        conversions.collision_object_to_updates(box_object("q", (0, 0, 1), quat=(1e200, 0, 0, 0)), robot)


def test_repeated_ids_in_one_request_are_refused_naming_the_id():
    robot = load_scene(urdf_path=panda_paths()[0]).robot
    with pytest.raises(SceneError, match="object 'crate' appears more than once"):
        conversions.collision_objects_to_updates([box_object("crate", (1, 0, 0)), remove("crate")], robot)
    with pytest.raises(SceneError, match="only allowed as the first update"):
        conversions.collision_objects_to_updates([box_object("crate", (1, 0, 0)), remove("")], robot)
    updates, warnings = conversions.collision_objects_to_updates([remove(""), box_object("crate", (1, 0, 0))], robot)
    assert len(updates) == 2 and warnings == []


# ----- the node over DDS -------------------------------------------------------------------
@pytest.mark.parametrize("msg, fragment", [
    (box_object("huge", (0, 0, 2), size=(1e300, 1, 1)), "beyond the bound of 10000 m"),
    (box_object("huge", (0, 0, 2), size=(1, 1, 1e300)), "box size"),
    (box_object("far", (1e12, 0, 0)), "position [1000000000000.0, 0.0, 0.0] beyond the bound"),
    (box_object("spin", (0, 0, 2), quat=(1e200, 0, 0, 0)), "norm that is not finite"),
])
def test_extreme_objects_are_refused_and_the_node_keeps_serving(validator, msg, fragment):
    answer = validator.apply([msg])
    assert not answer.success and fragment in answer.message and "scene unchanged" in answer.message
    assert validator.explain(ARM, INTO_TABLE, contact_distance=0.05).status != INVALID
    assert validator.check(ARM, FREE).valid


def test_extreme_mesh_vertices_are_refused(validator):
    msg = CollisionObject(id="spiky", operation=CollisionObject.ADD)
    msg.pose.orientation.w = 1.0
    points = [(0, 0, 0), (1e308, 0, 0), (0, 1, 0), (0, 0, 1)]
    mesh = Mesh(vertices=[Point(x=float(x), y=float(y), z=float(z)) for x, y, z in points],
                triangles=[MeshTriangle(vertex_indices=t) for t in ((0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3))])
    msg.meshes, msg.mesh_poses = [mesh], [Pose()]
    answer = validator.apply([msg])
    assert not answer.success and "beyond the bound" in answer.message and "spiky" in answer.message
    assert validator.check(ARM, FREE).valid


def test_duplicate_ids_refused_and_quaternion_warnings_reported(validator):
    twice = validator.apply([box_object("dup", (0.5, 0.5, 1.5)), box_object("dup", (0.6, 0.5, 1.5))])
    assert not twice.success and "object 'dup' appears more than once" in twice.message
    ok = validator.apply([box_object("tilted", (0.5, 0.5, 1.5), quat=(0, 0, 0, 2.0))])
    assert ok.success and "warning" in ok.message and "normalised" in ok.message
    assert validator.apply([remove("tilted")]).success


def test_parallel_callers_through_one_client_are_all_answered(validator):
    answered, failures = [0] * PARALLEL_CALLERS, []

    def caller(k):
        for _ in range(CALLS_PER_CALLER):
            try:
                answer = validator.check(ARM, FREE)
                if not answer.valid:
                    failures.append(answer.message)
                answered[k] += 1
            except Exception as exc:  # ServiceTimeout: a lost call; reported below
                failures.append(repr(exc))

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(PARALLEL_CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert failures == [] and sum(answered) == PARALLEL_CALLERS * CALLS_PER_CALLER


def _oracles():
    """What explain with surfaces answers at FREE in each world the race goes through."""
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    checker = CollisionChecker(scene)
    out = []
    for at in [None] + MOVER_AT:
        if at is None:
            world = scene.world
        else:
            world = scene.apply([AddObject(SceneObject("mover", (ObjectShape(Box((MOVER_SIZE_M,) * 3)),),
                                                       make_transform(None, at)))])
        e = checker.explain(ARM, FREE, world=world)
        surfaces = explanation_surfaces(world, e)
        out.append((list(e.colliding_links), [tuple(s.body_names) for s in surfaces],
                    np.array([s.patch.centroid_world for s in surfaces]).reshape(-1, 3)))
        if at is not None:
            scene.apply([RemoveObject("mover")])
    return out


def _matches(answer, oracle) -> bool:
    links, names, centroids = oracle
    got = np.array([[s.centroid.x, s.centroid.y, s.centroid.z] for s in answer.surfaces]).reshape(-1, 3)
    return (list(answer.colliding_links) == links and [tuple(s.body_names) for s in answer.surfaces] == names
            and np.allclose(got, centroids, atol=1e-6))


def test_explain_with_surfaces_sees_one_world_while_objects_come_and_go(validator):
    oracles = _oracles()
    assert len({tuple(o[0]) for o in oracles}) == 3                 # three distinguishable worlds
    stop, answers, errors = threading.Event(), [], []

    def updater():
        try:
            while not stop.is_set():
                for at in MOVER_AT:
                    r = validator.apply([box_object("mover", at, (MOVER_SIZE_M,) * 3)])   # ADD replaces
                    if not r.success:
                        errors.append(r.message)
                r = validator.apply([remove("mover")])
                if not r.success:
                    errors.append(r.message)
        except Exception as exc:
            errors.append(repr(exc))

    thread = threading.Thread(target=updater)
    thread.start()
    try:
        for _ in range(60):
            answers.append(validator.explain(ARM, FREE, compute_surfaces=True))
    finally:
        stop.set()
        thread.join(60)
    assert errors == []
    unmatched = [a.message for a in answers if not any(_matches(a, o) for o in oracles)]
    assert unmatched == []
    seen = {next(k for k, o in enumerate(oracles) if _matches(a, o)) for a in answers}
    assert len(seen) >= 2, "the race never saw the world change"
    assert validator.check(ARM, FREE).valid                       # node alive, mover gone


def test_remove_with_an_empty_id_removes_every_world_object(validator):
    # last in this module: it empties the world of the module's node
    assert validator.apply([box_object("extra", (0.5, 0.5, 1.5))]).success
    assert not validator.check(ARM, INTO_TABLE).valid                 # the table is there
    cleared = validator.apply([remove("")])
    assert cleared.success and "0 objects" in cleared.message
    assert validator.check(ARM, INTO_TABLE).valid                     # table and post gone


# ----- start-ups that cannot be served: one line, exit 1 -----------------------------------
def _start(params):
    return subprocess.run([executable("collision_validator")] + ros_args(params), capture_output=True, text=True,
                          timeout=120)


def _assert_one_line(result, fragment):
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.returncode == 1, result.stderr
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_nan_joint_origin_ends_start_up_with_one_line(tmp_path):
    urdf_path, _ = panda_paths()
    text = open(urdf_path).read()
    assert text.count('xyz="0 0 0.333"') == 1
    bad = tmp_path / "panda_nan.urdf"
    bad.write_text(text.replace('xyz="0 0 0.333"', 'xyz="nan 0 0.333"'))
    _assert_one_line(_start(panda_params(urdf_path=str(bad))), "joint 'panda_joint1' origin xyz has non-finite")


def test_self_containing_srdf_group_ends_start_up_with_one_line(tmp_path):
    _, srdf_path = panda_paths()
    text = open(srdf_path).read()
    bad = tmp_path / "panda_loop.srdf"
    bad.write_text(text.replace('<group name="hand">', '<group name="hand">\n        <group name="arm_and_hand"/>', 1))
    _assert_one_line(_start(panda_params(srdf_path=str(bad))), "contains itself")


def test_malformed_world_yaml_ends_start_up_with_one_line(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("objects:\n  - id: a\n   shapes: [\n")
    _assert_one_line(_start(panda_params(scene_path=str(bad))), "not valid YAML")
