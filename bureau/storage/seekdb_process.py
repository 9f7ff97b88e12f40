"""The embedded seekdb process a bureau process started: find it, stop it, never leave it behind.

``pylibseekdb.open`` forks ``seekdb --base-dir=<dir> --embedded --nodaemon`` itself, so the
bureau cannot give that child a ``PR_SET_PDEATHSIG``: it finds it in ``/proc`` by its
``--base-dir``. After a normal start seekdb exits with its last client (measured: a ``kill -9``
of the kernel ends it within seconds). A *failed* start is different (issue 35): seekdb logs
"observer start fail", then loops in its own shutdown and never exits, and the client waits for
it forever; killed, the client's ``open`` returns at once (``code=-1``).

Two guards use this module: the open's watch (:mod:`bureau.storage.diskspace`) stops the child
when the start fails or takes too long, and a *reaper* (this file run as a script, standard
library only, ~20 ms to start) stops it if the kernel itself dies while the start is under way:
it waits on a pipe from the kernel and acts on end-of-file, unless told ``ok`` first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _argv(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _base_dir(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg.startswith("--base-dir="):
            return arg.split("=", 1)[1]
        if arg == "--base-dir" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def embedded_seekdb_pids(base_dir: str | os.PathLike[str],
                         parents: tuple[int, ...] | None = None) -> list[int]:
    """PIDs of ``seekdb --embedded`` processes running on ``base_dir`` (zombies excluded: their
    command line is empty), optionally only those whose parent is in ``parents``."""
    wanted = {os.path.abspath(base_dir), os.path.realpath(base_dir)}
    found = []
    for pid, ppid, argv in _processes():
        if not argv or not argv[0].endswith("seekdb") or "--embedded" not in argv:
            continue
        base = _base_dir(argv)
        if base is None or not {os.path.abspath(base), os.path.realpath(base)} & wanted:
            continue
        if parents is not None and (ppid if ppid is not None else _ppid(pid)) not in parents:
            continue
        found.append(pid)
    return found


def started_by(base_dir: str | os.PathLike[str], parent: int) -> list[int]:
    """The seekdb ``parent`` started on ``base_dir``, found cheaply through the PID file seekdb
    writes (``<base_dir>/run/seekdb.pid``), checked against its command line (a PID file may
    be stale) and its parent; a full scan of the processes when there is no such file or it
    is stale. The open's watch asks this five times a second: a scan costs 30-60 ms on a busy
    machine, the PID file microseconds."""
    try:
        pid = int(Path(base_dir, "run", "seekdb.pid").read_text().strip())
    except (OSError, ValueError):
        pid = 0
    if pid > 0 and embedded_seekdb_pids_of([pid], base_dir):
        # The running seekdb of this folder: ours, or another process's we attach to.
        return [pid] if _ppid(pid) == parent else []
    return embedded_seekdb_pids(base_dir, parents=(parent,))


def embedded_seekdb_pids_of(pids: list[int], base_dir: str | os.PathLike[str]) -> list[int]:
    """Those of ``pids`` that run ``seekdb --embedded`` on ``base_dir``."""
    wanted = {os.path.abspath(base_dir), os.path.realpath(base_dir)}
    out = []
    for pid in pids:
        argv = _argv(pid)
        base = _base_dir(argv) if argv and argv[0].endswith("seekdb") else None
        if ("--embedded" in argv and base is not None
                and {os.path.abspath(base), os.path.realpath(base)} & wanted):
            out.append(pid)
    return out


def _processes() -> list[tuple[int, int | None, list[str]]]:
    """(pid, parent pid or None when not read yet, argv) of every process: from ``/proc`` on
    Linux, else from ``ps`` (macOS; argv split on spaces, enough for seekdb's own arguments)."""
    if os.path.isdir("/proc"):
        pids = [int(e) for e in os.listdir("/proc") if e.isdigit()]
        return [(pid, None, _argv(pid)) for pid in pids]  # parent read only for a match
    try:
        out = subprocess.run(["ps", "-axo", "pid=,ppid=,command="], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
            rows.append((int(parts[0]), int(parts[1]), parts[2:]))
    return rows


def stop(pids: list[int], grace_s: float = 2.0, wait_s: float = 10.0) -> list[int]:
    """SIGTERM, then SIGKILL after ``grace_s`` (a seekdb stuck after a failed start ignores
    SIGTERM); returns the PIDs still running after ``wait_s`` (none expected)."""
    for pid in pids:
        _signal(pid, signal.SIGTERM if grace_s > 0 else signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    killed = False
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _running(p)]
        if alive and not killed and time.monotonic() > deadline - wait_s + grace_s:
            for pid in alive:
                _signal(pid, signal.SIGKILL)
            killed = True
    return alive


def _running(pid: int) -> bool:
    """Still running (a zombie awaiting its parent's wait counts as gone)."""
    if os.path.isdir("/proc"):
        return bool(_argv(pid))
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Reaper:
    """Stops this process's embedded seekdb if this process dies before :meth:`release`.

    A separate process (this module as a script) holds the read end of a pipe; the kernel holds
    the write end and names each seekdb it started (:meth:`watch`) as soon as it appears.
    ``release()`` (the start went well, or the watch already stopped the child) tells it to
    leave; end-of-file without that means the kernel died mid-start: the reaper stops exactly
    the PIDs it was told about, if they still run seekdb on this base directory.
    """

    def __init__(self, base_dir: str | os.PathLike[str]) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.named: set[int] = set()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__), "--reap",
                 os.fspath(base_dir)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True)
        except OSError:  # no guard is better than no store: the watch still bounds the open
            self.proc = None

    def watch(self, pids: list[int]) -> None:
        for pid in set(pids) - self.named:
            self.named.add(pid)
            self._send(f"pid {pid}\n")

    def _send(self, line: str) -> None:
        if self.proc is None or self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except OSError:
            pass

    def release(self) -> None:
        if self.proc is None or self.proc.stdin is None:
            return
        self._send("ok\n")
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.proc = None


def _reap(base_dir: str) -> None:
    """The reaper's body: collect ``pid N`` lines until ``ok`` (leave) or end-of-file (the
    kernel died mid-start: stop the named PIDs that still run seekdb on ``base_dir``)."""
    named: set[int] = set()
    for line in sys.stdin:
        word = line.split()
        if word == ["ok"]:
            return
        if len(word) == 2 and word[0] == "pid" and word[1].isdigit():
            named.add(int(word[1]))
    stop([p for p in embedded_seekdb_pids(base_dir) if p in named])


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--reap":
    _reap(sys.argv[2])
