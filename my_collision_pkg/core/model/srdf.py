"""Semantic robot description (SRDF): planning groups, disabled collision pairs.

A group is known by name; its *links* (what a group-restricted check looks at)
are, as in MoveIt, every link moved by the group's joints: the child link of
each joint and everything below it, plus listed links and their subtrees.
Entries that name links or joints the URDF lacks are skipped and reported in
:attr:`SemanticModel.warnings` (MoveIt warns and goes on the same way).
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from my_collision_pkg.core.errors import ModelError, RequestError
from my_collision_pkg.core.model.description_files import parse_file
from my_collision_pkg.core.model.robot_model import RobotModel, robot_element


@dataclass(frozen=True)
class GroupDefinition:
    name: str
    joints: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    chains: tuple[tuple[str, str], ...] = ()
    subgroups: tuple[str, ...] = ()


@dataclass(frozen=True)
class SemanticModel:
    """What an SRDF says about one robot."""
    groups: dict[str, GroupDefinition] = field(default_factory=dict)
    disabled_pairs: frozenset[frozenset[str]] = frozenset()
    group_states: dict[str, tuple[str, dict[str, float]]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def group_links(self, robot: RobotModel, group: str) -> frozenset[str]:
        """Links moved by a group.

        Raises
        ------
        RequestError
            If the SRDF defines no such group.
        """
        if group not in self.groups:
            known = ", ".join(sorted(self.groups)) or "none"
            raise RequestError(f"unknown group '{group}' (known groups: {known})")
        links: set[str] = set()
        self._collect(robot, group, links, ())
        return frozenset(links)

    def _collect(self, robot: RobotModel, group: str, links: set[str], seen: tuple[str, ...]) -> None:
        if group in seen:
            raise ModelError(f"SRDF group '{group}' contains itself")
        definition = self.groups[group]
        for joint in definition.joints:
            links.update(robot.subtree_links(robot.joint(joint).child))
        for link in definition.links:
            links.update(robot.subtree_links(link))
        for base, tip in definition.chains:
            for link in _chain_links(robot, base, tip):
                links.update(robot.subtree_links(link))
        for sub in definition.subgroups:     # parse_srdf dropped groups with unknown subgroups
            self._collect(robot, sub, links, seen + (group,))


def _ancestors(robot: RobotModel, link: str) -> list[str]:
    """The link, its parent, ... up to the root."""
    out, cur = [], link
    while cur is not None:
        out.append(cur)
        cur = robot.parent_link(cur)
    return out


def _chain_links(robot: RobotModel, base: str, tip: str) -> list[str]:
    """Links moved by the joints of a chain: the path from ``base`` to ``tip``
    without their common ancestor (``base`` itself when it is above ``tip``)."""
    up_from_tip, up_from_base = _ancestors(robot, tip), _ancestors(robot, base)
    common = next(link for link in up_from_tip if link in set(up_from_base))
    below_common = up_from_tip[:up_from_tip.index(common)] + up_from_base[:up_from_base.index(common)]
    return below_common or [tip]


def parse_srdf(xml: str, robot: RobotModel) -> SemanticModel:
    """Read SRDF XML for ``robot``.

    Raises
    ------
    ModelError
        If the XML is malformed, an element lacks a required attribute, a group
        contains itself (directly or through subgroups) or a group_state value is
        not a finite number.
    """
    root = robot_element(xml, "SRDF")
    warnings: list[str] = []
    groups: dict[str, GroupDefinition] = {}
    for element in root.findall("group"):
        definition = _group_definition(element, robot, warnings)
        groups[definition.name] = definition
    _drop_groups_with_unknown_subgroups(groups, warnings)
    _refuse_group_cycles(groups)
    disabled = _disabled_pairs(root, robot, warnings)
    states = _group_states(root, warnings)
    return SemanticModel(groups, disabled, states, tuple(warnings))


def _required(element: ET.Element, name: str, where: str) -> str:
    """The value of a required attribute.

    Raises
    ------
    ModelError
        Naming the element, ``where`` it is and the attribute, if it is missing or empty.
    """
    value = element.get(name)
    if not value:
        raise ModelError(f"SRDF <{element.tag}> in {where} lacks the attribute '{name}'")
    return value


def _group_definition(element: ET.Element, robot: RobotModel, warnings: list[str]) -> GroupDefinition:
    """One ``<group>``; joints, links and chains the robot lacks are skipped with a warning."""
    name = _required(element, "name", "<robot>")
    where = f"group '{name}'"
    joints, links, chains, subgroups = [], [], [], []
    for member in element:
        if member.tag == "joint":
            joint = _required(member, "name", where)
            if robot.has_joint(joint):
                joints.append(joint)
            else:
                warnings.append(f"group '{name}': unknown joint '{joint}' skipped")
        elif member.tag == "link":
            link = _required(member, "name", where)
            if robot.has_link(link):
                links.append(link)
            else:
                warnings.append(f"group '{name}': unknown link '{link}' skipped")
        elif member.tag == "chain":
            base, tip = _required(member, "base_link", where), _required(member, "tip_link", where)
            if robot.has_link(base) and robot.has_link(tip):
                chains.append((base, tip))
            else:
                warnings.append(f"group '{name}': chain {base} -> {tip} names an unknown link, skipped")
        elif member.tag == "group":
            subgroups.append(_required(member, "name", where))
    return GroupDefinition(name, tuple(joints), tuple(links), tuple(chains), tuple(subgroups))


def _drop_groups_with_unknown_subgroups(groups: dict[str, GroupDefinition], warnings: list[str]) -> None:
    """Remove (in place) each group naming a subgroup that does not exist, as MoveIt does.

    Repeated until none is left: dropping one group can orphan another that includes it.
    """
    dropped = True
    while dropped:
        dropped = False
        for name, definition in list(groups.items()):
            missing = [sub for sub in definition.subgroups if sub not in groups]
            if missing:
                warnings.append(f"group '{name}' names unknown subgroup(s) {missing}, group skipped")
                del groups[name]
                dropped = True


def _disabled_pairs(root: ET.Element, robot: RobotModel, warnings: list[str]) -> frozenset[frozenset[str]]:
    """The ``<disable_collisions>`` link pairs; pairs naming an unknown link are skipped with a warning."""
    disabled: set[frozenset[str]] = set()
    where = "<disable_collisions>"
    for element in root.findall("disable_collisions"):
        a, b = _required(element, "link1", where), _required(element, "link2", where)
        if robot.has_link(a) and robot.has_link(b):
            disabled.add(frozenset((a, b)))
        else:
            warnings.append(f"disable_collisions {a} / {b} names an unknown link, skipped")
    return frozenset(disabled)


def _group_states(root: ET.Element, warnings: list[str]) -> dict[str, tuple[str, dict[str, float]]]:
    """The ``<group_state>`` entries as ``{name: (group, {joint: value})}``; a state that
    names no group is skipped with a warning.

    Raises
    ------
    ModelError
        If a joint value is not a finite number.
    """
    states: dict[str, tuple[str, dict[str, float]]] = {}
    for element in root.findall("group_state"):
        name = _required(element, "name", "<robot>")
        group = element.get("group")
        if not group:
            warnings.append(f"group_state '{name}' names no group, skipped")
            continue
        values = {}
        for joint_element in element.findall("joint"):
            joint = _required(joint_element, "name", f"group_state '{name}'")
            text = _required(joint_element, "value", f"group_state '{name}' joint '{joint}'")
            values[joint] = _joint_value(text, name, joint)
        states[name] = (group, values)
    return states


def _joint_value(text: str, state: str, joint: str) -> float:
    """A group_state joint value: the number its first word gives.

    Raises
    ------
    ModelError
        If it is not a finite number.
    """
    try:
        value = float(text.split()[0])
    except (ValueError, IndexError) as exc:
        raise ModelError(f"SRDF group_state '{state}': joint '{joint}' value {text!r} is not a number") from exc
    if not math.isfinite(value):
        raise ModelError(f"SRDF group_state '{state}': joint '{joint}' value {text!r} is not finite")
    return value


def _refuse_group_cycles(groups: dict[str, GroupDefinition]) -> None:
    """A group that contains itself, directly or through subgroups, cannot be served.

    Raises
    ------
    ModelError
        Naming the group and the cycle.
    """
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = " -> ".join(path[path.index(name):] + (name,))
            raise ModelError(f"SRDF group '{name}' contains itself ({cycle})")
        if name in done:
            return
        for sub in groups[name].subgroups:
            visit(sub, path + (name,))
        done.add(name)

    for name in groups:
        visit(name, ())


def parse_srdf_file(path: str, robot: RobotModel) -> SemanticModel:
    """Read an SRDF file; see :func:`parse_srdf`.

    Raises
    ------
    ModelError
        If the file cannot be read or the SRDF is malformed (the message names the file).
    """
    return parse_file(path, "SRDF", lambda xml: parse_srdf(xml, robot))
