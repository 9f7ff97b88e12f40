"""The cases every system gets: the same cards, owners, board copies and questions.

A :class:`PeerCase` is built from a bureau :class:`~bureau.scenario.Scenario` (so the bureau
loads exactly it, and the peers get the same texts, character for character): the shipped
scenarios (the cards their questions publish go to the board; every other card stays private,
and every role asks every question) and MAGPIE scenarios (shareable items go to the board,
private items stay private, each agent asks its own-job query, the leak lab's headline query).
A MAGPIE *slice* of N cards is the first scenarios in file order up to N cards; when MAGPIE has
fewer, synthetic filler cases (the bench's cards, no questions) make the store N cards big, so
the largest slice measures the same questions in a store seven times fuller.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...scenario import Scenario, load_scenario, parse_scenario
from ..bench.runner import synthetic_cards
from ..leakage.datasets.convert import to_lab_scenario
from ..leakage.datasets.magpie import load_magpie

SHIPPED = ("safe-combination", "the-mole", "ward-seven")
FILLER_CASE_CARDS = 500
FILLER_ROLES = ("clerk", "archivist", "courier")


@dataclass(frozen=True)
class PeerCard:
    key: str
    owner: str
    text: str
    private: bool
    """Stays in its owner's space only (what another role must never be handed)."""
    published: bool
    """A copy goes to the board, which every role of the case reads."""


@dataclass(frozen=True)
class PeerCase:
    case_id: str
    scenario: Scenario
    cards: tuple[PeerCard, ...]
    questions: tuple[tuple[str, str], ...]
    """(asking role, question)."""

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.scenario.roles)

    @property
    def stored(self) -> int:
        """Cards in the store: every card plus one board copy per published card."""
        return len(self.cards) + sum(c.published for c in self.cards)


def _cards(scenario: Scenario, published: set[str], private: set[str]) -> tuple[PeerCard, ...]:
    return tuple(PeerCard(m.key, role, m.content, m.key in private, m.key in published)
                 for role, mems in scenario.memories.items() for m in mems)


def shipped_case(scenario_id: str, tag: str) -> PeerCase:
    """A shipped scenario: its questions' ``publish`` cards on the board, the rest private."""
    sc = load_scenario(scenario_id)
    published = {q.publish for q in sc.questions if q.publish}
    keys = {m.key for _, m in sc.seeds()}
    roles = [r.name for r in sc.roles]
    questions = tuple((r, q.text) for q in sc.questions for r in roles)
    return PeerCase(f"{sc.id}-{tag}", sc, _cards(sc, published, keys - published), questions)


def filler_case(n: int, index: int, tag: str, seed: int) -> PeerCase:
    """``n`` synthetic private cards spread over three roles; nobody asks anything."""
    texts = synthetic_cards(n, seed=seed)
    memories = {r: [{"key": f"f{i:05d}", "topic": "filler", "kind": "note", "content": t}
                    for i, t in enumerate(texts) if i % len(FILLER_ROLES) == j]
                for j, r in enumerate(FILLER_ROLES)}
    sc = parse_scenario({"id": f"filler-{index}", "title": f"Filler {index}",
                         "roles": [{"name": r, "title": r.title()} for r in FILLER_ROLES],
                         "memories": memories})
    keys = {m.key for _, m in sc.seeds()}
    return PeerCase(f"filler-{index}-{tag}", sc, _cards(sc, set(), keys), ())


def magpie_slice(cards: int, tag: str, dataset: str | Path | None = None) -> list[PeerCase]:
    """The first MAGPIE scenarios (file order) up to ``cards`` stored cards, then filler."""
    data = load_magpie(dataset)
    by_id = {s.scenario_id: s for s in data.scenarios}
    order = data.file_order or tuple(by_id)
    out: list[PeerCase] = []
    total = 0
    for sid in order:
        if total >= cards:
            break
        lab = to_lab_scenario(by_id[sid])
        sc = lab.scenario
        labels = {m.key: m.kind for _, m in sc.seeds()}
        published = {k for k, v in labels.items() if v == "shareable"}
        private = {k for k, v in labels.items() if v == "private"}
        # The stem is a cut slug: two MAGPIE scenarios can share one, so the position counts too.
        case = PeerCase(f"{lab.case_stem}-{len(out)}-{tag}", sc, _cards(sc, published, private),
                        tuple((a.role, a.query) for a in lab.agents))
        out.append(case)
        total += case.stored
    index = 0
    while total < cards:
        n = min(FILLER_CASE_CARDS, cards - total)
        out.append(filler_case(n, index, tag, seed=1000 + index))
        total += n
        index += 1
    return out


def shipped_cases(tag: str) -> list[PeerCase]:
    return [shipped_case(s, tag) for s in SHIPPED]


__all__ = ["PeerCard", "PeerCase", "filler_case", "magpie_slice", "shipped_case",
           "shipped_cases"]
