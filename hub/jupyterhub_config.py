"""JupyterHub for a classroom on one Linux machine: every learner gets JupyterLab with the course
and a classroom tenant of their own, created at first login.

Why a hub at all: embedded seekdb has no Windows or Intel-Mac build, and a kernel needs about
620 MB, so a quarter to a half of a typical room cannot run the course on their laptop. The hub
runs the course for them on one server; isolation between learners comes from the seekdb
server's own accounts and grants (``python -m bureau classroom``), not from the hub: the simple
spawner used here runs every learner as the same system user.

Everything is read from the environment, so one file serves the CI test and a real room:

``BUREAU_HUB_DIR``       the hub's state (database, cookie secret, learners' homes); required
``BUREAU_HUB_PORT``      the public port on 127.0.0.1 (default 8000)
``BUREAU_HUB_CLASSROOM`` the classroom folder (``python -m bureau classroom start --dir``);
                         when set, each learner's tenant is created at first login and the
                         learner's server gets ``BUREAU_CLASSROOM`` pointing at its connection file
``BUREAU_HUB_USERS``     comma-separated learner names allowed to log in
``BUREAU_HUB_TEST``      ``1``: the dummy authenticator (any password) and an API token for the
                         test driver (``BUREAU_HUB_API_TOKEN``); never in a real room
``BUREAU_HUB_COURSE``    the folder whose lessons are copied into each new home (default: this
                         repository's ``notebooks/``)
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (JupyterHub injects get_config)

HUB_DIR = Path(os.environ["BUREAU_HUB_DIR"]).resolve()
HUB_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
HOMES = HUB_DIR / "homes"
REPO = Path(__file__).resolve().parent.parent
COURSE = Path(os.environ.get("BUREAU_HUB_COURSE", REPO / "notebooks")).resolve()
BIN = Path(sys.executable).parent

# Loopback only: the hub, its proxy's API and every learner server.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(os.environ.get("BUREAU_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(os.environ.get('BUREAU_HUB_PROXY_API_PORT', c.JupyterHub.port + 1))}"
# The pure-Python proxy from PyPI (configurable-http-proxy 0.4): no Node needed on the server.
c.ConfigurableHTTPProxy.command = [str(BIN / "configurable-http-proxy")]
c.JupyterHub.db_url = f"sqlite:///{HUB_DIR / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB_DIR / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(HUB_DIR / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(HUB_DIR / "proxy.pid")
c.JupyterHub.cleanup_servers = True

allowed = {u.strip() for u in os.environ.get("BUREAU_HUB_USERS", "").split(",") if u.strip()}
if os.environ.get("BUREAU_HUB_TEST") == "1":
    c.JupyterHub.authenticator_class = "dummy"
    c.JupyterHub.services = [{
        "name": "bureau-test-driver",
        "api_token": os.environ["BUREAU_HUB_API_TOKEN"],
    }]
    c.JupyterHub.load_roles = [{
        "name": "bureau-test-driver",
        "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"],
        "services": ["bureau-test-driver"],
    }]
c.Authenticator.allowed_users = allowed
# A real room: FirstUseAuthenticator or NativeAuthenticator (pip), and SystemdSpawner for limits
# (see hub/README.md); the simple spawner below is what the CI test uses.
c.JupyterHub.spawner_class = "simple"
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab/tree/00_welcome.ipynb"
c.Spawner.ip = "127.0.0.1"
c.Spawner.http_timeout = 60
c.Spawner.start_timeout = 120
c.SimpleLocalProcessSpawner.home_dir_template = str(HOMES / "{username}")
if os.geteuid() == 0:  # CI runs as root; without this the hub reports a bare HTTP 500
    c.Spawner.args = ["--allow-root"]
# The course's shared model files stay where pip put them, read-only to learners; only these
# variables reach a learner's server.
c.Spawner.env_keep = ["PATH", "LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]


def provision(spawner) -> None:
    """First login: a home with the course, a data directory, and (with a roster) a tenant.

    The tenant is created by the classroom command, so the hub holds no database password: the
    roster and connection files are owner-only, and the learner's server receives only the path
    of its own connection file.
    """
    name = spawner.user.name
    home = HOMES / name
    if not home.exists():
        home.mkdir(parents=True, mode=0o700)
        for lesson in sorted(COURSE.glob("*.ipynb")) + sorted(COURSE.glob("*.md")):
            shutil.copy2(lesson, home / lesson.name)
    env = {"BUREAU_DATA_DIR": str(home / ".bureau-data"), "HOME": str(home)}
    classroom = os.environ.get("BUREAU_HUB_CLASSROOM")
    if classroom:
        from bureau.classroom import tenants

        roster = tenants.Roster.load(classroom)
        if name in roster.learners:
            env["BUREAU_CLASSROOM"] = str(roster.connection_file(name))
        else:
            env["BUREAU_CLASSROOM"] = str(tenants.add(classroom, name))
    spawner.environment.update(env)


c.Spawner.pre_spawn_hook = provision
