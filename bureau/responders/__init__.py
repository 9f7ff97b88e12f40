"""Responders: turning the evidence a role was handed into an answer, and nothing more.

The default :class:`EvidenceResponder` needs no model; :mod:`.llm` (opt-in) lets an
OpenAI-compatible model phrase the same evidence. Neither ever searches.
"""

from .evidence import UNKNOWN, EvidenceResponder, Responder

__all__ = ["UNKNOWN", "EvidenceResponder", "Responder"]
