"""A learner's disk (issue 35), on real small file systems: a loop-mounted ext4 image.

Who it holds against: no adversary, the learner's own machine. With too little free space the
store's open says so in seconds (typed, naming the folder, the free space and what is needed)
instead of hanging; no seekdb process outlives a failed start or its kernel; a disk that fills
mid-lesson refuses the write typed, keeps every acknowledged write, and works again once space
is freed. Each store opens in its own subprocess (one embedded store per process).

Mounting needs root and a loop device: elsewhere those tests skip, saying why (``.ci/run``
runs as root).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from bureau.errors import DiskFullError
from bureau.storage import diskspace
from bureau.storage.seekdb_process import embedded_seekdb_pids


def _why_no_loop_mount() -> str | None:
    if os.geteuid() != 0:
        return "mounting a loop file system needs root (.ci/run runs as root)"
    if not os.path.exists("/dev/loop-control") and not os.path.exists("/dev/loop0"):
        return "no loop device (/dev/loop-control) on this machine"
    for tool in ("mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@pytest.fixture
def small_fs(tmp_path):
    """``small_fs(megabytes)`` -> the mount point of a fresh ext4 file system of that size
    (no blocks reserved for root, so its free space is what a learner could use)."""
    reason = _why_no_loop_mount()
    if reason:
        pytest.skip(reason)
    mounted: list[Path] = []

    def make(megabytes: int) -> Path:
        image = tmp_path / f"disk{len(mounted)}.img"
        mnt = tmp_path / f"mnt{len(mounted)}"
        mnt.mkdir()
        subprocess.run(["truncate", "-s", f"{megabytes}M", str(image)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True)
        done = subprocess.run(["mount", "-o", "loop", str(image), str(mnt)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot loop-mount an image here: {done.stderr.strip()}")
        mounted.append(mnt)
        return mnt

    yield make
    for mnt in mounted:
        for pid in embedded_seekdb_pids(mnt / "data" / "seekdb"):  # never expected (asserted)
            os.kill(pid, signal.SIGKILL)
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            time.sleep(1)
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


OPEN = """
import json, sys, time
import powermem  # imported first: what is timed is the open, not a library's import
from bureau import Bureau
from bureau.storage import diskspace, seekdb_process
if "engine" in sys.argv:  # skip the up-front check: the engine's own refusal, read from its log
    diskspace.FIRST_START_BYTES = 0
t = time.monotonic()
try:
    Bureau.open(data_dir=sys.argv[1], **json.loads(sys.argv[2]))
    out = {"error": None}
except Exception as exc:
    out = {"error": type(exc).__name__, "message": str(exc)}
out["seconds"] = time.monotonic() - t
out["left"] = seekdb_process.embedded_seekdb_pids(sys.argv[1] + "/seekdb")
print(json.dumps(out))
"""


def _run(code: str, *args: str, data: Path, timeout: float = 180) -> dict:
    """Run ``code`` in a fresh interpreter (its own store) on ``data``; its last line, parsed."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "BUREAU_EMBEDDER": "hash",
           "BUREAU_DATA_DIR": str(data)}
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=data.parent, env=env,
                          text=True, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _open(data: Path, *args: str, settings: dict | None = None) -> dict:
    return _run(OPEN, str(data), json.dumps(settings or {}), *args, data=data, timeout=120)


@pytest.mark.parametrize("path", ["checked first", "engine"])
def test_open_with_1_4_gb_free_raises_typed_within_10_s_and_leaves_no_process(small_fs, path):
    mnt = small_fs(1500)
    free = diskspace.free_bytes(mnt)
    assert 1.3e9 < free < 1.5e9, free
    data = mnt / "data"
    out = _open(data, *(["engine"] if path == "engine" else []))
    assert out["error"] == "DiskSpaceError", out
    assert out["seconds"] < 10, out
    assert str(data) in out["message"] and "GB free" in out["message"]
    assert "BUREAU_DATA_DIR" in out["message"]
    if path == "engine":  # the reason, from seekdb's log
        assert "OB_LOG_OUTOF_DISK_SPACE" in out["message"]
        assert "log disk space is not enough" in out["message"]
    assert out["left"] == [] and embedded_seekdb_pids(data / "seekdb") == []


def test_a_first_open_with_2_45_gb_free_raises_the_typed_disk_error(small_fs):
    """Issue 47: with about 2.45 GB free (above the 2.42 GB asked before) a loaded machine's
    first open timed out inside ``seekdb.connect`` and surfaced as a raw ``SeekdbError``. The
    floor now has that margin: refused typed, up front, in seconds."""
    mnt = small_fs(2470)
    free = diskspace.free_bytes(mnt)
    assert 2.40e9 < free < diskspace.FIRST_START_BYTES, free
    out = _open(mnt / "data")
    assert out["error"] == "DiskSpaceError", out
    assert out["seconds"] < 10, out
    assert "2.55 GB" in out["message"] and out["left"] == []


def test_a_first_start_that_times_out_close_to_the_floor_is_a_disk_error(tmp_path, monkeypatch):
    """The translation behind the margin, on seekdb's own words: a start that timed out with
    little room left is a disk-space problem; with room, a start error that says to restart."""
    said = RuntimeError("seekdb_connect failed: Statement is timeout, code=4012")
    tight = diskspace.FIRST_START_BYTES + 100 * diskspace.MiB
    monkeypatch.setattr(diskspace, "free_bytes", lambda path: tight)
    err = diskspace.timed_out_error(said, tmp_path, first=True)
    assert type(err).__name__ == "DiskSpaceError" and "timed out" in str(err)
    assert type(diskspace.timed_out_error(said, tmp_path, first=False)).__name__ == \
        "StoreStartError"
    monkeypatch.setattr(diskspace, "free_bytes", lambda path: 50 * 10**9)
    roomy = diskspace.timed_out_error(said, tmp_path, first=True)
    assert type(roomy).__name__ == "StoreStartError" and "restart the kernel" in str(roomy)


def test_an_open_that_does_not_answer_in_time_is_stopped_typed(tmp_path):
    """The bound itself, on an ordinary disk: a fresh store cannot start in 0.3 s."""
    out = _open(tmp_path / "data", settings={"open_timeout_s": 0.3})
    assert out["error"] == "StoreStartError" and "did not answer within 0.3 s" in out["message"]
    assert "BUREAU_OPEN_TIMEOUT" in out["message"]
    assert out["left"] == [] and embedded_seekdb_pids(tmp_path / "data" / "seekdb") == []


def test_a_kernel_killed_during_a_hung_start_leaves_no_seekdb(tmp_path):
    """A seekdb stuck in its start ignores its client's death (issue 35: still running 28
    minutes later): the reaper stops it when the kernel dies. Made stuck for certain here: the
    test stops it (SIGSTOP) as it appears, so the open cannot finish and seekdb cannot exit on
    its own; only the reaper's SIGKILL ends it."""
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BUREAU_EMBEDDER": "hash"}
    code = "import sys; from bureau import Bureau; Bureau.open(data_dir=sys.argv[1])"
    kernel = subprocess.Popen([sys.executable, "-c", code, str(data)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not embedded_seekdb_pids(data / "seekdb") and time.monotonic() < deadline:
            time.sleep(0.05)
        stuck = embedded_seekdb_pids(data / "seekdb")
        assert stuck, "seekdb never started"
        for pid in stuck:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(2)
        assert kernel.poll() is None, "the open should be waiting on the stuck seekdb"
    finally:
        kernel.kill()
        kernel.wait()
    deadline = time.monotonic() + 15
    while embedded_seekdb_pids(data / "seekdb") and time.monotonic() < deadline:
        time.sleep(0.2)
    left = embedded_seekdb_pids(data / "seekdb")
    for pid in left:  # never expected (asserted): do not leave a stopped process behind
        os.kill(pid, signal.SIGKILL)
    assert left == []


FULL = """
import json, os, sys, time
from bureau import Bureau
from bureau.errors import DiskFullError
from bureau.storage.diskspace import free_bytes
data, ballast = sys.argv[1], sys.argv[2]
b = Bureau.open(data_dir=data)
case = b.load_scenario("safe-combination")
acked = [case.whisper("detective", f"Note {i}: the gardener was seen at {i} o'clock.").id
         for i in range(20)]
fd = os.open(ballast, os.O_CREAT | os.O_WRONLY, 0o600)
os.posix_fallocate(fd, 0, free_bytes(data) - 2**20)  # leave 1 MiB
os.close(fd)
free_full = free_bytes(data)
t = time.monotonic()
error = None
for i in range(5000):
    try:
        acked.append(case.whisper("detective", f"Late note {i}.").id)
    except DiskFullError as exc:
        error = str(exc)
        break
seconds = time.monotonic() - t
refused_again = False
try:
    case.whisper("informant", "Still full?")
except DiskFullError:
    refused_again = True
os.unlink(ballast)
acked.append(case.whisper("detective", "Room again: the safe was opened at nine.").id)
held = {c.id for c in case.spaces()["detective"]}
trail = case.audit(verify=True)
print(json.dumps({"case": case.id, "acked": acked, "lost": [a for a in acked if a not in held],
                  "error": error, "seconds": seconds, "free_full": free_full,
                  "refused_again": refused_again, "audit_rows": len(trail)}))
"""

REOPEN = """
import json, sys
from bureau import Bureau
ids = json.loads(open(sys.argv[2]).read())
case = Bureau.open(data_dir=sys.argv[1]).case(ids["case"])
held = {c.id for c in case.spaces()["detective"]}
print(json.dumps({"lost": [a for a in ids["acked"] if a not in held],
                  "audit_rows": len(case.audit(verify=True))}))
"""


def test_a_disk_that_fills_mid_lesson_refuses_typed_and_loses_nothing(small_fs):
    mnt = small_fs(2800)  # a first start needs 2.55 GB
    data = mnt / "data"
    out = _run(FULL, str(data), str(mnt / "ballast"), data=data, timeout=240)
    assert out["free_full"] < diskspace.WRITE_RESERVE_BYTES
    assert out["error"] and "is full" in out["error"] and "nothing" in out["error"]
    assert out["seconds"] < 5 and out["refused_again"]
    assert out["lost"] == [] and len(out["acked"]) >= 21
    (mnt / "ids.json").write_text(json.dumps(out))
    again = _run(REOPEN, str(data), str(mnt / "ids.json"), data=data, timeout=240)
    assert again["lost"] == [] and again["audit_rows"] >= out["audit_rows"]
    assert embedded_seekdb_pids(data / "seekdb") == []
    print(f"\nfull disk mid-lesson: {len(out['acked'])} acknowledged, 0 lost, refused after "
          f"{out['seconds'] * 1000:.1f} ms with {out['free_full'] / 1e6:.2f} MB free")


def test_an_engine_timeout_on_a_full_disk_is_reported_as_a_full_disk(small_fs, tmp_path):
    """A check of the translation, with seekdb's message verbatim (a real 4012 took 12,500 bulk
    cards and 187 s on a full disk to provoke, the guard switched off): a full disk when the
    disk is full, itself otherwise."""
    engine = RuntimeError("Statement timeout occurred, please set the variable ob_query_timeout "
                          "to a larger value an then restart the statement failed: code=4012")
    assert diskspace.explain_write_failure(engine, tmp_path) is engine
    mnt = small_fs(64)
    fd = os.open(mnt / "ballast", os.O_CREAT | os.O_WRONLY)
    os.posix_fallocate(fd, 0, diskspace.free_bytes(mnt) - 2**20)
    os.close(fd)
    err = diskspace.explain_write_failure(engine, mnt)
    assert isinstance(err, DiskFullError) and "is full" in str(err)
    with pytest.raises(DiskFullError, match="nothing of this call was written"):
        diskspace.check_writable(mnt)


def test_the_classroom_server_checks_free_space_before_it_starts(small_fs, monkeypatch):
    """``python -m bureau classroom start`` on a disk with 1.4 GB free: typed, with the figures,
    and no server left behind. The check looks where the server's data lives; as root that is
    the server account's own folder (issue 37), on another disk than this test's, so the test
    serves without the account and its data lands on the small disk."""
    from bureau.classroom import server
    from bureau.classroom.server import start_server
    from bureau.errors import DiskSpaceError

    monkeypatch.setattr(server, "_server_account", lambda: None)
    base = small_fs(1500) / "server"
    with pytest.raises(DiskSpaceError, match=r"1\.4\d GB free .* needs .* 2\.55 GB"):
        start_server(base)
    assert not (base / "log").exists()  # refused before seekdb was started


KILLED = """
import sys
from bureau import Bureau
b = Bureau.open(data_dir=sys.argv[1])
case = b.case(sys.argv[3]) if len(sys.argv) > 3 else b.load_scenario("safe-combination")
with open(sys.argv[2], "a") as acked:
    print("case", case.id, file=acked, flush=True)
    i = 0
    while True:
        card = case.whisper("detective", f"Kill note {i}: the lamp was lit at {i}.")
        print("whisper", card.id, file=acked, flush=True)
        if i % 5 == 0:
            source = case.whisper("informant", f"Informant note {i}: the door was open.")
            print("whisper", source.id, file=acked, flush=True)
            print("publish", case.publish("informant", source.id).id, file=acked, flush=True)
        i += 1
"""

CHECK = """
import json, sys
from bureau import Bureau
ids = [line.split() for line in open(sys.argv[2])]
case = Bureau.open(data_dir=sys.argv[1]).case(ids[0][1])
ids = [row for row in ids if len(row) == 2 and row[0] != "case"]
spaces = case.spaces()
held = {c.id for cards in spaces.values() for c in cards}
whispers = [i for kind, i in ids if kind == "whisper"]
publishes = [i for kind, i in ids if kind == "publish"]
print(json.dumps({"whispers": len(whispers), "publishes": len(publishes),
                  "lost": [i for i in whispers + publishes if i not in held],
                  "audit_rows": len(case.audit(verify=True))}))
"""


def kill_mid_write(data: Path, acked: Path, seconds: float) -> dict:
    """Write whispers and publishes in a child, ``kill -9`` it after ``seconds`` of writing,
    then reopen and count what was acknowledged but is gone. Returns the figures and how long
    its seekdb outlived it."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "BUREAU_EMBEDDER": "hash"}
    args = [str(data), str(acked), *([_case_of(acked)] if acked.exists() else [])]
    kernel = subprocess.Popen([sys.executable, "-c", KILLED, *args], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    before = len(acked.read_text().splitlines()) if acked.exists() else 0
    deadline = time.monotonic() + 120
    while (not acked.exists() or len(acked.read_text().splitlines()) < before + 2) \
            and kernel.poll() is None:
        assert time.monotonic() < deadline, "the writer never wrote"
        time.sleep(0.2)
    assert kernel.poll() is None, kernel.stderr.read() if kernel.stderr else ""
    time.sleep(seconds)
    kernel.send_signal(signal.SIGKILL)
    kernel.wait()
    killed = time.monotonic()
    while embedded_seekdb_pids(data / "seekdb") and time.monotonic() - killed < 30:
        time.sleep(0.1)
    outlived = time.monotonic() - killed
    assert embedded_seekdb_pids(data / "seekdb") == [], "seekdb outlived its kernel"
    t = time.monotonic()
    out = _run(CHECK, str(data), str(acked), data=data, timeout=180)
    out["seekdb_outlived_s"] = round(outlived, 2)
    out["check_s"] = round(time.monotonic() - t, 1)
    return out


def _case_of(acked: Path) -> str:
    return acked.read_text().split()[1]


def test_a_kernel_killed_mid_write_loses_nothing_and_takes_its_seekdb_along(tmp_path):
    """The kill -9 figures of issue 35 (0 lost; seekdb exits with its kernel), one short round."""
    out = kill_mid_write(tmp_path / "data", tmp_path / "acked.txt", seconds=6)
    assert out["whispers"] > 10 and out["publishes"] > 1, out
    assert out["lost"] == [], out  # and the audit trail verified (CHECK reads it verified)
    assert out["seekdb_outlived_s"] < 10, out
    print(f"\nkill -9 mid-write: {out}")


def test_free_bytes_of_a_path_not_there_is_its_nearest_existing_parents(tmp_path):
    """Every write asks ``free_bytes`` of a path that exists (one ``statvfs``); a path not there
    yet, or under a file, reads its nearest existing parent, as before the quick path."""
    (tmp_path / "file").write_text("x")
    here = diskspace.free_bytes(tmp_path)
    for path in (tmp_path / "not" / "yet", tmp_path / "file" / "under", tmp_path / "file"):
        # the same file system: equal up to what other processes wrote meanwhile
        assert abs(diskspace.free_bytes(path) - here) < 64 * 2**20
    assert isinstance(diskspace.free_bytes(str(tmp_path / "not")), int)
