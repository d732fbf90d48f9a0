"""The drawing policy the RViz markers (``ros/markers.py``) and the PNG pictures (``viz/render.py``) share.

- Pressure -> colour: the one colormap of contact surfaces, a piecewise-linear map
  through a few stops, from dark blue (no pressure) through cyan, green, yellow and
  orange to dark red (the highest pressure drawn).
- The length of a contact's normal arrow (:func:`arrow_length_m`), with each
  picture's own shortest arrow.
- Millimetres in labels (``MM_PER_M``) and reading a point of either kind (a message's
  ``x, y, z`` or an array) as floats (:func:`point_xyz`).

numpy only, on purpose: the marker node must not pull in matplotlib for it.
"""
from __future__ import annotations

import numpy as np

PRESSURE_COLOR_STOPS_RGB = np.array([
    [0.19, 0.07, 0.55],
    [0.12, 0.47, 0.95],
    [0.10, 0.80, 0.75],
    [0.45, 0.92, 0.25],
    [0.98, 0.85, 0.15],
    [0.98, 0.45, 0.10],
    [0.70, 0.05, 0.05],
])


def pressure_colormap(fraction) -> np.ndarray:
    """RGB (N, 3) in [0, 1] for pressure fractions (N,) (0: lowest, 1: highest; clipped, NaN as 0)."""
    stops = PRESSURE_COLOR_STOPS_RGB
    t = np.nan_to_num(np.asarray(fraction, dtype=float).ravel(), nan=0.0)
    t = np.clip(t, 0.0, 1.0) * (len(stops) - 1)
    low = np.minimum(np.floor(t).astype(int), len(stops) - 2)
    w = (t - low)[:, None]
    return (1.0 - w) * stops[low] + w * stops[low + 1]


def pressure_fractions(pressure_pa, pressure_max_pa: float) -> np.ndarray:
    """Pressures (pascals) as fractions of ``pressure_max_pa``; all 0 when that is not positive."""
    pressure = np.asarray(pressure_pa, dtype=float).ravel()
    if not pressure_max_pa > 0:
        return np.zeros(len(pressure))
    return pressure / float(pressure_max_pa)


# ----- arrows along contact normals ------------------------------------------------------------
# Arrow length = clip(min_length_m + length_per_depth * penetration depth, min_length_m, max_length_m).
ARROW_MAX_LENGTH_M = 0.25
ARROW_LENGTH_PER_DEPTH = 4.0            # metres of arrow per metre of penetration
# The shortest arrow (at zero depth) differs by picture: RViz markers sit in a live 3D view,
# the PNG is seen from afar.
MARKER_ARROW_MIN_LENGTH_M = 0.05
PNG_ARROW_MIN_LENGTH_M = 0.06


def arrow_length_m(penetration_depth_m: float, *, min_length_m: float,
                   max_length_m: float = ARROW_MAX_LENGTH_M,
                   length_per_depth: float = ARROW_LENGTH_PER_DEPTH) -> float:
    """Length (metres) of a contact's normal arrow: grows linearly with the penetration depth, bounded.

    Parameters
    ----------
    penetration_depth_m : float
        Depth of the contact, metres; a negative one (a near miss) counts as 0.
    min_length_m : float
        Length at zero depth (each picture names its own: ``MARKER_ARROW_MIN_LENGTH_M``,
        ``PNG_ARROW_MIN_LENGTH_M``).
    max_length_m : float
        Longest arrow.
    length_per_depth : float
        Extra arrow length per metre of penetration (m/m).
    """
    raw = min_length_m + length_per_depth * max(0.0, float(penetration_depth_m))
    return float(min(max(raw, min_length_m), max_length_m))


# ----- labels and points -----------------------------------------------------------------------
MM_PER_M = 1000.0                       # labels and titles give depths and distances in millimetres


def point_xyz(p) -> np.ndarray:
    """A point (3,) as floats, from anything with ``x, y, z`` (a geometry message) or a 3-sequence."""
    if hasattr(p, "x"):
        return np.array([p.x, p.y, p.z], dtype=float)
    return np.asarray(p, dtype=float).reshape(3)
