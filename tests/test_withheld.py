"""Withheld means invisible to the requester (issue 19 §2).

Actor: an agent holding its own handle, consulting another role's memory as often as it likes,
with guesses of a withheld card's exact text, timing each answer. What it receives (the answer,
its trace, the decisions, the events and the stage) must be a function of what was released to
it, and of nothing withheld. Real PowerMem + embedded seekdb + MiniLM.
"""

from __future__ import annotations

import math
import random
import re
import time

import pytest
from leakcheck import holds

from bureau.course.attacks import decoys
from bureau.mediation.mediator import PolicyMediator
from bureau.mediation.policy import default_policy_path, load_policy, parse_policy
from bureau.service.read_paths import as_text

LEAK_SIGMAS = 4.0
_VOLATILE = re.compile(
    r'"(id|at|request_id|requested_at|invocation_id|query|question)": '
    r'"[^"]*"|"\d{15,}"'
)


@pytest.fixture
def policy(bureau):
    """The example policy without its budget: a release then depends on the guess alone (with
    the budget, the fifth abstract is withheld whatever the guess)."""
    before = bureau.mediator
    data = load_policy(default_policy_path()).model_dump(mode="json", exclude={"source"})
    bureau.mediator = PolicyMediator(parse_policy({**data, "budget": None}, source="no-budget"))
    yield bureau
    bureau.mediator = before


def _shape(obj) -> str:
    """The requester's object with what it chose itself (its question, ids, clocks) blanked."""
    return _VOLATILE.sub("_", as_text(obj))


def _rank(values, i):
    return sum(v < values[i] for v in values) + (sum(v == values[i] for v in values) - 1) / 2


@pytest.mark.parametrize("purpose", ["gossip", "investigation"])
def test_guessing_a_withheld_card_learns_nothing_beyond_chance(policy, case, purpose):
    card = case.seed_card("safe-code")  # informant's; gossip: withheld, investigation: abstract
    agent = case.agent("detective")
    rng = random.Random(7)
    n, rounds = 12, 6
    ranks, shapes = [], set()
    for _ in range(rounds):
        order = [card.content, *decoys(card.content, n - 1, rng=rng)]
        rng.shuffle(order)
        times = []
        for guess in order:
            start = time.perf_counter()
            m = agent.consult("informant", guess, purpose=purpose)
            times.append(time.perf_counter() - start)
            # Its own words come back; random ids (hex) may hold "0427" by chance, so blank them.
            text = _shape(m).replace(guess, "<the guess>")
            assert card.content not in text and not holds(text, "0427") and "safe-code" not in text
            assert all(s.latency_ms == 0 and not s.below_threshold for s in m.answer.trace.scopes)
            shapes.add(_shape(m.answer.text) + _shape([d.action for d in m.decisions]))
            last = [e for e in case.events() if e.type == "retrieval.completed"][-1]
            if purpose == "gossip":
                assert card.id not in as_text(last.payload) and card.id not in text
        ranks.append(_rank(times, order.index(card.content)))
    assert len(shapes) == 1, shapes  # every guess got exactly the same answer
    chance, sd = (n - 1) / 2, math.sqrt((n * n - 1) / 12 / rounds)
    z = (sum(ranks) / rounds - chance) / sd
    assert abs(z) < LEAK_SIGMAS, f"the true guess's wall-clock rank is {z:+.1f} sd from chance"
    # The operator's X-ray still has every decision.
    audit = case.audit()
    assert (audit["card_id"] == card.id).sum() >= n * rounds


def test_the_requester_cannot_set_the_threshold(case):
    agent = case.agent("detective")
    with pytest.raises(TypeError):
        agent.consult("informant", "the safe", threshold=-1)  # no such parameter
    r = agent.call_tool("consult", {"owner": "informant", "question": "the safe", "threshold": -1})
    assert r["error"] == "ToolCallError"
