"""Sealed over unsealed, interleaved: interrogation p50 and first-publish p50 on one store.

    python tools/seal_cost.py 1000,10000 60

One process, one temporary store, a sealed and an unsealed case of the same synthetic cards
(the bench's); each question and each first publish alternates the two cases (which goes first
alternates too), so a shared machine's load moves both sides alike (issue 31 §4; figures in
docs/sealing.md, "Cost"). A first publish embeds its text on both sides, as the bench times it.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bureau.labs.bench.runner import ROLES, questions, synthetic_cards
from bureau.service import Bureau


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def main(sizes: list[int], n: int) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="bureau-seal-cost-"))
    atexit.register(shutil.rmtree, data_dir, ignore_errors=True)
    bureau = Bureau.open(data_dir)
    gw = bureau.gateway
    forget = getattr(gw.encoder, "forget", lambda texts: None)
    for cards in sizes:
        cases = {}
        for seal in (True, False):
            bureau.settings = bureau.settings.with_(seal=seal)
            case = bureau.load_scenario(
                "safe-combination", case_id=f"cost-{cards}-{int(seal)}-{int(time.time())}")
            texts = synthetic_cards(cards)
            for i, role in enumerate(ROLES):
                gw.add_many(case.space, role, [(t, {"visibility": "private", "topic": "bench",
                                                    "kind": "note"}) for t in texts[i::3]])
            for q in questions(3, f"warm-{cards}-{seal}"):
                case.interrogate("detective", q)
            sources = [case.whisper("informant", f"Publishable bench fact number {i}: the vault "
                                    f"code is {1000 + i}.", topic="bench") for i in range(n)]
            cases[seal] = (case, sources, questions(n, f"ask-{cards}-{int(seal)}"))
        ask: dict[bool, list[float]] = {True: [], False: []}
        pub: dict[bool, list[float]] = {True: [], False: []}
        load = os.getloadavg()
        for i in range(n):
            order = (True, False) if i % 2 == 0 else (False, True)
            for seal in order:
                bureau.settings = bureau.settings.with_(seal=seal)
                case, _, asked = cases[seal]
                t = time.perf_counter()
                case.interrogate("detective", asked[i])
                ask[seal].append((time.perf_counter() - t) * 1000)
            for seal in order:
                bureau.settings = bureau.settings.with_(seal=seal)
                case, sources, _ = cases[seal]
                forget([sources[i].content])
                t = time.perf_counter()
                case.publish("informant", sources[i].id)
                pub[seal].append((time.perf_counter() - t) * 1000)
        print(json.dumps({
            "cards": cards, "queries": n,
            "interrogate_p50_ms": [p50(ask[True]), p50(ask[False])],
            "interrogate_ratio": round(p50(ask[True]) / p50(ask[False]), 3),
            "publish_first_p50_ms": [p50(pub[True]), p50(pub[False])],
            "publish_ratio": round(p50(pub[True]) / p50(pub[False]), 3),
            "load_before": [round(x, 2) for x in load],
            "load_after": [round(x, 2) for x in os.getloadavg()]}), flush=True)
    bureau.settings = bureau.settings.with_(seal=True)


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1].split(",")], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
