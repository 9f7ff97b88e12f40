"""The classroom hub recipe (hub/jupyterhub_config.py), driven as a room would use it: JupyterHub
on 127.0.0.1 with its real authenticator (FirstUseAuthenticator), two learners each run as a
system account of their own, lesson 01 run in each learner's kernel through the hub, and each
learner's kernel trying every way the issue lists into the other learner's files, processes
and secrets, and into the instructor's and the hub's.

The actor: a learner with a kernel (or a terminal) on the hub, i.e. arbitrary code as their own
account. It needs root (the hub must be root to switch accounts; CI runs as root): skipped
otherwise, and skipped when the course's environment lies under a folder other accounts cannot
enter (the hub refuses to start then, and says which folder).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from tests.hubdriver import Hub

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "hub" / "jupyterhub_config.py"
LEARNERS = ("ada", "grace")
COMMENT = "bureau hub learner"  # the GECOS the hub gives the accounts it makes
MEM_LIMIT = 3 << 30

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the hub runs each learner as a system account of their own, which needs root "
           "(CI runs as root)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _remove_accounts() -> None:
    """Remove the test's learner accounts, and only accounts this hub made (by their GECOS)."""
    for learner in LEARNERS:
        try:
            entry = pwd.getpwnam(f"learner-{learner}")
        except KeyError:
            continue
        if entry.pw_gecos == COMMENT:
            subprocess.run(["userdel", "--force", entry.pw_name], capture_output=True)


def _hub_env(base: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUREAU_HUB_")}
    env.update(BUREAU_HUB_DIR=str(base / "hub"), BUREAU_HUB_USERS=",".join(LEARNERS), **extra)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@pytest.fixture(scope="module")
def base():
    """A folder every account may pass (0711) but not list, as a real room's /srv would be;
    the hub's folder and the classroom go inside, so each denial below comes from the modes
    the hub and the classroom set, not from a private temporary folder above them."""
    directory = Path(tempfile.mkdtemp(prefix="bureau-hub-"))
    os.chmod(directory, 0o711)
    (directory / "classroom").mkdir(mode=0o711)
    os.chmod(directory / "classroom", 0o711)
    _remove_accounts()
    try:
        yield directory
    finally:
        _remove_accounts()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def classroom_dir(base):
    """A classroom server from the wheel on 127.0.0.1, no learner yet: the hub adds them."""
    from bureau.classroom import tenants

    directory = base / "classroom" / "room"
    tenants.start(directory)
    try:
        yield directory
    finally:
        tenants.teardown(directory)


@pytest.fixture(scope="module")
def hub(base, classroom_dir, tmp_path_factory):
    logs = tmp_path_factory.mktemp("hublog")  # under pytest's private folder
    port = _free_port()
    token = secrets.token_hex(16)
    env = _hub_env(base, BUREAU_HUB_PORT=str(port), BUREAU_HUB_PROXY_API_PORT=str(_free_port()),
                   BUREAU_HUB_INTERNAL_PORT=str(_free_port()), BUREAU_HUB_TEST="1",
                   BUREAU_HUB_API_TOKEN=token,
                   BUREAU_HUB_CLASSROOM=str(classroom_dir), BUREAU_HUB_MEM_LIMIT=str(MEM_LIMIT),
                   BUREAU_HUB_NPROC="300")
    log = open(logs / "hub.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyterhub"), "-f", str(CONFIG)],
                            cwd=logs, env=env, stdout=log, stderr=subprocess.STDOUT)
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
            proc.kill()
            text = (logs / "hub.log").read_text()
            for machine in ("learners' accounts cannot", "a learner's server could not start"):
                if f"refused to start: {machine}" in text:  # this machine, not the recipe
                    pytest.skip("the hub cannot isolate learners on this machine: "
                                + text[text.index(machine):][:500])
            raise RuntimeError("the hub did not start:\n" + text[-3000:])
        time.sleep(0.3)
    try:
        yield Hub(url, token), url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        print("hub log (tail):\n" + (logs / "hub.log").read_text()[-6000:])  # shown on failure


def test_the_dummy_authenticator_is_refused_outside_the_test(base):
    """A real room started with the dummy authenticator (anyone in with any password) does not
    start: the config stops before the hub binds a port."""
    env = _hub_env(base, BUREAU_HUB_AUTHENTICATOR="dummy", BUREAU_HUB_PORT=str(_free_port()))
    run = subprocess.run([str(Path(sys.executable).parent / "jupyterhub"), "-f", str(CONFIG)],
                         cwd=base, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "refused to start" in run.stderr and "dummy authenticator" in run.stderr, run.stderr


def _login(url: str, name: str, password: str) -> int:
    """A browser's login through the hub's form; the status of the form's answer (302: in)."""
    s = requests.Session()
    s.get(f"{url}/hub/login", timeout=30)
    r = s.post(f"{url}/hub/login", data={"username": name, "password": password,
                                         "_xsrf": s.cookies.get("_xsrf", "")},
               allow_redirects=False, timeout=30)
    return r.status_code


# What one learner's kernel tries against another learner (run with the other's paths and PIDs
# filled in). Each attempt prints "denied <error>" or "GOT <what it learned>".
PROBE = r"""
import json, os, signal
def attempt(what):
    try:
        return "GOT " + repr(what())[:60]
    except (PermissionError, FileNotFoundError, ProcessLookupError) as exc:
        return "denied " + type(exc).__name__
def read(path):
    with open(path, "rb") as f:
        return f.read()
def visible(*pids):
    seen = [p for p in os.listdir("/proc") if p.isdigit() and int(p) in pids]
    if not seen:
        raise FileNotFoundError("not in /proc")
    return seen
t = json.loads(TARGETS)
results = {
    "list their home": attempt(lambda: os.listdir(t["home"])),
    "read their lesson": attempt(lambda: read(t["home"] + "/01_whisper.ipynb")),
    "read their connection file": attempt(lambda: read(t["connection"])),
    "read the instructor's copy of it": attempt(lambda: read(t["issued"])),
    "list their data directory": attempt(lambda: os.listdir(t["data"])),
    "read their audit key": attempt(lambda: read(t["data"] + "/audit.key")),
    "read their kernel's connection file": attempt(lambda: read(t["kernel_file"])),
    "list their Jupyter runtime folder": attempt(lambda: os.listdir(t["runtime"])),
    "read the roster": attempt(lambda: read(t["roster"])),
    "list the classroom": attempt(lambda: os.listdir(t["classroom"])),
    "read the hub database": attempt(lambda: read(t["hub_db"])),
    "read the cookie secret": attempt(lambda: read(t["cookie"])),
    "list the hub's state": attempt(lambda: os.listdir(t["state"])),
    "list the homes": attempt(lambda: os.listdir(t["homes"])),
    "read their kernel's environ": attempt(lambda: read(f"/proc/{t['kernel_pid']}/environ")),
    "read their kernel's cmdline": attempt(lambda: read(f"/proc/{t['kernel_pid']}/cmdline")),
    "read their server's environ": attempt(lambda: read(f"/proc/{t['server_pid']}/environ")),
    "read their server's cmdline": attempt(lambda: read(f"/proc/{t['server_pid']}/cmdline")),
    "see their processes": attempt(lambda: visible(t["kernel_pid"], t["server_pid"])),
    "probe their kernel (signal 0)": attempt(lambda: os.kill(t["kernel_pid"], 0)),
    "kill their kernel": attempt(lambda: os.kill(t["kernel_pid"], signal.SIGKILL)),
    "stop their server": attempt(lambda: os.kill(t["server_pid"], signal.SIGSTOP)),
}
print(json.dumps(results))
"""

# What each learner's kernel says about itself: where its secrets are, and that it can read
# them (so a denial above is the other account's, not a missing file).
SELF = r"""
import json, os, resource
from ipykernel.connect import get_connection_file
from jupyter_core.paths import jupyter_runtime_dir
own = {}
for path in (os.environ["BUREAU_CLASSROOM"], os.environ["BUREAU_DATA_DIR"] + "/audit.key",
             get_connection_file(), "/proc/self/environ", "/proc/%d/cmdline" % os.getppid()):
    with open(path, "rb") as f:
        own[path] = len(f.read())
print(json.dumps({
    "uid": os.getuid(), "kernel_pid": os.getpid(), "server_pid": os.getppid(),
    "home": os.environ["HOME"], "connection": os.environ["BUREAU_CLASSROOM"],
    "data": os.environ["BUREAU_DATA_DIR"], "kernel_file": get_connection_file(),
    "runtime": jupyter_runtime_dir(), "own": own,
    "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0],
    "as": resource.getrlimit(resource.RLIMIT_AS)[0],
    "status": {k: v.strip() for k, v in (line.split(":", 1) for line in open("/proc/self/status"))
               if k in ("VmPeak", "VmHWM")}}))
"""


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_two_learners_on_their_own_accounts_run_lesson_01_and_cannot_reach_each_other(
        hub, base, classroom_dir):
    driver, url = hub
    hub_dir = base / "hub"
    # The real authenticator: the first login on the list sets the password; a wrong one, or a
    # name off the instructor's list, does not get in.
    assert _login(url, "ada", "correct horse 1") == 302
    assert _login(url, "ada", "wrong horse 11") == 403
    assert _login(url, "ada", "correct horse 1") == 302
    assert _login(url, "mallory", "any password 1") == 403
    assert _login(url, "grace", "short") == 403  # and sets no password
    assert _login(url, "grace", "x" * 73) == 403  # over bcrypt's limit: refused, not a 500

    kernels, me = {}, {}
    try:
        for learner in LEARNERS:
            driver.start(learner)
            kernels[learner] = kernel = driver.kernel(learner)
            errors = kernel.run_notebook(hub_dir / "homes" / learner / "01_whisper.ipynb")
            assert errors == [], f"lesson 01 failed for {learner}: {errors}"
            out, err = kernel.run(SELF)
            assert err is None, err
            me[learner] = _last_json(out)

        for learner, info in me.items():
            print(f"{learner}'s kernel after lesson 01: {info['status']}")  # sizing (with -s)
            account = pwd.getpwnam(f"learner-{learner}")
            assert info["uid"] == account.pw_uid != 0, f"{learner}'s kernel runs as {info['uid']}"
            assert info["home"] == str(hub_dir / "homes" / learner)
            assert info["nproc"] == 300 and info["as"] == MEM_LIMIT
            assert len(info["own"]) == 5 and all(info["own"].values()), info["own"]
            for path, mode in ((info["home"], 0o700), (info["connection"], 0o600)):
                st = os.stat(path)
                assert (st.st_uid, st.st_mode & 0o777) == (account.pw_uid, mode), path
        for path, mode in ((classroom_dir, 0o700), (classroom_dir / "roster.json", 0o600),
                           (hub_dir / "state", 0o700)):
            st = os.stat(path)
            assert (st.st_uid, st.st_mode & 0o777) == (0, mode), path
        assert me["ada"]["uid"] != me["grace"]["uid"]

        # Each learner against the other: every attempt denied.
        for attacker, victim in (("grace", "ada"), ("ada", "grace")):
            t = me[victim]
            targets = {
                "home": t["home"], "connection": t["connection"], "data": t["data"],
                "issued": str(classroom_dir / "learners" / f"{victim}.json"),
                "kernel_file": t["kernel_file"], "runtime": t["runtime"],
                "roster": str(classroom_dir / "roster.json"), "classroom": str(classroom_dir),
                "hub_db": str(hub_dir / "state" / "jupyterhub.sqlite"),
                "cookie": str(hub_dir / "state" / "jupyterhub_cookie_secret"),
                "state": str(hub_dir / "state"), "homes": str(hub_dir / "homes"),
                "kernel_pid": t["kernel_pid"], "server_pid": t["server_pid"]}
            for key in ("issued", "kernel_file", "roster", "hub_db", "cookie"):
                assert Path(targets[key]).is_file(), f"{key}: {targets[key]} does not exist"
            out, err = kernels[attacker].run(f"TARGETS = {json.dumps(targets)!r}\n" + PROBE)
            assert err is None, err
            results = _last_json(out)
            assert len(results) == 22
            got = {k: v for k, v in results.items() if not v.startswith("denied")}
            assert not got, f"{attacker}'s kernel reached {victim}: {got}"
            # The files the attacker was denied are there and read fine as their owner.
            assert Path(f"/proc/{t['kernel_pid']}/environ").read_bytes()

        # A runaway cell meets the address-space limit, not the room's memory.
        out, err = kernels["grace"].run("x = bytearray(3 << 30)")
        assert err is not None and err.startswith("MemoryError"), (out, err)
        # The victims' kernels survived the attempts on them.
        for learner in LEARNERS:
            out, err = kernels[learner].run("print(6 * 7)")
            assert (out.strip(), err) == ("42", None)
        _no_shared_cases(driver, kernels)
    finally:
        for kernel in kernels.values():
            kernel.close()
        for learner in LEARNERS:
            driver.stop(learner)


def _no_shared_cases(driver: Hub, kernels: dict) -> None:
    """The tenants: neither learner lists or opens the other's cases (their database
    accounts, on top of their system accounts)."""
    seen: dict[str, set[str]] = {}
    for learner, kernel in kernels.items():
        out, err = kernel.run("from bureau import Bureau\n"
                              "print(sorted(c.case_id for c in Bureau.open().cases()))")
        assert err is None, err
        seen[learner] = set(re.findall(r"'([^']+)'", out.strip().splitlines()[-1]))
        assert seen[learner], f"{learner} sees no case after lesson 01"
    assert not (seen["ada"] & seen["grace"]), "a learner sees the other's case"
    for me, other in (("ada", "grace"), ("grace", "ada")):
        out, err = kernels[me].run(
            "from bureau import Bureau\nb = Bureau.open()\n"
            + "".join(f"try:\n    b.case({cid!r})\n    print('OPENED')\n"
                      f"except Exception as e:\n    print(type(e).__name__)\n"
                      for cid in sorted(seen[other])))
        assert err is None, err
        assert "OPENED" not in out, f"{me} opened {other}'s case"


def test_a_learner_polling_the_process_list_through_the_hub_reads_no_sealed_text(hub):
    """Issue 30 §3, the in-flight probe through the hub: grace's kernel (her own system account)
    polls the server's process list while ada's kernel whispers canaries, once unsealed (the
    baseline: the poll sees ada's writes and catches some canaries) and once sealed (the
    default): not one canary is caught."""
    driver, _ = hub
    kernels = {}
    try:
        for learner in LEARNERS:
            driver.start(learner)
            kernels[learner] = driver.kernel(learner)
        results = {}
        for seal in ("0", "1"):
            tokens = [f"CANARY{secrets.token_hex(6)}" for _ in range(30)]
            _, err = kernels["grace"].run(
                "import json, os\nfrom pathlib import Path\n"
                "from bureau.classroom.inflight import Poller, tally\n"
                "poller = Poller(Path(os.environ['BUREAU_CLASSROOM'])).start()")
            assert err is None, err
            _, err = kernels["ada"].run(
                "import os, subprocess, sys\n"
                "from bureau.classroom.inflight import WRITER\n"
                f"env = {{**os.environ, 'BUREAU_SEAL': {seal!r}}}\n"  # her own data directory
                f"p = subprocess.run([sys.executable, '-c', WRITER, *{tokens!r}], env=env, "
                "timeout=600, capture_output=True, text=True)\n"
                "assert p.returncode == 0, p.stderr[-1500:]")
            assert err is None, err
            out, err = kernels["grace"].run(
                f"print(json.dumps(tally(poller.stop(), {tokens!r}, poller.polls)))")
            assert err is None, err
            results["sealed" if seal == "1" else "unsealed"] = _last_json(out)
        print(f"process list through the hub: {results}")
        assert results["unsealed"]["caught"] >= 1, results  # the probe works through the hub
        assert results["sealed"]["caught"] == 0, results
        assert results["sealed"]["writes_seen"] >= 1, results  # it saw ada's sealed writes
    finally:
        for kernel in kernels.values():
            kernel.close()
        for learner in LEARNERS:
            driver.stop(learner)
