"""The injection lab's files: ``injection.json``, ``injection.csv`` and
``injection-summary.csv`` (:meth:`~bureau.labs.injection.lab.LabReport.write`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .lab import LabReport


def write_outputs(result: LabReport, out: str | Path) -> list[Path]:
    """Write what :func:`~bureau.labs.injection.lab.run_lab` returned; returns the paths."""
    return result.write(Path(out))


__all__ = ["write_outputs"]
