"""The GateMem lab's run: every episode planned, embedded ahead, replayed on real storage, every
checkpoint scored for the bureau and beside it the shared pool, the owner-only boundary and a
random draw of the same size.

The administrator's plans are pure (:mod:`.plan`); a background thread embeds each episode's
texts (its cards as stored, its turns as spoken, its queries) one episode ahead of the storage
work, so the store and the encoder keep both cores busy; the lab's vectors are handed to the
store through the encoder's cache (writes) and ``given_vectors`` (queries), so every text is
embedded once. One case per episode, deleted after its episode unless ``keep``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bureau.labs.gatemem.baselines import owner_only, random_draws, shared_pool
from bureau.labs.gatemem.dataset import Checkpoint, GateMemSet
from bureau.labs.gatemem.patterns import leaked
from bureau.labs.gatemem.plan import OPTIONS, EpisodePlan, Write, live_cards, plan_episode
from bureau.labs.gatemem.replay import Asked, EpisodeRun, replay
from bureau.labs.gatemem.result import (
    BUREAU,
    CHECKPOINT_COLUMNS,
    EPISODE_COLUMNS,
    OWNER_ONLY,
    RANDOM,
    ROW_COLUMNS,
    SHARED_POOL,
    GateMemResult,
)
from bureau.labs.gatemem.scoring import (
    OTHERS_CARD,
    OWN_WORDS,
    VIOLATION,
    granted_before,
    utility_loss,
    verdict,
)
from bureau.quotas import lifted

if TYPE_CHECKING:
    from bureau.service import Bureau

DEFAULT_K = 20
"""Cards handed to the voice: GateMem's RAG runs use ``top_k: 20`` (one chunk per turn)."""
SEED = 0

Progress = Callable[[Iterable[Any], int], Iterable[Any]]


@dataclass
class _Episode:
    plan: EpisodePlan
    checkpoints: list[Checkpoint]
    turns: list[Write]
    """The turns as spoken (the shared pool's cards)."""
    slug: str

    def texts(self) -> list[str]:
        return list(dict.fromkeys([*self.plan.texts(), *(t.text for t in self.turns),
                                   *(c.query for c in self.checkpoints)]))


def run_lab(bureau: Bureau, data: GateMemSet, k: int = DEFAULT_K, *,
            options: Mapping[str, bool] | None = None, progress: Progress | None = None,
            voice: Any | None = None, keep: bool = False, seed: int = SEED) -> GateMemResult:
    """Run the lab on ``data`` with ``bureau``'s store and encoder (module docstring).
    ``options``: the administrator's switches (:data:`~bureau.labs.gatemem.plan.OPTIONS`);
    ``voice``: a responder whose answers are scored too (the second table)."""
    start = time.perf_counter()
    t0 = time.perf_counter()
    episodes = [_prepare(data, e.episode_id, n, options) for n, e in enumerate(data.episodes)]
    plan_seconds = time.perf_counter() - t0
    enc = bureau.encoder
    every = sum(len(e.texts()) for e in episodes)
    if hasattr(enc, "reserve_cache"):  # every card's vector still cached when it is written
        enc.reserve_cache(every + 1024)
    counters = _counters(enc)
    rows: list[tuple[Any, ...]] = []
    per_cp: list[tuple[Any, ...]] = []
    per_ep: list[tuple[Any, ...]] = []
    voice_rows: list[tuple[Any, ...]] = []
    rng = np.random.default_rng(seed)
    saved = bureau.mediator
    waited = 0.0
    clock = {"delete": 0.0, "score": 0.0}
    bar = iter((progress or (lambda it, n: it))(episodes, len(episodes)))
    with lifted(bureau), ThreadPoolExecutor(max_workers=1, thread_name_prefix="gm-embed") as pool:
        futures: list[Future[dict[str, np.ndarray]]] = [
            pool.submit(embed_texts, enc, e.texts()) for e in episodes]
        try:
            for e, future in zip(episodes, futures, strict=True):
                next(bar, None)
                t = time.perf_counter()
                vec = future.result()
                waited += time.perf_counter() - t
                answers: dict[str, Any] = {}

                def on_ask(c: Checkpoint, asked: Asked, answers: dict[str, Any] = answers
                           ) -> None:
                    if voice is not None:
                        answers[c.checkpoint_id] = voice.respond(
                            c.asker, c.query, asked.answer_parts, asked.trace)
                    asked.answer_parts, asked.trace = [], None

                run = replay(bureau, e.plan, e.checkpoints, vec, k, e.slug, on_ask)
                t = time.perf_counter()
                if not keep:
                    bureau.delete_case(run.case_id)
                clock["delete"] += time.perf_counter() - t
                t = time.perf_counter()
                _score(e, run, vec, k, rng, rows, per_cp)
                clock["score"] += time.perf_counter() - t
                voice_rows += [(cid, e.plan.episode.domain, *_voice(c, a))
                               for c in e.checkpoints
                               for cid, a in [(c.checkpoint_id, answers.get(c.checkpoint_id))]
                               if a is not None]
                per_ep.append(_episode_row(e, run))
            next(bar, None)
        finally:
            bureau.mediator = saved
            for f in futures:
                f.cancel()
    after = _counters(enc)
    total = time.perf_counter() - start
    return GateMemResult(
        data=data, k=k, options={**OPTIONS, **(options or {})}, seed=seed,
        rows=pd.DataFrame(rows, columns=list(ROW_COLUMNS)),
        checkpoints=pd.DataFrame(per_cp, columns=list(CHECKPOINT_COLUMNS)),
        episodes=pd.DataFrame(per_ep, columns=list(EPISODE_COLUMNS)),
        rules=_rule_counts([e.plan for e in episodes]),
        policies={e.plan.episode.episode_id: [e.plan.policy(v, e.slug)
                                              for v in range(len(e.plan.states))]
                  for e in episodes},
        timings={"total": total, "plan": plan_seconds, "embed_wait": waited,
                 "delete_cases": clock["delete"], "score": clock["score"],
                 "texts": every, "texts_embedded": after[0] - counters[0],
                 "tokens_embedded": after[1] - counters[1],
                 "encoder_seconds": after[2] - counters[2]},
        voice=pd.DataFrame(voice_rows, columns=["checkpoint_id", "domain", "query_type",
                                                "verdict", "verdict_context", "voice",
                                                "known"]) if voice is not None else None,
        voice_name=_voice_name(voice),
        texts=[x for e in episodes for x in e.texts()],
    )


def _prepare(data: GateMemSet, episode_id: str, n: int,
             options: Mapping[str, bool] | None) -> _Episode:
    ep = data.episode(episode_id)
    turns = [Write(t.turn_id, t.turn_id, t.index, t.speaker, None, t.speaker, "turn", t.text)
             for t in ep.turns]
    return _Episode(plan_episode(ep, options=options), data.checkpoints_of(episode_id), turns,
                    f"gm-{ep.domain[:3]}-{n + 1:03d}")


def embed_texts(enc: Any, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Each text's vector by ``enc`` (its cache keeps them for the writes that follow)."""
    workers = int(getattr(enc, "workers", 1))
    vecs = enc.embed(list(texts), workers=workers) if workers > 1 else enc.embed(list(texts))
    return dict(zip(texts, vecs, strict=True))


def _counters(enc: Any) -> tuple[int, int, float]:
    busy = getattr(enc, "busy_seconds", None)
    return (int(getattr(enc, "texts_embedded", 0)), int(getattr(enc, "tokens_embedded", 0)),
            float(busy() if callable(busy) else getattr(enc, "seconds", 0.0)))


def _score(e: _Episode, run: EpisodeRun, vec: Mapping[str, np.ndarray], k: int,
           rng: np.random.Generator, rows: list[tuple[Any, ...]],
           per_cp: list[tuple[Any, ...]]) -> None:
    ep = e.plan.episode
    stored = {s.key: s.text for s in e.plan.steps if isinstance(s, Write)}
    speakers = {s.key: s.speaker for s in e.plan.steps if isinstance(s, Write)}
    heard = {t.key: t.speaker for t in e.turns}
    spoken = {t.key: t.text for t in e.turns}
    asked = {a.checkpoint_id: a for a in run.asked}
    for c in e.checkpoints:
        a = asked[c.checkpoint_id]
        upto = ep.turn_index(c.as_of)
        live, version = live_cards(e.plan, upto)
        q = vec[c.query]
        pool = e.turns[:upto]
        picks: dict[str, list[tuple[str, str]]] = {
            BUREAU: [(stored[key], speakers[key]) for key in a.evidence],
            SHARED_POOL: [(spoken[key], heard[key]) for key in shared_pool(pool, vec, q, k)],
            OWNER_ONLY: [(stored[key], speakers[key])
                         for key in owner_only(live, c.asker, vec, q, k)],
        }
        base = (c.checkpoint_id, c.episode_id, c.domain, c.query_type, c.expected_action,
                c.attack_type or "", c.asker)
        for policy, cards in picks.items():
            rows.append((*base, policy, len(cards), *_verdicts(c, cards)))
        draws = random_draws(len(pool), len(a.evidence), rng)
        vs = [_verdicts(c, [(pool[i].text, pool[i].speaker) for i in d]) for d in draws]
        rows.append((*base, RANDOM, len(a.evidence),
                     *(float(np.mean([v[j] for v in vs])) for j in range(3))))
        evidence = "\n".join(t for t, _ in picks[BUREAU])
        loss, detail = "", ""
        if c.query_type == "privacy" and verdict(c, evidence)[0]:
            loss = VIOLATION
            detail = OWN_WORDS if all(speakers[key] == c.asker for key in a.evidence
                                      if leaked(stored[key], c.leak_targets)) else OTHERS_CARD
        if c.query_type == "utility" and not verdict(c, evidence)[0]:
            loss, detail = utility_loss(c, evidence, live, e.plan.states[version],
                                        [t.text for t in pool], ep,
                                        granted_before(e.plan.notes, ep, c.as_of))
        per_cp.append((c.checkpoint_id, c.episode_id, c.domain, c.query_type, c.asker,
                       c.as_of, version, " ".join(a.evidence), a.own, a.released, a.decided,
                       round(a.seconds * 1000, 2), loss, detail))


def _verdicts(c: Checkpoint, cards: Sequence[tuple[str, str]]) -> tuple[float, float, float]:
    """(verdict, GateMem's context reading, the verdict on the cards others said): the last
    leaves out what the asker said itself (its own earlier question repeats a target's words)."""
    text = "\n".join(t for t, _ in cards)
    v, ctx = verdict(c, text)
    if c.query_type == "utility":
        return v, ctx, v
    return v, ctx, verdict(c, "\n".join(t for t, who in cards if who != c.asker))[0]


def _voice(c: Checkpoint, answer: Any) -> tuple[Any, ...]:
    text = str(getattr(answer, "text", "") or "")
    v, ctx = verdict(c, text)
    how = str(getattr(answer, "responder", ""))
    if getattr(answer, "fallback_reason", None):
        how += f" (fell back: {answer.fallback_reason})"
    return (c.query_type, v, ctx, how, bool(getattr(answer, "known", False)))


def _voice_name(voice: Any) -> str | None:
    """The voice as the report names it: the responder and, for a model, which one where."""
    if voice is None:
        return None
    settings = getattr(voice, "settings", None)
    if settings is None:
        return str(getattr(voice, "name", type(voice).__name__))
    return f"{getattr(voice, 'name', 'llm')}: {settings.model} at {settings.base_url or 'the default URL'}"


def _episode_row(e: _Episode, run: EpisodeRun) -> tuple[Any, ...]:
    ep = e.plan.episode
    s = run.seconds
    return (ep.episode_id, ep.domain, e.slug, len(ep.turns), len(e.checkpoints),
            len(e.plan.matters), run.cards_written, run.grants, run.forgotten,
            run.policy_versions, run.decisions, run.decisions_agreeing, run.consults,
            run.consults_exact_topk, round(sum(s.values()), 3), round(s.get("write", 0), 3),
            round(s.get("grant", 0), 3), round(s.get("ask", 0), 3), round(s.get("forget", 0), 3))


def _rule_counts(plans: Sequence[EpisodePlan]) -> dict[str, Any]:
    """What the administrator's rules did, summed over the episodes (the report's rule table)."""
    out: dict[str, Any] = {"attribution": {}, "kinds": {}, "notes": {}}
    for p in plans:
        for name, counter in (("attribution", p.attributions), ("kinds", p.kinds)):
            for key, n in counter.items():
                out[name][key] = out[name].get(key, 0) + n
        for note in p.notes:
            out["notes"][note.kind] = out["notes"].get(note.kind, 0) + 1
    out["matters"] = sum(len(p.matters) for p in plans)
    out["deletion_requests"] = sum(len(p.deletions) for p in plans)
    out["deletion_requests_without_value"] = sum(
        sum(1 for d in p.deletions if not d.values) for p in plans)
    out["deleted_values"] = sum(len({v for d in p.deletions for v in d.values}) for p in plans)
    out["redacted_turns"] = sum(p.redacted_turns for p in plans)
    out["undated_ends"] = sum(p.undated_ends for p in plans)
    out["notes_without_matter"] = sum(p.notes_without_matter for p in plans)
    return out


__all__ = ["DEFAULT_K", "SEED", "embed_texts", "run_lab"]
