"""A case file: what the bureau chief must achieve in a case, what must never happen, and the
moves allowed (issue 49). Data, like the roles and cards beside it in the scenario file.

Why a case needs one: without a goal the lessons were a demonstration, not a game. With one the
learner has something to win and to lose, and the bureau can tell which from its own state
(:mod:`bureau.game`): the evidence it handed out, the board, the events; never from what the
learner says.

* ``goal`` / ``question`` / ``asker`` / ``answer``: the case is solved when ``asker`` has given
  a known answer whose cited evidence holds every ``answer`` token, from a card with a source
  (``sourced``: a board copy that names who published it) when asked.
* ``never``: each rule names one thing that loses the case: a seed card (or any copy of it)
  ``reaches`` a named role, or a seed card is published (``publish``: a decoy spread as fact).
* ``moves``: the commands the chief may use (:data:`MOVES`); ``par``: how many a tidy solve
  takes.
"""

from __future__ import annotations

from pydantic import field_validator, model_validator

from ..text import MAX_QUESTION_CHARS
from .fields import Strict as _Strict
from .fields import checked_name as _name
from .fields import checked_text as _text

MOVES = ("whisper", "interrogate", "publish", "grant", "revoke", "forget")
"""What the chief can do to a case: write a private card, ask a role, copy a card to the board,
grant one reading, withdraw a card, forget it for good."""
MAX_ANSWER_TOKENS = 8
MAX_RULES = 8


class NeverRule(_Strict):
    """One way to lose: a secret reaching a role, or a card published as fact."""

    secret: str | None = None
    """A seed memory's key: it, or any copy of it, must not reach the roles in ``reaches``."""
    reaches: list[str] = []
    """The roles the secret must never reach (empty: every role but its owner)."""
    publish: str | None = None
    """A seed memory's key that must never be published (a decoy spread as fact)."""
    why: str
    """One line, shown in the case file: why this loses the case."""

    @field_validator("secret", "publish")
    @classmethod
    def _check_key(cls, v: str | None) -> str | None:
        return None if v is None else _name(v, "seed memory key")

    @field_validator("reaches")
    @classmethod
    def _check_roles(cls, v: list[str]) -> list[str]:
        return [_name(r, "role name") for r in v]

    @field_validator("why")
    @classmethod
    def _check_why(cls, v: str) -> str:
        return _text(v, "a rule's why")

    @model_validator(mode="after")
    def _one_kind(self) -> NeverRule:
        if (self.secret is None) == (self.publish is None):
            raise ValueError("a never rule names exactly one of 'secret' (with 'reaches') or "
                             "'publish'")
        if self.publish is not None and self.reaches:
            raise ValueError("'reaches' goes with 'secret', not with 'publish'")
        return self


class CaseFile(_Strict):
    """The case's goal, its losing rules and its moves (see the module's text)."""

    goal: str
    question: str
    asker: str
    answer: list[str]
    sourced: bool = True
    never: list[NeverRule] = []
    moves: list[str] = ["whisper", "interrogate", "publish"]
    par: int | None = None

    @field_validator("goal")
    @classmethod
    def _check_goal(cls, v: str) -> str:
        return _text(v, "case file goal")

    @field_validator("question")
    @classmethod
    def _check_question(cls, v: str) -> str:
        return _text(v, "case file question", MAX_QUESTION_CHARS)

    @field_validator("asker")
    @classmethod
    def _check_asker(cls, v: str) -> str:
        return _name(v, "case file asker")

    @field_validator("answer")
    @classmethod
    def _check_answer(cls, v: list[str]) -> list[str]:
        if not 1 <= len(v) <= MAX_ANSWER_TOKENS:
            raise ValueError(f"an answer is 1 to {MAX_ANSWER_TOKENS} tokens the evidence must "
                             "hold")
        return [_text(t, "answer token", 80) for t in v]

    @field_validator("never")
    @classmethod
    def _check_never(cls, v: list[NeverRule]) -> list[NeverRule]:
        if len(v) > MAX_RULES:
            raise ValueError(f"at most {MAX_RULES} never rules")
        return v

    @field_validator("moves")
    @classmethod
    def _check_moves(cls, v: list[str]) -> list[str]:
        unknown = [m for m in v if m not in MOVES]
        if unknown or not v or "interrogate" not in v:
            raise ValueError(f"moves are some of {', '.join(MOVES)}, 'interrogate' among them "
                             f"(got {v})")
        return list(dict.fromkeys(v))

    @field_validator("par")
    @classmethod
    def _check_par(cls, v: int | None) -> int | None:
        if v is not None and not 1 <= v <= 50:
            raise ValueError("par is a number of moves from 1 to 50")
        return v

    def problems(self, roles: list[str], keys: dict[str, str]) -> list[str]:
        """What refers to a role or a seed key the scenario lacks (``keys``: key -> owner)."""
        out = []
        if self.asker not in roles:
            out.append(f"case_file.asker: {self.asker!r} is not a role")
        for i, rule in enumerate(self.never):
            for key in (rule.secret, rule.publish):
                if key is not None and key not in keys:
                    out.append(f"case_file.never[{i}]: no seed memory {key!r}")
            for role in rule.reaches:
                if role not in roles:
                    out.append(f"case_file.never[{i}].reaches: {role!r} is not a role")
            if rule.secret in keys and keys[rule.secret] in rule.reaches:
                out.append(f"case_file.never[{i}]: a secret always reaches its owner")
        return out


__all__ = ["MOVES", "CaseFile", "NeverRule"]
