"""The memory invocation: one request for memory, as a first-class record.

Retrieval alone answers "what is relevant"; purpose-bound mediation (Li, "Memory as a Service",
arXiv 2506.22815) also asks *who* wants it, *for whom* the answer is, for *what task* and *what
declared purpose*. The invocation carries exactly that, so a mediator decides on it and the audit
ledger records it. The requester and the recipient are kept apart on purpose: a role allowed to
read a card is not thereby allowed to put it into a report for an outsider.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import InvalidArgumentError
from ..text import clean_name, short_repr

RECIPIENTS = ("same-agent", "human-reviewer", "other-agent", "external")
"""Who finally sees the answer, narrowest first."""

DEFAULT_TASK = "answer"
DEFAULT_PURPOSE = "answer"
"""What an interrogation without declared task or purpose is for: the role answering itself."""


def check_recipient(value: object) -> str:
    """A recipient kind from :data:`RECIPIENTS` (exact), else ``InvalidArgumentError``."""
    if isinstance(value, str) and value in RECIPIENTS:
        return value
    raise InvalidArgumentError(
        f"recipient must be one of {', '.join(RECIPIENTS)}, not {short_repr(value)}."
    )


@dataclass(frozen=True)
class Invocation:
    """Who asks whose memory what, for whom, for which task and declared purpose, and when.

    ``owner`` is the role whose scopes are searched (its private space and the board); each card
    found still carries its own owner, which is what policy rules match on.
    """

    case_id: str
    owner: str
    requester: str
    recipient: str
    task: str
    purpose: str
    query: str
    id: str = field(default_factory=lambda: "inv-" + uuid.uuid4().hex[:12])
    at: str = field(
        default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds")
    )

    @classmethod
    def make(
        cls,
        case_id: str,
        owner: str,
        query: str,
        *,
        requester: str | None = None,
        recipient: str = "same-agent",
        task: str | None = None,
        purpose: str | None = None,
    ) -> Invocation:
        """Validated invocation; the defaults describe today's plain interrogation (a role
        answering from its own memory for itself)."""
        return cls(
            case_id=case_id,
            owner=owner,
            requester=owner if requester is None else clean_name(requester, what="requester"),
            recipient=check_recipient(recipient),
            task=DEFAULT_TASK if task is None else clean_name(task, what="task"),
            purpose=DEFAULT_PURPOSE if purpose is None else clean_name(purpose, what="purpose"),
            query=query,
        )

    def audit_fields(self) -> dict[str, Any]:
        """What the audit ledger keeps of the invocation: everything but the query text (a
        question may quote private facts; the ledger keeps ids, labels and decisions)."""
        return {"invocation_id": self.id, "owner": self.owner, "requester": self.requester,
                "recipient": self.recipient, "task": self.task, "purpose": self.purpose,
                "requested_at": self.at}
