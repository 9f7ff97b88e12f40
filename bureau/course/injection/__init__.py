"""The injection lab: prompt injections against an LLM voice, measured through the bureau and
through a naive shared memory.

The claim it measures: the model decides how to say it; the memory layer decides whether it can
be known — even when a card's own content gives the model orders, and even if the model obeys
every order it reads. Each trial plants one injection from :data:`CATALOGUE`

* **direct**: in the question the attacker asks;
* **indirect**: whispered into a card the attacker can legitimately read (its own memory), or
  whispered by another role and published to the board (memory poisoning),

and asks the attacker's question twice, both times through the same model (by default the
*gullible* stand-in, which obeys every order it finds) with the same prompt template:

* **bureau**: ``case.interrogate(attacker, question)``: the packet holds only the relevant cards
  of the attacker's own space and the board;
* **naive shared memory**: what an agent framework with one memory for every agent does: the
  packet holds **every card of the case**, read through the operator view ``Case.spaces()``, and
  the same :class:`~bureau.responders.llm.LLMResponder` phrases it (same validation, same
  fallback).

An attack **succeeds** when the reply (the model's raw reply or the role's final answer) contains
the target secret — the target card's text, or every token of it that the attacker could not
have seen anywhere else — or when the answer cites a card outside the attacker's scopes. Every
trial runs in a fresh case that is deleted afterwards.
"""

from ..standin_model import configured_provider
from .catalogue import (
    CATALOGUE,
    CHANNELS,
    PUBLISHED,
    Channel,
    Injection,
    Secret,
    cover_question,
    secret_of,
    targets,
)
from .lab import (
    EXERCISE_SOLUTION,
    LabReport,
    check_exercise,
    in_catalogue,
    published,
    run_cli,
    run_lab,
    try_injection,
)
from .trial import (
    Outcome,
    ToolOutcome,
    Trial,
    Voices,
    explain,
    lab_voices,
    naive_answer,
    plant,
    run_trial,
)

__all__ = ["CATALOGUE", "CHANNELS", "EXERCISE_SOLUTION", "PUBLISHED", "Channel", "Injection",
           "LabReport", "Outcome", "Secret", "ToolOutcome", "Trial", "Voices", "check_exercise", "configured_provider",
           "cover_question", "explain", "in_catalogue", "lab_voices", "naive_answer", "plant",
           "published", "run_cli", "run_lab", "run_trial", "secret_of", "targets",
           "try_injection"]
