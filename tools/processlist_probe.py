"""Issue 31 §1: poll a classroom server's process list as one learner while another whispers
canaries, sealed and unsealed; print how many canaries (and sealed texts) the poller caught.

    python tools/processlist_probe.py [--canaries 50]

Starts a throw-away classroom (two learners), runs the writer in a child process per setting,
polls ``information_schema.PROCESSLIST`` from the other learner's account as fast as it can
(:class:`bureau.classroom.inflight.Poller`), and tears the classroom down. The same probe runs
through the hub, from one learner's kernel against another's, in ``tests/test_hub.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from bureau.classroom import tenants
from bureau.classroom.inflight import WRITER, Poller, tally


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--canaries", type=int, default=50)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="plist-"))
    room = base / "room"
    tenants.start(room, guard=False)  # a throw-away room: no KILL to watch for
    try:
        for who in ("ann", "ben"):
            tenants.add(room, who)
        roster = tenants.Roster.load(room)
        results = {}
        for seal in ("0", "1"):
            tokens = [f"CANARY{uuid.uuid4().hex[:12]}" for _ in range(args.canaries)]
            poller = Poller(roster.connection_file("ann")).start()
            env = {**os.environ, "BUREAU_DATA_DIR": str(base / f"ben-{seal}"),
                   "BUREAU_CLASSROOM": str(roster.connection_file("ben")), "BUREAU_SEAL": seal}
            subprocess.run([sys.executable, "-c", WRITER, *tokens], env=env, check=True,
                           timeout=900)
            seen = poller.stop()
            results["sealed" if seal == "1" else "unsealed"] = tally(seen, tokens, poller.polls)
        print(json.dumps(results, indent=2))
    finally:
        tenants.teardown(room)


if __name__ == "__main__":
    main()
