"""``python -m bureau poisoning`` (also ``python -m bureau.labs.poisoning``): run the lab, write its
files, print its table.

    python -m bureau poisoning                       # both benchmarks, 12 trials each, k = 5
    python -m bureau poisoning --limit 2 --out /tmp/p
    python -m bureau poisoning --magpie data/magpie_mini --agentsocialbench \
        data/agentsocialbench_mini --limit 1         # the shipped samples, seconds

The lab opens its own store (a temporary data directory unless ``--data-dir``), because PowerMem
serves one store per process and the lab's cases belong in no one's course data. Module-level
imports stay light: ``bureau.__main__`` builds its parser from :func:`add_arguments`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

DEFAULT_LIMIT = 12
"""Trials (benchmark slices) per benchmark by default: 24 trials, ~2 minutes on 2 cores."""
DEFAULT_OUT = Path("poisoning-results")
MAX_SLICE_ITEMS = 2000
"""A victim memory of up to 2,000 benchmark items: one poison is then 0.05 % of it, below
AgentPoison's < 0.1 %; MAGPIE holds about 3,800 distinct items, AgentSocialBench 2,600."""


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                   help="trials per benchmark: its first N slices (default %(default)s)")
    p.add_argument("--k", type=int, default=5, help="top-k per retrieval (default %(default)s)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help="folder for summary.csv, summary.json, report.md and the plots "
                   "(default %(default)s/)")
    p.add_argument("--magpie", type=Path, default=None,
                   help="MAGPIE (magpie.tsv or its folder; default $BUREAU_MAGPIE or "
                   "../shared/datasets/magpie, else the shipped data/magpie_mini)")
    p.add_argument("--agentsocialbench", type=Path, default=None,
                   help="AgentSocialBench folder (default $BUREAU_AGENTSOCIALBENCH or "
                   "../shared/datasets/agentsocialbench, else data/agentsocialbench_mini)")
    p.add_argument("--slice", type=int, default=None, dest="slice_items",
                   help="benchmark items per victim memory (default 100; 1000 puts the one "
                   "rare-trigger poison near AgentPoison's rate of 0.1 %%)")
    p.add_argument("--questions", type=int, default=None, dest="trigger_items",
                   help="slice items per trial asked about with the trigger, each with a topical "
                   "poison (default 4); more gives the one rare-trigger poison of a large "
                   "slice more triggered questions to answer")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="store to use (default: a temporary one, removed afterwards); the "
                   "lab's cases are deleted from it when each trial is done")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = add_arguments(argparse.ArgumentParser(
        prog="python -m bureau poisoning",
        description="Memory-poisoning lab: poisoned tool output against no tiers, tiers and an "
        "over-eager promotion rule, measured at retrieval."))
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the lab for parsed arguments; 0 on success, 2 on a user error (printed)."""
    from bureau.labs.cli_common import run_cli

    return run_cli(_run, args, hint=False)


def _run(args: argparse.Namespace, started: float) -> int:
    from bureau.labs.cli_common import UsageError, check_k_and_limit, lab_data_dir, progress_bar
    from bureau.labs.poisoning.corpus import (
        SLICE_ITEMS,
        TRIGGER_ITEMS,
        build_corpus,
        resolve_sources,
    )
    from bureau.labs.poisoning.report import console_lines, headline, summary_table, write_outputs
    from bureau.labs.poisoning.runner import run_poisoning

    check_k_and_limit(args)
    slice_items = SLICE_ITEMS if args.slice_items is None else args.slice_items
    if not 10 <= slice_items <= MAX_SLICE_ITEMS:
        raise UsageError(f"--slice must lie between 10 and {MAX_SLICE_ITEMS}")
    trigger_items = TRIGGER_ITEMS if args.trigger_items is None else args.trigger_items
    if not 1 <= trigger_items <= slice_items // 4:
        raise UsageError(f"--questions must lie between 1 and a quarter of --slice "
                         f"({slice_items // 4})")
    sources, notes = resolve_sources(args.magpie, args.agentsocialbench)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    corpus = build_corpus(sources, limit=args.limit, slice_items=slice_items,
                          trigger_items=trigger_items)
    sizes = corpus.counts()
    print(f"{sizes['trials']} trials ({', '.join(corpus.sources)}): {sizes['memory_cards']:,} "
          f"victim cards, {sizes['trigger_questions']} trigger + {sizes['benign_questions']} "
          f"benign questions, {sizes['poisons']} poisons; k = {args.k}", flush=True)

    data_dir = lab_data_dir(args.data_dir, "poisoning")
    from bureau.service import Bureau

    bureau = Bureau.open(data_dir)
    progress = progress_bar("trials", "trial", args.quiet)

    result = run_poisoning(bureau, corpus, k=args.k, progress=progress,
                           cleanup=args.data_dir is not None)
    seconds = time.perf_counter() - started
    meta = {"command": _command(), "limit": args.limit, "seconds": round(seconds, 1),
            "data_dir": "temporary" if args.data_dir is None else str(args.data_dir),
            "notes": notes}
    paths = write_outputs(result, args.out, meta)
    summary = summary_table(result)
    print()
    for line in console_lines(summary, result):
        print(line)
    t = result.timings
    print(f"\nrun time {time.perf_counter() - started:.1f} s (lab {t.get('total', 0):.1f} s: "
          f"embedding {t.get('embed', 0):.1f} s, writing cases {t.get('seed', 0):.1f} s, "
          f"retrievals {t.get('retrieve', 0):.1f} s for {result.counts['retrievals']:,} "
          "questions)")
    print(f"wrote {len(paths)} files to {args.out}/ (report.md, summary.csv, summary.json, "
          "plots)")
    print(json.dumps(headline(summary, time.perf_counter() - started)))
    return 0


def _command() -> str:
    """How this process was started, for the report."""
    args = sys.argv[1:]
    if args[:1] == ["poisoning"]:
        return " ".join(["python -m bureau", *args])
    return " ".join(["python -m bureau.labs.poisoning", *args])
