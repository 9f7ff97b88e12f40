"""The leakage lab's report: tables, CSV/JSON, ``summary.json``, plots, and the published figures
it is read beside."""

from .report import write_outputs

__all__ = ["write_outputs"]
