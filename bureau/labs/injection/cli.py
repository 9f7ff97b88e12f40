"""``python -m bureau injection``: the prompt-injection lab, the bureau vs a naive shared memory."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--scenarios", default="", help="scenario ids, comma-separated (default: all)")
    p.add_argument("--temperament", default="gullible", choices=["gullible", "obedient"],
                   help="the stand-in model's temperament (ignored with BUREAU_LLM_MODEL)")
    p.add_argument("--targets", type=int, default=None, help="targets per scenario (default: all)")
    p.add_argument("--out", type=Path, default=Path("injection-results"),
                   help="folder for injection.json, injection.csv and injection-summary.csv")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="store to use (default: a temporary one, removed afterwards)")
    p.add_argument("--own-only", action="store_true",
                   help="the lab's own eight injections only (not AgentDojo's templates)")
    return p


def run(args: argparse.Namespace) -> int:
    from .lab import run_cli

    print(run_cli(args.scenarios, args.temperament, args.targets, args.out, args.data_dir,
                  external=not args.own_only))
    return 0
