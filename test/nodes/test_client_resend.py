"""ValidatorClient asks a check again when its first answer does not come (issue 39).

A server's answer to a request that reached it before it discovered the client is lost in
the transport; the caller would wait its whole timeout. A stand-in server of the
``CheckValidity`` and ``SetAllowedCollisions`` services (a test node, not the validator)
holds back its answer to the first request it gets, as if that answer were lost, and
answers later ones at once.
"""
from __future__ import annotations

import os
import threading
import time

import pytest
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor

from my_collision_pkg.ros.client import MAX_RESENDS, RESEND_AFTER_S, ServiceTimeout, ValidatorClient, resend_times
from my_collision_pkg.ros.qos import SERVICE_QOS
from my_collision_pkg.srv import CheckValidity, SetAllowedCollisions

HELD_BACK_S = 20.0                 # "lost": longer than the test waits for any answer


class ForgetfulServer:
    """Answers every request but the first of each service, which waits HELD_BACK_S (or until closed)."""

    def __init__(self, name: str) -> None:
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.requests = {"check": 0, "set_allowed": 0}
        self._closed = threading.Event()
        group = ReentrantCallbackGroup()
        self.node.create_service(CheckValidity, f"/{name}/check_validity", self._answer("check"),
                                 qos_profile=SERVICE_QOS, callback_group=group)
        self.node.create_service(SetAllowedCollisions, f"/{name}/set_allowed_collisions",
                                 self._answer("set_allowed"), qos_profile=SERVICE_QOS, callback_group=group)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _answer(self, which: str):
        def callback(request, response):
            self.requests[which] += 1
            if self.requests[which] == 1:
                self._closed.wait(HELD_BACK_S)
            if hasattr(response, "valid"):
                response.valid, response.message = True, f"answer to request {self.requests[which]}"
            else:
                response.success = True
            return response
        return callback

    def close(self) -> None:
        self._closed.set()
        time.sleep(0.2)                  # the held-back callback answers before the node goes
        self.executor.shutdown(timeout_sec=5.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@pytest.fixture
def server_and_client():
    name = f"forgetful_{os.getpid()}"
    server = ForgetfulServer(name)
    client = ValidatorClient(f"/{name}", node_name=f"resend_client_{os.getpid()}", timeout_s=6.0)
    try:
        client.wait_for_services(timeout_s=30.0, services=("check", "set_allowed"))
        yield server, client
    finally:
        client.close()
        server.close()


def test_resend_times_double_their_gaps_and_stay_before_the_deadline():
    assert resend_times(0.0, 100.0) == [RESEND_AFTER_S * k for k in (1, 3, 7)][:MAX_RESENDS]
    assert resend_times(10.0, 10.0 + RESEND_AFTER_S * 2) == [10.0 + RESEND_AFTER_S]
    assert resend_times(0.0, RESEND_AFTER_S / 2) == []


def test_a_first_check_whose_answer_is_lost_is_answered_by_its_resend(server_and_client):
    server, client = server_and_client
    start = time.monotonic()
    answer = client.check(["j"], [0.0])
    elapsed = time.monotonic() - start
    assert answer.valid and answer.message == "answer to request 2"
    assert RESEND_AFTER_S <= elapsed < RESEND_AFTER_S + 5.0, elapsed
    # the service has answered once: a later call is not sent twice
    assert client.check(["j"], [0.0]).message == "answer to request 3"
    time.sleep(0.2)
    assert server.requests["check"] == 3


def test_a_scene_update_is_never_sent_twice(server_and_client):
    server, client = server_and_client
    with pytest.raises(ServiceTimeout, match="set_allowed_collisions' did not answer within 6 s"):
        client.set_allowed_collisions([("a", "b", True)])
    assert server.requests["set_allowed"] == 1
