"""Leakage measurement: the MAGPIE benchmark loader and the metrics that score a memory policy.

Kept apart from the storage code so that measuring never needs a running store: a policy's
retrievals are written into a plain DataFrame and scored here.

* :mod:`~bureau.leakage.magpie` loads MAGPIE; :mod:`~bureau.leakage.metrics` scores exposures;
* :mod:`~bureau.leakage.policies` runs the lab (shared pool vs the Bureau boundary, one
  embedder); :mod:`~bureau.leakage.report` and :mod:`~bureau.leakage.plots` turn a run into
  files; ``python -m bureau.leakage --out DIR`` does all of it (lesson 05 explains it).
"""
