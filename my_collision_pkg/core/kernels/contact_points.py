"""A contact's points from its witness point, normal and signed distance, in one compiled call (numba).

:func:`contact_points` gives the point on body 1 (``p1 = p0 + distance * normal``), the midpoint
and both witness points in their owners' frames (``p @ R + t`` with ``R``, ``t`` the rotation
transposed and the translation of the world in the owner's frame: the very products
``contact_builder.ContactBuilder`` computed with numpy, summed in the same order).
Metres, (3,) float64 arrays.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def contact_points(p0, normal, distance, R_a, t_a, R_b, t_b, out):
    """Write to ``out`` (4, 3): ``p1``, the midpoint ``(p0 + p1) / 2``, ``p0 @ R_a + t_a`` and ``p1 @ R_b + t_b``.

    ``p0`` (3,) the witness point on body 0 (planning frame), ``normal`` (3,) unit from body 0 to body 1,
    ``distance`` the signed distance (metres); ``R_x`` (3, 3) and ``t_x`` (3,) map a planning-frame point
    into the frame of body x's owner as ``p @ R_x + t_x``.
    """
    for k in range(3):
        out[0, k] = p0[k] + distance * normal[k]
    for k in range(3):
        out[1, k] = 0.5 * (p0[k] + out[0, k])
    for k in range(3):
        out[2, k] = (p0[0] * R_a[0, k] + p0[1] * R_a[1, k] + p0[2] * R_a[2, k]) + t_a[k]
        out[3, k] = (out[0, 0] * R_b[0, k] + out[0, 1] * R_b[1, k] + out[0, 2] * R_b[2, k]) + t_b[k]
