"""Start the collision validator, its contact markers, robot_state_publisher and (optionally) RViz.

    ros2 launch my_collision_pkg collision.launch.py                     # the Panda, its world
    ros2 launch my_collision_pkg collision.launch.py rviz:=true
    ros2 launch my_collision_pkg collision.launch.py urdf:=/path/robot.urdf.xacro xacro_args:='name:=ur5' \\
        srdf:=/path/robot.srdf scene:=/path/world.yaml
    ros2 launch my_collision_pkg collision.launch.py scene:=none srdf:=none
    ros2 launch my_collision_pkg collision.launch.py --show-args

The arguments, their defaults and their checks live in
``my_collision_pkg.tools.launch_arguments`` (plain Python, tested without ROS); this file
only adapts them to ``launch``. Every argument is checked, and every file read,
before any process starts: a fault ends the launch with one line and exit code 1.
When collision_validator exits, everything is shut down; the launch exits 1 if the
validator failed.

Nodes: ``collision_validator`` (services ``/collision_validator/...``, reports on
``/collision_validator/contacts``), ``contact_markers`` (MarkerArray on
``/contact_markers/markers``), ``robot_state_publisher`` (``/robot_description``
and TF for RViz; ``robot_state_publisher:=false`` leaves it out) and ``rviz2``. By
default robot_state_publisher follows the joint state of the last contact report
(``/contact_markers/joint_states``), so RViz shows the robot in the configuration
the contacts belong to; ``joint_states:=/joint_states`` follows a live robot instead.
"""
import contextlib
import os
import tempfile

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, RegisterEventHandler, Shutdown
from launch.event_handlers import OnProcessExit, OnShutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from my_collision_pkg.tools.launch_arguments import (
    ARGUMENTS, RVIZ_CONFIG_FILE, LaunchArgumentError, resolve_launch, rviz_config_text)

PACKAGE = 'my_collision_pkg'
VALIDATOR = 'collision_validator'


def _package_installed(package):
    try:
        get_package_share_directory(package)
    except PackageNotFoundError:
        return False
    return True


def _string_parameters(parameters):
    # value_type=str: a path is a string even when empty or when it looks like a number
    return {name: ParameterValue(value, value_type=str) for name, value in parameters.items()}


def _remove(path):
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _on_validator_exit(event, context):
    if context.is_shutdown:
        return None
    if event.returncode != 0:
        # An exception in an event handler makes launch shut down and exit with code 1.
        raise RuntimeError(f'{VALIDATOR} exited with code {event.returncode} (its output says why)')
    return [Shutdown(reason=f'{VALIDATOR} exited')]


def _start(context):
    """Check the arguments, then return the nodes: nothing runs before the checks pass."""
    config_dir = os.path.join(get_package_share_directory(PACKAGE), 'config')
    values = {argument.name: LaunchConfiguration(argument.name).perform(context) for argument in ARGUMENTS}
    try:
        plan = resolve_launch(values, config_dir=config_dir, package_installed=_package_installed)
    except LaunchArgumentError as exc:
        raise RuntimeError(str(exc)) from None
    actions = [LogInfo(msg=f'{PACKAGE}: {warning}') for warning in plan.warnings]
    validator = Node(
        package=PACKAGE, executable=VALIDATOR, name=VALIDATOR,
        parameters=[_string_parameters(plan.validator_parameters())],
        output='screen',
    )
    actions += [
        validator,
        RegisterEventHandler(OnProcessExit(target_action=validator, on_exit=_on_validator_exit)),
        Node(
            package=PACKAGE, executable='contact_markers', name='contact_markers',
            parameters=[{'contacts_topic': f'/{VALIDATOR}/contacts'}],
            output='screen',
        ),
    ]
    if plan.robot_state_publisher:
        actions.append(Node(
            package='robot_state_publisher', executable='robot_state_publisher', name='robot_state_publisher',
            parameters=[_string_parameters({'robot_description': plan.robot_description})],
            remappings=[('joint_states', plan.joint_states_topic)],
            output='screen',
        ))
    if plan.rviz:
        with open(os.path.join(config_dir, RVIZ_CONFIG_FILE), encoding='utf-8') as template:
            text = rviz_config_text(template.read(), plan.fixed_frame)
        handle, rviz_config = tempfile.mkstemp(prefix='contacts_', suffix='.rviz')
        with os.fdopen(handle, 'w', encoding='utf-8') as config:
            config.write(text)
        actions += [
            Node(package='rviz2', executable='rviz2', name='rviz2', arguments=['-d', rviz_config], output='screen'),
            RegisterEventHandler(OnShutdown(on_shutdown=lambda event, ctx: _remove(rviz_config))),
        ]
    return actions


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(argument.name, default_value=argument.default, description=argument.description)
         for argument in ARGUMENTS]
        + [OpaqueFunction(function=_start)])
