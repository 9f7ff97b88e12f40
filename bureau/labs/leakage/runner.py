"""The lab runner: converted scenarios through the four policies, on one store and one embedder.

For every :class:`~bureau.labs.leakage.datasets.labset.LabScenario` the runner computes the two shared pools
(policy a, with and without the requester's own items) in numpy, creates the Bureau case, checks
every item was seeded, asks every requester's query in state b, publishes the shareable cards
(c), publishes the safe abstractions (d), records what came back (policy definitions:
:mod:`bureau.labs.leakage.policies.policies`), and finally probes the boundary exhaustively (below).
It reads no benchmark format: it takes a :class:`~bureau.labs.leakage.datasets.labset.LabSet` (a
``MagpieDataset`` is converted with :func:`bureau.labs.leakage.datasets.convert.to_lab` on the way in), and
returns a :class:`~bureau.labs.leakage.result.LabResult` (defined in :mod:`bureau.labs.leakage.result`,
which policy e's module can import without importing this one).

A card a requester receives is mapped back to its item by card id (its own space) or by
``source_id`` (a board copy). Item ``i`` counts as *retrieved* for requester ``r`` when one of
the top-k cards of one of ``r``'s scopes maps to ``i`` (top-k only, no relevance threshold;
:data:`~bureau.labs.leakage.policies.policies.DEFAULT_THRESHOLD` gives a second, stricter reading in the
report). An abstraction card maps to its private item as ``variant="abstraction"`` and is
counted as an abstraction delivered, never as the item.

Scores: the relevance of a (requester, item) pair is the cosine of the requester's query vector
and the item's vector, computed in numpy for every pair (retrieved or not) and for every query
variant (``score`` = the asked ``own_job`` query, ``score_task``, ``score_role_task``), so the
relevance AUROC does not depend on which pairs a store happened to return.

Exhaustive boundary probe: the headline "0 leaked pairs" of b-d rests on one query per requester,
which could miss a card a better question would reach. So in the final state (d) every requester
also asks, through ``Case.retrieve(role, text, limit=PROBE_LIMIT)``, with the text of every other
agent's private item as the question, over every space it can read (``Case.scopes_for``); a
returned card that is (or is a board copy of, or has the body of) another agent's private item is
a hit. The limit exceeds any scenario's card count, so each probe returns every readable card.
The probe texts are item texts the lab already embedded and are handed down with
:func:`~bureau.embedding.given_vectors`, so nothing is embedded twice.

Random baseline: every pair carries ``pool_size``, the size of the one scope through which the
pair's item could reach the requester under that policy (0: no readable scope holds it), so
:func:`bureau.labs.leakage.metrics.metrics.random_draw_probability` gives the chance a uniform draw of the
same budget would have returned it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bureau.embedding import given_vectors
from bureau.labs.leakage.datasets.convert import to_lab
from bureau.labs.leakage.datasets.labset import LabItem, LabScenario, LabSet
from bureau.labs.leakage.datasets.magpie import MagpieDataset
from bureau.labs.leakage.metrics.metrics import exposure_frame
from bureau.labs.leakage.pipeline import busy_cores, one_steps_back, scenario_texts, shares
from bureau.labs.leakage.pipeline import groups as embedding_groups
from bureau.labs.leakage.policies.measured import CATEGORY_TEXTS, content_scores
from bureau.labs.leakage.policies.mediated import lab_mediator, run_mediated
from bureau.labs.leakage.policies.policies import (
    DEFAULT_K,
    POLICIES,
    PROBE_LIMIT,
    SHARED_POOL,
    SHARED_POOL_WITH_OWN,
)
from bureau.labs.leakage.policies.shared_pool import shared_pool, topk
from bureau.labs.leakage.result import DECISION_COLUMNS, PROBE_COLUMNS, LabResult, Timings
from bureau.model import BOARD, MemoryCard
from bureau.quotas import lifted
from bureau.settings import LIMIT_RANGE, check_limit

if TYPE_CHECKING:
    from bureau.service import Bureau

RETRIEVAL_COLUMNS = (
    "policy", "scenario_id", "requester", "scope", "rank", "card_id", "card_owner", "kind",
    "source_id", "item_id", "variant", "item_owner", "item_label", "score", "cosine", "content",
)
REQUEST_COLUMNS = (
    "policy", "scenario_id", "requester", "role", "request_id", "scopes", "returned",
)
SCORE_COLUMNS = (
    "scenario_id", "requester", "item_id", "score", "score_task", "score_role_task",
    "pool_rank_with_own", "pool_rank_others", "pool_size_with_own", "pool_size_others",
)
"""Query variant -> the pair column holding its cosine."""
MAX_K = LIMIT_RANGE[1]
"""Top-k is a retrieval depth, not a dump: above this a run measures nothing a user would see."""


# --- the run -------------------------------------------------------------------------------------


def as_lab(data: LabSet | MagpieDataset) -> LabSet:
    """``data`` as a lab set: converted scenarios pass through, MAGPIE is converted."""
    return data if isinstance(data, LabSet) else to_lab(data)


def lab_texts(data: LabSet | MagpieDataset) -> tuple[list[str], dict[tuple[str, str], str]]:
    """Every distinct text the lab embeds (items, queries, abstractions, the content mediator's
    category descriptions), and the queries."""
    lab = as_lab(data)
    queries = {(s.scenario_id, a.name): a.query for s in lab.scenarios for a in s.agents}
    texts: list[str] = []
    for scenario in lab.scenarios:
        texts += scenario_texts(scenario)
    texts += CATEGORY_TEXTS  # the content mediator's category descriptions, embedded once
    return list(dict.fromkeys(texts)), queries


Progress = Callable[[Iterable[Any], int], Iterable[Any]]


def _no_progress(it: Iterable[Any], total: int) -> Iterable[Any]:
    return it


def run_lab(
    bureau: Bureau,
    data: LabSet | MagpieDataset,
    k: int = DEFAULT_K,
    progress: Progress | None = None,
    cleanup: bool = False,
    pipeline: bool = True,
    mediator: Any | None = None,
) -> LabResult:
    """Run policies a-d on every scenario of ``data`` with ``bureau``'s store and encoder
    (one benchmark: :func:`run_labs` with one lab set)."""
    return run_labs(bureau, [data], k, progress, cleanup, pipeline, mediator)[0]


def run_labs(
    bureau: Bureau,
    labs: Sequence[LabSet | MagpieDataset],
    k: int = DEFAULT_K,
    progress: Progress | None = None,
    cleanup: bool = False,
    pipeline: bool = True,
    mediator: Any | None = None,
) -> list[LabResult]:
    """Run policies a-d on every scenario of each lab set, one lab after the other, with
    ``bureau``'s store and encoder; one result per lab set, in order.

    Every distinct text is embedded once, group by group ahead of the storage work, by as many
    background threads as the encoder has workers, and every policy reuses those vectors: the
    Bureau's writes and searches hit the encoder's cache. The groups of every lab set form one
    stream, so the next benchmark's texts are embedded while this one's storage work finishes
    (``pipeline=False``: every text first, then the storage work). Creates one case per
    scenario (kept unless ``cleanup``: deleting ~30 cards per case costs about as much as
    writing them). ``progress(iterable, total)`` wraps each lab's scenario loop. ``mediator``:
    what policy e consults (default: the lab policy,
    :func:`~bureau.labs.leakage.policies.mediated.lab_mediator`); the bureau's own is restored afterwards.

    Each result's ``timings.total`` runs from the end of the previous lab (the first: from
    this call) to its own end, so the totals add up to the call's wall time; the encoder's
    counters are read over the same windows (the next lab's first texts may count in this one's).
    """
    k = check_limit(k, "k")  # the Bureau's own per-scope limit check
    sets = [as_lab(data) for data in labs]
    progress = progress or _no_progress
    start = time.perf_counter()
    enc = bureau.encoder
    texts = [lab_texts(lab) for lab in sets]
    if hasattr(enc, "reserve_cache"):  # every vector must still be cached when PowerMem asks
        enc.reserve_cache(sum(len(x) for x, _ in texts) + 1024)

    # Each group is split into one share per worker, and every worker embeds its share of the
    # same group on one thread (single-threaded model runs): groups are done one after the
    # other, each in about the time its share takes, so the storage thread gets an even stream.
    # Whole groups side by side on the workers finished in pairs, each after twice that: the
    # storage thread waited with nothing to do, then had two groups to store at once and
    # finished alone after the last vector (issue 31 §4: the full lab's last ~25 s on one core).
    # (An encoder with a ``workers`` attribute takes ``embed(texts, workers=...)``.)
    workers = int(getattr(enc, "workers", 1))

    def embed(share: list[str]) -> dict[str, np.ndarray]:
        vecs = enc.embed(share, workers=1) if workers > 1 else enc.embed(share)
        return dict(zip(share, vecs, strict=True))

    def submit(pool: ThreadPoolExecutor, group: list[LabScenario]) -> list[Future[Any]]:
        return [pool.submit(embed, share) for share in shares(group, workers)]

    counters = _encoder_counters(enc)
    chunks = [embedding_groups(lab.scenarios, taper=i == len(sets) - 1) if pipeline
              else [list(lab.scenarios)] for i, lab in enumerate(sets)]
    results: list[LabResult] = []
    # Policy e consults this mediator; b-d never consult, so it changes nothing for them.
    saved, bureau.mediator = bureau.mediator, mediator or lab_mediator()
    # A lab asks thousands of times on purpose: the classroom quotas are lifted for the run.
    # On a quiet machine one embedding thread steps back (one_steps_back): the storage work
    # keeps pace instead of finishing alone on one core after the last text is embedded.
    busy = busy_cores()
    spare = one_steps_back(busy)
    with lifted(bureau), ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lab-embed",
                                            initializer=spare) as pool:
        futures = [[submit(pool, group) for group in groups] for groups in chunks]
        every = [f for fs in futures for group in fs for f in group]
        try:
            if not pipeline:  # every vector first, then the storage work
                wait(every)
            for lab, (lab_text, queries), groups, lab_futures in zip(
                    sets, texts, chunks, futures, strict=True):
                result, counters = _run_one(bureau, lab, lab_text, queries, groups,
                                            lab_futures, k, progress, cleanup, start, counters)
                results.append(result)
                start = time.perf_counter()
        finally:
            bureau.mediator = saved
            for future in every:
                future.cancel()
    for result in results:  # how the lab was scheduled: its figures read beside it
        result.timings.busy_at_start = -1.0 if busy is None else busy
        result.timings.stepped_back = int(spare is not None)
    return results


def _run_one(
    bureau: Bureau,
    lab: LabSet,
    texts: list[str],
    queries: dict[tuple[str, str], str],
    chunks: list[list[LabScenario]],
    futures: list[list[Future[dict[str, np.ndarray]]]],
    k: int,
    progress: Progress,
    cleanup: bool,
    start: float,
    before: tuple[int, int, float],
) -> tuple[LabResult, tuple[int, int, float]]:
    """One lab set's storage work, group by group as its vectors arrive (:func:`run_labs`);
    returns its result and the encoder's counters at its end (where the next window starts)."""
    t = Timings()
    enc = bureau.encoder
    t.distinct_texts = len(texts)
    vec: dict[str, np.ndarray] = {}
    rows: list[tuple[Any, ...]] = []
    requests: list[tuple[Any, ...]] = []
    scores: list[tuple[Any, ...]] = []
    probes: list[tuple[Any, ...]] = []
    decisions: list[tuple[Any, ...]] = []
    audited = 0
    engine = {"queries": 0, "same_topk": 0, "max_score_diff": 0.0}
    case_ids: dict[str, str] = {}
    bar = iter(progress(lab.scenarios, len(lab.scenarios)))
    for group, dealt in zip(chunks, futures, strict=True):
        t0 = time.perf_counter()
        for future in dealt:
            vec.update(future.result())
        t.embed_wait += time.perf_counter() - t0
        for scenario in group:
            next(bar, None)
            scores += shared_pool(scenario, vec, k, rows, t)
            case_id = f"{scenario.case_stem}-{uuid.uuid4().hex[:5]}"
            case_ids[scenario.scenario_id] = case_id
            case_rows, case_audited = _run_bureau_case(
                bureau, scenario, case_id, vec, k, t, engine, requests, probes, decisions)
            rows += case_rows
            audited += case_audited
            if cleanup:
                bureau.delete_case(case_id)
    next(bar, None)  # let a progress bar close

    t0 = time.perf_counter()
    content = content_scores(enc, lab, vec)  # the content mediator's scores, labels hidden
    retrievals = pd.DataFrame(rows, columns=list(RETRIEVAL_COLUMNS))
    score_frame = pd.DataFrame(scores, columns=list(SCORE_COLUMNS))
    pairs = _pairs(lab, retrievals, score_frame)
    t.frames = time.perf_counter() - t0

    engine_check: dict[str, float | int] = dict(engine)
    engine_check["agreement"] = (
        engine["same_topk"] / engine["queries"] if engine["queries"] else float("nan")
    )
    result = LabResult(
        lab=lab,
        k=k,
        pairs=pairs,
        retrievals=retrievals,
        requests=pd.DataFrame(requests, columns=list(REQUEST_COLUMNS)),
        queries=queries,
        texts=texts,
        timings=t,
        engine_check=engine_check,
        case_ids=case_ids,
        query_tokens=_query_tokens(enc, queries),
        probe=pd.DataFrame(probes, columns=list(PROBE_COLUMNS)),
        mediated=pd.DataFrame(decisions, columns=list(DECISION_COLUMNS)),
        audit_entries=audited,
        content=content,
    )
    after = _encoder_counters(enc)
    t.texts_embedded = after[0] - before[0]
    t.tokens_embedded = after[1] - before[1]
    t.encoder_seconds = after[2] - before[2]
    t.total = time.perf_counter() - start  # timings is the result's own object
    return result, after


def _query_tokens(enc: Any, queries: dict[tuple[str, str], str]) -> dict[tuple[str, str], int]:
    """Token count of each asked query with the encoder's own tokenizer, truncation off."""
    tokenizer = getattr(enc, "tokenizer", None)
    if tokenizer is None or not queries:
        return {}
    from tokenizers import Tokenizer

    untruncated = Tokenizer.from_str(tokenizer.to_str())
    untruncated.no_truncation()
    untruncated.no_padding()
    keys = list(queries)
    encodings = untruncated.encode_batch([queries[key] for key in keys])
    return {key: len(e.ids) for key, e in zip(keys, encodings, strict=True)}


def _encoder_counters(enc: Any) -> tuple[int, int, float]:
    """(texts, tokens, busy seconds so far, counting a batch still running up to now)."""
    busy = getattr(enc, "busy_seconds", None)
    return (
        int(getattr(enc, "texts_embedded", 0)),
        int(getattr(enc, "tokens_embedded", 0)),
        float(busy() if callable(busy) else getattr(enc, "seconds", 0.0)),
    )


def _run_bureau_case(
    bureau: Bureau,
    scenario: LabScenario,
    case_id: str,
    vec: dict[str, np.ndarray],
    k: int,
    t: Timings,
    engine: dict[str, Any],
    requests: list[tuple[Any, ...]],
    probes: list[tuple[Any, ...]],
    decisions: list[tuple[Any, ...]],
) -> tuple[list[tuple[Any, ...]], int]:
    """Policies b, c and d: one case, asked after each of its three successive states, then
    probed exhaustively in the last one; policy e (mediated) in state b, probed there. Returns
    the retrieval rows and the case's audited decisions (:func:`run_mediated`)."""
    t0 = time.perf_counter()
    case = bureau.create_case(scenario.scenario, case_id=case_id)
    by_key = {item.seed_key: item for item in scenario.items}
    # Card id -> (item, variant) for every private card this lab wrote; board copies map back
    # through their source_id, never through their content.
    origin: dict[str, tuple[LabItem, str]] = {}
    seeded: dict[str, MemoryCard] = {}
    for card in [c for cards in case.spaces().values() for c in cards]:
        if card.seed_key in by_key:
            origin[card.id] = (by_key[card.seed_key], "item")
            seeded[by_key[card.seed_key].item_id] = card
    if len(seeded) != len(scenario.items):
        raise RuntimeError(f"case {case.id}: {len(seeded)} of {len(scenario.items)} cards seeded")
    t.cards_written += len(seeded)
    t.seed += time.perf_counter() - t0

    rows = _ask_all(case, scenario, vec, origin, k, "b_bureau_closed", t, requests)
    mediated_rows, audited = run_mediated(case, scenario, vec, origin, k, t)
    decisions += mediated_rows

    t0 = time.perf_counter()
    for item in scenario.items:
        if item.label == "shareable":
            card = seeded[item.item_id]
            case.publish(scenario.role_of(item.owner), card.id)
            t.cards_written += 1
    t.publish += time.perf_counter() - t0
    asked = _ask_all(case, scenario, vec, origin, k, "c_bureau_published", t, requests)
    _engine_check(case, scenario, vec, k, asked, engine)
    rows += asked

    t0 = time.perf_counter()
    for item in scenario.items:
        if item.abstraction:
            role = scenario.role_of(item.owner)
            note = case.whisper(role, item.abstraction, topic="safe-abstraction",
                                kind="abstraction")
            origin[note.id] = (item, "abstraction")
            case.publish(role, note.id)
            t.cards_written += 2
    t.abstractions += time.perf_counter() - t0
    rows += _ask_all(case, scenario, vec, origin, k, "d_bureau_abstractions", t, requests)
    probes += _probe(case, scenario, vec, origin, t)
    return rows, audited


def _probe(
    case: Any,
    scenario: LabScenario,
    vec: dict[str, np.ndarray],
    origin: dict[str, tuple[LabItem, str]],
    t: Timings,
) -> list[tuple[Any, ...]]:
    """The exhaustive boundary probe (module docstring): every requester asks with every other
    agent's private item text, limit :data:`PROBE_LIMIT` per scope, over every scope it can read.

    A hit is matched two ways, so neither a mapping bug nor a copied body can hide one: the
    card's id or ``source_id`` maps to another agent's private item, or its body equals one.
    """
    t0 = time.perf_counter()
    out = []
    for agent in scenario.agents:
        secrets = [i for i in scenario.items if i.label == "private" and i.owner != agent.name]
        secret_texts = {i.text for i in secrets}
        readable = case.scopes_for(agent.role)
        hits = returned = widest = 0
        as_listed = True
        for item in secrets:
            with given_vectors(vec):
                trace = case.retrieve(agent.role, item.text, limit=PROBE_LIMIT)
            as_listed &= list(trace.searched_scopes) == list(readable)
            for scope in trace.scopes:
                cards = [*scope.hits, *scope.below_threshold]
                returned += len(cards)
                widest = max(widest, len(cards))
                for card in cards:
                    source = card.source_id if card.owner == BOARD else card.id
                    hit, variant = origin.get(source or "", (None, "unknown"))
                    by_id = (hit is not None and variant == "item" and hit.label == "private"
                             and hit.owner != agent.name)
                    hits += int(by_id or card.content in secret_texts)
        t.probes += len(secrets)
        t.searches += len(secrets) * len(readable)
        out.append((scenario.scenario_id, agent.name, agent.role, "+".join(readable),
                    len(secrets), hits, returned, widest, as_listed))
    t.probe += time.perf_counter() - t0
    return out


def _ask_all(
    case: Any,
    scenario: LabScenario,
    vec: dict[str, np.ndarray],
    origin: dict[str, tuple[LabItem, str]],
    k: int,
    policy: str,
    t: Timings,
    requests: list[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    """Every requester asks its query through ``Case.retrieve``; one row per returned card.

    Query vectors never come from the shared cache (a timing side channel); the lab hands down
    the vectors it embedded itself, so each question is embedded once, not once per policy.
    """
    t0 = time.perf_counter()
    rows = []
    for agent in scenario.agents:
        with given_vectors(vec):
            trace = case.retrieve(agent.role, agent.query, limit=k)
        t.searches += len(trace.scopes)
        requests.append(
            (policy, scenario.scenario_id, agent.name, agent.role, trace.request_id,
             "+".join(trace.searched_scopes),
             sum(len(s.hits) + len(s.below_threshold) for s in trace.scopes))
        )
        for scope in trace.scopes:
            returned = sorted([*scope.hits, *scope.below_threshold], key=lambda c: -(c.score or 0))
            for rank, card in enumerate(returned, start=1):
                source = card.source_id if card.owner == BOARD else card.id
                item, variant = origin.get(source or "", (None, "unknown"))
                cosine = (float(vec[agent.query] @ vec[card.content]) if card.content in vec
                          else np.nan)
                rows.append(
                    (policy, scenario.scenario_id, agent.name, scope.scope, rank, card.id,
                     card.owner, card.kind, card.source_id, item.item_id if item else None,
                     variant, item.owner if item else None, item.label if item else None,
                     float(card.score or 0.0), cosine, card.content)
                )
    t.retrieve += time.perf_counter() - t0
    return rows


def _engine_check(
    case: Any,
    scenario: LabScenario,
    vec: dict[str, np.ndarray],
    k: int,
    asked: list[tuple[Any, ...]],
    engine: dict[str, Any],
) -> None:
    """Does numpy's exact top-k over the board equal what seekdb returned (policy c)?

    Policy a is computed in numpy; this compares the two engines on the same cards and queries.
    """
    board = case.spaces()[BOARD]
    if not board:
        return
    board_vecs = np.stack([vec[c.content] for c in board])
    col = {name: i for i, name in enumerate(RETRIEVAL_COLUMNS)}
    for agent in scenario.agents:
        cos = board_vecs @ vec[agent.query]
        exact = {board[j].id: float(cos[j]) for j in topk(cos, k)}
        got = {
            r[col["card_id"]]: r[col["score"]]
            for r in asked
            if r[col["requester"]] == agent.name and r[col["scope"]] == BOARD
        }
        engine["queries"] += 1
        engine["same_topk"] += int(set(exact) == set(got))  # order may differ among exact ties
        for card_id, score in got.items():
            diff = abs(exact.get(card_id, float("nan")) - score)
            engine["max_score_diff"] = max(engine["max_score_diff"], diff if diff == diff else 1.0)


def _pairs(lab: LabSet, retrievals: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """The exposure grid of each policy with retrieved / rank / abstraction flags, scores and
    the pool size behind the random baseline (module docstring)."""
    grid = exposure_frame(lab.to_frame(), requesters=lab.requester_frame()).drop(columns="score")
    grid = grid.merge(scores, on=["scenario_id", "requester", "item_id"], how="left")
    key = ["scenario_id", "requester", "item_id"]
    got = retrievals.dropna(subset=["item_id"])
    boards = _board_sizes(lab)
    frames = []
    for policy in POLICIES:
        mine = got[got["policy"] == policy]
        items = mine[mine["variant"] == "item"].groupby(key)["rank"].min().rename("rank")
        abstr = mine[mine["variant"] == "abstraction"].groupby(key).size().rename("n_abs")
        frame = grid.merge(items, left_on=key, right_index=True, how="left")
        frame = frame.merge(abstr, left_on=key, right_index=True, how="left")
        frame["retrieved"] = frame["rank"].notna()
        frame["abstraction_retrieved"] = frame["n_abs"].fillna(0) > 0
        if policy == SHARED_POOL_WITH_OWN:
            frame["pool_rank"], frame["pool_size"] = frame["pool_rank_with_own"], frame[
                "pool_size_with_own"]
        elif policy == SHARED_POOL:
            frame["pool_rank"], frame["pool_size"] = frame["pool_rank_others"], frame[
                "pool_size_others"]
        else:  # another agent's item reaches a requester only as a board copy (c, d: shareable)
            frame["pool_rank"] = np.nan
            board = frame["scenario_id"].map(boards[policy]).fillna(0)
            frame["pool_size"] = board.where(frame["label"] == "shareable", 0).astype(int)
        frames.append(frame.drop(columns="n_abs").assign(policy=policy))
    out = pd.concat(frames, ignore_index=True)
    cols = ["policy", "scenario_id", "domain", "requester", "item_id", "owner", "label",
            "retrieved", "score", "score_task", "score_role_task", "rank",
            "abstraction_retrieved", "pool_rank", "pool_size"]
    return out[cols]


def _board_sizes(lab: LabSet) -> dict[str, dict[str, int]]:
    """Policy -> scenario id -> cards on the board in that state: nothing (b), every shareable
    item (c), and every abstraction as well (d)."""
    shareable = {s.scenario_id: sum(i.label == "shareable" for i in s.items) for s in lab.scenarios}
    abstractions = {s.scenario_id: sum(bool(i.abstraction) for i in s.items)
                    for s in lab.scenarios}
    return {
        "b_bureau_closed": dict.fromkeys(shareable, 0),
        "c_bureau_published": shareable,
        "d_bureau_abstractions": {sid: n + abstractions[sid] for sid, n in shareable.items()},
    }


def leaked_contents(result: LabResult, policy: str) -> pd.DataFrame:
    """Returned cards whose text equals a private item of an agent other than the requester.

    Independent of the id mapping: compares bodies, so a mapping bug cannot hide a leak.
    """
    private = result.lab.to_frame()
    private = private[private["label"] == "private"][["scenario_id", "agent", "text"]]
    got = result.retrievals[result.retrievals["policy"] == policy]
    hits = got.merge(private, left_on=["scenario_id", "content"],
                     right_on=["scenario_id", "text"])
    return hits[hits["agent"] != hits["requester"]]
