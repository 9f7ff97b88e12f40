"""The room's guard, an experiment: it names a learner it believes ends other sessions, and
(opt-in) locks them. Off by default (``classroom start --guard``): its attribution is a timing
match that, measured on this 2-core machine with other suites running, named the attacker in
some runs and an innocent learner in others. What does hold without it: every KILL costs the
learners it hits a retry, never a call (:mod:`bureau.storage.reconnect`).

seekdb 1.4 lets any account ``KILL`` any session (measured: a learner's account, with rights on
its own database only, ends another learner's session and the instructor's; no grant and no
setting refuses it, and seekdb has no SQL audit view). The bureau's connections absorb a KILL
(:mod:`bureau.storage.reconnect`); the guard makes the attempt cost the attacker their account.

How it sees a KILL, measured on seekdb 1.4: the server's log (``server/log/seekdb.log``, at its
default INFO level) records every KILL statement with its time and text (``structured diagnostic
event ... sql_text=KILL <id>``), but not who sent it; the process list
(``oceanbase.V$OB_PROCESSLIST``) gives, for every idle session, its account and how long it has
been idle, to the microsecond. The sender of a KILL is a learner session that went idle at the
moment the log records the KILL (within :data:`TOLERANCE_S`) and whose account is not the
victim's. A KILL whose moment matches exactly one learner account is a strike against it;
:data:`STRIKES` strikes within :data:`WINDOW_S`, :data:`DOMINANCE` times any other account's,
name it in ``guard.json`` beside the roster, which the instructor's page and ``status`` show
(:func:`suspected_learners`). Only with ``classroom start --guard-lock`` does the guard also lock
the account (``ALTER USER ... ACCOUNT LOCK``, its sessions ended; :func:`locked_learners`;
``classroom reset`` unlocks). Locking is opt-in because the attribution is a timing match:
measured on this 2-core machine with other suites running, it once named an innocent learner
(their lesson then failed on "User locked", worse than the attack, whose KILLs the retries
absorb), so by default the guard names and the instructor decides.

What it does not catch: a KILL followed at once (within one poll, :data:`POLL_S`) by another
statement of the same session hides its moment; a burst of KILLs is caught by its last one.
Only a server this classroom started (its log is on this machine) is guarded.

It runs as ``python -m bureau classroom guard --dir D``, started in the background by
``classroom start`` (and on restart) and stopped by ``teardown``; its PID is in ``guard.json``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pymysql

from ..storage.files import write_private
from ..storage.reconnect import is_lost
from . import server as srv

log = logging.getLogger(__name__)

STATE = "guard.json"
POLL_S = 0.1
TOLERANCE_S = 0.012
"""How close a session's going idle must be to the logged KILL (measured offsets: 1-4 ms)."""
STRIKES = 3
"""Strikes within :data:`WINDOW_S` that lock an account: an attacker's KILLs strike it about
once per burst, while a busy innocent learner is struck only when one of its sessions happens
to go idle within the tolerance of someone else's KILL."""
WINDOW_S = 10.0
"""Strikes older than this are forgotten: coincidences spread over a long lesson never add up."""
DOMINANCE = 3
"""A lock also needs at least this many times the strikes of any other account in the window:
measured under a load average of 5-16, an innocent learner drew up to 2 coincidental strikes
while the attacker drew dozens, and two strikes alone once locked an innocent."""
_LINE = re.compile(
    rb"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6})\][^\n]*?"
    rb"(?:sql_text=(KILL[^,\n]*)|MySQL LOGIN\([^\n]*?user_name=([^,\s]+),[^\n]*?sessid=(\d+))",
    re.M | re.I)
_TARGET = re.compile(rb"KILL\s+(?:QUERY\s+|CONNECTION\s+)?(\d+)", re.I)


def state_path(directory: str | Path) -> Path:
    return Path(directory).absolute() / STATE


def read_state(directory: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(state_path(directory).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {"pid": None, "locked": []}
    return data if isinstance(data, dict) else {"pid": None, "locked": []}


def _write_state(directory: str | Path, state: dict[str, Any]) -> None:
    write_private(state_path(directory), json.dumps(state, indent=2) + "\n")


def suspected_learners(directory: str | Path) -> list[dict[str, Any]]:
    """Learners the guard named without locking: ``[{"learner", "at", "kills"}]``."""
    return [x for x in read_state(directory).get("suspected", []) if isinstance(x, dict)]


def locked_learners(directory: str | Path) -> list[dict[str, Any]]:
    """Learners the guard locked: ``[{"learner", "at" (epoch s), "kills"}]``, for the page."""
    return [x for x in read_state(directory).get("locked", []) if isinstance(x, dict)]


def unlock(directory: str | Path, learner: str) -> None:
    """Forget a lock (``classroom reset`` unlocks the account itself)."""
    state = read_state(directory)
    state["locked"] = [x for x in state.get("locked", []) if x.get("learner") != learner]
    state["suspected"] = [x for x in state.get("suspected", [])
                          if x.get("learner") != learner]
    _write_state(directory, state)


# -- the watcher -----------------------------------------------------------------------------------
class Watcher:
    """One room's KILL watcher (see the module's docstring); :meth:`step` is one poll."""

    def __init__(self, roster: Any, lock: bool = False) -> None:
        """``roster``: the room's :class:`~bureau.classroom.tenants.Roster` (passed in: the
        tenants module starts and stops the guard, so the guard does not import it)."""
        self.roster = roster
        self.lock_accounts = lock
        """Lock a named account (``--guard-lock``), or only name it (the default)."""
        self.directory = self.roster.directory
        self.log_path = self.roster.server_dir / "log" / "seekdb.log"
        self._log: Any = None
        self._inode: int | None = None
        self._conn: Any = None
        self.users: dict[int, str] = {}
        """Session id -> account, from the process list and the log's logins."""
        self.idle_since: dict[int, float] = {}
        self.pending: list[tuple[float, int]] = []
        self.strikes: dict[str, list[float]] = {}
        """Account -> the moments of its strikes within :data:`WINDOW_S`."""
        self.kills: dict[str, int] = {}
        self.locked: set[str] = set()

    def _open_log(self, at_end: bool) -> None:
        try:
            st = self.log_path.stat()
        except OSError:
            return
        if self._log is not None and self._inode == st.st_ino and self._log.tell() <= st.st_size:
            return
        if self._log is not None:
            self._log.close()
        self._log = open(self.log_path, "rb")  # noqa: SIM115 - tailed for the guard's life
        self._inode = st.st_ino
        if at_end:
            self._log.seek(0, os.SEEK_END)

    def _cursor(self) -> Any:
        if self._conn is None:
            self._conn = srv.admin_connect(self.roster.host, self.roster.port,
                                           self.roster.admin_user, self.roster.admin_password)
        return self._conn.cursor()

    def _read_log(self) -> None:
        self._open_log(at_end=self._log is None)
        if self._log is None:
            return
        chunk = self._log.read()
        if not chunk:
            return
        cut = chunk.rfind(b"\n") + 1  # keep a half-written last line for next time
        self._log.seek(cut - len(chunk), os.SEEK_CUR)
        for m in _LINE.finditer(chunk[:cut]):
            at = datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            if m.group(2):
                target = _TARGET.search(m.group(2))
                if target:
                    self.pending.append((at, int(target.group(1))))
            else:
                self.users[int(m.group(4))] = m.group(3).decode(errors="replace")

    def _poll(self) -> float:
        t = time.time()
        with self._cursor() as cur:
            cur.execute("SELECT ID, USER, COMMAND, TIME FROM oceanbase.V$OB_PROCESSLIST")
            rows = cur.fetchall()
        for sid, user, command, idle in rows:
            self.users[int(sid)] = str(user)
            if str(command) == "Sleep":
                self.idle_since[int(sid)] = t - float(idle)
            else:
                self.idle_since.pop(int(sid), None)
        alive = {int(r[0]) for r in rows}
        for sid in [s for s in self.idle_since if s not in alive]:
            del self.idle_since[sid]
        return t

    def _attribute(self, polled_at: float) -> list[str]:
        """Strikes for the KILLs logged before this poll; returns accounts to lock."""
        ready = [(at, victim) for at, victim in self.pending if at < polled_at - POLL_S / 2]
        self.pending = [p for p in self.pending if p not in ready]
        out = []
        for at, victim in ready:
            victim_user = self.users.get(victim)
            senders = {self.users.get(sid) for sid, since in self.idle_since.items()
                       if abs(since - at) <= TOLERANCE_S}
            senders = {u for u in senders if u and u.startswith("learner_") and u != victim_user}
            if victim_user is None or len(senders) != 1:
                continue
            (user,) = senders
            recent = [s for s in self.strikes.get(user, []) if s > at - WINDOW_S]
            self.strikes[user] = [*recent, at]
            self.kills[user] = self.kills.get(user, 0) + 1
            others = max((len([s for s in times if s > at - WINDOW_S])
                          for who, times in self.strikes.items() if who != user), default=0)
            if (len(self.strikes[user]) >= STRIKES and len(self.strikes[user]) >= DOMINANCE * others
                    and user not in out and user not in self.locked):
                out.append(user)
        return out

    def lock(self, user: str) -> None:
        with self._cursor() as cur:
            cur.execute("ALTER USER %s@'%%' ACCOUNT LOCK", (user,))
            srv.kill_sessions(cur, user)
        learner = user.removeprefix("learner_")
        state = read_state(self.directory)
        locked = [x for x in state.get("locked", []) if x.get("learner") != learner]
        locked.append({"learner": learner, "at": round(time.time(), 3),
                       "kills": self.kills.get(user, 0)})
        state["locked"] = locked
        _write_state(self.directory, state)
        self.locked.add(user)
        log.warning("guard: locked %s (KILL of other sessions)", user)

    def flag(self, user: str) -> None:
        """Name the account on the instructor's page and in ``status``, without locking it."""
        learner = user.removeprefix("learner_")
        state = read_state(self.directory)
        named = [x for x in state.get("suspected", []) if x.get("learner") != learner]
        named.append({"learner": learner, "at": round(time.time(), 3),
                      "kills": self.kills.get(user, 0)})
        state["suspected"] = named
        _write_state(self.directory, state)
        self.locked.add(user)
        log.warning("guard: %s ends other sessions (not locked: start with --guard-lock)", user)

    def step(self) -> None:
        try:
            polled = self._poll()
            self._read_log()
            for user in self._attribute(polled):
                (self.lock if self.lock_accounts else self.flag)(user)
        except pymysql.err.Error as exc:
            if not is_lost(exc):
                raise
            self._conn = None  # the guard's own session was killed, or the server restarts


def run_forever(roster: Any, lock: bool = False) -> None:
    watcher = Watcher(roster, lock)
    watcher._open_log(at_end=True)
    stop = False

    def on_term(*_: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    while not stop:
        try:
            watcher.step()
        except Exception:  # noqa: BLE001 - a guard that dies guards nothing: log, go on
            log.exception("guard: one poll failed")
            watcher._conn = None
        time.sleep(POLL_S)


# -- its process -----------------------------------------------------------------------------------
def _is_guard(pid: int, directory: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"guard" in cmdline and os.fsencode(str(directory)) in cmdline


def running(directory: str | Path) -> int | None:
    directory = Path(directory).absolute()
    pid = read_state(directory).get("pid")
    return pid if isinstance(pid, int) and _is_guard(pid, directory) else None


def start(directory: str | Path, lock: bool = False) -> int:
    """Start the guard in the background (once per room); returns its PID. ``lock``: lock the
    accounts it names, not only name them."""
    directory = Path(directory).absolute()
    pid = running(directory)
    if pid is not None:
        return pid
    out = open(directory / "guard.log", "a")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen([sys.executable, "-m", "bureau", "classroom", "guard", "--dir",
                             str(directory), *(["--lock"] if lock else [])], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                filter(None, [str(Path(__file__).parents[2]),
                                              os.environ.get("PYTHONPATH")]))})
    out.close()
    state = read_state(directory)
    state["pid"] = proc.pid
    _write_state(directory, state)
    return proc.pid


def stop(directory: str | Path) -> None:
    directory = Path(directory).absolute()
    pid = running(directory)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while _is_guard(pid, directory) and time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                break
        except ChildProcessError:
            pass
        time.sleep(0.05)
    if _is_guard(pid, directory):
        os.kill(pid, signal.SIGKILL)


def main(roster: Any, lock: bool = False) -> int:
    """``python -m bureau classroom guard --dir D [--lock]`` (the CLI loads the roster)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    run_forever(roster, lock)
    return 0


__all__ = ["locked_learners", "read_state", "running", "start", "stop", "suspected_learners",
           "unlock", "Watcher"]
