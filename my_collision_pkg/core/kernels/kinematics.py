"""Compiled kinematics (numba): forward kinematics and the shape poses it gives.

Each kernel works on a batch of N configurations so the single and the batch
predicate share one code path. Arrays are float64, transforms are 4x4 and
``T_world_x`` names the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import JOINT_REVOLUTE


@njit(cache=True, fastmath=False)
def forward_kinematics(positions, mimic_matrix, mimic_offset, joint_kind, joint_axis,
                       link_parent, T_parent_origin, link_joint, T_world_link):
    """Fill T_world_link (N, L, 4, 4) for active positions (N, A).

    ``link_parent[k]`` is the parent index of link k (-1 for the root),
    ``T_parent_origin[k]`` the fixed joint origin, ``link_joint[k]`` the movable
    joint index moving link k (-1 for a held joint).
    """
    n_cfg = positions.shape[0]
    n_mov = mimic_matrix.shape[0]
    n_act = mimic_matrix.shape[1]
    n_links = link_parent.shape[0]
    values = np.empty(n_mov)
    motion = np.empty((4, 4))
    local = np.empty((4, 4))
    for c in range(n_cfg):
        for m in range(n_mov):
            v = mimic_offset[m]
            for a in range(n_act):
                v += mimic_matrix[m, a] * positions[c, a]
            values[m] = v
        for k in range(n_links):
            p = link_parent[k]
            j = link_joint[k]
            if j >= 0:
                for r in range(4):
                    for s in range(4):
                        motion[r, s] = 1.0 if r == s else 0.0
                x, y, z = joint_axis[j, 0], joint_axis[j, 1], joint_axis[j, 2]
                if joint_kind[j] == JOINT_REVOLUTE:
                    sn = np.sin(values[j])
                    cs = np.cos(values[j])
                    t = 1.0 - cs
                    motion[0, 0] = t * x * x + cs
                    motion[0, 1] = t * x * y - sn * z
                    motion[0, 2] = t * x * z + sn * y
                    motion[1, 0] = t * x * y + sn * z
                    motion[1, 1] = t * y * y + cs
                    motion[1, 2] = t * y * z - sn * x
                    motion[2, 0] = t * x * z - sn * y
                    motion[2, 1] = t * y * z + sn * x
                    motion[2, 2] = t * z * z + cs
                else:
                    motion[0, 3] = values[j] * x
                    motion[1, 3] = values[j] * y
                    motion[2, 3] = values[j] * z
                for r in range(4):
                    for s in range(4):
                        acc = 0.0
                        for q in range(4):
                            acc += T_parent_origin[k, r, q] * motion[q, s]
                        local[r, s] = acc
            else:
                for r in range(4):
                    for s in range(4):
                        local[r, s] = T_parent_origin[k, r, s]
            if p < 0:
                for r in range(4):
                    for s in range(4):
                        T_world_link[c, k, r, s] = local[r, s]
            else:
                for r in range(4):
                    for s in range(4):
                        acc = 0.0
                        for q in range(4):
                            acc += T_world_link[c, p, r, q] * local[q, s]
                        T_world_link[c, k, r, s] = acc


@njit(cache=True)
def shape_poses(T_world_link, shape_link, T_frame_shape, T_world_shape):
    """Fill T_world_shape (N, S, 4, 4); shapes with ``shape_link < 0`` are world-fixed."""
    n_cfg = T_world_link.shape[0]
    for c in range(n_cfg):
        for s in range(shape_link.shape[0]):
            k = shape_link[s]
            if k < 0:
                for r in range(4):
                    for q in range(4):
                        T_world_shape[c, s, r, q] = T_frame_shape[s, r, q]
            else:
                for r in range(4):
                    for q in range(4):
                        acc = 0.0
                        for u in range(4):
                            acc += T_world_link[c, k, r, u] * T_frame_shape[s, u, q]
                        T_world_shape[c, s, r, q] = acc
