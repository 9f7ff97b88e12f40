"""No side channel through timings or caches (issue 9), on real PowerMem + seekdb + MiniLM.

The encoder keeps a process-wide cache of card texts. If questions were served from it, a cache
hit (~0.02 ms) against a miss (~5 ms) would show in ``embed_ms`` (and ``total_ms``) in the trace,
the ``retrieval.completed`` event and the stage: a role asking guessed variants of another role's
(or another case's) card would see the true guess answer fastest. These tests run that attack and
require every figure a role or an outward view shows to rank the true guess like chance.

The statistic: each round the attacker asks N equally long candidates (the true text and N-1
fresh wrong guesses) in shuffled order; per figure, the true candidate's rank among the N (0 =
fastest, ties share the middle rank) is averaged over R rounds. Under "no channel" that rank is
uniform on 0..N-1: mean (N-1)/2, standard deviation of the mean sqrt((N²-1)/12/R). A cache hit
every round gives mean 0, i.e. (N-1)/2 / sd ≈ 5.7 sd below chance for N=20, R=12; the tests fail
beyond 4 sd either way (the chance of that without a channel is about 1 in 16,000 per figure).

Measured with questions served from the shared cache (the code before this test): the true
guess had mean rank 0.0 (-5.7 sd) by embed_ms and total_ms, and 0.9-2.6 (-4.2 to -5.2 sd) by
the search latency too (a model run just before the search slows it; a cache hit does not);
a question another role had asked first came out faster 11-12 sd beyond chance (150 pairs).
Below the encoder, seekdb answers an exactly repeated search statement ~9 % faster (a role's own
repeated guess, or a board search another role already ran); ``embed_query`` defeats that by
nudging every query vector (``test_the_store_never_sees_the_same_question_twice``).
"""

from __future__ import annotations

import math
import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from bureau.course.attacks import decoys, timing_guess
from bureau.embedding import MiniLMEncoder

N = 20
ROUNDS = 12
SIGMAS = 4.0


def _numbers(value: Any, prefix: str) -> Iterator[tuple[str, float]]:
    """Every numeric leaf of a JSON-like value, named by its path."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield prefix, float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, f"{prefix}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{prefix}[{i}]")


def _seen(case: Any, role: str, question: str) -> dict[str, float]:
    """Every figure the attacker can read after asking once: its trace, the case's events and
    the stage (what a projector in the room shows)."""
    newest = case.bureau.ledger.event_log.last(case.id)
    last = newest.seq if newest is not None else 0
    answer = case.interrogate(role, question)
    trace = answer.trace
    figures = {"trace.embed_ms": trace.embed_ms, "trace.total_ms": trace.total_ms}
    figures.update({f"trace.scope.{s.scope}.latency_ms": s.latency_ms for s in trace.scopes})
    retrievals = [e for e in case.events(since=last) if e.type == "retrieval.completed"]
    assert [e.payload["request_id"] for e in retrievals] == [trace.request_id]
    figures.update(_numbers(retrievals[0].payload, "event"))
    last_retrieval = case.stage()["last_retrieval"]
    assert last_retrieval["latency_ms"] == retrievals[0].payload["latency_ms"]
    figures.update(_numbers(last_retrieval, "stage"))
    return figures


def _mid_rank(values: list[float], i: int) -> float:
    return sum(v < values[i] for v in values) + (sum(v == values[i] for v in values) - 1) / 2


def _guessing_attack(asker: Any, role: str, true_text: str, seed: int) -> dict[str, float]:
    """The true text's mean rank per figure over ROUNDS shuffled rounds of N guesses."""
    encoder = asker.bureau.gateway.encoder
    rng = random.Random(seed)
    used: list[str] = []
    ranks: dict[str, list[float]] = {}
    for _ in range(ROUNDS):
        wrong = decoys(true_text, N - 1, lambda t: len(encoder.tokenizer.encode(t).ids), rng,
                       avoid=used)
        used += wrong  # fresh wrong guesses every round: an attacker never repeats one
        order = [true_text, *wrong]
        rng.shuffle(order)
        seen = [_seen(asker, role, q) for q in order]
        truth = order.index(true_text)
        assert len({frozenset(s) for s in seen}) == 1  # every question shows the same figures
        for name in seen[0]:
            ranks.setdefault(name, []).append(_mid_rank([s[name] for s in seen], truth))
    return {name: sum(r) / len(r) for name, r in ranks.items()}


def _assert_like_chance(mean_ranks: dict[str, float]) -> None:
    chance = (N - 1) / 2
    sd = math.sqrt((N * N - 1) / 12 / ROUNDS)
    report = {k: (round(m, 2), round((m - chance) / sd, 1)) for k, m in mean_ranks.items()}
    print(f"\nmean rank of the true guess (chance {chance} ± {sd:.2f}), (mean, z):", report)
    singled_out = {k: v for k, v in report.items() if abs(v[1]) > SIGMAS}
    assert not singled_out, (
        f"the true guess is distinguishable (mean rank, sd from chance {chance}): {singled_out}"
    )
    assert {"trace.embed_ms", "trace.total_ms", "event.latency_ms.embed",
            "stage.latency_ms.total"} <= set(mean_ranks)


def test_guessing_another_roles_card_by_timing_is_chance(case):
    """The detective guesses the informant's private safe combination."""
    card = case.seed_card("safe-code")
    assert card.owner == "informant"
    _assert_like_chance(_guessing_attack(case, "detective", card.content, seed=9))


def test_guessing_another_cases_whisper_by_timing_is_chance(bureau, case):
    """A role of case B guesses a whisper of case A."""
    secret = case.whisper("informant", "The spare key to the archive room is in locker 0613.")
    other = bureau.load_scenario("safe-combination")
    try:
        assert not any(secret.content == c.content for cs in other.spaces().values() for c in cs)
        _assert_like_chance(_guessing_attack(other, "detective", secret.content, seed=10))
    finally:
        bureau.delete_case(other.id)


def test_a_question_never_enters_the_shared_cache(bureau, case):
    encoder = bureau.gateway.encoder
    if not isinstance(encoder, MiniLMEncoder):
        pytest.skip("white-box test of the MiniLM encoder's cache")
    question = f"Which locker holds the spare key, question {uuid.uuid4().hex[:8]}?"
    case.interrogate("detective", question)
    case.knowers(question)
    assert not encoder.is_cached(question)
    # Card writes keep the cache (bulk seeding and the leakage lab rely on it).
    assert encoder.is_cached(case.seed_card("safe-code").content)


def test_someone_else_asking_first_is_not_detectable(bureau, case):
    """Role X of case A asks a question; role Y of case B then asks it: not a cache hit."""
    encoder = bureau.gateway.encoder
    if not isinstance(encoder, MiniLMEncoder):
        pytest.skip("white-box test of the MiniLM encoder's cache")
    other = bureau.load_scenario("safe-combination")
    question = f"Who borrowed the archive key on the night of the {uuid.uuid4().hex[:8]} storm?"
    try:
        case.interrogate("detective", question)
        before = encoder.texts_embedded
        trace = other.interrogate("suspect", question).trace
        assert encoder.texts_embedded == before + 1, "Y's question was served from a cache"
        assert not encoder.is_cached(question)
        # A hit costs ~0.02 ms; running the model on a sentence takes milliseconds.
        assert trace.embed_ms > 0.2
    finally:
        bureau.delete_case(other.id)


def test_the_store_never_sees_the_same_question_twice(bureau):
    """seekdb answers an exactly repeated search ~9 % faster, and a case's board search is the
    same statement for every role: each query vector is nudged by a few float32 ulps."""
    gw = bureau.gateway
    a, _ = gw.embed_query("What opens the safe in the study?")
    b, _ = gw.embed_query("What opens the safe in the study?")
    assert a.dtype == b.dtype == np.float32
    assert a.tolist() != b.tolist()  # a different statement for the store
    assert float(a @ b) > 1 - 1e-6
    exact = gw.encoder.embed(["What opens the safe in the study?"], cache=False)[0]
    assert np.max(np.abs(a - exact)) < 1e-6


def test_another_role_asking_first_changes_no_figure(case):
    """Pairs of fresh questions: the detective asks one of them first, then the suspect asks
    both in random order. Every figure the suspect, the events and the stage show must favour
    the asked-before question no more often than chance (a sign test, 4 sd)."""
    case.publish("informant", case.seed_card("safe-code").id)  # the board's search finds cards
    case.publish("detective", case.seed_card("cctv").id)
    rng = random.Random(11)
    pairs = 150
    faster: dict[str, int] = {}
    for _ in range(pairs):
        asked = f"Who moved the ladder by the {uuid.uuid4().hex[:6]} shed at dawn?"
        fresh = f"Who moved the ladder by the {uuid.uuid4().hex[:6]} shed at dawn?"
        case.interrogate("detective", asked)
        order = [asked, fresh]
        rng.shuffle(order)
        seen = {q: _seen(case, "suspect", q) for q in order}
        for name, value in seen[asked].items():
            faster[name] = faster.get(name, 0) + (value < seen[fresh][name])
    sd = math.sqrt(pairs / 4)
    z = {k: round((v - pairs / 2) / sd, 1) for k, v in faster.items() if "latency" in k
         or k.endswith("_ms")}
    print("\nasked-before faster, z by figure:", z)
    assert "trace.embed_ms" in z and not {k: v for k, v in z.items() if abs(v) > SIGMAS}, z


def test_timing_guess_attack_reports_blocked_with_per_candidate_timings(case):
    start = time.perf_counter()
    # 8 rounds of 10: a cache hit every round would sit sqrt(3·8·9/11) ≈ 4.4 sd from chance.
    result = timing_guess(case, candidates=10, rounds=8, seed=3)
    assert result.blocked, result
    assert not result.leaked and "never cached" in result.reason
    d = result.details
    assert d["attacker"] == "detective" and d["rounds"] == 8 and d["candidates"] == 10
    assert len(d["timings"]) == 80 and sum(row["true"] for row in d["timings"]) == 8
    assert {"embed", "total", "detective", "board"} <= set(d["timings"][0])
    assert {row["figure"] for row in d["ranks"]} >= {"embed", "total"}
    assert case.seed_card("safe-code").content not in repr(d) + result.attempt
    assert time.perf_counter() - start < 120


def test_decoys_have_the_shape_and_length_of_the_card():
    text = "The safe in the study opens with the combination 0427."
    out = decoys(text, 19, len, random.Random(1))
    assert len(set(out)) == 19 and text not in out
    assert all(len(d) == len(text) and d[:-5] == text[:-5] for d in out)
    plain = "The butler visits his sister in Dover every Thursday evening."
    words = decoys(plain, 5, lambda t: len(t.split()), random.Random(2))
    assert len(set(words)) == 5 and plain not in words
    with pytest.raises(ValueError):
        decoys("0", 50, len, random.Random(3))


def test_another_roles_card_count_changes_no_figure(bureau):
    """Two copies of a case, one where the suspect holds 300 notes more: the detective asks the
    same fresh questions of both, in random order. No figure the detective, the events or the
    stage show may be slower in the crowded case more often than chance (a sign test, 4 sd).
    Before the searches named the (case, role) index, seekdb scanned every row of the case
    for each scope: the detective's own-scope latency doubled beside the crowded suspect. With
    the scope cache (issue 36) both suspects' matrices are held in memory while the detective
    asks: a scope's matrix is built by its own searches and never evicted for another's."""
    quiet = bureau.load_scenario("safe-combination")
    crowded = bureau.load_scenario("safe-combination")
    try:
        notes = [f"Suspect note {i}: the cellar door was repainted {i} times before the alarm."
                 for i in range(300)]
        bureau.gateway.encoder.embed(notes)
        for note in notes:
            crowded.whisper("suspect", note)
        for c in (quiet, crowded):  # both suspects' scopes held in the scope cache too
            c.interrogate("suspect", "Which door was repainted?")
        held = bureau.gateway.scopes
        assert held.get(crowded.space.store_id, "suspect").n == \
            bureau.gateway.count(crowded.space, "suspect") >= 300
        rng = random.Random(7)
        pairs = 150
        slower: dict[str, int] = {}
        for _ in range(pairs):
            question = f"What did the witness see by the {uuid.uuid4().hex[:6]} gate at dusk?"
            order = [quiet, crowded]
            rng.shuffle(order)
            seen = {c.id: _seen(c, "detective", question) for c in order}
            for name, value in seen[crowded.id].items():
                slower[name] = slower.get(name, 0) + (value > seen[quiet.id][name])
        sd = math.sqrt(pairs / 4)
        z = {k: round((v - pairs / 2) / sd, 1) for k, v in slower.items() if "latency" in k
             or k.endswith("_ms")}
        print("\ncrowded case slower, z by figure:", z)
        assert "trace.scope.detective.latency_ms" in z
        assert not {k: v for k, v in z.items() if abs(v) > SIGMAS}, z
    finally:
        for c in (quiet, crowded):
            bureau.delete_case(c.id)
