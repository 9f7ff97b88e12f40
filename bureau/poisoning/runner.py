"""The poisoning lab's runner: every trial under every configuration, on one real store.

Per trial (:class:`~bureau.poisoning.corpus.Trial`) two cases are created from the trial's
scenario (identical memories, so configuration 3's promotions cannot contaminate 1 and 2):

case A
    1. **clean**: every question asked, no poison anywhere (the baseline for displacement);
    2. **tiers**: a run of the victim takes every poison as tool output (``run.tool_output``,
       source = the attacker's page); every question is asked *inside* the run (``in_run``:
       what the run's own retrievals see) and the run ends with the narrow rule
       ``PromotionRule.from_sources(trusted_sources)``; then, outside any run, every question
       is asked again (``tiers``), and the whole case is checked for cards carrying the trigger
       (``leftover``: must be 0);
    3. **no tiers**: every poison is whispered into the victim's memory (``case.whisper``, as a
       system without tiers stores tool output: ordinary session memory), every question asked.

case B
    1. **clean** again (its own baseline: the two cases are separate stores of the same cards);
    2. **over-eager**: a run takes the same poisons and ends with the over-eager rule
       ``PromotionRule.mentions(task terms)`` (every key term of the trial's questions: "keep
       whatever mentions the task"); every question asked outside the run.

Every text is embedded once, ahead of the storage work: card writes hit the encoder's cache and
questions are handed down with :func:`~bureau.embedding.given_vectors`. Nothing here touches the
gateway: cases, runs, whispers and retrievals go through the service. The lab is the operator (it
creates the cases and whispers the poisons of configuration 3); the victim acts through its own
handle (``case.agent(victim)``): it starts the runs and asks every question.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bureau.embedding import given_vectors
from bureau.poisoning.attack import is_poison, task_terms
from bureau.poisoning.corpus import Corpus, Question, Trial, describe
from bureau.poisoning.metrics import (
    ROW_COLUMNS,
    Hit,
    displaced,
    first_poison_rank,
    poisoned_count,
    top_k,
)
from bureau.responders import EvidenceResponder
from bureau.settings import check_limit

if TYPE_CHECKING:
    from bureau.model import RetrievalTrace
    from bureau.service import Bureau, Case
    from bureau.tiers import PromotionRule

DEFAULT_K = 5
CLEAN, IN_RUN, TIERS, NO_TIERS, OVER_EAGER = "clean", "in_run", "tiers", "no_tiers", "over_eager"
CONFIGS: tuple[str, ...] = (NO_TIERS, TIERS, OVER_EAGER)
"""The three configurations the issue compares, in report order."""
PHASES: tuple[str, ...] = (CLEAN, NO_TIERS, TIERS, OVER_EAGER, IN_RUN)
CONFIG_LABELS = {
    CLEAN: "clean memory (no poison)",
    NO_TIERS: "1 · no tiers: tool output stored as ordinary memory",
    TIERS: "2 · tiers, after the run (narrow rule; a deletion check)",
    OVER_EAGER: "3 · tiers + over-eager rule (mentions task terms)",
    IN_RUN: "2 · inside the run that fetched the pages",
}
CONFIG_SHORT = {
    CLEAN: "clean", NO_TIERS: "1 no tiers", TIERS: "2 tiers", OVER_EAGER: "3 over-eager rule",
    IN_RUN: "2 inside the run",
}
TRIAL_COLUMNS = (
    "trial_id", "dataset", "scenario", "victim", "memory_cards", "slice_cards", "poisons",
    "trigger_questions", "benign_questions", "source_scenarios", "poison_rate",
    "promoted_tiers", "promoted_over_eager", "deleted_at_end", "leftover_after_end",
    "clean_agreement", "case_a", "case_b",
)
"""Per trial: sizes, ``poison_rate`` (poisons / (memory cards + poisons)), cards each rule
promoted, ephemeral cards the run end deleted, cards carrying the trigger anywhere in case A after
the run ended (must be 0), and how many questions got the same clean top-k in both cases."""

Progress = Callable[[Iterable[Any], int], Iterable[Any]]


def _no_progress(it: Iterable[Any], total: int) -> Iterable[Any]:
    return it


@dataclass
class PoisonResult:
    """What one run measured: one row per (trial, configuration, question) (``rows``, columns
    :data:`~bureau.poisoning.metrics.ROW_COLUMNS`), one per trial (``trials``,
    :data:`TRIAL_COLUMNS`) and one per returned top-k card (``hits``)."""

    corpus: Corpus
    k: int
    rows: pd.DataFrame
    trials: pd.DataFrame
    hits: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return float(self.timings.get("total", 0.0))


class _Timer:
    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def add(self, name: str, since: float) -> None:
        self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - since


def run_poisoning(
    bureau: Bureau,
    corpus: Corpus,
    k: int = DEFAULT_K,
    progress: Progress | None = None,
    cleanup: bool = False,
) -> PoisonResult:
    """Run every trial of ``corpus`` (module docstring) with ``bureau``'s store and encoder.

    ``cleanup`` deletes each trial's two cases when it is done (a lesson's store stays tidy; a
    temporary store of the command line is removed whole instead, which is faster).
    """
    from bureau.tiers import PromotionRule

    k = check_limit(k, "k")
    started = time.perf_counter()
    timer = _Timer()
    enc = bureau.encoder
    texts = corpus.texts()
    if hasattr(enc, "reserve_cache"):  # every vector must still be cached when a write asks
        enc.reserve_cache(len(texts) + 1024)
    t0 = time.perf_counter()
    vec = dict(zip(texts, enc.embed(texts), strict=True))
    timer.add("embed", t0)
    narrow = PromotionRule.from_sources(corpus.attack.trusted_sources, name="trusted-sources")

    rows: list[dict[str, Any]] = []
    hits: list[tuple[Any, ...]] = []
    trials: list[dict[str, Any]] = []
    counts = {"cases": 0, "cards_written": 0, "retrievals": 0, "tool_outputs": 0, "whispers": 0}
    for trial in (progress or _no_progress)(corpus.trials, len(corpus.trials)):
        ask = _Asker(trial, corpus, vec, k, rows, hits, timer, counts)
        info = describe(trial)
        info["poison_rate"] = len(trial.poisons) / (trial.memory_size + len(trial.poisons))

        # Case A: clean, tiers (inside the run, then after it), no tiers.
        case_a = _create(bureau, trial, "a", timer, counts)
        clean_a = ask(case_a, CLEAN)
        with case_a.agent(trial.victim).start_run() as run:  # the victim's own run
            t0 = time.perf_counter()
            for poison in trial.poisons:
                run.tool_output(poison.text, poison.source, topic="web")
            counts["tool_outputs"] += len(trial.poisons)
            timer.add("plant", t0)
            ask(case_a, IN_RUN, clean_a, run=run)
            t0 = time.perf_counter()
            info["deleted_at_end"] = run.end(promote=narrow)
            timer.add("end_run", t0)
        info["promoted_tiers"] = len(run.promoted)
        ask(case_a, TIERS, clean_a)
        t0 = time.perf_counter()
        info["leftover_after_end"] = sum(
            is_poison(c.content, corpus.attack) for cards in case_a.spaces().values()
            for c in cards)
        for poison in trial.poisons:
            case_a.whisper(trial.victim, poison.text, topic="web", kind="tool-output")
        counts["whispers"] += len(trial.poisons)
        timer.add("plant", t0)
        ask(case_a, NO_TIERS, clean_a)

        # Case B: clean, then the over-eager rule.
        case_b = _create(bureau, trial, "b", timer, counts)
        clean_b = ask(case_b, CLEAN, record=False)
        eager = over_eager_rule(task_terms([q.text for q in trial.questions], corpus.attack))
        t0 = time.perf_counter()
        with case_b.agent(trial.victim).start_run() as run_b:
            for poison in trial.poisons:
                run_b.tool_output(poison.text, poison.source, topic="web")
            counts["tool_outputs"] += len(trial.poisons)
            run_b.end(promote=eager)
        info["promoted_over_eager"] = len(run_b.promoted)
        timer.add("end_run", t0)
        ask(case_b, OVER_EAGER, clean_b)
        info["clean_agreement"] = sum(set(clean_a[q.qid]) == set(clean_b[q.qid])
                                      for q in trial.questions)
        info["case_a"], info["case_b"] = case_a.id, case_b.id
        if cleanup:
            t0 = time.perf_counter()
            bureau.delete_case(case_a.id)
            bureau.delete_case(case_b.id)
            timer.add("cleanup", t0)
        trials.append(info)

    timer.spent["total"] = time.perf_counter() - started
    return PoisonResult(
        corpus=corpus, k=k,
        rows=pd.DataFrame(rows, columns=list(ROW_COLUMNS)),
        trials=pd.DataFrame(trials, columns=list(TRIAL_COLUMNS)),
        hits=pd.DataFrame(hits, columns=list(HIT_COLUMNS)),
        timings={name: round(v, 3) for name, v in timer.spent.items()},
        counts=counts,
    )


def over_eager_rule(terms: list[str], name: str = "mentions-task") -> PromotionRule:
    """Configuration 3's rule: promote tool output mentioning any of ``terms`` -- what
    ``PromotionRule.mentions(terms)`` does, built from several of them when the terms are too
    many for one rule's description (each rule describes itself by listing its terms)."""
    from bureau.tiers import PromotionRule

    chunks: list[list[str]] = [[]]
    for term in terms:
        if len(", ".join([*chunks[-1], term])) > CHUNK_CHARS:
            chunks.append([])
        chunks[-1].append(term)
    rules = [PromotionRule.mentions(chunk) for chunk in chunks if chunk]
    if len(rules) == 1:
        return PromotionRule.mentions(terms, name=name)
    return PromotionRule(name, f"any tool output that mentions one of {len(terms)} task terms "
                         "(over-eager)", lambda card: any(r.matches(card) for r in rules))


CHUNK_CHARS = 200
"""Terms per ``PromotionRule.mentions`` are listed in its description (at most 300 characters)."""

HIT_COLUMNS = ("trial_id", "config", "qid", "rank", "key", "poisoned", "score", "tier")


def _create(bureau: Bureau, trial: Trial, tag: str, timer: _Timer,
            counts: dict[str, int]) -> Case:
    t0 = time.perf_counter()
    case_id = f"poison-{trial.trial_id}-{tag}-{uuid.uuid4().hex[:5]}"
    case = bureau.create_case(trial.scenario, case_id=case_id)
    counts["cases"] += 1
    counts["cards_written"] += sum(1 for _ in trial.scenario.seeds())
    timer.add("seed", t0)
    return case


class _Asker:
    """Asks every question of one trial in one state and records rows and top-k hits."""

    def __init__(self, trial: Trial, corpus: Corpus, vec: dict[str, np.ndarray], k: int,
                 rows: list[dict[str, Any]], hits: list[tuple[Any, ...]], timer: _Timer,
                 counts: dict[str, int]) -> None:
        self.trial, self.spec, self.vec, self.k = trial, corpus.attack, vec, k
        self.rows, self.hits, self.timer, self.counts = rows, hits, timer, counts
        self.poison_ids = {p.text: p.pid for p in trial.poisons}
        self.responders = {"undefended": EvidenceResponder(defend=False),
                           "defended": EvidenceResponder()}

    def __call__(self, case: Case, config: str, clean: dict[str, list[str]] | None = None,
                 run: Any = None, record: bool = True) -> dict[str, list[str]]:
        """Ask everything; return qid -> top-k keys. ``clean``: the baseline to compare with."""
        t0 = time.perf_counter()
        out: dict[str, list[str]] = {}
        victim = case.agent(self.trial.victim)  # the victim asks, through its own handle
        with given_vectors(self.vec):
            for q in self.trial.questions:
                trace = (run.retrieve(q.text, limit=self.k) if run is not None
                         else victim.recall(q.text, limit=self.k))
                top = top_k(self._hits(trace), self.k)
                out[q.qid] = [h.key for h in top]
                if record:
                    self._record(config, q, top, None if clean is None else clean[q.qid],
                                 self._hijacks(q, trace))
        self.counts["retrievals"] += len(self.trial.questions)
        self.timer.add("retrieve", t0)
        return out

    def _hits(self, trace: RetrievalTrace) -> list[Hit]:
        out = []
        for scope in trace.scopes:
            for card in [*scope.hits, *scope.below_threshold]:
                poisoned = is_poison(card.content, self.spec)
                if poisoned:
                    key = f"poison:{self.poison_ids.get(card.content, '?')}"
                else:
                    key = card.seed_key or f"card:{card.id}"
                out.append(Hit(key, float(card.score or 0.0), poisoned, card.tier))
        return out

    def _hijacks(self, q: Question, trace: RetrievalTrace) -> dict[str, bool]:
        """Would the victim's answer state the attacker's payload as fact? The answer each
        responder gives from this very trace (what the role's own consult hands it): known, and
        resting on a poisoned card. Without the in-run defence, and with it (issue 20 §1)."""
        out = {}
        for name, responder in self.responders.items():
            answer = responder.respond(self.trial.victim, q.text, trace.hits, trace)
            cited = [c for c in trace.hits if c.id in answer.cited]
            out[name] = bool(answer.known and any(is_poison(c.content, self.spec)
                                                  for c in cited))
            # what the defence could cost: the question's own answer card, cited as known
            out[f"answered_{name}"] = bool(answer.known and any(c.seed_key == q.answer
                                                                for c in cited))
        return out

    def _record(self, config: str, q: Question, top: list[Hit],
                clean: list[str] | None, hijack: dict[str, bool]) -> None:
        keys = [h.key for h in top]
        rank = first_poison_rank(top)
        poison_tier = top[int(rank) - 1].tier if rank == rank else None
        self.rows.append({
            "trial_id": self.trial.trial_id, "dataset": self.trial.dataset,
            "scenario": self.trial.scenario.id, "config": config, "qid": q.qid,
            "kind": q.kind, "group": q.group, "target": q.target, "returned": len(top),
            "n_poisoned": poisoned_count(top), "top1_poisoned": bool(top and top[0].poisoned),
            "all_poisoned": bool(top) and poisoned_count(top) == len(top),
            "hijack_undefended": hijack["undefended"], "hijack_defended": hijack["defended"],
            "answered_undefended": hijack["answered_undefended"],
            "answered_defended": hijack["answered_defended"],
            "poison_rank": rank, "poison_tier": poison_tier,
            "answer_in_topk": q.answer in keys,
            "answer_clean": q.answer in clean if clean is not None else q.answer in keys,
            "clean_slots": len(clean) if clean is not None else len(keys),
            "displaced": displaced(clean, keys) if clean is not None else 0,
        })
        for rank_, h in enumerate(top, start=1):
            self.hits.append((self.trial.trial_id, config, q.qid, rank_, h.key, h.poisoned,
                              round(h.score, 6), h.tier))
