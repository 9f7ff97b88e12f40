"""The memory-poisoning lab (issue 14): what trust tiers buy, measured at retrieval.

Poisoned memories are planted as untrusted tool output (texts crafted to rank high for trigger
questions, AgentPoison style); trigger and benign questions are then asked over a realistic
memory (a shipped scenario's cards plus a MAGPIE or AgentSocialBench slice) under three
configurations: (1) no tiers -- tool output kept as ordinary memory; (2) tiers -- it stays in
the run's ephemeral scope unless a narrow rule promotes it; (3) tiers with an over-eager rule.

* :mod:`~bureau.poisoning.attack` -- the trigger, questions and poisons (deterministic, from
  ``data/poisoning/attack.yaml``);
* :mod:`~bureau.poisoning.corpus` -- trials: memories, questions and poisons per benchmark slice;
* :mod:`~bureau.poisoning.runner` -- every trial through the service (cases, runs, whispers,
  retrievals) on one store;
* :mod:`~bureau.poisoning.metrics` -- trigger retrieval success, benign impact, displaced hits,
  bootstrap intervals (pure, tested by hand);
* :mod:`~bureau.poisoning.report`, :mod:`~bureau.poisoning.plots`,
  :mod:`~bureau.poisoning.anchors` -- files, figures and the published figures beside them;
* :mod:`~bureau.poisoning.lesson` -- two calls for a notebook;
* ``python -m bureau poisoning`` (:mod:`~bureau.poisoning.cli`) -- all of it.
"""
