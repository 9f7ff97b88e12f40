"""One episode on real storage: the administrator's plan executed by the bureau, turn by turn,
with every checkpoint asked at its turn.

The case has a role per principal and one per record (``rec-<n>``, a matter's shared memory no
one speaks as). Each :class:`~bureau.labs.gatemem.plan.Write` is ``case.whisper`` into its
owner's space with the card kind as ``info_type``; each of its grantees (the plan's: the
speaker of a record card it could not otherwise use, the principals a credential names) gets
``case.grant`` on it; a :class:`~bureau.labs.gatemem.plan.Forget` is ``case.forget`` of
each card; an :class:`~bureau.labs.gatemem.plan.Access` step swaps the mediator for the next
policy version (:meth:`~bureau.labs.gatemem.plan.EpisodePlan.policy`).

A checkpoint is asked once every step of its ``as_of_turn_id`` has run: the asker's own handle
(``case.agent(asker, threshold=-1)``: every card of the top-k counts, the lab's headline
reading) recalls its own space (``recall``, top-k) and consults every record (``consult``,
top-k of that record, each card decided by the policy); what it was handed -- its own cards
and the released ones -- is ranked by the store's score and cut to the top k: the **evidence**,
the only text a voice could use. The query vector is the lab's own (``given_vectors``), so it
is embedded once.

Checks kept with the run (named checks, not measurements): every decision in the case's audit
trail agrees with :func:`~bureau.labs.gatemem.plan.may_use` under the policy version of its
consult, and each consult's decided cards are the exact top-k numpy computes over the same
vectors of the record's live cards (the baselines are computed that way; compared as texts,
since cards of one text tie exactly).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bureau.embedding import given_vectors
from bureau.labs.gatemem.baselines import top_k
from bureau.labs.gatemem.dataset import Checkpoint
from bureau.labs.gatemem.plan import Access, EpisodePlan, Forget, Write, live_cards, may_use
from bureau.mediation.mediator import PolicyMediator
from bureau.mediation.policy import parse_policy
from bureau.scenario import Scenario

if TYPE_CHECKING:
    from bureau.service import Bureau

EVERY_CARD = -1.0
"""The handles' threshold: every card of the top-k is evidence (the leakage lab's headline)."""


@dataclass
class Asked:
    """What one checkpoint's asker was handed by the bureau."""

    checkpoint_id: str
    version: int
    evidence: list[str]
    """Plan keys of the evidence, best first (at most k)."""
    scores: list[float]
    own: int
    """Cards of its own space among the candidates."""
    released: int
    """Record cards released to it by the consults."""
    decided: int
    """Record cards the consults decided (released or withheld)."""
    seconds: float
    answer_parts: list[Any] = field(default_factory=list, repr=False)
    """The evidence cards themselves (for a voice to phrase; not kept in the result)."""
    trace: Any = field(default=None, repr=False)
    """The asker's own recall (what a voice's answer carries as its X-ray; not kept)."""


@dataclass
class EpisodeRun:
    episode_id: str
    case_id: str
    asked: list[Asked]
    cards_written: int = 0
    grants: int = 0
    forgotten: int = 0
    policy_versions: int = 1
    decisions: int = 0
    decisions_agreeing: int = 0
    consults: int = 0
    consults_exact_topk: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def role_title(pid: str, plan: EpisodePlan) -> str:
    m = plan.matter_of_role(pid)
    if m is not None:
        return f"record of {m.key}"[:120]
    return plan.episode.principal(pid).name[:120] or pid


def replay(bureau: Bureau, plan: EpisodePlan, checkpoints: Sequence[Checkpoint],
           vec: Mapping[str, np.ndarray], k: int, slug: str,
           on_ask: Any | None = None) -> EpisodeRun:
    """Execute ``plan`` on ``bureau``'s store and ask ``checkpoints`` (module docstring).
    ``on_ask(checkpoint, asked)``, if given, is called after each checkpoint (the voice)."""
    t0 = time.perf_counter()
    ep = plan.episode
    scenario = Scenario.model_validate({
        "id": slug, "title": f"GateMem {ep.domain} episode"[:120],
        "roles": [{"name": r, "title": role_title(r, plan)} for r in plan.roles]})
    case = bureau.create_case(scenario, case_id=f"{slug}-{uuid.uuid4().hex[:5]}")
    run = EpisodeRun(ep.episode_id, case.id, [], seconds={"setup": time.perf_counter() - t0})
    ids: dict[str, str] = {}
    keys: dict[str, str] = {}
    version = 0
    bureau.mediator = PolicyMediator(parse_policy(plan.policy(0, slug), source=slug))
    todo = sorted(checkpoints, key=lambda c: ep.turn_index(c.as_of))
    expected: dict[str, tuple[str, int, frozenset[str]]] = {}  # invocation -> asker, v, top-k
    clock = dict.fromkeys(("write", "grant", "forget", "policy", "ask"), 0.0)

    def ask_due(upto: int) -> None:
        while todo and ep.turn_index(todo[0].as_of) <= upto:
            c = todo.pop(0)
            t = time.perf_counter()
            asked = _ask(case, plan, c, vec, k, version, keys, expected)
            clock["ask"] += time.perf_counter() - t
            run.asked.append(asked)
            if on_ask is not None:
                on_ask(c, asked)

    for step in plan.steps:
        if todo and step.index > ep.turn_index(todo[0].as_of):
            ask_due(step.index - 1)
        t = time.perf_counter()
        if isinstance(step, Write):
            card = case.whisper(step.owner, step.text, info_type=step.kind)
            ids[step.key], keys[card.id] = card.id, step.key
            run.cards_written += 1
            clock["write"] += time.perf_counter() - t
            t = time.perf_counter()
            if step.owner != step.speaker:
                for who in step.grantees:
                    case.grant(card.id, requester=who)
                    run.grants += 1
            clock["grant"] += time.perf_counter() - t
        elif isinstance(step, Forget):
            for key in step.keys:
                case.forget(ids[key])
                run.forgotten += 1
            clock["forget"] += time.perf_counter() - t
        elif isinstance(step, Access):
            version = step.version
            bureau.mediator = PolicyMediator(parse_policy(plan.policy(version, slug),
                                                          source=slug))
            run.policy_versions += 1
            clock["policy"] += time.perf_counter() - t
    ask_due(len(ep.turns))
    t = time.perf_counter()
    _check(case, plan, keys, expected, run)
    clock["check"] = time.perf_counter() - t
    run.seconds.update(clock)
    return run


def _ask(case: Any, plan: EpisodePlan, c: Checkpoint, vec: Mapping[str, np.ndarray], k: int,
         version: int, keys: Mapping[str, str],
         expected: dict[str, tuple[str, int, frozenset[str]]]) -> Asked:
    t0 = time.perf_counter()
    handle = case.agent(c.asker, threshold=EVERY_CARD)
    got: dict[str, tuple[float, Any]] = {}
    own = released = decided = 0
    live, _ = live_cards(plan, plan.episode.turn_index(c.as_of))
    with given_vectors(vec):
        trace = handle.recall(c.query, limit=k)
        for scope in trace.scopes:
            for card in (*scope.hits, *scope.below_threshold):
                key = keys.get(card.id)
                if key is not None:
                    got[key] = (float(card.score or 0.0), card)
                    own += 1
        for m in plan.matters:
            result = handle.consult(m.role, c.query, limit=k)
            cards = [w for w in live.values() if w.owner == m.role]
            expected[result.invocation.id] = (c.asker, version,
                                              frozenset(top_k(cards, vec, vec[c.query], k)))
            for card in result.released:
                key = keys.get(card.id)
                if key is not None:
                    score = float(card.score) if card.score is not None else float(
                        vec[c.query] @ vec[live[key].text])
                    got.setdefault(key, (score, card))
                    released += 1
            decided += len(cards[:k])
    ranked = sorted(got.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
    return Asked(c.checkpoint_id, version, [key for key, _ in ranked],
                 [round(s, 6) for _, (s, _) in ranked], own, released, decided,
                 time.perf_counter() - t0, [card for _, (_, card) in ranked], trace)


def _check(case: Any, plan: EpisodePlan, keys: Mapping[str, str],
           expected: Mapping[str, tuple[str, int, frozenset[str]]], run: EpisodeRun) -> None:
    """The two named checks of the module docstring, from the case's audit trail."""
    audit = case.audit(verify=False)
    decisions = audit[(audit["kind"] == "decision") & audit["invocation_id"].isin(expected)]
    by_key: dict[str, Write] = {s.key: s for s in plan.steps if isinstance(s, Write)}
    for inv, rows in decisions.groupby("invocation_id"):
        asker, version, topk = expected[str(inv)]
        state = plan.states[version]
        # Compared as texts: two cards of the same text tie exactly, and either engine may
        # rank either of them first.
        decided = sorted(by_key[keys[str(cid)]].text for cid in rows["card_id"]
                         if str(cid) in keys)
        run.consults += 1
        run.consults_exact_topk += int(decided == sorted(by_key[k].text for k in topk))
        for cid, action in zip(rows["card_id"], rows["action"], strict=True):
            write = by_key.get(keys.get(str(cid), ""))
            run.decisions += 1
            run.decisions_agreeing += int(write is not None and
                                          may_use(asker, write, state) == (action == "reveal"))
    run.consults += sum(1 for inv, (_, _, topk) in expected.items()
                        if not topk and inv not in set(decisions["invocation_id"]))
    run.consults_exact_topk += sum(1 for inv, (_, _, topk) in expected.items()
                                   if not topk and inv not in set(decisions["invocation_id"]))


__all__ = ["EVERY_CARD", "Asked", "EpisodeRun", "replay"]
