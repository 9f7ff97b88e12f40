"""The classroom hub recipe (hub/jupyterhub_config.py), driven as a room would use it: JupyterHub
on 127.0.0.1 with the dummy authenticator, two learners, lesson 01 run in each learner's own
kernel through the hub, and neither learner able to see the other's cases."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.hubdriver import Hub

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "hub" / "jupyterhub_config.py"
LEARNERS = ("ada", "grace")


@pytest.fixture(scope="module")
def classroom_dir(tmp_path_factory):
    """A classroom server from the wheel on 127.0.0.1, no learner yet: the hub adds them."""
    from bureau.classroom import tenants

    directory = tmp_path_factory.mktemp("classroom") / "room"
    tenants.start(directory)
    try:
        yield directory
    finally:
        tenants.teardown(directory)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def hub(tmp_path_factory, classroom_dir):
    root = tmp_path_factory.mktemp("hub")
    port = _free_port()
    token = secrets.token_hex(16)
    env = dict(os.environ, BUREAU_HUB_DIR=str(root), BUREAU_HUB_PORT=str(port),
               BUREAU_HUB_PROXY_API_PORT=str(_free_port()), BUREAU_HUB_TEST="1",
               BUREAU_HUB_API_TOKEN=token, BUREAU_HUB_USERS=",".join(LEARNERS),
               BUREAU_HUB_CLASSROOM=str(classroom_dir))
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    log = open(root / "hub.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([str(Path(bindir) / "jupyterhub"), "-f", str(CONFIG)], cwd=root,
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if requests.get(f"{url}/hub/api", timeout=2).ok:
                break
        except requests.ConnectionError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            log.close()
            raise RuntimeError("the hub did not start:\n" + (root / "hub.log").read_text()[-3000:])
        time.sleep(0.3)
    try:
        yield Hub(url, token), root
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_two_learners_run_lesson_01_through_the_hub_and_see_only_their_own_cases(hub):
    driver, root = hub
    seen: dict[str, set[str]] = {}
    for learner in LEARNERS:
        driver.start(learner)
        kernel = driver.kernel(learner)
        try:
            errors = kernel.run_notebook(root / "homes" / learner / "01_whisper.ipynb")
            assert errors == [], f"lesson 01 failed for {learner}: {errors}"
            out, err = kernel.run(
                "import os\nfrom bureau import Bureau\n"
                "print(bool(os.environ.get('BUREAU_CLASSROOM')))\n"
                "print(sorted(c.case_id for c in Bureau.open().cases()))")
            assert err is None, err
            in_tenant, ids = out.strip().splitlines()[-2:]
            assert in_tenant == "True", f"{learner}'s server did not get a tenant"
            seen[learner] = set(eval(ids))  # a printed list of case ids
            assert seen[learner], f"{learner} sees no case after lesson 01"
        finally:
            kernel.close()
    assert not (seen["ada"] & seen["grace"]), "a learner sees the other's case"
    # Opening the other learner's case by its id (read off a shared screen, say) fails too.
    for me, other in (("ada", "grace"), ("grace", "ada")):
        kernel = driver.kernel(me)
        try:
            out, err = kernel.run(
                "from bureau import Bureau\nb = Bureau.open()\n"
                + "".join(f"try:\n    b.case({cid!r})\n    print('OPENED')\n"
                          f"except Exception as e:\n    print(type(e).__name__)\n"
                          for cid in sorted(seen[other])))
            assert err is None, err
            assert "OPENED" not in out, f"{me} opened {other}'s case"
        finally:
            kernel.close()
    for learner in LEARNERS:
        driver.stop(learner)
