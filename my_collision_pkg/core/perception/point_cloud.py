"""Decoding a ``sensor_msgs/PointCloud2`` given as plain data into points (numpy only).

The cloud comes as the message's fields (no ROS types needed): ``fields`` (a list of
``(name, offset, datatype, count)`` tuples or of objects with those attributes, as
``sensor_msgs/PointField``), ``data`` (bytes), ``point_step`` and ``row_step`` (bytes),
``width`` and ``height`` (points), ``is_bigendian``. :func:`decode_point_cloud` reads the
``x``, ``y`` and ``z`` fields of every point into an (N, 3) float64 array, in the cloud's
own frame, metres; :func:`decode_point_cloud_message` does the same from any object with
those attributes (a ``PointCloud2`` message included).

Refused, with a :class:`PointCloudError` whose one line names the fault: a cloud without
an ``x``, ``y`` or ``z`` field, a field with an unknown datatype or outside the point, a
``point_step`` or ``row_step`` that does not fit the fields or the width, a ``data``
length other than ``row_step * height``, and a cloud of more than :data:`MAX_CLOUD_POINTS`
points. Points with a NaN or infinite coordinate (a depth camera's "no return") are
dropped and counted; so are points farther than ``max_range_m`` from the sensor origin.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from my_collision_pkg.core.errors import RequestError

# sensor_msgs/PointField datatypes and the numpy type of each (little-endian form)
INT8, UINT8, INT16, UINT16, INT32, UINT32, FLOAT32, FLOAT64 = 1, 2, 3, 4, 5, 6, 7, 8
POINT_FIELD_TYPES = {INT8: "i1", UINT8: "u1", INT16: "i2", UINT16: "u2", INT32: "i4", UINT32: "u4",
                     FLOAT32: "f4", FLOAT64: "f8"}
POINT_FIELD_NAMES = {INT8: "INT8", UINT8: "UINT8", INT16: "INT16", UINT16: "UINT16", INT32: "INT32",
                     UINT32: "UINT32", FLOAT32: "FLOAT32", FLOAT64: "FLOAT64"}
# Most points accepted in one cloud: 4 million is a 2048 x 2048 depth image, above any
# common depth camera (1280 x 720 = 0.9 M) or lidar scan (128 beams x 2048 = 0.26 M). The
# decoded copy is 24 bytes a point (96 MB at the bound), and the self-filter costs about
# a microsecond a point near the robot; a bigger cloud is refused by name (subsample it).
MAX_CLOUD_POINTS = 4_000_000
COORDINATE_FIELDS = ("x", "y", "z")


class PointCloudError(RequestError):
    """A point cloud cannot be used: a missing field, a wrong layout, too many points, an
    unknown frame. The message names the fault in one line; nothing is changed."""


@dataclass(frozen=True)
class DecodedCloud:
    """What :func:`decode_point_cloud` gives.

    Attributes
    ----------
    points_m : (N, 3) float64 array
        The finite points within range, in the cloud's frame, metres, in message order.
    n_received : int
        Points in the message (``width * height``).
    n_non_finite : int
        Points dropped for a NaN or infinite coordinate.
    n_beyond_range : int
        Finite points dropped for lying farther than ``max_range_m`` from the sensor origin.
    """
    points_m: np.ndarray
    n_received: int
    n_non_finite: int
    n_beyond_range: int


def _field_tuple(field: Any, k: int) -> tuple[str, int, int, int]:
    """(name, offset, datatype, count) of a field given as a tuple or as an object with those attributes."""
    if isinstance(field, (tuple, list)):
        if len(field) != 4:
            raise PointCloudError(f"point cloud field {k} has {len(field)} entries; give (name, offset, datatype, "
                                  f"count)")
        name, offset, datatype, count = field
    else:
        try:
            name, offset, datatype, count = field.name, field.offset, field.datatype, field.count
        except AttributeError as exc:
            raise PointCloudError(f"point cloud field {k} has no {exc.name!r}; give (name, offset, datatype, "
                                  f"count) or an object with those attributes") from exc
    return (str(name), _whole(offset, f"field '{name}' offset"), _whole(datatype, f"field '{name}' datatype"),
            _whole(count, f"field '{name}' count"))


def _whole(value: Any, what: str) -> int:
    """A non-negative integer, or PointCloudError naming ``what``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise PointCloudError(f"point cloud {what} is {value!r}; it must be a non-negative integer")
    return int(value)


def check_points(points_m) -> np.ndarray:
    """``points_m`` as a C-contiguous (N, 3) float array of finite coordinates (metres).

    Raises
    ------
    PointCloudError
        For another shape, or NaN / infinite coordinates (:func:`decode_point_cloud` drops those).
    """
    points = np.ascontiguousarray(points_m, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3:
        raise PointCloudError(f"points must be an (N, 3) array, not {points.shape}")
    if not np.all(np.isfinite(points)):
        raise PointCloudError("points hold NaN or infinite coordinates (decode_point_cloud drops those)")
    return points


def decode_point_cloud(*, fields, data: bytes | bytearray | memoryview | np.ndarray, point_step: int,
                       row_step: int, width: int, height: int, is_bigendian: bool = False,
                       max_range_m: float = np.inf, sensor_origin_m=(0.0, 0.0, 0.0),
                       max_points: int = MAX_CLOUD_POINTS) -> DecodedCloud:
    """The x, y, z coordinates of a ``PointCloud2`` given as plain data.

    Parameters
    ----------
    fields : sequence
        ``(name, offset, datatype, count)`` tuples or objects with those attributes
        (``sensor_msgs/PointField``); ``x``, ``y`` and ``z`` must be among them, each of
        any PointField datatype (INT8 ... FLOAT64), count >= 1 (the first element is read).
    data : bytes-like
        ``row_step * height`` bytes exactly.
    point_step, row_step : int
        Bytes per point and per row; ``row_step >= width * point_step`` (padded rows
        allowed) and every x, y, z field inside ``point_step``.
    width, height : int
        Points per row and rows (``height`` 1 for an unorganised cloud).
    is_bigendian : bool
        Byte order of the fields.
    max_range_m : float
        Points farther than this from ``sensor_origin_m`` are dropped (and counted);
        default no bound.
    sensor_origin_m : (3,) array_like
        The sensor's position in the cloud's frame (default its origin), metres.
    max_points : int
        Largest ``width * height`` accepted (default :data:`MAX_CLOUD_POINTS`).

    Returns
    -------
    DecodedCloud

    Raises
    ------
    PointCloudError
        Naming the fault: a missing or repeated x/y/z field, an unknown datatype, a
        field outside the point, a wrong ``point_step``, ``row_step`` or data length, too
        many points, a bad ``max_range_m`` or sensor origin.
    """
    width = _whole(width, "width")
    height = _whole(height, "height")
    point_step = _whole(point_step, "point_step")
    row_step = _whole(row_step, "row_step")
    n = width * height
    if n > max_points:
        raise PointCloudError(f"point cloud has {n} points ({width} x {height}), more than the bound of {max_points} "
                              f"(MAX_CLOUD_POINTS); subsample it")
    if not (isinstance(max_range_m, (int, float, np.floating, np.integer)) and max_range_m > 0):
        raise PointCloudError(f"max_range_m is {max_range_m!r}; it must be a positive number (inf: no bound)")
    origin = np.asarray(sensor_origin_m, dtype=float)
    if origin.shape != (3,) or not np.all(np.isfinite(origin)):
        raise PointCloudError(f"sensor origin {sensor_origin_m!r} must be 3 finite coordinates (metres)")
    by_name: dict[str, tuple[int, int, int]] = {}
    for k, field in enumerate(fields):
        name, offset, datatype, count = _field_tuple(field, k)
        if name not in COORDINATE_FIELDS:
            continue
        if name in by_name:
            raise PointCloudError(f"point cloud field '{name}' appears twice")
        if datatype not in POINT_FIELD_TYPES:
            raise PointCloudError(f"point cloud field '{name}' has unsupported datatype {datatype} (PointField "
                                  f"datatypes are 1..8: INT8, UINT8, INT16, UINT16, INT32, UINT32, FLOAT32, FLOAT64)")
        if count < 1:
            raise PointCloudError(f"point cloud field '{name}' has count {count}; it must be at least 1")
        by_name[name] = (offset, datatype, count)
    missing = [c for c in COORDINATE_FIELDS if c not in by_name]
    if missing:
        raise PointCloudError(f"point cloud has no {', '.join(missing)} field{'s' if len(missing) > 1 else ''} "
                              f"(it has: {', '.join(_field_tuple(f, k)[0] for k, f in enumerate(fields)) or 'none'})")
    spans = []
    for name in COORDINATE_FIELDS:
        offset, datatype, _ = by_name[name]
        size = np.dtype(POINT_FIELD_TYPES[datatype]).itemsize
        if offset + size > point_step:
            raise PointCloudError(f"point_step {point_step} is too small: field '{name}' "
                                  f"({POINT_FIELD_NAMES[datatype]} at offset {offset}) ends at byte {offset + size}")
        spans.append((offset, offset + size, name))
    spans.sort()
    for (_, end_a, a), (start_b, _, b) in zip(spans, spans[1:]):
        if start_b < end_a:
            raise PointCloudError(f"point cloud fields '{a}' and '{b}' overlap (bytes {start_b}..{end_a})")
    if height > 0 and width > 0 and row_step < width * point_step:
        raise PointCloudError(f"row_step {row_step} is smaller than width * point_step = {width} * {point_step}")
    buffer = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1).view(
        np.uint8)
    if len(buffer) != row_step * height:
        raise PointCloudError(f"point cloud data has {len(buffer)} bytes, not row_step * height = {row_step} * "
                              f"{height} = {row_step * height}")
    if n == 0:
        return DecodedCloud(np.zeros((0, 3)), 0, 0, 0)
    order = ">" if is_bigendian else "<"
    layout = np.dtype({"names": list(COORDINATE_FIELDS),
                       "formats": [order + POINT_FIELD_TYPES[by_name[c][1]] for c in COORDINATE_FIELDS],
                       "offsets": [by_name[c][0] for c in COORDINATE_FIELDS], "itemsize": point_step})
    records = np.ndarray((height, width), dtype=layout, buffer=buffer, strides=(row_step, point_step))
    points = np.empty((n, 3))
    for i, c in enumerate(COORDINATE_FIELDS):
        points[:, i] = records[c].reshape(n)
    finite = np.isfinite(points).all(axis=1)
    n_non_finite = int(n - np.count_nonzero(finite))
    if n_non_finite:
        points = points[finite]
    n_beyond = 0
    if np.isfinite(max_range_m):
        offset = points - origin
        near = np.einsum("ij,ij->i", offset, offset) <= float(max_range_m) ** 2
        n_beyond = int(len(points) - np.count_nonzero(near))
        if n_beyond:
            points = points[near]
    return DecodedCloud(np.ascontiguousarray(points), n, n_non_finite, n_beyond)


def decode_point_cloud_message(cloud: Any, **options) -> DecodedCloud:
    """:func:`decode_point_cloud` of any object with a PointCloud2's attributes (``fields``,
    ``data``, ``point_step``, ``row_step``, ``width``, ``height``, ``is_bigendian``);
    ``options`` as there (``max_range_m``, ``sensor_origin_m``, ``max_points``).

    Raises
    ------
    PointCloudError
        As :func:`decode_point_cloud`, or naming a missing attribute.
    """
    names = ("fields", "data", "point_step", "row_step", "width", "height", "is_bigendian")
    try:
        values = {name: getattr(cloud, name) for name in names}
    except AttributeError as exc:
        raise PointCloudError(f"point cloud has no attribute {exc.name!r} (a PointCloud2 has {', '.join(names)})") \
            from exc
    data = values["data"]
    if isinstance(data, (list, tuple)):      # rclpy gives array('B') or a list of ints for uint8[]
        data = bytes(data)
    values["data"] = data
    values["is_bigendian"] = bool(values["is_bigendian"])
    return decode_point_cloud(**values, **options)


def encode_point_cloud(points_m: np.ndarray, *, datatype: int = FLOAT32, extra_bytes: int = 0,
                       is_bigendian: bool = False) -> dict:
    """The plain-data fields of a PointCloud2 holding points (N, 3), unorganised (height 1).

    The inverse of :func:`decode_point_cloud` for tests, benchmarks and the node: fields
    ``x``, ``y``, ``z`` packed from offset 0 in ``datatype``, then ``extra_bytes`` of padding
    per point (as a camera's rgb or intensity would take). Returns a dict of the keyword
    arguments of :func:`decode_point_cloud`.
    """
    points = np.asarray(points_m, dtype=float).reshape(-1, 3)
    code = ">" if is_bigendian else "<"
    kind = np.dtype(code + POINT_FIELD_TYPES[datatype])
    point_step = 3 * kind.itemsize + int(extra_bytes)
    layout = np.dtype({"names": list(COORDINATE_FIELDS), "formats": [kind] * 3,
                       "offsets": [0, kind.itemsize, 2 * kind.itemsize], "itemsize": point_step})
    records = np.zeros(len(points), dtype=layout)
    for i, c in enumerate(COORDINATE_FIELDS):
        records[c] = points[:, i]
    fields = [(c, i * kind.itemsize, datatype, 1) for i, c in enumerate(COORDINATE_FIELDS)]
    return {"fields": fields, "data": records.tobytes(), "point_step": point_step,
            "row_step": point_step * len(points), "width": len(points), "height": 1, "is_bigendian": is_bigendian}
