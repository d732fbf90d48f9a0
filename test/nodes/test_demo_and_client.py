"""Failures of the client and the demo end in one line and exit code 1, never a traceback (issue 14).

The client against a validator that does not exist (a short timeout); the demo's entry
point (``python -m my_collision_pkg.tools.demo``, what ``make demo`` runs) with a
validator that exits at start-up, one whose services are not up within the wait, and
calls that time out.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from my_collision_pkg.ros.client import ServerExited, ServiceTimeout, ValidatorClient, exit_on_client_error

DEMO_TIMEOUT_S = 240.0      # a run that waits for a validator's start-up (cold: a minute or more)


@pytest.fixture
def nowhere_client():
    client = ValidatorClient(f"/no_such_validator_{os.getpid()}", node_name=f"test_nowhere_{os.getpid()}",
                             timeout_s=0.5)
    yield client
    client.close()


def test_a_call_nobody_answers_names_the_service_and_the_timeout(nowhere_client):
    started = time.monotonic()
    with pytest.raises(ServiceTimeout) as info:
        nowhere_client.check(["j"], [0.0])
    elapsed_s = time.monotonic() - started
    service = f"/no_such_validator_{os.getpid()}/check_validity"
    assert str(info.value) == f"service '{service}' did not answer within 0.5 s"
    assert info.value.service == service and info.value.timeout_s == 0.5
    assert 0.4 <= elapsed_s < 5.0


def test_a_service_never_advertised_names_the_service_and_the_wait(nowhere_client):
    with pytest.raises(ServiceTimeout) as info:
        nowhere_client.wait_for_services(0.3, services=("motion",))
    assert str(info.value) == f"service '/no_such_validator_{os.getpid()}/check_motion' not available after 0.3 s"


def test_a_server_gone_ends_the_wait_at_once():
    client = ValidatorClient(f"/no_such_validator_{os.getpid()}", node_name=f"test_gone_{os.getpid()}",
                             timeout_s=30.0, server_alive=lambda: False)
    try:
        started = time.monotonic()
        with pytest.raises(ServerExited, match=r"the server of '.*/check_motion' exited before answering"):
            client.check_motion(["j"], [0.0], [1.0])
        with pytest.raises(ServerExited, match=r"exited before advertising it"):
            client.wait_for_services(30.0)
        assert time.monotonic() - started < 5.0
    finally:
        client.close()


def test_a_script_exits_1_with_the_timeout_in_one_line(nowhere_client, capsys):
    code = exit_on_client_error(lambda: nowhere_client.check(["j"], [0.0]) and 0, "script")
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [f"script: service '/no_such_validator_{os.getpid()}/check_validity' "
                                        "did not answer within 0.5 s"]


def run_demo(tmp_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "my_collision_pkg.tools.demo", "--output", str(tmp_path), *args],
                          capture_output=True, text=True, timeout=DEMO_TIMEOUT_S, stdin=subprocess.DEVNULL)


def demo_lines(result) -> list[str]:
    """The demo's own lines on stderr (the validator's output passes through prefixed)."""
    return [line for line in result.stderr.splitlines() if line.startswith("demo:")]


def test_the_demo_with_a_validator_that_exits_says_so_in_one_line(tmp_path):
    result = run_demo(tmp_path, "--world", str(tmp_path / "absent_world.yaml"))
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    (line,) = demo_lines(result)
    assert line.startswith("demo: collision_validator exited with code 1; its last output: ")
    assert "absent_world.yaml" in line


def test_the_demo_whose_validator_is_not_up_in_time_names_the_service(tmp_path):
    result = run_demo(tmp_path, "--startup-timeout", "0.5")
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert demo_lines(result) == ["demo: service '/collision_validator/check_validity' not available after 0.5 s"]
    assert "waiting up to 0.5 s for the validator's services (/collision_validator/check_validity" in result.stdout


def test_the_demo_whose_calls_time_out_names_the_service_and_stops_the_validator(tmp_path):
    result = run_demo(tmp_path, "--call-timeout", "0.001")
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert "services ready after" in result.stdout
    (line,) = demo_lines(result)
    assert line.startswith("demo: service '/collision_validator/") and line.endswith("did not answer within 0.001 s")
