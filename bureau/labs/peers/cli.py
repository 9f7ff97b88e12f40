"""``python -m bureau peers``: arguments and the run (the heavy imports wait until it runs)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", default="100,1000,10000",
                   help="cards in the store for the MAGPIE slices, comma-separated")
    p.add_argument("--k", type=int, default=5, help="results per search, every system")
    p.add_argument("--max-probes", type=int, default=100,
                   help="questions and probes of each kind per case set (a seeded sample "
                        "beyond this)")
    p.add_argument("--spoofs", type=int, default=50, help="spoof probes per case set")
    p.add_argument("--no-scenarios", action="store_true", help="skip the shipped scenarios")
    p.add_argument("--dataset", type=Path, default=None,
                   help="MAGPIE file (default: $BUREAU_MAGPIE or ../shared/datasets/magpie)")
    p.add_argument("--out", type=Path, default=Path("peers-results"),
                   help="folder for peers.csv, peers.json and peers.png")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="the bureau's store (default: a temporary one, removed afterwards)")


def run(args: argparse.Namespace) -> int:
    from .report import format_table, write_report
    from .runner import run_peers

    data_dir = args.data_dir
    tmp = None
    if data_dir is None:
        tmp = data_dir = Path(tempfile.mkdtemp(prefix="bureau-peers-"))
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        result = run_peers(data_dir, sizes=sizes, k=args.k, max_probes=args.max_probes,
                           spoofs=args.spoofs,
                           scenarios=not args.no_scenarios, dataset=args.dataset,
                           progress=print,
                           partial=lambda r: write_report(r, args.out))  # kept as it goes
        print(format_table(result))
        for path in write_report(result, args.out):
            print(f"wrote {path}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0
