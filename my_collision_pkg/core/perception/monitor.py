"""The occupancy map monitor: point clouds in, the world object ``<octomap>`` of a scene out (ROS-free).

One :class:`OctomapMonitor` holds a :class:`PlanningScene` and an
:class:`~my_collision_pkg.core.perception.occupancy.OccupancyUpdater`. Each cloud given to
:meth:`OctomapMonitor.update` goes through, in order:

1. the rate bound: a cloud arriving sooner than ``1 / max_update_rate_hz`` after the last
   applied one is skipped (and counted), before any work;
2. the frame: the planning frame or a robot link (``cloud_frames.frame_pose``), any other
   is refused with one line;
3. ``point_subsample``: every k-th point kept (message order, after the decoder dropped
   the NaN and infinite ones);
4. ``max_range_m`` from the sensor origin: farther points are dropped (``replace``), or
   kept as rays that clear free space up to the range without marking an occupied cell
   (``accumulate``, octomap's ``maxrange``);
5. posed in the planning frame at the scene's current joint positions
   (``cloud_to_planning_frame``);
6. self-filtering: points inside or within ``padding_m`` of a robot link or an attached
   object dropped (``filter_robot_points``, exact inside tests), and so are points inside
   or within ``padding_m`` of a world object (``points_outside_world_objects``: the
   sensor sees the objects a client already put in the world);
7. the updater (``replace`` or ``accumulate``), then the cells whose centre lies inside a
   world object cleared (``clear_cells_in_world_objects``, moveit2#3614);
8. published with ``PlanningScene.set_occupancy``: one new world snapshot, so a check sees
   the old map or the new one, never a mix.

Every fault raises a core error (:class:`PointCloudError`, :class:`OctomapFileError`)
whose one line names it, before anything is published: the map stays as it was. The
counters (:attr:`OctomapMonitor.stats`) say what happened to the clouds and their points.

``padding_scale`` (MoveIt's scaling of the link shapes) has no counterpart: the filter's
inside tests work on the link shapes as they are, grown by ``padding_m``.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.perception.cloud_frames import cloud_to_planning_frame, frame_pose
from my_collision_pkg.core.perception.occupancy import (MAX_RESOLUTION_M, MIN_RESOLUTION_M, MODE_ACCUMULATE,
                                                        MODE_REPLACE, UPDATE_MODES, OccupancyMap, OccupancyUpdater)
from my_collision_pkg.core.perception.point_cloud import (MAX_CLOUD_POINTS, DecodedCloud, PointCloudError,
                                                          check_points, decode_point_cloud_message)
from my_collision_pkg.core.perception.self_filter import (MAX_PADDING_M, clear_cells_in_world_objects,
                                                          filter_robot_points, points_outside_world_objects)
from my_collision_pkg.core.scene.planning_scene import PlanningScene, occupancy_of

DEFAULT_RESOLUTION_M = 0.02
# MoveIt's sensor examples use 5 m: beyond it a depth camera's points are too noisy to plan with.
DEFAULT_MAX_RANGE_M = 5.0
# Depth cameras are noisy by millimetres to centimetres at a metre: points within this of
# the robot's surface are taken as the robot seen by the camera.
DEFAULT_PADDING_M = 0.02
DEFAULT_MAX_UPDATE_RATE_HZ = 10.0
MAX_POINT_SUBSAMPLE = 1000
MAX_UPDATE_RATE_HZ = 1000.0
# octomap's tree has 16 levels: 2^15 cells from the origin to its edge along each axis.
OCTREE_CELLS_EACH_WAY = 1 << 15


@dataclass(frozen=True)
class CloudUpdate:
    """What one :meth:`OctomapMonitor.update` did.

    Attributes
    ----------
    applied : bool
        False when the cloud was skipped by the rate bound (nothing else was done then).
    n_received : int
        Points in the message (``width * height``), or given.
    n_non_finite : int
        Points dropped by the decoder for a NaN or infinite coordinate.
    n_subsampled_out : int
        Points dropped by ``point_subsample``.
    n_beyond_range : int
        Points farther than ``max_range_m`` from the sensor (dropped in ``replace``; free
        rays only in ``accumulate``).
    n_robot_filtered : int
        Points on or within the padding of a robot link or attached object.
    n_object_filtered : int
        Points on or within the padding of a world object.
    n_cells : int
        Occupied cells of the published map.
    n_cells_cleared : int
        Cells dropped for lying inside a world object.
    duration_s : float
        Time spent on the cloud (monotonic clock).
    """
    applied: bool
    n_received: int = 0
    n_non_finite: int = 0
    n_subsampled_out: int = 0
    n_beyond_range: int = 0
    n_robot_filtered: int = 0
    n_object_filtered: int = 0
    n_cells: int = 0
    n_cells_cleared: int = 0
    duration_s: float = 0.0

    def summary(self) -> str:
        """One line: what was kept of the cloud."""
        if not self.applied:
            return "cloud skipped (max_update_rate_hz)"
        return (f"{self.n_received} points: {self.n_non_finite} non-finite, {self.n_subsampled_out} subsampled out, "
                f"{self.n_beyond_range} beyond range, {self.n_robot_filtered} on the robot, "
                f"{self.n_object_filtered} on world objects; {self.n_cells} cells "
                f"({self.n_cells_cleared} cleared inside world objects) in {self.duration_s * 1e3:.1f} ms")


@dataclass(frozen=True)
class MonitorStats:
    """Counters of an :class:`OctomapMonitor` since it was made (a snapshot).

    ``clouds_applied``, ``clouds_skipped`` (rate bound), ``clouds_refused`` (a fault;
    ``last_error`` names the latest); ``points_received``, ``points_non_finite``,
    ``points_beyond_range``, ``points_robot_filtered``, ``points_object_filtered``
    (summed over applied clouds); ``cells`` of the map the monitor last published;
    ``last_update_s`` (the monitor's clock when the last cloud was applied, or the map set
    or cleared; NaN before) and ``last`` (the last applied cloud's :class:`CloudUpdate`).
    """
    clouds_applied: int = 0
    clouds_skipped: int = 0
    clouds_refused: int = 0
    points_received: int = 0
    points_non_finite: int = 0
    points_beyond_range: int = 0
    points_robot_filtered: int = 0
    points_object_filtered: int = 0
    cells: int = 0
    last_update_s: float = math.nan
    last_error: str = ""
    last: CloudUpdate | None = None


def _positive_number(name: str, value, low: float, high: float, *, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise PointCloudError(f"octomap monitor option '{name}' must be a number, got {value!r}")
    value = float(value)
    below = value <= low if low_open else value < low
    if math.isnan(value) or below or value > high:
        bracket = "(" if low_open else "["
        raise PointCloudError(f"octomap monitor option '{name}' = {value!r} is outside {bracket}{low:g}, {high:g}]")
    return value


def _whole_number(name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise PointCloudError(f"octomap monitor option '{name}' = {value!r} must be a whole number in [{low}, {high}]")
    return int(value)


class OctomapMonitor:
    """Turns point clouds into the occupancy map of a planning scene (the world object ``<octomap>``).

    Parameters (keyword-only)
    -------------------------
    scene : PlanningScene
        The scene whose ``<octomap>`` this monitor sets; its current joint positions pose
        the robot for self-filtering and a cloud given in a link's frame.
    resolution_m : float
        Cell side, metres (0.001 to 1).
    mode : str
        ``"replace"`` (each cloud replaces the map) or ``"accumulate"`` (ray-cast into a
        probabilistic octomap; needs the octomap library).
    max_range_m : float
        Points farther than this from the sensor origin are not marked occupied, metres
        (> 0; ``inf``: no bound).
    padding_m : float
        Points within this of the robot's links, its attached objects and the world
        objects are dropped, metres (0 to ``MAX_PADDING_M``).
    point_subsample : int
        Keep every k-th point (1: all; at most ``MAX_POINT_SUBSAMPLE``).
    max_update_rate_hz : float
        Most clouds applied per second (0: no bound; at most ``MAX_UPDATE_RATE_HZ``).
    max_cloud_points : int
        Largest cloud (``width * height``) accepted by :meth:`update_message`, and most
        points of a map set from points (1 to ``MAX_CLOUD_POINTS``).
    clock : callable
        Seconds of a monotonic clock (default ``time.monotonic``), for the rate bound and
        ``last_update_s``.

    Raises
    ------
    PointCloudError
        Naming the option at fault; or for ``accumulate`` without the octomap library.

    The scene's map at construction (e.g. from a world file) is taken as the current one.
    """

    def __init__(self, scene: PlanningScene, *, resolution_m: float = DEFAULT_RESOLUTION_M, mode: str = MODE_REPLACE,
                 max_range_m: float = DEFAULT_MAX_RANGE_M, padding_m: float = DEFAULT_PADDING_M,
                 point_subsample: int = 1, max_update_rate_hz: float = DEFAULT_MAX_UPDATE_RATE_HZ,
                 max_cloud_points: int = MAX_CLOUD_POINTS, clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(scene, PlanningScene):
            raise PointCloudError(f"octomap monitor needs a PlanningScene, got {type(scene).__name__}")
        if mode not in UPDATE_MODES:
            raise PointCloudError(f"octomap monitor option 'mode' = {mode!r} is not one of {', '.join(UPDATE_MODES)}")
        self._resolution_m = _positive_number("resolution_m", resolution_m, MIN_RESOLUTION_M, MAX_RESOLUTION_M)
        self._max_range_m = _positive_number("max_range_m", max_range_m, 0.0, math.inf, low_open=True)
        self._padding_m = _positive_number("padding_m", padding_m, 0.0, MAX_PADDING_M)
        self._point_subsample = _whole_number("point_subsample", point_subsample, 1, MAX_POINT_SUBSAMPLE)
        self._max_update_rate_hz = _positive_number("max_update_rate_hz", max_update_rate_hz, 0.0, MAX_UPDATE_RATE_HZ)
        self._max_cloud_points = _whole_number("max_cloud_points", max_cloud_points, 1, MAX_CLOUD_POINTS)
        # the updater checks the resolution's range (and the octomap library for accumulate)
        self._updater = OccupancyUpdater(resolution_m=self._resolution_m, mode=mode, max_range_m=self._max_range_m)
        self._scene = scene
        self._clock = clock
        self._lock = threading.Lock()
        self._stats = MonitorStats()
        self._last_applied_s = -math.inf
        self._published = occupancy_of(scene.world)
        if self._published is not None:
            self._adopt(self._published)

    # ----- read access --------------------------------------------------------------
    @property
    def scene(self) -> PlanningScene:
        return self._scene

    @property
    def mode(self) -> str:
        return self._updater.mode

    @property
    def resolution_m(self) -> float:
        return self._resolution_m

    @property
    def max_range_m(self) -> float:
        return self._max_range_m

    @property
    def padding_m(self) -> float:
        return self._padding_m

    @property
    def point_subsample(self) -> int:
        return self._point_subsample

    @property
    def max_update_rate_hz(self) -> float:
        return self._max_update_rate_hz

    @property
    def max_cloud_points(self) -> int:
        return self._max_cloud_points

    @property
    def stats(self) -> MonitorStats:
        """The counters now (an immutable snapshot)."""
        return self._stats

    @property
    def occupancy(self) -> OccupancyMap | None:
        """The scene's map now (None: no ``<octomap>``)."""
        return self._scene.occupancy

    # ----- clouds ---------------------------------------------------------------------
    def admit(self, now_s: float | None = None) -> bool:
        """Whether a cloud arriving at ``now_s`` (default: the clock now) is to be used.

        False, and counted in ``clouds_skipped``, when it comes sooner than
        ``1 / max_update_rate_hz`` after the last applied cloud. Ask before decoding a
        cloud to spare the work; :meth:`update` asks again (with the same time it passes).
        """
        now = self._clock() if now_s is None else float(now_s)
        with self._lock:
            return self._admit(now)

    def _admit(self, now: float) -> bool:
        if self._max_update_rate_hz > 0.0 and now - self._last_applied_s < 1.0 / self._max_update_rate_hz:
            self._stats = replace(self._stats, clouds_skipped=self._stats.clouds_skipped + 1)
            return False
        return True

    def check_frame(self, frame_id: str) -> None:
        """Refuse a cloud frame that is neither the planning frame nor a robot link.

        Raises
        ------
        PointCloudError
            Naming the frame and what to do (``cloud_frames.frame_pose``).
        """
        frame_pose(self._scene.robot, frame_id, self._scene.current_positions)

    def update_message(self, cloud, now_s: float | None = None) -> CloudUpdate:
        """:meth:`update` of a ``sensor_msgs/PointCloud2`` (or any object with its attributes and
        ``header.frame_id``), decoded with ``decode_point_cloud_message`` (at most
        ``max_cloud_points`` points). A skipped cloud is not decoded.

        Raises
        ------
        PointCloudError
            As :func:`decode_point_cloud_message` and :meth:`update`; the map is unchanged.
        """
        now = self._clock() if now_s is None else float(now_s)
        if not self.admit(now):
            return CloudUpdate(applied=False)
        try:
            header = getattr(cloud, "header", None)
            frame_id = getattr(header, "frame_id", None)
            if not isinstance(frame_id, str):
                raise PointCloudError("point cloud has no header.frame_id")
            self.check_frame(frame_id)                  # before the data is read
            decoded = decode_point_cloud_message(cloud, max_points=self._max_cloud_points)
        except CollisionPkgError as exc:
            self._refused(exc)
            raise
        return self.update(decoded, frame_id, now_s=now)

    def update(self, cloud: DecodedCloud | np.ndarray, frame_id: str, *, sensor_origin_m=(0.0, 0.0, 0.0),
               now_s: float | None = None) -> CloudUpdate:
        """Make one cloud the scene's map (``replace``) or fold it in (``accumulate``).

        Parameters
        ----------
        cloud : DecodedCloud or (N, 3) array
            The points in ``frame_id``, metres (a decoder's output, whose counts are kept,
            or finite points).
        frame_id : str
            The planning frame or a robot link's name.
        sensor_origin_m : (3,) array_like
            The sensor's position in ``frame_id`` (default its origin, as for a camera's
            own optical frame), metres: the origin of the range bound and of the rays.
        now_s : float, optional
            The cloud's arrival on the monitor's clock (default: now).

        Returns
        -------
        CloudUpdate
            ``applied`` False when the rate bound skipped it.

        Raises
        ------
        PointCloudError
            For an unknown frame, points that are not (N, 3) finite coordinates, a bad
            sensor origin, more than ``max_cloud_points`` points, or points beyond the
            octree's span; the map is then unchanged.
        """
        start = time.perf_counter()
        now = self._clock() if now_s is None else float(now_s)
        with self._lock:
            if not self._admit(now):
                return CloudUpdate(applied=False)
            try:
                result, occupancy = self._process(cloud, frame_id, sensor_origin_m, start)
            except CollisionPkgError as exc:
                self._refused_locked(exc)
                raise
            self._publish(occupancy)
            self._last_applied_s = now
            s = self._stats
            self._stats = replace(
                s, clouds_applied=s.clouds_applied + 1, points_received=s.points_received + result.n_received,
                points_non_finite=s.points_non_finite + result.n_non_finite,
                points_beyond_range=s.points_beyond_range + result.n_beyond_range,
                points_robot_filtered=s.points_robot_filtered + result.n_robot_filtered,
                points_object_filtered=s.points_object_filtered + result.n_object_filtered,
                cells=result.n_cells, last_update_s=now, last=result)
        return result

    def _process(self, cloud, frame_id: str, sensor_origin_m, start: float) -> tuple[CloudUpdate, OccupancyMap]:
        """Steps 2-7 of the module docstring; nothing published, nothing changed but the updater's
        state, which only the last step touches."""
        if isinstance(cloud, DecodedCloud):
            points, n_received, n_non_finite = cloud.points_m, cloud.n_received, cloud.n_non_finite
            points = check_points(points)
        else:
            points = check_points(cloud)
            n_received, n_non_finite = len(points), 0
        if len(points) > self._max_cloud_points:
            raise PointCloudError(f"point cloud has {len(points)} points, more than max_cloud_points "
                                  f"{self._max_cloud_points}; subsample it")
        origin = np.asarray(sensor_origin_m, dtype=float)
        if origin.shape != (3,) or not np.all(np.isfinite(origin)):
            raise PointCloudError(f"sensor origin {sensor_origin_m!r} must be 3 finite coordinates (metres)")
        world = self._adopt_scene_map()
        positions = self._scene.current_positions
        if frame_id is None:
            raise PointCloudError("point cloud has no frame_id")
        T_world_frame = frame_pose(world.robot, frame_id, positions)      # refuses an unknown frame first
        n_before = len(points)
        if self._point_subsample > 1:
            points = points[::self._point_subsample]
        n_subsampled_out = n_before - len(points)
        n_beyond = 0
        if math.isfinite(self._max_range_m) and len(points):
            offset = points - origin
            near = np.einsum("ij,ij->i", offset, offset) <= self._max_range_m ** 2
            n_beyond = int(len(points) - np.count_nonzero(near))
            if n_beyond and self.mode == MODE_REPLACE:
                points = points[near]
            elif n_beyond:
                # accumulate: a far point is a free ray up to the range (octomap's maxrange cuts it
                # and marks no cell); pulled in to just past the range, its ray is the same
                far = ~near
                length = np.sqrt(np.einsum("ij,ij->i", offset[far], offset[far]))
                points = points.copy()
                points[far] = origin + offset[far] * ((self._max_range_m + 2.0 * self._resolution_m) / length)[:, None]
        points_world, _ = cloud_to_planning_frame(points, frame_id, world.robot, positions)
        origin_world = T_world_frame[:3, :3] @ origin + T_world_frame[:3, 3]
        robot_kept = filter_robot_points(world, positions, points_world, self._padding_m)
        object_kept = points_outside_world_objects(world, robot_kept.points_m, self._padding_m)
        reach_m = OCTREE_CELLS_EACH_WAY * self._resolution_m
        for what, p in (("a point", object_kept.points_m), ("the sensor origin", origin_world[None])):
            if len(p) and np.max(np.abs(p)) >= reach_m * (1.0 - 1e-6):
                raise PointCloudError(f"{what} lies {np.max(np.abs(p)):g} m from the planning frame's origin along "
                                      f"an axis, beyond the {reach_m:g} m an octree of resolution "
                                      f"{self._resolution_m:g} m spans; lower max_range_m")
        occupancy = self._updater.update(object_kept.points_m, origin_world)
        # the published map goes without the cells inside world objects; the updater keeps
        # them (accumulate's free-space knowledge stays whole), the next cloud clears them again
        cleared = clear_cells_in_world_objects(world, occupancy)
        n_cleared = occupancy.n_occupied - cleared.n_occupied
        result = CloudUpdate(applied=True, n_received=n_received, n_non_finite=n_non_finite,
                             n_subsampled_out=n_subsampled_out, n_beyond_range=n_beyond,
                             n_robot_filtered=robot_kept.n_dropped, n_object_filtered=object_kept.n_dropped,
                             n_cells=cleared.n_occupied, n_cells_cleared=n_cleared,
                             duration_s=time.perf_counter() - start)
        return result, cleared

    def warm_up(self) -> None:
        """Compile the self-filter's kernels now (or load them from numba's cache), on a few points;
        nothing is published and no counter changes."""
        world = self._scene.world
        probe_m = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.5], [1.0, 0.0, 0.5], [0.0, 1.0, 1.0]])
        filter_robot_points(world, self._scene.current_positions, probe_m, self._padding_m)
        points_outside_world_objects(world, probe_m, self._padding_m)

    # ----- the map as a whole ---------------------------------------------------------------
    def clear(self) -> int:
        """Forget every cell (the scene then has no ``<octomap>``); the cells the map held before."""
        with self._lock:
            before = self._scene.occupancy
            self._updater.clear()
            self._publish(None)
            self._stats = replace(self._stats, cells=0, last_update_s=self._clock())
        return 0 if before is None else before.n_occupied

    def set_map(self, occupancy: OccupancyMap) -> OccupancyMap:
        """Make a given map (e.g. ``OccupancyMap.load`` of a file) the scene's, without its cells
        inside world objects; returns the map published. Robot cells are not filtered (the map
        is taken as given). ``accumulate`` goes on from its cells and needs its resolution.

        Raises
        ------
        PointCloudError
            For something other than an OccupancyMap, or (``accumulate``) another resolution;
            the map is then unchanged.
        """
        if not isinstance(occupancy, OccupancyMap):
            raise PointCloudError(f"set_map needs an OccupancyMap, got {type(occupancy).__name__}")
        with self._lock:
            self._check_resolution(occupancy)
            cleared = clear_cells_in_world_objects(self._scene.world, occupancy)
            self._adopt(cleared)
            self._publish(cleared)
            self._stats = replace(self._stats, cells=cleared.n_occupied, last_update_s=self._clock())
        return cleared

    def set_points(self, points_world_m: np.ndarray, resolution_m: float | None = None) -> OccupancyMap:
        """:meth:`set_map` of the map whose occupied cells hold the points (N, 3) (planning frame,
        metres; at most ``max_cloud_points``), at ``resolution_m`` (default the monitor's).

        Raises
        ------
        PointCloudError
            For points that are not (N, 3) finite coordinates, too many of them, a bad
            resolution, or (``accumulate``) another resolution; the map is then unchanged.
        """
        points = check_points(points_world_m)
        if len(points) > self._max_cloud_points:
            raise PointCloudError(f"{len(points)} points, more than max_cloud_points {self._max_cloud_points}")
        resolution = self._resolution_m if resolution_m is None else resolution_m
        return self.set_map(OccupancyMap.from_points(points, resolution, "points"))

    # ----- internals ------------------------------------------------------------------
    def _check_resolution(self, occupancy: OccupancyMap) -> None:
        if self.mode == MODE_ACCUMULATE and not self._same_resolution(occupancy):
            raise PointCloudError(f"map resolution {occupancy.resolution_m:g} m differs from the monitor's "
                                  f"{self._resolution_m:g} m, which mode 'accumulate' goes on from (set "
                                  f"octomap_resolution to it, or use mode 'replace')")

    def _same_resolution(self, occupancy: OccupancyMap) -> bool:
        return abs(occupancy.resolution_m - self._resolution_m) <= 1e-12 * self._resolution_m   # the updater's own test

    def _adopt(self, occupancy: OccupancyMap | None) -> None:
        """The updater's state follows a map set from outside (accumulate goes on from it)."""
        if occupancy is None:
            self._updater.clear()
        elif self._same_resolution(occupancy):
            self._updater.set_map(occupancy)
        elif self.mode == MODE_ACCUMULATE:     # another resolution: its cells re-binned at the monitor's
            self._updater.set_map(OccupancyMap.from_cell_centres(occupancy.leaf_centres_m(), self._resolution_m,
                                                                 occupancy.source))
        else:
            self._updater.clear()             # replace forgets the map at the next cloud anyway

    def _adopt_scene_map(self):
        """The scene's world now; if its map is not the one this monitor published (a world
        file, ``RemoveObject('<octomap>')``), the updater adopts it first."""
        world = self._scene.world
        current = occupancy_of(world)
        if current is not self._published:
            self._adopt(current)
            self._published = current
        return world

    def _publish(self, occupancy: OccupancyMap | None) -> None:
        self._scene.set_occupancy(occupancy)
        self._published = self._scene.occupancy

    def _refused(self, exc: BaseException) -> None:
        with self._lock:
            self._refused_locked(exc)

    def _refused_locked(self, exc: BaseException) -> None:
        self._stats = replace(self._stats, clouds_refused=self._stats.clouds_refused + 1, last_error=str(exc))
