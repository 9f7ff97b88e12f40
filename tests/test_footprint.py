"""A bounded footprint on the learner's disk (issue 9, item 10).

Embedded seekdb logged every INFO line into ``<data_dir>/seekdb/log``: 10 MB on creation, then
40-90 MB per reopen (measured: 178 MB -> 259 MB after one reopen of a fresh store, 270 MB after
three demos). The gateway now sets seekdb's level to WARN and one rotated file on every embedded
open, and cuts the log seekdb writes while it starts (before any SQL can run) back to its tail
and its warnings. Real store, each open in its own process (one embedded store per process).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from conftest import REPO, run_python

from bureau.settings import Settings
from bureau.storage import footprint as gateway

MB = 10**6
LIMIT_TOTAL = 200 * MB
"""The whole data directory, fresh or reopened (a fresh store is 169 MB: 134 MB redo and 34 MB
data file preallocated by seekdb, ~1 MB log)."""
LIMIT_LOG = 8 * MB
"""``seekdb/log`` after any open: at most a start that stayed under the 4 MiB cut (~6 MB) on
top of a cut log (~1-2 MB). Before the fix one reopen added 40-90 MB."""
LIMIT_LOG_GROWTH = 4 * MB
"""Growth of ``seekdb/log`` from the first reopen to the third: none expected (measured 0.0)."""

OPEN = """
import json, sys
from bureau import Bureau
from sqlalchemy import text

bureau = Bureau.open(sys.argv[1])
params = {}
with bureau.gateway.sql_engine.connect() as conn:
    for name in ("syslog_level", "max_syslog_file_count"):
        params[name] = str(conn.execute(text(f"SHOW PARAMETERS LIKE '{name}'")).fetchall()[0][3])
print(json.dumps(params))
"""


def sizes(data_dir: Path) -> dict[str, int]:
    """Bytes per place (``du -sb`` without the folders' own blocks), and the total."""
    places = {"total": 0}
    for root, _, files in os.walk(data_dir):
        for name in files:
            try:
                n = os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
            rel = Path(root).relative_to(data_dir).parts
            key = "/".join(rel[:3] if rel[:2] == ("seekdb", "store") else rel[:2]) or name
            places[key] = places.get(key, 0) + n
            places["total"] += n
    return places


def wait_for_seekdb_exit(data_dir: Path, timeout: float = 30) -> None:
    """seekdb outlives its last client by a moment; measure once it has written its last line."""
    pid_file = data_dir / "seekdb" / "run" / "seekdb.pid"
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.2)


def open_store(data_dir: Path) -> dict[str, str]:
    code = OPEN.replace("sys.argv[1]", repr(str(data_dir)))
    proc = run_python(code, cwd=REPO, timeout=240)
    wait_for_seekdb_exit(data_dir)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fresh_store_and_three_reopens_stay_bounded(tmp_path):
    data_dir = tmp_path / "data"
    seen = []
    for i in range(4):  # a fresh store, then N=3 reopens
        params = open_store(data_dir)
        seen.append(sizes(data_dir))
        print(f"open {i}: " + ", ".join(f"{k}={v / MB:.1f}" for k, v in sorted(seen[-1].items())))
        assert params == {"syslog_level": "WARN", "max_syslog_file_count": "1"}, params
    for i, s in enumerate(seen):
        assert s["total"] <= LIMIT_TOTAL, f"open {i}: {s}"
        assert s.get("seekdb/log", 0) <= LIMIT_LOG, f"open {i}: {s}"
    growth = seen[3].get("seekdb/log", 0) - seen[1].get("seekdb/log", 0)
    assert growth <= LIMIT_LOG_GROWTH, seen
    # what is not log stays as seekdb preallocated it (redo 128 MiB, data file 32 MiB)
    assert seen[3]["total"] - seen[3].get("seekdb/log", 0) <= 175 * MB, seen[3]


# -- the log cut alone (no seekdb) ------------------------------------------------------------------
def _line(level: str, i: int) -> bytes:
    return (f"[2026-01-01 00:00:{i % 60:02d}.000000] {level:<5} [STORAGE] f (x.cpp:1) "
            f"[1][seekdb][Y0] [lt=1] line {i} " + "x" * 80 + "\n").encode()


def test_cut_keeps_tail_and_warnings_while_seekdb_appends(tmp_path):
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    active = log_dir / "seekdb.log"
    body = bytearray()
    for i in range(60_000):  # ~8 MB of INFO, with problems early on
        level = "WARN" if i in (10, 20_000) else "ERROR" if i == 30_000 else "INFO"
        body += _line(level, i)
    active.write_bytes(bytes(body))
    (log_dir / "seekdb.log.20260101000000123").write_bytes(b"rotated\n" * 1000)
    (log_dir / "seekdb.log.wf.20260101000000123").write_bytes(b"rotated wf\n")
    (log_dir / "notes.txt").write_text("not seekdb's")
    # seekdb holds its log with O_APPEND; so does this stand-in writer
    fd = os.open(active, os.O_WRONLY | os.O_APPEND)
    try:
        gateway._trim_seekdb_log(log_dir)
        os.write(fd, b"written by seekdb after the cut\n")
    finally:
        os.close(fd)
    data = active.read_bytes()
    assert len(data) <= gateway._SEEKDB_LOG_KEEP + 4096
    assert b"\0" not in data  # no hole: the writer's next line landed at the new end
    assert data.startswith(b"[bureau] cut ")
    assert data.endswith(b"written by seekdb after the cut\n")
    for i in (10, 20_000, 30_000):
        assert f"line {i} ".encode() in data  # warnings and errors from the dropped part kept
    assert b"line 59999 " in data and b"line 100 " not in data
    assert sorted(p.name for p in log_dir.iterdir()) == ["notes.txt", "seekdb.log"]


def test_small_log_is_left_alone(tmp_path):
    active = tmp_path / "seekdb.log"
    active.write_bytes(_line("INFO", 1) * 1000)
    before = active.read_bytes()
    gateway._trim_seekdb_log(tmp_path)
    assert active.read_bytes() == before


class _Untouchable:
    def __getattr__(self, name: str):
        raise AssertionError(f"a server store was touched ({name})")


def test_server_store_is_never_altered(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", store="server")
    gateway.bound_disk_footprint(_Untouchable(), settings, _Untouchable())
    assert not (tmp_path / "data").exists()


def test_embedded_without_sql_engine_still_trims(tmp_path):
    """A store without an engine (PowerMem internals changed): the log is still cut."""
    settings = Settings(data_dir=tmp_path, store="embedded")
    log_dir = settings.seekdb_path / "log"
    log_dir.mkdir(parents=True)
    (log_dir / "seekdb.log").write_bytes(_line("INFO", 0) * 60_000)

    gateway.bound_disk_footprint(None, settings, _Untouchable())
    assert (log_dir / "seekdb.log").stat().st_size <= gateway._SEEKDB_LOG_KEEP + 4096
