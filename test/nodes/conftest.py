"""Fixtures of the node tests."""
import os

import pytest
from node_processes import STARTUP_TIMEOUT_S, NodeProcess, panda_params

from my_collision_pkg.ros.client import ValidatorClient


@pytest.fixture(scope="module")
def validator():
    """A running collision_validator on the Panda and the default world, with a client."""
    node = NodeProcess("collision_validator", panda_params(max_batch=5000))
    client = ValidatorClient(node_name=f"test_client_{os.getpid()}")
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S)
        yield client
    finally:
        client.close()
        output = node.stop()
        print(output)
