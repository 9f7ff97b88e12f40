"""The bench (``python -m bureau bench``): what isolation costs, in figures: interrogation beside
one raw PowerMem search on the same store, publish beside a plain add, mediation beside none, and
the data directory's footprint. :mod:`.runner` measures, :mod:`.cli` is the command line."""

from .. import entry_points

__getattr__ = entry_points(__name__, run="runner:run_bench")
