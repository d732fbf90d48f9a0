"""Where a trajectory's contact intervals happen: the swept path of each interval's touching point.

For an interval ``[activation, deactivation)`` of a :class:`contact_list.ContactList`,
the deepest contact names a point on a robot link (its witness point in the link
frame, ``nearest_points_local``). Following that material point through the
interval (forward kinematics at the trajectory's joint-linear interpolation) shows
which way the link swept through the obstacle: the path it drew while touching.
ROS-free; the markers (markers.py) draw the paths as LINE_STRIPs.
"""
from __future__ import annotations

import numpy as np

from my_collision_pkg.core.checks.contact_list import ContactList, seconds_from_ns
from my_collision_pkg.core.checks.results import BodyType

DEFAULT_SWEEP_SAMPLES = 24


def trajectory_positions_at(points: np.ndarray, times_s: np.ndarray, query_s: np.ndarray) -> np.ndarray:
    """Joint-linear interpolation (Q, K) of waypoints ``points`` (W, K) at ``times_s`` (W,), clamped at the ends."""
    points = np.asarray(points, dtype=float)
    times_s = np.asarray(times_s, dtype=float)
    query_s = np.atleast_1d(np.asarray(query_s, dtype=float))
    return np.stack([np.interp(query_s, times_s, points[:, k]) for k in range(points.shape[1])], axis=1)


def interval_sweeps(checker, joint_names, points, times_s, contact_lists: tuple[ContactList, ...] | list,
                    samples: int = DEFAULT_SWEEP_SAMPLES) -> list[list[np.ndarray | None]]:
    """Per contact list, per interval, the world path (S, 3) in metres of the touching point of a robot link.

    The point is the deepest contact's witness point on body 0 if it is a robot
    link, else on body 1 if that is one; ``None`` for an interval without a
    contact or whose bodies are no robot links (attached object against a world
    object). Joints not in ``joint_names`` keep the scene's current values.
    """
    robot = checker.scene.robot
    out: list[list[np.ndarray | None]] = []
    for contact_list in contact_lists:
        paths: list[np.ndarray | None] = []
        for interval in contact_list:
            contact = interval.contact
            side = next((i for i in (0, 1) if contact is not None
                         and contact.body_types[i] == BodyType.ROBOT_LINK
                         and robot.has_link(contact.link_names[i])), None)
            if side is None:
                paths.append(None)
                continue
            query_s = np.linspace(seconds_from_ns(interval.activation_ns),
                                  seconds_from_ns(interval.deactivation_ns), samples)
            full = checker.full_configurations(joint_names, trajectory_positions_at(points, times_s, query_s))
            T_world_link = robot.link_transforms_batch(full)[:, robot.link_index(contact.link_names[side])]
            local = np.append(np.asarray(contact.nearest_points_local[side], dtype=float), 1.0)
            paths.append((T_world_link @ local)[:, :3])
        out.append(paths)
    return out
