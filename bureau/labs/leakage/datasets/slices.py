"""Seeded slices of the two leak benchmarks that ship in ``data/`` (issue 48).

Why: a fresh clone has neither benchmark (they are read from a path the user gives), and the
hand-written mini sets the lessons fell back on told the opposite story (relevance a near-perfect
privacy classifier on three invented scenarios). Both benchmarks are permissively licensed
(MAGPIE: Apache-2.0 licence file, README says MIT; AgentSocialBench: MIT), so a small slice of
real items ships instead, with the licence and citation beside it, drawn by the rule below, which
``tools/make_slices.py`` runs again from the full sets.

**The rule.** ``numpy.random.default_rng(seed)`` draws, without replacement:

* MAGPIE: :data:`MAGPIE_SCENARIOS` of the 200 scenarios; the slice's TSV keeps them *in the order
  drawn*, so a lesson's first ``limit`` scenarios (:func:`.magpie.subset` takes them in file
  order) are a random sample too, not the alphabetically first.
* AgentSocialBench: :data:`SOCIAL_PER_CATEGORY` files of each category the lab reads
  (``cross_domain``, ``mediated_comm``, ``cross_user``), copied byte for byte.

The seed is the first one tried, :data:`SEED`; the slice's README states what it does and does
not reproduce of the full set, from the figures ``tools/make_slices.py`` measured on both
(``figures.json`` beside the data, which the lessons print next to their own run).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from bureau.resources import shipped_path

SEED = 0
MAGPIE_SCENARIOS = 60
"""About a third of MAGPIE's 200 scenarios: 1.2 MB, under the 2 MB a slice may take."""
SOCIAL_CATEGORIES = ("cross_domain", "mediated_comm", "cross_user")
"""The categories the lab reads (:mod:`.agentsocialbench`); the others are left out."""
SOCIAL_PER_CATEGORY = 20
"""60 of the 257 in-scope files: about 0.8 MB."""
MAGPIE_SLICE = shipped_path("data", "magpie_slice")
SOCIAL_SLICE = shipped_path("data", "agentsocialbench_slice")
FIGURES = "figures.json"
"""Beside each slice: the lab's figures on the full set and on the slice (tools/make_slices.py)."""


def _read_tsv(path: Path) -> tuple[list[str], list[list[str]]]:
    csv.field_size_limit(2**31 - 1)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader)
        return header, [row for row in reader if row]


def draw_magpie(source: Path, out: Path, n: int = MAGPIE_SCENARIOS,
                seed: int = SEED) -> list[str]:
    """Write ``n`` of the scenarios of MAGPIE's ``source`` TSV to ``out/magpie.tsv``, in the
    order drawn; returns their ``file_name``s in that order."""
    header, rows = _read_tsv(source)
    if not 1 <= n <= len(rows):
        raise ValueError(f"a slice of {n} scenarios from {len(rows)}")
    picked = np.random.default_rng(seed).choice(len(rows), size=n, replace=False)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "magpie.tsv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        for i in picked:
            writer.writerow(rows[int(i)])
    name = header.index("file_name")
    return [rows[int(i)][name] for i in picked]


def draw_agentsocialbench(source: Path, out: Path, per_category: int = SOCIAL_PER_CATEGORY,
                          seed: int = SEED) -> dict[str, list[str]]:
    """Copy ``per_category`` files of each category the lab reads from AgentSocialBench's
    ``source`` (the folder holding ``scenarios/``) to ``out/scenarios/<category>/``; returns the
    files drawn per category, in the order drawn."""
    rng = np.random.default_rng(seed)
    drawn: dict[str, list[str]] = {}
    for category in SOCIAL_CATEGORIES:
        files = sorted(p.name for p in (source / "scenarios" / category).glob("*.json"))
        if not 1 <= per_category <= len(files):
            raise ValueError(f"{per_category} files from the {len(files)} of {category}")
        picked = [files[int(i)] for i in rng.choice(len(files), size=per_category,
                                                     replace=False)]
        target = out / "scenarios" / category
        target.mkdir(parents=True, exist_ok=True)
        for name in picked:
            shutil.copyfile(source / "scenarios" / category / name, target / name)
        drawn[category] = picked
    return drawn


def slice_figures(slice_dir: Path) -> dict[str, Any]:
    """The figures ``tools/make_slices.py`` measured on the full set and on this slice
    (``{}`` when the file is missing: a slice drawn by hand)."""
    path = Path(slice_dir) / FIGURES
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


__all__ = ["FIGURES", "MAGPIE_SCENARIOS", "MAGPIE_SLICE", "SEED", "SOCIAL_CATEGORIES",
           "SOCIAL_PER_CATEGORY", "SOCIAL_SLICE", "draw_agentsocialbench", "draw_magpie",
           "slice_figures"]
