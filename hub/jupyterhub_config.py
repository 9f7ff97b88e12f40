"""JupyterHub for a classroom on one Linux machine: every learner gets JupyterLab with the course,
a system account and a classroom tenant of their own, created at first login.

Why a hub at all: embedded seekdb has no Windows or Intel-Mac build, and a kernel needs about
620 MB, so a quarter to a half of a typical room cannot run the course on their laptop. The hub
runs the course for them on one server. Learners there share a machine, so the machine must
keep them apart as well as the database does: each learner's server runs as a system account
of its own (``learner-<name>``, made at first login), in a home only that account can read,
with the learner's connection file as its only copy outside the instructor's folder, a /proc
that shows only that learner's processes, and per-process limits (address space, process
count). The hub's state and the classroom folder belong to the account that runs the hub
(root: it must be, to switch to the learners' accounts), which no learner is.

Everything is read from the environment, so one file serves the CI test and a real room:

``BUREAU_HUB_DIR``       the hub's folder: ``state/`` (database, cookie secret, passwords;
                         0700) and ``homes/`` (one 0700 home per learner); required
``BUREAU_HUB_PORT``      the public port on 127.0.0.1 (default 8000; the proxy's API and the
                         hub's own port: ``BUREAU_HUB_PROXY_API_PORT``, ``BUREAU_HUB_INTERNAL_PORT``)
``BUREAU_HUB_CLASSROOM`` the classroom folder (``python -m bureau classroom start --dir``);
                         when set, each learner's tenant is created at first login and their
                         connection file is copied into their home, owned by them, 0600
``BUREAU_HUB_USERS``     comma-separated learner names allowed to log in (the instructor's list)
``BUREAU_HUB_AUTHENTICATOR`` ``firstuse`` (default: a learner on the list sets a password at
                         first login) or ``dummy`` (any password; only with ``BUREAU_HUB_TEST=1``)
``BUREAU_HUB_MEM_LIMIT`` address space per process of a learner, e.g. ``4G`` (default ``4G``)
``BUREAU_HUB_NPROC``     processes and threads per learner account (default 512)
``BUREAU_HUB_TEST``      ``1``: an API token for the test driver (``BUREAU_HUB_API_TOKEN``) and
                         leave to use the dummy authenticator; never in a real room
``BUREAU_HUB_COURSE``    the folder whose lessons are copied into each new home (default: this
                         repository's ``notebooks/``)
"""

from __future__ import annotations

import ctypes
import os
import pwd
import re
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid

c = get_config()  # noqa: F821  (JupyterHub injects get_config)


def refuse(what: str, fix: str) -> None:
    """Stop the hub before it serves anyone, saying why and what to do."""
    raise SystemExit(f"bureau hub refused to start: {what}\n  what to do: {fix}")


TEST = os.environ.get("BUREAU_HUB_TEST") == "1"
HUB_DIR = Path(os.environ["BUREAU_HUB_DIR"]).resolve()
STATE = HUB_DIR / "state"
HOMES = HUB_DIR / "homes"
REPO = Path(__file__).resolve().parent.parent
COURSE = Path(os.environ.get("BUREAU_HUB_COURSE", REPO / "notebooks")).resolve()
BIN = Path(sys.executable).parent
ACCOUNT_PREFIX = "learner-"
"""Learners' system accounts are ``learner-<name>``: a learner called ``root`` or ``daemon``
(or the instructor's own login name) never gets an existing account."""
LEARNER = re.compile(r"[a-z][a-z0-9_]{0,23}")  # bureau.classroom.connection.LEARNER
COMMENT = "bureau hub learner"
"""The GECOS field of the accounts the hub makes: it only ever runs a server as one of these."""

if os.geteuid() != 0:
    refuse("it must run as root to give each learner a system account of their own.",
           "start it with sudo (see hub/README.md); the learners' servers run as their accounts.")

# The hub's folders: the state 0700 (root's), the homes' parents traversable but not listable.
for path, mode in ((HUB_DIR, 0o711), (STATE, 0o700), (HOMES, 0o711)):
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, 0, 0)
    os.chmod(path, mode)


def _blocked_ancestor(path: Path) -> Path | None:
    """The first folder on the way to ``path`` that other accounts cannot pass, or None."""
    for folder in path.parents:
        if not folder.stat().st_mode & stat.S_IXOTH:
            return folder
    return None


def _open_to_others(path: Path) -> bool:
    mode = path.stat().st_mode
    return bool(mode & stat.S_IROTH and (not stat.S_ISDIR(mode) or mode & stat.S_IXOTH))


# The learners' servers run the course's interpreter, environment and package. Where one of
# them lies under a folder closed to other accounts (Python built under root's home by pyenv, a
# clone in /root), each learner's server gets a private view of that folder: an empty tmpfs in
# its place with only the needed folders bound back in (read as before, by their own modes).
# A real room keeps them all under /opt or /usr and needs none of this.
NEEDED = sorted({Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), REPO})
NEEDED = [p for p in NEEDED if not any(q != p and q in p.parents for q in NEEDED)]
VIEWS: dict[Path, list[Path]] = {}
for needed in NEEDED:
    if not _open_to_others(needed):
        refuse(f"learners' accounts cannot read {needed}.",
               f"`chmod -R o+rX {needed}`, or install the course where every account may read it.")
    if (blocked := _blocked_ancestor(needed)) is not None:
        VIEWS.setdefault(blocked, []).append(needed)
if (blocked := _blocked_ancestor(HOMES)) is not None:
    refuse(f"learners' accounts cannot reach their homes in {HOMES}: {blocked} is closed to "
           f"other users.", "put BUREAU_HUB_DIR where every account may pass (e.g. /srv/hub).")

classroom = os.environ.get("BUREAU_HUB_CLASSROOM")
if classroom:
    mode = Path(classroom).stat().st_mode
    if mode & 0o077:
        refuse(f"the classroom folder {classroom} may be read by other accounts.",
               f"`chmod 700 {classroom}`: it holds the roster and every learner's password.")

# Loopback only: the hub, its proxy's API and every learner server.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(os.environ.get("BUREAU_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("BUREAU_HUB_INTERNAL_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(os.environ.get('BUREAU_HUB_PROXY_API_PORT', c.JupyterHub.port + 1))}"
# The pure-Python proxy from PyPI (configurable-http-proxy 0.4): no Node needed on the server.
c.ConfigurableHTTPProxy.command = [str(BIN / "configurable-http-proxy")]
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.cleanup_servers = True

# -- who may log in -------------------------------------------------------------------------------
allowed = {u.strip() for u in os.environ.get("BUREAU_HUB_USERS", "").split(",") if u.strip()}
for name in sorted(allowed):
    if not LEARNER.fullmatch(name):
        refuse(f"{name!r} is not a learner name.",
               "use 1-24 lower-case letters, digits or underscores, starting with a letter.")
c.Authenticator.allowed_users = allowed
c.Authenticator.username_pattern = LEARNER.pattern
authenticator = os.environ.get("BUREAU_HUB_AUTHENTICATOR", "firstuse")
if authenticator == "dummy":
    if not TEST:
        refuse("the dummy authenticator lets anyone in with any password.",
               "use BUREAU_HUB_AUTHENTICATOR=firstuse (the default); dummy is for the test "
               "(BUREAU_HUB_TEST=1) only.")
    c.JupyterHub.authenticator_class = "dummy"
elif authenticator == "firstuse":
    # A learner on the instructor's list sets their password at first login (bcrypt hashes
    # in the state folder); names off the list are refused.
    from firstuseauthenticator import FirstUseAuthenticator

    class RoomAuthenticator(FirstUseAuthenticator):
        """FirstUseAuthenticator, with a password over bcrypt's 72 bytes refused with a message
        (bcrypt 5 raises on it, which the login page showed as a bare HTTP 500)."""

        async def authenticate(self, handler, data):
            if len(data.get("password", "").encode("utf-8")) > 72:
                handler.custom_login_error = "Passwords are at most 72 bytes: pick a shorter one."
                return None
            return await super().authenticate(handler, data)

    c.JupyterHub.authenticator_class = RoomAuthenticator
    c.RoomAuthenticator.dbm_path = str(STATE / "passwords.dbm")
    c.RoomAuthenticator.create_users = True
    c.RoomAuthenticator.min_password_length = 8
    if not allowed:
        refuse("no learner names: with FirstUseAuthenticator the first to type a name owns it.",
               "set BUREAU_HUB_USERS=ada,grace,... (the room's list).")
else:
    refuse(f"unknown BUREAU_HUB_AUTHENTICATOR {authenticator!r}.", "use firstuse.")

if TEST:
    c.JupyterHub.services = [{
        "name": "bureau-test-driver",
        "api_token": os.environ["BUREAU_HUB_API_TOKEN"],
    }]
    c.JupyterHub.load_roles = [{
        "name": "bureau-test-driver",
        "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"],
        "services": ["bureau-test-driver"],
    }]


# -- one system account per learner ---------------------------------------------------------------
def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)


MEM_LIMIT = _size(os.environ.get("BUREAU_HUB_MEM_LIMIT", "4G"))
NPROC = int(os.environ.get("BUREAU_HUB_NPROC", "512"))
c.Spawner.mem_limit = MEM_LIMIT  # shown to the learner (MEM_LIMIT); enforced below per process

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNS, _MS_REC, _MS_PRIVATE, _MS_BIND = 0x00020000, 0x4000, 1 << 18, 0x1000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    if _libc.mount(source.encode(), target.encode(), fstype and fstype.encode(), flags,
                   data and data.encode()) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def _proc_hidden_system_wide() -> bool:
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if fields[1] == "/proc" and re.search(r"hidepid=(2|invisible)", fields[3]):
            return True
    return False


PRIVATE_PROC = not _proc_hidden_system_wide()


def private_view() -> None:
    """Give the calling process (a learner's server, before it becomes the learner) a mount
    namespace of its own: a /proc that shows only its own user's processes (``hidepid=2``; one
    procfs instance per mount since Linux 5.8; without it any learner reads every other's
    command lines, with their kernels' connection-file paths and PIDs), and the views above."""
    if not (PRIVATE_PROC or VIEWS):
        return
    if _libc.unshare(_CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE, None)
    for blocked, needed in VIEWS.items():
        fds = [os.open(p, os.O_PATH) for p in needed]  # reachable now, hidden in a moment
        _mount("tmpfs", str(blocked), "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0711,size=64k")
        for path, fd in zip(needed, fds, strict=True):
            os.makedirs(path, mode=0o711, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", str(path), None, _MS_BIND | _MS_REC, None)
            os.close(fd)
    if PRIVATE_PROC:
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "hidepid=2")


def _as_nobody() -> None:
    private_view()
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


# Check once, now, as an account with no rights, that a learner's server will find its
# interpreter and the course: a spawn failing in its preexec_fn would only say "Exception
# occurred in preexec_fn", and one that cannot read the interpreter only "Permission denied".
probe = subprocess.run(
    [sys.executable, "-c", "import importlib.util as u, jupyter_core\n"
     "s = u.find_spec('bureau'); open(s.origin).read()\n"
     "import os; assert not [p for p in os.listdir('/proc') if p == '1'] or os.getuid() == 0"],
    preexec_fn=_as_nobody, capture_output=True, text=True, cwd="/")
if probe.returncode != 0:
    refuse("a learner's server could not start here: "
           + (probe.stderr.strip().splitlines() or ["?"])[-1],
           "install the course where every account may read it (e.g. /opt/bureau, Python from "
           "the system or /opt), and let the hub make mount namespaces (run it as root, not in "
           "an unprivileged container), or `mount -o remount,hidepid=2 /proc` on the host.")


def account_of(learner: str) -> str:
    if not LEARNER.fullmatch(learner):
        raise ValueError(f"{learner!r} is not a learner name")
    return ACCOUNT_PREFIX + learner


def ensure_account(learner: str) -> pwd.struct_passwd:
    """The learner's system account, created (locked password, own group) on first login.

    An existing account of that name that the hub did not make (another GECOS or home) is
    refused rather than used: the hub never runs a learner as somebody else.
    """
    account, home = account_of(learner), HOMES / learner
    try:
        entry = pwd.getpwnam(account)
    except KeyError:
        subprocess.run(["useradd", "--home-dir", str(home), "--no-create-home",
                        "--shell", "/bin/bash", "--user-group", "--comment", COMMENT, account],
                       check=True, capture_output=True)
        entry = pwd.getpwnam(account)
    if entry.pw_gecos != COMMENT or Path(entry.pw_dir) != home or entry.pw_uid == 0:
        raise PermissionError(f"the system account {account} exists and is not one this hub "
                              f"made for {learner} (home {entry.pw_dir}); remove or rename it")
    return entry


def _write_owned(directory: Path, name: str, data: bytes, uid: int, gid: int) -> None:
    """Write ``directory/name`` (0600, owned by uid) without following a link the learner may
    have put there: created afresh beside it, then renamed over it."""
    fd_dir = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    tmp = f".{name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                     dir_fd=fd_dir)
        try:
            os.fchown(fd, uid, gid)
            os.fchmod(fd, 0o600)
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=fd_dir, dst_dir_fd=fd_dir)
    finally:
        os.close(fd_dir)


CONNECTION = ".bureau-classroom.json"


def provision(spawner) -> None:
    """First login: the account, a home with the course, and (with a roster) a tenant.

    The tenant is created by the classroom command, so the hub holds no database password: the
    instructor's copy of the connection file stays in the classroom folder (0700), and the
    learner's copy is written into their home on every start (a ``classroom reset`` takes
    effect at the next start), owned by them, 0600.
    """
    name = spawner.user.name
    entry = ensure_account(name)
    uid, gid, home = entry.pw_uid, entry.pw_gid, HOMES / name
    if not home.exists():
        home.mkdir(mode=0o700)
        for lesson in sorted(COURSE.glob("*.ipynb")) + sorted(COURSE.glob("*.md")):
            shutil.copy2(lesson, home / lesson.name)
            os.chown(home / lesson.name, uid, gid, follow_symlinks=False)
        os.chown(home, uid, gid)
    os.chmod(home, 0o700)  # HOMES is root's: the home itself cannot be a learner's link
    env = {"BUREAU_DATA_DIR": str(home / ".bureau-data")}
    classroom = os.environ.get("BUREAU_HUB_CLASSROOM")
    if classroom:
        from bureau.classroom import tenants

        roster = tenants.Roster.load(classroom)
        # the roster records the data directory, so `classroom remove|reset|teardown` can
        # destroy the learner's sealing keys (they live there, never in the tenant)
        issued = (roster.connection_file(name) if name in roster.learners
                  else tenants.add(classroom, name, data_dir=env["BUREAU_DATA_DIR"]))
        if roster.data_dirs.get(name) != env["BUREAU_DATA_DIR"] and name in roster.learners:
            tenants.set_data_dir(classroom, name, env["BUREAU_DATA_DIR"])
        _write_owned(home, CONNECTION, issued.read_bytes(), uid, gid)
        env["BUREAU_CLASSROOM"] = str(home / CONNECTION)
    spawner.environment.update(env)


class LearnerSpawner(LocalProcessSpawner):
    """JupyterHub's local process spawner, run as the learner's own account (not the hub
    user's name), in a private /proc, with per-process limits."""

    def make_preexec_fn(self, name):
        account = account_of(name)
        become = set_user_setuid(account)

        def preexec():
            private_view()
            # Address space per process (RLIMIT_AS): a runaway cell fails with MemoryError
            # instead of starving the room. RLIMIT_NPROC counts the account's processes and
            # threads: a fork bomb stops at the learner.
            resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))
            resource.setrlimit(resource.RLIMIT_NPROC, (NPROC, NPROC))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            become()

        return preexec

    def user_env(self, env):
        entry = pwd.getpwnam(account_of(self.user.name))
        env.update(USER=entry.pw_name, HOME=entry.pw_dir, SHELL=entry.pw_shell)
        return env

    async def move_certs(self, paths):  # internal SSL is off; never chown as the hub name
        raise NotImplementedError("internal_ssl is not supported by this hub")


c.JupyterHub.spawner_class = LearnerSpawner
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab/tree/00_welcome.ipynb"
c.Spawner.ip = "127.0.0.1"
c.Spawner.http_timeout = 60
c.Spawner.start_timeout = 120
# The course's shared model files stay where pip put them, read-only to learners; only these
# variables reach a learner's server (PYTHONPATH: a checkout used without installing it).
c.Spawner.env_keep = ["PATH", "LANG", "LC_ALL", "PYTHONPATH", "OPENBLAS_CORETYPE",
                      "OPENBLAS_L2_SIZE"]
c.Spawner.pre_spawn_hook = provision
