"""The policy file: purpose-bound rules, versioned, validated before it can decide anything.

A policy is data (YAML or JSON) an owner or a teacher writes; the mediator compiles nothing from
prose. Each rule matches labels of the card (information type, sensitivity, owner, visibility)
and of the invocation (requester, recipient, task, purpose) and names one action: ``withhold``,
``abstract`` or ``reveal``; it may require approval (an explicit grant) and may expire. Rules are
read top to bottom and the first match decides, like a firewall: a reader can predict any
decision by reading down the file. No match: the policy's ``default`` (withhold unless said).

Every error names the file, the rule index and the field (``rules[3].match.recipient[0]``), as a
:class:`~bureau.errors.PolicyError` carrying the same three parts, because a policy that silently
fell back to a default would authorise what its author meant to forbid. Every decision records
``version`` (the author's) and ``digest`` (of the rules as loaded, so an edit without a new
version is still visible in the audit).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ..datafiles import Limits, clip, clip_path, field_path, read_data, shape_problem
from ..errors import PolicyError
from ..text import NAME_RE, short_repr
from .invocation import RECIPIENTS

ACTIONS = ("withhold", "abstract", "reveal")
"""Narrowest first: a grant or a rule can only move a decision along this order."""
Action = Literal["withhold", "abstract", "reveal"]
UNLABELLED = "unlabelled"
"""What ``sensitivity`` / ``info_type`` match on for a card without that label."""
MAX_POLICY_BYTES = 200_000
MAX_RULES = 1_000
POLICY_SIZE_HINT = (
    "A policy is a list of rules; see scenarios/README.md ('Policies') for the format."
)
POLICY_LIMITS = Limits(
    noun="policy",
    max_bytes=MAX_POLICY_BYTES,
    max_depth=16,
    max_values=20_000,
    max_text_chars=1_000_000,
    max_number_chars=64,
    depth_needed="a policy needs 6",
    values_needed="a policy of 1,000 rules needs about 15,000",
    size_hint=POLICY_SIZE_HINT,
    at="line {line}: ",
    invalid="not valid",
    missing="no such policy file",
)
"""How policy files are read (bureau.datafiles): a policy is deeper than a scenario by one level
(``rules`` -> rule -> ``match`` -> field -> list -> name) and may hold up to ``MAX_RULES`` rules
of about fifteen values each; aliases count as full copies, so an alias bomb is refused at once.
Duplicate keys are refused: ``default: withhold`` then ``default: reveal`` must not mean reveal."""
MATCH_FIELDS = ("info_type", "sensitivity", "owner", "visibility", "requester", "recipient",
                "task", "purpose")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _slugs(value: Any) -> Any:
    """A single name is a one-item list; lists are checked item by item (path kept)."""
    return [value] if isinstance(value, str) else value


class Match(_Strict):
    """Conditions a rule needs, all of them; a field left out matches anything."""

    info_type: tuple[str, ...] | None = None
    sensitivity: tuple[str, ...] | None = None
    owner: tuple[str, ...] | None = None
    """The memory's owner: the role that wrote it (for a board copy: the role that published)."""
    visibility: tuple[Literal["private", "public"], ...] | None = None
    requester: tuple[str, ...] | None = None
    recipient: tuple[Literal["same-agent", "human-reviewer", "other-agent", "external"], ...] | None \
        = None
    task: tuple[str, ...] | None = None
    purpose: tuple[str, ...] | None = None
    requester_is_owner: bool | None = None
    """True: only when the requester is the memory's owner; False: only when it is not."""

    @field_validator(*MATCH_FIELDS, mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return _slugs(v)

    @field_validator("info_type", "sensitivity", "owner", "requester", "task", "purpose")
    @classmethod
    def _names(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("an empty list matches nothing; leave the field out to match anything")
        for item in v:
            if not NAME_RE.fullmatch(item):
                raise ValueError(f"{item!r} is not a name (lowercase letters, digits, - or _)")
        return v


class Rule(_Strict):
    id: str
    match: Match = Match()
    action: Action
    approval: bool = False
    """True: the action needs an explicit, unexpired grant for this card (a human approval)."""
    expires: datetime | None = None
    """After this moment (UTC when no zone is given) the rule no longer matches."""
    reason: str | None = None
    """The reason code decisions by this rule report (default: one per action)."""
    note: str = ""

    @field_validator("id", "reason")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and not NAME_RE.fullmatch(v):
            raise ValueError(f"{v!r} is not a name (lowercase letters, digits, - or _)")
        return v

    @field_validator("expires", mode="before")
    @classmethod
    def _date(cls, v: Any) -> Any:
        if isinstance(v, date) and not isinstance(v, datetime):
            return datetime(v.year, v.month, v.day, tzinfo=UTC)
        return v

    @field_validator("expires")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return v.replace(tzinfo=UTC) if v is not None and v.tzinfo is None else v


class Budget(_Strict):
    """A cumulative disclosure budget per (requester, memory owner) in one case.

    Each abstract or reveal of another role's private card costs its action's price; once the
    spend would pass ``limit``, further disclosures are withheld (``budget-exhausted``). So many
    safe abstracts cannot add up to a reveal: with the defaults, four abstracts cost one reveal.
    Public cards and a role's own cards cost nothing (nothing is disclosed).
    """

    limit: float = 1.0
    abstract: float = 0.25
    reveal: float = 1.0

    @field_validator("limit", "abstract", "reveal")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError("must be a finite number >= 0")
        return v

    def cost(self, action: str) -> float:
        return {"abstract": self.abstract, "reveal": self.reveal}.get(action, 0.0)


class Policy(_Strict):
    version: str
    default: Action = "withhold"
    budget: Budget | None = None
    """``None``: no disclosure budget."""
    rules: tuple[Rule, ...] = ()
    principals: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    """Principals besides the chief who may approve promoting untrusted content (a reviewer
    role); never for a card of their own."""
    """Requesters that are not roles (the press, an outside service) this policy speaks of:
    each gets a handle (``case.requester(name)``) and a budget of its own; any other name that
    is not a role is refused."""
    source: str = "<policy>"

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not v.strip() or len(v) > 64 or any(c.isspace() for c in v):
            raise ValueError("a short label without blanks, such as '2026-06-22.1'")
        return v

    @field_validator("approvers")
    @classmethod
    def _approver_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for item in v:
            if not NAME_RE.fullmatch(item) or item == "board":
                raise ValueError(f"{item!r} is not a principal name")
        return v

    @field_validator("principals", "approvers", mode="before")
    @classmethod
    def _name_lists(cls, v: Any) -> Any:
        return _slugs(v)

    @field_validator("principals")
    @classmethod
    def _principal_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for item in v:
            if not NAME_RE.fullmatch(item) or item in ("board", "chief"):
                raise ValueError(f"{item!r} is not a principal name (lowercase letters, digits, "
                                 "- or _; not 'board' or 'chief')")
        if len(set(v)) != len(v):
            raise ValueError("a principal is declared twice")
        return v

    @field_validator("rules")
    @classmethod
    def _count(cls, v: tuple[Rule, ...]) -> tuple[Rule, ...]:
        if len(v) > MAX_RULES:
            raise ValueError(f"at most {MAX_RULES} rules")
        return v

    @model_validator(mode="after")
    def _unique_ids(self) -> Policy:
        seen: dict[str, int] = {}
        for i, rule in enumerate(self.rules):
            if rule.id in seen:
                raise PolicyError(
                    f"{self.source}: rules[{i}].id: {rule.id!r} is already the id of "
                    f"rules[{seen[rule.id]}]",
                    file=self.source, rule=i, field=f"rules[{i}].id",
                )
            seen[rule.id] = i
        return self

    @property
    def digest(self) -> str:
        """sha256 (12 hex) of the rules as loaded: the same version with other rules differs."""
        body = self.model_dump(mode="json", exclude={"source"})
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]

    def describe(self) -> str:
        return f"{self.version} ({self.digest}, {len(self.rules)} rules)"


def _loc(loc: tuple[Any, ...]) -> str:
    """``rules[3].match.recipient[0]``, each part cut short (keys can be any text)."""
    return field_path(loc) or "(top level)"


def parse_policy(data: Any, *, source: str | Path = "<policy>") -> Policy:
    """Validate parsed data into a :class:`Policy`, or raise a precise ``PolicyError``."""
    shown = str(source)
    if not isinstance(data, dict):
        raise PolicyError(f"{shown}: the top level must be a mapping (version, rules, ...), "
                          f"not {clip(type(data).__name__, 40)}.", file=shown)
    # before pydantic, which recurses into the data and copies it (see datafiles.shape_problem)
    problem = shape_problem(data, POLICY_LIMITS)
    if problem is not None:
        raise PolicyError(f"{shown}: {problem}.", POLICY_SIZE_HINT, file=shown)
    if "source" in data:
        raise PolicyError(f"{shown}: source: unknown field (set by the loader)", file=shown,
                          field="source")
    try:
        return Policy.model_validate({**data, "source": shown})
    except PolicyError:
        raise
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        lines = []
        for err in errors:
            loc = tuple(err["loc"])
            # pydantic adds the member tag of a Literal/None union: drop it from the path
            loc = tuple(p for p in loc if not (isinstance(p, str) and p.startswith(("literal[",
                                                                                     "tuple["))))
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown field"
            elif err["type"] == "literal_error":
                msg = f"{short_repr(err.get('input'))} is not valid ({msg})"
            lines.append((loc, msg))
        loc, msg = lines[0]
        rule = loc[1] if len(loc) > 1 and loc[0] == "rules" and isinstance(loc[1], int) else None
        more = f" (and {len(lines) - 1} more problem(s))" if len(lines) > 1 else ""
        raise PolicyError(f"{shown}: {_loc(loc)}: {clip(msg, 200)}{more}", file=shown,
                          rule=rule, field=_loc(loc)) from None


def load_policy(path: str | Path) -> Policy:
    """Read a policy file (.json, or YAML for any other name) within :data:`POLICY_LIMITS`.

    The file is read the way scenarios are (bureau.datafiles): size-capped before reading, one
    open (a FIFO or a device is refused, not waited on), duplicate keys refused, and depth,
    values and text capped with aliases expanded. Every error is a short ``PolicyError``
    naming the file.
    """
    p = Path(path)
    shown = clip_path(str(path))
    data = read_data(p, shown, POLICY_LIMITS, functools.partial(PolicyError, file=shown))
    return parse_policy(data, source=shown)


def matches(rule: Rule, labels: dict[str, str], now: datetime) -> bool:
    """Whether ``rule`` applies to one (invocation, card) pair described by ``labels``.

    ``labels`` holds one value per :data:`MATCH_FIELDS` name plus ``requester_is_owner``
    (``"yes"``/``"no"``); see :func:`bureau.mediation.mediator.labels_of`.
    """
    if rule.expires is not None and now >= rule.expires:
        return False
    m = rule.match
    if m.requester_is_owner is not None and (labels["requester_is_owner"] == "yes") \
            != m.requester_is_owner:
        return False
    for name in MATCH_FIELDS:
        wanted = getattr(m, name)
        if wanted is not None and labels[name] not in wanted:
            return False
    return True


def first_match(policy: Policy, labels: dict[str, str], now: datetime) -> tuple[int, Rule] | None:
    for i, rule in enumerate(policy.rules):
        if matches(rule, labels, now):
            return i, rule
    return None


__all__ = ["ACTIONS", "RECIPIENTS", "UNLABELLED", "Budget", "Match", "Policy", "Rule",
           "closed_policy", "default_policy_path", "first_match", "load_policy", "matches", "parse_policy"]


def closed_policy() -> Policy:
    """What decides when no policy is configured and a principal asks another role's memory:
    board copies and the asker's own memory are revealed, nothing private of anyone else is."""
    return parse_policy({
        "version": "built-in-closed", "default": "withhold",
        "rules": [{"id": "board-is-public", "match": {"visibility": "public"},
                   "action": "reveal"},
                  {"id": "own-memory", "match": {"requester_is_owner": True},
                   "action": "reveal"}],
    }, source="<built-in closed policy>")


def default_policy_path() -> Path:
    """The example policy that ships with the scenarios (``scenarios/policies/default.yaml``)."""
    from ..resources import shipped_root

    return shipped_root() / "scenarios" / "policies" / "default.yaml"
