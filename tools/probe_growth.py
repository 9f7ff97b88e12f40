"""How much one role's probing loop grows the ledger, with and without the consult quota.

    PYTHONPATH=$PWD python tools/probe_growth.py [--calls 300]

A role's handle consults another role's memory in a tight loop (the closed policy withholds
every card, so nothing is released: the cheapest probe there is). Prints the ledger bytes each
call adds, the calls per second, and what the default quotas let through in one minute. The
ledger is measured as its SQLite file after a WAL checkpoint. Runs on real storage (embedded
seekdb, offline MiniLM) in a temporary data directory. Also runs on code without quotas (it
then reports the uncapped figures only), which is how the "before" figures were taken.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path


def ledger_bytes(path: Path) -> int:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def probe(case, calls: int) -> tuple[int, int, float, int]:
    """(calls that passed, calls refused, seconds, ledger bytes added)."""
    from bureau.errors import BureauError

    path = case.bureau.settings.ledger_path
    suspect = case.agent("suspect")
    before = ledger_bytes(path)
    passed = refused = 0
    start = time.perf_counter()
    for i in range(calls):
        try:
            suspect.consult("informant", f"Is the code of the safe {i:04d}?")
            passed += 1
        except BureauError as exc:
            if type(exc).__name__ != "QuotaExceededError":
                raise
            refused += 1
    took = time.perf_counter() - start
    return passed, refused, took, ledger_bytes(path) - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bureau-probe-"))
    os.environ["BUREAU_DATA_DIR"] = str(tmp)
    try:
        from bureau import Bureau

        bureau = Bureau.open(tmp)
        try:
            from bureau.quotas import Quotas
        except ImportError:
            Quotas = None  # noqa: N806 - code from before the quotas
        out: dict[str, object] = {}
        if Quotas is not None:
            bureau.settings = bureau.settings.with_(quotas=Quotas.off())
        case = bureau.load_scenario("safe-combination")
        passed, _, took, grown = probe(case, args.calls)
        out["uncapped"] = {"calls": passed, "calls_per_s": round(passed / took, 1),
                           "ledger_bytes_per_call": round(grown / passed),
                           "ledger_bytes_per_minute_at_that_rate": round(grown / took * 60)}
        if Quotas is not None:
            bureau.settings = bureau.settings.with_(quotas=Quotas())
            case = bureau.load_scenario("safe-combination")
            passed, refused, took, grown = probe(case, args.calls)
            out["default_quotas"] = {
                "consults_per_minute": Quotas().consults_per_minute, "passed": passed,
                "refused": refused, "seconds": round(took, 2),
                "ledger_bytes_added": grown,
                "ledger_bytes_per_passed_call": round(grown / max(passed, 1)),
                "ledger_bytes_per_minute_at_most": round(grown / max(passed, 1))
                * (Quotas().consults_per_minute or 0)}
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
