"""The forgetting lab's files: ``forgetting.json``, ``.csv``, ``.md`` (the table) and ``.png``."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_outputs(rows: list[dict[str, Any]], out: str | Path) -> Path:
    """Write what :func:`~bureau.labs.forgetting.lab.run_lab` returned; returns the folder."""
    from .lab import write

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write(out, rows)
    return out


__all__ = ["write_outputs"]
