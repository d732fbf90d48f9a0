"""The public facade: validity predicate, batch predicate, explain and motion checks over a planning scene.

One pipeline serves the configuration checks: compiled kernels compute link and shape
poses and cull shape pairs whose oriented bounding boxes (grown by the pair's margin)
cannot touch; only the survivors reach fcl (:mod:`pair_tests`). A pair is in collision
when fcl finds a contact, when its signed distance is below the summed padding, or when
one body lies wholly inside a closed mesh of the other (the solid-body test, which fcl's
surface-only mesh check misses). Explain (:mod:`explain`) reports the contacts; the
motion checks (:mod:`motion`, :mod:`trajectory`) stand on both.

Order: the predicate tests environment pairs first, then self pairs, and stops at the
first collision; explain reports self contacts before environment ones.

Every check takes its request options either as keywords (``group_name``, the padding
switches, ``contact_distance``, ``max_contacts``, ``world``) or as one
:class:`request.CheckRequest` (``request=``), as Drake's ``CollisionChecker`` takes its
context; this module builds the request once and passes it down.
"""
from __future__ import annotations

import dataclasses
import weakref

import numpy as np

from my_collision_pkg.core.checks import motion, octomap_cells, trajectory
from my_collision_pkg.core.checks.batch_workers import FIRST_COLLISION, BatchWorkerError, BatchWorkers  # noqa: F401
from my_collision_pkg.core.checks.clearance import Clearance, compute_clearance
from my_collision_pkg.core.checks.explain import Explainer
from my_collision_pkg.core.checks.limits import WorkLimits, WorkMeter
from my_collision_pkg.core.checks.motion_validity import MotionValidity
from my_collision_pkg.core.checks.pair_tests import PairTestScratch
from my_collision_pkg.core.checks.request import MAX_BATCH_CONFIGURATIONS, CheckRequest, ConfigurationResolver
from my_collision_pkg.core.checks.results import (BatchCollisions, BodyType, Contact, ContactType,  # noqa: F401
                                                  DEFAULT_TOUCH_TOLERANCE_M, Explanation, MotionMode, MotionResult, NO_SUBSHAPE, Status,
                                                  TrajectoryResult, Verdict)
from my_collision_pkg.core.errors import CollisionPkgError, RequestError, RequestStopped  # noqa: F401
from my_collision_pkg.core.kernels.culling import NON_FINITE, single_configuration_candidates
from my_collision_pkg.core.kernels.warm_up import warm_up
from my_collision_pkg.core.scene.planning_scene import CollisionWorld, PairSelection, PlanningScene

DEFAULT_MAX_CONTACTS = 100
DEFAULT_CONTACTS_PER_PAIR = 4
BATCH_CHUNK = 4096                        # configurations posed and culled together in check_batch
__all__ = ["BATCH_CHUNK", "BatchCollisions", "CheckRequest", "Clearance", "CollisionChecker", "DEFAULT_CONTACTS_PER_PAIR",
           "DEFAULT_MAX_CONTACTS", "DEFAULT_TOUCH_TOLERANCE_M", "MAX_BATCH_CONFIGURATIONS", "MotionMode",
           "MotionResult", "MotionValidity", "RequestStopped", "TrajectoryResult", "WorkLimits"]


class CollisionChecker:
    """Checks configurations and motions against a :class:`PlanningScene`.

    Parameters
    ----------
    scene : PlanningScene
    check_joint_limits : bool
        Refuse configurations outside the joint limits (status OUT_OF_BOUNDS).
    max_contacts : int
        Default contact budget of :meth:`explain`.
    contacts_per_pair : int
        Most contacts kept for one pair of shapes.
    limits : WorkLimits
        The most work one request may ask for (:mod:`limits`); beyond a bound a motion or
        trajectory check answers ``Status.INVALID_REQUEST`` naming it. Settable: a new value
        applies from the next request.
    stop_event : object with ``is_set()`` (e.g. ``threading.Event``) or None
        When set while :meth:`check_batch`, :meth:`explain`, :meth:`check_motion` or
        :meth:`check_trajectory` runs, the check stops between chunks of its work (within
        about 100 ms of work) and raises :class:`errors.RequestStopped`.
    batch_workers : int or None
        Processes a large :meth:`check_batch` or :meth:`clearance` is split across, this one
        included (None or 0, the default: every core this process may run on; 1: this
        process only). See :mod:`batch_workers`: the others are forked on the first batch of
        at least ``batch_workers.MIN_FORK_CONFIGURATIONS`` configurations and hold the world
        snapshot they were forked with; the answers are those of one process. Settable;
        :meth:`close` ends them.

    Raises
    ------
    ValueError
        For ``max_contacts`` or ``contacts_per_pair`` below 1, or a ``batch_workers``
        that is not a whole number in [0, ``batch_workers.MAX_BATCH_WORKERS``].
    """

    def __init__(self, scene: PlanningScene, *, check_joint_limits: bool = True,
                 max_contacts: int = DEFAULT_MAX_CONTACTS, contacts_per_pair: int = DEFAULT_CONTACTS_PER_PAIR,
                 limits: WorkLimits = WorkLimits(), stop_event=None, batch_workers: int | None = None) -> None:
        if max_contacts < 1 or contacts_per_pair < 1:
            raise ValueError("max_contacts and contacts_per_pair must be at least 1")
        self._batch = BatchWorkers(batch_workers)
        # the pool's processes end with the checker (or at exit), whichever comes first
        weakref.finalize(self, self._batch.close)
        self.limits = limits
        self.stop_event = stop_event
        self._scene = scene
        self._resolver = ConfigurationResolver(scene, check_joint_limits=check_joint_limits)
        self._scratch = PairTestScratch()
        # clearance's requests made of its keywords alone (no request, no world), one per combination: a
        # one-configuration call is a few microseconds, the frozen request's making about one of them
        self._keyword_requests: dict[tuple, CheckRequest] = {}
        self._explainer = Explainer(self._resolver, self._scratch, max_contacts=max_contacts,
                                    contacts_per_pair=contacts_per_pair)
        warm_up()

    @property
    def scene(self) -> PlanningScene:
        return self._scene

    @property
    def limits(self) -> WorkLimits:
        """The work bounds of each request (settable; applies from the next request)."""
        return self._limits

    @limits.setter
    def limits(self, value: WorkLimits) -> None:
        if not isinstance(value, WorkLimits):
            raise TypeError(f"limits must be a WorkLimits, not {type(value).__name__}")
        self._limits = value

    @property
    def batch_workers(self) -> int:
        """Processes a large :meth:`check_batch` or :meth:`clearance` is split across, this one included (settable:
        a whole number, 0 or None for every core; a new value ends the current pool)."""
        return self._batch.workers

    @batch_workers.setter
    def batch_workers(self, value) -> None:
        self._batch.workers = value

    @property
    def batch_worker_pids(self) -> tuple[int, ...]:
        """Process ids of the batch workers running now (empty before the first large batch,
        with ``batch_workers`` 1, after :meth:`close` or a worker's failure)."""
        pool = self._batch.pool
        return () if pool is None else pool.pids

    def close(self) -> None:
        """End the batch worker processes, if any (the checker stays usable: a later large
        batch forks them again)."""
        self._batch.close()

    def _meter(self) -> WorkMeter:
        """A new request's account: the current limits and the stop event."""
        return WorkMeter(self._limits, self.stop_event)

    def work_meter(self) -> WorkMeter:
        """A new request's :class:`limits.WorkMeter` (the current limits and the stop event)."""
        return WorkMeter(self._limits, self.stop_event)

    @property
    def check_joint_limits(self) -> bool:
        """Whether configurations outside the joint limits are refused (settable)."""
        return self._resolver.check_joint_limits

    @check_joint_limits.setter
    def check_joint_limits(self, value: bool) -> None:
        self._resolver.check_joint_limits = bool(value)

    @property
    def max_contacts(self) -> int:
        """Contact budget of a request that names none (settable)."""
        return self._explainer.max_contacts

    @max_contacts.setter
    def max_contacts(self, value: int) -> None:
        self._explainer.max_contacts = int(value)

    @property
    def contacts_per_pair(self) -> int:
        """Most contacts kept for one pair of shapes (settable)."""
        return self._explainer.contacts_per_pair

    @contacts_per_pair.setter
    def contacts_per_pair(self, value: int) -> None:
        self._explainer.contacts_per_pair = int(value)

    # ----- request handling ---------------------------------------------
    def full_configurations(self, joint_names, positions, *, max_batch: int = MAX_BATCH_CONFIGURATIONS) -> np.ndarray:
        """Complete configurations (N, A) from named joint values (N, K) or (K,).

        Joints not named keep the scene's current values.

        Raises
        ------
        RequestError
            Unknown, repeated or non-variable joint, length mismatch, NaN or infinity,
            an empty request or more than ``max_batch`` configurations.
        """
        return self._resolver.full_configurations(joint_names, positions, max_batch=max_batch)

    def single_configuration(self, joint_names, positions) -> np.ndarray:
        """The complete configuration (1, A) for one named configuration (K,).

        Raises
        ------
        RequestError
            As :meth:`full_configurations`, or when the positions are not exactly one per name.
        """
        return self._resolver.single_configuration(joint_names, positions)

    # ----- predicate ----------------------------------------------------
    def check(self, joint_names, positions, *, group_name: str = "", pad_environment_collisions: bool = True,
              pad_self_collisions: bool = False, world: CollisionWorld | None = None,
              request: CheckRequest | None = None) -> Verdict:
        """Validity of one configuration, with a status and a one-line message.

        Bad input gives ``Status.INVALID_REQUEST`` (never raises on it). ``world`` is the
        snapshot to check against (default: the scene's current one); a request made of
        several steps (explain, then surfaces) passes one snapshot to all of them.
        ``request`` replaces the keywords before it (its other fields are not used here).

        The fast path: completion, the finite-value and limits checks, kinematics, shape
        poses and culling are one compiled call on per-thread buffers; only the pairs
        that survive culling cost Python. Verdicts, statuses and messages are those of
        :meth:`check_batch` and :meth:`single_configuration` (whose code names every fault).

        Raises
        ------
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        """
        if request is not None:       # the keyword route builds no request: this is the fast path
            request = CheckRequest.from_keywords(request, group_name=group_name,
                                                 pad_environment_collisions=pad_environment_collisions,
                                                 pad_self_collisions=pad_self_collisions, world=world)
            group_name, world = request.group_name, request.world
            pad_environment_collisions, pad_self_collisions = (request.pad_environment_collisions,
                                                               request.pad_self_collisions)
        resolver = self._resolver
        try:
            world = self._scene.world if world is None else world
            values = np.asarray(positions, dtype=float)
            indices = resolver.indices_by_names.get(tuple(joint_names))
            if indices is None or values.ndim != 1 or values.shape[0] != indices.shape[0]:
                resolver.single_configuration(joint_names, values)   # raises the fault; else caches the names
                indices = resolver.joint_indices(joint_names)
            try:
                selection = world.pair_selection(group_name, pad_environment_collisions, pad_self_collisions)
            except CollisionPkgError:
                resolver.single_configuration(joint_names, values)   # a fault of the configuration comes first
                raise
            if not (values.flags.c_contiguous and values.flags.writeable):
                values = np.array(values)                         # one compiled signature for every caller
            buffers, arguments = self._scratch.single_buffers(world, selection)
            n = single_configuration_candidates(values, indices, self._scene.current_positions,
                                                bool(resolver.check_joint_limits), *arguments)
            if n == NON_FINITE:
                resolver.single_configuration(joint_names, values)   # raises, naming the joint
        except CollisionPkgError as exc:
            return Verdict(False, Status.INVALID_REQUEST, str(exc))
        if n < 0:
            return Verdict(False, Status.OUT_OF_BOUNDS, resolver.limits_message(buffers.q[0]))
        if n == 0:
            return Verdict(True, Status.VALID, "valid")
        posed = self._scratch.posed(world, buffers.T_world_shape[0])
        hit = posed.first_hit(selection, buffers.survivors[:n])
        if hit < 0:
            return Verdict(True, Status.VALID, "valid")
        a, b = selection.pairs[hit]
        kind = "self-collision" if world.pair_is_self[selection.index[hit]] else "environment collision"
        return Verdict(False, Status.IN_COLLISION,
                       f"{kind} between '{world.shapes[a].owner}' and '{world.shapes[b].owner}'")

    def is_valid(self, joint_names, positions, *, request: CheckRequest | None = None, **options) -> bool:
        """True when the configuration is within limits and collision-free (``options``: those of :meth:`check`).

        Raises
        ------
        RequestError
            On a malformed request (see :meth:`full_configurations`) or an unknown group.
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        """
        verdict = self.check(joint_names, positions, request=request, **options)
        if verdict.status == Status.INVALID_REQUEST:
            raise RequestError(verdict.message)
        return verdict.valid

    def _first_collision(self, world: CollisionWorld, q: np.ndarray, selection: PairSelection) -> np.ndarray:
        """Per configuration, the index (into ``selection.pairs``) of the first colliding pair, or -1."""
        return self._explainer.first_collision(world, q, selection)

    def check_batch(self, joint_names, positions, *, group_name: str = "", pad_environment_collisions: bool = True,
                    pad_self_collisions: bool = False, world: CollisionWorld | None = None,
                    max_batch: int = MAX_BATCH_CONFIGURATIONS,
                    request: CheckRequest | None = None) -> tuple[np.ndarray, Verdict]:
        """Validity of N configurations given as (N, K) or flat row-major (N*K,).

        Configurations are checked BATCH_CHUNK at a time, so the memory used beyond
        the request and the answer does not grow with N. More than ``max_batch``
        configurations are refused before any work. ``request`` replaces the keywords
        before ``max_batch``.

        Returns
        -------
        valid : (N,) bool array (empty on an invalid request)
        summary : Verdict
            INVALID_REQUEST with the fault, else VALID when all are valid, else the
            status of the first refused configuration with a count.

        Raises
        ------
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        RequestStopped
            When :attr:`stop_event` is set while the batch runs (looked at between chunks).
        """
        request = CheckRequest.from_keywords(request, group_name=group_name,
                                             pad_environment_collisions=pad_environment_collisions,
                                             pad_self_collisions=pad_self_collisions, world=world)
        answer = self._batch_first(joint_names, positions, request, max_batch)
        if isinstance(answer, Verdict):
            return np.zeros(0, dtype=bool), answer
        first, out, _, _ = answer
        valid = (first < 0) & ~out
        return valid, self._batch_summary(valid, out)

    def first_collisions(self, joint_names, positions, *, group_name: str = "",
                         pad_environment_collisions: bool = True, pad_self_collisions: bool = False,
                         world: CollisionWorld | None = None, max_batch: int = MAX_BATCH_CONFIGURATIONS,
                         request: CheckRequest | None = None) -> BatchCollisions:
        """:meth:`check_batch` with, per configuration, its status and the first colliding pair.

        The same work and the same verdicts as :meth:`check_batch` (``valid`` is its array,
        bit for bit); the pair is the one the predicate stopped at (environment pairs first,
        then self pairs, in the selection's order), so a label is the predicate's own reason.
        Bad input gives a :class:`results.BatchCollisions` with ``INVALID_REQUEST`` and no rows.

        Raises
        ------
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        RequestStopped
            When :attr:`stop_event` is set while the batch runs (looked at between chunks).
        """
        request = CheckRequest.from_keywords(request, group_name=group_name,
                                             pad_environment_collisions=pad_environment_collisions,
                                             pad_self_collisions=pad_self_collisions, world=world)
        answer = self._batch_first(joint_names, positions, request, max_batch)
        if isinstance(answer, Verdict):
            return BatchCollisions(answer)
        first, out, world, selection = answer
        valid = (first < 0) & ~out
        status = np.full(len(first), int(Status.VALID), dtype=np.int8)
        status[first >= 0] = int(Status.IN_COLLISION)
        status[out] = int(Status.OUT_OF_BOUNDS)
        pair_shapes = np.full((len(first), 2), -1, dtype=np.int64)
        hit = first >= 0
        pair_shapes[hit] = selection.pairs[first[hit]]
        owners = np.array([entry.owner for entry in world.shapes] + [None], dtype=object)
        return BatchCollisions(self._batch_summary(valid, out), valid, status, owners[pair_shapes],
                               np.array([entry.shape_id for entry in world.shapes] + [-1], dtype=np.int64)[pair_shapes])

    def _batch_first(self, joint_names, positions, request: CheckRequest, max_batch: int):
        """The batch predicate: per configuration the index into the selection's pairs of the first
        colliding pair (-1: none, or outside the limits) and whether it is outside the joint limits,
        with the world and selection used; or the INVALID_REQUEST Verdict of bad input."""
        resolver = self._resolver
        try:
            world = request.world_of(self._scene)
            indices, values = resolver.named_values(joint_names, positions, max_batch)
            n = values.shape[0]
            for start in range(0, n, BATCH_CHUNK):
                resolver.check_finite(joint_names, values[start:start + BATCH_CHUNK], start, n > 1)
            selection = request.selection(world)
        except CollisionPkgError as exc:
            return Verdict(False, Status.INVALID_REQUEST, str(exc))
        meter = self._meter()
        if self._batch.wants_pool(n):
            meter.check_stop()
            pool = self._batch.acquire(world, n)   # None: this process checks it alone
            if pool is not None:
                try:
                    first, out = self._batch_in_pool(pool, world, request, selection, indices, values, meter)
                finally:
                    self._batch.release()
                return first, out, world, selection
        first_all = np.full(n, -1, dtype=np.int64)
        out = np.zeros(n, dtype=bool)
        robot = world.robot
        lower, upper = robot.lower_limits, robot.upper_limits
        for start in range(0, n, BATCH_CHUNK):
            meter.check_stop()
            q = resolver.complete(indices, values[start:start + BATCH_CHUNK])
            inside = np.arange(len(q))
            if resolver.check_joint_limits:
                outside = out[start:start + len(q)]     # a view: written through
                np.any((q < lower) | (q > upper), axis=1, out=outside)
                inside = np.flatnonzero(~outside)
            if inside.size:
                first_all[start + inside] = self._explainer.first_collision(world, q[inside], selection, stop=meter)
        return first_all, out, world, selection

    def _batch_in_pool(self, pool, world: CollisionWorld, request: CheckRequest, selection: PairSelection,
                       indices: np.ndarray, values: np.ndarray, meter: WorkMeter) -> tuple[np.ndarray, np.ndarray]:
        """The batch predicate's first colliding pairs and out-of-limits marks, the configurations shared
        between this process and ``pool``'s workers (:class:`batch_workers.BatchPool`)."""
        resolver = self._resolver
        n = values.shape[0]
        first_all = np.full(n, -1, dtype=np.int64)
        out = np.zeros(n, dtype=bool)
        robot = world.robot
        lower, upper = robot.lower_limits, robot.upper_limits
        check_limits = bool(resolver.check_joint_limits)
        cursor = [0]

        def next_task(size: int):
            while cursor[0] < n:
                start = cursor[0]
                cursor[0] = stop = min(n, start + size)
                q = resolver.complete(indices, values[start:stop])
                if check_limits:
                    outside = out[start:stop]
                    np.any((q < lower) | (q > upper), axis=1, out=outside)
                    inside = np.flatnonzero(~outside)
                    if inside.size == 0:
                        continue
                    if inside.size < len(q):
                        return start + inside, np.ascontiguousarray(q[inside])
                return np.arange(start, stop), q
            return None

        def deliver(rows: np.ndarray, first: np.ndarray) -> None:
            first_all[rows] = first

        key = (request.group_name, request.pad_environment_collisions, request.pad_self_collisions)
        pool.run(next_task, (FIRST_COLLISION, key), lambda q: self._explainer.first_collision(world, q, selection),
                 deliver, stop=meter, total=n)
        return first_all, out

    @staticmethod
    def _batch_summary(valid: np.ndarray, out: np.ndarray) -> Verdict:
        n = len(valid)
        n_bad = int(n - np.count_nonzero(valid))
        if n_bad == 0:
            return Verdict(True, Status.VALID, f"all {n} configurations valid")
        first_bad = int(np.argmin(valid))
        first_status = Status.OUT_OF_BOUNDS if out[first_bad] else Status.IN_COLLISION
        return Verdict(False, first_status, f"{n_bad} of {n} configurations invalid (first: index {first_bad})")

    # ----- explain ------------------------------------------------------
    def explain(self, joint_names, positions, *, group_name: str = "", pad_environment_collisions: bool = True,
                pad_self_collisions: bool = False, contact_distance: float = 0.0,
                max_contacts: int | None = None, world: CollisionWorld | None = None,
                request: CheckRequest | None = None) -> Explanation:
        """Why a configuration is refused: status, message, colliding bodies and contacts.

        ``valid`` is exactly the predicate's verdict on the same request. With
        ``contact_distance > 0`` pairs closer than that are reported too (positive
        distance) without making the configuration invalid. At most ``max_contacts``
        contacts are returned; the verdict does not depend on the budget. ``request``
        replaces every keyword.

        Raises
        ------
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        RequestStopped
            When :attr:`stop_event` is set before or while it runs (looked at between pairs).
        """
        request = CheckRequest.from_keywords(request, group_name=group_name,
                                             pad_environment_collisions=pad_environment_collisions,
                                             pad_self_collisions=pad_self_collisions,
                                             contact_distance=contact_distance, max_contacts=max_contacts,
                                             world=world)
        meter = self._meter()
        meter.check_stop()
        regions: dict = {}

        def nearest_cells(world, selection):     # per robot shape and region of cells: the nearest few
            q = self._resolver.single_configuration(joint_names, positions)
            request.check_contact_distance()
            cells, found = octomap_cells.cells_for_explain(world, selection, q, request.contact_distance,
                                                           self.limits.max_octomap_cells)
            regions.update(found)
            return cells

        def nearby_cells(world, selection):      # every cell near the robot
            q = self._resolver.single_configuration(joint_names, positions)
            return octomap_cells.cells_at_configurations(world, selection, q, request.contact_distance)
        cell_request, refused = self._octomap_request(request, nearest_cells)
        if refused is None:
            explanation = self._explainer.explain(joint_names, positions, cell_request, stop=meter)
            # without an octomap the explainer's verdicts are the predicate's own (pair_tests.PosedPairs
            # .collides): the second check is only for the octomap's cells
            if (explanation.status == Status.INVALID_REQUEST
                    or not octomap_cells.has_octree(request.world_of(self._scene))
                    or explanation.valid == self.check(joint_names, positions, request=request).valid):
                return self._with_cell_regions(explanation, request, regions)
            # the regions' nearest cells by the hull do not decide as the tree does (a cell in a
            # concave part of a mesh): every nearby cell then
            cell_request, refused = self._octomap_request(request, nearby_cells)
        if refused is not None:
            return Explanation(False, Status.INVALID_REQUEST, refused, joint_names=self._scene.robot.active_joint_names,
                               positions=self._scene.current_positions.copy())
        explanation = self._explainer.explain(joint_names, positions, cell_request, stop=meter)
        return self._with_cell_regions(explanation, request)

    # ----- the octomap's cells (see octomap_cells.py) ----------------------
    def _octomap_request(self, request: CheckRequest, region) -> tuple[CheckRequest, str | None]:
        """``request`` on a snapshot whose octree is replaced by the cells ``region(world, selection)``
        names (unchanged without an octomap, or when the request is malformed: the check then
        names the fault), or the refusal of a region beyond ``WorkLimits.max_octomap_cells``."""
        world = request.world_of(self._scene)
        if not octomap_cells.has_octree(world):
            return request, None
        try:
            cells = region(world, request.selection(world))
            return octomap_cells.expanded(request, world, cells, self.limits.max_octomap_cells), None
        except octomap_cells.CellLimitExceeded as exc:
            return request, str(exc)
        except CollisionPkgError:
            return request, None

    def _with_cell_regions(self, result, request: CheckRequest, regions: dict | None = None):
        """``result`` (an Explanation or MotionResult) with its octomap contacts merged into regions."""
        world = request.world_of(self._scene)
        if not octomap_cells.has_octree(world) or not result.contacts:
            return result
        return dataclasses.replace(result, contacts=octomap_cells.merge_cell_regions(
            result.contacts, octomap_cells.cell_table(world).occupancy, regions))

    # ----- clearance (see clearance.py) -----------------------------------
    def clearance(self, joint_names, positions, influence_distance: float, *, group_name: str = "",
                  pad_environment_collisions: bool = True, pad_self_collisions: bool = False,
                  max_rows_per_configuration: int = 0, compute_jacobians: bool = True,
                  world: CollisionWorld | None = None, max_batch: int = MAX_BATCH_CONFIGURATIONS,
                  request: CheckRequest | None = None) -> Clearance:
        """Every checked shape pair within ``influence_distance`` (metres) of touching, with gradients.

        ``positions``: one configuration (J,) or N as (N, J) / flat (N*J,). One row per shape
        pair whose signed distance minus its padding is below ``influence_distance``: the
        distance (negative when the padded bodies overlap), witness points (planning frame and
        body frames), normal (body 0 -> body 1), the Jacobian row over ``jacobian_joint_names``
        (the request's joints; every active joint when it names none) and ``smooth``.
        ``max_rows_per_configuration`` > 0 keeps the k smallest distances of each configuration.
        Bad input gives ``Status.INVALID_REQUEST`` (or OUT_OF_BOUNDS outside the joint limits)
        naming the fault, never raises on it. ``request`` replaces the keywords it holds.

        Raises
        ------
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        RequestStopped
            When :attr:`stop_event` is set while it runs (looked at between chunks).
        """
        key = None
        if request is None and world is None:
            key = (group_name, pad_environment_collisions, pad_self_collisions)
            try:
                request = self._keyword_requests.get(key)
            except TypeError:               # (a keyword that is not hashable: a request made afresh)
                key = None
        if request is None:
            request = CheckRequest.from_keywords(None, group_name=group_name,
                                                 pad_environment_collisions=pad_environment_collisions,
                                                 pad_self_collisions=pad_self_collisions, world=world)
            if key is not None and len(self._keyword_requests) < 64:
                self._keyword_requests[key] = request
        elif key is None:
            request = CheckRequest.from_keywords(request, group_name=group_name,
                                                 pad_environment_collisions=pad_environment_collisions,
                                                 pad_self_collisions=pad_self_collisions, world=world)
        def region(world, selection):
            values = np.asarray(positions, dtype=float)
            if len(tuple(joint_names)):
                indices, values = self._resolver.named_values(joint_names, values, max_batch)
                q = self._resolver.complete(indices, values)
            else:
                q = self._scene.current_positions[None, :]
            return octomap_cells.cells_at_configurations(world, selection, q, float(influence_distance))
        request, refused = self._octomap_request(request, region)
        if refused is not None:
            return Clearance(Status.INVALID_REQUEST, refused)
        result = compute_clearance(self._resolver, request, joint_names, positions, influence_distance,
                                   max_rows_per_configuration=max_rows_per_configuration,
                                   compute_jacobians=compute_jacobians, max_batch=max_batch, stop=self._meter(),
                                   workers=self._batch, max_rows=self.limits.max_clearance_rows)
        # (the octomap's rows are already one per robot shape, counted so against the bound; this names the cells)
        if len(result) == 0 or octomap_cells.OCTOMAP_ID not in request.world_of(self._scene).objects:
            return result           # (no octomap row)
        return octomap_cells.nearest_cell_rows(result)

    # ----- motions (see motion.py and trajectory.py) ----------------------
    def check_motion(self, joint_names, start, goal, *, group_name: str = "", pad_environment_collisions: bool = True,
                     pad_self_collisions: bool = False, mode: MotionMode = MotionMode.CERTIFIED,
                     max_step: float = 0.0, contact_distance: float = 0.0, max_contacts: int | None = None,
                     tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M,
                     world: CollisionWorld | None = None, request: CheckRequest | None = None) -> MotionResult:
        """Validity of the joint-space straight line from ``start`` to ``goal`` (a :class:`results.MotionResult`).

        ``mode`` CERTIFIED (default) cannot skip a collision; DISCRETE samples at most
        ``max_step`` (rad or m) apart. Pairs closer than ``tolerance_m`` (default
        ``results.DEFAULT_TOUCH_TOLERANCE_M``) plus their padding count as touching.
        Bad input gives ``Status.INVALID_REQUEST`` (never raises on it), and so does a
        motion beyond :attr:`limits` (the message names the bound and how to split it).
        ``request`` replaces the keywords other than ``mode``, ``max_step`` and ``tolerance_m``.

        Raises
        ------
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        RequestStopped
            When :attr:`stop_event` is set while the check runs.
        """
        request = CheckRequest.from_keywords(request, group_name=group_name,
                                             pad_environment_collisions=pad_environment_collisions,
                                             pad_self_collisions=pad_self_collisions,
                                             contact_distance=contact_distance, max_contacts=max_contacts,
                                             world=world)
        def region(world, selection):
            path = np.vstack([self._resolver.single_configuration(joint_names, start),
                              self._resolver.single_configuration(joint_names, goal)])
            return octomap_cells.cells_along_path(world, selection, path,
                                                  max(0.0, request.contact_distance) + max(0.0, float(tolerance_m)))
        cell_request, refused = self._octomap_request(request, region)
        if refused is not None:
            return MotionResult(False, Status.INVALID_REQUEST, refused,
                                joint_names=self._scene.robot.active_joint_names,
                                positions=self._scene.current_positions.copy())
        result = motion.check_motion(self._explainer, cell_request, joint_names, start, goal, mode=mode,
                                     max_step=max_step, tolerance_m=tolerance_m, meter=self._meter())
        return self._with_cell_regions(result, request)

    def is_motion_valid(self, joint_names, start, goal, *, group_name: str = "",
                        pad_environment_collisions: bool = True, pad_self_collisions: bool = False,
                        screen_step: float = 0.0, tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M,
                        world: CollisionWorld | None = None, request: CheckRequest | None = None) -> bool:
        """The planner's question: is the joint-space line from ``start`` to ``goal`` free? CERTIFIED's
        verdict (never True where a configuration on the line collides), nothing else.

        :meth:`check_motion` with ``mode=MotionMode.CERTIFIED_BOOL``: samples at most
        ``screen_step`` apart (0: ``motion.SCREEN_STEP``, 0.1 rad) are screened first, midpoints
        first, so an invalid motion is refused about as fast as sampling refuses it; only a motion
        that passes gets the certificate; no contacts, no ``cc_time``, no clearance. A start or
        goal outside the joint limits is False. See :class:`MotionValidity` for the same check with
        the per-call work of the names, the group and the snapshot done once.

        Raises
        ------
        RequestError
            On a malformed request (lengths, unknown joints, NaN, unknown group) or one beyond
            :attr:`limits` (the message names the bound).
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        RequestStopped
            When :attr:`stop_event` is set while the check runs.
        """
        result = self.check_motion(joint_names, start, goal, group_name=group_name,
                                   pad_environment_collisions=pad_environment_collisions,
                                   pad_self_collisions=pad_self_collisions, mode=MotionMode.CERTIFIED_BOOL,
                                   max_step=screen_step, tolerance_m=tolerance_m, world=world, request=request)
        if result.status == Status.INVALID_REQUEST:
            raise RequestError(result.message)
        return result.valid

    def motion_validity(self, joint_names, *, group_name: str = "", pad_environment_collisions: bool = True,
                        pad_self_collisions: bool = False, screen_step: float = 0.0,
                        tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M,
                        request: CheckRequest | None = None, tubes: bool = True) -> MotionValidity:
        """The bool checks a planner calls per state and per edge, for ``joint_names`` (in that order)
        and one group and padding: a :class:`motion_validity.MotionValidity` (``is_valid(values)``,
        ``is_motion_valid(start, goal)`` as :meth:`is_motion_valid`, ``is_motion_valid_discrete``),
        with the names and the group resolved once. ``tubes``: answer an edge running close
        beside an earlier free one from that one's certified clearance (same verdicts; see
        :mod:`free_tubes`).

        Raises
        ------
        RequestError
            For unknown or repeated joints, an unknown group, a bad tolerance or screening step.
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        """
        request = CheckRequest.from_keywords(request, group_name=group_name,
                                             pad_environment_collisions=pad_environment_collisions,
                                             pad_self_collisions=pad_self_collisions)
        return MotionValidity(self, self._explainer, self._resolver, joint_names, request, screen_step=screen_step,
                              tolerance_m=tolerance_m, tubes=tubes)

    def check_trajectory(self, joint_names, points, times_s, *, group_name: str = "",
                         pad_environment_collisions: bool = True, pad_self_collisions: bool = False,
                         mode: MotionMode = MotionMode.CERTIFIED, max_step: float = 0.0,
                         stop_at_first_contact: bool = True, tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M,
                         world: CollisionWorld | None = None,
                         request: CheckRequest | None = None) -> TrajectoryResult:
        """Validity of a joint-linear trajectory through ``points`` (N, K) at ``times_s`` (N,)
        (a :class:`results.TrajectoryResult` with per body pair contact intervals).

        All-zero times mean the waypoint index as seconds. Bad input gives
        ``Status.INVALID_REQUEST`` (never raises on it). ``request`` replaces
        ``group_name``, the padding switches and ``world`` (its contact distance and
        budget are not used: the first contact's contacts are the touching pairs').
        A trajectory beyond :attr:`limits` is refused as bad input, naming the bound.

        Raises
        ------
        TypeError
            When ``request`` is given with one of the keywords it replaces.
        RequestStopped
            When :attr:`stop_event` is set while the check runs.
        """
        request = CheckRequest.from_keywords(request, group_name=group_name,
                                             pad_environment_collisions=pad_environment_collisions,
                                             pad_self_collisions=pad_self_collisions, world=world)
        def region(world, selection):
            indices, values = self._resolver.named_values(joint_names, np.asarray(points, dtype=float),
                                                          self.limits.max_trajectory_waypoints)
            return octomap_cells.cells_along_path(world, selection, self._resolver.complete(indices, values),
                                                  max(0.0, float(tolerance_m)))
        cell_request, refused = self._octomap_request(request, region)
        if refused is not None:
            return TrajectoryResult(False, Status.INVALID_REQUEST, refused)
        result = trajectory.check_trajectory(self._explainer, cell_request, joint_names, points, times_s, mode=mode,
                                             max_step=max_step, stop_at_first_contact=stop_at_first_contact,
                                             tolerance_m=tolerance_m, meter=self._meter())
        if result.first_contact is not None:
            result = dataclasses.replace(result, first_contact=self._with_cell_regions(result.first_contact, request))
        return result
