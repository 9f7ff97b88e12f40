"""One tenant per learner: a database and an account with rights on that database only.

Isolation between learners is the database engine's: ``CREATE USER ... IDENTIFIED BY`` and
``GRANT ALL PRIVILEGES ON learner_x.* TO learner_x``, nothing in the bureau's code. Measured on
the wheel's seekdb (1.4): a learner's account gets ``SELECT command denied`` on another
learner's tables, ``SHOW DATABASES`` lists only its own, ``USE``/``CREATE DATABASE`` elsewhere
are refused, and the account may log in as ``learner_x`` (or ``learner_x@sys``, the one tenant
of a seekdb server; ``@test`` is refused). The bureau names it ``learner_x``.

The classroom folder (owner-only, the instructor's) holds:

* ``roster.json`` (0600): the server (host, port, the administrative account and its password,
  and the PID of a server this classroom started) and the learners' names. No learner password.
* ``learners/<name>.json`` (0600): one connection file per learner, the only copy of that
  learner's password; hand it to that learner alone. ``reset`` issues a new one.
* ``server/``: the data of a server the classroom started.

A learner's sealing keys (:mod:`bureau.sealing`) live in *their* data directory, never in the
tenant, in ``seal.keys.learner_<name>``. When the roster knows that directory (``add
--data-dir``; the hub records each home's), ``remove``, ``reset`` (without ``--keep-data``) and
``teardown`` destroy that key store with the tenant: the ciphertext the server's redo log and
old blocks keep of the learner's cards is noise from then on, for the instructor too. A
learner on their own laptop keeps their keys where the instructor cannot reach them; ``remove``
and ``teardown`` return a :class:`~bureau.classroom.learner_keys.KeysLeft` for each such
learner (where the keys would be, which of those places hold them, what to do) and the
commands print it.

Passwords never reach a log, an event, an error message or the standard output: commands print
paths, and a server error is reported by its code and wording with any password cut out.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql

from ..errors import ClassroomError
from ..storage.files import private_dir, write_private
from ..tenancy.connection import TenantConnection, check_learner, read_connection, tenant_name
from . import server as srv
from .learner_keys import KeysLeft, keys_left, seal_keys
from .server import LOOPBACK

ROSTER = "roster.json"
FORMAT = "bureau-classroom-roster/1"


@dataclass
class Roster:
    """The instructor's record of a classroom (``roster.json``). The password stays out of
    ``repr``."""

    directory: Path
    host: str
    port: int
    admin_user: str
    admin_password: str = field(repr=False)
    learner_host: str = LOOPBACK
    """The host written into learners' connection files (the machine's address on the room's
    network when learners connect from their own laptops)."""
    pid: int | None = None
    """The server this classroom started (``None``: a server it only uses)."""
    learners: list[str] = field(default_factory=list)
    data_dirs: dict[str, str] = field(default_factory=dict)
    """Each learner's data directory, where the instructor knows it (their sealing keys)."""

    @property
    def server_dir(self) -> Path:
        return self.directory / "server"

    def connection_file(self, learner: str) -> Path:
        return self.directory / "learners" / f"{check_learner(learner)}.json"

    def save(self) -> None:
        write_private(self.directory / ROSTER, json.dumps({
            "format": FORMAT, "host": self.host, "port": self.port,
            "admin_user": self.admin_user, "admin_password": self.admin_password,
            "learner_host": self.learner_host, "pid": self.pid,
            "learners": sorted(self.learners), "data_dirs": self.data_dirs}, indent=2) + "\n")

    @classmethod
    def load(cls, directory: str | Path) -> Roster:
        directory = Path(directory).absolute()
        path = directory / ROSTER
        try:
            if path.stat().st_mode & 0o077:
                raise ClassroomError(f"The roster {path} may be read by others.",
                                     f"It holds the server's administrative password: "
                                     f"`chmod 600 {path}`.")
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ClassroomError(f"No classroom in {directory} (no {ROSTER}).",
                                 "Start one: `python -m bureau classroom start --dir DIR` "
                                 "(or `use` for a server that already runs).") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise ClassroomError(f"The roster {path} cannot be read ({type(exc).__name__}).") \
                from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ClassroomError(f"{path} is not a classroom roster.")
        return cls(directory, data["host"], int(data["port"]), data["admin_user"],
                   data["admin_password"], data.get("learner_host", LOOPBACK), data.get("pid"),
                   list(data.get("learners", [])), dict(data.get("data_dirs", {})))

    @contextmanager
    def admin(self) -> Iterator[Any]:
        """A cursor of the administrative account; server errors come out as ClassroomError
        with any password of this classroom cut out of the wording."""
        try:
            conn = srv.admin_connect(self.host, self.port, self.admin_user, self.admin_password)
        except pymysql.err.Error as exc:
            raise ClassroomError(
                f"Cannot log in to the classroom server {self.host}:{self.port} as "
                f"{self.admin_user} ({_scrub(exc, self.admin_password)}).",
                "Is the server running (`python -m bureau classroom status`)?") from None
        try:
            with conn.cursor() as cur:
                yield cur
        except pymysql.err.Error as exc:
            raise ClassroomError(f"The classroom server refused: {_scrub(exc, self.admin_password)}"
                                 ) from None
        finally:
            conn.close()


def _scrub(exc: BaseException, *secrets: str) -> str:
    text = " ".join(str(a) for a in exc.args)
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text


# -- the classroom -------------------------------------------------------------------------------
def start(directory: str | Path, port: int | None = None,
          learner_host: str = LOOPBACK, guard: bool = True, guard_lock: bool = True) -> Roster:
    """Start a seekdb server for a new classroom in ``directory`` (owner-only), or restart the
    stopped server of an existing one (same data, port, roster and ``root`` password: every
    connection file keeps working). ``guard``: start the room's KILL guard beside it
    (:mod:`bureau.classroom.guard`: it proves from the server's log who ended another account's
    session); ``guard_lock``: it locks that account (otherwise it only names it)."""
    from . import guard as room_guard

    directory = private_dir(Path(directory).absolute())
    if (directory / ROSTER).exists():
        roster = Roster.load(directory)
        if roster.pid is None:
            raise ClassroomError(f"The classroom in {directory} uses a server it did not start "
                                 f"({roster.host}:{roster.port}); start that server itself.")
        if srv.server_running(roster.pid, roster.server_dir):
            raise ClassroomError(f"The classroom in {directory} already runs its server "
                                 f"(pid {roster.pid}, port {roster.port}).")
        if port is not None and port != roster.port:
            raise ClassroomError(f"The classroom in {directory} serves on port {roster.port}; "
                                 "its connection files name that port.",
                                 "Restart it without --port.")
        roster.pid = _restart(roster)
        roster.save()
    else:
        pid, port, password = srv.start_server(directory / "server", port)
        roster = Roster(directory, LOOPBACK, port, "root", password, learner_host, pid)
        roster.save()
    if guard:
        room_guard.start(directory, lock=guard_lock)
    return roster


RESTART_TRIES = 5


def _restart(roster: Roster) -> int:
    """Start the stopped server again on its data. Right after a ``kill -9`` seekdb refused
    ("Start seekdb failed. Did you started seekdb already?", measured once: the killed server
    was this process's child and not yet reaped, so its PID still looked alive); the old server
    is reaped here, and a refusal is tried again a few seconds apart."""
    assert roster.pid is not None
    try:  # the killed server may be our own child: reap it, or its PID looks alive
        os.waitpid(roster.pid, os.WNOHANG)
    except ChildProcessError:
        pass
    for attempt in range(1, RESTART_TRIES + 1):
        try:
            pid, _, _ = srv.start_server(roster.server_dir, roster.port,
                                         password=roster.admin_password)
            return pid
        except ClassroomError:
            if attempt == RESTART_TRIES:
                raise
            time.sleep(2.0 * attempt)
    raise AssertionError("unreachable")


def use(directory: str | Path, host: str, port: int, admin_user: str, admin_password: str,
        learner_host: str | None = None) -> Roster:
    """A classroom on a server that already runs (an OceanBase cluster, a shared seekdb):
    the account must be able to create databases and users, and grant."""
    directory = private_dir(Path(directory).absolute())
    if (directory / ROSTER).exists():
        raise ClassroomError(f"{directory} already holds a classroom.")
    roster = Roster(directory, host, port, admin_user, admin_password, learner_host or host)
    with roster.admin() as cur:
        cur.execute("SELECT 1")
    roster.save()
    return roster


def _issue(roster: Roster, learner: str, password: str) -> Path:
    user = tenant_name(learner)
    conn = TenantConnection(learner, roster.learner_host, roster.port, user, user, password)
    path = roster.connection_file(learner)
    private_dir(path.parent)
    write_private(path, conn.as_json())
    return path


def set_data_dir(directory: str | Path, learner: str, data_dir: str | Path) -> None:
    """Record where ``learner``'s data directory is (so ``remove``/``reset``/``teardown`` can
    destroy their sealing keys); ``{learner}`` in the path is replaced by the name."""
    roster = Roster.load(directory)
    _known(roster, learner)
    roster.data_dirs[learner] = _data_dir(data_dir, learner)
    roster.save()


def _data_dir(data_dir: str | Path, learner: str) -> str:
    text = os.fspath(data_dir).replace("{learner}", check_learner(learner))
    return os.path.abspath(os.path.expanduser(text))


def destroy_keys(roster: Roster, learner: str) -> int | None:
    """Destroy ``learner``'s sealing key store (every key file unlinked, folders fsynced);
    how many key files went, or ``None`` when the roster does not know their data directory."""
    from ..sealing.keys import KeyStore

    where = roster.data_dirs.get(learner)
    if where is None:
        return None
    try:
        return KeyStore(seal_keys(where, learner)).destroy()
    except OSError as exc:
        raise ClassroomError(
            f"The sealing keys of {learner!r} in {where} could not be destroyed "
            f"({type(exc).__name__}: {exc.strerror or exc}).",
            "Run the command as an account that may write that folder, or delete "
            f"{seal_keys(where, learner)} by hand.") from None


def add(directory: str | Path, learner: str, data_dir: str | Path | None = None) -> Path:
    """Create a learner's tenant; returns the path of their connection file. ``data_dir``:
    where the learner's data directory is (``{learner}`` replaced by the name), if known."""
    roster = Roster.load(directory)
    user = tenant_name(learner)
    if learner in roster.learners:
        raise ClassroomError(f"{learner!r} is already a learner of this classroom.",
                             "`classroom reset` gives them a new password (and an empty tenant).")
    password = srv.new_password()
    with roster.admin() as cur:
        cur.execute("SELECT user FROM mysql.user WHERE user = %s", (user,))
        if cur.fetchall():
            raise ClassroomError(f"The server already has an account {user}.",
                                 "Pick another learner name, or remove the account first.")
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{user}`")
        cur.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (user, password))
        cur.execute(f"GRANT ALL PRIVILEGES ON `{user}`.* TO %s@'%%'", (user,))
    roster.learners.append(learner)
    if data_dir is not None:
        roster.data_dirs[learner] = _data_dir(data_dir, learner)
    roster.save()
    return _issue(roster, learner, password)


def reset(directory: str | Path, learner: str, keep_data: bool = False) -> Path:
    """A new password (the old connection file stops working at once, open sessions end) and,
    unless ``keep_data``, an empty tenant and the learner's sealing keys destroyed (when the
    roster knows their data directory). Returns the new connection file's path."""
    roster = Roster.load(directory)
    user = _known(roster, learner)
    password = srv.new_password()
    from .guard import expect_kills, unlock

    with roster.admin() as cur:
        cur.execute("ALTER USER %s@'%%' IDENTIFIED BY %s", (user, password))
        cur.execute("ALTER USER %s@'%%' ACCOUNT UNLOCK", (user,))  # the guard may have locked it
        srv.kill_sessions(cur, user, expect_kills(roster.directory))
        if not keep_data:
            cur.execute(f"DROP DATABASE IF EXISTS `{user}`")
            cur.execute(f"CREATE DATABASE `{user}`")
            cur.execute(f"GRANT ALL PRIVILEGES ON `{user}`.* TO %s@'%%'", (user,))
    if not keep_data:
        destroy_keys(roster, learner)
    unlock(roster.directory, learner)
    return _issue(roster, learner, password)


def remove(directory: str | Path, learner: str) -> KeysLeft | None:
    """Drop a learner's account and database (their data is gone), their sealing keys (when
    the roster knows their data directory) and their connection file. Returns what stays of
    their keys when the roster does not know where they are (``None``: destroyed)."""
    from .guard import expect_kills

    roster = Roster.load(directory)
    user = _known(roster, learner)
    left = keys_left(roster, learner)
    with roster.admin() as cur:
        cur.execute("DROP USER IF EXISTS %s@'%%'", (user,))
        srv.kill_sessions(cur, user, expect_kills(roster.directory))
        cur.execute(f"DROP DATABASE IF EXISTS `{user}`")
    destroy_keys(roster, learner)
    roster.learners.remove(learner)
    roster.data_dirs.pop(learner, None)
    roster.save()
    roster.connection_file(learner).unlink(missing_ok=True)
    return left


def _known(roster: Roster, learner: str) -> str:
    user = tenant_name(learner)
    if learner not in roster.learners:
        raise ClassroomError(f"{learner!r} is not a learner of this classroom.",
                             f"Learners: {', '.join(sorted(roster.learners)) or 'none yet'}.")
    return user


def teardown(directory: str | Path) -> list[KeysLeft]:
    """Remove every learner (their sealing keys too, where the roster knows them), stop the
    server this classroom started, delete the folder. Returns the learners whose keys stayed
    (the roster did not know where), each with where they may be and what to do."""
    from .guard import stop as stop_guard

    roster = Roster.load(directory)
    left = [k for k in (keys_left(roster, learner) for learner in sorted(roster.learners))
            if k is not None]
    stop_guard(roster.directory)
    running = roster.pid is not None and srv.server_running(roster.pid, roster.server_dir)
    if roster.pid is None or running:
        for learner in list(roster.learners):
            remove(roster.directory, learner)
    for learner in Roster.load(roster.directory).learners:  # a stopped server's learners
        destroy_keys(roster, learner)
    if running:
        assert roster.pid is not None
        srv.stop_server(roster.pid, roster.server_dir)
    srv.remove_server_data(roster.server_dir)  # where the server's own account keeps it
    shutil.rmtree(roster.directory, ignore_errors=True)
    return left


def status(directory: str | Path) -> dict[str, Any]:
    """What the instructor may print: server (whether it runs: ``start`` restarts a stopped
    one), its guard, locked learners, learners, connection files (no password)."""
    from . import guard as room_guard

    roster = Roster.load(directory)
    running = (srv.server_running(roster.pid, roster.server_dir) if roster.pid is not None
               else None)
    return {"directory": str(roster.directory), "host": roster.host, "port": roster.port,
            "started_here": roster.pid is not None, "running": running,
            "guard_running": room_guard.running(roster.directory) is not None,
            "locked": [x.get("learner") for x in room_guard.locked_learners(roster.directory)],
            "suspected": [x.get("learner")
                          for x in room_guard.suspected_learners(roster.directory)],
            "learners": {name: str(roster.connection_file(name)) for name in roster.learners}}


def connection(directory: str | Path, learner: str) -> TenantConnection:
    roster = Roster.load(directory)
    _known(roster, learner)
    return read_connection(roster.connection_file(learner))


__all__ = ["KeysLeft", "Roster", "add", "connection", "destroy_keys", "keys_left", "remove",
           "reset", "seal_keys",
           "set_data_dir", "start", "status", "teardown", "use"]
