"""Issue 31 §1: poll a classroom server's process list as one learner while another whispers
canaries, sealed and unsealed; print how many canaries (and sealed texts) the poller caught.

    python tools/processlist_probe.py [--canaries 50]

Starts a throw-away classroom (two learners), runs the writer in a child process per setting,
polls ``information_schema.PROCESSLIST`` from the other learner's account as fast as it can, and
tears the classroom down.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import pymysql
from bureau.classroom.connection import read_connection

from bureau.classroom import tenants

WRITER = r"""
import sys
from bureau import Bureau
b = Bureau.open()
c = b.load_scenario("safe-combination")
for token in sys.argv[1:]:
    c.whisper("detective", f"The vault code word is {token}.")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--canaries", type=int, default=50)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="plist-"))
    room = base / "room"
    tenants.start(room)
    try:
        for who in ("ann", "ben"):
            tenants.add(room, who)
        roster = tenants.Roster.load(room)
        results = {}
        for seal in ("0", "1"):
            tokens = [f"CANARY{uuid.uuid4().hex[:12]}" for _ in range(args.canaries)]
            conn = read_connection(roster.connection_file("ann"))
            ann = pymysql.connect(host="127.0.0.1", port=conn.port, user=conn.user,
                                  password=conn.password, database=conn.database)
            seen: list[str] = []
            stop = threading.Event()

            def poll(ann=ann, stop=stop, seen=seen) -> None:
                with ann.cursor() as cur:
                    while not stop.is_set():
                        cur.execute("SELECT INFO FROM information_schema.PROCESSLIST")
                        seen.extend(str(r[0]) for r in cur.fetchall() if r[0])

            t = threading.Thread(target=poll)
            t.start()
            env = {**os.environ, "BUREAU_DATA_DIR": str(base / f"ben-{seal}"),
                   "BUREAU_CLASSROOM": str(roster.connection_file("ben")), "BUREAU_SEAL": seal}
            subprocess.run([sys.executable, "-c", WRITER, *tokens], env=env, check=True,
                           timeout=900)
            stop.set()
            t.join()
            ann.close()
            text = "\n".join(seen)
            results["sealed" if seal == "1" else "unsealed"] = {
                "canaries": len(tokens),
                "caught": sum(tok in text for tok in tokens),
                "statements_polled": len(seen),
                "inserts_seen": sum("INSERT" in s.upper() or "REPLACE" in s.upper()
                                    for s in seen),
                "sealed_texts_seen": text.count("sealed:1:"),
            }
        print(json.dumps(results, indent=2))
    finally:
        tenants.teardown(room)


if __name__ == "__main__":
    main()
