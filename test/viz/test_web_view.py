"""The browser view (``python -m my_collision_pkg.viz.web``) in a real headless Chromium.

The page of make demo's environment collision (the Panda reaching down through the table,
served by the module's command line with its default motion and time slider) is opened in
Debian's ``chromium`` (``make test`` installs it when missing and apt can), the test waits
for the scene and takes a screenshot, then checks the pixels: not a blank or error page,
the Panda's grey links, the tan table and the red of the links in contact and contacts.
The screenshot stays in the test's temporary folder (its path is printed on failure).
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("viser", reason="viser (the browser view's library) is not installed")
PIL_Image = pytest.importorskip("PIL.Image", reason="pillow is not installed")

from my_collision_pkg.viz import web  # noqa: E402

SERVER_START_TIMEOUT_S = 600.0          # a cold numba cache compiles the kernels first
SCREENSHOT_TIMEOUT_S = 180.0
WINDOW_PX = (1280, 800)
VIEW_COLUMNS = (320, 940)               # the 3D view between the notices (left) and the GUI panel (right)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--use-gl=swiftshader", "--enable-unsafe-swiftshader", "--hide-scrollbars",
                  "--disable-dev-shm-usage", "--run-all-compositor-stages-before-draw"]


def chromium() -> str | None:
    return next((path for path in map(shutil.which, ("chromium", "chromium-browser")) if path), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def colour_counts(png_path) -> dict[str, int]:
    """Pixels of each colour the page draws in the 3D view's middle (the GUI panel on the right and
    the browser's notices at the top left left out): the links in contact and contacts red, the
    robot grey, the table tan; and how many distinct colours the whole picture has.

    viser's lighting shifts colours; the bounds were read off a screenshot of the page
    (red links about (240, 36, 36), grey links (40-55, 40-56, 41-58), table (218, 183, 120))."""
    rgb = np.asarray(PIL_Image.open(png_path).convert("RGB"), dtype=int)
    view = rgb[:, VIEW_COLUMNS[0]:VIEW_COLUMNS[1]]
    r, g, b = view[..., 0], view[..., 1], view[..., 2]
    spread, mean = view.max(axis=-1) - view.min(axis=-1), view.mean(axis=-1)
    return {
        "red": int(((r - np.maximum(g, b) > 90) & (abs(g - b) < 40) & (r > 150)).sum()),
        "grey": int(((spread <= 14) & (mean > 30) & (mean < 200)).sum()),
        "tan": int(((r > g) & (g > b) & (r - b > 40) & (g - b > 20) & (r - g > 15) & (r - g < 80) & (r > 120)).sum()),
        "distinct": int(len(np.unique(rgb.reshape(-1, 3), axis=0))),
    }


def test_colour_counts_see_a_blank_page_as_blank(tmp_path):
    blank = tmp_path / "blank.png"
    PIL_Image.fromarray(np.full((WINDOW_PX[1], WINDOW_PX[0], 3), 255, np.uint8)).save(blank)
    counts = colour_counts(blank)
    assert counts == {"red": 0, "grey": 0, "tan": 0, "distinct": 1}


def test_a_motion_is_posed_between_its_waypoints():
    motion = web.Motion(("a", "b"), [[0.0, 1.0], [1.0, 3.0]], times_s=[0.0, 2.0])
    assert np.allclose(motion.at(1.0), [0.5, 2.0]) and np.allclose(motion.at(5.0), [1.0, 3.0])
    with pytest.raises(web.WebViewError, match="two waypoints"):
        web.Motion(("a",), [[0.0]])


@pytest.fixture
def served_page(tmp_path):
    port = free_port()
    log = open(tmp_path / "server.log", "w+")
    server = subprocess.Popen([sys.executable, "-m", "my_collision_pkg.viz.web", "--port", str(port),
                               "--clearance", "0.05"], stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        url = None
        while url is None:
            assert server.poll() is None, f"the server exited ({server.returncode}):\n{(tmp_path / 'server.log').read_text()}"
            assert time.monotonic() < deadline, "the server did not start in time"
            time.sleep(0.5)
            match = re.search(r"serving the browser view at (\S+)", (tmp_path / "server.log").read_text())
            url = match.group(1) if match else None
        yield url, (tmp_path / "server.log")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def test_the_page_shows_the_panda_the_table_and_red_contacts_in_headless_chromium(served_page, tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("Debian's chromium is not installed (make test installs it with apt-get where it can)")
    url, server_log = served_page
    assert "environment collision between" in server_log.read_text()
    shot = tmp_path / "web_view.png"
    # The page loads its client, opens its websocket and receives the scene; the virtual time
    # budget lets the page run that long before the screenshot is taken. One retry with a longer
    # budget on a loaded machine.
    counts, failures = {}, []
    for budget_ms in (20000, 40000, 60000):
        shot.unlink(missing_ok=True)
        run = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / f'profile-{budget_ms}'}",
                              f"--window-size={WINDOW_PX[0]},{WINDOW_PX[1]}", f"--virtual-time-budget={budget_ms}",
                              f"--screenshot={shot}", url],
                             capture_output=True, text=True, timeout=SCREENSHOT_TIMEOUT_S,
                             env={**os.environ, "HOME": str(tmp_path)})
        if not shot.exists():           # chromium's zygote sometimes fails on a loaded machine: once more
            failures.append(f"chromium wrote no screenshot ({run.returncode}):\n{run.stderr[-2000:]}")
            continue
        counts = colour_counts(shot)
        if counts["red"] > 200 and counts["tan"] > 2000 and counts["grey"] > 2000:
            break
    assert shot.exists(), "\n".join(failures)
    print(f"screenshot: {shot} {counts}")
    assert counts["distinct"] > 100, f"a blank or error page: {counts} ({shot})"
    assert counts["tan"] > 2000, f"no table in the picture: {counts} ({shot})"
    assert counts["grey"] > 2000, f"no robot in the picture: {counts} ({shot})"
    assert counts["red"] > 200, f"no red links or contacts in the picture: {counts} ({shot})"


# ----- what the node tool (tools/web_view.py) passes: messages, read by attribute --------------------
def _xyz(x, y, z):
    return SimpleNamespace(x=x, y=y, z=z)


def _marker(kind, scale, position=(0.0, 0.0, 0.0), points=()):
    return SimpleNamespace(action=web.MARKER_ADD, type=kind, ns="objects", id=1, mesh_resource="",
                           color=SimpleNamespace(r=0.8, g=0.6, b=0.3, a=1.0), scale=_xyz(*scale),
                           pose=SimpleNamespace(position=_xyz(*position), orientation=SimpleNamespace(w=1.0, x=0.0, y=0.0, z=0.0)),
                           points=[_xyz(*p) for p in points])


def test_scene_markers_and_a_contact_report_are_drawn(tmp_path):
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.model.robot_model import RobotModel
    from my_collision_pkg.core.scene.planning_scene import PlanningScene
    urdf = ("<robot name='r'><link name='base'><collision><geometry><box size='0.2 0.2 0.2'/></geometry></collision>"
            "</link><link name='arm'><collision><geometry><sphere radius='0.1'/></geometry></collision></link>"
            "<joint name='j' type='prismatic'><parent link='base'/><child link='arm'/><origin xyz='0 0 0.5'/>"
            "<axis xyz='0 0 1'/><limit lower='-1' upper='1' effort='1' velocity='1'/></joint></robot>")
    checker = CollisionChecker(PlanningScene(RobotModel.from_urdf_string(urdf)))
    view = web.WebView(checker, port=free_port())
    try:
        markers = SimpleNamespace(markers=[
            _marker(web.MARKER_CUBE, (1.0, 1.0, 0.1), (0.0, 0.0, -0.5)),
            _marker(web.MARKER_CYLINDER, (0.1, 0.1, 1.0), (1.0, 0.0, 0.0)),
            _marker(web.MARKER_CUBE_LIST, (0.05, 0.05, 0.05), points=[(0.5, 0.5, 0.0), (0.5, 0.55, 0.0)]),
            _marker(web.MARKER_TRIANGLE_LIST, (1.0, 1.0, 1.0), points=[(0, 0, 0), (1, 0, 0), (0, 1, 0)]),
            _marker(9, (1.0, 1.0, 1.0)),                       # TEXT_VIEW_FACING: not drawn, counted
        ])
        assert view.draw_scene_markers(markers) == 4
        assert "1 scene markers not drawn" in view.header.content
        contact = SimpleNamespace(link_names=["arm", "table"], position=_xyz(0.0, 0.0, 0.3),
                                  normal=_xyz(0.0, 0.0, 1.0), distance=-0.01)
        report = SimpleNamespace(state=SimpleNamespace(name=["j"], position=[-0.2]), contacts=[contact],
                                 surfaces=[SimpleNamespace(vertices=[_xyz(0, 0, 0.3), _xyz(0.1, 0, 0.3), _xyz(0, 0.1, 0.3)],
                                                           triangles=[0, 1, 2], pressure=[1.0, 2.0, 3.0])])
        view.draw(report, title="last contact report")
        assert view.status.content == "**last contact report**\n\n1 contacts"
        with pytest.raises(web.WebViewError, match="2 positions"):
            view.draw(SimpleNamespace(positions=[0.0, 0.0], contacts=()))
    finally:
        view.close()
