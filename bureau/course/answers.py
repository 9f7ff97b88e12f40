"""The values the lessons' application questions check, computed out of the learner's sight
(issue 50 §2).

An application cell used to print the expression of its own answer in the code a learner runs
(``answer=len(case.cards(detective))``): reading the code answered the question. Each lesson now
passes the objects its run produced, and the answer is computed here, keyed by the question's id:

    application("01-detective-reads", bureau, "How many cards…?",
                answer=answers.of("01-detective-reads", case, detective))

Each function reads the same run the lesson's output above shows, so the box checks what the
learner reads, never a value of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Answer = float | str
_ANSWERS: dict[str, Callable[..., Answer]] = {}


def _answers(item: str) -> Callable[[Callable[..., Answer]], Callable[..., Answer]]:
    def register(fn: Callable[..., Answer]) -> Callable[..., Answer]:
        if item in _ANSWERS:
            raise ValueError(f"two answers for {item!r}")
        _ANSWERS[item] = fn
        return fn
    return register


def of(item: str, *run: Any) -> Answer:
    """The answer of the application question ``item``, from the objects of the lesson's run
    (each function below says which)."""
    try:
        fn = _ANSWERS[item]
    except KeyError:
        raise KeyError(f"no answer for application {item!r}; known: {sorted(_ANSWERS)}") from None
    return fn(*run)


def items() -> list[str]:
    """Every application id with an answer here."""
    return sorted(_ANSWERS)


@_answers("00-rules")
def rules_that_lose(case: Any) -> int:
    """Lesson 00: how many rules of the case file can lose the case (``case``)."""
    from ..game import score

    return len(score(case).rules)


@_answers("01-detective-reads")
def cards_read(case: Any, role: str) -> int:
    """Lesson 01: how many cards ``role`` reads in ``case``, its own and the board's."""
    return len(case.cards(role))


@_answers("02-scopes")
def scopes_searched(answer: Any) -> int:
    """Lesson 02: how many scopes the search behind ``answer`` read (its X-ray's count)."""
    return len(answer.trace.searched_scopes)


@_answers("03-crash-cleanups")
def cleanups_at_crash(story: Any) -> int:
    """Lesson 03: the cleanup tasks pending at ``story``'s "crash" step (its figure's)."""
    return story.at("crash")[1]


@_answers("04-blocked")
def attacks_blocked(results: Any) -> int:
    """Lesson 04: how many of the attack ``results`` were blocked."""
    return sum(bool(r.blocked) for r in results)


@_answers("05-pairs-retrieved")
def foreign_private_retrieved(result: Any) -> int:
    """Lesson 05: the private (requester, item) pairs of other agents the shared pool retrieved,
    in the lab's ``result``."""
    from ..labs.leakage.lesson import SHARED_POOL

    pairs = result.policy(SHARED_POOL)
    foreign = pairs[(pairs["label"] == "private") & (pairs["requester"] != pairs["owner"])]
    return int(foreign["retrieved"].sum())


@_answers("06-pool-disclosures")
def pool_disclosures(report: Any) -> int:
    """Lesson 06: the injections against the shared pool (``naive``) that disclosed anything,
    in the injection lab's ``report``."""
    return report.counts("naive")[0]


@_answers("07-budget-abstracts")
def abstracts_given(case: Any, asks: Any) -> int:
    """Lesson 07: how many of the requests ``asks`` got an abstract, from ``case``'s audit."""
    from .purpose import audit_of

    return int((audit_of(case, *asks)["action"] == "abstract").sum())


@_answers("08-hijacked-undefended")
def most_hijacked_undefended(table: Any) -> int:
    """Lesson 08: the most answers of the evidence voice hijacked without the in-run defence in
    one configuration of the poisoning ``table``."""
    return int(table["hijack_evidence_undefended_count"].max())


@_answers("09-longest-bar")
def longest_bar(reports: Any) -> int:
    """Lesson 09: the cited reports (RFCs left out, as the figure does) in the longest bar of
    "where the scope came from"."""
    cited = reports[reports["kind"] != "rfc"]
    return int(cited["where the scope came from"].value_counts().max())


__all__ = ["items", "of"]
