"""Lesson 07 (purpose-bound memory): its cast, the questions, the invocations and the exercise.

The lesson runs any bundled scenario under the example policy (``scenarios/policies/default.yaml``);
this module holds what its cells and its check share, so the notebook stays thin. Importing it
registers the exercise ``07-purpose-rule``.

Roles and cards are data: :class:`PurposeCast` reads them from the case's scenario (lessons
00-03's :class:`~bureau.course.cast.Cast` and the cards' policy labels), so the lesson and its
check judge the roles the scenario has (``papermill -p scenario ward-seven``).

Every request is made through a handle the requester holds: ``case.agent(role)`` for a role,
``case.requester(name)`` for the chief or an outsider the policy declares (``principals:``).
A handle consulting another role is handed only what was released; the operator reads every
decision, withheld ones too, in the audit trail (:func:`audit_of`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import PolicyError, ScenarioError
from ..mediation.mediator import REASONS, Mediation, PolicyMediator
from ..mediation.policy import default_policy_path, load_policy, parse_policy
from ..scenario import Scenario
from ..service.agent import Requester
from .cast import Cast, Fact, fact, scenario_of
from .widgets.exercises import Exercise, Verdict, not_yet, passed, register

if TYPE_CHECKING:
    from ..service import Case

GUARDED = "restricted"
"""The sensitivity of the secret: the example policy hands a restricted card to a reviewer only
with the owner's grant (rule ``restricted-needs-approval``), which the lesson demonstrates."""


@dataclass(frozen=True)
class Labelled:
    """A seed card of the lesson, with the policy labels the lesson's requests depend on."""

    fact: Fact
    sensitivity: str | None
    info_type: str | None
    abstraction: str | None

    @property
    def key(self) -> str:
        return self.fact.key

    @property
    def owner(self) -> str:
        return self.fact.owner

    @property
    def question(self) -> str:
        return self.fact.question or ""

    @classmethod
    def of(cls, scenario: Scenario, f: Fact) -> Labelled:
        memory = scenario.seed(f.key)[1]
        return cls(f, memory.sensitivity, memory.info_type, memory.abstraction)


@dataclass(frozen=True)
class PurposeCast:
    """Who plays which part in lesson 07, read from one scenario (safe combination in brackets).

    ``secret`` (``safe-code``): lessons 00-03's secret, which must be labelled ``restricted``
    with a safe abstraction; its ``holder`` (informant) is asked five times, one of them by
    the ``colleague`` (detective: lessons 00-03's outsider). ``testimony`` (``alibi``): a
    card of a ``witness`` (suspect) other than the holder, with an abstraction and an
    ``info_type`` of its own (the trial exercise matches on it), asked again and again by the
    ``asker`` (detective) until the budget runs out. ``evidence`` (``footprint``): lessons
    00-03's evidence, which its ``publisher`` (detective) publishes and a ``reader`` (suspect)
    finds on the board until the operator revokes it.
    """

    scenario_id: str
    title: str
    secret: Labelled
    colleague: str
    testimony: Labelled
    asker: str
    evidence: Fact
    reader: str

    @property
    def holder(self) -> str:
        return self.secret.owner

    @property
    def witness(self) -> str:
        return self.testimony.owner

    @property
    def publisher(self) -> str:
        return self.evidence.owner

    @classmethod
    def of(cls, case_or_scenario: Case | Scenario) -> PurposeCast:
        """The lesson's cast for a case (or a scenario); ``ScenarioError`` says what is missing."""
        return _purpose_cast(scenario_of(case_or_scenario))

    def requests(self) -> dict[str, tuple[str, dict[str, str]]]:
        """One question, five invocations: who asks (the principal whose handle makes the
        request), for whom and for what."""
        h, c = self.holder, self.colleague
        return {
            f"the {h}, for itself": (h, {}),
            f"the {c}, investigating": (c, {"recipient": "other-agent",
                                            "purpose": "investigation"}),
            "the chief, reviewing the investigation": ("chief", {"recipient": "human-reviewer",
                                                                 "purpose": "investigation"}),
            "the press, for a story": ("press", {"recipient": "external",
                                                 "purpose": "publication"}),
            f"the {c}, gossiping": (c, {"recipient": "other-agent", "purpose": "gossip"}),
        }

    def parts(self) -> list[tuple[str, str]]:
        """``(part, who or which card)`` rows, in the order the lesson meets them."""
        def card(c: Labelled) -> str:
            return f"{c.key} ({c.owner}'s card; {c.sensitivity}, info_type {c.info_type})"

        return [("holder", self.holder), ("secret", card(self.secret)),
                ("colleague", self.colleague), ("witness", self.witness),
                ("testimony", card(self.testimony)), ("asker", self.asker),
                ("publisher", self.publisher), ("evidence", f"{self.evidence.key} "
                                                            f"({self.publisher}'s card)"),
                ("reader", self.reader)]

    def __repr__(self) -> str:
        return f"<PurposeCast of {self.scenario_id}: " + ", ".join(
            f"{part}={who}" for part, who in self.parts()) + ">"

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td><code>cast.{part}</code></td><td>{html.escape(who)}</td></tr>"
                       for part, who in self.parts())
        return (f'<div class="bureau-cast"><b>Who plays which part in {html.escape(self.title)}'
                f" (<code>{html.escape(self.scenario_id)}</code>)</b>"
                f"<table><tr><th>part</th><th>played by</th></tr>{rows}</table></div>")

    def trial_brief(self) -> str:
        """The exercise, in this scenario's roles and cards (the notebook prints it)."""
        t, s = self.testimony, self.secret
        return (f"The judge needs the {t.owner}'s card {t.key!r} (info_type {t.info_type!r}; "
                f"question: {t.question!r}) for the trial: requester 'judge', recipient "
                "'human-reviewer', purpose 'trial'.\nWrite one rule that reveals it to the judge "
                f"and nothing else: the press must still get nothing, and the judge must not get "
                f"the {s.owner}'s {s.key!r} (info_type {s.info_type!r}).")


def _purpose_cast(s: Scenario) -> PurposeCast:
    cast = Cast.of(s)
    secret = Labelled.of(s, cast.secret)
    if secret.sensitivity != GUARDED or not secret.abstraction or not secret.info_type:
        raise ScenarioError(
            f"Scenario {s.id!r} gives lesson 07 no guarded secret: its card {secret.key!r} "
            f"needs the labels sensitivity: {GUARDED}, an info_type and an abstraction "
            "(scenarios/README.md, 'Labels').")
    # The testimony: lessons 00-03's if it qualifies, else the first labelled card that does.
    candidates = [cast.testimony] + [fact(s, m.key) for _, m in s.seeds()]
    testimony = next((t for t in (Labelled.of(s, f) for f in candidates)
                      if t.owner != secret.owner and t.abstraction and t.sensitivity
                      and t.info_type and t.info_type != secret.info_type and t.question),
                     None)
    if testimony is None:
        raise ScenarioError(
            f"Scenario {s.id!r} gives lesson 07 no testimony: it needs a card of another role "
            f"than {secret.owner!r} with a sensitivity, an abstraction, an info_type other than "
            f"{secret.info_type!r} and a question about it (scenarios/README.md, 'Labels').")
    roles = list(s.role_names)
    asker = next(r for r in [cast.outsider, *roles, secret.owner] if r != testimony.owner)
    learners = [r for r in cast.evidence.knowers_after if r not in cast.evidence.knowers_before]
    reader = learners[-1] if learners else cast.bystander
    return PurposeCast(scenario_id=s.id, title=s.title, secret=secret, colleague=cast.outsider,
                       testimony=testimony, asker=asker, evidence=cast.evidence, reader=reader)


AUDIT_VIEW = ["card_id", "card_owner", "requester", "recipient", "purpose", "action", "reasons",
              "rule", "cost", "meaning"]
LAB_K = 5
"""Policy e on the benchmark reads up to this many cards of each other agent (lesson 05's k)."""


def requests_table(case: Case) -> pd.DataFrame:
    """The five requests of :func:`same_question`, before any is made: the handle that asks
    (what makes it that requester), for whom and why. The learner predicts from this table."""
    roles = set(case.role_names)
    return pd.DataFrame([
        {"request": who, "asked through": (f'case.agent("{name}")' if name in roles
                                           else f'case.requester("{name}")'),
         "recipient": kwargs.get("recipient", "-"), "purpose": kwargs.get("purpose", "-")}
        for who, (name, kwargs) in PurposeCast.of(case).requests().items()])


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


def same_question(case: Case) -> pd.DataFrame:
    """Ask the secret's question of its holder once per entry of
    :meth:`PurposeCast.requests`, each through the requester's own handle; one row per request. ``answer`` is what the requester got; ``action``, ``reasons``
    and ``rule`` (of the best-ranked card) come from the audit trail, the operator's view, since
    a requester is handed no decision on a card that was withheld from it."""
    cast = PurposeCast.of(case)
    asked = [(who, handle(case, name).consult(cast.holder, cast.secret.question, **kwargs))
             for who, (name, kwargs) in cast.requests().items()]
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
    again): the judge gets the testimony for the trial, nobody else gets more than before. The
    judge and the press ask through their own handles (``case.requester``; both are principals
    the policy file declares); the decisions are read from the audit trail, withheld ones too.
    Roles, cards and questions are the case's (:class:`PurposeCast`)."""
    if answer is None:
        return not_yet("Replace `None` with a rule: a dict with id, match and action.")
    if not isinstance(answer, dict):
        return not_yet(f"A rule is a dict (like a YAML mapping), not {type(answer).__name__}.")
    cast = PurposeCast.of(case)
    t, s = cast.testimony, cast.secret
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
        judge = _decision(case, "judge", t.owner, t.question, recipient="human-reviewer",
                          purpose="trial")
        press = _decision(case, "press", t.owner, t.question, recipient="external",
                          purpose="trial")
        secret = _decision(case, "judge", s.owner, s.question, recipient="human-reviewer",
                           purpose="trial")
    finally:
        bureau.mediator = before
    if judge != "reveal":
        return not_yet(f"The judge's request for the {t.owner}'s {t.key!r} was decided "
                       f"'{judge}', not 'reveal'. Match info_type, requester, recipient and "
                       "purpose.")
    if press != "withhold":
        return not_yet(f"Your rule also lets the press read the {t.owner}'s {t.key!r}: it "
                       "matches too much. Name the recipient (human-reviewer).")
    if secret == "reveal":
        return not_yet(f"Your rule also reveals the {s.owner}'s {s.key!r} to the judge: match "
                       f"only the testimony's kind (info_type: {t.info_type}).")
    return passed(f"The judge gets the {t.owner}'s {t.key!r} for the trial; the press and the "
                  f"{s.owner}'s {s.key!r} stay as they were. A narrow rule, first in the file.")


SOLUTION = '''my_rule = {
    "id": "testimony-for-the-trial",
    "match": {"info_type": cast.testimony.info_type, "requester": "judge",
              "recipient": "human-reviewer", "purpose": "trial"},
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

    def require(self) -> str:
        """Check, on this run, what lesson 07 says of the content mediator: it leaks less than a
        random mediator releasing as much, and still releases private cards and withholds
        shareable ones. One line when it holds, else
        :class:`~bureau.labs.leakage.claims.ClaimError` naming the figures (issue 48)."""
        from ..labs.leakage.claims import ClaimError, compare

        cm = self.measured["content_mediator"]
        if not cm:
            raise ClaimError("Too few decisions on this run for a content mediator: the lesson's "
                             "sentences about it cannot be checked.")
        c, r = cm["content"], cm["random"]
        failed = []
        if compare(c["leak"], r["leak"]) != "less than":
            failed.append(f"'the content mediator leaks less than a random one' (content "
                          f"{c['leak']:.1%}, random {r['leak']:.1%})")
        if not c["leak"] > 0:
            failed.append(f"'it still releases private cards' (leak {c['leak']:.1%})")
        if not c["recall"] < 1:
            failed.append(f"'it holds back shareable ones' (recall {c['recall']:.1%})")
        if failed:
            raise ClaimError(f"On this run ({len(self.result.lab)} scenarios) the lesson's text "
                             f"does not hold: {'; '.join(failed)}.")
        return (f"Checked on this run ({len(self.result.lab)} scenarios): the content mediator "
                f"leaks less than a random one releasing as much ({c['leak']:.1%} against "
                f"{r['leak']:.1%}), releases some private cards and holds back some shareable "
                "ones.")


def mediation_lab(bureau: Any, limit: int, path: str = "", k: int = LAB_K) -> MediationLab:
    """Run the leak lab (policies a-e; e consults through each requester's handle under
    ``scenarios/policies/leak-lab.yaml``) on the first ``limit`` MAGPIE scenarios, delete its
    cases, and keep what lesson 07 shows. ``path``: where MAGPIE is (lesson 05's "get the data")."""
    from ..labs.leakage.lesson import load_dataset, measured_summary, run_lab, subset

    data, note = load_dataset(path)
    result = run_lab(bureau, subset(data, limit), k=k, cleanup=True)
    return MediationLab(result, measured_summary(result), note)


register(Exercise("07-purpose-rule", "Write a policy rule for the trial", SOLUTION, check_rule))
