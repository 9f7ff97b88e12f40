"""Leakage measurement: benchmarks run through five memory policies, and the metrics that score them.

Kept apart from the storage code so that measuring never needs a running store: a policy's
retrievals are written into a plain DataFrame and scored here.

* :mod:`~bureau.leakage.magpie` loads MAGPIE, :mod:`~bureau.leakage.agentsocialbench`
  AgentSocialBench (its records in :mod:`~bureau.leakage.social_model`, its abstraction pairing
  in :mod:`~bureau.leakage.social_pairing`, MAGPIE's shape in :mod:`~bureau.leakage.social_lab`);
  :mod:`~bureau.leakage.convert` turns their scenarios into Bureau cases, roles and queries (a
  :class:`~bureau.leakage.labset.LabSet`) and picks a benchmark by its layout;
* :mod:`~bureau.leakage.policies` defines the policies (two shared pools vs the Bureau boundary);
  :mod:`~bureau.leakage.runner` runs them on a lab set with one store and one embedder
  (:mod:`~bureau.leakage.mediated`: policy e) into a :class:`~bureau.leakage.result.LabResult`;
* :mod:`~bureau.leakage.metrics` scores exposures, :mod:`~bureau.leakage.analysis` computes a
  run's figures, :mod:`~bureau.leakage.timing` times the lab against embedding alone;
  :mod:`~bureau.leakage.report` (filling ``report_template.md``), :mod:`~bureau.leakage.summary`
  (``summary.json``) and :mod:`~bureau.leakage.plots` turn a run into files, beside the
  published figures (:mod:`~bureau.leakage.paper`), each figure beside its random baseline;
* ``python -m bureau.leakage --out DIR`` does all of it (lesson 05 explains it).
"""
