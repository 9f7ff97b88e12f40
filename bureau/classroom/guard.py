"""The room's guard: it proves which learner ended another account's session, and locks them.

seekdb 1.4 lets any account ``KILL`` any session (measured: a learner's account, with rights on
its own database only, ends another learner's session and the instructor's; no grant and no
setting refuses it, and seekdb has no SQL audit view). The bureau's connections absorb a KILL
(:mod:`bureau.storage.reconnect`): it costs the learners it hits a retry, never a call. The
guard makes the attempt cost the attacker their account.

How it knows who sent a KILL, measured on seekdb 1.4. The server's log
(``server/log/seekdb.log``, default INFO level) records every executed KILL with its time, its
text and the **trace id** of the request (``[...][T1_ReqWorker][<trace>] ... structured
diagnostic event ... sql_text=KILL <id>, return_code=0``), but not who sent it. It also records,
whenever a session closes, that session's id and the trace id of **its last request**
(``connection close(sessid=<id>, ..., trace_id=<trace>, ...)``), and at each login the session's
account (``MySQL LOGIN(... user_name=<account>, ... sessid=<id>``). So a session that closes
with the KILL's trace id as its last request sent that KILL: a proof, not a guess.

An attacker's session rarely closes on its own, so the guard closes it: after each KILL of
another account's session, it ends the learner sessions that went idle within
:data:`PROBE_S` of the logged KILL (the process list gives each idle session's idle time to the
microsecond; the sender's is within a few milliseconds). Each such session's close line then
names its last request. The one whose last request was the KILL is the sender: its account is
locked (``ALTER USER ... ACCOUNT LOCK``, its sessions ended), named in ``guard.json`` beside
the roster, which the instructor's page and ``status`` show (:func:`locked_learners`;
``classroom reset`` unlocks). An innocent learner whose session happened to go idle at that
moment loses that idle session, which the retries absorb like any KILL; their last request was
not the KILL, so they are never locked. ``--guard-name-only`` names without locking.

What it does not catch, by construction: a sender that follows its KILL at once (before the
next poll, :data:`POLL_S`) with another statement on the same session hides the KILL's trace
id; such KILLs are counted as ``unattributed`` on the page. Their cost is still a retry. Only a
server this classroom started (its log is on this machine) is guarded.

It runs as ``python -m bureau classroom guard --dir D``, started in the background by
``classroom start`` (and on restart; ``--no-guard`` leaves it out) and stopped by
``teardown``; its PID is in ``guard.json``.
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
from collections.abc import Callable
from dataclasses import dataclass
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
PROBE_S = 0.05
"""A learner session that went idle this close to a logged KILL may have sent it: the guard
ends it to read its last request from the log (measured offsets of the sender: 1-4 ms)."""
PROOF_WAIT_S = 3.0
"""How long a KILL waits for a close line that names its sender before it counts as
unattributed."""
READY_S = 60.0
"""How long ``start`` waits for the guard to be reading the server's log."""
EXPECTED_KEPT = 500
"""Announced session ids kept in ``guard.json`` (session ids are not reused within a run)."""
NO_TRACE = b"Y0-0000000000000000-0-0"
_KILL_LINE = re.compile(
    rb"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6})\][^\n]*?\]\[([A-Z0-9-]+)\] \[lt=[^\n]*?"
    rb"sql_text=(KILL[^,\n]*), return_code=0", re.M | re.I)
_LOGIN_LINE = re.compile(rb"MySQL LOGIN\([^\n]*?user_name=([^,\s]+),[^\n]*?sessid=(\d+)")
_CLOSE_LINE = re.compile(rb"connection close\(sessid=(\d+),[^\n]*?trace_id=([A-Z0-9-]+)")
_TARGET = re.compile(rb"KILL\s+(?:QUERY\s+|CONNECTION\s+)?(\d+)", re.I)


@dataclass
class Kill:
    """One executed KILL read from the log: when, of which session, under which trace id."""

    at: float
    victim: int
    trace: str
    probed_at: float | None = None


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
    """Learners the guard proved to have ended another account's session but, in name-only
    mode, did not lock: ``[{"learner", "at", "kills"}]``."""
    return [x for x in read_state(directory).get("suspected", []) if isinstance(x, dict)]


def locked_learners(directory: str | Path) -> list[dict[str, Any]]:
    """Learners the guard locked: ``[{"learner", "at" (epoch s), "kills"}]``, for the page."""
    return [x for x in read_state(directory).get("locked", []) if isinstance(x, dict)]


def unattributed_kills(directory: str | Path) -> int:
    """KILLs of another account's session whose sender the guard could not prove."""
    n = read_state(directory).get("unattributed", 0)
    return n if isinstance(n, int) else 0


def expect_kills(directory: str | Path) -> Callable[[list[int]], None]:
    """For the instructor's own KILLs (``reset``, ``remove``): tell the room's guard which
    sessions are about to be ended, before they are, so that it neither probes nor counts them.
    ``guard.json`` is the instructor's alone (0600): a learner cannot announce their KILLs."""

    def announce(sessions: list[int]) -> None:
        if not sessions or running(directory) is None:
            return
        state = read_state(directory)
        expected = [x for x in state.get("expected", []) if isinstance(x, int)]
        state["expected"] = [*expected, *sessions][-EXPECTED_KEPT:]
        _write_state(directory, state)

    return announce


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

    def __init__(self, roster: Any, lock: bool = True) -> None:
        """``roster``: the room's :class:`~bureau.classroom.tenants.Roster` (passed in: the
        tenants module starts and stops the guard, so the guard does not import it)."""
        self.roster = roster
        self.lock_accounts = lock
        """Lock a proven sender (the default), or only name it (``--guard-name-only``)."""
        self.directory = self.roster.directory
        self.log_path = self.roster.server_dir / "log" / "seekdb.log"
        self._log: Any = None
        self._inode: int | None = None
        self._conn: Any = None
        self._reset_memory()
        self.unattributed = unattributed_kills(self.directory)  # the room's count goes on

    def _reset_memory(self) -> None:
        self.users: dict[int, str] = {}
        """Session id -> account, from the process list and the log's logins."""
        self.idle_since: dict[int, float] = {}
        self.pending: list[Kill] = []
        self.last_request: dict[str, int] = {}
        """Trace id -> the session whose last request it was, from the log's close lines."""
        self.own: set[int] = set()
        """Sessions the guard itself ended: their KILL lines are the guard's, not a learner's."""
        self.kills: dict[str, int] = {}
        self.locked: set[str] = set()
        self.unattributed = 0

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
        self.read_lines(chunk[:cut])

    def read_lines(self, text: bytes) -> None:
        """Take in whole log lines: logins, closes and executed KILLs."""
        for m in _LOGIN_LINE.finditer(text):
            self.users[int(m.group(2))] = m.group(1).decode(errors="replace")
        for m in _CLOSE_LINE.finditer(text):
            if m.group(2) != NO_TRACE:
                self.last_request[m.group(2).decode()] = int(m.group(1))
        for m in _KILL_LINE.finditer(text):
            target = _TARGET.search(m.group(3))
            if target is None or m.group(2) == NO_TRACE:
                continue
            victim = int(target.group(1))
            at = datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            self.pending.append(Kill(at, victim, m.group(2).decode()))

    def _poll(self) -> float:
        t = time.time()
        with self._cursor() as cur:
            cur.execute("SELECT ID, USER, COMMAND, TIME FROM oceanbase.V$OB_PROCESSLIST")
            rows = cur.fetchall()
        self.observe(rows, t)
        return t

    def observe(self, rows: Any, t: float) -> None:
        """Take in one reading of the process list made at ``t``."""
        for sid, user, command, idle in rows:
            self.users[int(sid)] = str(user)
            if str(command) == "Sleep":
                self.idle_since[int(sid)] = t - float(idle)
            else:
                self.idle_since.pop(int(sid), None)
        alive = {int(r[0]) for r in rows}
        for sid in [s for s in self.idle_since if s not in alive]:
            del self.idle_since[sid]

    def decide(self, polled_at: float) -> tuple[list[str], list[int]]:
        """For the KILLs read so far: the accounts proven to have sent one (to lock), and the
        sessions to end so that their close lines can prove it (the probe)."""
        senders: list[str] = []
        probe: list[int] = []
        waiting: list[Kill] = []
        for k in self.pending:
            if k.victim in self.own:  # the guard's own probe or lock, or the instructor's reset
                continue
            victim_user = self.users.get(k.victim)
            sid = self.last_request.get(k.trace)
            if sid is not None:  # proof: the KILL was the last request of session `sid`
                user = self.users.get(sid)
                if (user and user.startswith("learner_") and user != victim_user
                        and user not in self.locked and user not in senders):
                    self.kills[user] = self.kills.get(user, 0) + 1
                    senders.append(user)
                continue
            if k.probed_at is None:
                if k.at > polled_at - POLL_S / 2:  # not yet seen idle by a poll: wait
                    waiting.append(k)
                    continue
                k.probed_at = polled_at
                probe += [s for s, since in self.idle_since.items()
                          if abs(since - k.at) <= PROBE_S and s != k.victim and s not in probe
                          and self.users.get(s, "").startswith("learner_")
                          and self.users.get(s) != victim_user]
                waiting.append(k)
            elif polled_at - k.probed_at < PROOF_WAIT_S:
                waiting.append(k)
            else:
                self.unattributed += 1
        self.pending = waiting
        # A KILL's line precedes its sender's close line in the log, so a close line read by
        # now can only prove a KILL read by now: the rest need not be kept.
        self.last_request.clear()
        return senders, probe

    def end_sessions(self, sessions: list[int]) -> None:
        """The probe: end these sessions, so that the log names each one's last request."""
        with self._cursor() as cur:
            for sid in sessions:
                self.own.add(sid)
                try:
                    cur.execute(f"KILL {int(sid)}")
                except pymysql.err.Error as exc:
                    if is_lost(exc):
                        raise
                    # ended meanwhile: its close line is in the log anyway

    def lock(self, user: str) -> None:
        with self._cursor() as cur:
            cur.execute("ALTER USER %s@'%%' ACCOUNT LOCK", (user,))
            srv.kill_sessions(cur, user, self.own.update)
        self._record("locked", user)
        log.warning("guard: locked %s (proved to have ended another account's session)", user)

    def flag(self, user: str) -> None:
        """Name the account on the instructor's page and in ``status``, without locking it."""
        self._record("suspected", user)
        log.warning("guard: %s ended another account's session (not locked: name-only mode)",
                    user)

    def _record(self, key: str, user: str) -> None:
        learner = user.removeprefix("learner_")
        state = read_state(self.directory)
        named = [x for x in state.get(key, []) if x.get("learner") != learner]
        named.append({"learner": learner, "at": round(time.time(), 3),
                      "kills": self.kills.get(user, 0)})
        state[key] = named
        state["unattributed"] = self.unattributed
        _write_state(self.directory, state)
        self.locked.add(user)

    def _sync(self) -> None:
        """What the instructor's commands told the guard: lifted locks (``classroom reset``)
        and the sessions they are about to end themselves (:func:`expect_kills`)."""
        state = read_state(self.directory)
        self.locked = {f"learner_{x.get('learner')}"
                       for x in [*state.get("locked", []), *state.get("suspected", [])]
                       if isinstance(x, dict)}
        self.own |= {x for x in state.get("expected", []) if isinstance(x, int)}

    def step(self) -> None:
        try:
            polled = self._poll()
            self._read_log()
            self._sync()  # written before the instructor's KILLs ran, so before their lines
            before = self.unattributed
            senders, probe = self.decide(polled)
            for user in senders:
                (self.lock if self.lock_accounts else self.flag)(user)
            if probe:
                self.end_sessions(probe)
            if self.unattributed != before:
                state = read_state(self.directory)
                state["unattributed"] = self.unattributed
                _write_state(self.directory, state)
        except pymysql.err.Error as exc:
            if not is_lost(exc):
                raise
            self._conn = None  # the guard's own session was killed, or the server restarts


def run_forever(roster: Any, lock: bool = True) -> None:
    watcher = Watcher(roster, lock)
    watcher._open_log(at_end=True)
    state = read_state(watcher.directory)
    state["watching"] = os.getpid()  # from here on, every KILL the server logs is read
    _write_state(watcher.directory, state)
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


def start(directory: str | Path, lock: bool = True) -> int:
    """Start the guard in the background (once per room); returns its PID. ``lock``: lock a
    proven sender's account (the default), or only name it."""
    directory = Path(directory).absolute()
    pid = running(directory)
    if pid is not None:
        return pid
    out = open(directory / "guard.log", "a")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen([sys.executable, "-m", "bureau", "classroom", "guard", "--dir",
                             str(directory), *([] if lock else ["--name-only"])], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                filter(None, [str(Path(__file__).parents[2]),
                                              os.environ.get("PYTHONPATH")]))})
    out.close()
    state = read_state(directory)
    state["pid"] = proc.pid
    _write_state(directory, state)
    deadline = time.monotonic() + READY_S  # a KILL sent before the guard reads the log is missed
    while read_state(directory).get("watching") != proc.pid and proc.poll() is None:
        if time.monotonic() > deadline:
            log.warning("guard: not watching after %s s; see %s", READY_S, directory / "guard.log")
            break
        time.sleep(0.05)
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


def main(roster: Any, lock: bool = True) -> int:
    """``python -m bureau classroom guard --dir D [--name-only]`` (the CLI loads the roster)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    run_forever(roster, lock)
    return 0


__all__ = ["Kill", "expect_kills", "locked_learners", "read_state", "running", "start", "stop",
           "suspected_learners", "unattributed_kills",
           "unlock", "Watcher"]
