"""The bench's files: ``bench.json`` and ``bench.csv``, one row per store size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_outputs(rows: list[dict[str, Any]], out: str | Path) -> dict[str, Path]:
    """Write the rows :func:`~bureau.labs.bench.runner.run_bench` returned; returns ``{name: path}``."""
    import pandas as pd

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "bench.json", "csv": out / "bench.csv"}
    paths["json"].write_text(json.dumps(rows, indent=2))
    pd.DataFrame(rows).to_csv(paths["csv"], index=False)
    return paths


__all__ = ["write_outputs"]
