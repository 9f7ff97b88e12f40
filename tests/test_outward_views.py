"""Outward views carry no private metadata; refusals are uniform (issue 9, item 8)."""

from __future__ import annotations

import math

import pytest

from bureau.errors import BureauError, InvalidArgumentError, UnknownCardError
from bureau.service.read_paths import OUTWARD_READ_PATHS, as_text

Q = "What is the combination of the safe in the study?"


def test_events_and_stage_carry_no_private_topic_kind_or_seed_key(bureau):
    case = bureau.load_scenario("safe-combination")
    try:
        case.whisper("suspect", "I buried the necklace under the old oak.",
                     topic="zanzibar-necklace", kind="confession-quirk")
        case.interrogate("detective", "Where is the necklace?")
        for name, read in OUTWARD_READ_PATHS.items():
            text = as_text(read(case))
            for secret in ("zanzibar-necklace", "confession-quirk", "necklace", "oak",
                           # seed keys and typed topics of the scenario's private cards
                           "safe-code", "butler-thursdays", "alibi", "footprint", "cctv",
                           "staff"):
                assert secret not in text, (name, secret)
        created = [e.payload for e in case.events() if e.type in ("memory.created",
                                                                   "memory.whispered")]
        assert created and all(set(p) == {"card_id", "owner", "visibility"} for p in created)
    finally:
        bureau.delete_case(case.id)


def test_publishing_another_roles_card_answers_like_an_unknown_id(case, bureau):
    other = bureau.load_scenario("safe-combination")
    try:
        theirs = case.seed_card("safe-code").id        # the informant's
        foreign = other.seed_card("alibi").id           # another case's
        board = case.publish("informant", theirs).id    # on the board
        unknown = str(int(max(theirs, foreign, board)) + 7919)

        def refusal(card_id: str) -> str:
            with pytest.raises(UnknownCardError) as info:
                case.publish("detective", card_id)
            return str(info.value).replace(card_id, "<id>")

        answers = {refusal(i) for i in (theirs, foreign, board, unknown)}
        assert len(answers) == 1, answers
    finally:
        bureau.delete_case(other.id)


@pytest.mark.parametrize("limit", [0, -1, 101, math.nan, math.inf, -math.inf, True, 2.5, "5",
                                   None.__class__])
def test_bad_limits_are_typed_refusals(case, limit):
    before = len(case.events())
    with pytest.raises(InvalidArgumentError) as info:
        case.retrieve("detective", Q, limit=limit)
    assert isinstance(info.value, BureauError) and isinstance(info.value, ValueError)
    assert len(case.events()) == before


@pytest.mark.parametrize("since", [-1, math.nan, "0", 1.5])
def test_bad_event_cursors_are_typed_refusals(case, since):
    with pytest.raises(InvalidArgumentError):
        case.events(since)
