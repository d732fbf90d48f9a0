"""What a check is asked: the request object, and named joint values made into configurations.

Both the configuration checks (predicate, batch, explain) and the motion checks stand on
this module, as MoveIt's ``collision_common`` (``CollisionRequest``) and Drake's
``CollisionCheckerParams`` / ``CollisionCheckerContext`` serve the discrete and the
continuous checks alike.

- :class:`CheckRequest`: which pairs to check (group, padding switches), against which
  world snapshot, and how much to report (contact distance, contact budget). Built
  once by the facade (:class:`checker.CollisionChecker`) and passed down.
- :class:`ConfigurationResolver`: named joint values (K joints, N configurations) to
  complete configurations (N, A) in the robot's active-joint order, with the request
  faults (:class:`errors.RequestError`) and the joint-limits message.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, fields

import numpy as np

from my_collision_pkg.core.errors import RequestError
from my_collision_pkg.core.scene.planning_scene import CollisionWorld, PairSelection, PlanningScene

NAME_CACHE_SIZE = 64                      # joint-name tuples whose active indices are kept
MAX_BATCH_CONFIGURATIONS = 1_000_000      # the largest max_batch (the node's parameter has this range)


@dataclass(frozen=True)
class CheckRequest:
    """One check's options; the fields are named as the facade's keywords.

    Attributes
    ----------
    group_name : str
        SRDF group whose bodies are checked ("" : every body).
    pad_environment_collisions, pad_self_collisions : bool
        Whether robot-environment / robot-robot pairs get their links' padding.
    contact_distance : float
        Metres; explain (and a motion's contacts) also report pairs closer than this.
    max_contacts : int or None
        Contact budget; None (or 0) for the checker's own.
    world : CollisionWorld or None
        The snapshot to check against; None for the scene's current one. A request of
        several steps (explain, then surfaces) passes one snapshot to all of them.
    """
    group_name: str = ""
    pad_environment_collisions: bool = True
    pad_self_collisions: bool = False
    contact_distance: float = 0.0
    max_contacts: int | None = None
    world: CollisionWorld | None = None

    @classmethod
    def from_keywords(cls, request: "CheckRequest | None", **keywords) -> "CheckRequest":
        """``request`` itself, or a request made of the facade's keywords when it is None.

        Raises
        ------
        TypeError
            When ``request`` is given together with a keyword of a non-default value.
        """
        if request is None:
            return cls(**keywords)
        clash = [name for name, value in keywords.items() if _differs(value, _DEFAULTS[name])]
        if clash:
            raise TypeError(f"give either request= or {', '.join(clash)}, not both")
        return request

    def world_of(self, scene: PlanningScene) -> CollisionWorld:
        """The snapshot this request checks: its own, else the scene's current one."""
        return scene.world if self.world is None else self.world

    def selection(self, world: CollisionWorld) -> PairSelection:
        """The pairs of ``world`` this request checks, with their padding margins.

        Raises
        ------
        RequestError
            If the group is unknown.
        """
        return world.pair_selection(self.group_name, self.pad_environment_collisions, self.pad_self_collisions)

    def check_contact_distance(self) -> None:
        """Raises :class:`RequestError` unless ``contact_distance`` is finite and >= 0."""
        if not np.isfinite(self.contact_distance) or self.contact_distance < 0:
            raise RequestError(f"contact_distance {self.contact_distance} m must be finite and >= 0")


_DEFAULTS = {f.name: f.default for f in fields(CheckRequest)}


def _differs(value: object, default: object) -> bool:
    if value is default:
        return False
    if value is None or default is None:
        return True
    return bool(value != default)


class ConfigurationResolver:
    """Named joint values to complete configurations of one scene's robot.

    Parameters
    ----------
    scene : PlanningScene
        Joints not named keep the scene's current values.
    check_joint_limits : bool
        Whether :meth:`limits_message` reports joints outside their limits.
    """

    def __init__(self, scene: PlanningScene, *, check_joint_limits: bool = True) -> None:
        self._scene = scene
        self.check_joint_limits = bool(check_joint_limits)
        # joint-name tuple -> active indices (K,) of names resolved once; read without the lock
        # (the single predicate's hot path: ``indices_by_names.get(tuple(names))``), written under it
        self.indices_by_names: OrderedDict[tuple[str, ...], np.ndarray] = OrderedDict()
        self._name_lock = threading.Lock()

    @property
    def scene(self) -> PlanningScene:
        return self._scene

    def joint_indices(self, joint_names) -> np.ndarray:
        """Active indices (K,) of the named joints.

        Raises
        ------
        RequestError
            No names, a name given twice, an unknown joint, a mimic or a fixed joint.
        """
        key = tuple(joint_names)
        cached = self.indices_by_names.get(key)
        if cached is not None:
            return cached
        robot = self._scene.robot
        if not key:
            raise RequestError("the request names no joints")
        seen: set[str] = set()
        indices = []
        for name in key:
            if name in seen:
                raise RequestError(f"joint '{name}' is named twice")
            seen.add(name)
            index = robot.active_index(name)
            if index is None:
                if not robot.has_joint(name):
                    raise RequestError(f"unknown joint '{name}'")
                joint = robot.joint(name)
                if joint.mimic_of is not None:
                    raise RequestError(f"joint '{name}' mimics '{joint.mimic_of}'; give '{joint.mimic_of}' instead")
                raise RequestError(f"joint '{name}' is {joint.type}, not a variable")
            indices.append(index)
        result = np.array(indices, dtype=np.int64)
        with self._name_lock:
            self.indices_by_names[key] = result
            while len(self.indices_by_names) > NAME_CACHE_SIZE:
                self.indices_by_names.popitem(last=False)
        return result

    def full_configurations(self, joint_names, positions, *,
                            max_batch: int = MAX_BATCH_CONFIGURATIONS) -> np.ndarray:
        """Complete configurations (N, A) from named joint values (N, K) or (K,).

        Raises
        ------
        RequestError
            Unknown, repeated or non-variable joint, length mismatch, NaN or infinity,
            an empty request or more than ``max_batch`` configurations.
        """
        indices, values = self.named_values(joint_names, positions, max_batch)
        self.check_finite(joint_names, values, 0, values.shape[0] > 1)
        return self.complete(indices, values)

    def named_values(self, joint_names, positions, max_batch: int) -> tuple[np.ndarray, np.ndarray]:
        """Active indices (K,) of the named joints and the values as (N, K) (a view when possible).

        Raises
        ------
        RequestError
            As :meth:`full_configurations`, except non-finite values (see :meth:`check_finite`).
        """
        indices = self.joint_indices(joint_names)
        values = np.asarray(positions, dtype=float)
        if values.ndim == 1:
            if values.size % len(indices) != 0 or values.size == 0:
                raise RequestError(f"{len(indices)} joint names but {values.size} positions")
            values = values.reshape(-1, len(indices))
        if values.ndim != 2 or values.shape[1] != len(indices):
            raise RequestError(f"positions must have {len(indices)} columns, one per joint name")
        if values.shape[0] > max_batch:
            raise RequestError(f"{values.shape[0]} configurations exceed max_batch = {max_batch}")
        return indices, values

    @staticmethod
    def check_finite(joint_names, values: np.ndarray, first_row: int, numbered: bool) -> None:
        """Raises :class:`RequestError` naming the first non-finite value of ``values`` (N, K).

        ``first_row`` is the number of the first row in the whole request; ``numbered``
        says whether the message names the configuration.
        """
        finite = np.isfinite(values)
        if not finite.all():
            row, col = np.argwhere(~finite)[0]
            raise RequestError(f"joint '{joint_names[col]}' has non-finite position {values[row, col]}"
                               + (f" in configuration {first_row + row}" if numbered else ""))

    def complete(self, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Configurations (N, A): the scene's current values with columns ``indices`` set to ``values`` (N, K)."""
        q = np.repeat(self._scene.current_positions[None, :], values.shape[0], axis=0)
        q[:, indices] = values
        return q

    def single_configuration(self, joint_names, positions) -> np.ndarray:
        """The complete configuration (1, A) for one named configuration (K,).

        Raises
        ------
        RequestError
            As :meth:`full_configurations`, or when the positions are not exactly one per name.
        """
        values = np.asarray(positions, dtype=float)
        if values.ndim != 1 or len(values) != len(joint_names):
            raise RequestError(f"{len(joint_names)} joint names but {values.size} positions")
        return self.full_configurations(joint_names, values)

    def limits_message(self, q: np.ndarray) -> str | None:
        """Why configuration ``q`` (A,) is out of bounds (the first joint outside its limits), or None.

        Always None when the limits are not checked.
        """
        if not self.check_joint_limits:
            return None
        robot = self._scene.robot
        bad = robot.out_of_bounds(q)
        if bad.size == 0:
            return None
        k = bad[0]
        name = robot.active_joint_names[k]
        return (f"joint '{name}' at {q[k]:.6g} is outside its limits "
                f"[{robot.lower_limits[k]:.6g}, {robot.upper_limits[k]:.6g}]")
