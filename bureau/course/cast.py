"""Who plays which part in lessons 00-03, read from the case's scenario.

The lessons tell one story in parts. In the safe-combination case (the worked example of the
lessons' prose) the parts are played by:

=============  ===============================================================  ==============
part           what the lessons need from it                                    safe-combination
=============  ===============================================================  ==============
``secret``     the card of the scenario's first publish question                ``safe-code``
``holder``     who holds the secret (the card's owner)                          informant
``outsider``   the case file's asker (else the first role that cannot answer   detective
               the secret before publishing)
``bystander``  the last role that cannot answer it before publishing            suspect
``testimony``  a card only its owner can answer about (not holder, outsider)    ``alibi``
``witness``    the testimony's owner                                            suspect
``evidence``   the last publish question on another topic (lesson 03 exercise)  ``footprint``
``spare``      a card no question publishes, the evidence owner's if any        ``cctv``
``decoy``      the case file's first card never to publish (lesson 04's trial)  ``wrong-code``
``mole``       the decoy's owner                                                suspect
=============  ===============================================================  ==============

Casting lives here, computed from ``case.scenario`` (roles, memories with keys, and questions
with ``publish`` and ``knowers_before``/``knowers_after``), and not in the notebooks or in the
exercise checks, so that a lesson runs with any scenario (``papermill -p scenario the-mole``)
and its check cell judges the roles that scenario actually has. Every rule has a fallback, so
a small scenario (two roles, one publish question) still gets a complete cast; only a scenario
that gives the lessons nothing to publish is refused, with a message saying so.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ScenarioError
from ..scenario import Question, Scenario

if TYPE_CHECKING:
    from ..service import Case


@dataclass(frozen=True)
class Fact:
    """A seed card, who holds it, and the scenario's question about it (if it asks one)."""

    key: str
    owner: str
    topic: str
    question: str | None = None
    knowers_before: tuple[str, ...] = ()
    knowers_after: tuple[str, ...] = ()


def scenario_of(case_or_scenario: Case | Scenario) -> Scenario:
    """The scenario itself, or the one a case was opened from (lessons pass either)."""
    if isinstance(case_or_scenario, Scenario):
        return case_or_scenario
    return case_or_scenario.scenario


STORY_NAMES = ("informant", "detective", "suspect")
"""The names the lessons' prose and code give the holder, the asker and the witness."""


@dataclass(frozen=True)
class Cast:
    """The parts of the lessons' story, each played by a role or a seed card of one scenario."""

    scenario_id: str
    roles: tuple[str, ...]
    secret: Fact
    outsider: str
    bystander: str
    testimony: Fact
    evidence: Fact
    spare: Fact
    decoy: Fact | None = None
    title: str = ""
    """The scenario's title, as the console and the case file show it."""

    @property
    def mole(self) -> str | None:
        """Who holds the decoy: its tip is relevant to the case's question, and wrong."""
        return None if self.decoy is None else self.decoy.owner

    @property
    def holder(self) -> str:
        """Who holds the secret; publishing it is the lessons' first move."""
        return self.secret.owner

    @property
    def witness(self) -> str:
        """The role that alone holds the testimony: lessons 01-02 whisper to it and ask it."""
        return self.testimony.owner

    @classmethod
    def of(cls, case_or_scenario: Case | Scenario) -> Cast:
        """The cast of a case (or of a scenario before any case is opened)."""
        return _cast(scenario_of(case_or_scenario))

    def story_roles(self) -> tuple[str, str, str]:
        """``informant, detective, suspect = cast.story_roles()``: the roles under the names
        the lessons' story gives them, so a lesson's code reads
        ``case.interrogate(detective, ...)`` rather than ``cast.outsider``.

        The names are the safe-combination's roles and, in that case, their values too
        (holder, outsider, witness); another scenario's roles play the same parts under the
        same Python names, which is what lets CI run a lesson with ``-p scenario the-mole``.
        """
        return self.holder, self.outsider, self.witness

    def legend(self) -> str:
        """The line a lesson prints first: the lessons' prose names the safe combination's roles
        (informant, detective, suspect); under another scenario it says which role plays each, so
        the text reads true whatever case runs (issue 48 §5)."""
        names = dict(zip(STORY_NAMES, self.story_roles(), strict=True))
        case = f"Your case: {self.title or self.scenario_id}."
        if all(story == role for story, role in names.items()):
            return f"{case} Its roles are the ones the text names."
        pairs = ", ".join(f"the {story} is the {role}" for story, role in names.items()
                          if story != role)
        return f"{case} The text names the safe combination's roles; in yours {pairs}."

    def parts(self) -> list[tuple[str, str]]:
        """``(part, who or which card)`` rows, in the order the lessons meet them."""
        card = "{0.key} ({0.owner}'s card)".format
        return [
            ("holder", self.holder), ("secret", card(self.secret)),
            ("outsider", self.outsider), ("bystander", self.bystander),
            ("witness", self.witness), ("testimony", card(self.testimony)),
            ("evidence", card(self.evidence)), ("spare", card(self.spare)),
            *([("decoy", card(self.decoy))] if self.decoy is not None else []),
        ]

    def __repr__(self) -> str:
        rows = ", ".join(f"{part}={who}" for part, who in self.parts())
        return f"<Cast of {self.scenario_id}: {rows}>"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>cast.{part}</code></td><td>{html.escape(who)}</td></tr>"
            for part, who in self.parts()
        )
        return (
            f'<div class="bureau-cast"><b>Who plays which part in '
            f"<code>{html.escape(self.scenario_id)}</code></b>"
            f"<table><tr><th>part</th><th>played by</th></tr>{rows}</table></div>"
        )


def _fact(scenario: Scenario, key: str, question: Question | None = None) -> Fact:
    owner, memory = scenario.seed(key)
    if question is None:  # the question that publishes the card, else one only asking about it
        question = next((q for q in scenario.questions if q.publish == key), None) or next(
            (q for q in scenario.questions if q.publish is None and q.topic == memory.topic
             and owner in q.knowers_before), None)
    if question is None:
        return Fact(key=key, owner=owner, topic=memory.topic)
    return Fact(
        key=key, owner=owner, topic=memory.topic, question=question.text,
        knowers_before=tuple(question.knowers_before), knowers_after=tuple(question.knowers_after),
    )


def fact(scenario: Scenario, key: str) -> Fact:
    """The seed card ``key``, who holds it, and the question that publishes or asks about it
    (lesson 07 picks its testimony among these)."""
    return _fact(scenario, key)


def _card_answering(scenario: Scenario, q: Question, role: str) -> str | None:
    """The key of ``role``'s card that ``q`` is about: the one it publishes, else one on its topic.

    A question without ``publish`` names no card, so its topic is the link; the answer key
    (``knowers_before == [role]``) promises the role holds a card that answers it.
    """
    if q.publish is not None:
        return q.publish
    return next((m.key for m in scenario.memories.get(role, []) if m.topic == q.topic), None)


def _cast(s: Scenario) -> Cast:
    roles = s.role_names
    publishing = [q for q in s.questions if q.publish is not None]
    decoys = [r.publish for r in s.case_file.never if r.publish] if s.case_file else []
    misled = {s.seed(key)[0] for key in decoys}  # they "know" a wrong answer
    # The secret: the first publish question that leaves someone out before publication (a
    # role that knows only a decoy is left out of the truth).
    for q in publishing:
        owner = s.seed(q.publish)[0]  # type: ignore[arg-type]
        outsiders = [r for r in roles if r not in q.knowers_before or (r in misled and r != owner)]
        if outsiders:
            secret_q = q
            break
    else:
        raise ScenarioError(
            f"Scenario {s.id!r} gives lessons 00-03 nothing to publish: they need a question "
            "with `publish` that some role cannot answer before publication "
            "(see scenarios/README.md)."
        )
    secret = _fact(s, secret_q.publish, secret_q)  # type: ignore[arg-type]
    outsider, bystander = outsiders[0], outsiders[-1]
    asker = s.case_file.asker if s.case_file is not None else None
    if asker in outsiders:  # the game's asker plays the outsider (issue 49)
        others = [r for r in outsiders if r != asker]
        outsider, bystander = asker, (others[-1] if others else asker)

    # The testimony: a card only its owner can answer about, preferably a role that plays no other
    # part yet; a publish question counts too (its answer key is about the fresh case); the
    # secret itself is the last resort (its holder knows, the outsider does not, by construction).
    testimony = None
    for exclude, questions in (
        ({secret.owner, outsider}, [q for q in s.questions if q.publish is None]),
        ({outsider}, s.questions),
    ):
        for q in questions:
            if len(q.knowers_before) == 1 and q.knowers_before[0] not in exclude:
                key = _card_answering(s, q, q.knowers_before[0])
                if key is not None:
                    testimony = _fact(s, key, q)
                    break
        if testimony is not None:
            break
    testimony = testimony or secret

    # The evidence: the last publish question about another topic than the secret, so that
    # publishing the secret first does not already answer it; never a card the case file's
    # rules forbid to spread (publishing it would lose the game, issue 49).
    forbidden = ({r.secret or r.publish for r in s.case_file.never} if s.case_file is not None
                 else set())
    others = [q for q in publishing if q.publish != secret.key and q.publish not in forbidden]
    evidence_q = next((q for q in reversed(others) if q.topic != secret.topic), None)
    evidence_q = evidence_q or (others[-1] if others else None)
    if evidence_q is not None:
        evidence = _fact(s, evidence_q.publish, evidence_q)  # type: ignore[arg-type]
    else:  # nothing left to publish by question: another card free to spread
        free = [m.key for _, m in s.seeds() if m.key not in forbidden | {secret.key}]
        evidence = _fact(s, free[0]) if free else secret

    # The spare: a card no question publishes (lesson 03 crashes its publication on purpose).
    published = {q.publish for q in publishing} | {evidence.key}
    seeds = [(role, m.key) for role, m in s.seeds() if m.key not in forbidden]
    candidates = (
        [k for role, k in seeds if role == evidence.owner and k not in published],
        [k for _, k in seeds if k not in published and k != testimony.key],
        [k for _, k in seeds if k not in published],
        [k for _, k in seeds if k not in (secret.key, evidence.key)],
        [evidence.key],
    )
    spare = _fact(s, next(keys[0] for keys in candidates if keys))
    return Cast(
        scenario_id=s.id, roles=tuple(roles), secret=secret, outsider=outsider,
        bystander=bystander, testimony=testimony, evidence=evidence, spare=spare,
        decoy=_fact(s, decoys[0]) if decoys else None, title=s.title,
    )
