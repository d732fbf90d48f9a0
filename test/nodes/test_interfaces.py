"""The generated interfaces of my_collision_pkg: fields, constants, defaults, DDS.

The field names and types are the package's public contract (issues 3 and 4), so
they are checked exactly: a rename or a type change fails here first. The last test
sends an ExplainCollision request between two nodes over DDS, in a context and
executor of its own, to show that the generated type support works end to end.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator

import pytest
import rclpy
from geometry_msgs.msg import Point, Vector3
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState

from my_collision_pkg.msg import (AllowedCollisionDefault, AllowedCollisionEntry, Clearance, CollisionObject, Contact, ContactInterval, ContactList, ContactReport,
                                  ContactSurface)
from my_collision_pkg.srv import (
    ApplyCollisionObjects,
    CheckMotion,
    CheckTrajectory,
    CheckValidity,
    CheckValidityBatch,
    ComputeClearance,
    ExplainCollision,
    GetAllowedCollisions,
    SetAllowedCollisions,
)

ROUND_TRIP_TIMEOUT_S = 10.0
"""Upper bound for discovery plus one call on a loaded CI machine, seconds."""

CHECK_REQUEST_FIELDS = {
    'joint_names': 'sequence<string>',
    'positions': 'sequence<double>',
    'group_name': 'string',
    'pad_environment_collisions': 'boolean',
    'pad_self_collisions': 'boolean',
}


@pytest.mark.parametrize(
    ('message_type', 'expected_fields'),
    [
        pytest.param(Contact, {
            'type': 'uint8',
            'link_names': 'string[2]',
            'body_types': 'uint8[2]',
            'shape_ids': 'int32[2]',
            'subshape_ids': 'int32[2]',
            'position': 'geometry_msgs/Point',
            'nearest_points': 'geometry_msgs/Point[2]',
            'nearest_points_local': 'geometry_msgs/Point[2]',
            'normal': 'geometry_msgs/Vector3',
            'distance': 'double',
            'penetration_depth': 'double',
            'single_contact_point': 'boolean',
            'depth_rule': 'string',
            'depth_is_fallback': 'boolean',
            'transforms': 'geometry_msgs/Pose[2]',
            'cc_time': 'double[2]',
            'cc_type': 'uint8[2]',
            'cc_transforms': 'geometry_msgs/Pose[2]',
        }, id='Contact'),
        pytest.param(ContactInterval, {
            'activation_time': 'double',
            'deactivation_time': 'double',
            'contact': 'my_collision_pkg/Contact',
        }, id='ContactInterval'),
        pytest.param(ContactList, {
            'link_names': 'string[2]',
            'body_types': 'uint8[2]',
            'intervals': 'sequence<my_collision_pkg/ContactInterval>',
        }, id='ContactList'),
        pytest.param(CheckMotion.Request, {
            'joint_names': 'sequence<string>',
            'start': 'sequence<double>',
            'goal': 'sequence<double>',
            'group_name': 'string',
            'pad_environment_collisions': 'boolean',
            'pad_self_collisions': 'boolean',
            'mode': 'uint8',
            'max_step': 'double',
            'contact_distance': 'double',
            'max_contacts': 'uint32',
        }, id='CheckMotion.Request'),
        pytest.param(CheckMotion.Response, {
            'valid': 'boolean',
            'status': 'uint8',
            'message': 'string',
            'cc_time': 'double',
            'contacts': 'sequence<my_collision_pkg/Contact>',
            'state': 'sensor_msgs/JointState',
        }, id='CheckMotion.Response'),
        pytest.param(CheckTrajectory.Request, {
            'trajectory': 'trajectory_msgs/JointTrajectory',
            'group_name': 'string',
            'pad_environment_collisions': 'boolean',
            'pad_self_collisions': 'boolean',
            'mode': 'uint8',
            'max_step': 'double',
            'stop_at_first_contact': 'boolean',
        }, id='CheckTrajectory.Request'),
        pytest.param(CheckTrajectory.Response, {
            'valid': 'boolean',
            'status': 'uint8',
            'message': 'string',
            'first_invalid_time': 'double',
            'first_invalid_segment': 'int32',
            'contact_lists': 'sequence<my_collision_pkg/ContactList>',
        }, id='CheckTrajectory.Response'),
        pytest.param(ComputeClearance.Request, {
            'joint_names': 'sequence<string>',
            'positions': 'sequence<double>',
            'group_name': 'string',
            'influence_distance': 'double',
            'max_rows_per_configuration': 'uint32',
            'compute_jacobians': 'boolean',
            'pad_environment_collisions': 'boolean',
            'pad_self_collisions': 'boolean',
        }, id='ComputeClearance.Request'),
        pytest.param(ComputeClearance.Response, {
            'status': 'uint8',
            'message': 'string',
            'jacobian_joint_names': 'sequence<string>',
            'configuration_index': 'sequence<uint32>',
            'body_names': 'sequence<string>',
            'body_types': 'sequence<uint8>',
            'shape_ids': 'sequence<int32>',
            'subshape_ids': 'sequence<int32>',
            'distance': 'sequence<double>',
            'points': 'sequence<geometry_msgs/Point>',
            'points_local': 'sequence<geometry_msgs/Point>',
            'normals': 'sequence<geometry_msgs/Vector3>',
            'jacobian': 'sequence<double>',
            'smooth': 'sequence<boolean>',
        }, id='ComputeClearance.Response'),
        pytest.param(Clearance, {
            'header': 'std_msgs/Header',
            'influence_distance': 'double',
            'found': 'boolean',
            'distance': 'double',
            'body_names': 'sequence<string>',
            'body_types': 'sequence<uint8>',
            'points': 'sequence<geometry_msgs/Point>',
            'normal': 'geometry_msgs/Vector3',
            'joint_names': 'sequence<string>',
            'jacobian': 'sequence<double>',
            'smooth': 'boolean',
        }, id='Clearance'),
        pytest.param(SetAllowedCollisions.Request, {
            'entries': 'sequence<my_collision_pkg/AllowedCollisionEntry>',
            'defaults': 'sequence<my_collision_pkg/AllowedCollisionDefault>',
            'replace': 'boolean',
        }, id='SetAllowedCollisions.Request'),
        pytest.param(SetAllowedCollisions.Response, {
            'success': 'boolean',
            'message': 'string',
        }, id='SetAllowedCollisions.Response'),
        pytest.param(GetAllowedCollisions.Request, {
            'names': 'sequence<string>',
        }, id='GetAllowedCollisions.Request'),
        pytest.param(GetAllowedCollisions.Response, {
            'success': 'boolean',
            'message': 'string',
            'names': 'sequence<string>',
            'allowed': 'sequence<boolean>',
            'entries': 'sequence<my_collision_pkg/AllowedCollisionEntry>',
            'defaults': 'sequence<my_collision_pkg/AllowedCollisionDefault>',
        }, id='GetAllowedCollisions.Response'),
        pytest.param(AllowedCollisionEntry, {
            'name_1': 'string',
            'name_2': 'string',
            'allowed': 'boolean',
        }, id='AllowedCollisionEntry'),
        pytest.param(AllowedCollisionDefault, {
            'name': 'string',
            'allowed': 'boolean',
        }, id='AllowedCollisionDefault'),
        pytest.param(ContactSurface, {
            'body_names': 'string[2]',
            'shape_ids': 'int32[2]',
            'body_types': 'uint8[2]',
            'centroid': 'geometry_msgs/Point',
            'force': 'geometry_msgs/Vector3',
            'moment': 'geometry_msgs/Vector3',
            'vertices': 'sequence<geometry_msgs/Point>',
            'pressure': 'sequence<double>',
            'triangles': 'sequence<uint32>',
            'area': 'double',
        }, id='ContactSurface'),
        pytest.param(ContactReport, {
            'header': 'std_msgs/Header',
            'state': 'sensor_msgs/JointState',
            'valid': 'boolean',
            'contacts': 'sequence<my_collision_pkg/Contact>',
            'surfaces': 'sequence<my_collision_pkg/ContactSurface>',
        }, id='ContactReport'),
        pytest.param(CollisionObject, {
            'header': 'std_msgs/Header',
            'pose': 'geometry_msgs/Pose',
            'id': 'string',
            'primitives': 'sequence<shape_msgs/SolidPrimitive>',
            'primitive_poses': 'sequence<geometry_msgs/Pose>',
            'meshes': 'sequence<shape_msgs/Mesh>',
            'mesh_poses': 'sequence<geometry_msgs/Pose>',
            'operation': 'octet',
            'touch_links': 'sequence<string>',
        }, id='CollisionObject'),
        pytest.param(CheckValidity.Request, CHECK_REQUEST_FIELDS, id='CheckValidity.Request'),
        pytest.param(CheckValidity.Response, {
            'valid': 'boolean', 'status': 'uint8', 'message': 'string',
        }, id='CheckValidity.Response'),
        pytest.param(CheckValidityBatch.Request, CHECK_REQUEST_FIELDS,
                     id='CheckValidityBatch.Request'),
        pytest.param(CheckValidityBatch.Response, {
            'valid': 'sequence<boolean>', 'status': 'uint8', 'message': 'string',
        }, id='CheckValidityBatch.Response'),
        pytest.param(ExplainCollision.Request, {
            **CHECK_REQUEST_FIELDS,
            'contact_distance': 'double',
            'max_contacts': 'uint32',
            'compute_surfaces': 'boolean',
        }, id='ExplainCollision.Request'),
        pytest.param(ExplainCollision.Response, {
            'valid': 'boolean',
            'status': 'uint8',
            'message': 'string',
            'colliding_links': 'sequence<string>',
            'contacts': 'sequence<my_collision_pkg/Contact>',
            'surfaces': 'sequence<my_collision_pkg/ContactSurface>',
            'state': 'sensor_msgs/JointState',
        }, id='ExplainCollision.Response'),
        pytest.param(ApplyCollisionObjects.Request, {
            'objects': 'sequence<my_collision_pkg/CollisionObject>',
        }, id='ApplyCollisionObjects.Request'),
        pytest.param(ApplyCollisionObjects.Response, {
            'success': 'boolean', 'message': 'string',
        }, id='ApplyCollisionObjects.Response'),
    ],
)
def test_fields_are_the_public_contract(message_type, expected_fields):
    assert message_type.get_fields_and_field_types() == expected_fields


def test_contact_constants_and_fixed_size_pairs():
    assert (Contact.SELF, Contact.ENVIRONMENT) == (0, 1)
    assert (Contact.CC_NONE, Contact.CC_TIME0, Contact.CC_TIME1, Contact.CC_BETWEEN) == (0, 1, 2, 3)
    assert (CheckMotion.Request.CERTIFIED, CheckMotion.Request.DISCRETE) == (0, 1)
    assert (CheckTrajectory.Request.CERTIFIED, CheckTrajectory.Request.DISCRETE) == (0, 1)
    assert CheckTrajectory.Request().stop_at_first_contact is True
    assert CheckMotion.Request().pad_environment_collisions is True
    assert list(Contact().cc_time) == [-1.0, -1.0]
    assert (Contact.ROBOT_LINK, Contact.WORLD_OBJECT, Contact.ROBOT_ATTACHED) == (0, 1, 2)

    contact = Contact()
    assert list(contact.link_names) == ['', '']
    assert len(contact.body_types) == 2
    assert len(contact.shape_ids) == 2
    assert list(contact.subshape_ids) == [-1, -1], 'no sub-shape unless one is set'
    assert len(contact.nearest_points) == 2
    assert len(contact.nearest_points_local) == 2
    assert contact.distance == 0.0
    assert contact.single_contact_point is False
    assert contact.depth_rule == 'mtd' and contact.depth_is_fallback is False
    assert ComputeClearance.Request().compute_jacobians is True
    assert ComputeClearance.Request().pad_environment_collisions is True
    assert ComputeClearance.Request().pad_self_collisions is False
    assert (ComputeClearance.Response.VALID, ComputeClearance.Response.OUT_OF_BOUNDS,
            ComputeClearance.Response.INVALID_REQUEST) == (0, 2, 3)


def test_contact_pairs_refuse_a_third_element():
    contact = Contact(check_fields=True)
    with pytest.raises(AssertionError):
        contact.link_names = ['a', 'b', 'c']


def test_collision_object_operations_are_moveit_bytes():
    assert CollisionObject.ADD == b'\x00'
    assert CollisionObject.REMOVE == b'\x01'
    assert CollisionObject.MOVE == b'\x03'
    assert CollisionObject().operation == CollisionObject.ADD

    checked = CollisionObject(check_fields=True)
    checked.operation = CollisionObject.REMOVE
    with pytest.raises(AssertionError):
        checked.operation = 1  # a byte field takes bytes, not an int


@pytest.mark.parametrize('response_type', [
    CheckValidity.Response, CheckValidityBatch.Response, ExplainCollision.Response,
])
def test_status_constants_are_shared(response_type):
    assert response_type.VALID == 0
    assert response_type.IN_COLLISION == 1
    assert response_type.OUT_OF_BOUNDS == 2
    assert response_type.INVALID_REQUEST == 3


@pytest.mark.parametrize('request_type', [
    CheckValidity.Request, CheckValidityBatch.Request, ExplainCollision.Request,
])
def test_padding_defaults(request_type):
    request = request_type()
    assert request.pad_environment_collisions is True
    assert request.pad_self_collisions is False
    assert request.group_name == ''


def test_explain_defaults():
    request = ExplainCollision.Request()
    assert request.contact_distance == 0.0
    assert request.max_contacts == 0
    assert request.compute_surfaces is False


# --- over DDS ------------------------------------------------------------------------

@pytest.fixture
def context() -> Iterator[Context]:
    """An rclpy context of this test's own, shut down afterwards."""
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        yield ctx
    finally:
        rclpy.try_shutdown(context=ctx)


@pytest.fixture
def executor(context: Context) -> Iterator[SingleThreadedExecutor]:
    exe = SingleThreadedExecutor(context=context)
    try:
        yield exe
    finally:
        exe.shutdown()


@pytest.fixture
def make_node(context: Context, executor: SingleThreadedExecutor):
    """Create nodes with unique names in the test's context; destroy them afterwards."""
    nodes: list[Node] = []
    suffix = uuid.uuid4().hex[:8]

    def make(name: str) -> Node:
        node = Node(f'{name}_{suffix}', context=context)
        executor.add_node(node)
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        executor.remove_node(node)
        node.destroy_node()


def _explain_echo(request: ExplainCollision.Request,
                  response: ExplainCollision.Response) -> ExplainCollision.Response:
    """Answer with fields derived from the request, so the client can check both ways."""
    response.valid = False
    response.status = ExplainCollision.Response.IN_COLLISION
    response.message = f'{len(request.joint_names)} joints, group {request.group_name!r}'
    response.colliding_links = ['panda_link7', 'table']

    contact = Contact()
    contact.type = Contact.ENVIRONMENT
    contact.link_names = ['panda_link7', 'table']
    contact.body_types = [Contact.ROBOT_LINK, Contact.WORLD_OBJECT]
    contact.shape_ids = [0, 2]
    contact.subshape_ids = [-1, 17]
    contact.position = Point(x=0.5, y=-0.25, z=0.125)
    contact.nearest_points = [Point(x=0.5, y=-0.25, z=0.12), Point(x=0.5, y=-0.25, z=0.13)]
    contact.nearest_points_local = [Point(z=0.05), Point(x=-0.1)]
    contact.normal = Vector3(z=1.0)
    contact.distance = -request.contact_distance
    contact.penetration_depth = request.contact_distance
    contact.single_contact_point = request.compute_surfaces
    response.contacts = [contact] * min(request.max_contacts, 3)

    if request.compute_surfaces:
        surface = ContactSurface()
        surface.body_names = ['panda_link7', 'table']
        surface.shape_ids = [0, 2]
        surface.body_types = [Contact.ROBOT_LINK, Contact.WORLD_OBJECT]
        surface.centroid = Point(x=0.5, y=-0.25, z=0.125)
        surface.force = Vector3(z=-12.5)
        surface.moment = Vector3(x=0.001)
        surface.vertices = [Point(x=0.0), Point(x=0.01), Point(y=0.01)]
        surface.pressure = [1.0e5, 2.0e5, 3.0e5]
        surface.triangles = [0, 1, 2]
        surface.area = 5.0e-5
        response.surfaces = [surface]

    response.state = JointState(name=list(request.joint_names),
                                position=list(request.positions))
    return response


def test_explain_round_trip_over_dds(make_node, executor):
    server = make_node('interfaces_test_server')
    server.create_service(ExplainCollision, '~/explain', _explain_echo)
    client_node = make_node('interfaces_test_client')
    client = client_node.create_client(
        ExplainCollision, f'{server.get_fully_qualified_name()}/explain')
    assert client.wait_for_service(timeout_sec=ROUND_TRIP_TIMEOUT_S), 'service never appeared'

    request = ExplainCollision.Request()
    request.joint_names = ['panda_joint1', 'panda_joint2']
    request.positions = [0.25, -math.pi / 3]
    request.group_name = 'panda_arm'
    request.contact_distance = 0.02
    request.max_contacts = 2
    request.compute_surfaces = True

    future = client.call_async(request)
    executor.spin_until_future_complete(future, timeout_sec=ROUND_TRIP_TIMEOUT_S)
    assert future.done(), f'no response within {ROUND_TRIP_TIMEOUT_S} s'
    response = future.result()

    assert response.valid is False
    assert response.status == ExplainCollision.Response.IN_COLLISION
    assert response.message == "2 joints, group 'panda_arm'"
    assert list(response.colliding_links) == ['panda_link7', 'table']

    assert len(response.contacts) == 2
    contact = response.contacts[0]
    assert contact.type == Contact.ENVIRONMENT
    assert list(contact.link_names) == ['panda_link7', 'table']
    assert list(contact.body_types) == [Contact.ROBOT_LINK, Contact.WORLD_OBJECT]
    assert list(contact.subshape_ids) == [-1, 17]
    assert (contact.position.x, contact.position.y, contact.position.z) == (0.5, -0.25, 0.125)
    assert contact.nearest_points[1].z == 0.13
    assert contact.nearest_points_local[1].x == -0.1
    assert contact.normal.z == 1.0
    assert contact.distance == -0.02
    assert contact.penetration_depth == 0.02
    assert contact.single_contact_point is True

    assert len(response.surfaces) == 1
    surface = response.surfaces[0]
    assert list(surface.body_names) == ['panda_link7', 'table']
    assert list(surface.pressure) == [1.0e5, 2.0e5, 3.0e5]
    assert list(surface.triangles) == [0, 1, 2]
    assert len(surface.vertices) == 3
    assert surface.force.z == -12.5
    assert surface.area == 5.0e-5

    assert list(response.state.name) == ['panda_joint1', 'panda_joint2']
    assert list(response.state.position) == [0.25, -math.pi / 3]
