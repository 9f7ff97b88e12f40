"""Text in flight: what one learner catches of another learner's statements by polling the
classroom server's process list.

seekdb 1.4 shows every session's current statement to every account (a pinned known gap,
``docs/classroom.md``), and pymysql sends card text inside the ``INSERT`` it interpolates on the
client. Sealing (:mod:`bureau.sealing`) is what keeps that text unreadable; this module is the
learner who tries, used by ``tools/processlist_probe.py`` on a laptop room and by the hub test
from inside a learner's own kernel. The poller's own count of statements seen is part of the
result, so a probe that saw nothing cannot pass for a probe that caught nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql

from ..bounds import session_sql
from ..sealing.cipher import PREFIX as SEALED_MARK
from ..tenancy.connection import read_connection

WRITER = r"""
import sys
from bureau import Bureau
case = Bureau.open().load_scenario("safe-combination")
for token in sys.argv[1:]:
    case.whisper("detective", f"The vault code word is {token}.")
"""
"""The other learner: ``python -c WRITER CANARY...`` whispers each canary (their settings,
sealed or not, from the environment)."""


@dataclass
class Poller:
    """Poll ``information_schema.PROCESSLIST`` as fast as one connection allows, in a thread."""

    connection_file: Path
    seen: list[str] = field(default_factory=list)
    polls: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Poller:
        c = read_connection(self.connection_file)
        conn = pymysql.connect(host=c.host, port=c.port, user=c.user, password=c.password,
                               database=c.database, autocommit=True, connect_timeout=10,
                               read_timeout=30, init_command=session_sql())
        me = self._whoami(conn)

        def poll() -> None:
            with conn.cursor() as cur:
                while not self._stop.is_set():
                    cur.execute("SELECT ID, INFO FROM information_schema.PROCESSLIST")
                    self.polls += 1
                    self.seen.extend(str(info) for sid, info in cur.fetchall()
                                     if info and sid != me)
            conn.close()

        self._thread = threading.Thread(target=poll, name="bureau-inflight-poller", daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _whoami(conn: Any) -> int:
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            return int(cur.fetchone()[0])

    def stop(self) -> list[str]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
        return self.seen


def tally(seen: list[str], canaries: list[str], polls: int = 0) -> dict[str, int]:
    """What the poller caught: canaries found in any statement it saw, beside how much it saw
    (statements, the writes among them, sealed texts among those)."""
    text = "\n".join(seen)
    return {
        "canaries": len(canaries),
        "caught": sum(token in text for token in canaries),
        "polls": polls,
        "statements_seen": len(seen),
        "writes_seen": sum(s.lstrip().upper().startswith(("INSERT", "REPLACE")) for s in seen),
        "sealed_texts_seen": text.count(SEALED_MARK),
    }


__all__ = ["Poller", "SEALED_MARK", "WRITER", "tally"]
