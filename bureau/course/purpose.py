"""Lesson 07 (purpose-bound memory): the questions, the invocations and the exercise.

The lesson runs the safe-combination case under the example policy
(``scenarios/policies/default.yaml``); this module holds what its cells and its check share, so
the notebook stays thin. Importing it registers the exercise ``07-purpose-rule``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..errors import PolicyError
from ..mediation.mediator import PolicyMediator
from ..mediation.policy import default_policy_path, load_policy, parse_policy
from ..service import Case
from .widgets.exercises import Exercise, Verdict, not_yet, passed, register

SAFE_Q = "What is the combination of the safe in the study?"
ALIBI_Q = "What is the alibi for Friday night?"
BOOT_Q = "What size is the muddy boot print?"

REQUESTS: dict[str, dict[str, str]] = {
    "the informant, for itself": {},
    "the detective, investigating": {"requester": "detective", "recipient": "other-agent",
                                     "purpose": "investigation"},
    "the chief, reviewing the investigation": {"requester": "chief",
                                               "recipient": "human-reviewer",
                                               "purpose": "investigation"},
    "the press, for a story": {"requester": "press", "recipient": "external",
                               "purpose": "investigation"},
    "the detective, gossiping": {"requester": "detective", "recipient": "other-agent",
                                 "purpose": "gossip"},
}
"""One question, five invocations: who asks, for whom, for what."""


def same_question(case: Case, role: str = "informant", question: str = SAFE_Q) -> pd.DataFrame:
    """Ask ``question`` once per entry of :data:`REQUESTS`; one row per request."""
    rows = []
    for who, kwargs in REQUESTS.items():
        m = case.consult(role, question, **kwargs)
        d = m.decisions[0] if m.decisions else None
        rows.append({"request": who, "action": d.action if d else "-",
                     "reasons": ", ".join(d.reasons) if d else "-",
                     "rule": d.rule if d else None, "answer": m.answer.text})
    return pd.DataFrame(rows)


def _decision(case: Case, role: str, question: str, **kwargs: str) -> str:
    m = case.consult(role, question, **kwargs)
    return m.decisions[0].action if m.decisions else "nothing relevant"


def check_rule(case: Case, answer: Any) -> Verdict:
    """The student's rule, placed first in the example policy (no budget, so the check can run
    again): the judge gets the alibi for the trial, nobody else gets more than before."""
    if answer is None:
        return not_yet("Replace `None` with a rule: a dict with id, match and action.")
    if not isinstance(answer, dict):
        return not_yet(f"A rule is a dict (like a YAML mapping), not {type(answer).__name__}.")
    base = load_policy(default_policy_path())
    data = base.model_dump(mode="json", exclude={"source"})
    data.update(version="exercise", budget=None, rules=[answer, *data["rules"]])
    try:
        policy = parse_policy(data, source="my_rule")
    except PolicyError as exc:
        return not_yet(f"The policy refuses the rule: {exc.message}")
    bureau = case.bureau
    before = bureau.mediator
    bureau.mediator = PolicyMediator(policy)
    try:
        judge = _decision(case, "suspect", ALIBI_Q, requester="judge",
                          recipient="human-reviewer", purpose="trial")
        press = _decision(case, "suspect", ALIBI_Q, requester="press", recipient="external",
                          purpose="trial")
        code = _decision(case, "informant", SAFE_Q, requester="judge",
                         recipient="human-reviewer", purpose="trial")
    finally:
        bureau.mediator = before
    if judge != "reveal":
        return not_yet(f"The judge's request for the alibi was decided '{judge}', not "
                              "'reveal'. Match info_type, requester, recipient and purpose.")
    if press != "withhold":
        return not_yet("Your rule also lets the press read the alibi: it matches too "
                              "much. Name the recipient (human-reviewer).")
    if code == "reveal":
        return not_yet("Your rule also reveals the safe code to the judge: match only "
                              "alibis (info_type: alibi).")
    return passed("The judge gets the alibi for the trial; the press and the safe code "
                         "stay as they were. A narrow rule, first in the file.")


SOLUTION = '''my_rule = {
    "id": "alibi-for-the-trial",
    "match": {"info_type": "alibi", "requester": "judge", "recipient": "human-reviewer",
              "purpose": "trial"},
    "action": "reveal",
}'''

register(Exercise("07-purpose-rule", "Write a policy rule for the trial", SOLUTION, check_rule))
