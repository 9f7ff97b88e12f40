"""An embedded store's disk footprint: seekdb's own log kept small and flat however often the
store is reopened (issue 25). Runs on every embedded open, after the store answers."""

from __future__ import annotations

import logging
import os
from typing import Any

from ..settings import Settings

log = logging.getLogger(__name__)

_SEEKDB_LOG_PARAMETERS = (("syslog_level", "WARN"), ("max_syslog_file_count", "1"))
"""seekdb parameters set on every embedded open (read back first, written only when different).

seekdb's own level is EDIAG, i.e. every INFO line: 11-28 MB per ``python -m bureau demo``.
WARN keeps warnings and errors. seekdb restarts at EDIAG whatever was set (the file count is
kept), hence every open. One rotated file at most instead of two (256 MB each)."""
_SEEKDB_LOG_TRIM_AT = 4 * 2**20
_SEEKDB_LOG_KEEP = 2**20
"""An open cuts ``seekdb.log`` beyond 4 MiB to its last MiB, plus up to a MiB of the newest
WARN and ERROR lines from the part it drops (the previous sessions' problems stay readable)."""


def bound_disk_footprint(engine: Any, settings: Settings, lock: Any) -> None:
    """Keep an embedded store's data directory small, and flat however often it is reopened.

    Measured on a fresh store (``du -sb``): 178 MB, of which 134 MB redo and 34 MB data file,
    both preallocated and then stable, and 10 MB of ``seekdb/log``. The log was what grew:
    11-90 MB per reopen or demo, up to ~770 MB before seekdb's own rotation caps it. Two
    sources, two measures:

    * **while the store is open** seekdb logs every INFO line: set WARN for the life of the
      process (see :data:`_SEEKDB_LOG_PARAMETERS`); a demo then adds ~0.1 MB, not 11-28 MB.
    * **while seekdb starts**, before any SQL can run, it logs at its default level, and a small
      store replays all redo since it was created (seekdb checkpoints under memory pressure
      only), logging the replay: 6-90 MB per start. pylibseekdb starts seekdb with fixed
      arguments and an empty environment, so no option reaches that phase; the log is cut
      here, right after, to its last lines and its warnings (:func:`_trim_seekdb_log`).

    Not done: a checkpoint (``ALTER SYSTEM MINOR FREEZE``) per open would shorten the replay,
    but dumping a demo's cards grew the data file from 32 to 64 MiB (measured), more than the
    log it saves on disk.

    A server store (``settings.store == "server"``) is someone else's: nothing is changed there.
    Never fails the open: a parameter a future seekdb refuses is logged and skipped.
    """
    if settings.store != "embedded":
        return
    if engine is not None:
        _quiet_embedded_seekdb(engine, lock)
    _trim_seekdb_log(settings.seekdb_path / "log")


def _quiet_embedded_seekdb(engine: Any, lock: Any) -> None:
    """Set :data:`_SEEKDB_LOG_PARAMETERS` where seekdb holds other values."""
    from sqlalchemy import text

    with lock, engine.connect() as conn:
        for name, value in _SEEKDB_LOG_PARAMETERS:
            try:
                # SHOW PARAMETERS row: zone, name, data_type, value, ... (columns are unnamed)
                rows = conn.execute(text(f"SHOW PARAMETERS LIKE '{name}'")).fetchall()
                if rows and str(rows[0][3]).upper() == value.upper():
                    continue
                literal = value if value.isdigit() else f"'{value}'"
                conn.execute(text(f"ALTER SYSTEM SET {name} = {literal}"))
            except Exception as exc:  # noqa: BLE001 - a smaller footprint is not worth an error
                log.warning("embedded seekdb: could not set %s=%s (%s)", name, value, exc)
        conn.commit()


def _trim_seekdb_log(log_dir: str | os.PathLike[str]) -> None:
    """Delete rotated seekdb logs and cut ``seekdb.log`` back to its tail when it is large.

    Safe while seekdb runs: rotated files (``seekdb.log.<timestamp>``) are closed, and seekdb
    holds ``seekdb.log`` with ``O_APPEND`` (``/proc/<pid>/fdinfo`` flags 02102001), so after the
    cut its next line lands at the new end instead of leaving a hole. Only lines seekdb writes
    in the instant between reading the tail and the cut are lost; at WARN there are few.
    """
    import re
    from pathlib import Path

    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        return
    for path in log_dir.iterdir():
        if re.search(r"\.log(\.wf)?\.\d{8,}$", path.name):
            path.unlink(missing_ok=True)
    active = log_dir / "seekdb.log"
    try:
        size = active.stat().st_size
        if size <= _SEEKDB_LOG_TRIM_AT:
            return
        with open(active, "r+b") as f:
            f.seek(size - _SEEKDB_LOG_KEEP)
            f.readline()  # cut at a line start
            cut = f.tell()
            kept = _problem_lines(f, cut)
            f.seek(cut)
            tail = f.read()  # up to seekdb's latest line
            f.truncate(0)
        note = f"[bureau] cut {cut - len(kept)} bytes of older seekdb log (kept WARN/ERROR)\n"
        with open(active, "ab") as f:
            f.write(note.encode() + kept + tail)
    except OSError as exc:
        log.warning("could not trim %s (%s)", active, exc)


def _problem_lines(f: Any, end: int) -> bytes:
    """The newest MiB of WARN and ERROR lines in ``f`` before ``end``, read in 8 MiB chunks.

    ``bytes.find`` for the level markers, not a line regex: 200 MB of trace took 0.7 s instead
    of 3.3 s (such lines are rare; INFO is almost everything).
    """
    found: list[tuple[int, bytes]] = []
    carry = b""
    f.seek(0)
    pos = 0
    while pos < end:
        chunk = f.read(min(8 * 2**20, end - pos))
        if not chunk:
            break
        pos += len(chunk)
        data = carry + chunk
        whole = data.rfind(b"\n") + 1
        data, carry = data[:whole], data[whole:]
        base = pos - len(carry) - len(data)
        for marker in (b"] WARN ", b"] ERROR "):
            i = data.find(marker)
            while i != -1:
                start = data.rfind(b"\n", 0, i) + 1
                stop = data.find(b"\n", i) + 1
                if data.startswith(b"[", start) and data.find(b"] ", start) == i:  # the level
                    found.append((base + start, data[start:stop]))
                i = data.find(marker, stop)
    kept = b"".join(line for _, line in sorted(found))
    if len(kept) > _SEEKDB_LOG_KEEP:
        kept = kept[-_SEEKDB_LOG_KEEP:]
        kept = kept[kept.find(b"\n") + 1 :]
    return kept
