"""Free disk space and embedded seekdb: say it in seconds, with a typed error that says what to do.

Measured on loop-mounted ext4 (issue 35, seekdb 1.4 wheel):

* **First start** of a store: seekdb checks that its log disk, 2 GiB, fits in the free space.
  With 1.4 GB free its log says within a second ``log disk space is not enough
  (expected_log_disk_size=2147483648)``, ``OB_LOG_OUTOF_DISK_SPACE``, "observer start fail",
  and then either the process never exits while ``pylibseekdb.open`` waits for it (400 s and
  more), or it dies and pylibseekdb starts another one, which hangs (2 runs in 9).
  The log disk cannot be made smaller: ``pylibseekdb.open`` takes only a folder and starts
  ``seekdb --embedded`` with fixed arguments (``--parameter memory_budget=1G --parameter
  log_disk_size=2G`` on a first start, none when it starts it again); started by hand, ``--parameter log_disk_size=1G``
  (or 1280M, 512M, also with ``memory_budget=1G``) is refused, ``OB_RESOURCE_UNIT_VALUE_INVALID``
  (a tenant's log disk has a floor: 1536M was accepted), so at best 1.6 GB instead of 2.1 GB.
  A fresh store then takes 169 MB.
* **Reopening** an existing store does not check again: it opened with 300 MB and with 40 MB
  free. So only a first start needs :data:`FIRST_START_BYTES`; a reopen needs
  :data:`REOPEN_BYTES`.
* **A full disk after the start**: seekdb's preallocated files absorb writes for a long time
  (with 1 MiB free and this guard off: 12,500 bulk cards of ~1 KB over 187 s), then a
  statement blocks until ``ob_query_timeout`` and fails with 4012 ("set the variable
  ob_query_timeout to a larger value", after 19.7 s); seekdb cannot log why (its log cannot
  grow either). Every write therefore first checks the free space
  (``statvfs``, microseconds) and refuses below :data:`WRITE_RESERVE_BYTES` with
  :class:`~bureau.errors.DiskFullError` before anything is written; an engine error that still
  gets through while the disk is (nearly) full is reported as that error too
  (:func:`explain_write_failure`). Acknowledged writes were never lost (0 of 19,524 in the
  issue's run) and writing works again once space is freed.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import BureauError, DiskFullError, DiskSpaceError, StoreStartError
from . import seekdb_process

T = TypeVar("T")
MiB = 2**20
GiB = 2**30
FIRST_START_BYTES = 2 * GiB + 384 * MiB
"""Free space a store's first start needs: seekdb's 2 GiB log disk (checked against the free
space, filled as it is used) plus the fresh store (169 MB measured) and room. seekdb itself
started with 2.21 GB free on a quiet machine; with 2.45 GB free on a loaded one its first start
timed out in ``seekdb.connect`` ("Statement is timeout", issue 47), hence the margin."""
TIGHT_BYTES = FIRST_START_BYTES + 512 * MiB
"""A first start that times out with less than this free is reported as a disk-space problem
(:func:`timed_out_error`): that close to the floor seekdb's start is slow enough to time out."""
REOPEN_BYTES = 64 * MiB
"""Free space to reopen an existing store (seekdb does not check again; 40 MB worked)."""
WRITE_RESERVE_BYTES = 16 * MiB
"""Below this, writes are refused (:class:`DiskFullError`) before anything is written: the
ledger, the audit trail and seekdb's own logs need a little room to stay consistent."""

FULL_SUSPECT_BYTES = 64 * MiB
"""An engine timeout with less than this free is taken for a full disk: seekdb cannot log it
then (its log cannot grow either), so the free space is the evidence."""

_DISK_CODES = ("OB_LOG_OUTOF_DISK_SPACE", "OB_SERVER_OUTOF_DISK_SPACE", "OB_CS_OUTOF_DISK_SPACE",
               "OB_DISK_ERROR")
_DISK_WORDS = ("disk space is not enough", "No space left", "out of disk space",
               "disk is almost full", "database or disk is full")


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes an ordinary user may still write on the file system holding ``path`` (or, when
    ``path`` does not exist yet, its nearest existing parent)."""
    try:  # the path exists (every write of a running bureau: ~100,000 in the leak lab)
        st = os.statvfs(path)
    except (FileNotFoundError, NotADirectoryError):
        probe = Path(os.path.abspath(path))
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        st = os.statvfs(probe)
    return st.f_bavail * st.f_frsize


def human(n: float) -> str:
    """1,393 MB / 2.42 GB: decimal units, as a file manager or ``df -H`` shows them."""
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:,.0f} MB"


def store_started_before(seekdb_path: Path) -> bool:
    """Whether seekdb created its log stream here once (it then never checks the free space
    again): ``store/redo/sys/log_stream`` appears with a successful first start only."""
    return (seekdb_path / "store" / "redo" / "sys" / "log_stream").is_dir()


def check_before_open(data_dir: Path, seekdb_path: Path) -> None:
    """Refuse to open embedded seekdb where it cannot start or work, naming the folder, the
    free space and what is needed (:class:`DiskSpaceError`)."""
    first = not store_started_before(seekdb_path)
    need = FIRST_START_BYTES if first else REOPEN_BYTES
    free = free_bytes(seekdb_path)
    if free >= need:
        return
    what = ("a new store needs for its first start (seekdb reserves a 2 GiB log)" if first
            else "an existing store needs to reopen")
    raise DiskSpaceError(f"Only {human(free)} free on the disk holding the data directory "
                         f"{data_dir}; {what} {human(need)}.")


def check_writable(path: Path) -> None:
    """Refuse a write before it starts when the disk holding ``path`` is (nearly) full."""
    free = free_bytes(path)
    if free < WRITE_RESERVE_BYTES:
        raise DiskFullError(
            f"The disk holding {path} is full ({human(free)} free; the bureau keeps "
            f"{human(WRITE_RESERVE_BYTES)} in reserve): nothing of this call was written, and "
            "everything written before is kept.")


def explain_write_failure(exc: BaseException, path: Path) -> BaseException:
    """The error to raise for a failed write: :class:`DiskFullError` when the disk is full
    (the engine's message names a full disk, or it timed out -- code 4012, seen after ~20 s
    on a full disk -- while less than :data:`FULL_SUSPECT_BYTES` is free or seekdb's log
    names a full disk), else ``exc`` itself."""
    text = str(exc)
    low = free_bytes(path) < FULL_SUSPECT_BYTES
    said = any(w in text for w in (*_DISK_CODES, *_DISK_WORDS))
    timeout = "4012" in text or "Statement timeout" in text
    if not (said or (timeout and (low or _log_says_disk_full(path)))):
        return exc
    return DiskFullError(
        f"A write failed because the disk holding {path} is full ({human(free_bytes(path))} "
        f"free; the engine said: {text[:160]}). Everything acknowledged before is kept.")


def _log_says_disk_full(path: Path) -> bool:
    log = path / "log" / "seekdb.log"
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 256 * 1024))
            tail = f.read().decode(errors="replace")
    except OSError:
        return False
    return any(w in tail for w in (*_DISK_CODES, *_DISK_WORDS))


# -- the open's watch -----------------------------------------------------------------------------
_FAILED = ("observer start fail", "seekdb start fail", "observer instance start fail",
           # fatal to a start, and sometimes the only sign: the first seekdb dies right after
           # it, and the one pylibseekdb starts next hangs without "start fail" (seen 2 in 9)
           "log disk space is not enough", 'ret="OB_LOG_OUTOF_DISK_SPACE"',
           'ret="OB_SERVER_OUTOF_DISK_SPACE"')
_CODE = re.compile(r'ret="(OB_[A-Z0-9_]+)"')


def _problem_lines(chunk: bytes) -> list[bytes]:
    """The EDIAG and ERROR lines of ``chunk``, in order (``bytes.find``: a regex over a
    replayed redo's log is several times slower)."""
    found = []
    for marker in (b"] EDIAG ", b"] ERROR "):
        i = chunk.find(marker)
        while i != -1:
            start = chunk.rfind(b"\n", 0, i) + 1
            stop = chunk.find(b"\n", i)
            stop = len(chunk) if stop == -1 else stop
            if chunk.startswith(b"[", start) and chunk.find(b"] ", start) == i:
                found.append((start, chunk[start:stop]))
            i = chunk.find(marker, stop)
    return [line for _, line in sorted(found)]
_MESSAGE = re.compile(r"\] (?:EDIAG|ERROR) .*?\[lt=\d+\](?:\[errcode=(-?\d+)\])? (.*)")


ABANDON_AFTER_S = 5.0
"""How long an open may keep waiting after the watch stopped the seekdb of a failed start."""


class OpenAbandoned(RuntimeError):
    """The open's thread was left blocked (turned into the typed start error)."""


@dataclass
class StartFailure:
    code: str
    """seekdb's error name (``OB_LOG_OUTOF_DISK_SPACE``), or ``timeout``."""
    sentence: str
    """The first error seekdb logged in this start (its root cause), or the timeout."""


def read_start_failure(log_text: str) -> StartFailure | None:
    """The reason a start failed, from the part of ``seekdb.log`` it wrote; None if it did not
    (yet) fail.

    The code is the last ``ret="OB_..."`` logged before "observer start fail" (the one that
    stopped the start); the sentence is the first error line naming that code or a full disk
    (seekdb logs the root cause first: "log disk space is not enough(...)")."""
    lines = log_text.splitlines()
    end = next((i for i, line in enumerate(lines) if any(m in line for m in _FAILED)), None)
    if end is None:
        return None
    codes = [c for line in lines[: end + 1] for c in _CODE.findall(line) if c != "OB_SUCCESS"]
    if not codes:  # the root-cause line carries only a number: name the disk code if logged
        codes = [c for line in lines for c in _CODE.findall(line) if c in _DISK_CODES]
    if not codes and (m := re.search(r"errcode=(-\d+)", lines[end])):
        codes = [f"error {m.group(1)}"]
    code = codes[-1] if codes else "unknown"
    sentence = ""
    for line in lines[: end + 1]:
        m = _MESSAGE.search(line)
        if m and (code in line or any(w in line for w in _DISK_WORDS)):
            sentence = m.group(2).split(" BACKTRACE")[0]
            break
    return StartFailure(code, _shorten(sentence or "observer start fail"))


def _shorten(sentence: str, limit: int = 200) -> str:
    sentence = re.sub(r", this=\{.*", ")", sentence)
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def failure_error(failure: StartFailure, what: str, base_dir: Path,
                  log_path: Path) -> StoreStartError:
    """The typed error for a start seekdb's log says failed: :class:`DiskSpaceError` when the
    reason is disk space, else :class:`StoreStartError`; both carry the code and the sentence."""
    said = f"seekdb said {failure.code}: {failure.sentence} (log: {log_path})"
    if failure.code in _DISK_CODES or any(w in failure.sentence for w in _DISK_WORDS):
        return DiskSpaceError(
            f"{what} could not start in {base_dir}: not enough free disk space "
            f"({human(free_bytes(base_dir))} free; a first start needs "
            f"{human(FIRST_START_BYTES)}). {said}.")
    return StoreStartError(f"{what} could not start in {base_dir}; {said}.",
                           "The seekdb process was stopped; see the log for more.")


def timed_out_error(exc: BaseException, base_dir: Path, first: bool,
                    what: str = "Embedded seekdb") -> StoreStartError:
    """The typed error for a start seekdb's log does not explain but a statement timed out in
    (``seekdb.connect``'s "Statement is timeout"): :class:`DiskSpaceError` on a first start
    with less than :data:`TIGHT_BYTES` free, else :class:`StoreStartError`."""
    free = free_bytes(base_dir)
    said = f"seekdb said: {str(exc)[:160]}"
    if first and free < TIGHT_BYTES:
        return DiskSpaceError(
            f"{what} could not start in {base_dir}: its first start timed out with only "
            f"{human(free)} free, close to the {human(FIRST_START_BYTES)} a new store needs "
            f"({said}).")
    return StoreStartError(
        f"{what} in {base_dir} started but did not answer in time ({said}).",
        "The machine may be very busy: restart the kernel and run the cell again; if it keeps "
        "happening, set BUREAU_OPEN_TIMEOUT higher or see seekdb's log.")


def log_size(log_path: Path) -> int:
    """Where the next start's lines will begin in ``log_path`` (0 if there is no log yet)."""
    try:
        return log_path.stat().st_size
    except OSError:
        return 0


def start_failure_since(log_path: Path, offset: int) -> StartFailure | None:
    """:func:`read_start_failure` over what ``log_path`` gained after ``offset``."""
    try:
        with open(log_path, "rb") as f:
            if f.seek(0, os.SEEK_END) < offset:
                offset = 0
            f.seek(offset)
            lines = _problem_lines(f.read(64 * MiB))  # bytes.find: fast over a long replay
    except OSError:
        return None
    return read_start_failure(b"\n".join(lines).decode(errors="replace"))


class OpenWatch:
    """Bounds ``pylibseekdb.open`` (via PowerMem's first connection) for one embedded store.

    A thread reads what seekdb logs during the start and names the PIDs of the seekdb this
    process started to a :class:`~bureau.storage.seekdb_process.Reaper`; when the log says the
    start failed, or ``timeout_s`` passes, it stops that seekdb, which makes the blocked open
    return. :meth:`error` then turns what happened into a typed error.
    """

    def __init__(self, data_dir: Path, seekdb_path: Path, timeout_s: float) -> None:
        self.data_dir = data_dir
        self.seekdb_path = seekdb_path
        self.timeout_s = timeout_s
        self.log_path = seekdb_path / "log" / "seekdb.log"
        self.first = not store_started_before(seekdb_path)
        try:
            self.offset = self.log_path.stat().st_size
        except OSError:
            self.offset = 0
        self._problems: list[str] = []
        self.failure: StartFailure | None = None
        self.failed_at: float | None = None
        self.stopped: list[int] = []
        self._done = threading.Event()
        self._reaper = seekdb_process.Reaper(seekdb_path)
        self._thread = threading.Thread(target=self._run, name="bureau-seekdb-open-watch",
                                        daemon=True)
        self.started = time.monotonic()
        self._thread.start()

    def _new_log(self) -> str:
        """seekdb's error lines of this start (EDIAG and ERROR: every line a failure is read
        from), read on from where the last call stopped. A reopen can log tens of MB while it
        replays its redo; the watch reads each byte once and keeps at most 2,000 lines."""
        try:
            with open(self.log_path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                if size < self.offset:  # rotated or cut: read the new file from its start
                    self.offset = 0
                f.seek(self.offset)
                chunk = f.read(min(size - self.offset, 16 * MiB))
        except OSError:
            return "\n".join(self._problems)
        whole = chunk.rfind(b"\n") + 1
        self.offset += whole
        self._problems += [line.decode(errors="replace")
                           for line in _problem_lines(chunk[:whole])]
        del self._problems[:-2000]
        return "\n".join(self._problems)

    def _ours(self) -> list[int]:
        return seekdb_process.started_by(self.seekdb_path, os.getpid())

    def _run(self) -> None:
        while not self._done.wait(0.2):
            ours = self._ours()
            self._reaper.watch(ours)
            if self.failure is None:
                failure = read_start_failure(self._new_log())
                if failure is not None:  # seekdb logs the code a few ms after the cause
                    self._done.wait(0.3)
                    failure = read_start_failure(self._new_log()) or failure
                if failure is None and time.monotonic() - self.started > self.timeout_s:
                    failure = StartFailure("timeout", f"seekdb did not answer within "
                                                      f"{self.timeout_s:g} s")
                self.failure = failure
            if self.failure is not None and self.failed_at is None:
                self.failed_at = time.monotonic()
            if self.failure is not None and ours:
                # pylibseekdb starts seekdb again when the first one dies (without the
                # first-start parameters): every one it starts is stopped until open returns.
                # A failed start is final (the process ignores SIGTERM in that state); a slow
                # one gets a chance to stop cleanly.
                self.stopped.extend(ours)
                grace = 2.0 if self.failure.code == "timeout" else 0.0
                seekdb_process.stop(ours, grace_s=grace)

    def call(self, open_store: Callable[[], T]) -> T:
        """``open_store()`` in a worker thread, waited for here with a bound.

        Stopping the seekdb of a failed start usually makes ``pylibseekdb.open`` return at
        once; now and then (1 in 4 tries, issue 35) it keeps waiting with no seekdb left.
        :data:`ABANDON_AFTER_S` after the watch stopped seekdb the open is given up: its thread
        stays blocked (a daemon thread; this process cannot open a store any more, which the
        error says), and the caller gets the typed error now.
        """
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = open_store()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                box["error"] = exc

        worker = threading.Thread(target=run, name="bureau-seekdb-open", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.2)
            if (worker.is_alive() and self.failed_at is not None
                    and time.monotonic() - self.failed_at > ABANDON_AFTER_S):
                raise OpenAbandoned("pylibseekdb.open did not return after seekdb was stopped")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def close(self) -> None:
        self._done.set()
        self._thread.join()
        self._reaper.release()

    def error(self, exc: BaseException) -> BaseException:
        """The typed error for an open that raised ``exc`` (the watch already stopped seekdb)."""
        self.close()
        failure = self.failure or read_start_failure(self._new_log())
        if failure is None:
            from ..bounds import is_timeout

            if isinstance(exc, BureauError) or not is_timeout(exc):
                return exc
            self._stop_leftovers()
            return timed_out_error(exc, self.seekdb_path, self.first)
        self._stop_leftovers()
        if isinstance(exc, OpenAbandoned):  # this process's open is blocked for good
            err = self._typed(failure)
            return type(err)(f"{err.message} This Python process cannot open a store any more: "
                             "restart the kernel once that is fixed.", err.hint)
        return self._typed(failure)

    def _typed(self, failure: StartFailure) -> StoreStartError:
        where = f"(log: {self.log_path})"
        if failure.code == "timeout":
            return StoreStartError(
                f"Embedded seekdb in {self.seekdb_path} did not answer within "
                f"{self.timeout_s:g} s and was stopped {where}.",
                "A slow machine may need more: set BUREAU_OPEN_TIMEOUT (seconds). Otherwise "
                "see the log's last errors.")
        return failure_error(failure, "Embedded seekdb", self.seekdb_path, self.log_path)

    def _stop_leftovers(self) -> None:
        seekdb_process.stop(seekdb_process.embedded_seekdb_pids(self.seekdb_path,
                                                                parents=(os.getpid(),)))


@contextmanager
def watched_open(data_dir: Path, seekdb_path: Path, timeout_s: float) -> Iterator[OpenWatch]:
    """``with watched_open(...): open the store``: a failed or stuck start raises typed (the
    seekdb it left stopped); a good one leaves nothing running but seekdb itself."""
    watch = OpenWatch(data_dir, seekdb_path, timeout_s)
    try:
        yield watch
    except Exception as exc:
        raise watch.error(exc) from exc
    else:
        watch.close()
        if watch.failure is not None:  # the start failed just as the open returned
            raise watch.error(RuntimeError(watch.failure.sentence))
