"""``python -m bureau bench``: interrogation and publish latency, a table plus JSON and CSV."""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import tempfile
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--sizes", default="100,1000,10000", help="cards per case, comma-separated (the issue-36 "
                   "figures: 100,1000,10000,50000,100000)")
    p.add_argument("--queries", type=int, default=40, help="timed questions per size")
    p.add_argument("--out", type=Path, default=Path("bench-results"),
                   help="folder for bench.json and bench.csv")
    p.add_argument("--first-search", type=int, default=None, metavar="N",
                   help="also time the first search of one scope of N cards, sealed and not, "
                        "in a fresh process (issue 51's figure: 100000)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="store to fill (default: a temporary one, removed afterwards)")
    return p


def run(args: argparse.Namespace) -> int:
    from .runner import format_table, run_bench

    data_dir = args.data_dir
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="bureau-bench-"))
        atexit.register(shutil.rmtree, data_dir, True)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows = run_bench(sizes, args.queries, args.out, data_dir, first=args.first_search)
    print(format_table(rows))
    print(json.dumps(rows, indent=2))
    print(f"(also written to {args.out}/bench.json and bench.csv)")
    return 0
