"""The classroom's seekdb server: started from the pylibseekdb wheel, or one that already runs.

seekdb's server listens on every interface (its ``--help`` has no bind option) and starts with a
``root`` account that has no password. So the first thing :func:`start` does once the port
answers is give ``root`` a random password (kept in the owner-only roster): otherwise any
learner, or anyone on the network, could log in as ``root`` and read every tenant. The
bureau itself connects only to the host the roster names (127.0.0.1 for a server it started).
The server is stopped by its PID, checked against the command line it was started with.

Learners' SQL must not reach the machine's files (issue 37): seekdb ships
``secure_file_priv = /`` and lets ``SELECT ... INTO DUMPFILE`` write without the FILE
privilege, so the server starts with file import/export off and, under root, as its own system
account (:func:`start_server`). What stays open is pinned in ``tests/test_classroom_files.py``.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import site
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymysql

from ..bounds import DDL_S, session_sql
from ..errors import ClassroomError
from ..storage.diskspace import check_before_open, failure_error, log_size, start_failure_since
from ..storage.files import private_dir, seekdb_server_binary

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 180.0


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def new_password() -> str:
    """32 random URL-safe characters: no quote or backslash can reach SQL text or a shell."""
    return secrets.token_urlsafe(24)


ADMIN_READ_TIMEOUT_S = 60.0
"""No administrative statement waits longer for its answer: a server that stopped answering
(or a statement a learner's object stalls) fails typed instead of hanging the instructor."""


def admin_connect(host: str, port: int, user: str, password: str, database: str | None = None,
                  timeout: float = 10.0) -> Any:
    return pymysql.connect(host=host, port=int(port), user=user, password=password,
                           database=database, autocommit=True, charset="utf8mb4",
                           connect_timeout=timeout, read_timeout=ADMIN_READ_TIMEOUT_S,
                           write_timeout=ADMIN_READ_TIMEOUT_S, init_command=session_sql())


FILE_ACCESS_OFF = "NULL"
"""``secure_file_priv`` = ``NULL``: no ``SELECT ... INTO DUMPFILE/OUTFILE``, no ``LOAD DATA``.
seekdb ships ``/`` (anywhere), and in 1.4 ``INTO DUMPFILE`` needs no FILE privilege."""
SERVER_ACCOUNT = "bureau-seekdb"
"""The system account a classroom server started by root runs as (no login shell)."""
SERVER_HOME = Path("/var/lib/bureau-seekdb")
"""Root-owned; each room's data directory under ``rooms/`` is owned by the account, 0700."""


def start_server(base_dir: Path, port: int | None = None,
                 password: str | None = None) -> tuple[int, int, str]:
    """Start ``seekdb --nodaemon`` for ``base_dir``, wait until it answers on 127.0.0.1, check
    that file import and export are off, and give ``root`` a random password. Returns (pid,
    port, root password).

    ``password``: restart a server whose data is already there (its ``root`` has this
    password): same data, same port, its root password kept; file access is checked again.

    Two layers keep learners' SQL away from the machine's files, each measured on seekdb 1.4:
    ``secure_file_priv`` is ``NULL`` (set at bootstrap with ``--variable``; a server whose data
    predates that is switched over its local socket, the only way seekdb lets it change), and,
    when started as root, the server runs as :data:`SERVER_ACCOUNT`, which owns only its data
    directory (``base_dir`` is then a link to it): even a file the engine writes cannot land in
    the instructor's folders. Without root, one line on stderr names the remaining risk."""
    base_dir = Path(base_dir).absolute()
    port = port or free_port()
    account = _server_account()
    binary = seekdb_server_binary()
    if account is not None and _fresh(base_dir):
        binary = _executable_by(binary, account)
        _refuse_writable_by(account, [base_dir.parent, Path(sys.prefix), *_site_dirs(),
                                      Path(__file__).resolve().parents[2], Path.home(),
                                      binary.parent])
        data = _account_data_dir(base_dir, account)
        as_user: dict[str, Any] = {"user": account[0], "group": account[1], "extra_groups": [],
                                   "env": {"PATH": "/usr/bin:/bin", "HOME": str(data),
                                           "LANG": "C.UTF-8"}}
    else:
        data = private_dir(base_dir)
        as_user = {}
    log_from = _check_disk(data)  # where the data lives: the account's folder when it has one
    log = _open_log(server_log(base_dir))
    proc = subprocess.Popen(
        [str(binary), "--nodaemon", "--base-dir", str(data), "--port", str(port),
         "--variable", f"secure_file_priv={FILE_ACCESS_OFF}"],
        cwd=data, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True, umask=0o077,  # the server keeps it: its files stay 0600
        **as_user)
    log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            _raise_logged_failure(proc.pid, base_dir, log_from)
            tail = _read_log(server_log(base_dir))[-1500:]
            raise ClassroomError(f"The seekdb server exited with code {proc.returncode} while "
                                 f"starting: {tail}",
                                 "Is the port in use? Try another with --port.")
        try:
            conn = admin_connect(LOOPBACK, port, "root", password or "", timeout=2)
            break
        except pymysql.err.Error:
            _raise_logged_failure(proc.pid, base_dir, log_from)
            if time.monotonic() > deadline:
                stop_server(proc.pid, base_dir)
                raise ClassroomError(f"The seekdb server did not answer on port {port} within "
                                     f"{START_TIMEOUT_S:.0f} s.") from None
            time.sleep(0.5)
    bound_ddl(conn)
    if password is not None:
        try:
            close_file_access(conn, base_dir, password)
        except ClassroomError:
            stop_server(proc.pid, base_dir)
            raise
        finally:
            conn.close()
        return proc.pid, port, password
    password = new_password()
    try:
        try:
            close_file_access(conn, base_dir, "")
        except ClassroomError:
            stop_server(proc.pid, base_dir)
            raise
        with conn.cursor() as cur:
            cur.execute("ALTER USER 'root' IDENTIFIED BY %s", (password,))
    finally:
        conn.close()
    if server_account_uid(proc.pid) == os.getuid():
        print(f"classroom: file import/export is off in the engine, but the seekdb server runs "
              f"as {pwd.getpwuid(os.getuid()).pw_name} (a flaw past that setting would write "
              f"as you); start the classroom as root to run it as the system account "
              f"{SERVER_ACCOUNT}, which owns only its data.", file=sys.stderr)
    return proc.pid, port, password


def bound_ddl(conn: Any) -> None:
    """No DDL on the classroom's server waits longer than :data:`bureau.bounds.DDL_S` (seekdb's
    ``_ob_ddl_timeout`` is 1,000 s; the instructor's ``add`` and ``reset`` create databases and
    tables). The server is the classroom's own, so its parameter is the bureau's to set."""
    with conn.cursor() as cur:
        cur.execute("SHOW PARAMETERS LIKE '%ob_ddl_timeout'")
        row = cur.fetchone()
        if row is None or str(row[3]) != f"{DDL_S}s":
            cur.execute(f"ALTER SYSTEM SET _ob_ddl_timeout = '{DDL_S}s'")


# -- file access ---------------------------------------------------------------------------------
def file_access(conn: Any) -> str | None:
    """The server's ``secure_file_priv`` (global): ``NULL`` is off."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES LIKE 'secure_file_priv'")
        row = cur.fetchone()
    return None if row is None else str(row[1])


def set_file_access(base_dir: Path, password: str, value: str) -> None:
    """Set ``secure_file_priv`` over the server's local socket (``run/sql.sock`` in its data
    directory): measured on seekdb 1.4, a TCP session, even root's, gets ``1235 modify
    SECURE_FILE_PRIV not by unix socket connection not supported``."""
    sock = Path(base_dir).resolve() / "run" / "sql.sock"
    conn = pymysql.connect(unix_socket=str(sock), user="root", password=password,
                           autocommit=True, connect_timeout=10, read_timeout=ADMIN_READ_TIMEOUT_S,
                           init_command=session_sql())
    try:
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL secure_file_priv = %s", (value,))
    finally:
        conn.close()


def close_file_access(conn: Any, base_dir: Path, password: str) -> None:
    """Make sure file import and export are off (``conn``: root's session on the server in
    ``base_dir``); switch them off over the local socket if the server's data predates
    ``--variable secure_file_priv=NULL`` (which takes effect only at bootstrap). Raises if they
    stay on: a classroom never serves with them on."""
    if file_access(conn) != FILE_ACCESS_OFF:
        try:
            set_file_access(base_dir, password, FILE_ACCESS_OFF)
        except pymysql.err.Error as exc:
            raise ClassroomError(f"File import/export could not be switched off on the "
                                 f"classroom server ({exc.args[0]}).") from None
    value = file_access(conn)
    if value != FILE_ACCESS_OFF:
        raise ClassroomError(f"The classroom server keeps file import/export on "
                             f"(secure_file_priv = {value!r}): a learner could write files.",
                             "Report the seekdb version; the classroom will not serve so.")


# -- the server's own account --------------------------------------------------------------------
def _server_account() -> tuple[int, int] | None:
    """(uid, gid) of :data:`SERVER_ACCOUNT`, created if missing; ``None`` unless root or if no
    account can be made (no ``useradd``)."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(SERVER_ACCOUNT)
    except KeyError:
        useradd = shutil.which("useradd")
        shell = shutil.which("nologin") or "/bin/false"
        if useradd is None:
            return None
        subprocess.run([useradd, "--system", "--user-group", "--no-create-home",
                        "--home-dir", str(SERVER_HOME), "--shell", shell, SERVER_ACCOUNT],
                       capture_output=True, timeout=60)  # may race another start: look again
        try:
            pw = pwd.getpwnam(SERVER_ACCOUNT)
        except KeyError:
            return None
    if pw.pw_uid == 0:
        return None
    return pw.pw_uid, pw.pw_gid


def _fresh(base_dir: Path) -> bool:
    """A new room, or one whose data already lives with the account (``base_dir`` a link):
    a room started before the account existed keeps running as before."""
    return base_dir.is_symlink() or not base_dir.exists() or not any(base_dir.iterdir())


def _account_data_dir(base_dir: Path, account: tuple[int, int]) -> Path:
    """The room's data directory under :data:`SERVER_HOME`, owned by the account (0700);
    ``base_dir`` becomes a link to it. A restart finds it through the link."""
    rooms = SERVER_HOME / "rooms"
    for d in (SERVER_HOME, rooms):
        d.mkdir(mode=0o755, exist_ok=True)
        os.chown(d, 0, 0)
        os.chmod(d, 0o755)
    if base_dir.is_symlink():
        data = base_dir.resolve()
        if data.parent != rooms:
            raise ClassroomError(f"{base_dir} links outside {rooms}.")
        data.mkdir(mode=0o700, exist_ok=True)
    else:
        if base_dir.exists():
            base_dir.rmdir()  # empty (checked by _fresh)
        data = rooms / secrets.token_hex(8)
        data.mkdir(mode=0o700)
        base_dir.symlink_to(data)
    os.chown(data, *account)
    os.chmod(data, 0o700)
    return data


def remove_server_data(base_dir: Path) -> None:
    """Delete a stopped room's data directory where it lives (under :data:`SERVER_HOME` when
    ``base_dir`` links there)."""
    base_dir = Path(base_dir)
    if base_dir.is_symlink():
        data = base_dir.resolve()
        if data.parent == SERVER_HOME / "rooms":
            shutil.rmtree(data, ignore_errors=True)
        base_dir.unlink()


def _as_account(account: tuple[int, int], args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``args`` as the account; a program it may not execute comes back as exit code 126."""
    try:
        return subprocess.run(args, user=account[0], group=account[1], extra_groups=[],
                              env={"PATH": "/usr/bin:/bin"}, cwd="/", capture_output=True,
                              text=True, timeout=60)
    except OSError as exc:
        return subprocess.CompletedProcess(args, 126, "", str(exc))


def _executable_by(binary: Path, account: tuple[int, int]) -> Path:
    """``binary`` if the account may run it; else a root-owned copy (with the library beside
    it) under :data:`SERVER_HOME` (a venv in a 0700 home is closed to the account)."""
    if _as_account(account, [str(binary), "--version"]).returncode == 0:
        return binary
    bin_dir = SERVER_HOME / "bin"
    bin_dir.mkdir(mode=0o755, exist_ok=True)
    for src in (binary, binary.parent / "libaio.so.1"):
        dst = bin_dir / src.name
        if src.exists() and (not dst.exists() or dst.stat().st_size != src.stat().st_size
                             or dst.stat().st_mtime != src.stat().st_mtime):
            tmp = dst.with_name(dst.name + ".new")  # a running server keeps the old file
            shutil.copy2(src, tmp)
            os.chmod(tmp, 0o755)
            os.replace(tmp, dst)
    copy = bin_dir / binary.name
    if _as_account(account, [str(copy), "--version"]).returncode != 0:
        raise ClassroomError(f"The system account {SERVER_ACCOUNT} cannot run {copy}.")
    return copy


def _site_dirs() -> list[Path]:
    return [Path(p) for p in [*site.getsitepackages(), site.getusersitepackages()]]


def _refuse_writable_by(account: tuple[int, int], paths: list[Path]) -> None:
    """Refuse to start if the server's account could write any of ``paths`` (the classroom
    folder, the virtualenv and its site-packages, the home): a file there could run code."""
    existing = [str(p) for p in dict.fromkeys(paths) if p.exists()]
    out = _as_account(account, ["/bin/sh", "-c",
                                'for p; do [ -w "$p" ] && printf "%s\n" "$p"; done; true',
                                "sh", *existing])
    writable = [line for line in out.stdout.splitlines() if line]
    if writable:
        raise ClassroomError(f"The seekdb server's account {SERVER_ACCOUNT} could write "
                             f"{', '.join(writable)}.",
                             "Make them writable by their owner only (`chmod o-w,g-w PATH`).")


def server_account_uid(pid: int) -> int | None:
    """The real uid a process runs as (``/proc/<pid>/status``), ``None`` if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def server_log(base_dir: Path) -> Path:
    """The server's output, beside ``base_dir`` in the instructor's classroom folder (not in
    the data directory, which the server's account owns)."""
    return Path(base_dir).absolute().with_name("server.out")


def _open_log(path: Path) -> Any:
    """The server's output file (never opened through a link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    return os.fdopen(fd, "w")


def _read_log(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        return f.read().decode(errors="replace")


def kill_sessions(cur: Any, user: str,
                  announce: Callable[[list[int]], None] | None = None) -> int:
    """End the learner's open sessions: a dropped account or a changed password does not close
    a connection that is already logged in. ``announce`` is told the session ids first (the
    room's guard then knows these KILLs are the instructor's)."""
    cur.execute("SHOW PROCESSLIST")
    ids = [int(row[0]) for row in cur.fetchall() if row[1] == user]
    if announce is not None:
        announce(ids)
    for session in ids:
        try:
            cur.execute(f"KILL {int(session)}")
        except pymysql.err.Error:  # ended meanwhile
            pass
    return len(ids)


def _check_disk(base_dir: Path) -> int:
    """Refuse to start where seekdb cannot (too little free space, said typed with the figures:
    a first start needs 2.55 GB); returns where this start's lines begin in seekdb's log."""
    check_before_open(base_dir, base_dir)
    return log_size(base_dir / "log" / "seekdb.log")


def _raise_logged_failure(pid: int, base_dir: Path, log_from: int) -> None:
    """If seekdb's log says this start failed, stop the server (after a failed start it never
    exits on its own) and raise the logged reason typed (``OB_...`` code and sentence)."""
    log = base_dir / "log" / "seekdb.log"
    failure = start_failure_since(log, log_from)
    if failure is None:
        return
    if _is_our_server(pid, base_dir):
        os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    raise failure_error(failure, "The classroom's seekdb server", base_dir, log)


def _is_our_server(pid: int, base_dir: Path) -> bool:
    """The PID still runs the seekdb started in ``base_dir`` (PIDs are reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    dirs = {os.fsencode(str(base_dir)), os.fsencode(str(Path(base_dir).resolve()))}
    return any(a.endswith(b"seekdb") for a in cmdline[:1]) and bool(dirs & set(cmdline))


def server_running(pid: int, base_dir: Path) -> bool:
    return _is_our_server(pid, base_dir)


def stop_server(pid: int, base_dir: Path, timeout: float = 60.0) -> bool:
    """Stop the server this classroom started (by its PID); returns whether it was running."""
    if not _is_our_server(pid, base_dir):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _is_our_server(pid, base_dir):
        try:  # our own child: reap it; otherwise just wait for it to go
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                break
        except ChildProcessError:
            pass
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline += 30
        time.sleep(0.2)
    return True


def rss_mb(pid: int) -> float | None:
    """Resident memory of a process in MB (``VmRSS``), ``None`` if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


__all__ = ["FILE_ACCESS_OFF", "LOOPBACK", "SERVER_ACCOUNT", "admin_connect", "close_file_access",
           "cpu_s", "file_access", "free_port", "kill_sessions", "new_password",
           "remove_server_data", "rss_mb", "server_account_uid", "server_running",
           "set_file_access", "start_server", "stop_server"]
