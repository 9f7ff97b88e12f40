"""Draw the benchmark slices that ship in ``data/`` from the full sets, and measure both.

    python tools/make_slices.py draw --from ../shared/datasets             # magpie + agentsocialbench
    python tools/make_slices.py measure --from ../shared/datasets           # figures.json beside each

``draw`` writes ``data/magpie_slice`` and ``data/agentsocialbench_slice`` by the rule of
:mod:`bureau.labs.leakage.datasets.slices` (seeded; run again, the same files), with each
benchmark's licence beside its slice. ``measure`` runs the leak lab (``k`` = 5, the lessons'
default) on the full set and on the slice and writes the figures the lessons print beside their
own run to ``figures.json``: it needs the full sets and a few minutes (the embedding dominates).
The READMEs are written by hand from those figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bureau.labs.leakage.datasets import slices  # noqa: E402


def draw(source: Path) -> None:
    magpie = source / "magpie"
    names = slices.draw_magpie(magpie / "magpie.tsv", slices.MAGPIE_SLICE)
    shutil.copyfile(magpie / "LICENSE", slices.MAGPIE_SLICE / "LICENSE")
    print(f"magpie_slice: {len(names)} scenarios, first {names[:3]} ...")
    social = source / "agentsocialbench"
    if (slices.SOCIAL_SLICE / "scenarios").is_dir():
        shutil.rmtree(slices.SOCIAL_SLICE / "scenarios")
    drawn = slices.draw_agentsocialbench(social, slices.SOCIAL_SLICE)
    shutil.copyfile(social / "LICENSE", slices.SOCIAL_SLICE / "LICENSE")
    print("agentsocialbench_slice: " + ", ".join(f"{k} {len(v)}" for k, v in drawn.items()))


def measure(source: Path, k: int = 5) -> None:
    from bureau import Bureau
    from bureau.labs.leakage.claims import headline
    from bureau.labs.leakage.datasets.convert import load_lab
    from bureau.labs.leakage.runner import run_lab

    bureau = Bureau.open()
    runs = {slices.MAGPIE_SLICE: (source / "magpie" / "magpie.tsv", "MAGPIE"),
            slices.SOCIAL_SLICE: (source / "agentsocialbench", "AgentSocialBench")}
    for slice_dir, (full_path, name) in runs.items():
        out = {"k": k, "seed": slices.SEED}
        for label, path in (("full", full_path), ("slice", slice_dir)):
            start = time.perf_counter()
            lab = load_lab(path)
            result = run_lab(bureau, lab, k=k, cleanup=True)
            out[label] = {"scenarios": len(lab), **headline(result)}
            print(f"{name} {label}: {len(lab)} scenarios in {time.perf_counter() - start:.0f} s")
        (slice_dir / slices.FIGURES).write_text(json.dumps(out, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["draw", "measure"])
    parser.add_argument("--from", dest="source", type=Path, required=True,
                        help="the folder holding magpie/ and agentsocialbench/")
    args = parser.parse_args(argv)
    {"draw": draw, "measure": measure}[args.what](args.source.expanduser().resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
