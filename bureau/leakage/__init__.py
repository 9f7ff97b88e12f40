"""Leakage measurement: a benchmark run through four memory policies, and the metrics that score them.

Kept apart from the storage code so that measuring never needs a running store: a policy's
retrievals are written into a plain DataFrame and scored here.

* :mod:`~bureau.leakage.magpie` loads MAGPIE; :mod:`~bureau.leakage.convert` turns its scenarios
  into Bureau cases, roles and queries (a :class:`~bureau.leakage.labset.LabSet`);
* :mod:`~bureau.leakage.policies` defines the four policies (shared pool vs the Bureau boundary);
  :mod:`~bureau.leakage.runner` runs them on a lab set with one store and one embedder;
* :mod:`~bureau.leakage.metrics` scores exposures; :mod:`~bureau.leakage.report` (filling
  ``report_template.md``) and :mod:`~bureau.leakage.plots` turn a run into files, beside the
  paper's figures (:mod:`~bureau.leakage.paper`);
* ``python -m bureau.leakage --out DIR`` does all of it (lesson 05 explains it).
"""
