"""When one body pair is in contact over time: ``ContactList`` of ``ContactInterval``.

The model is BipedalLocomotion's ``Contacts::ContactList`` (a series of
activations and deactivations of one entity), applied to one body pair of a
trajectory check: each entry is an interval of time during which the pair is in
contact, carrying the deepest contact of the interval.

Time
----
Times are integer nanoseconds (``int``), from the trajectory's start. Integer
times make ordering and touching exact; :func:`ns_from_seconds` and
:func:`seconds_from_ns` convert at the edges (messages carry float seconds).

Interval semantics
------------------
An interval ``[activation_ns, deactivation_ns)`` is half-open: the pair is in
contact at ``activation_ns`` and at every time up to, but not including,
``deactivation_ns``. An interval is never empty: ``activation_ns <
deactivation_ns`` strictly. Two intervals *overlap* when some time lies in both,
i.e. ``a.activation_ns < b.deactivation_ns and b.activation_ns <
a.deactivation_ns``. Touching intervals (``a.deactivation_ns ==
b.activation_ns``) share no time and therefore do **not** overlap; both may be in
the list.

Invariants of a ``ContactList`` (held after every operation): entries are
sorted by strictly increasing activation time, every entry is non-empty, and no
two entries overlap. Every mutating operation either keeps the invariants and
reports success, or changes nothing and reports failure (``False``).

Queries at time ``t`` (the seed's ``end()`` is ``None`` here):

- ``get_active_contact(t)``: the entry with ``activation_ns <= t < deactivation_ns``.
- ``get_present_contact(t)``: the entry with the largest ``activation_ns <= t``,
  whether or not it is still active at ``t``.
- ``get_next_contact(t)``: the entry with the smallest ``activation_ns > t``.
"""
from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace

from my_collision_pkg.core.checks.results import BodyType, Contact, ContactType

NS_PER_S = 1_000_000_000
NO_INDEX = -1


def ns_from_seconds(time_s: float) -> int:
    """Seconds (float) -> integer nanoseconds, rounded to the nearest nanosecond."""
    return int(round(float(time_s) * NS_PER_S))


def seconds_from_ns(time_ns: int) -> float:
    """Integer nanoseconds -> seconds (float)."""
    return int(time_ns) / NS_PER_S


def _as_int(value: object, what: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer number of nanoseconds, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{what} must be an integer number of nanoseconds, got {type(value).__name__} "
            f"{value!r} (use ns_from_seconds)") from None


@dataclass(frozen=True, eq=False)
class ContactInterval:
    """One entry of a :class:`ContactList`: the pair is in contact over ``[activation_ns, deactivation_ns)``.

    Attributes
    ----------
    activation_ns, deactivation_ns : int
        Start (inclusive) and end (exclusive) of the interval, in nanoseconds.
        The interval itself does not require ``activation_ns < deactivation_ns``;
        a :class:`ContactList` refuses an entry that breaks it.
    contact : Contact or None
        The deepest contact of the interval (smallest signed distance).
    name : str
        A label of the entry (the seed's contact name); by default the list's
        ``default_name`` when added with :meth:`ContactList.add_contact_at`.
    type : ContactType
        SELF or ENVIRONMENT.
    index : int
        A user index (the seed's frame index), ``-1`` when unused.

    Equality is identity (a ``Contact`` holds arrays); compare fields instead.
    """
    activation_ns: int
    deactivation_ns: int
    contact: Contact | None = None
    name: str = ""
    type: ContactType = ContactType.SELF
    index: int = NO_INDEX

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation_ns", _as_int(self.activation_ns, "activation_ns"))
        object.__setattr__(self, "deactivation_ns", _as_int(self.deactivation_ns, "deactivation_ns"))
        object.__setattr__(self, "type", ContactType(self.type))
        object.__setattr__(self, "index", _as_int(self.index, "index"))

    @property
    def duration_ns(self) -> int:
        return self.deactivation_ns - self.activation_ns

    def is_active(self, time_ns: int) -> bool:
        """True when ``activation_ns <= time_ns < deactivation_ns``."""
        return self.activation_ns <= time_ns < self.deactivation_ns

    def overlaps(self, other: ContactInterval) -> bool:
        """True when some time lies in both intervals (touching ends do not overlap)."""
        return (self.activation_ns < other.deactivation_ns
                and other.activation_ns < self.deactivation_ns)

    def __str__(self) -> str:
        text = (f"[{seconds_from_ns(self.activation_ns):.9f} s, "
                f"{seconds_from_ns(self.deactivation_ns):.9f} s)")
        if self.name:
            text += f" {self.name}"
        text += f" {self.type.name}"
        if self.index != NO_INDEX:
            text += f" index={self.index}"
        if self.contact is not None:
            text += f" deepest distance={self.contact.distance:.6g} m"
        return text


def _default_type(body_types: tuple[BodyType, BodyType]) -> ContactType:
    if BodyType.WORLD_OBJECT in body_types:
        return ContactType.ENVIRONMENT
    return ContactType.SELF


class ContactList:
    """The contact intervals of one body pair, ordered and non-overlapping (see the module docstring).

    Parameters
    ----------
    link_names : (str, str)
        The pair's bodies (link names or object ids), in the order of its contacts.
    body_types : (BodyType, BodyType)
        Their kinds.
    default_name : str, optional
        Name given by :meth:`add_contact_at`; ``"<link0>/<link1>"`` when omitted.
    default_type : ContactType, optional
        Type given by :meth:`add_contact_at`; ENVIRONMENT when a body is a world
        object, SELF otherwise, when omitted.
    default_index : int
        Index given by :meth:`add_contact_at` (``-1``).
    """

    def __init__(self, link_names: tuple[str, str] = ("", ""),
                 body_types: tuple[BodyType, BodyType] = (BodyType.ROBOT_LINK, BodyType.ROBOT_LINK),
                 *, default_name: str | None = None, default_type: ContactType | None = None,
                 default_index: int = NO_INDEX) -> None:
        if len(link_names) != 2 or len(body_types) != 2:
            raise ValueError(f"a ContactList is about a pair: got link_names={link_names!r}, "
                             f"body_types={body_types!r}")
        self._link_names = (str(link_names[0]), str(link_names[1]))
        self._body_types = (BodyType(body_types[0]), BodyType(body_types[1]))
        self._default_name = (f"{self._link_names[0]}/{self._link_names[1]}"
                              if default_name is None else str(default_name))
        self._default_type = (_default_type(self._body_types) if default_type is None
                              else ContactType(default_type))
        self._default_index = _as_int(default_index, "default_index")
        self._entries: list[ContactInterval] = []
        self._activations: list[int] = []   # parallel to _entries, for bisection

    # --- the pair and the defaults -------------------------------------------------
    @property
    def link_names(self) -> tuple[str, str]:
        return self._link_names

    @property
    def body_types(self) -> tuple[BodyType, BodyType]:
        return self._body_types

    @property
    def default_name(self) -> str:
        return self._default_name

    @default_name.setter
    def default_name(self, name: str) -> None:
        self._default_name = str(name)

    @property
    def default_type(self) -> ContactType:
        return self._default_type

    @default_type.setter
    def default_type(self, contact_type: ContactType) -> None:
        self._default_type = ContactType(contact_type)

    @property
    def default_index(self) -> int:
        return self._default_index

    @default_index.setter
    def default_index(self, index: int) -> None:
        self._default_index = _as_int(index, "default_index")

    # --- adding, editing, removing --------------------------------------------------
    def _fits(self, interval: ContactInterval, position: int) -> bool:
        """True when ``interval`` can be inserted before entry ``position``."""
        if interval.activation_ns >= interval.deactivation_ns:
            return False
        before, after = position - 1, position
        if before >= 0 and self._entries[before].deactivation_ns > interval.activation_ns:
            return False
        if after < len(self._entries) and interval.deactivation_ns > self._entries[after].activation_ns:
            return False
        return True

    def add_contact(self, interval: ContactInterval) -> bool:
        """Insert ``interval`` at its place in time.

        Returns False, changing nothing, when ``activation_ns >= deactivation_ns``
        or when the interval overlaps an entry (touching is allowed).
        """
        if not isinstance(interval, ContactInterval):
            raise TypeError(f"add_contact takes a ContactInterval, got {type(interval).__name__}")
        position = bisect_left(self._activations, interval.activation_ns)
        if position < len(self._entries) and self._activations[position] == interval.activation_ns:
            return False
        if not self._fits(interval, position):
            return False
        self._entries.insert(position, interval)
        self._activations.insert(position, interval.activation_ns)
        return True

    def add_contact_at(self, activation_ns: int, deactivation_ns: int,
                       contact: Contact | None = None) -> bool:
        """Add ``[activation_ns, deactivation_ns)`` named, typed and indexed by the list's defaults."""
        return self.add_contact(ContactInterval(
            activation_ns, deactivation_ns, contact, name=self._default_name,
            type=self._default_type, index=self._default_index))

    def _normalise(self, index: int) -> int:
        index = _as_int(index, "index")
        size = len(self._entries)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"contact index {index} out of range for a list of {size}")
        return index

    def edit_contact(self, index: int, interval: ContactInterval) -> bool:
        """Replace entry ``index`` with ``interval``.

        Returns False, changing nothing, when ``index`` names no entry, when the
        new interval is empty, or when it would overlap a neighbour or need the
        list to be reordered.
        """
        try:
            position = self._normalise(index)
        except (IndexError, TypeError):
            return False
        if not isinstance(interval, ContactInterval):
            return False
        before_ok = (position == 0
                     or self._entries[position - 1].deactivation_ns <= interval.activation_ns)
        after_ok = (position + 1 >= len(self._entries)
                    or interval.deactivation_ns <= self._entries[position + 1].activation_ns)
        if interval.activation_ns >= interval.deactivation_ns or not before_ok or not after_ok:
            return False
        self._entries[position] = interval
        self._activations[position] = interval.activation_ns
        return True

    def erase(self, index: int) -> int:
        """Remove entry ``index``; return the index of the entry that followed it (``len`` if none).

        Raises IndexError when ``index`` names no entry.
        """
        position = self._normalise(index)
        del self._entries[position]
        del self._activations[position]
        return position

    def clear(self) -> None:
        """Remove every entry (the pair and the defaults stay)."""
        self._entries.clear()
        self._activations.clear()

    def remove_last_contact(self) -> bool:
        """Remove the entry with the latest activation; False (nothing to do) when empty."""
        if not self._entries:
            return False
        self._entries.pop()
        self._activations.pop()
        return True

    # --- queries at a time -----------------------------------------------------------
    def _present_position(self, time_ns: int) -> int:
        return bisect_right(self._activations, _as_int(time_ns, "time_ns")) - 1

    def get_present_contact(self, time_ns: int) -> ContactInterval | None:
        """The entry with the largest ``activation_ns <= time_ns`` (maybe already over); None if none."""
        position = self._present_position(time_ns)
        return self._entries[position] if position >= 0 else None

    def get_active_contact(self, time_ns: int) -> ContactInterval | None:
        """The entry with ``activation_ns <= time_ns < deactivation_ns``; None if none."""
        present = self.get_present_contact(time_ns)
        if present is not None and time_ns < present.deactivation_ns:
            return present
        return None

    def get_next_contact(self, time_ns: int) -> ContactInterval | None:
        """The entry with the smallest ``activation_ns > time_ns``; None if none."""
        position = self._present_position(time_ns) + 1
        return self._entries[position] if position < len(self._entries) else None

    def keep_only_present_contact(self, time_ns: int) -> bool:
        """Drop every entry except :meth:`get_present_contact`; False (nothing changed) if there is none."""
        position = self._present_position(time_ns)
        if position < 0:
            return False
        keep = self._entries[position]
        self._entries[:] = [keep]
        self._activations[:] = [keep.activation_ns]
        return True

    # --- sampling --------------------------------------------------------------------
    @staticmethod
    def _round_to(time_ns: int, dt_ns: int) -> int:
        # nearest multiple of dt_ns; a tie goes to the later multiple
        return ((2 * time_ns + dt_ns) // (2 * dt_ns)) * dt_ns

    def force_sample_time(self, dt_ns: int) -> bool:
        """Move every activation and deactivation to the nearest multiple of ``dt_ns`` (ties: later).

        Returns False, changing nothing, when ``dt_ns <= 0`` or when the rounded
        entries would be empty or overlap.
        """
        dt_ns = _as_int(dt_ns, "dt_ns")
        if dt_ns <= 0:
            return False
        rounded = [replace(e, activation_ns=self._round_to(e.activation_ns, dt_ns),
                           deactivation_ns=self._round_to(e.deactivation_ns, dt_ns))
                   for e in self._entries]
        for i, entry in enumerate(rounded):
            if entry.activation_ns >= entry.deactivation_ns:
                return False
            if i and rounded[i - 1].deactivation_ns > entry.activation_ns:
                return False
        self._entries[:] = rounded
        self._activations[:] = [e.activation_ns for e in rounded]
        return True

    def are_contacts_sampled(self, dt_ns: int) -> bool:
        """True when ``dt_ns > 0`` and every activation and deactivation is a multiple of it."""
        dt_ns = _as_int(dt_ns, "dt_ns")
        if dt_ns <= 0:
            return False
        return all(e.activation_ns % dt_ns == 0 and e.deactivation_ns % dt_ns == 0
                   for e in self._entries)

    # --- container ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: int) -> ContactInterval:
        return self._entries[self._normalise(index)]

    def __iter__(self) -> Iterator[ContactInterval]:
        return iter(tuple(self._entries))

    def __reversed__(self) -> Iterator[ContactInterval]:
        return reversed(tuple(self._entries))

    @property
    def intervals(self) -> tuple[ContactInterval, ...]:
        return tuple(self._entries)

    @property
    def first_contact(self) -> ContactInterval | None:
        """The earliest entry; None when the list is empty."""
        return self._entries[0] if self._entries else None

    @property
    def last_contact(self) -> ContactInterval | None:
        """The latest entry; None when the list is empty."""
        return self._entries[-1] if self._entries else None

    def __str__(self) -> str:
        (a, b), (ta, tb) = self._link_names, self._body_types
        lines = [f"ContactList {a} ({ta.name}) / {b} ({tb.name}): {len(self)} interval"
                 f"{'' if len(self) == 1 else 's'}"]
        lines += [f"  {i}: {entry}" for i, entry in enumerate(self._entries)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        spans = ", ".join(f"[{e.activation_ns}, {e.deactivation_ns})" for e in self._entries)
        return f"ContactList(link_names={self._link_names!r}, intervals_ns=[{spans}])"
