"""The leakage lab: MAGPIE scenarios run through four memory policies with one embedder.

Every MAGPIE scenario becomes a Bureau case: each agent a role, each private item a private card,
each shareable item a private card its owner may publish. One query per requester agent
(:func:`query_text`) is asked under four policies:

``a_shared_pool``
    One store, one scope: every agent's items together, ranked by relevance alone (the
    anti-pattern). Computed exactly in numpy over the same MiniLM vectors the Bureau stores, so
    it needs no second copy of every card in seekdb; :attr:`LabResult.engine_check` compares the
    numpy ranking with seekdb's on the same board contents (policy c) to show the two agree.
``b_bureau_closed``
    The real Bureau on embedded seekdb, nothing published: a requester searches its own space
    and the (empty) board.
``c_bureau_published``
    As b after every owner published each of its shareable items (``Case.publish``).
``d_bureau_abstractions``
    As c, plus for every private item with a safe abstraction (the MAGPIE hint rule in
    :mod:`bureau.leakage.magpie`) the owner whispers the abstraction into its own space as kind
    ``abstraction`` and publishes that card; the private item itself stays private.

b, c and d are three successive states of one case per scenario. A card a requester receives is
mapped back to its MAGPIE item by card id (its own space) or by ``source_id`` (a board copy).
Item ``i`` counts as *retrieved* for requester ``r`` when one of the top-k cards of one of ``r``'s
scopes maps to ``i`` (top-k only, no relevance threshold; :data:`DEFAULT_THRESHOLD` gives a
second, stricter reading in the report). An abstraction card maps to its private item as
``variant="abstraction"`` and is counted as an abstraction delivered, never as the item.

Scores: the relevance of a (requester, item) pair is the cosine of the requester's query vector
and the item's vector, computed in numpy for every pair (retrieved or not), so the relevance
AUROC does not depend on which pairs a store happened to return.
"""

from __future__ import annotations

import re
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bureau.embedding import given_vectors
from bureau.leakage.magpie import MagpieAgent, MagpieDataset, MagpieItem, MagpieScenario
from bureau.leakage.metrics import exposure_frame
from bureau.model import BOARD, MemoryCard
from bureau.scenario import Scenario, parse_scenario
from bureau.text import MAX_CARD_CHARS, MAX_QUESTION_CHARS

if TYPE_CHECKING:
    from bureau.service import Bureau

POLICIES: dict[str, str] = {
    "a_shared_pool": "shared pool: one scope, relevance only",
    "b_bureau_closed": "bureau boundary, nothing published",
    "c_bureau_published": "bureau boundary, shareable items published",
    "d_bureau_abstractions": "as c + safe abstractions of hint items published",
}
POLICY_LABELS: dict[str, str] = {
    "a_shared_pool": "a: shared pool",
    "b_bureau_closed": "b: bureau, nothing published",
    "c_bureau_published": "c: bureau + shareable published",
    "d_bureau_abstractions": "d: c + safe abstractions",
}
BUREAU_POLICIES = ("b_bureau_closed", "c_bureau_published", "d_bureau_abstractions")
DEFAULT_K = 5
DEFAULT_THRESHOLD = 0.45
"""The Bureau's default relevance threshold (Settings.relevance_threshold): the stricter reading."""

QUERY_TEMPLATE = "{role}: {task}"
"""One query per requester: its MAGPIE role (the agent name if the role is empty), a colon and a
space, then the scenario task; whitespace collapsed to single spaces; if longer than
MAX_QUESTION_CHARS (500, the Bureau's question limit) cut at the last space at or before 500."""

RETRIEVAL_COLUMNS = (
    "policy", "scenario_id", "requester", "scope", "rank", "card_id", "card_owner", "kind",
    "source_id", "item_id", "variant", "item_owner", "item_label", "score", "cosine", "content",
)
REQUEST_COLUMNS = (
    "policy", "scenario_id", "requester", "role", "request_id", "scopes", "returned",
)


# --- MAGPIE -> Bureau ----------------------------------------------------------------------------


def query_text(scenario: MagpieScenario, agent: MagpieAgent) -> str:
    """The requester's query (see :data:`QUERY_TEMPLATE`)."""
    role = " ".join(agent.role.split()) or agent.name
    text = " ".join(QUERY_TEMPLATE.format(role=role, task=scenario.task).split())
    if len(text) > MAX_QUESTION_CHARS:
        text = text[: MAX_QUESTION_CHARS + 1].rsplit(" ", 1)[0].rstrip()
    return text


def slug(text: str, fallback: str, width: int = 32) -> str:
    """A Bureau name (``[a-z][a-z0-9_-]{0,31}``) from free text: ``Dr. Eleanor Vance`` ->
    ``dr_eleanor_vance``; accents folded, ``fallback`` if nothing usable is left."""
    ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    out = re.sub(r"[^a-z0-9]+", "_", ascii_.lower()).strip("_")[:width].rstrip("_")
    return out if out and out[0].isalpha() else fallback


def role_names(scenario: MagpieScenario) -> dict[str, str]:
    """Agent name -> unique role slug (``board`` is reserved, so an agent called Board is
    ``board_agent``; clashes get ``_2``, ``_3``...)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for n, agent in enumerate(scenario.agents, start=1):
        base = slug(agent.name, f"agent_{n}")
        base = "board_agent" if base == BOARD else base
        name, i = base, 1
        while name in used:
            i += 1
            name = f"{base[: 31 - len(str(i))]}_{i}"
        used.add(name)
        out[agent.name] = name
    return out


def _clip(text: str, limit: int) -> str:
    text = "".join(ch for ch in " ".join(text.split()) if unicodedata.category(ch)[0] != "C")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def seed_key(n: int) -> str:
    """The seed-memory key of the scenario's ``n``-th item (file order)."""
    return f"m{n:03d}"


def to_bureau_scenario(scenario: MagpieScenario) -> Scenario:
    """The MAGPIE scenario as a Bureau :class:`Scenario` (validated like a file).

    Roles are agents (slug names, title = MAGPIE role); every item is a seed memory of its owner
    with key ``m000``, ``m001``... in file order, ``kind`` = the MAGPIE label (``shareable`` or
    ``private``) and ``topic`` = a slug of the MAGPIE key. The task is the summary.
    """
    roles = role_names(scenario)
    memories: dict[str, list[dict[str, str]]] = {roles[a.name]: [] for a in scenario.agents}
    n = 0
    for agent in scenario.agents:
        for item in agent.items:
            memories[roles[agent.name]].append(
                {
                    "key": seed_key(n),
                    "topic": slug(item.key, "item"),
                    "kind": item.label,
                    "content": _clip(item.text, MAX_CARD_CHARS),
                }
            )
            n += 1
    data: dict[str, Any] = {
        "id": slug(scenario.scenario_id, "magpie"),
        "title": _clip(f"MAGPIE {scenario.scenario_id}", 120),
        "summary": _clip(scenario.task, MAX_CARD_CHARS),
        "roles": [
            {
                "name": roles[a.name],
                "title": _clip(a.role or a.name, 120),
                "description": _clip(a.description, MAX_CARD_CHARS),
            }
            for a in scenario.agents
        ],
        "memories": memories,
    }
    return parse_scenario(data)


def subset(dataset: MagpieDataset, limit: int | None) -> MagpieDataset:
    """``limit`` scenarios spread evenly over the id-sorted list (so domains vary), or all."""
    n = len(dataset.scenarios)
    if limit is None or limit >= n:
        return dataset
    if limit < 1:
        raise ValueError("limit must be at least 1")
    picks = sorted({int(round(i)) for i in np.linspace(0, n - 1, limit)})
    scenarios = tuple(dataset.scenarios[i] for i in picks)
    items = tuple(i for s in scenarios for i in s.items)
    return MagpieDataset(scenarios=scenarios, items=items, source=dataset.source)


# --- results -------------------------------------------------------------------------------------


@dataclass
class Timings:
    """Where the lab's wall time went (seconds) and what the encoder did during it."""

    total: float = 0.0
    embed_wait: float = 0.0
    shared_pool: float = 0.0
    seed: float = 0.0
    publish: float = 0.0
    abstractions: float = 0.0
    retrieve: float = 0.0
    frames: float = 0.0
    distinct_texts: int = 0
    texts_embedded: int = 0
    tokens_embedded: int = 0
    encoder_seconds: float = 0.0
    cards_written: int = 0
    searches: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


@dataclass
class LabResult:
    """Everything one run measured.

    ``pairs``: the exposure table (:mod:`bureau.leakage.metrics` schema) of every policy, plus
    ``policy``, ``rank`` (1-based rank in the scope that returned the item, NaN if not returned),
    ``abstraction_retrieved`` (policy d: the item's safe abstraction reached the requester) and
    ``pool_rank`` (the pair's rank in the requester's shared pool, own items included: policy a
    at any k is ``pool_rank <= k``).
    ``retrievals``: every card every query returned (:data:`RETRIEVAL_COLUMNS`).
    ``requests``: one row per ``Case.retrieve`` call of policies b-d (:data:`REQUEST_COLUMNS`).
    """

    dataset: MagpieDataset
    k: int
    pairs: pd.DataFrame
    retrievals: pd.DataFrame
    requests: pd.DataFrame
    queries: dict[tuple[str, str], str]
    texts: list[str]
    timings: Timings
    engine_check: dict[str, float | int] = field(default_factory=dict)
    case_ids: dict[str, str] = field(default_factory=dict)

    def policy(self, name: str) -> pd.DataFrame:
        """The exposure table of one policy (metrics functions take it as is)."""
        return self.pairs[self.pairs["policy"] == name].drop(columns="policy")


# --- the run -------------------------------------------------------------------------------------


def lab_texts(dataset: MagpieDataset) -> tuple[list[str], dict[tuple[str, str], str]]:
    """Every distinct text the lab embeds (items, queries, abstractions), and the queries."""
    queries = {(s.scenario_id, a.name): query_text(s, a) for s in dataset.scenarios for a in s.agents}
    texts: list[str] = []
    for scenario in dataset.scenarios:
        texts += _scenario_texts(scenario, queries)
    return list(dict.fromkeys(texts)), queries


def _scenario_texts(scenario: MagpieScenario, queries: dict[tuple[str, str], str]) -> list[str]:
    texts = [i.text for i in scenario.items]
    texts += [queries[(scenario.scenario_id, a.name)] for a in scenario.agents]
    texts += [i.abstraction for i in scenario.items if i.abstraction]
    return texts


def _chunks(scenarios: Sequence[MagpieScenario], first: int = 1, cap: int = 8) -> list[list[MagpieScenario]]:
    """Scenario groups for the embedding pipeline: 1, 2, 4, 8, 8, ... scenarios.

    A small first group lets storage start early; later groups are big enough for well-filled,
    length-sorted batches.
    """
    out, i, size = [], 0, first
    while i < len(scenarios):
        out.append(list(scenarios[i : i + size]))
        i += size
        size = min(size * 2, cap)
    return out


Progress = Callable[[Iterable[Any], int], Iterable[Any]]


def _no_progress(it: Iterable[Any], total: int) -> Iterable[Any]:
    return it


def run_lab(
    bureau: Bureau,
    dataset: MagpieDataset,
    k: int = DEFAULT_K,
    progress: Progress | None = None,
    cleanup: bool = False,
    pipeline: bool = True,
) -> LabResult:
    """Run policies a-d on every scenario of ``dataset`` with ``bureau``'s store and encoder.

    Every distinct text is embedded once, group by group ahead of the storage work, by as many
    background threads as the encoder has workers (``pipeline=False``: all up front, then
    storage), and every policy reuses those vectors: the Bureau's writes and searches hit the
    encoder's cache. Creates one case per
    scenario (kept unless ``cleanup``: deleting ~30 cards per case costs about as much as
    writing them). ``progress(iterable, total)`` wraps the scenario loop.
    """
    if not 1 <= k <= 100:
        raise ValueError("k must lie between 1 and 100")
    progress = progress or _no_progress
    t = Timings()
    start = time.perf_counter()
    enc = bureau.encoder
    texts, queries = lab_texts(dataset)
    t.distinct_texts = len(texts)
    if hasattr(enc, "reserve_cache"):  # every vector must still be cached when PowerMem asks
        enc.reserve_cache(len(texts) + 1024)
    before = _encoder_counters(enc)

    chunks = _chunks(dataset.scenarios) if pipeline else [list(dataset.scenarios)]
    vec: dict[str, np.ndarray] = {}
    rows: list[tuple[Any, ...]] = []
    requests: list[tuple[Any, ...]] = []
    scores: list[tuple[str, str, str, float, int]] = []
    engine = {"queries": 0, "same_topk": 0, "max_score_diff": 0.0}
    case_ids: dict[str, str] = {}

    # Groups are embedded side by side, each on one thread with single-threaded model runs: no
    # thread waits at a group's end for the other's last (longest) batch, and a core the store
    # takes for a moment slows one group instead of every operator.
    # (An encoder with a ``workers`` attribute takes ``embed(texts, workers=...)``.)
    workers = int(getattr(enc, "workers", 1))

    def embed(group: list[MagpieScenario]) -> dict[str, np.ndarray]:
        todo = list(dict.fromkeys(x for s in group for x in _scenario_texts(s, queries)))
        vecs = enc.embed(todo, workers=1) if workers > 1 else enc.embed(todo)
        return dict(zip(todo, vecs, strict=True))

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lab-embed") as pool:
        futures = [pool.submit(embed, group) for group in chunks]  # started in order
        try:
            bar = iter(progress(dataset.scenarios, len(dataset.scenarios)))
            for group, future in zip(chunks, futures, strict=True):
                t0 = time.perf_counter()
                vec.update(future.result())
                t.embed_wait += time.perf_counter() - t0
                for scenario in group:
                    next(bar, None)
                    scores += _shared_pool(scenario, queries, vec, k, rows, t)
                    case_id = _case_id(scenario)
                    case_ids[scenario.scenario_id] = case_id
                    rows += _run_bureau_case(bureau, scenario, case_id, queries, vec, k, t,
                                             engine, requests)
                    if cleanup:
                        bureau.delete_case(case_id)
            next(bar, None)  # let a progress bar close
        finally:
            for future in futures:
                future.cancel()

    t0 = time.perf_counter()
    retrievals = pd.DataFrame(rows, columns=list(RETRIEVAL_COLUMNS))
    score_frame = pd.DataFrame(
        scores, columns=["scenario_id", "requester", "item_id", "score", "pool_rank"]
    )
    pairs = _pairs(dataset, retrievals, score_frame)
    t.frames = time.perf_counter() - t0

    after = _encoder_counters(enc)
    t.texts_embedded = after[0] - before[0]
    t.tokens_embedded = after[1] - before[1]
    t.encoder_seconds = after[2] - before[2]
    t.total = time.perf_counter() - start
    engine_check: dict[str, float | int] = dict(engine)
    engine_check["agreement"] = (
        engine["same_topk"] / engine["queries"] if engine["queries"] else float("nan")
    )
    return LabResult(
        dataset=dataset,
        k=k,
        pairs=pairs,
        retrievals=retrievals,
        requests=pd.DataFrame(requests, columns=list(REQUEST_COLUMNS)),
        queries=queries,
        texts=texts,
        timings=t,
        engine_check=engine_check,
        case_ids=case_ids,
    )


def _shared_pool(
    scenario: MagpieScenario,
    queries: dict[tuple[str, str], str],
    vec: dict[str, np.ndarray],
    k: int,
    rows: list[tuple[Any, ...]],
    t: Timings,
) -> list[tuple[str, str, str, float, int]]:
    """Policy a: one pool of every agent's items, exact cosine top-k in numpy.

    Appends the returned items to ``rows``; returns the cosine of every (requester, other
    agent's item) pair -- the relevance scores the AUROC is computed from -- and the item's rank
    in the requester's whole pool (own items included), so any other k can be read off.
    """
    t0 = time.perf_counter()
    scores = []
    items = list(scenario.items)
    item_vecs = np.stack([vec[i.text] for i in items])
    for agent in scenario.agents:
        q = queries[(scenario.scenario_id, agent.name)]
        cos = item_vecs @ vec[q]
        order = _topk(cos, len(items))
        rank_of = {int(j): r for r, j in enumerate(order, start=1)}
        for j, (item, c) in enumerate(zip(items, cos, strict=True)):
            if item.agent != agent.name:
                scores.append(
                    (scenario.scenario_id, agent.name, item.item_id, float(c), rank_of[j])
                )
        for rank, j in enumerate(order[:k], start=1):
            item = items[j]
            rows.append(
                ("a_shared_pool", scenario.scenario_id, agent.name, "pool", rank,
                 item.item_id, item.agent, item.label, None, item.item_id, "item",
                 item.agent, item.label, float(cos[j]), float(cos[j]), item.text)
            )
    t.shared_pool += time.perf_counter() - t0
    return scores


def _encoder_counters(enc: Any) -> tuple[int, int, float]:
    return (
        int(getattr(enc, "texts_embedded", 0)),
        int(getattr(enc, "tokens_embedded", 0)),
        float(getattr(enc, "seconds", 0.0)),
    )


def _topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; ties keep file order."""
    return np.argsort(-scores, kind="stable")[:k]


def _case_id(scenario: MagpieScenario) -> str:
    return f"mp-{slug(scenario.scenario_id, 'x', 24).replace('_', '-')}-{uuid.uuid4().hex[:5]}"


def _run_bureau_case(
    bureau: Bureau,
    scenario: MagpieScenario,
    case_id: str,
    queries: dict[tuple[str, str], str],
    vec: dict[str, np.ndarray],
    k: int,
    t: Timings,
    engine: dict[str, Any],
    requests: list[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    roles = role_names(scenario)
    t0 = time.perf_counter()
    case = bureau.create_case(to_bureau_scenario(scenario), case_id=case_id)
    by_key = {seed_key(n): item for n, item in enumerate(scenario.items)}
    # Card id -> (item, variant) for every private card this lab wrote; board copies map back
    # through their source_id, never through their content.
    origin: dict[str, tuple[MagpieItem, str]] = {}
    seeded: dict[str, MemoryCard] = {}
    for card in [c for cards in case.spaces().values() for c in cards]:
        if card.seed_key in by_key:
            origin[card.id] = (by_key[card.seed_key], "item")
            seeded[by_key[card.seed_key].item_id] = card
    if len(seeded) != len(scenario.items):
        raise RuntimeError(f"case {case.id}: {len(seeded)} of {len(scenario.items)} cards seeded")
    t.cards_written += len(seeded)
    t.seed += time.perf_counter() - t0

    ask = (case, scenario, roles, queries, vec, origin, k)
    rows = _ask_all(*ask, "b_bureau_closed", t, requests)

    t0 = time.perf_counter()
    for item in scenario.items:
        if item.label == "shareable":
            card = seeded[item.item_id]
            case.publish(roles[item.agent], card.id)
            t.cards_written += 1
    t.publish += time.perf_counter() - t0
    asked = _ask_all(*ask, "c_bureau_published", t, requests)
    _engine_check(bureau, case, scenario, queries, vec, k, asked, engine)
    rows += asked

    t0 = time.perf_counter()
    for item in scenario.items:
        if item.abstraction:
            role = roles[item.agent]
            note = case.whisper(role, item.abstraction, topic="safe-abstraction",
                                kind="abstraction")
            origin[note.id] = (item, "abstraction")
            case.publish(role, note.id)
            t.cards_written += 2
    t.abstractions += time.perf_counter() - t0
    rows += _ask_all(*ask, "d_bureau_abstractions", t, requests)
    return rows


def _ask_all(
    case: Any,
    scenario: MagpieScenario,
    roles: dict[str, str],
    queries: dict[tuple[str, str], str],
    vec: dict[str, np.ndarray],
    origin: dict[str, tuple[MagpieItem, str]],
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
        query = queries[(scenario.scenario_id, agent.name)]
        with given_vectors(vec):
            trace = case.retrieve(roles[agent.name], query, limit=k)
        t.searches += len(trace.scopes)
        requests.append(
            (policy, scenario.scenario_id, agent.name, roles[agent.name], trace.request_id,
             "+".join(trace.searched_scopes),
             sum(len(s.hits) + len(s.below_threshold) for s in trace.scopes))
        )
        for scope in trace.scopes:
            returned = sorted([*scope.hits, *scope.below_threshold], key=lambda c: -(c.score or 0))
            for rank, card in enumerate(returned, start=1):
                source = card.source_id if card.owner == BOARD else card.id
                item, variant = origin.get(source or "", (None, "unknown"))
                cosine = float(vec[query] @ vec[card.content]) if card.content in vec else np.nan
                rows.append(
                    (policy, scenario.scenario_id, agent.name, scope.scope, rank, card.id,
                     card.owner, card.kind, card.source_id, item.item_id if item else None,
                     variant, item.agent if item else None, item.label if item else None,
                     float(card.score or 0.0), cosine, card.content)
                )
    t.retrieve += time.perf_counter() - t0
    return rows


def _engine_check(
    bureau: Bureau,
    case: Any,
    scenario: MagpieScenario,
    queries: dict[tuple[str, str], str],
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
        cos = board_vecs @ vec[queries[(scenario.scenario_id, agent.name)]]
        exact = {board[j].id: float(cos[j]) for j in _topk(cos, k)}
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


def _pairs(
    dataset: MagpieDataset, retrievals: pd.DataFrame, scores: pd.DataFrame
) -> pd.DataFrame:
    """The exposure grid of each policy with retrieved / rank / abstraction flags and scores."""
    grid = exposure_frame(dataset).drop(columns="score")
    grid = grid.merge(scores, on=["scenario_id", "requester", "item_id"], how="left")
    key = ["scenario_id", "requester", "item_id"]
    got = retrievals.dropna(subset=["item_id"])
    frames = []
    for policy in POLICIES:
        mine = got[got["policy"] == policy]
        items = mine[mine["variant"] == "item"].groupby(key)["rank"].min().rename("rank")
        abstr = mine[mine["variant"] == "abstraction"].groupby(key).size().rename("n_abs")
        frame = grid.merge(items, left_on=key, right_index=True, how="left")
        frame = frame.merge(abstr, left_on=key, right_index=True, how="left")
        frame["retrieved"] = frame["rank"].notna()
        frame["abstraction_retrieved"] = frame["n_abs"].fillna(0) > 0
        frames.append(frame.drop(columns="n_abs").assign(policy=policy))
    out = pd.concat(frames, ignore_index=True)
    cols = ["policy", "scenario_id", "domain", "requester", "item_id", "owner", "label",
            "retrieved", "score", "rank", "abstraction_retrieved", "pool_rank"]
    return out[cols]


def leaked_contents(result: LabResult, policy: str) -> pd.DataFrame:
    """Returned cards whose text equals a private item of an agent other than the requester.

    Independent of the id mapping: compares bodies, so a mapping bug cannot hide a leak.
    """
    private = result.dataset.to_frame()
    private = private[private["label"] == "private"][["scenario_id", "agent", "text"]]
    got = result.retrievals[result.retrievals["policy"] == policy]
    hits = got.merge(private, left_on=["scenario_id", "content"],
                     right_on=["scenario_id", "text"])
    return hits[hits["agent"] != hits["requester"]]

