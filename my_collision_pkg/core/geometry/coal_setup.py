"""coal, imported with its one process-wide state that changes answers pinned (issue 40).

coal 3.0's support function of a box (``getShapeSupport(const Box*, ...)`` in
src/narrowphase/support_functions.cpp) keeps a function-local ``static const`` factor,
``inflate``, that scales the box's half-sides on the negative side of every support query.
It is set once per process, by the first query: 1 + 1e-10 when that first direction has a
component exactly 0, else 1. So the first box query a process happened to make decided, for
the rest of the process, every distance with a box (GJK and EPA on box-box, hull-box and
box-cylinder pairs) in its last bits: 2.5e-11 m on the Panda's finger boxes and the table
(half-sides up to 0.5 m), and through those the witness points, normals and triangles.
Two processes that started with different calls disagreed bitwise (issue 40 measured 288
of 515 first distances of 200 Panda configurations differing). There is one such factor per
template instantiation: the support without and with the swept-sphere radius (GJK/EPA use
the first, the halfspace and plane distances the second).

Importing this module pins both at 1, the exact box, before the package makes any coal call
(every module of the package that uses coal imports it from here):

1. each instantiation's first query is made here, with a direction that has no zero
   component (a cylinder-box distance and a halfspace-box distance, the box turned by a
   rotation with no zero entry);
2. each factor is then measured (:func:`box_inflation`: a box face's distance, which is
   exact with a factor of 1);
3. where the process had queried a box before importing this package (a factor of 1 + 1e-10
   already set), the factor is written back to 1 through the symbol the library exports for
   it, and measured again. Failing that, a :class:`RuntimeWarning` says that box distances in
   this process may differ in their last bits from those of other processes, and
   :data:`BOX_SUPPORT_EXACT` is False.
"""
from __future__ import annotations

import ctypes
import os
import warnings

import coal
import numpy as np

__all__ = ["BOX_SUPPORT_EXACT", "box_inflation", "coal"]

# a rotation with no zero entry (a direction through it has no zero component)
_TURN = np.array([[0.36, 0.48, -0.8], [-0.8, 0.6, 0.0], [0.48, 0.64, 0.6]]) @ \
    np.array([[0.6, 0.0, 0.8], [0.0, 1.0, 0.0], [-0.8, 0.0, 0.6]])
# the factors' symbols in libcoal (Itanium mangling of getShapeSupport<0 or 1>(Box const*, ...)::inflate)
_SYMBOLS = tuple(f"_ZZN4coal7details15getShapeSupportILi{o}EEEvPKNS_3BoxERKN5Eigen6MatrixIdLi3ELi1ELi0ELi3ELi1EEERS7_"
                 "RiRNS0_16ShapeSupportDataEE7inflate" for o in (0, 1))


def _request() -> coal.DistanceRequest:
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    return request


def _first_queries() -> None:
    """Each box support's first query, in a direction with no zero component (sets the factors to 1
    where no box was queried before in this process)."""
    box = coal.Box(1.0, 1.0, 1.0)
    coal.distance(coal.Cylinder(0.1, 0.2), coal.Transform3s(np.eye(3), np.array([3.0, 2.0, 1.0])),
                  box, coal.Transform3s(_TURN, np.zeros(3)), _request(), coal.DistanceResult())
    coal.distance(coal.Halfspace(np.array([1.0, 0.0, 0.0]), 0.0), coal.Transform3s(),
                  box, coal.Transform3s(_TURN, np.array([3.0, 0.0, 0.0])), _request(), coal.DistanceResult())


def box_inflation() -> tuple[float, float]:
    """How far each of coal's box supports (without, with swept sphere) puts the -x face of a box of
    half-side 0.5 m beyond -0.5 m (metres): 0.0 when the factor is 1, 5e-11 when it is 1 + 1e-10.

    Measured on boxes facing each other along x (axis-aligned directions: a first query here would set
    a factor to 1 + 1e-10, so call this only after this module is imported)."""
    box = coal.Box(1.0, 1.0, 1.0)
    # GJK: box b's support towards -x (its factor); box a's towards +x is not scaled
    gjk = coal.distance(box, coal.Transform3s(), box, coal.Transform3s(np.eye(3), np.array([3.0, 0.0, 0.0])),
                        _request(), coal.DistanceResult())
    # halfspace x <= 0 and a box at x = 3: the box's support with swept sphere towards -x
    plane = coal.distance(coal.Halfspace(np.array([1.0, 0.0, 0.0]), 0.0), coal.Transform3s(),
                          box, coal.Transform3s(np.eye(3), np.array([3.0, 0.0, 0.0])), _request(),
                          coal.DistanceResult())
    return 2.0 - float(gjk), 2.5 - float(plane)


def _loaded_libcoal() -> str | None:
    """The path of the libcoal this process has loaded (None: not found)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if "/libcoal.so" in path:
                    return path
    except OSError:
        return None
    return None


def _write_factors() -> bool:
    """Set both factors to 1 through libcoal's exported symbols; False where that is not possible."""
    path = _loaded_libcoal()
    if path is None:
        return False
    try:
        library = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | os.RTLD_LOCAL)   # the loaded one
        for symbol in _SYMBOLS:
            ctypes.c_double.in_dll(library, symbol).value = 1.0
    except (OSError, ValueError):
        return False
    return True


def _pin() -> bool:
    _first_queries()
    if box_inflation() == (0.0, 0.0):
        return True
    if _write_factors() and box_inflation() == (0.0, 0.0):
        return True
    warnings.warn("coal's box support was used in this process before my_collision_pkg was imported and its "
                  f"factor could not be set back to 1 (box faces off by {box_inflation()} m): distances with a box "
                  "may differ in their last bits from those of other processes; import my_collision_pkg before "
                  "any coal call", RuntimeWarning, stacklevel=2)
    return False


BOX_SUPPORT_EXACT: bool = _pin()
