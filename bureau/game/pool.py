"""How often a shared pool would have lost the game (lesson 05's opening, issue 49).

The same cases, the same questions, the same encoder, the same top-k and the same relevance
threshold as the bureau's own search; one difference: a shared pool keeps every role's cards in
one scope, so a role's search ranks everyone's cards. The natural play of a case is every role
asked every question of its scenario (the case file's question among them). A rule of the case
file is broken in that play when a search hands a role a card the rule says must never reach it
(a decoy counts when the asker is handed it for the case's question: spread as fact).

Beside it, for each search, the chance that a **random** draw of as many cards from the same
pool would have broken a rule (exact, hypergeometric): is it relevance that hands the secrets
out, or just sharing? And the **bureau**: the same play through real cases, scored by
:func:`bureau.game.score`. Its zero is a check (its scopes cannot return another role's card),
not a measurement.
"""

from __future__ import annotations

from math import comb
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .score import score

if TYPE_CHECKING:
    from ..service import Bureau


def _forbidden(scenario: Any, role: str, question: str) -> set[str]:
    """Seed keys the case file's rules forbid ``role`` to be handed for ``question``."""
    cf = scenario.case_file
    out: set[str] = set()
    for rule in cf.never:
        if rule.secret is not None:
            owner, _ = scenario.seed(rule.secret)
            targets = rule.reaches or [r for r in scenario.role_names if r != owner]
            if role in targets:
                out.add(rule.secret)
        elif role == cf.asker and question == cf.question:
            out.add(rule.publish)  # the decoy, handed to the asker as evidence
    return out


def play(bureau: Bureau, scenario_ids: list[str] | None = None) -> pd.DataFrame:
    """Every search of every bundled case's natural play, under a shared pool and a random draw:
    one row per (scenario, role, question)."""
    from ..scenario import list_scenarios, load_scenario

    ids = scenario_ids or [s.id for s in list_scenarios()]
    k, threshold = bureau.settings.search_limit, bureau.settings.relevance_threshold
    rows = []
    for sid in ids:
        scenario = load_scenario(sid)
        if scenario.case_file is None:
            continue
        seeds = list(scenario.seeds())
        keys = [m.key for _, m in seeds]
        vectors = bureau.encoder.embed([m.content for _, m in seeds], cache=False)
        questions = list(dict.fromkeys([scenario.case_file.question,
                                        *(q.text for q in scenario.questions)]))
        q_vectors = bureau.encoder.embed(questions, cache=False)
        for qi, question in enumerate(questions):
            scores = vectors @ q_vectors[qi]
            ranked = [i for i in np.argsort(-scores, kind="stable")[:k] if scores[i] >= threshold]
            for role in scenario.role_names:
                bad = _forbidden(scenario, role, question)
                handed = [keys[i] for i in ranked if keys[i] in bad]
                n, m, drawn = len(keys), sum(key in bad for key in keys), len(ranked)
                p_random = 1 - comb(n - m, drawn) / comb(n, drawn) if m else 0.0
                rows.append({"scenario": sid, "role": role, "question": question,
                             "pool_cards": drawn, "pool_breaks": bool(handed),
                             "pool_handed": ", ".join(handed), "random_breaks": p_random})
    return pd.DataFrame(rows)


def bureau_play(bureau: Bureau, scenario_ids: list[str] | None = None) -> dict[str, bool]:
    """The same natural play through real cases: every role interrogated with every question,
    nothing published; whether each case's score ends lost (never, by construction)."""
    from ..scenario import list_scenarios

    ids = scenario_ids or [s.id for s in list_scenarios()]
    lost = {}
    for sid in ids:
        case = bureau.load_scenario(sid)
        try:
            cf = case.scenario.case_file
            if cf is None:
                continue
            questions = dict.fromkeys([cf.question, *(q.text for q in case.scenario.questions)])
            for question in questions:
                for role in case.role_names:
                    case.interrogate(role, question)
            lost[sid] = score(case).lost
        finally:
            bureau.delete_case(case.id)
    return lost


def summary(table: pd.DataFrame, bureau_lost: dict[str, bool]) -> pd.DataFrame:
    """Per scenario: searches, those in which the pool broke a rule, the expected number under a
    random draw of the same size, whether the pool lost the game, and whether the bureau did."""
    out = table.groupby("scenario").agg(searches=("role", "size"),
                                        pool_breaks=("pool_breaks", "sum"),
                                        random_breaks=("random_breaks", "sum"))
    out["pool_lost_the_game"] = out["pool_breaks"] > 0
    out["bureau_lost_the_game"] = [bureau_lost.get(s, False) for s in out.index]
    out["random_breaks"] = out["random_breaks"].round(1)
    return out.reset_index()


def reading(table: pd.DataFrame) -> str:
    """:func:`play`'s count beside the random draw's, in a sentence whose verdict is computed
    from the two (the leakage lab's tolerance, :func:`bureau.labs.leakage.report.directions
    .compare`): relevance against chance, not a typed claim."""
    from ..labs.leakage.report.directions import compare

    pool, n = int(table["pool_breaks"].sum()), len(table)
    rnd = float(table["random_breaks"].sum())
    verdict = {"about as much as": "no better than", "more than": "worse than",
               "less than": "better than"}[compare(pool, rnd)]
    return (f"{pool} of {n} searches broke a rule; a random draw of as many cards would break "
            f"{rnd:.1f} on average: ranking by relevance kept secrets {verdict} drawing cards at "
            "random.")


__all__ = ["bureau_play", "play", "reading", "summary"]
