"""The frame of a point cloud: the planning frame, or a robot link posed by the package's kinematics.

There is no tf2 here. A cloud's ``frame_id`` is accepted when it is the planning frame
(the robot's root link) or one of the robot's links; a link's pose comes from
``RobotModel.link_transforms`` at the joint positions given (the current joint state,
so a camera on the wrist works). Any other frame is refused with one line naming it and
saying what to do: transform the cloud into the planning frame first (e.g. with a tf2
node, or a ``pointcloud_to_pointcloud`` / ``transform_point_cloud`` step of the camera
pipeline), or mount the camera on a link the robot description names.
"""
from __future__ import annotations

import numpy as np

from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.perception.point_cloud import PointCloudError


def frame_pose(robot: RobotModel, frame_id: str, positions: np.ndarray) -> np.ndarray:
    """Pose ``T_world_frame`` (4, 4) of a cloud's frame in the planning frame.

    Parameters
    ----------
    robot : RobotModel
    frame_id : str
        The planning frame (``robot.root_link``) or a link of the robot. A leading ``/``
        (ROS 1 style) is ignored.
    positions : (A,) array
        Active joint positions (rad or m) that pose the links.

    Raises
    ------
    PointCloudError
        For an empty or unknown frame (the message lists how to fix it).
    """
    name = str(frame_id).lstrip("/")
    if not name:
        raise PointCloudError(f"point cloud has an empty frame_id; give the planning frame '{robot.root_link}' or a "
                              f"robot link")
    if name == robot.root_link:
        return np.eye(4)
    if not robot.has_link(name):
        raise PointCloudError(f"point cloud frame '{name}' is neither the planning frame '{robot.root_link}' nor a "
                              f"link of robot '{robot.name}' (there is no tf2 here): transform the cloud into "
                              f"'{robot.root_link}' first (e.g. with tf2 in the camera pipeline), or publish it in "
                              f"the frame of the robot link the camera is mounted on")
    T_world_link = robot.link_transforms(np.asarray(positions, dtype=float))
    return T_world_link[robot.link_index(name)]


def cloud_to_planning_frame(points_frame_m: np.ndarray, frame_id: str, robot: RobotModel,
                            positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points (N, 3) given in ``frame_id`` as points in the planning frame, and that frame's pose.

    Parameters
    ----------
    points_frame_m : (N, 3) array
        Points in the cloud's frame, metres.
    frame_id, robot, positions
        As :func:`frame_pose`.

    Returns
    -------
    points_world_m : (N, 3) float64 array
        The points in the planning frame.
    T_world_frame : (4, 4) array
        The cloud frame's pose; its translation is the sensor origin when the cloud is in
        the sensor's own frame (used as the ray origin of ``accumulate``).

    Raises
    ------
    PointCloudError
        For an unknown frame, or points that are not (N, 3).
    """
    points = np.asarray(points_frame_m, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3:
        raise PointCloudError(f"points must be an (N, 3) array, not {points.shape}")
    T_world_frame = frame_pose(robot, frame_id, positions)
    if np.array_equal(T_world_frame, np.eye(4)):
        return np.ascontiguousarray(points), T_world_frame
    R, t = T_world_frame[:3, :3], T_world_frame[:3, 3]
    # column by column (no BLAS call: its threads fight numba's for the cores)
    out = t + points[:, 0:1] * R[:, 0] + points[:, 1:2] * R[:, 1] + points[:, 2:3] * R[:, 2]
    return np.ascontiguousarray(out), T_world_frame
