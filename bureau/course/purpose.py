"""Lesson 07 (purpose-bound memory): the questions, the invocations and the exercise.

The lesson runs the safe-combination case under the example policy
(``scenarios/policies/default.yaml``); this module holds what its cells and its check share, so
the notebook stays thin. Importing it registers the exercise ``07-purpose-rule``.

Every request is made through a handle the requester holds: ``case.agent(role)`` for a role,
``case.requester(name)`` for the chief or an outsider the policy declares (``principals:``).
A handle consulting another role is handed only what was released; the operator reads every
decision, withheld ones too, in the audit trail (:func:`audit_of`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..errors import PolicyError
from ..mediation.mediator import REASONS, Mediation, PolicyMediator
from ..mediation.policy import default_policy_path, load_policy, parse_policy
from ..service import Case
from ..service.agent import Requester
from .widgets.exercises import Exercise, Verdict, not_yet, passed, register

SAFE_Q = "What is the combination of the safe in the study?"
ALIBI_Q = "What is the alibi for Friday night?"
BOOT_Q = "What size is the muddy boot print?"

REQUESTS: dict[str, tuple[str, dict[str, str]]] = {
    "the informant, for itself": ("informant", {}),
    "the detective, investigating": ("detective", {"recipient": "other-agent",
                                                   "purpose": "investigation"}),
    "the chief, reviewing the investigation": ("chief", {"recipient": "human-reviewer",
                                                         "purpose": "investigation"}),
    "the press, for a story": ("press", {"recipient": "external", "purpose": "investigation"}),
    "the detective, gossiping": ("detective", {"recipient": "other-agent",
                                               "purpose": "gossip"}),
}
"""One question, five invocations: who asks (the principal whose handle makes the request),
for whom and for what."""
ROLE_HANDLES = {"informant", "detective"}
"""The requesters of :data:`REQUESTS` that are roles of the safe combination (the others are
principals the policy file declares)."""
LAB_K = 5
"""Policy e on the benchmark reads up to this many cards of each other agent (lesson 05's k)."""
AUDIT_VIEW = ["card_id", "card_owner", "requester", "recipient", "purpose", "action", "reasons",
              "rule", "cost", "meaning"]


def requests_table() -> pd.DataFrame:
    """The five requests of :func:`same_question`, before any is made: the handle that asks
    (what makes it that requester), for whom and why. The learner predicts from this table."""
    return pd.DataFrame([
        {"request": who, "asked through": (f'case.agent("{name}")' if name in ROLE_HANDLES
                                           else f'case.requester("{name}")'),
         "recipient": kwargs.get("recipient", "-"), "purpose": kwargs.get("purpose", "-")}
        for who, (name, kwargs) in REQUESTS.items()])


def handle(case: Case, name: str) -> Requester:
    """The handle ``name`` holds: ``case.agent(name)`` for a role, ``case.requester(name)`` for
    the chief or a declared outsider (any other name: ``UnknownPrincipalError``)."""
    return case.agent(name) if name in case.role_names else case.requester(name)


def _decided(case: Case, mediations: tuple[Mediation, ...]) -> pd.DataFrame:
    """The audit trail's decisions for these requests, request by request, in the mediator's
    order, with ``meaning`` spelling out the reason codes."""
    trail = case.audit(verify=False)
    ids = [m.invocation.id for m in mediations]
    parts = [trail[(trail["kind"] == "decision") & (trail["invocation_id"] == inv)]
             for inv in ids]
    rows = pd.concat(parts) if parts else trail.head(0)
    return rows.assign(meaning=[
        "; ".join(REASONS.get(code, code) for code in str(r or "").split(", ") if code)
        for r in rows["reasons"]]).reset_index(drop=True)


def audit_of(case: Case, *mediations: Mediation) -> pd.DataFrame:
    """The operator's view of some requests: every decision the mediator made for them, in
    order, withheld ones too (which the requester is not handed), read from the case's audit
    trail; ``meaning`` spells out the reason codes. Ids, labels and codes only, never text."""
    return _decided(case, mediations)[AUDIT_VIEW]


def plot_decisions(case: Case) -> Any:
    """Decisions per requester, stacked by action, from the case's audit trail (the operator's
    view): a :class:`bureau.figures.CourseFigure`, so it renders as PNG in any notebook."""
    from ..figures import new_figure

    decided = case.audit().query("kind == 'decision'")
    counts = decided.groupby(["requester", "action"]).size().unstack(fill_value=0)
    fig = new_figure(7, 3)
    ax = fig.add_subplot()
    counts.plot.barh(stacked=True, ax=ax,
                     title=f"{int(counts.to_numpy().sum())} decisions per requester "
                           "(from the audit trail)")
    ax.set_xlabel("decisions")
    ax.xaxis.get_major_locator().set_params(integer=True)
    return fig


def same_question(case: Case, role: str = "informant", question: str = SAFE_Q) -> pd.DataFrame:
    """Ask ``question`` once per entry of :data:`REQUESTS`, each through the requester's own
    handle; one row per request. ``answer`` is what the requester got; ``action``, ``reasons``
    and ``rule`` (of the best-ranked card) come from the audit trail, the operator's view, since
    a requester is handed no decision on a card that was withheld from it."""
    asked = [(who, handle(case, name).consult(role, question, **kwargs))
             for who, (name, kwargs) in REQUESTS.items()]
    trail = _decided(case, tuple(m for _, m in asked))
    rows = []
    for who, m in asked:
        mine = trail[trail["invocation_id"] == m.invocation.id]
        d = mine.iloc[0] if len(mine) else None
        rows.append({"request": who,
                     "action": d["action"] if d is not None else "-",
                     "reasons": d["reasons"] if d is not None else "-",
                     "rule": d["rule"] if d is not None else None,
                     "answer": m.answer.text})
    return pd.DataFrame(rows)


def _decision(case: Case, who: str, role: str, question: str, **kwargs: str) -> str:
    """The action on the best-ranked card of one request (from the audit: withheld too)."""
    decided = audit_of(case, handle(case, who).consult(role, question, **kwargs))
    return str(decided["action"].iloc[0]) if len(decided) else "nothing relevant"


def check_rule(case: Case, answer: Any) -> Verdict:
    """The student's rule, placed first in the example policy (no budget, so the check can run
    again): the judge gets the alibi for the trial, nobody else gets more than before. The judge
    and the press ask through their own handles (``case.requester``; both are principals the
    policy file declares); the decisions are read from the audit trail, withheld ones too."""
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
        judge = _decision(case, "judge", "suspect", ALIBI_Q, recipient="human-reviewer",
                          purpose="trial")
        press = _decision(case, "press", "suspect", ALIBI_Q, recipient="external",
                          purpose="trial")
        code = _decision(case, "judge", "informant", SAFE_Q, recipient="human-reviewer",
                         purpose="trial")
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

# -- policy e on a benchmark --------------------------------------------------------------------


@dataclass(frozen=True)
class MediationLab:
    """Policy e on a MAGPIE slice: the leak lab's run, and the figures lesson 07 reads from it."""

    result: Any
    """The lab's :class:`~bureau.labs.leakage.result.LabResult` (its cases already deleted)."""
    measured: dict[str, Any]
    """:func:`~bureau.labs.leakage.lesson.measured_summary`: the wiring check and what could fail."""
    note: str
    """Which data set ran (MAGPIE, or the bundled mini set when MAGPIE is not found)."""

    def headline(self) -> str:
        """The wiring check, named as one, then the figures that could have failed."""
        w, cm = self.measured["wiring_check"], self.measured["content_mediator"]
        lines = [f"wiring check (label conformance, cannot fail unless the service is broken): "
                 f"{w['private_cards_revealed']} of {w['private_card_decisions']} private-card "
                 f"decisions revealed raw"]
        if cm:
            c, r = cm["content"], cm["random"]
            lines.append(f"content mediator, labels hidden: leaks {c['leak']:.1%}, recall "
                         f"{c['recall']:.1%}; a random mediator releasing as much: {r['leak']:.1%}"
                         f" both ({cm['evaluation_decisions']} decisions)")
        for rate, r in self.measured["label_noise"].get("rates", {}).items():
            lines.append(f"labels {rate:.0%} wrong: e leaks {r['leak']:.1%}, recall {r['recall']:.1%}")
        return "\n".join(lines)

    def plot(self) -> Any:
        from ..labs.leakage.lesson import plots

        return plots.content_mediator(self.measured, self.result.lab.name)


def mediation_lab(bureau: Any, limit: int, path: str = "", k: int = LAB_K) -> MediationLab:
    """Run the leak lab (policies a-e; e consults through each requester's handle under
    ``scenarios/policies/leak-lab.yaml``) on the first ``limit`` MAGPIE scenarios, delete its
    cases, and keep what lesson 07 shows. ``path``: where MAGPIE is (lesson 05's "get the data")."""
    from ..labs.leakage.lesson import load_dataset, measured_summary, run_lab, subset

    data, note = load_dataset(path)
    result = run_lab(bureau, subset(data, limit), k=k, cleanup=True)
    return MediationLab(result, measured_summary(result), note)


register(Exercise("07-purpose-rule", "Write a policy rule for the trial", SOLUTION, check_rule))
