"""The administrator: one episode, turned into the writes, forgets and access changes the bureau
executes, in the episode's order, from its principals, relationships and turns alone.

For each turn, in order (the rules are in :mod:`bureau.labs.gatemem.rules`):

1. an access end that has fallen due by the turn's time is applied (a new policy version);
2. the grants and revocations the turn's notes make on its matter (:mod:`.rules.notes`) are
   applied (a new policy version if anything changed);
3. a deletion request (:mod:`.rules.deletions`) forgets every live card holding a deleted
   value and writes its redacted copy in the same space;
4. the turn becomes one card: its kind (:mod:`.rules.kinds`) and its matter
   (:mod:`.rules.matters`) say where -- a ``private`` turn, or one of no matter, in its
   speaker's own space, any other in its matter's record -- with every value deleted so far
   replaced by ``[deleted]``. Grants on a record card: its speaker keeps the use of what it
   said (a grant, when its level on the matter would not let it), and a credential card is
   granted to its speaker and to the principals it names (need to know).

The policy of each version (:meth:`EpisodePlan.policy`) is an ordinary bureau policy file:
own space revealed to its owner; a record's ``record`` and ``logistics`` cards to its full
readers, its ``logistics`` cards to its limited readers, its ``credential`` cards to its
credentials readers; anything else withheld (a credential card's grants lift that for the
principals it names). :func:`may_use` is the same rule as a function, so the lab can say why a
card was out of reach and check that the bureau's decisions agree with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from bureau.labs.gatemem.dataset import Episode
from bureau.labs.gatemem.rules.deletions import Deletion, holds, read_deletion, redact
from bureau.labs.gatemem.rules.kinds import CREDENTIAL, LOGISTICS, PRIVATE, RECORD, kind_of
from bureau.labs.gatemem.rules.matters import (
    CREDENTIALS,
    FULL,
    LIMITED,
    Matter,
    attribute,
    matters,
    principal_names,
)
from bureau.labs.gatemem.rules.notes import EXPIRE, GRANT, REVOKE, Note, read_notes

State = dict[str, dict[str, str]]
"""Matter key -> principal -> level: who may read each record, in one policy version."""


@dataclass(frozen=True)
class Write:
    """One card: the turn it comes from, where it goes, what it holds."""

    key: str
    turn_id: str
    index: int
    owner: str
    """A record role (``rec-<n>``) or the speaker's own space (its principal id)."""
    matter: str | None
    speaker: str
    kind: str
    text: str
    grantees: tuple[str, ...] = ()
    replaces: str | None = None
    """For a redacted copy: the key of the card it stands in for."""


@dataclass(frozen=True)
class Forget:
    keys: tuple[str, ...]
    turn_id: str
    index: int
    values: tuple[str, ...]


@dataclass(frozen=True)
class Access:
    version: int
    turn_id: str
    index: int
    changes: tuple[str, ...]


Step = Write | Forget | Access


@dataclass
class EpisodePlan:
    """What the administrator decided for one episode, and the counts the report shows."""

    episode: Episode
    matters: list[Matter]
    steps: list[Step]
    states: list[State]
    notes: list[Note] = field(default_factory=list)
    deletions: list[Deletion] = field(default_factory=list)
    attributions: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    redacted_turns: int = 0
    undated_ends: int = 0
    notes_without_matter: int = 0

    @property
    def roles(self) -> list[str]:
        return [p.pid for p in self.episode.principals] + [m.role for m in self.matters]

    def matter_of_role(self, role: str) -> Matter | None:
        return next((m for m in self.matters if m.role == role), None)

    def policy(self, version: int, slug: str | None = None) -> dict[str, Any]:
        """Policy ``version`` as a bureau policy file's data (module docstring)."""
        state = self.states[version]
        rules: list[dict[str, Any]] = [
            {"id": "own-space", "match": {"requester_is_owner": True}, "action": "reveal",
             "note": "A principal uses what it said and what stayed in its own space."}]
        for n, m in enumerate(self.matters, start=1):
            levels = state.get(m.key, {})
            for level, kinds in ((FULL, [RECORD, LOGISTICS]), (LIMITED, [LOGISTICS]),
                                 (CREDENTIALS, [CREDENTIAL])):
                who = sorted(p for p, lv in levels.items() if lv == level)
                if who:
                    rules.append({"id": f"m{n}-{level}", "action": "reveal",
                                  "match": {"owner": m.role, "info_type": kinds,
                                            "requester": who},
                                  "note": f"{m.key}: its {level} readers."})
        name = slug or "gatemem"
        return {"version": f"{name}.v{version}", "default": "withhold", "rules": rules}

    def texts(self) -> list[str]:
        return [s.text for s in self.steps if isinstance(s, Write)]


def may_use(asker: str, card: Write, state: State) -> bool:
    """Whether the policy lets ``asker`` use ``card`` (:meth:`EpisodePlan.policy` as a function,
    grants included)."""
    if card.owner == asker or asker in card.grantees:
        return True
    if card.matter is None:
        return False
    level = state.get(card.matter, {}).get(asker)
    if card.kind == CREDENTIAL:
        return level == CREDENTIALS
    if card.kind == LOGISTICS:
        return level in (FULL, LIMITED)
    return level == FULL


def plan_episode(episode: Episode, *, options: Mapping[str, bool] | None = None) -> EpisodePlan:
    """The administrator's plan for one episode (module docstring). ``options`` loosen or
    tighten one rule at a time (:data:`OPTIONS`; the lesson's exercise)."""
    opts = {**OPTIONS, **(options or {})}
    ms = matters(episode, staff=opts["staff_rule"])
    if opts["limited_reads_records"]:
        for m in ms:
            m.levels = {p: FULL if lv == LIMITED else lv for p, lv in m.levels.items()}
    names = principal_names(episode)
    state: State = {m.key: dict(m.levels) for m in ms}
    plan = EpisodePlan(episode, ms, [], [_copy(state)])
    live: dict[str, Write] = {}
    deleted: list[str] = []
    ends: list[tuple[datetime, str, str]] = []  # (when, principal, matter)
    thread: Matter | None = None
    anchor: datetime | None = None
    earlier: list[str] = []
    for turn in episode.turns:
        anchor = turn.timestamp or anchor
        changes: list[str] = []
        for when, pid, key in [e for e in ends if anchor is not None and e[0] <= anchor]:
            ends.remove((when, pid, key))
            if state[key].get(pid) not in (None, FULL):
                del state[key][pid]
                changes.append(f"{EXPIRE} {pid} on {key}")
                plan.notes.append(Note(EXPIRE, pid, turn.turn_id, when))
        kind = kind_of(turn.text)
        if not opts["private_turns"] and kind == PRIVATE:
            kind = RECORD
        if not opts["credentials_need_to_know"] and kind == CREDENTIAL:
            kind = RECORD
        matter, why = attribute(turn.text, turn.speaker, ms, thread)
        if matter is not None:
            thread = matter
        for note in read_notes(turn.text, turn.speaker, names, turn.turn_id, anchor):
            if matter is None:
                plan.notes_without_matter += 1
                continue
            plan.notes.append(note)
            levels = state[matter.key]
            if note.kind == GRANT and opts["read_notes"]:
                if levels.get(note.who) is None:
                    levels[note.who] = LIMITED
                    changes.append(f"{GRANT} {note.who} on {matter.key}")
                if note.end is not None:
                    ends.append((note.end, note.who, matter.key))
                plan.undated_ends += int(note.undated)
            elif note.kind == REVOKE and opts["read_notes"] and note.who != matter.subject \
                    and note.who in levels:
                del levels[note.who]
                changes.append(f"{REVOKE} {note.who} on {matter.key}")
        if changes:
            plan.states.append(_copy(state))
            plan.steps.append(Access(len(plan.states) - 1, turn.turn_id, turn.index,
                                     tuple(changes)))
        deletion = read_deletion(turn.text, turn.turn_id, earlier) if opts["forget"] else None
        if deletion is not None:
            plan.deletions.append(deletion)
            if deletion.values:
                deleted += [v for v in deletion.values if v not in deleted]
                hit = [w for w in live.values() if holds(w.text, deletion.values)]
                if hit:
                    plan.steps.append(Forget(tuple(w.key for w in hit), turn.turn_id, turn.index,
                                             deletion.values))
                    for w in hit:
                        del live[w.key]
                        copy = replace(w, key=f"{w.key}~{turn.turn_id}", turn_id=turn.turn_id,
                                       index=turn.index, text=redact(w.text, deleted),
                                       replaces=w.key)
                        plan.steps.append(copy)
                        live[copy.key] = copy
        text = redact(turn.text, deleted) if deleted else turn.text
        plan.redacted_turns += int(text != turn.text)
        owner = turn.speaker if kind == PRIVATE or matter is None else matter.role
        plan.attributions["private" if kind == PRIVATE else why] += 1
        plan.kinds[kind] += 1
        write = Write(turn.turn_id, turn.turn_id, turn.index, owner,
                      None if owner == turn.speaker else (matter.key if matter else None),
                      turn.speaker, kind, text)
        if owner != turn.speaker:  # a record card: who holds a grant on it
            named = [pid for pid, aliases in names.items() if pid != turn.speaker and
                     holds(text, aliases)] if kind == CREDENTIAL else []
            speaker = [] if may_use(turn.speaker, write, state) else [turn.speaker]
            write = replace(write, grantees=tuple(dict.fromkeys(
                [*(speaker if kind != CREDENTIAL else [turn.speaker]), *named])))
        plan.steps.append(write)
        live[write.key] = write
        earlier.append(turn.text)
    return plan


OPTIONS: dict[str, bool] = {
    "staff_rule": True,
    "limited_reads_records": False,
    "credentials_need_to_know": True,
    "private_turns": True,
    "read_notes": True,
    "forget": True,
}
"""The rules as written (the lab's run), each one a switch the lesson's exercise flips:
``staff_rule`` (medical staff read every chart), ``limited_reads_records`` (a limited reader
reads the whole record: loosened), ``credentials_need_to_know`` (off: credential cards are
ordinary record cards), ``private_turns`` (off: a private turn joins its record), ``read_notes``
(grants and revocations from notes), ``forget`` (deletion requests executed)."""


def live_cards(plan: EpisodePlan, upto: int) -> tuple[dict[str, Write], int]:
    """The cards alive after every step of turns ``<= upto``, and the policy version then."""
    live: dict[str, Write] = {}
    version = 0
    for step in steps_until(plan, upto):
        if isinstance(step, Write):
            live[step.key] = step
        elif isinstance(step, Forget):
            for key in step.keys:
                live.pop(key, None)
        else:
            version = step.version
    return live, version


def steps_until(plan: EpisodePlan, upto: int) -> Iterator[Step]:
    for step in plan.steps:
        if step.index > upto:
            return
        yield step


def _copy(state: State) -> State:
    return {k: dict(v) for k, v in state.items()}


__all__ = ["OPTIONS", "Access", "EpisodePlan", "Forget", "State", "Step", "Write",
           "live_cards", "may_use", "plan_episode", "steps_until"]
