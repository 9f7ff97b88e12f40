"""Matters: the shared records of an episode, who may read each, and which record a turn joins.

GateMem's principals share one memory; the bureau gives each principal a private space and
keeps what several of them share in a *record*: one per matter (a patient's chart, a project,
a student's case, a household). This module derives the matters from the episode's structured
``relationships`` and its principals' roles, by the rule of the episode's domain, and reads no
turn text except to say which matter a turn names. Nothing of a checkpoint is read.

**The matter rule** (:data:`DOMAIN_RULES`): each relationship names a matter through the first
of its domain's *matter fields* that it has (medical ``patient_id``; office ``project_id``;
education ``case_id``, ``project_id``, ``program_id``, ``building_id``, ``course_id``, then
``for_principal_id``; household ``household_id``, ``for_household_id``, then the household of
``for_principal_id``), and the principal it grants through ``principal_id`` (or
``clinician_id`` / ``family_id``). Every principal whose role is a domain's *subject role*
(patient; in education the subject of a ``*_case_subject`` relationship, whose case merges into
the student's own matter) has a matter of its own and reads it in full.

**Access levels**: ``full`` (every card of the record), ``limited`` (logistics cards only),
``credentials`` (credential cards only) or none. A relationship is *limited* when its
``access_scope`` / ``access_level`` / ``scope`` qualifier says ``only``, ``limited``,
``no_default`` or ``unassigned``, *credentials* when that qualifier says ``credential``, else
*full*. Domain exceptions: in medical a clinician relationship is full whatever its scope note
(a coverage scope limits when, not what), nurses, pharmacists and lab technicians read every
chart in full, schedulers, reception, billing and social workers read charts' logistics; a
delegate (``delegate``, ``executive_delegate``) of X gets its own level on every matter X reads
in full. A principal's level on a matter is the widest its relationships give.

**Which record a turn joins** (:func:`attribute`): a data subject's turn joins its own matter
(the data subject's record); any other turn the matter the text names first (a subject's
display name, or a unique first or last name; a resource's id words, e.g. ``project_maple`` ->
"maple", the longer name winning where two overlap, so "Maplemark" is not "Maple"); else the
speaker's only matter; else the matter of the conversation so far (the last turn attributed);
else none: the turn stays in its speaker's own space. Two matters the turns name alike (a
building and the program named after it, both "beacon hall") are one record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bureau.labs.gatemem.dataset import Episode, Relationship

FULL, LIMITED, CREDENTIALS = "full", "limited", "credentials"
LEVELS = (CREDENTIALS, LIMITED, FULL)
"""Narrowest first; a principal's level on a matter is the widest any relationship gives."""
WHO_FIELDS = ("principal_id", "clinician_id", "family_id")
QUALIFIERS = ("access_scope", "access_level", "scope")
LIMITING = ("only", "limited", "no_default", "unassigned")
DELEGATES = ("delegate", "executive_delegate")


@dataclass(frozen=True)
class DomainRule:
    """How one domain's relationships name matters (module docstring)."""

    matter_fields: tuple[str, ...]
    subject_roles: tuple[str, ...] = ()
    staff: Mapping[str, str] = field(default_factory=dict)
    """Role -> level on every matter of the episode."""
    full_types: tuple[str, ...] = ()
    """Relationship types that are full whatever their qualifier says."""


DOMAIN_RULES: dict[str, DomainRule] = {
    "medical": DomainRule(
        ("patient_id",), subject_roles=("patient",),
        staff={"nurse": FULL, "pharmacist": FULL, "lab_tech": FULL, "scheduler": LIMITED,
               "reception": LIMITED, "billing": LIMITED, "social_worker": LIMITED},
        full_types=("assigned_clinician", "covering_clinician", "consulting_clinician")),
    "office": DomainRule(("project_id",)),
    "education": DomainRule(("case_id", "project_id", "program_id", "building_id",
                             "course_id", "for_principal_id")),
    "household": DomainRule(("household_id", "for_household_id", "for_principal_id")),
}
PREFIXES = ("project_", "program_", "building_", "household_", "course_", "case_")
SUFFIXES = ("_house", "_household", "_home")


@dataclass
class Matter:
    """One shared record: its key, the principals at each level, the names it goes by."""

    key: str
    role: str
    aliases: tuple[str, ...] = ()
    subject: str | None = None
    levels: dict[str, str] = field(default_factory=dict)
    """Principal -> its level (:data:`LEVELS`) from the relationships and the staff table."""

    def level(self, pid: str) -> str | None:
        return self.levels.get(pid)

    def at(self, level: str) -> frozenset[str]:
        return frozenset(p for p, lv in self.levels.items() if lv == level)


def level_of(rel: Relationship, rule: DomainRule) -> str:
    """The access level a relationship gives (module docstring)."""
    if rel.type in rule.full_types:
        return FULL
    for q in QUALIFIERS:
        value = (rel.get(q) or "").lower()
        if "credential" in value:
            return CREDENTIALS
        if any(word in value for word in LIMITING):
            return LIMITED
    return FULL


def _widest(current: str | None, new: str) -> str:
    return new if current is None or LEVELS.index(new) > LEVELS.index(current) else current


def matters(episode: Episode, *, staff: bool = True) -> list[Matter]:
    """The episode's matters by its domain's rule, in order of first mention in the
    relationships (subjects first); record roles are ``rec-<n>`` with ``n`` from 1.
    ``staff=False`` leaves the domain's staff table out."""
    rule = DOMAIN_RULES.get(episode.domain, DomainRule(("project_id", "for_principal_id")))
    pids = {p.pid for p in episode.principals}
    found: dict[str, Matter] = {}

    def matter(key: str) -> Matter:
        if key not in found:
            found[key] = Matter(key, f"rec-{len(found) + 1}")
        return found[key]

    for p in episode.principals:  # subject roles: a matter of their own, read in full
        if p.role in rule.subject_roles:
            m = matter(p.pid)
            m.subject = p.pid
            m.levels[p.pid] = FULL
    merged: dict[str, str] = {}  # education: a case merges into its subject's own matter
    for rel in episode.relationships:
        if rel.type.endswith("_case_subject") and rel.get("case_id") and rel.get("principal_id"):
            merged[rel.get("case_id") or ""] = rel.get("principal_id") or ""
    homes: dict[str, str] = {}  # household: a person's household
    for rel in episode.relationships:
        if rel.type == "household_member" and rel.get("household_id") and rel.get("principal_id"):
            homes.setdefault(rel.get("principal_id") or "", rel.get("household_id") or "")
    delegations: list[tuple[str, str, str]] = []
    for rel in episode.relationships:
        who = next((rel.get(f) for f in WHO_FIELDS if rel.get(f)), None)
        if who is None or who not in pids:
            continue
        if rel.type in DELEGATES and rel.get("for_principal_id"):
            delegations.append((who, rel.get("for_principal_id") or "", level_of(rel, rule)))
            continue
        key = _matter_key(rel, rule, episode.domain, merged, homes)
        if key is None:
            continue
        m = matter(key)
        if key in pids and m.subject is None:
            m.subject = key
            m.levels[key] = FULL
        if rel.type.endswith("_case_subject"):
            m.subject = who
        m.levels[who] = _widest(m.levels.get(who), level_of(rel, rule))
    for who, boss, level in delegations:  # a delegate's level on its principal's matters
        for m in found.values():
            if m.levels.get(boss) == FULL:
                m.levels[who] = _widest(m.levels.get(who), level)
    for p in episode.principals:  # the staff table: every matter of the episode
        level = rule.staff.get(p.role) if staff else None
        if level:
            for m in found.values():
                m.levels[p.pid] = _widest(m.levels.get(p.pid), level)
    names = principal_names(episode)
    out: list[Matter] = []
    for m in found.values():  # two keys the turns name alike are one matter
        m.aliases = _aliases(m, names, episode, merged)
        same = next((o for o in out if m.aliases and o.aliases[:1] == m.aliases[:1]), None)
        if same is None:
            m.role = f"rec-{len(out) + 1}"
            out.append(m)
            continue
        for pid, level in m.levels.items():
            same.levels[pid] = _widest(same.levels.get(pid), level)
        same.aliases = tuple(dict.fromkeys([*same.aliases, *m.aliases]))
    return out


def _matter_key(rel: Relationship, rule: DomainRule, domain: str, merged: Mapping[str, str],
                homes: Mapping[str, str]) -> str | None:
    for f in rule.matter_fields:
        value = rel.get(f)
        if not value:
            continue
        if f == "case_id" and value in merged:
            return merged[value]
        if domain == "household" and f == "for_principal_id":
            return homes.get(value, value)
        return value
    return None


def principal_names(episode: Episode) -> dict[str, tuple[str, ...]]:
    """Each principal's names as turns write them: the display name (parentheses dropped),
    and its first and last word when no other principal shares them."""
    full = {p.pid: re.sub(r"\s*\(.*?\)", "", p.name).strip().lower() for p in episode.principals}
    firsts = [n.split()[0] for n in full.values() if n.split()]
    lasts = [n.split()[-1] for n in full.values() if len(n.split()) > 1]
    out = {}
    for pid, name in full.items():
        words = name.split()
        names = [name] if name else []
        if len(words) > 1:
            if firsts.count(words[0]) == 1 and len(words[0]) >= 3:
                names.append(words[0])
            if lasts.count(words[-1]) == 1 and len(words[-1]) >= 3:
                names.append(words[-1])
        out[pid] = tuple(dict.fromkeys(names))
    return out


def resource_words(key: str) -> str:
    """``project_maple`` -> "maple", ``oak_house`` -> "oak", ``cedar_review`` -> "cedar
    review": the words a turn names a resource by."""
    low = key.lower()
    for p in PREFIXES:
        if low.startswith(p):
            low = low[len(p):]
            break
    for s in SUFFIXES:
        if low.endswith(s):
            low = low[: -len(s)]
            break
    return low.replace("_", " ").strip()


def _aliases(m: Matter, names: Mapping[str, tuple[str, ...]], episode: Episode,
             merged: Mapping[str, str]) -> tuple[str, ...]:
    out: list[str] = []
    if m.subject is not None:
        out += names.get(m.subject, ())
    if m.key not in names:
        out.append(resource_words(m.key))
    out += [resource_words(case) for case, subject in merged.items() if subject == m.key]
    return tuple(dict.fromkeys(a for a in out if a))


def mentions(text: str, ms: Iterable[Matter]) -> list[tuple[int, Matter]]:
    """Where each matter is named in ``text`` (start offsets, earliest first): word-bounded,
    case-insensitive, the longer alias winning where two overlap."""
    low = text.lower()
    spans: list[tuple[int, int, Matter]] = []
    for m in ms:
        for alias in m.aliases:
            for hit in re.finditer(r"(?<![\w-])" + re.escape(alias) + r"(?![\w-])", low):
                spans.append((hit.start(), hit.end(), m))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    kept: list[tuple[int, int, Matter]] = []
    for s in spans:
        if not any(s[0] < k[1] and k[0] < s[1] for k in kept):
            kept.append(s)
    return [(s[0], s[2]) for s in sorted(kept, key=lambda s: s[0])]


def speaker_matters(pid: str, ms: Iterable[Matter]) -> list[Matter]:
    """The matters the speaker is the subject of or has any level on."""
    return [m for m in ms if m.subject == pid or pid in m.levels]


def attribute(text: str, speaker: str, ms: list[Matter], thread: Matter | None
              ) -> tuple[Matter | None, str]:
    """The matter a turn joins and why (``subject``, ``named``, ``speaker``, ``thread`` or
    ``none``)."""
    own = next((m for m in ms if m.subject == speaker), None)
    if own is not None:
        return own, "subject"
    named = mentions(text, ms)
    if named:
        return named[0][1], "named"
    own = speaker_matters(speaker, ms)
    if len(own) == 1:
        return own[0], "speaker"
    if thread is not None:
        return thread, "thread"
    return None, "none"


__all__ = ["CREDENTIALS", "DOMAIN_RULES", "FULL", "LEVELS", "LIMITED", "DomainRule", "Matter",
           "attribute", "level_of", "matters", "mentions", "principal_names", "resource_words", "speaker_matters"]
