"""Pressure -> colour: the one colormap of contact surfaces, in RViz markers and PNG pictures.

A piecewise-linear map through a few stops, from dark blue (no pressure) through
cyan, green, yellow and orange to dark red (the highest pressure drawn). Small on
purpose: the marker node must not pull in matplotlib for it.
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
