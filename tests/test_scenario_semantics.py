"""The answer keys are claims about embeddings: check them with the real encoder.

A role answers from the cards it may search (its own private cards plus the board), and a card
counts only at or above the relevance threshold. So for every question the roles with a card at
or above the threshold must be exactly ``knowers_before``; after the ``publish`` card is copied to
the board (visible to every role) they must be exactly ``knowers_after``. Every question-card
score must also stay at least ``MIN_MARGIN`` away from the threshold, so that a different CPU or
onnxruntime build cannot flip a lesson's outcome.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from bureau.embedding import shared_minilm
from bureau.scenario import SCENARIO_DIR, Question, Scenario, list_scenarios, parse_scenario
from bureau.settings import Settings

THRESHOLD = Settings().relevance_threshold
MIN_MARGIN = 0.10
"""Shipped texts keep every score at least this far from the threshold (they reach ~0.15)."""


def expected_knowers(
    scenario: Scenario, question: Question, row: np.ndarray, *, published: bool
) -> set[str]:
    """The roles that can answer, given the question's scores against every seed card.

    ``row[j]`` is the cosine between the question and the j-th card of ``scenario.seeds()``.
    With ``published``, the ``publish`` card is also on the board, where every role finds it.
    """
    cards = list(scenario.seeds())
    knowers = {owner for (owner, _), score in zip(cards, row, strict=True) if score >= THRESHOLD}
    if published and question.publish is not None:
        j = next(j for j, (_, card) in enumerate(cards) if card.key == question.publish)
        if row[j] >= THRESHOLD:
            knowers |= set(scenario.role_names)
    return knowers


def scores(scenario: Scenario) -> np.ndarray:
    """Question x card cosine matrix (the encoder's vectors are L2-normalised)."""
    encoder = shared_minilm()
    questions = encoder.embed([q.text for q in scenario.questions])
    cards = encoder.embed([card.content for _, card in scenario.seeds()])
    return questions @ cards.T


def table(scenario: Scenario, matrix: np.ndarray) -> str:
    """The matrix as text, for failure messages: what to rewrite and by how much."""
    keys = [f"{owner}:{card.key}" for owner, card in scenario.seeds()]
    lines = ["cards: " + ", ".join(f"c{j}={k}" for j, k in enumerate(keys))]
    for i, q in enumerate(scenario.questions):
        cells = " ".join(f"c{j}={s:+.2f}" for j, s in enumerate(matrix[i]))
        lines.append(f"q{i} {q.text!r}: {cells}")
    return "\n".join(lines)


def check(scenario: Scenario) -> tuple[list[str], float, str]:
    """Mismatches between the answer key and the scores, the smallest margin, and where it is."""
    matrix = scores(scenario)
    problems: list[str] = []
    for i, q in enumerate(scenario.questions):
        before = expected_knowers(scenario, q, matrix[i], published=False)
        after = expected_knowers(scenario, q, matrix[i], published=True)
        if before != set(q.knowers_before):
            problems.append(
                f"questions[{i}] {q.text!r}: retrieval gives knowers_before {sorted(before)}, "
                f"the file says {sorted(q.knowers_before)}"
            )
        if after != set(q.knowers_after):
            problems.append(
                f"questions[{i}] {q.text!r}: retrieval gives knowers_after {sorted(after)}, "
                f"the file says {sorted(q.knowers_after)}"
            )
    gaps = np.abs(matrix - THRESHOLD)
    i, j = np.unravel_index(int(np.argmin(gaps)), gaps.shape)
    owner, card = list(scenario.seeds())[j]
    where = f"questions[{i}] vs {owner}:{card.key} scores {matrix[i, j]:.3f}"
    if problems:
        problems.append(table(scenario, matrix))
    return problems, float(gaps.min()), where


@pytest.mark.parametrize("scenario", list_scenarios(), ids=lambda s: s.id)
def test_answer_keys_match_retrieval(scenario: Scenario) -> None:
    problems, margin, where = check(scenario)
    assert not problems, "\n".join(problems)
    assert margin >= MIN_MARGIN, (
        f"{scenario.id}: a score is only {margin:.3f} from the threshold {THRESHOLD} ({where}); "
        "reword the question or the card"
    )


def test_readme_minimal_example_matches_retrieval() -> None:
    readme = (SCENARIO_DIR / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## A minimal example\s+```yaml\n(.*?)```", readme, re.S)
    assert block is not None
    problems, margin, where = check(parse_scenario(yaml.safe_load(block.group(1))))
    assert not problems, "\n".join(problems)
    assert margin >= MIN_MARGIN, where


def test_the_check_can_fail() -> None:
    """A wrong answer key is caught: the alibi is not known to the informant."""
    safe = next(s for s in list_scenarios() if s.id == "safe-combination")
    data = safe.to_dict()
    alibi = next(q for q in data["questions"] if q["topic"] == "alibi")
    alibi["knowers_before"] = alibi["knowers_after"] = ["suspect", "informant"]
    problems, _, _ = check(parse_scenario(data))
    assert problems[0] == (
        "questions[1] 'What is the alibi for Friday night?': retrieval gives knowers_before "
        "['suspect'], the file says ['informant', 'suspect']"
    )
