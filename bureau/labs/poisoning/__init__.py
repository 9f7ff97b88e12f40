"""The memory-poisoning lab (issues 14, 20): what trust tiers and the in-run defence buy.

Poisoned memories are planted as untrusted tool output, by two attacks: a *rare trigger* (the
trigger and a payload, nothing of any question, one poison per trial: AgentPoison's setting) and
a *topical* poison (the trigger, the target question's key terms and a payload). Trigger
questions, their untriggered twins and other benign questions are asked over a realistic memory
(a shipped scenario's cards plus a MAGPIE or AgentSocialBench slice): without tiers, inside the
run that fetched the pages, and after it under two promotion rules an attacker must defeat --
(a) an allow-listed mirror the attacker can post on too, (b) a rule keyed on the host the fetch
tool recorded. Every answer is given by the evidence voice and the LLM voice with both stand-in
models, without and with the in-run defence.

* :mod:`~bureau.labs.poisoning.attack` -- the trigger, questions and both attacks' poisons (deterministic, from
  ``data/poisoning/attack.yaml``);
* :mod:`~bureau.labs.poisoning.corpus` -- trials: memories, questions and poisons per benchmark slice;
* :mod:`~bureau.labs.poisoning.runner` -- every trial through the service (cases, runs, whispers,
  retrievals) on one store;
* :mod:`~bureau.labs.poisoning.metrics` -- retrieval (every top-k card poisoned, rank 1, at least
  one), answer hijack per voice and defence, benign impact, displaced hits, bootstrap intervals
  (pure, tested by hand);
* :mod:`~bureau.labs.poisoning.report`, :mod:`~bureau.labs.poisoning.plots`,
  :mod:`~bureau.labs.poisoning.anchors` -- files, figures and the published figures beside them;
* :mod:`~bureau.labs.poisoning.lesson` -- a few calls for a notebook;
* ``python -m bureau poisoning`` (:mod:`~bureau.labs.poisoning.cli`) -- all of it.
"""

from .. import entry_points

__getattr__ = entry_points(__name__, run="runner:run_poisoning")
