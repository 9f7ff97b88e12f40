"""Run the same cases, questions and k through every configuration, in one process, one run.

Per configuration and case set:

* **question leak**: the share of questions whose results hold any other role's private card;
* **pair leak**: over (question, another role's private card) pairs, the share where that card
  is in the asker's results (the leak lab's pairs);
* **probe leak**: the asker asks with another role's private card's own text; the share that
  returns that card;
* **own / board recall**: the asker asks with the text of one of its own cards / a board card;
  the share that returns it;
* **spoof**: the asker sets the configuration's identity field to the owner of a private card
  and asks with its text (the bureau: a ``role`` argument on its recall tool);
* **latency** p50 / p95 of one search, and its ratio to the bureau's on the same searches.

Each leak and recall figure has a *random line*: the same number of results drawn uniformly from
every card stored for the case (board copies included). A hit is matched on (stored owner, text),
so a board copy of a card never counts as its owner's private card. Every query's vector comes
from the shared :class:`~bureau.labs.peers.systems.VectorBook` (the bureau's through
``given_vectors``), so latency is the search, not the encoder. No relevance threshold anywhere:
the bureau's below-threshold cards count as handed over, mem0 is asked with ``threshold=0``.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...quotas import lifted
from .corpus import PeerCase, magpie_slice, shipped_cases
from .systems import (
    BureauSystem,
    Config,
    Hit,
    LangGraphSystem,
    Mem0System,
    VectorBook,
    package_version,
    timed,
)


@dataclass
class Tally:
    hits: int = 0
    n: int = 0
    random: float = 0.0

    def add(self, hit: bool, expected: float) -> None:
        self.hits += int(hit)
        self.n += 1
        self.random += expected

    def rate(self) -> float:
        return self.hits / self.n if self.n else float("nan")

    def random_rate(self) -> float:
        return self.random / self.n if self.n else float("nan")


@dataclass
class Row:
    case_set: str
    config: str
    peer: str
    version: str
    filter: str
    cards: int = 0
    cases: int = 0
    tallies: dict[str, Tally] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)

    def tally(self, name: str) -> Tally:
        return self.tallies.setdefault(name, Tally())


METRICS = ("question_leak", "pair_leak", "probe_leak", "own_recall", "board_recall", "spoof")


def _any_drawn(pool: int, bad: int, drawn: int) -> float:
    """P(at least one of ``bad`` cards among ``drawn`` drawn uniformly from ``pool``)."""
    drawn = min(drawn, pool)
    if bad <= 0 or drawn <= 0:
        return 0.0
    return 1.0 - math.comb(pool - bad, drawn) / math.comb(pool, drawn)


def _sample(items: list[Any], n: int, seed: str) -> list[Any]:
    return items if len(items) <= n else random.Random(seed).sample(items, n)


@dataclass
class Plan:
    """What every configuration is asked, fixed before any system runs: at most ``max_probes``
    questions and probes of each kind, a seeded sample when a case set has more (mem0's
    in-process Qdrant filters point by point in Python, ~0.1-0.6 s a search at 10,000 cards)."""

    questions: list[tuple[PeerCase, str, str]]
    probes: list[tuple[PeerCase, str, Any]]
    own: list[tuple[PeerCase, str, Any]]
    board: list[tuple[PeerCase, str, Any]]


def plan(cases: Sequence[PeerCase], max_probes: int, seed: str) -> Plan:
    questions = _sample([(pc, r, q) for pc in cases for r, q in pc.questions], max_probes,
                        seed + "questions")
    asking = [pc for pc in cases if pc.questions]
    probes = [(pc, r, c) for pc in asking for r in pc.roles for c in pc.cards
              if c.private and c.owner != r]
    own = [(pc, c.owner, c) for pc in asking for c in pc.cards]
    board = [(pc, r, c) for pc in asking for r in pc.roles for c in pc.cards if c.published]
    return Plan(questions, _sample(probes, max_probes, seed + "probes"),
                _sample(own, max_probes, seed + "own"), _sample(board, max_probes, seed + "board"))


def measure(config: Config, cases: Sequence[PeerCase], p: Plan, k: int, case_set: str,
            spoofs: int) -> Row:
    row = Row(case_set, config.name, config.peer, config.version, config.filter,
              cards=sum(pc.stored for pc in cases), cases=len(cases))
    privates = {pc.case_id: {(c.owner, c.text) for c in pc.cards if c.private} for pc in cases}

    def search(pc: PeerCase, role: str, q: str) -> list[Hit]:
        hits, ms = timed(lambda: config.search(pc, role, q, k))
        row.latency_ms.append(ms)
        return hits

    for pc, role, q in p.questions:
        hits = set(search(pc, role, q))
        foreign = {h for h in privates[pc.case_id] if h[0] != role}
        row.tally("question_leak").add(bool(hits & foreign),
                                       _any_drawn(pc.stored, len(foreign), len(hits)))
        for h in foreign:
            row.tally("pair_leak").add(h in hits, min(1.0, len(hits) / pc.stored))
    for name, items, owner in (("probe_leak", p.probes, None), ("own_recall", p.own, None),
                               ("board_recall", p.board, "board")):
        for pc, role, c in items:
            hits = search(pc, role, c.text)
            want = (owner or c.owner, c.text)
            row.tally(name).add(want in hits, min(1.0, len(hits) / pc.stored))
    for pc, role, c in p.probes[:spoofs]:
        hits = config.spoof(pc, role, c.owner, c.text, k)
        row.tally("spoof").add((c.owner, c.text) in hits, min(1.0, len(hits) / pc.stored))
    return row


@dataclass
class PeersResult:
    rows: list[Row]
    k: int
    versions: dict[str, str]
    vector_misses: int
    seconds: float
    notes: list[str] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        by_set = {(r.case_set, r.peer): r for r in self.rows if r.peer == "bureau"}
        out = []
        for r in self.rows:
            base = by_set.get((r.case_set, "bureau"))
            p50 = float(np.percentile(r.latency_ms, 50)) if r.latency_ms else float("nan")
            p95 = float(np.percentile(r.latency_ms, 95)) if r.latency_ms else float("nan")
            b50 = float(np.percentile(base.latency_ms, 50)) if base and base.latency_ms else 1.0
            b95 = float(np.percentile(base.latency_ms, 95)) if base and base.latency_ms else 1.0
            rec: dict[str, Any] = {"case_set": r.case_set, "config": r.config, "peer": r.peer,
                                   "version": r.version, "filter": r.filter, "cards": r.cards,
                                   "cases": r.cases, "k": self.k,
                                   "searches": len(r.latency_ms)}
            for m in METRICS:
                t = r.tallies.get(m, Tally())
                rec[m] = round(t.rate(), 4)
                rec[f"{m}_random"] = round(t.random_rate(), 4)
                rec[f"{m}_n"] = t.n
                rec[f"{m}_hits"] = t.hits
            rec.update(p50_ms=round(p50, 3), p95_ms=round(p95, 3),
                       p50_ratio=round(p50 / b50, 3), p95_ratio=round(p95 / b95, 3))
            out.append(rec)
        return out


def run_peers(data_dir: Path, *, sizes: Sequence[int] = (100, 1000, 10000), k: int = 5,
              max_probes: int = 100, scenarios: bool = True,
              dataset: str | Path | None = None, spoofs: int = 50,
              progress: Callable[[str], None] = lambda s: None,
              bureau: Any = None,
              partial: Callable[[PeersResult], None] | None = None) -> PeersResult:
    """Every case set through every configuration; the bureau's store lives in ``data_dir``.

    The bureau's store keeps every earlier case set (its searches are filtered by case, so this
    only makes its latency conservative); each peer gets a fresh instance per case set.
    ``bureau``: an open Bureau to use instead (one store per process: the tests pass theirs).
    ``partial``: called with the figures so far after each case set (a long run keeps them).
    """
    from ...service import Bureau

    start = time.perf_counter()
    if bureau is None:
        bureau = Bureau.open(data_dir)
    book = VectorBook(bureau.encoder)
    tag = time.strftime("%H%M%S")
    sets: list[tuple[str, list[PeerCase]]] = []
    if scenarios:
        sets.append(("scenarios", shipped_cases(tag)))
    for n in sizes:
        sets.append((f"MAGPIE {n:,} cards", magpie_slice(n, f"{tag}-{n}", dataset)))
    rows: list[Row] = []
    with lifted(bureau):
        for name, cases in sets:
            t0 = time.perf_counter()
            book.add([c.text for pc in cases for c in pc.cards])
            book.add([q for pc in cases for _, q in pc.questions])
            progress(f"{name}: {len(cases)} cases, {sum(pc.stored for pc in cases):,} stored "
                     f"cards, {len(book.vectors):,} vectors ({time.perf_counter() - t0:.0f} s)")
            systems = [BureauSystem(bureau, book), Mem0System(book), LangGraphSystem(book)]
            for s in systems:
                t0 = time.perf_counter()
                for pc in cases:
                    s.load(pc)
                progress(f"  loaded {type(s).__name__} in {time.perf_counter() - t0:.1f} s")
            p = plan(cases, max_probes, name)
            for s in systems:
                for cfg in s.configs():
                    t0 = time.perf_counter()
                    rows.append(measure(cfg, cases, p, k, name, spoofs))
                    progress(f"  {cfg.name}: {len(rows[-1].latency_ms):,} searches in "
                             f"{time.perf_counter() - t0:.1f} s")
            for s in systems:
                getattr(s, "close", lambda: None)()
            if partial is not None:
                partial(_result(rows, k, bureau, book, start))
    return _result(rows, k, bureau, book, start)


def _result(rows: list[Row], k: int, bureau: Any, book: VectorBook, start: float) -> PeersResult:
    versions = {"bureau": package_version("bureau"), "mem0ai": package_version("mem0ai"),
                "qdrant-client": package_version("qdrant-client"),
                "langgraph": package_version("langgraph"),
                "langgraph-checkpoint": package_version("langgraph-checkpoint"),
                "encoder": getattr(bureau.encoder, "name", type(bureau.encoder).__name__)}
    return PeersResult(list(rows), k, versions, book.misses, time.perf_counter() - start)


__all__ = ["METRICS", "PeersResult", "Plan", "Row", "Tally", "measure", "plan", "run_peers"]
