"""One core request object per service call: ``conversions.check_request_from_msg``."""
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.ros.conversions import check_request_from_msg
from my_collision_pkg.srv import CheckMotion, CheckTrajectory, CheckValidity, ExplainCollision

WORLD = object()        # the snapshot is carried as it is, never looked into


def test_the_switches_and_the_world_of_a_validity_request():
    msg = CheckValidity.Request(group_name="panda_arm", pad_environment_collisions=False, pad_self_collisions=True)
    assert check_request_from_msg(msg, WORLD) == CheckRequest(group_name="panda_arm",
                                                              pad_environment_collisions=False,
                                                              pad_self_collisions=True, world=WORLD)


def test_explain_and_motion_requests_bring_their_contact_options():
    for srv in (ExplainCollision, CheckMotion):
        msg = srv.Request(group_name="g", contact_distance=0.02, max_contacts=7)
        request = check_request_from_msg(msg, WORLD)
        assert (request.group_name, request.contact_distance, request.max_contacts, request.world) == \
            ("g", 0.02, 7, WORLD)


def test_zero_max_contacts_means_the_nodes_own_budget():
    assert check_request_from_msg(ExplainCollision.Request(max_contacts=0), WORLD).max_contacts is None


def test_a_trajectory_request_has_no_contact_options():
    request = check_request_from_msg(CheckTrajectory.Request(pad_self_collisions=True), WORLD)
    assert (request.contact_distance, request.max_contacts, request.pad_self_collisions) == (0.0, None, True)
