"""Start the collision validator, its contact markers and (optionally) RViz.

    ros2 launch my_collision_pkg collision.launch.py                     # the Panda, default world
    ros2 launch my_collision_pkg collision.launch.py rviz:=true
    ros2 launch my_collision_pkg collision.launch.py urdf:=/path/robot.urdf srdf:=/path/robot.srdf scene:=''

Nodes: ``collision_validator`` (services ``/collision_validator/...``, reports on
``/collision_validator/contacts``), ``contact_markers`` (MarkerArray on
``/contact_markers/markers``) and ``robot_state_publisher`` (``/robot_description``
and TF for RViz). By default robot_state_publisher reads the joint state of the
last contact report (``/contact_markers/joint_states``), so RViz shows the robot in
the configuration the contacts belong to; ``joint_states:=/joint_states`` follows
a live robot instead.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'my_collision_pkg'
PANDA_DESCRIPTION = ['robots', 'panda_description']


def _robot_state_publisher(context):
    """robot_state_publisher needs the URDF's contents, so the file is read at launch time."""
    urdf_path = LaunchConfiguration('urdf').perform(context)
    try:
        with open(urdf_path, encoding='utf-8') as urdf_file:
            robot_description = urdf_file.read()
    except OSError as exc:
        raise RuntimeError(f"urdf:='{urdf_path}' cannot be read: {exc.strerror}") from exc
    return [Node(
        package='robot_state_publisher',
        executable='robot_state_publisher',
        name='robot_state_publisher',
        parameters=[{'robot_description': robot_description}],
        remappings=[('joint_states', LaunchConfiguration('joint_states'))],
        output='screen',
    )]


def generate_launch_description():
    panda = PathJoinSubstitution([FindPackageShare('example-robot-data')] + PANDA_DESCRIPTION)
    arguments = [
        DeclareLaunchArgument(
            'urdf', default_value=PathJoinSubstitution([panda, 'urdf', 'panda.urdf']),
            description='URDF file of the robot (default: the Franka Panda from example-robot-data)'),
        DeclareLaunchArgument(
            'srdf', default_value=PathJoinSubstitution([panda, 'srdf', 'panda.srdf']),
            description="SRDF file (groups, disabled collision pairs); '' for none"),
        DeclareLaunchArgument(
            'scene', default_value=PathJoinSubstitution([FindPackageShare(PACKAGE), 'config', 'panda_world.yaml']),
            description="world YAML loaded at start-up (default: a table and a post for the Panda); '' for none"),
        DeclareLaunchArgument(
            'rviz', default_value='false', description='also start RViz with config/contacts.rviz'),
        DeclareLaunchArgument(
            'joint_states', default_value='/contact_markers/joint_states',
            description='joint states robot_state_publisher follows (default: the last contact report)'),
    ]
    validator = Node(
        package=PACKAGE,
        executable='collision_validator',
        name='collision_validator',
        # value_type=str: a path is a string even when empty or when it looks like a number
        parameters=[{
            'urdf_path': ParameterValue(LaunchConfiguration('urdf'), value_type=str),
            'srdf_path': ParameterValue(LaunchConfiguration('srdf'), value_type=str),
            'scene_path': ParameterValue(LaunchConfiguration('scene'), value_type=str),
        }],
        output='screen',
    )
    markers = Node(
        package=PACKAGE,
        executable='contact_markers',
        name='contact_markers',
        parameters=[{'contacts_topic': '/collision_validator/contacts'}],
        output='screen',
    )
    rviz = Node(
        package='rviz2',
        executable='rviz2',
        name='rviz2',
        arguments=['-d', PathJoinSubstitution([FindPackageShare(PACKAGE), 'config', 'contacts.rviz'])],
        condition=IfCondition(LaunchConfiguration('rviz')),
        output='screen',
    )
    return LaunchDescription(arguments + [validator, markers, OpaqueFunction(function=_robot_state_publisher),
                                          rviz])
