"""``python -m bureau forgetting``: what is left on disk after the bureau forgets, sealed vs
unsealed, read as the observer who copies the data directory would."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--out", type=Path, default=Path("forgetting-results"),
                   help="folder for forgetting.json, .csv, .md and .png")
    p.add_argument("--per-op", type=int, default=10, help="canaries per operation")
    p.add_argument("--keep", action="store_true", help="keep the two data directories")
    return p


def run(args: argparse.Namespace) -> int:
    from .lab import format_table, run_lab

    print(format_table(run_lab(args.out, args.per_op, keep=args.keep)))
    print(f"(also written to {args.out}/forgetting.json, .csv, .md and .png)")
    return 0
