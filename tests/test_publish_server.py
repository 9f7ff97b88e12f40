"""The publish saga with several service instances on one real seekdb server.

The test starts the server binary the pylibseekdb wheel ships on 127.0.0.1 and a free port,
runs each service instance as its own process (``store="server"`` through
``BUREAU_SEEKDB_HOST``), each with its own data directory, and stops the server by its PID.
Cards and the publish ledger both live on the server: the instances share one truth.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pymysql
import pytest
from conftest import REPO, finish

from bureau.ledger.server import ServerLedger
from bureau.settings import ServerSettings

HOST = "127.0.0.1"  # never anything else

CHILD_INSTANCE = r"""
import json, sys, threading, time
from pathlib import Path
from bureau import Bureau
from publish_workers import publish_from_threads

sync, name, creator = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
calls, threads = int(sys.argv[4]), int(sys.argv[5])
deadline = time.time() + 120

def wait_for(path):
    while not path.exists():
        if time.time() > deadline:
            sys.exit(f"{path.name} never appeared")
        time.sleep(0.005)

# Both instances open the fresh server at the same moment (PowerMem then races to create its
# table: the gateway must absorb that).
(sync / f"start-{name}").touch()
for peer in ("a", "b"):
    wait_for(sync / f"start-{peer}")
bureau = Bureau.open()
assert bureau.settings.store == "server", bureau.settings

if creator:
    case = bureau.load_scenario("safe-combination")
    card = case.seed_card("safe-code")
    tmp = sync / "case.tmp"
    tmp.write_text(json.dumps({"case_id": case.id, "card_id": card.id}))
    tmp.rename(sync / "case.json")
else:
    wait_for(sync / "case.json")
info = json.loads((sync / "case.json").read_text())
case = bureau.case(info["case_id"])  # the other instance's case, by id (no local snapshot)
(sync / f"ready-{name}").touch()
for peer in ("a", "b"):
    wait_for(sync / f"ready-{peer}")
ids, errors = publish_from_threads(case, "informant", info["card_id"], calls, threads)
(sync / f"done-{name}").touch()
for peer in ("a", "b"):
    wait_for(sync / f"done-{peer}")
board = [[c.id, c.source_id] for c in bureau.gateway.list(case.space, "board")]
cases = [c.case_id for c in bureau.cases()]
print(json.dumps({"ids": ids, "errors": errors, "board": board, "cases": cases,
                  "case_id": case.id, "card_id": info["card_id"]}))
"""

CHILD_KILLED = r"""
import sys
from bureau import Bureau

case = Bureau.open().load_scenario("safe-combination")
card = case.whisper("detective", "The chauffeur's logbook has a page torn out for Friday.")
print(case.id, card.id, flush=True)
case.publish("detective", card.id)
print("survived the fault point")
"""

CHILD_RETRY = r"""
import json, sys
from bureau import Bureau

case = Bureau.open().case(sys.argv[1])
copy = case.publish("detective", sys.argv[2])  # takes the dead instance's reservation over
stats = case.recover()
board = [[c.id, c.source_id] for c in case.bureau.gateway.list(case.space, "board")]
print(json.dumps({"copy": copy.id, "stats": stats, "board": board}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def seekdb_binary() -> Path:
    spec = importlib.util.find_spec("pylibseekdb")
    assert spec is not None and spec.origin, "pylibseekdb is not installed"
    path = Path(spec.origin).parent / "seekdb"
    assert path.is_file() and os.access(path, os.X_OK), f"no seekdb binary at {path}"
    return path


@pytest.fixture(scope="module")
def seekdb_server(tmp_path_factory):
    """A seekdb server for this module only: 127.0.0.1, a free port, stopped by its PID."""
    base = tmp_path_factory.mktemp("seekdb-server")
    port = free_port()
    log = open(base / "server.out", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(seekdb_binary()), "--nodaemon", "--base-dir", str(base), "--port", str(port)],
        cwd=base, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"seekdb exited ({proc.returncode}): "
                                     f"{(base / 'server.out').read_text()[-2000:]}")
            try:
                pymysql.connect(host=HOST, port=port, user="root", password="",
                                database="test", connect_timeout=2).close()
                break
            except pymysql.err.Error:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        settings = ServerSettings(host=HOST, port=port)
        SERVER_KEYS[port] = base / "audit.key"  # one audit key for every instance of the server
        yield settings
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
        shutil.rmtree(base, ignore_errors=True)


SERVER_KEYS: dict[int, Path] = {}


def server_key(server: ServerSettings) -> Path:
    """The audit key file every instance on ``server`` shares (``BUREAU_AUDIT_KEY``)."""
    return SERVER_KEYS[server.port]


def instance(code: str, *args: str, server: ServerSettings, data_dir: Path,
             env: dict[str, str] | None = None) -> subprocess.Popen:
    """One service instance: its own process and data directory, the shared server."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=data_dir,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]), "BUREAU_DATA_DIR": str(data_dir),
             "BUREAU_SEEKDB_HOST": server.host, "BUREAU_SEEKDB_PORT": str(server.port),
             "BUREAU_AUDIT_KEY": str(server_key(server)), **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_two_instances_on_one_server_publish_once(seekdb_server, tmp_path):
    sync = tmp_path / "sync"
    sync.mkdir()
    start = time.perf_counter()
    procs = [
        instance(CHILD_INSTANCE, str(sync), name, "1" if name == "a" else "0", "50", "8",
                 server=seekdb_server, data_dir=tmp_path / f"instance-{name}")
        for name in ("a", "b")
    ]
    results = finish(*procs)
    elapsed = time.perf_counter() - start
    case_id, card_id = results[0]["case_id"], results[0]["card_id"]
    ids = [i for r in results for i in r["ids"]]
    assert [r["errors"] for r in results] == [[], []]
    assert len(ids) == 100 and len(set(ids)) == 1  # every caller got the same card id
    for r in results:  # both instances see exactly one board copy: that one
        assert r["board"] == [[ids[0], card_id]]
        assert case_id in r["cases"]

    ledger = ServerLedger(seekdb_server, key_path=server_key(seekdb_server))  # the shared truth, read directly
    try:
        rec = ledger.publishes.get(case_id, card_id)
        assert (rec.status, rec.copy_id, rec.attempts) == ("ready", ids[0], 1)
        assert case_id in [c.case_id for c in ledger.cases.all()]
        types = Counter(e.type for e in ledger.event_log.read(case_id)
                        if e.payload.get("source_id") == card_id)
        assert types == {"memory.publishing": 1, "memory.published": 1}
    finally:
        ledger.close()
    print(f"\n2 instances x 8 threads on a seekdb server, 100 publishes: {elapsed:.1f} s")


def test_an_instance_killed_mid_publish_is_taken_over_by_another(seekdb_server, tmp_path):
    ledger = ServerLedger(seekdb_server, key_path=server_key(seekdb_server))
    try:
        killed = instance(CHILD_KILLED, server=seekdb_server,
                          data_dir=tmp_path / "instance-c",
                          env={"BUREAU_FAULT": "publish.before_mark_ready:kill"})
        out, err = killed.communicate(timeout=180)
        assert killed.returncode == -signal.SIGKILL, (out, err[-3000:])
        case_id, card_id = out.split()[:2]
        rec = ledger.publishes.get(case_id, card_id)
        assert rec.status == "pending" and rec.attempts == 1

        [result] = finish(instance(CHILD_RETRY, case_id, card_id, server=seekdb_server,
                                 data_dir=tmp_path / "instance-d"))
        copies = [cid for cid, src in result["board"] if src == card_id]
        assert copies == [result["copy"]]  # the dead instance's copy, adopted, not duplicated
        assert result["stats"]["duplicates"] == result["stats"]["orphans"] == 0
        rec = ledger.publishes.get(case_id, card_id)
        assert (rec.status, rec.copy_id, rec.attempts) == ("ready", result["copy"], 2)
        assert not [r for r in ledger.publishes.all(case_id) if r.status == "pending"]
        assert ledger.publishes.cleanup_tasks(case_id) == []
    finally:
        ledger.close()
