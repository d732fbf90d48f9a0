"""SRDF groups and disabled pairs; world YAML files."""
import numpy as np
import pytest
from core_scenes import SLIDER_URDF

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.errors import ModelError, RequestError, SceneError, WorldFileError
from my_collision_pkg.core.model.robot_model import Box, Cylinder, MeshRef, RobotModel, Sphere
from my_collision_pkg.core.scene.planning_scene import PlanningScene
from my_collision_pkg.core.model.srdf import parse_srdf, parse_srdf_file
from my_collision_pkg.core.scene.world_file import load_world_file, parse_world

SRDF = """<robot name="slider">
  <group name="xs"><joint name="slide_x"/></group>
  <group name="ys"><chain base_link="base" tip_link="block"/></group>
  <group name="solo"><link name="ball"/></group>
  <group name="both"><group name="xs"/><group name="ys"/></group>
  <group name="partial"><joint name="slide_x"/><joint name="ghost_joint"/></group>
  <group_state name="home" group="both"><joint name="slide_x" value="0.5"/><joint name="slide_y" value="0"/></group_state>
  <disable_collisions link1="base" link2="ball" reason="Never"/>
  <disable_collisions link1="base" link2="ghost" reason="Never"/>
</robot>"""


@pytest.fixture
def robot():
    return RobotModel.from_urdf_string(SLIDER_URDF)


def test_group_members_of_every_kind(robot):
    sem = parse_srdf(SRDF, robot)
    assert sem.group_links(robot, "xs") == {"carriage", "ball"}
    assert sem.group_links(robot, "ys") == {"block"}
    assert sem.group_links(robot, "solo") == {"ball"}
    assert sem.group_links(robot, "both") == {"carriage", "ball", "block"}
    assert sem.group_states["home"] == ("both", {"slide_x": 0.5, "slide_y": 0.0})


def test_unknown_names_are_skipped_with_warnings(robot):
    sem = parse_srdf(SRDF, robot)
    assert any("ghost_joint" in w for w in sem.warnings)
    assert any("ghost" in w and "disable_collisions" in w for w in sem.warnings)
    assert sem.disabled_pairs == {frozenset(("base", "ball"))}
    with pytest.raises(RequestError, match="unknown group 'nope'"):
        sem.group_links(robot, "nope")


def test_tolerated_srdf_faults_become_warnings(robot):
    sem = parse_srdf("""<robot name="slider">
        <group name="g"><group name="h"/></group>
        <group name="outer"><group name="g"/></group>
        <group name="across"><chain base_link="block" tip_link="ball"/></group>
        <group_state name="loose"><joint name="slide_x" value="0"/></group_state></robot>""", robot)
    assert "g" not in sem.groups and "outer" not in sem.groups        # unknown subgroup: dropped, as in MoveIt
    assert any("unknown subgroup" in w for w in sem.warnings)
    assert any("group_state 'loose'" in w for w in sem.warnings) and "loose" not in sem.group_states
    # a chain through a common ancestor: block -> base -> carriage -> ball
    assert sem.group_links(robot, "across") == {"block", "carriage", "ball"}


def test_disabled_pairs_are_allowed(robot):
    sem = parse_srdf(SRDF, robot)
    checker = CollisionChecker(PlanningScene(robot, sem, allow_adjacent=False))
    assert checker.check(["slide_x"], [0.0]).valid                # base / ball disabled


@pytest.mark.parametrize("xml, fragment", [
    ("<robot><group name='g'>", "not well-formed"),
    ("<robot><group><joint name='slide_x'/></group></robot>", "lacks the attribute 'name'"),
    ("<robot><disable_collisions link1='base'/></robot>", "'link2'"),
])
def test_malformed_srdf_gives_specific_error(robot, xml, fragment):
    with pytest.raises(ModelError) as info:
        parse_srdf(xml, robot)
    assert fragment in str(info.value)


def test_missing_srdf_file_names_it(robot, tmp_path):
    with pytest.raises(ModelError, match="absent.srdf"):
        parse_srdf_file(str(tmp_path / "absent.srdf"), robot)


WORLD = """
frame_id: base
objects:
  - id: table
    pose: {position: [0.5, 0, -0.3], rpy: [0, 0, 1.5707963267948966]}
    shapes:
      - {type: box, size: [1, 2, 0.1]}
      - {type: cylinder, radius: 0.05, length: 0.6, pose: {position: [0, 0, -0.3]}}
  - id: part
    shapes: [{type: mesh, uri: meshes/part.stl, scale: [2, 2, 2]}]
  - id: grasped
    attached_to: ball
    touch_links: [base]
    pose: {position: [0, 0, 0.1], orientation: [0, 0, 0, 1]}
    shapes: [{type: sphere, radius: 0.02}]
"""


def test_world_file_round_trip(tmp_path):
    updates = parse_world(WORLD, "base", base_dir=str(tmp_path))
    objects = {u.object.id: u.object for u in updates}
    table = objects["table"]
    assert isinstance(table.shapes[0].spec, Box) and isinstance(table.shapes[1].spec, Cylinder)
    np.testing.assert_allclose(table.T_frame_object[:3, 3], [0.5, 0, -0.3])
    np.testing.assert_allclose(table.T_frame_object[:3, :3] @ [1, 0, 0], [0, 1, 0], atol=1e-12)
    assert objects["part"].shapes[0].spec == MeshRef(str(tmp_path / "meshes/part.stl"), (2.0, 2.0, 2.0))
    grasped = objects["grasped"]
    assert grasped.link == "ball" and grasped.touch_links == ("base",)
    assert isinstance(grasped.shapes[0].spec, Sphere)


@pytest.mark.parametrize("text, fragment", [
    ("objects: [", "not valid YAML"),
    ("- 1", "must be a mapping"),
    ("frame_id: elsewhere\nobjects: []", "not the planning frame"),
    ("objects: [{id: a}]", "object 'a' needs a non-empty 'shapes'"),
    ("objects: [{shapes: []}]", "object 0 must be a mapping with an 'id'"),
    ("objects: [{id: a, shapes: [{type: box, size: [1, -1, 1]}]}]", "must be positive"),
    ("objects: [{id: a, shapes: [{type: blob}]}]", "unknown type 'blob'"),
    ("objects: [{id: a, shapes: [{type: sphere}]}]", "lacks 'radius'"),
    ("objects: [{id: a, shapes: [{type: sphere, radius: .nan}]}]", "finite and positive"),
    ("objects: [{id: a, shapes: [{type: sphere, radius: 1}]}, {id: a, shapes: [{type: sphere, radius: 1}]}]",
     "appears twice"),
    ("objects: [{id: a, pose: {position: [0, 0]}, shapes: [{type: sphere, radius: 1}]}]", "3 numbers"),
    ("objects: [{id: a, pose: {orientation: [0, 0, 0, 0]}, shapes: [{type: sphere, radius: 1}]}]",
     "not a valid quaternion"),
    ("objects: [{id: a, colour: red, shapes: [{type: sphere, radius: 1}]}]", "unknown key"),
])
def test_malformed_world_files_name_the_fault(text, fragment):
    with pytest.raises(WorldFileError) as info:
        parse_world(text, "base")
    assert fragment in str(info.value)


def test_world_file_errors_name_the_file(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("objects: [{id: a}]")
    with pytest.raises(WorldFileError, match="w.yaml"):
        load_world_file(str(path), "base")
    with pytest.raises(WorldFileError, match="missing.yaml"):
        load_world_file(str(tmp_path / "missing.yaml"), "base")


# ----- models the node cannot serve end the load with one line --------------------------
@pytest.mark.parametrize("groups, fragment", [
    ('<group name="hand"><group name="hand"/></group>', "SRDF group 'hand' contains itself (hand -> hand)"),
    ('<group name="a"><joint name="slide_x"/><group name="b"/></group><group name="b"><group name="a"/></group>',
     "contains itself (a -> b -> a)"),
])
def test_a_self_containing_group_is_refused_at_load(robot, groups, fragment):
    with pytest.raises(ModelError) as info:
        parse_srdf(f'<robot name="slider">{groups}</robot>', robot)
    assert fragment in str(info.value)


def test_a_group_containing_another_twice_is_not_a_cycle(robot):
    sem = parse_srdf('<robot name="slider"><group name="xs"><joint name="slide_x"/></group>'
                     '<group name="a"><group name="xs"/></group><group name="b"><group name="xs"/>'
                     '<group name="a"/></group></robot>', robot)
    assert sem.group_links(robot, "b") == sem.group_links(robot, "xs")


@pytest.mark.parametrize("value, fragment", [("nan", "not finite"), ("inf", "not finite"), ("", "lacks"),
                                             ("abc", "not a number")])
def test_group_state_values_must_be_finite_numbers(robot, value, fragment):
    with pytest.raises(ModelError, match=fragment):
        parse_srdf(f'<robot name="slider"><group name="xs"><joint name="slide_x"/></group><group_state name="s" '
                   f'group="xs"><joint name="slide_x" value="{value}"/></group_state></robot>', robot)


def test_malformed_yaml_gives_one_line_with_the_place():
    with pytest.raises(WorldFileError) as info:
        parse_world("objects:\n  - id: a\n   shapes: [", "base")
    message = str(info.value)
    assert "\n" not in message and "line 3" in message


@pytest.mark.parametrize("entry, fragment", [
    ("{id: q, pose: {orientation: [1e200, 0, 0, 0]}, shapes: [{type: sphere, radius: 0.1}]}", "not a valid quaternion"),
    ("{id: q, pose: {orientation: [0, 0, 0, 0]}, shapes: [{type: sphere, radius: 0.1}]}", "not a valid quaternion"),
    ("{id: q, pose: {position: [.nan, 0, 0]}, shapes: [{type: sphere, radius: 0.1}]}", "must be finite"),
    ("{id: q, shapes: [{type: box, size: [1, .inf, 1]}]}", "must be finite"),
    ("{id: q, shapes: [{type: mesh, uri: x.stl, scale: [1, .nan, 1]}]}", "must be finite"),
])
def test_world_file_numbers_that_are_not_finite_are_refused(entry, fragment):
    with pytest.raises(WorldFileError, match=fragment):
        parse_world(f"objects:\n  - {entry}\n", "base")


@pytest.mark.parametrize("entry, fragment", [
    ("{id: q, shapes: [{type: box, size: [1e300, 1, 1]}]}", "box size"),
    ("{id: q, pose: {position: [1e12, 0, 0]}, shapes: [{type: sphere, radius: 0.1}]}", "position"),
])
def test_world_file_extremes_are_refused_when_applied(robot, entry, fragment):
    scene = PlanningScene(robot)
    updates = parse_world(f"objects:\n  - {entry}\n", "base")
    with pytest.raises(SceneError) as info:
        scene.apply(updates)
    assert fragment in str(info.value) and "beyond the bound" in str(info.value)
    assert not scene.world.objects


# ----- an octomap file named in the world file -------------------------------------------
def _octomap_world(tmp_path, octomap_entry: str, cells_m=None):
    """A world file (a box object and ``octomap_entry``) in tmp_path, and a .bt map in
    tmp_path/maps/room.bt holding cells around ``cells_m`` (default: a 10 cm cube of points)."""
    from my_collision_pkg.core.perception.occupancy import OccupancyMap, write_binary_octomap
    if cells_m is None:
        axis = np.linspace(0.4, 0.5, 11)
        cells_m = np.stack(np.meshgrid(axis, axis - 0.45, axis - 0.1, indexing="ij"), -1).reshape(-1, 3)
    (tmp_path / "maps").mkdir(exist_ok=True)
    occupancy = OccupancyMap.from_points(cells_m, 0.02)
    write_binary_octomap(str(tmp_path / "maps" / "room.bt"), occupancy)
    world = tmp_path / "world.yaml"
    world.write_text("objects:\n  - {id: post, pose: {position: [-0.5, 0, 0.3]}, shapes: [{type: box, size: [0.1, "
                     "0.1, 0.6]}]}\n" + octomap_entry + "\n")
    return str(world), occupancy


def test_an_octomap_file_in_the_world_file_becomes_the_octomap_object(tmp_path):
    from my_collision_pkg.core.model.example_robots import panda_paths
    from my_collision_pkg.core.scene.loading import load_scene
    from my_collision_pkg.core.scene.objects import OCTOMAP_ID
    from my_collision_pkg.core.scene.world_file import load_world
    world_path, written = _octomap_world(tmp_path, "octomap: {file: maps/room.bt}")
    described = load_world(world_path, "panda_link0")
    assert described.octomap_path == str(tmp_path / "maps" / "room.bt")       # relative to the world file
    assert [u.object.id for u in described.updates] == ["post"]
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world_path)
    assert set(scene.world.objects) == {"post", OCTOMAP_ID}
    np.testing.assert_array_equal(scene.occupancy.cell_keys(), written.cell_keys())
    assert written.n_occupied == 216 and scene.occupancy.n_occupied > 0      # (octomap prunes full blocks)
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    ready = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02])
    reaching = np.array([0.0, 0.6, 0.0, -1.9, 0.0, 2.5, 0.785, 0.02])    # the hand in the map's cube
    assert checker.check(names, ready).valid
    verdict = checker.check(names, reaching)
    assert verdict.status.name == "IN_COLLISION" and OCTOMAP_ID in verdict.message
    # an absolute path is taken as it is; the launch check's reader checks the map too
    absolute, _ = _octomap_world(tmp_path, f"octomap: {{file: '{tmp_path / 'maps' / 'room.bt'}'}}")
    np.testing.assert_array_equal(load_world(absolute, "panda_link0").occupancy.cell_keys(), written.cell_keys())
    assert [u.object.id for u in load_world_file(absolute, "panda_link0")] == ["post"]


@pytest.mark.parametrize("entry, fragment", [
    ("octomap: maps/room.bt", "'octomap' must be a mapping with a 'file'"),
    ("octomap: {path: maps/room.bt}", "'octomap' has unknown key(s) ['path']"),
    ("octomap: {file: ''}", "'octomap' needs a 'file'"),
    ("octomap: {file: maps/absent.bt}", "maps/absent.bt': cannot be read"),
    ("octomap: {file: maps/room.stl}", "the name must end in .bt (binary) or .ot (full)"),
    ("octomap: {file: maps/truncated.bt}", "truncated.bt': corrupt data"),
    ("octomap: {file: maps/text.bt}", "text.bt': not an octomap .bt file"),
])
def test_a_bad_octomap_entry_or_file_is_refused_naming_the_files(tmp_path, entry, fragment):
    from my_collision_pkg.core.model.example_robots import panda_paths
    from my_collision_pkg.core.scene.loading import load_scene
    world_path, _ = _octomap_world(tmp_path, entry)
    data = (tmp_path / "maps" / "room.bt").read_bytes()
    (tmp_path / "maps" / "truncated.bt").write_bytes(data[:len(data) - 40])
    (tmp_path / "maps" / "text.bt").write_text("objects: []\n")
    (tmp_path / "maps" / "room.stl").write_bytes(data)
    for load in (lambda: load_world_file(world_path, "panda_link0"),
                 lambda: load_scene(urdf_path=panda_paths()[0], world_path=world_path)):
        with pytest.raises(WorldFileError) as info:
            load()
        message = str(info.value)
        assert fragment in message and "world.yaml" in message and "\n" not in message, message
