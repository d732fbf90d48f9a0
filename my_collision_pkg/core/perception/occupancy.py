"""The occupancy map: an immutable snapshot of occupied octree cells around a ``coal.OcTree``.

An :class:`OccupancyMap` is made once and never changed, so a check that holds one sees
one map however the sensor updates go on. It is made

- from points (planning frame, metres): :meth:`OccupancyMap.from_points`, through
  ``coal.makeOctree(points, resolution)``: every cell holding a point is occupied (points
  are first rounded to single precision, as octomap's ray casting stores them, so that a
  point lying on a cell face falls in the same cell in both update modes);
- from an octomap file: :meth:`OccupancyMap.load` (``.bt``, octomap's binary format, read
  by ``coal.MeshLoader.loadOctree`` after its structure is checked here; ``.ot``, the
  full format, read by the octomap library, see below);
- by an :class:`OccupancyUpdater`, the one mutable part, in one of two modes:
  ``replace`` (each cloud replaces the map, MoveIt's "latest scan") or ``accumulate``
  (each cloud is ray-cast into a probabilistic octomap from the sensor origin: the cells
  its rays cross become freer, those they end in more occupied; one ray per cell holding
  points, from the sensor to that cell's centre, octomap's ``discretize``; the map is the
  octomap's occupied cells, read back by labelling the last map's cells and the cloud's). ``accumulate`` and ``.ot`` files need the ``octomap`` module of PyPI's
  ``octomap-python`` (pinned in requirements/python.txt); without it they are refused
  with one line saying so.

Cells. Octree cells are cubes of side ``resolution_m`` on octomap's grid: the cell of a
point ``p`` has the integer key ``floor(p * (1 / resolution_m))`` (octomap's rounding) and its centre at
``(key + 0.5) * resolution_m``; a loaded file may also hold pruned cells, cubes of
``2^k`` resolution cells. :meth:`OccupancyMap.cell_boxes` lists the occupied cells as
coal's ``toBoxes()`` gives them (centre, side, occupancy probability; for a map made from
points, computed from the points' keys in key order, the same cells without listing the
tree); a *cell id* in this package is the index of a cell in that list (0 .. ``n_occupied - 1``).

coal's contacts and the cell id. ``coal.collide`` against an ``OcTree`` puts an id of the
cell in the contact's ``b1`` whichever of the two objects the tree is (``b2`` is then -1),
only the first contact of a call carries it, and that id is the node's address offset in
the tree's memory (not an index, and meaningful only for that very ``coal.OcTree``).
:meth:`OccupancyMap.cell_of_coal_id` turns it into the package's cell id (by probing cells
with a small box at their centre: those near a point of the contact when given, else every
cell once per map); :meth:`OccupancyMap.cell_at`
gives the cell holding a point (rounded to single precision as above; a witness point on a
face between two cells names one of the two).
"""
from __future__ import annotations

import math
import os
import tempfile
import threading
from typing import NamedTuple

import numpy as np

from my_collision_pkg.core.errors import SceneError
from my_collision_pkg.core.geometry.coal_setup import coal   # coal with its box support pinned (see there)
from my_collision_pkg.core.perception.point_cloud import PointCloudError, check_points
from my_collision_pkg.core.user_files import FileRefused, read_file_bytes

try:                                   # PyPI octomap-python: ray casting (accumulate) and .ot files
    import octomap as _octomap
except ImportError:                    # pragma: no cover - the pinned venv has it
    _octomap = None

MODE_REPLACE = "replace"
MODE_ACCUMULATE = "accumulate"
UPDATE_MODES = (MODE_REPLACE, MODE_ACCUMULATE)
OCTOMAP_SUFFIXES = (".bt", ".ot")
# Resolutions accepted (metres): below 1 mm a 16-level octree spans 65 m only and cells
# explode in number; above 1 m a cell is coarser than any robot link.
MIN_RESOLUTION_M = 0.001
MAX_RESOLUTION_M = 1.0
# Largest octomap file read (bytes): a binary file takes about 2 bits a node, 50 MB is
# some 200 million nodes, far beyond any map a check can use.
MAX_OCTOMAP_FILE_BYTES = 50_000_000
_OCTREE_DEPTH = 16                     # octomap's fixed tree depth
_KEY_HALF_RANGE = 1 << 15              # cells from the origin to the octree's edge, each way
_LABEL_OCCUPIED = 1                    # octomap's getLabels: -1 unknown, 0 free, 1 occupied
_BINARY_HEADER = "# Octomap OcTree binary file"
_FULL_HEADER = "# Octomap OcTree file"
_PROBE_FRACTION = 0.25                 # probe box side, in cell sides (inside the cell, away from its faces)
_KEY_BIAS = 1 << 20                    # keys packed as three 21-bit fields
# octomap's defaults (coal.makeOctree uses them): hit probability and its clamping bound
_PROB_HIT = 0.7
_PROB_CLAMP_MAX = 0.971


class OctomapFileError(SceneError):
    """An octomap file cannot be read: missing, not ``.bt`` / ``.ot``, a bad header or
    corrupt data. The message names the file and the fault; nothing is changed."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"octomap file '{path}': {reason}")
        self.path = path


class CellBoxes(NamedTuple):
    """The occupied cells of a map (planning frame, metres), in cell id order.

    ``centres_m`` (N, 3), ``size_m`` (N,) (cube side: the resolution, or a multiple of it
    for a pruned cell), ``occupancy`` (N,) (probability, above the tree's threshold).
    """
    centres_m: np.ndarray
    size_m: np.ndarray
    occupancy: np.ndarray


def _check_resolution(resolution_m: float) -> float:
    if not (isinstance(resolution_m, (int, float, np.floating, np.integer)) and math.isfinite(resolution_m)
            and MIN_RESOLUTION_M <= resolution_m <= MAX_RESOLUTION_M):
        raise PointCloudError(f"octomap resolution {resolution_m!r} m must be between {MIN_RESOLUTION_M} and "
                              f"{MAX_RESOLUTION_M} m")
    return float(resolution_m)


def _as_octomap_coordinates(points: np.ndarray) -> np.ndarray:
    """Points rounded to single precision, as octomap's ray casting stores them (``point3d`` is
    float): a point on a cell face then falls in the same cell in both update modes."""
    return points.astype(np.float32).astype(float)


def _hit_probability(hits: np.ndarray) -> np.ndarray:
    """Occupancy probability of a cell after ``hits`` (N,) hits, as octomap keeps it: log-odds
    in single precision, one hit's added at a time, clamped at the upper bound."""
    hit = np.float32(math.log(_PROB_HIT / (1.0 - _PROB_HIT)))
    clamp = np.float32(math.log(_PROB_CLAMP_MAX / (1.0 - _PROB_CLAMP_MAX)))
    table = [np.float32(0.0)]
    while table[-1] < clamp:
        table.append(min(np.float32(table[-1] + hit), clamp))
    log_odds = np.array(table, dtype=np.float32)[np.minimum(hits, len(table) - 1)].astype(float)
    return 1.0 - 1.0 / (1.0 + np.exp(log_odds))


def _cell_centres(points: np.ndarray, resolution_m: float) -> np.ndarray:
    """(M, 3) centres of the distinct cells holding points (N, 3) (octomap's rounding)."""
    if len(points) == 0:
        return np.zeros((0, 3))
    packed = np.unique(_pack(np.floor(_as_octomap_coordinates(points) * (1.0 / resolution_m)).astype(np.int64)))
    return (_unpack(packed) + 0.5) * resolution_m


def _pack(keys: np.ndarray) -> np.ndarray:
    """(N, 3) int64 keys as one int64 each (21 bits an axis)."""
    k = keys + _KEY_BIAS
    return (k[:, 0] << 42) | (k[:, 1] << 21) | k[:, 2]


def _unpack(packed: np.ndarray) -> np.ndarray:
    """The (N, 3) int64 keys of :func:`_pack`."""
    mask = (1 << 21) - 1
    return np.column_stack([(packed >> 42) & mask, (packed >> 21) & mask, packed & mask]) - _KEY_BIAS


class OccupancyMap:
    """Immutable snapshot of an occupancy octree (make it with the class methods).

    Parameters
    ----------
    tree : coal.OcTree
        Taken over; never changed afterwards.
    source : str
        Where it came from ("points", "accumulate", a file path, "empty"), for messages.
    cells : CellBoxes, optional
        The tree's occupied cells when the caller knows them (:meth:`from_points`); else
        listed with ``tree.toBoxes()``.
    """

    def __init__(self, tree: coal.OcTree, source: str, cells: CellBoxes | None = None) -> None:
        self._tree = tree
        self._resolution_m = float(tree.getResolution())
        self._per_m = 1.0 / self._resolution_m       # octomap's key: floor(coordinate * (1 / resolution))
        self._source = str(source)
        if cells is None:                            # the tree's own list (a file's tree may hold pruned cells)
            boxes = np.array(tree.toBoxes(), dtype=float).reshape(-1, 6)
            cells = CellBoxes(boxes[:, :3], boxes[:, 3], boxes[:, 4])
        centres = np.ascontiguousarray(cells.centres_m, dtype=float)
        size = np.ascontiguousarray(cells.size_m, dtype=float)
        occupancy = np.ascontiguousarray(cells.occupancy, dtype=float)
        for a in (centres, size, occupancy):
            a.setflags(write=False)
        self._boxes = CellBoxes(centres, size, occupancy)
        fine = np.abs(size - self._resolution_m) <= 1e-9 * self._resolution_m
        self._fine_index = np.flatnonzero(fine)
        packed = _pack(np.floor(centres[fine] * self._per_m).astype(np.int64))
        order = np.argsort(packed, kind="stable")
        self._fine_sorted, self._fine_order = packed[order], self._fine_index[order]
        self._coarse_index = np.flatnonzero(~fine)
        self._coal_ids: dict[int, int] = {}           # coal's cell id -> cell id, filled by probing
        self._probed = np.zeros(len(centres), dtype=bool)
        self._all_probed = False
        self._lock = threading.Lock()

    # ----- construction ---------------------------------------------------------------
    @classmethod
    def empty(cls, resolution_m: float) -> "OccupancyMap":
        """A map with no occupied cell."""
        return cls(coal.OcTree(_check_resolution(resolution_m)), "empty")

    @classmethod
    def from_points(cls, points_m: np.ndarray, resolution_m: float, source: str = "points") -> "OccupancyMap":
        """Every cell holding one of the points (N, 3) (planning frame, metres) occupied (``replace``).

        Raises
        ------
        PointCloudError
            For points that are not (N, 3) finite coordinates or a bad resolution.
        """
        resolution = _check_resolution(resolution_m)
        points = check_points(points_m)
        if len(points) == 0:
            return cls(coal.OcTree(resolution), source)
        single = _as_octomap_coordinates(points)
        reach = _KEY_HALF_RANGE * resolution
        if np.max(np.abs(single)) >= reach:
            raise PointCloudError(f"a point lies {np.max(np.abs(single)):g} m from the planning frame's origin along "
                                  f"an axis, beyond the {reach:g} m an octree of resolution {resolution} m spans "
                                  f"(2^15 cells each way); drop far points (max_range_m)")
        tree = coal.makeOctree(single, resolution)
        # makeOctree marks each point's cell hit once per point and prunes nothing: its cells
        # are the distinct keys of the points (found here without listing the tree, which
        # costs about 3 us a cell), with octomap's probability after that many hits
        packed, hits = np.unique(_pack(np.floor(single * (1.0 / resolution)).astype(np.int64)), return_counts=True)
        cells = CellBoxes((_unpack(packed) + 0.5) * resolution, np.full(len(packed), resolution),
                          _hit_probability(hits))
        return cls(tree, source, cells)

    @classmethod
    def from_cell_centres(cls, centres_m: np.ndarray, resolution_m: float, source: str = "cells") -> "OccupancyMap":
        """The map whose occupied cells are those holding the given centres (as :meth:`from_points`)."""
        return cls.from_points(centres_m, resolution_m, source)

    @classmethod
    def load(cls, path: str) -> "OccupancyMap":
        """An octomap file (``.bt`` binary, ``.ot`` full) as a map.

        Raises
        ------
        OctomapFileError
            Naming the file and the fault: missing, unreadable, too big, another suffix, a
            header that is not octomap's, a tree type other than ``OcTree``, a bad
            resolution, data that does not hold the number of nodes the header says, or a
            ``.ot`` file without the octomap library.
        """
        path = os.fspath(path)
        suffix = os.path.splitext(path)[1].lower()
        if suffix not in OCTOMAP_SUFFIXES:
            raise OctomapFileError(path, f"the name must end in .bt (binary) or .ot (full), not '{suffix or '(none)'}'")
        try:
            # bounded by bytes read (a device reports size 0); FIFOs, devices, directories refused
            content = read_file_bytes(path, MAX_OCTOMAP_FILE_BYTES, "MAX_OCTOMAP_FILE_BYTES")
        except FileRefused as exc:
            raise OctomapFileError(path, f"cannot be read ({exc})") from exc
        header, data, resolution, n_nodes = _parse_header(path, content, suffix)
        if suffix == ".bt":
            _check_binary_nodes(path, data, n_nodes)
            tree = _load_from_copy(content, suffix, lambda copy: coal.MeshLoader().loadOctree(copy))
            if not isinstance(tree, coal.OcTree) or abs(tree.getResolution() - resolution) > 1e-12 * resolution:
                raise OctomapFileError(path, "coal could not read it as an OcTree")
            return cls(tree, path)
        if _octomap is None:
            raise OctomapFileError(path, "reading .ot files needs the octomap module (pip install "
                                         "octomap-python, pinned in requirements/python.txt); save the map as .bt")
        _check_full_nodes(path, data, n_nodes)
        source = _load_from_copy(content, suffix, lambda copy: _octomap.OcTree.read(copy.encode()))
        if source is None or source.size() != n_nodes:
            raise OctomapFileError(path, f"corrupt data: the octomap library read "
                                         f"{0 if source is None else source.size()} of the {n_nodes} nodes the header "
                                         f"names")
        occupied, _ = source.extractPointCloud()
        return cls.from_points(np.asarray(occupied, dtype=float).reshape(-1, 3), resolution, path)

    @classmethod
    def from_binary_data(cls, data: bytes, resolution_m: float, source: str = "message") -> "OccupancyMap":
        """A map from octomap binary tree data (the bytes of ``writeBinaryData``, as a
        ``octomap_msgs/Octomap`` with ``binary`` true carries them) at ``resolution_m``.

        Raises
        ------
        OctomapFileError
            Naming ``source``: corrupt data, a bad resolution, more than MAX_OCTOMAP_FILE_BYTES.
        """
        data = bytes(data)
        if len(data) > MAX_OCTOMAP_FILE_BYTES:
            raise OctomapFileError(source, f"{len(data)} bytes, more than the bound of {MAX_OCTOMAP_FILE_BYTES} "
                                           f"(MAX_OCTOMAP_FILE_BYTES)")
        if not (isinstance(resolution_m, (int, float)) and math.isfinite(resolution_m)
                and MIN_RESOLUTION_M <= resolution_m <= MAX_RESOLUTION_M):
            raise OctomapFileError(source, f"resolution {resolution_m} m outside [{MIN_RESOLUTION_M}, "
                                           f"{MAX_RESOLUTION_M}] m")
        if not data:
            return cls.empty(resolution_m)
        n_nodes = binary_node_count(source, data)
        header = (f"{_BINARY_HEADER}\nid OcTree\nsize {n_nodes}\nres {float(resolution_m)!r}\ndata\n").encode()
        tree = _load_from_copy(header + data, ".bt", lambda copy: coal.MeshLoader().loadOctree(copy))
        if not isinstance(tree, coal.OcTree):
            raise OctomapFileError(source, "coal could not read it as an OcTree")
        return cls(tree, source)

    # ----- read access ----------------------------------------------------------------
    @property
    def coal_geometry(self) -> coal.OcTree:
        """The ``coal.OcTree`` (planning frame: pose it with the identity). Do not change it."""
        return self._tree

    @property
    def resolution_m(self) -> float:
        return self._resolution_m

    @property
    def n_occupied(self) -> int:
        """Occupied cells as coal lists them (a pruned cell counts once)."""
        return len(self._boxes.centres_m)

    @property
    def source(self) -> str:
        return self._source

    def cell_boxes(self) -> CellBoxes:
        """The occupied cells, cell id order (read-only arrays)."""
        return self._boxes

    def leaf_centres_m(self) -> np.ndarray:
        """(M, 3) centres of the occupied resolution cells: pruned cells split into theirs."""
        boxes, res = self._boxes, self._resolution_m
        parts = [boxes.centres_m[self._fine_index]]
        for k in self._coarse_index.tolist():
            n = max(1, int(round(boxes.size_m[k] / res)))
            offsets = (np.arange(n) + 0.5) * res - boxes.size_m[k] / 2.0
            grid = np.stack(np.meshgrid(offsets, offsets, offsets, indexing="ij"), -1).reshape(-1, 3)
            parts.append(boxes.centres_m[k] + grid)
        return np.ascontiguousarray(np.concatenate(parts)) if parts else np.zeros((0, 3))

    def cell_keys(self) -> np.ndarray:
        """(M,) packed integer keys of the occupied resolution cells, sorted (for comparing maps)."""
        keys = np.floor(self.leaf_centres_m() * self._per_m).astype(np.int64)
        return np.sort(_pack(keys))

    def cell_at(self, points_m: np.ndarray) -> np.ndarray:
        """Cell id (index into :meth:`cell_boxes`) of the occupied cell holding each point (K, 3); -1 for none."""
        points = np.asarray(points_m, dtype=float).reshape(-1, 3)
        out = np.full(len(points), -1, dtype=np.int64)
        if len(self._fine_sorted):
            packed = _pack(np.floor(_as_octomap_coordinates(points) * self._per_m).astype(np.int64))
            at = np.searchsorted(self._fine_sorted, packed).clip(0, len(self._fine_sorted) - 1)
            found = self._fine_sorted[at] == packed
            out[found] = self._fine_order[at[found]]
        for k in self._coarse_index.tolist():
            half = self._boxes.size_m[k] / 2.0
            inside = (out < 0) & np.all(np.abs(points - self._boxes.centres_m[k]) <= half, axis=1)
            out[inside] = k
        return out

    def cell_of_coal_id(self, coal_id: int, near_m=None) -> int:
        """The package's cell id of the id coal puts in a contact's ``b1`` against this tree; -1 if unknown.

        Parameters
        ----------
        coal_id : int
            The contact's ``b1`` (coal puts the tree's id there whichever object the tree is).
        near_m : (3,) array_like, optional
            A point of that contact (its position or a witness point, planning frame): the
            cells within one cell of it are probed first, so one contact costs a few
            probes; without it (or when none of them is the cell) every cell not yet probed
            is, once per map (about 35 us a cell).
        """
        coal_id = int(coal_id)
        with self._lock:
            if coal_id in self._coal_ids:
                return self._coal_ids[coal_id]
            if near_m is not None and not self._all_probed:
                point = np.asarray(near_m, dtype=float).reshape(3)
                offsets = np.stack(np.meshgrid(*[np.arange(-1, 2)] * 3, indexing="ij"), -1).reshape(-1, 3)
                near = self.cell_at(point + offsets * self._resolution_m)
                self._probe(np.unique(near[near >= 0]))
                if coal_id in self._coal_ids:
                    return self._coal_ids[coal_id]
            if not self._all_probed:
                self._probe(np.arange(self.n_occupied))
                self._all_probed = True
            return self._coal_ids.get(coal_id, -1)

    def _probe(self, cells: np.ndarray) -> None:
        """Record coal's id of the given cells not probed yet: a box of a quarter cell at a cell's
        centre touches that cell alone, and the contact's ``b1`` is its id."""
        request = coal.CollisionRequest()
        request.num_max_contacts = 1
        request.enable_contact = False
        identity = coal.Transform3s()
        for k in cells.tolist():
            if self._probed[k]:
                continue
            self._probed[k] = True
            centre, size = self._boxes.centres_m[k], float(self._boxes.size_m[k])
            probe = coal.Box(size * _PROBE_FRACTION, size * _PROBE_FRACTION, size * _PROBE_FRACTION)
            result = coal.CollisionResult()
            if coal.collide(self._tree, identity, probe, coal.Transform3s(np.eye(3), centre), request, result):
                self._coal_ids[int(result.getContact(0).b1)] = k


def _parse_header(path: str, content: bytes, suffix: str) -> tuple[dict, bytes, float, int]:
    """The header entries of an octomap file, its data, resolution and node count.

    Raises
    ------
    OctomapFileError
        For a header that is not octomap's, another tree type, or a bad ``res`` / ``size``.
    """
    expected = _BINARY_HEADER if suffix == ".bt" else _FULL_HEADER
    first, _, _ = content.partition(b"\n")
    if not first.decode("latin-1").startswith(expected):
        raise OctomapFileError(path, f"not an octomap {suffix} file (its first line is not '{expected}')")
    header: dict[str, str] = {}
    pos = len(first) + 1
    while True:
        end = content.find(b"\n", pos)
        if end < 0:
            raise OctomapFileError(path, "corrupt header: no 'data' line")
        line = content[pos:end].decode("latin-1").strip()
        pos = end + 1
        if not line or line.startswith("#"):
            continue
        if line == "data":
            break
        key, _, value = line.partition(" ")
        header[key] = value.strip()
        if len(header) > 16:
            raise OctomapFileError(path, "corrupt header: no 'data' line")
    if header.get("id") != "OcTree":
        raise OctomapFileError(path, f"holds a '{header.get('id', '(no id)')}', not an OcTree (only occupancy "
                                     f"OcTrees are read)")
    try:
        resolution = float(header["res"])
        n_nodes = int(header["size"])
    except (KeyError, ValueError) as exc:
        raise OctomapFileError(path, f"corrupt header: 'res' and 'size' must be numbers ({exc})") from exc
    if not (math.isfinite(resolution) and MIN_RESOLUTION_M <= resolution <= MAX_RESOLUTION_M):
        raise OctomapFileError(path, f"resolution {resolution} m outside [{MIN_RESOLUTION_M}, {MAX_RESOLUTION_M}] m")
    if n_nodes < 0:
        raise OctomapFileError(path, f"corrupt header: size {n_nodes}")
    return header, content[pos:], resolution, n_nodes


def _check_binary_nodes(path: str, data: bytes, n_nodes: int) -> None:
    """That binary octree data holds exactly ``n_nodes`` nodes, no deeper than the tree depth.

    Each inner node is 2 bytes: 2 bits per child (00 none, 01 free leaf, 10 occupied leaf,
    11 inner node, whose own 2 bytes follow depth first).

    Raises
    ------
    OctomapFileError
        For truncated data, trailing bytes, a tree too deep, or another node count.
    """
    if n_nodes == 0:
        if data.strip():
            raise OctomapFileError(path, f"corrupt data: {len(data)} bytes after a header of size 0")
        return
    count = binary_node_count(path, data, n_nodes)
    if count != n_nodes:
        raise OctomapFileError(path, f"corrupt data: {count} nodes, the header names {n_nodes}")


def binary_node_count(path: str, data: bytes, most: int | None = None) -> int:
    """Nodes (inner nodes and leaves) of octomap binary tree data (``writeBinaryData``'s bytes).

    Each inner node is 2 bytes: 2 bits per child (00 none, 01 free leaf, 10 occupied leaf,
    11 inner node, whose own 2 bytes follow depth first).

    Raises
    ------
    OctomapFileError
        Naming ``path`` (a file or a message): truncated data, trailing bytes, a tree too
        deep, more than ``most`` nodes.
    """
    pos, count = 0, 0
    stack = [1]                      # depth of each inner node still to read
    while stack:
        depth = stack.pop()
        if depth > _OCTREE_DEPTH:
            raise OctomapFileError(path, f"corrupt data: a node deeper than the tree depth {_OCTREE_DEPTH}")
        if pos + 2 > len(data):
            raise OctomapFileError(path, f"corrupt data: truncated after {count} nodes")
        bits = data[pos] | (data[pos + 1] << 8)
        pos += 2
        count += 1
        for child in range(8):
            code = (bits >> (2 * child)) & 3
            if code == 3:
                stack.append(depth + 1)
            elif code:
                count += 1
        if most is not None and count > most:
            raise OctomapFileError(path, f"corrupt data: more nodes than the {most} the header names")
    if len(data) - pos > 1:
        raise OctomapFileError(path, f"corrupt data: {len(data) - pos} bytes after the tree")
    return count


def _check_full_nodes(path: str, data: bytes, n_nodes: int) -> None:
    """That full (``.ot``) octree data holds exactly ``n_nodes`` nodes, no deeper than the tree depth.

    Each node is its value (a 4-byte float, log-odds) then one byte with a bit per child
    that follows, depth first.

    Raises
    ------
    OctomapFileError
        For truncated data, trailing bytes, a tree too deep, or another node count.
    """
    if n_nodes == 0:
        return
    pos, count = 0, 0
    stack = [1]
    while stack:
        depth = stack.pop()
        if depth > _OCTREE_DEPTH + 1:
            raise OctomapFileError(path, f"corrupt data: a node deeper than the tree depth {_OCTREE_DEPTH}")
        if pos + 5 > len(data):
            raise OctomapFileError(path, f"corrupt data: truncated after {count} nodes")
        children = data[pos + 4]
        pos += 5
        count += 1
        if count > n_nodes:
            raise OctomapFileError(path, f"corrupt data: more nodes than the {n_nodes} the header names")
        stack.extend([depth + 1] * bin(children).count("1"))
    if count != n_nodes:
        raise OctomapFileError(path, f"corrupt data: {count} nodes, the header names {n_nodes}")
    if len(data) - pos > 1:
        raise OctomapFileError(path, f"corrupt data: {len(data) - pos} bytes after the tree")


class OccupancyUpdater:
    """The one mutable part: turns sensor clouds into successive :class:`OccupancyMap` snapshots.

    Parameters
    ----------
    resolution_m : float
        Cell side, metres.
    mode : str
        ``"replace"`` (default: each cloud replaces the map) or ``"accumulate"`` (each cloud
        ray-cast into a probabilistic octomap from the sensor origin).
    max_range_m : float
        ``accumulate`` only: rays are cut at this length (their end cell is not marked
        occupied); default no bound. (The decoder's ``max_range_m`` drops far points before.)

    Raises
    ------
    PointCloudError
        For an unknown mode, a bad resolution or range, or ``accumulate`` without the
        octomap library.
    """

    def __init__(self, *, resolution_m: float, mode: str = MODE_REPLACE, max_range_m: float = math.inf) -> None:
        self._resolution_m = _check_resolution(resolution_m)
        if mode not in UPDATE_MODES:
            raise PointCloudError(f"octomap update mode '{mode}' is not one of {', '.join(UPDATE_MODES)}")
        if mode == MODE_ACCUMULATE and _octomap is None:
            raise PointCloudError("octomap update mode 'accumulate' needs the octomap module (pip install "
                                  "octomap-python, pinned in requirements/python.txt); use 'replace'")
        if not (max_range_m > 0):
            raise PointCloudError(f"max_range_m {max_range_m!r} must be positive (inf: no bound)")
        self._mode = mode
        self._max_range_m = float(max_range_m)
        self._lock = threading.Lock()
        self._octree = None
        self._current = OccupancyMap.empty(self._resolution_m)

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def resolution_m(self) -> float:
        return self._resolution_m

    @property
    def current(self) -> OccupancyMap:
        """The latest snapshot."""
        return self._current

    def update(self, points_world_m: np.ndarray, sensor_origin_m=(0.0, 0.0, 0.0)) -> OccupancyMap:
        """The next snapshot after one cloud (planning frame, metres; already self-filtered).

        Raises
        ------
        PointCloudError
            For points that are not (N, 3) finite coordinates or a bad sensor origin; the
            map is then unchanged.
        """
        points = check_points(points_world_m)
        origin = np.asarray(sensor_origin_m, dtype=float)
        if origin.shape != (3,) or not np.all(np.isfinite(origin)):
            raise PointCloudError(f"sensor origin {sensor_origin_m!r} must be 3 finite coordinates (metres)")
        with self._lock:
            if self._mode == MODE_REPLACE:
                snapshot = OccupancyMap.from_points(points, self._resolution_m, MODE_REPLACE)
            else:
                if self._octree is None:
                    self._octree = _octomap.OcTree(self._resolution_m)
                if len(points):
                    max_range = self._max_range_m if math.isfinite(self._max_range_m) else -1.0
                    # one ray per endpoint cell (discretize), inner nodes updated once at the end
                    self._octree.insertPointCloud(points, origin, maxrange=max_range, lazy_eval=True,
                                                  discretize=True)
                    self._octree.updateInnerOccupancy()
                # a cell becomes occupied only by a hit: the occupied cells are among the last
                # map's and those holding this cloud's points; octomap labels just those
                # (listing every leaf, free ones included, costs ~30 us a leaf)
                candidates = np.vstack([self._current.leaf_centres_m(), _cell_centres(points, self._resolution_m)])
                labels = np.asarray(self._octree.getLabels(candidates)) if len(candidates) else np.zeros(0)
                snapshot = OccupancyMap.from_points(candidates[labels == _LABEL_OCCUPIED], self._resolution_m,
                                                    MODE_ACCUMULATE)
            self._current = snapshot
        return snapshot

    def set_map(self, occupancy: OccupancyMap) -> OccupancyMap:
        """Make a given map (e.g. a loaded file) the current one; ``accumulate`` goes on from its cells."""
        if abs(occupancy.resolution_m - self._resolution_m) > 1e-12 * self._resolution_m:
            raise PointCloudError(f"map resolution {occupancy.resolution_m} m differs from the updater's "
                                  f"{self._resolution_m} m")
        with self._lock:
            if self._mode == MODE_ACCUMULATE:
                self._octree = _octomap.OcTree(self._resolution_m)
                centres = occupancy.leaf_centres_m()
                if len(centres):
                    self._octree.updateNodes(centres, True)
                    self._octree.updateInnerOccupancy()
            self._current = occupancy
        return occupancy

    def clear(self) -> OccupancyMap:
        """Forget every cell: the next snapshot is empty."""
        with self._lock:
            self._octree = None
            self._current = OccupancyMap.empty(self._resolution_m)
        return self._current


def write_binary_octomap(path: str, occupancy: OccupancyMap) -> None:
    """Write a map's occupied cells as an octomap ``.bt`` file (needs the octomap library).

    Raises
    ------
    OctomapFileError
        Without the octomap library, or when the file cannot be written.
    """
    if _octomap is None:
        raise OctomapFileError(path, "writing needs the octomap module (pip install octomap-python)")
    tree = _octomap.OcTree(occupancy.resolution_m)
    centres = occupancy.leaf_centres_m()
    if len(centres):
        tree.updateNodes(centres, True)
        tree.updateInnerOccupancy()
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".bt", delete=False) as f:
        temporary = f.name
    try:
        if not tree.writeBinary(temporary.encode()):
            raise OctomapFileError(path, "the octomap library could not write it")
        os.replace(temporary, path)
    except OSError as exc:
        raise OctomapFileError(path, f"cannot be written ({exc.strerror or exc})") from exc
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _load_from_copy(content: bytes, suffix: str, load):
    """``load(path)`` of a private copy of ``content``: coal and the octomap library read maps
    from files only, and the copy is exactly the bytes checked (not what the user's path
    holds by the time they open it)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "map" + suffix)
        with open(path, "wb") as f:
            f.write(content)
        return load(path)


def binary_octomap_data(occupancy: OccupancyMap) -> bytes:
    """A map's occupied cells as octomap binary tree data (what ``octomap_msgs/Octomap.data``
    holds with ``binary`` true; the inverse of :meth:`OccupancyMap.from_binary_data`).

    Raises
    ------
    OctomapFileError
        Without the octomap library.
    """
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "map.bt")
        write_binary_octomap(path, occupancy)
        with open(path, "rb") as f:
            content = f.read()
    _, data, _, _ = _parse_header(path, content, ".bt")
    return data
