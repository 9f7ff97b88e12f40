"""The classroom's seekdb server: started from the pylibseekdb wheel, or one that already runs.

seekdb's server listens on every interface (its ``--help`` has no bind option) and starts with a
``root`` account that has no password. So the first thing :func:`start` does once the port
answers is give ``root`` a random password (kept in the owner-only roster): otherwise any
learner, or anyone on the network, could log in as ``root`` and read every tenant. The
bureau itself connects only to the host the roster names (127.0.0.1 for a server it started).
The server is stopped by its PID, checked against the command line it was started with.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pymysql

from ..errors import ClassroomError
from ..storage.diskspace import check_before_open, failure_error, log_size, start_failure_since
from ..storage.files import private_dir, private_umask, seekdb_server_binary

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 180.0


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def new_password() -> str:
    """32 random URL-safe characters: no quote or backslash can reach SQL text or a shell."""
    return secrets.token_urlsafe(24)


def admin_connect(host: str, port: int, user: str, password: str, database: str | None = None,
                  timeout: float = 10.0) -> Any:
    return pymysql.connect(host=host, port=int(port), user=user, password=password,
                           database=database, autocommit=True, charset="utf8mb4",
                           connect_timeout=timeout)


def start_server(base_dir: Path, port: int | None = None) -> tuple[int, int, str]:
    """Start ``seekdb --nodaemon`` in ``base_dir`` (owner-only files), wait until it answers on
    127.0.0.1, and give ``root`` a random password. Returns (pid, port, root password)."""
    base_dir = private_dir(base_dir)
    log_from = _check_disk(base_dir)
    port = port or free_port()
    log = open(base_dir / "server.out", "w")  # noqa: SIM115 - handed to the child
    with private_umask():  # the server keeps this umask: its data and logs stay 0600
        proc = subprocess.Popen(
            [str(seekdb_server_binary()), "--nodaemon", "--base-dir", str(base_dir),
             "--port", str(port)],
            cwd=base_dir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            _raise_logged_failure(proc.pid, base_dir, log_from)
            tail = (base_dir / "server.out").read_text(errors="replace")[-1500:]
            raise ClassroomError(f"The seekdb server exited with code {proc.returncode} while "
                                 f"starting: {tail}",
                                 "Is the port in use? Try another with --port.")
        try:
            conn = admin_connect(LOOPBACK, port, "root", "", timeout=2)
            break
        except pymysql.err.Error:
            _raise_logged_failure(proc.pid, base_dir, log_from)
            if time.monotonic() > deadline:
                stop_server(proc.pid, base_dir)
                raise ClassroomError(f"The seekdb server did not answer on port {port} within "
                                     f"{START_TIMEOUT_S:.0f} s.") from None
            time.sleep(0.5)
    password = new_password()
    try:
        with conn.cursor() as cur:
            cur.execute("ALTER USER 'root' IDENTIFIED BY %s", (password,))
    finally:
        conn.close()
    return proc.pid, port, password


def _check_disk(base_dir: Path) -> int:
    """Refuse to start where seekdb cannot (too little free space, said typed with the figures:
    a first start needs 2.42 GB); returns where this start's lines begin in seekdb's log."""
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
    return any(a.endswith(b"seekdb") for a in cmdline[:1]) and os.fsencode(str(base_dir)) in cmdline


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


__all__ = ["LOOPBACK", "admin_connect", "cpu_s", "free_port", "new_password", "rss_mb", "server_running",
           "start_server", "stop_server"]
