"""ContactList (contact_list.py) against a brute-force interval model.

The model keeps an unordered list of (activation, deactivation, name) and answers
every query by scanning all of it, from the definitions in the module docstring
(half-open intervals; touching is not overlapping). Random operation sequences
(plain ``random`` with fixed seeds) drive both; after every operation the list's
contents and every query at every time of a window must equal the model's.
"""
from __future__ import annotations

import random
from fractions import Fraction
import math

import numpy as np
import pytest

from my_collision_pkg.core.checks.contact_list import (
    NS_PER_S,
    ContactInterval,
    ContactList,
    ns_from_seconds,
    seconds_from_ns,
)
from my_collision_pkg.core.checks.results import BodyType, Contact, ContactType

T_MIN, T_MAX = -6, 40        # times drawn from here (ns); small so operations collide often
QUERY_TIMES = range(T_MIN - 2, T_MAX + 3)


class Model:
    """Intervals as a plain unordered list; every answer by exhaustive scan."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, str]] = []

    @staticmethod
    def overlap(x, y) -> bool:
        # some integer time t with x.a <= t < x.d and y.a <= t < y.d
        return any(x[0] <= t < x[1] for t in range(y[0], y[1]))

    def ordered(self):
        return sorted(self.items)

    def can_hold(self, item, others) -> bool:
        return item[0] < item[1] and not any(self.overlap(item, o) for o in others)

    def add(self, item) -> bool:
        if not self.can_hold(item, self.items):
            return False
        self.items.append(item)
        return True

    def edit(self, index: int, item) -> bool:
        ordered = self.ordered()
        if not -len(ordered) <= index < len(ordered):
            return False
        index %= len(ordered)
        others = ordered[:index] + ordered[index + 1:]
        if not self.can_hold(item, others):
            return False
        # the new entry must keep its place: exactly `index` others start before it
        if sum(o[0] < item[0] for o in others) != index:
            return False
        self.items = others + [item]
        return True

    def erase(self, index: int) -> int:
        ordered = self.ordered()
        index %= len(ordered)
        del ordered[index]
        self.items = ordered
        return index

    def active(self, t):
        hits = [x for x in self.items if x[0] <= t < x[1]]
        assert len(hits) <= 1
        return hits[0] if hits else None

    def present(self, t):
        started = [x for x in self.items if x[0] <= t]
        return max(started) if started else None

    def next(self, t):
        later = [x for x in self.items if x[0] > t]
        return min(later) if later else None

    def keep_present(self, t) -> bool:
        p = self.present(t)
        if p is None:
            return False
        self.items = [p]
        return True

    @staticmethod
    def nearest(t: int, dt: int) -> int:
        q = Fraction(t, dt)
        lower = math.floor(q)
        return (lower + 1 if q - lower >= Fraction(1, 2) else lower) * dt

    def force_sample(self, dt: int) -> bool:
        if dt <= 0:
            return False
        rounded = [(self.nearest(a, dt), self.nearest(d, dt), n) for a, d, n in self.items]
        for i, x in enumerate(rounded):
            if not self.can_hold(x, rounded[:i]):
                return False
        self.items = rounded
        return True

    def sampled(self, dt: int) -> bool:
        return dt > 0 and all(a % dt == 0 and d % dt == 0 for a, d, _ in self.items)


def key(entry: ContactInterval | None):
    return None if entry is None else (entry.activation_ns, entry.deactivation_ns, entry.name)


def check_against(cl: ContactList, model: Model) -> None:
    ordered = model.ordered()
    assert len(cl) == len(ordered)
    assert [key(e) for e in cl] == ordered
    assert [key(e) for e in reversed(cl)] == ordered[::-1]
    assert [key(cl[i]) for i in range(len(cl))] == ordered
    assert [key(cl[-i - 1]) for i in range(len(cl))] == ordered[::-1]
    assert key(cl.first_contact) == (ordered[0] if ordered else None)
    assert key(cl.last_contact) == (ordered[-1] if ordered else None)
    # invariants, checked directly on the list
    for i, e in enumerate(cl):
        assert e.activation_ns < e.deactivation_ns
        if i:
            assert cl[i - 1].activation_ns < e.activation_ns
            assert cl[i - 1].deactivation_ns <= e.activation_ns
    for t in QUERY_TIMES:
        assert key(cl.get_active_contact(t)) == model.active(t), t
        assert key(cl.get_present_contact(t)) == model.present(t), t
        assert key(cl.get_next_contact(t)) == model.next(t), t
    for dt in (1, 2, 3, 5, 7):
        assert cl.are_contacts_sampled(dt) == model.sampled(dt)


def random_span(rng: random.Random) -> tuple[int, int]:
    a = rng.randint(T_MIN, T_MAX)
    # mostly proper spans; sometimes empty or reversed ones that must be refused
    d = a + rng.choice([rng.randint(1, 8), rng.randint(1, 3), 0, -rng.randint(1, 4)])
    return a, d


@pytest.mark.parametrize("seed", range(12))
def test_random_operation_sequences_match_the_model(seed):
    rng = random.Random(seed)
    cl = ContactList(("a", "b"), (BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT))
    model = Model()
    counts = {"add_ok": 0, "add_refused": 0, "edit_ok": 0, "edit_refused": 0,
              "sample_ok": 0, "sample_refused": 0}
    for step in range(400):
        op = rng.choices(
            ["add", "add_at", "edit", "erase", "remove_last", "keep", "sample", "clear"],
            weights=[30, 10, 20, 8, 5, 3, 4, 1])[0]
        name = f"s{seed}n{step}"
        if op == "add":
            a, d = random_span(rng)
            ok = cl.add_contact(ContactInterval(a, d, name=name))
            assert ok == model.add((a, d, name))
            counts["add_ok" if ok else "add_refused"] += 1
        elif op == "add_at":
            a, d = random_span(rng)
            cl.default_name = name
            ok = cl.add_contact_at(a, d)
            assert ok == model.add((a, d, name))
            if ok:
                added = cl.get_active_contact(a)
                assert (added.name, added.type, added.index) == (name, ContactType.ENVIRONMENT, -1)
        elif op == "edit":
            index = rng.randint(-len(cl) - 1, len(cl))
            if rng.random() < 0.5 and len(cl) and -len(cl) <= index < len(cl):
                # small moves of an existing entry: most are legal
                old = cl[index]
                a = old.activation_ns + rng.randint(-3, 3)
                d = old.deactivation_ns + rng.randint(-3, 3)
            else:
                a, d = random_span(rng)
            ok = cl.edit_contact(index, ContactInterval(a, d, name=name))
            assert ok == model.edit(index, (a, d, name))
            counts["edit_ok" if ok else "edit_refused"] += 1
        elif op == "erase":
            if not len(cl):
                with pytest.raises(IndexError):
                    cl.erase(0)
                continue
            index = rng.randint(-len(cl), len(cl) - 1)
            following = cl[index + 1] if 0 <= index + 1 < len(cl) else None
            returned = cl.erase(index)
            assert returned == model.erase(index)
            if following is not None and index >= 0:
                assert cl[returned] is following
            assert returned <= len(cl)
        elif op == "remove_last":
            assert cl.remove_last_contact() == bool(model.items)
            if model.items:
                model.items = model.ordered()[:-1]
        elif op == "keep":
            t = rng.choice(QUERY_TIMES)
            assert cl.keep_only_present_contact(t) == model.keep_present(t)
        elif op == "sample":
            dt = rng.choice([-1, 0, 1, 2, 3, 4, 5])
            ok = cl.force_sample_time(dt)
            assert ok == model.force_sample(dt)
            counts["sample_ok" if ok else "sample_refused"] += 1
        else:
            cl.clear()
            model.items = []
        check_against(cl, model)
    # the sequence exercised both outcomes of the operations that can refuse
    assert counts["add_ok"] and counts["add_refused"]
    assert counts["edit_ok"] and counts["edit_refused"]


def test_touching_intervals_do_not_overlap_and_half_open_queries():
    cl = ContactList(("link_a", "link_b"))
    assert cl.add_contact_at(10, 20)
    assert cl.add_contact_at(20, 30)          # touches the first: allowed
    assert cl.add_contact_at(0, 10)           # touches from below: allowed
    assert not cl.add_contact_at(29, 31)      # shares time 29
    assert not cl.add_contact_at(5, 5)        # empty
    assert not cl.add_contact_at(40, 35)      # reversed
    assert [(e.activation_ns, e.deactivation_ns) for e in cl] == [(0, 10), (10, 20), (20, 30)]
    assert cl.get_active_contact(20).activation_ns == 20     # activation inclusive
    assert cl.get_active_contact(30) is None                 # deactivation exclusive
    assert cl.get_present_contact(30).activation_ns == 20    # present but no longer active
    assert cl.get_next_contact(20) is None
    assert cl.get_next_contact(19).activation_ns == 20
    assert cl.get_present_contact(-1) is None
    assert cl.default_type == ContactType.SELF
    assert cl[0].name == "link_a/link_b"


def test_edit_refuses_a_reorder_and_an_invalid_index():
    cl = ContactList()
    assert cl.add_contact_at(0, 10) and cl.add_contact_at(20, 30)
    assert not cl.edit_contact(0, ContactInterval(40, 50))    # legal times, but after entry 1
    assert not cl.edit_contact(2, ContactInterval(40, 50))
    assert not cl.edit_contact(1, ContactInterval(5, 25))
    assert cl.edit_contact(1, ContactInterval(10, 40))        # touches entry 0: fine
    assert [(e.activation_ns, e.deactivation_ns) for e in cl] == [(0, 10), (10, 40)]


def test_force_sample_time_rounds_to_nearest_and_refuses_collapse():
    cl = ContactList()
    assert cl.add_contact_at(14, 26) and cl.add_contact_at(26, 61)
    assert not cl.are_contacts_sampled(10)
    assert cl.force_sample_time(10)
    assert [(e.activation_ns, e.deactivation_ns) for e in cl] == [(10, 30), (30, 60)]
    assert cl.are_contacts_sampled(10) and cl.are_contacts_sampled(5)
    before = [(e.activation_ns, e.deactivation_ns) for e in cl]
    assert not cl.force_sample_time(100)      # (0, 0) would be empty
    assert [(e.activation_ns, e.deactivation_ns) for e in cl] == before
    assert not cl.force_sample_time(0) and not cl.are_contacts_sampled(0)


def test_defaults_setters_and_types():
    cl = ContactList(("l", "box"), (BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT), default_index=3)
    assert cl.default_type == ContactType.ENVIRONMENT and cl.default_index == 3
    cl.default_name, cl.default_type, cl.default_index = "n", ContactType.SELF, 7
    assert cl.add_contact_at(1, 2)
    assert (cl[0].name, cl[0].type, cl[0].index) == ("n", ContactType.SELF, 7)
    with pytest.raises(TypeError, match="activation_ns"):
        ContactInterval(0.5, 2)
    with pytest.raises(TypeError, match="bool"):
        ContactInterval(True, 2)
    assert ContactInterval(np.int64(3), np.int32(4)).activation_ns == 3
    with pytest.raises(IndexError, match="out of range"):
        cl[1]
    with pytest.raises(ValueError, match="pair"):
        ContactList(("only_one",))


def test_str_names_the_pair_and_each_interval():
    contact = Contact(
        type=ContactType.ENVIRONMENT, link_names=("panda_hand", "wall"),
        body_types=(BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT), shape_ids=(0, 0),
        subshape_ids=(-1, -1), position=np.zeros(3), nearest_points=(np.zeros(3), np.zeros(3)),
        nearest_points_local=(np.zeros(3), np.zeros(3)), normal=np.array([1.0, 0, 0]),
        distance=-0.002, penetration_depth=0.002)
    cl = ContactList(("panda_hand", "wall"), (BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT))
    assert cl.add_contact_at(ns_from_seconds(0.25), ns_from_seconds(1.5), contact)
    text = str(cl)
    assert "panda_hand (ROBOT_LINK) / wall (WORLD_OBJECT): 1 interval" in text
    assert "[0.250000000 s, 1.500000000 s)" in text
    assert "-0.002 m" in text
    assert seconds_from_ns(NS_PER_S // 4) == 0.25 and ns_from_seconds(1e-9) == 1
