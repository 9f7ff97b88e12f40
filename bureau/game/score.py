"""A case's score, read off the bureau's own state: solved or not, lost or not, the moves used,
the rules kept (issue 49).

Never from what the learner says. The bureau knows what it handed out: each interrogation's
``answer.completed`` event names the role, whether it answered and the cards it cited; each
``memory.published`` event names the card copied to the board and the copy; whispers and
revocations are events too. The scorer reads those events (the operator's record) and the cards
they name, and checks them against the case file (:mod:`bureau.scenario.case_file`):

* **solved**: the asker gave a known answer citing a card that holds every answer token, and,
  when the case file asks for a source, that card is a board copy naming who published it;
* **lost**: a rule was broken: a secret (or a copy of it) reached a role it must not reach (it
  was published, so every role can read it, or a role was handed it as evidence), a decoy was
  published, or a move the case does not allow was used. A lost case stays lost: the events
  cannot be taken back.

:meth:`Score.numbers` is what an observer (the stage, the instructor's page) may see: counts and
flags, no text, no card, no answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model import BOARD, Event, MemoryCard
from ..scenario.case_file import CaseFile

if TYPE_CHECKING:
    from ..service import Case

MOVE_EVENTS = {
    "memory.whispered": "whisper",
    "answer.completed": "interrogate",
    "memory.published": "publish",
    "card.revoked": "revoke",
}
"""The events that record a move of the chief's (a publish retried after a crash is one move:
its ``memory.published`` names the same source card)."""


@dataclass(frozen=True)
class Rule:
    """One rule of the case file, and whether the case still keeps it."""

    text: str
    kept: bool
    broken_by: str = ""
    """The move that broke it, in words with ids only (never a card's text)."""


@dataclass(frozen=True)
class Score:
    case_id: str
    scenario_id: str
    case_file: CaseFile
    solved: bool
    rules: tuple[Rule, ...]
    moves: dict[str, int] = field(default_factory=dict)
    """Moves used, by kind (whisper, interrogate, publish, revoke)."""
    solved_by: str = ""
    """The card whose citation solved the case (an id), once solved."""

    @property
    def lost(self) -> bool:
        return any(not r.kept for r in self.rules)

    @property
    def moves_used(self) -> int:
        return sum(self.moves.values())

    @property
    def status(self) -> str:
        """``lost``, ``solved`` or ``open`` (a broken rule outweighs a solve)."""
        return "lost" if self.lost else "solved" if self.solved else "open"

    def verdict(self) -> str:
        """One line for the case file: where the case stands."""
        if self.lost:
            broken = next(r for r in self.rules if not r.kept)
            return f"Lost: {broken.text} ({broken.broken_by})."
        par = f" (par {self.case_file.par})" if self.case_file.par else ""
        if self.solved:
            kept = len(self.rules)
            return (f"Solved in {_n_moves(self.moves_used)}{par}, "
                    f"{'every rule' if kept else 'no rule'} kept.")
        return (f"Open: {self.case_file.asker} cannot answer yet. {_n_moves(self.moves_used)} "
                f"used{par}.")

    def numbers(self) -> dict[str, Any]:
        """What an observer may see: the scenario, flags and counts; no text, no card id."""
        return {"scenario": self.scenario_id, "status": self.status, "solved": self.solved,
                "lost": self.lost, "moves": self.moves_used,
                "rules_kept": sum(r.kept for r in self.rules), "rules": len(self.rules)}


def score(case: Case) -> Score:
    """The score of ``case`` now (the operator's view: it reads the case's cards)."""
    cf = case.scenario.case_file
    if cf is None:
        raise ValueError(f"Scenario {case.scenario.id!r} has no case file to score.")
    events = case.bureau.event_log(case.id)
    cards = _cards_by_id(case)
    published = {e.payload.get("copy_id"): e.payload.get("source_id")
                 for e in events if e.type == "memory.published"}
    moves = _moves(events)
    solved_by = _solved_by(cf, events, cards, published)
    rules = [_rule(case, cf, i, events, cards, published) for i in range(len(cf.never))]
    allowed = set(cf.moves)
    extra = sorted(k for k, n in moves.items() if n and k not in allowed)
    rules.append(Rule(f"only these moves: {', '.join(cf.moves)}", not extra,
                      f"used {', '.join(extra)}" if extra else ""))
    return Score(case.id, case.scenario.id, cf, solved_by is not None, tuple(rules), moves,
                 solved_by or "")


def _cards_by_id(case: Case) -> dict[str, MemoryCard]:
    return {c.id: c for cards in case.spaces().values() for c in cards}


def _n_moves(n: int) -> str:
    return f"{n} move" if n == 1 else f"{n} moves"


def _moves(events: list[Event]) -> dict[str, int]:
    out: dict[str, int] = {}
    seen_publishes: set[str] = set()
    for e in events:
        kind = MOVE_EVENTS.get(e.type)
        if kind is None:
            continue
        if kind == "publish":
            source = str(e.payload.get("source_id"))
            if source in seen_publishes:
                continue
            seen_publishes.add(source)
        out[kind] = out.get(kind, 0) + 1
    return out


def _holds(text: str, tokens: list[str]) -> bool:
    low = text.casefold()
    return all(t.casefold() in low for t in tokens)


def _content(card_id: str, cards: dict[str, MemoryCard], published: dict[Any, Any]) -> str | None:
    """A cited card's text: the card itself, or, for a board copy gone since, its source's."""
    if card_id in cards:
        return cards[card_id].content
    source = published.get(card_id)
    return cards[source].content if source in cards else None


def _solved_by(cf: CaseFile, events: list[Event], cards: dict[str, MemoryCard],
               published: dict[Any, Any]) -> str | None:
    for e in events:
        p = e.payload
        if e.type != "answer.completed" or p.get("role") != cf.asker or not p.get("known"):
            continue
        for card_id in p.get("cited") or []:
            text = _content(str(card_id), cards, published)
            if text is None or not _holds(text, cf.answer):
                continue
            card = cards.get(str(card_id))
            sourced = (card is not None and card.owner == BOARD and bool(card.source_role)) or \
                (card is None and card_id in published)
            if sourced or not cf.sourced:
                return str(card_id)
    return None


def _rule(case: Case, cf: CaseFile, i: int, events: list[Event], cards: dict[str, MemoryCard],
          published: dict[Any, Any]) -> Rule:
    rule = cf.never[i]
    key = rule.publish or rule.secret
    assert key is not None
    owner, _ = case.scenario.seed(key)
    try:
        seed_id = case.seed_card(key).id
    except Exception:  # noqa: BLE001 - forgotten or revoked: what came before still counts
        seed_id = None
    copies = {copy for copy, source in published.items() if source == seed_id}
    if rule.publish is not None:
        broken = seed_id is not None and bool(copies)
        return Rule(f"never publish the {owner}'s {key!r} card", not broken,
                    "it was published" if broken else "")
    targets = rule.reaches or [r for r in case.role_names if r != owner]
    if seed_id is not None and copies:
        return Rule(f"the {owner}'s {key!r} card never reaches {', '.join(targets)}", False,
                    "it was published to the board, which every role reads")
    for e in events:
        p = e.payload
        if e.type == "answer.completed" and p.get("role") in targets:
            cited = {str(c) for c in p.get("cited") or []}
            if seed_id in cited or cited & copies:
                return Rule(f"the {owner}'s {key!r} card never reaches {', '.join(targets)}",
                            False, f"{p.get('role')} was handed it as evidence")
    return Rule(f"the {owner}'s {key!r} card never reaches {', '.join(targets)}", True)


__all__ = ["MOVE_EVENTS", "Rule", "Score", "score"]
