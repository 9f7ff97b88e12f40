"""``python -m bureau forgetting``: what is left on disk after the bureau forgets, sealed vs
unsealed, read as the observer who copies the data directory would.

    python -m bureau forgetting --out DIR [--per-op 20] [--no-classroom]
    python -m bureau forgetting --out DIR --docs docs/sealing.md   # and rewrite the docs' table
    python -m bureau forgetting --from DIR/forgetting.json --docs docs/sealing.md  # no new run
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--out", type=Path, default=Path("forgetting-results"),
                   help="folder for forgetting.json, .csv, .md and .png")
    p.add_argument("--per-op", type=int, default=20,
                   help="canaries per operation (at least 11: the k = 10 attack knows 10 others)")
    p.add_argument("--keep", action="store_true", help="keep the data directories")
    p.add_argument("--no-classroom", action="store_true",
                   help="skip the classroom rows (they start a classroom server)")
    p.add_argument("--docs", type=Path, default=None,
                   help="a page whose forgetting-lab table to rewrite from the rows "
                        "(docs/sealing.md; the rows are kept beside it as forgetting.json)")
    p.add_argument("--from", dest="rows", type=Path, default=None,
                   help="take the rows of an earlier run's forgetting.json instead of running")
    return p


def run(args: argparse.Namespace) -> int:
    from .lab import format_table, run_lab
    from .report import read_rows, update_docs

    if args.rows is not None:
        rows = read_rows(args.rows)
    else:
        rows = run_lab(args.out, args.per_op, keep=args.keep, classroom=not args.no_classroom)
        print(f"(also written to {args.out}/forgetting.json, .csv, .md and .png)")
    print(format_table(rows))
    if args.docs is not None:
        update_docs(args.docs, rows, args.docs.with_name("forgetting.json"))
        print(f"table in {args.docs} rewritten; rows in {args.docs.with_name('forgetting.json')}")
    return 0
