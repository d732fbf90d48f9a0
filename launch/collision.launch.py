"""Start the collision validator, its contact markers, robot_state_publisher and (optionally) RViz.

    ros2 launch my_collision_pkg collision.launch.py                     # the Panda, its world
    ros2 launch my_collision_pkg collision.launch.py rviz:=true
    ros2 launch my_collision_pkg collision.launch.py urdf:=/path/robot.urdf.xacro xacro_args:='name:=ur5' \\
        srdf:=/path/robot.srdf scene:=/path/world.yaml
    ros2 launch my_collision_pkg collision.launch.py scene:=none srdf:=none
    ros2 launch my_collision_pkg collision.launch.py --show-args

The arguments, their defaults and their checks live in
``my_collision_pkg.tools.launch_arguments`` (plain Python, tested without ROS); this file
only adapts them to ``launch``. Every argument is checked, and every file read
(URDF, SRDF, world, the collision meshes), before any process starts: a fault ends
the launch with one line and exit code 1; an argument name this file does not
declare is a fault too. The checks run in a thread: Ctrl-C during them ends the
launch at once.
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
import asyncio
import contextlib
import os
import tempfile
import threading

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, GroupAction, LogInfo, OpaqueCoroutine, OpaqueFunction,
                            RegisterEventHandler, Shutdown)
from launch.event_handlers import OnExecutionComplete, OnProcessExit, OnShutdown
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from my_collision_pkg.tools.launch_arguments import (
    ARGUMENTS, RVIZ_CONFIG_FILE, LaunchArgumentError, resolve_launch_configurations, rviz_config_text)

PACKAGE = 'my_collision_pkg'
VALIDATOR = 'collision_validator'


def _package_installed(package):
    try:
        get_package_share_directory(package)
    except PackageNotFoundError:
        return False
    return True


def _package_share(package):
    """The ament lookup for ``package://`` meshes (None for a package that is not installed)."""
    try:
        return get_package_share_directory(package)
    except (PackageNotFoundError, ValueError, LookupError, OSError):
        return None


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


class _Checks:
    """The checks of the arguments, run in a thread so that launch's event loop (and Ctrl-C) never waits.

    The files (URDF, xacro, SRDF, world, meshes) are read off the loop; a coroutine
    awaits the result. Ctrl-C during the checks cancels the coroutine and the launch
    ends at once: the thread is a daemon, nothing waits for it, no node was started.
    """

    def __init__(self, configurations):
        # launch_configurations as they are where this file is included (a GroupAction's
        # scope is gone by the time the checks end): the nodes are started within them again.
        self.configurations = configurations
        self.config_dir = os.path.join(get_package_share_directory(PACKAGE), 'config')
        self.plan = None
        self.rviz_text = None

    def _work(self):
        """``(plan, rviz config text or None)``; runs in the thread."""
        context = _Configurations(self.configurations)
        plan = resolve_launch_configurations(context, config_dir=self.config_dir,
                                             package_installed=_package_installed,
                                             find_package_share=_package_share)
        rviz_text = None
        if plan.rviz:
            with open(os.path.join(self.config_dir, RVIZ_CONFIG_FILE), encoding='utf-8') as template:
                rviz_text = rviz_config_text(template.read(), plan.fixed_frame)
        return plan, rviz_text

    async def run(self):
        loop = asyncio.get_running_loop()
        answer = loop.create_future()

        def settle(result, error):
            if not answer.done():
                answer.set_exception(error) if error is not None else answer.set_result(result)

        def work():
            try:
                result, error = self._work(), None
            except BaseException as exc:  # handed to the loop: a fault or a bug, both end the launch
                result, error = None, exc
            with contextlib.suppress(RuntimeError):      # the loop is closed: the launch has ended
                loop.call_soon_threadsafe(settle, result, error)

        threading.Thread(target=work, name=f'{PACKAGE} launch checks', daemon=True).start()
        try:
            self.plan, self.rviz_text = await answer
        except asyncio.CancelledError:
            return          # shutdown (Ctrl-C) during the checks: end quietly, start nothing
        except LaunchArgumentError as exc:
            # one line: launch logs "Caught exception in launch (see debug for traceback): <line>", exit 1
            raise RuntimeError(str(exc)) from None

    def start_nodes(self, event, context):
        """The nodes, once the checks passed (nothing if they failed or the launch is shutting down)."""
        if self.plan is None or context.is_shutdown:
            return None
        # Within a scope, the configurations (any value: ros_remaps and global_params are lists) as they were
        # when this file was included: a PushRosNamespace, SetParameter or SetRemap around it applies.
        restore = OpaqueFunction(function=lambda scope: scope.launch_configurations.update(self.configurations))
        return [GroupAction([restore, *_nodes(self.plan, self.rviz_text)], scoped=True, forwarding=True)]


class _Configurations:
    """What resolve_launch_configurations reads of a launch context: a snapshot of its configurations."""

    def __init__(self, launch_configurations):
        self.launch_configurations = launch_configurations


def _nodes(plan, rviz_text):
    """The actions that start the nodes of a checked plan."""
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
            # relative: inside a namespaced group it resolves to the validator's topic there
            parameters=[{'contacts_topic': f'{VALIDATOR}/contacts'}],
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
        handle, rviz_config = tempfile.mkstemp(prefix='contacts_', suffix='.rviz')
        with os.fdopen(handle, 'w', encoding='utf-8') as config:
            config.write(rviz_text)
        actions += [
            Node(package='rviz2', executable='rviz2', name='rviz2', arguments=['-d', rviz_config], output='screen'),
            RegisterEventHandler(OnShutdown(on_shutdown=lambda event, ctx: _remove(rviz_config))),
        ]
    return actions


def _start(context):
    """Start the checks of the arguments; the nodes are started only when they pass.

    ``context.launch_configurations`` holds every ``name:=value`` given to this file
    (declared or not): a name this file does not declare is refused, by name.
    """
    checks = _Checks(dict(context.launch_configurations))
    run = OpaqueCoroutine(coroutine=checks.run, ignore_context=True)
    return [RegisterEventHandler(OnExecutionComplete(target_action=run, on_completion=checks.start_nodes)), run]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(argument.name, default_value=argument.default, description=argument.description)
         for argument in ARGUMENTS]
        + [OpaqueFunction(function=_start)])
