"""Who is asking: principals, and the tools an agent is handed (no storage, no service).

An identity in the bureau is a thing you *hold*, not a string you pass. The service builds
handles (``case.agent(role)``, ``case.requester(name)``) from the principals declared here, and
every agent-facing operation takes its requester from the handle. This package holds the pure
part: who may be a principal in a case (:mod:`.principals`), and the operations an agent's
model may call with their JSON schemas (:mod:`.tools`), none of which has an identity field.
"""

from .principals import EXTERNAL, OPERATOR, OPERATOR_NAME, ROLE, Principal, Principals

__all__ = ["EXTERNAL", "OPERATOR", "OPERATOR_NAME", "ROLE", "Principal", "Principals"]
