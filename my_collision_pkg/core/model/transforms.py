"""Homogeneous transforms (4x4, metres, radians) used across the core.

Names follow ``T_a_b``: the pose of frame ``b`` expressed in frame ``a``, so
``T_world_link @ p_link`` gives ``p_world``.
"""
from __future__ import annotations

import numpy as np


def rpy_to_matrix(roll_rad: float, pitch_rad: float, yaw_rad: float) -> np.ndarray:
    """Rotation (3, 3) for URDF fixed-axis roll-pitch-yaw: Rz(yaw) @ Ry(pitch) @ Rx(roll)."""
    cr, sr = np.cos(roll_rad), np.sin(roll_rad)
    cp, sp = np.cos(pitch_rad), np.sin(pitch_rad)
    cy, sy = np.cos(yaw_rad), np.sin(yaw_rad)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def quaternion_to_matrix(xyzw) -> np.ndarray:
    """Rotation (3, 3) from a quaternion given as (x, y, z, w); it is normalised first.

    Raises
    ------
    ValueError
        If the quaternion has zero or non-finite norm.
    """
    q = np.asarray(xyzw, dtype=float)
    norm = np.linalg.norm(q)
    if q.shape != (4,) or not np.isfinite(norm) or norm < 1e-12:
        raise ValueError(f"orientation {list(np.ravel(q))} is not a valid quaternion (x, y, z, w)")
    x, y, z, w = q / norm
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quaternion(rotation: np.ndarray) -> np.ndarray:
    """Quaternion (x, y, z, w) of a rotation matrix (3, 3)."""
    m = np.asarray(rotation, dtype=float)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * np.sqrt(trace + 1.0)
        w, x, y, z = 0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        w, x, y, z = (m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        w, x, y, z = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        w, x, y, z = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s
    q = np.array([x, y, z, w])
    return q / np.linalg.norm(q)


def make_transform(rotation: np.ndarray | None = None, translation_m=None) -> np.ndarray:
    """A 4x4 transform from a rotation (3, 3) and a translation (3,) in metres."""
    T = np.eye(4)
    if rotation is not None:
        T[:3, :3] = rotation
    if translation_m is not None:
        T[:3, 3] = translation_m
    return T


def invert_transform(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid transform (4, 4)."""
    R = T[:3, :3]
    inv = np.eye(4)
    inv[:3, :3] = R.T
    inv[:3, 3] = -R.T @ T[:3, 3]
    return inv


def transform_points(T: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Apply a transform (4, 4) to points (..., 3)."""
    return points @ T[:3, :3].T + T[:3, 3]
