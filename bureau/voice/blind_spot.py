"""What the phrasing check cannot catch, measured (issue 52): a wrong sentence built from the
cited cards' own words.

The check (:mod:`bureau.responders.phrasing`) reads words: a number, a time or a name must stand
in a card the reply cites. So take every card of every shipped scenario that states such a fact,
and for every other card of the same scenario that states a different fact of the same kind,
write the wrong sentence a model could write: the first card with its fact swapped for the
other's (the raincoat's "23:40" given to the boot print). Three readings:

* **invented**: the fact swapped for one no card holds (``9999``, ``Zanzibar``): caught;
* **swapped, citing one card**: the reply cites only the card it rewrote: caught;
* **swapped, citing both cards**: every word stands in a cited card: never caught. That is the
  blind spot; a model that recombines what it was handed can mislead a role this way, and only a
  reader who compares the reply with the cards (the X-ray shows both) will see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..responders.phrasing import UNSUPPORTED_FACT, check_phrasing, fact_spans
from ..scenario.loading import list_scenarios

INVENTED = {"number": "9999", "time": "dawn", "name": "Zanzibar"}


@dataclass(frozen=True)
class Reading:
    name: str
    caught: int
    total: int
    example: str = ""


@dataclass
class BlindSpot:
    readings: list[Reading] = field(default_factory=list)
    cards: int = 0
    scenarios: int = 0

    def reading(self, name: str) -> Reading:
        return next(r for r in self.readings if r.name == name)

    def table(self) -> str:
        total = self.readings[0].total if self.readings else 0
        lines = [f"{total} wrong sentences per reading, from {self.cards} cards of "
                 f"{self.scenarios} shipped scenarios",
                 f"{'reading':<32}{'caught':>8}{'of':>6}   example"]
        for r in self.readings:
            lines.append(f"{r.name:<32}{r.caught:>8}{r.total:>6}   {r.example}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()


def _swap(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def measure() -> BlindSpot:
    """Every fact swap between two cards of one scenario, read by the check three ways."""
    counts = {"invented": [0, 0, ""], "swapped, citing one card": [0, 0, ""],
              "swapped, citing both cards": [0, 0, ""]}
    n_cards = 0
    scenarios = list_scenarios()
    for scenario in scenarios:
        cards = [m.content for ms in scenario.memories.values() for m in ms]
        n_cards += len(cards)
        spans = {c: fact_spans(c) for c in cards}
        for a in cards:
            for kind, value, start, end in spans[a][:1] if spans[a] else []:
                for b in cards:
                    other = next((b[s:e] for k, v, s, e in spans[b]
                                  if k == kind and v != value
                                  and v not in {x[1] for x in spans[a]}), None)
                    if b == a or other is None:
                        continue
                    wrong = _swap(a, start, end, other)
                    fresh = _swap(a, start, end, INVENTED[kind])
                    for name, reply, cited in (("invented", fresh, [a]),
                                               ("swapped, citing one card", wrong, [a]),
                                               ("swapped, citing both cards", wrong, [a, b])):
                        verdict = check_phrasing(reply, True, cited, decided_known=True,
                                                 question="What do your notes say?")
                        c = counts[name]
                        c[0] += verdict.reason == UNSUPPORTED_FACT
                        c[1] += 1
                        c[2] = c[2] or f"{reply}  (cites {len(cited)} card(s))"
    return BlindSpot([Reading(k, int(v[0]), int(v[1]), str(v[2])) for k, v in counts.items()],
                     n_cards, len(scenarios))


__all__ = ["BlindSpot", "Reading", "measure"]
