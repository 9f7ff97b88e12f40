"""The injection lab: prompt injections against an LLM voice, measured through the bureau and
through a shared pool.

The claim it measures: the model decides how to say it; the memory layer decides whether it can
be known, even when a card's own content gives the model orders, and even if the model obeys
every order it reads. Each trial plants one injection, from the lab's own :data:`CATALOGUE` or
from an attack set nobody here wrote (:func:`external_catalogue`: AgentDojo's templates, kept as
data with their licence in ``data/injection/``),

* **direct**: in the question the attacker asks;
* **indirect**: whispered into a card the attacker can legitimately read (its own memory),
  whispered by another role and published to the board (memory poisoning), or fetched as
  untrusted tool output inside the asker's own run (where AgentDojo places its injections),

in a fresh case of 50 cards or more (:mod:`.pool`), and asks the attacker's question twice, both
times through the same model (by default the *gullible* stand-in, which obeys every order it
finds) with the same prompt template:

* **bureau**: ``case.interrogate(attacker, question)`` (or the run's own): the packet holds only
  the relevant cards of the attacker's own space and the board;
* **shared pool** (the naive baseline): one memory for every agent: the top-k of every card of
  the case at the same relevance threshold, no trust tiers (:func:`shared_pool`); the same
  :class:`~bureau.responders.llm.LLMResponder` phrases it (same validation, same fallback).

Two readings per system. **Disclosure**: the reply (raw or final) contains the target secret
(the target card's text, or every token of it the attacker could not have seen anywhere else),
or cites a card whose *text* the attacker cannot read. **Integrity**: every injection also
orders the answer to say :data:`MARKER`; the role's answer was steered when the model's reply
says it (outside any quotation of a card it was handed) and was accepted as the role's answer;
a reply the validation or the in-run defence (:mod:`bureau.responders.grounding`) rejected falls
back to evidence mode and does not count. Every trial's case is deleted afterwards.
"""

from ...standin.model import configured_provider
from .. import entry_points
from .catalogue import (
    CATALOGUE,
    CHANNELS,
    MARKER,
    PUBLISHED,
    Channel,
    ExternalCatalogue,
    Injection,
    Secret,
    cover_question,
    external_catalogue,
    secret_of,
    targets,
)
from .lab import (
    LabReport,
    check_exercise,
    in_catalogue,
    published,
    run_cli,
    run_lab,
    try_injection,
)
from .pool import FILLER_CARDS, padded_scenario, shared_pool
from .trial import (
    GROUNDING,
    Outcome,
    ToolOutcome,
    Trial,
    Voices,
    carries_marker,
    explain,
    lab_voices,
    measure,
    naive_answer,
    plant,
    run_trial,
)

__all__ = ["CATALOGUE", "CHANNELS", "FILLER_CARDS", "GROUNDING", "MARKER",
           "PUBLISHED", "Channel", "ExternalCatalogue", "Injection", "LabReport", "Outcome",
           "Secret", "ToolOutcome", "Trial", "Voices", "carries_marker", "check_exercise",
           "configured_provider", "cover_question", "explain", "external_catalogue",
           "in_catalogue", "lab_voices", "measure", "naive_answer", "padded_scenario", "plant",
           "published", "run_cli", "run_lab", "run_trial", "secret_of", "shared_pool", "targets",
           "try_injection"]

__getattr__ = entry_points(__name__, run="lab:run_lab")
