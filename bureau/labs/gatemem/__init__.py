"""The GateMem lab (issue 53): GateMem's utility, access control and forgetting, scored at the
bureau's boundary beside its published leaderboard.

GateMem (arXiv 2606.18829, MIT) asks the whole question the bureau answers: many principals
share one memory, each may see only what policy allows, and a deletion request must make the
deleted thing unrecoverable. Its episodes become cases here and its checkpoints are asked at
their turn; what the bureau hands the asker's voice is scored with GateMem's own patterns.

* :mod:`.dataset` reads the release (episodes, checkpoints, leaderboard); :mod:`.slice` cuts
  the shipped slice (``data/gatemem_slice``);
* :mod:`.rules` is the administrator's rule book, read from principals, relationships and
  turns only (never a checkpoint): :mod:`.rules.matters` (which shared records exist, who reads
  each, which record a turn joins), :mod:`.rules.kinds` (record, logistics, credential,
  private), :mod:`.rules.notes` (grants, revocations, expiries), :mod:`.rules.deletions`
  (deletion requests and what they delete); :mod:`.plan` applies it, turn by turn, into
  writes, forgets and policy versions;
* :mod:`.replay` executes a plan on real storage and asks the checkpoints; :mod:`.baselines`
  computes the shared pool, the owner-only boundary and the random draw; :mod:`.patterns` and
  :mod:`.scoring` score evidence the way GateMem's scorer does and say why utility was lost;
* :mod:`.runner` runs it all (``run``), :mod:`.result` holds a run, :mod:`.metrics` computes
  U, A, F, MGS with intervals and the headline, :mod:`.report` and :mod:`.plots` write the
  files and figures, :mod:`.timing` the cost, :mod:`.lesson` the deep dive's helpers, and
  ``python -m bureau gatemem`` (:mod:`.cli`) does all of it.
"""

from .. import entry_points

__getattr__ = entry_points(__name__, run="runner:run_lab")
