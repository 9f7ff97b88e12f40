"""Leakage measurement: benchmarks run through five memory policies, and the metrics that score them.

Kept apart from the storage code so that measuring never needs a running store: a policy's
retrievals are written into a plain DataFrame and scored here.

* :mod:`~bureau.labs.leakage.datasets.magpie` loads MAGPIE, :mod:`~bureau.labs.leakage.datasets.agentsocialbench`
  AgentSocialBench (its records in :mod:`~bureau.labs.leakage.datasets.social_model`, its abstraction pairing
  in :mod:`~bureau.labs.leakage.datasets.social_pairing`, MAGPIE's shape in :mod:`~bureau.labs.leakage.datasets.social_lab`);
  :mod:`~bureau.labs.leakage.datasets.convert` turns their scenarios into Bureau cases, roles and queries (a
  :class:`~bureau.labs.leakage.datasets.labset.LabSet`) and picks a benchmark by its layout;
* :mod:`~bureau.labs.leakage.policies.policies` defines the policies (two shared pools vs the Bureau boundary);
  :mod:`~bureau.labs.leakage.runner` runs them on a lab set with one store and one embedder
  (:mod:`~bureau.labs.leakage.policies.mediated`: policy e) into a :class:`~bureau.labs.leakage.result.LabResult`;
* :mod:`~bureau.labs.leakage.metrics.metrics` scores exposures, :mod:`~bureau.labs.leakage.metrics.analysis` computes a
  run's figures, :mod:`~bureau.labs.leakage.timing` times the lab against embedding alone;
  :mod:`~bureau.labs.leakage.report.report` (filling ``report_template.md``), :mod:`~bureau.labs.leakage.report.summary`
  (``summary.json``) and :mod:`~bureau.labs.leakage.report.plots` turn a run into files, beside the
  published figures (:mod:`~bureau.labs.leakage.report.paper`), each figure beside its random baseline;
* ``python -m bureau leakage --out DIR`` does all of it (lesson 05 explains it).
"""

from .. import entry_points

__getattr__ = entry_points(__name__, run="runner:run_labs")
