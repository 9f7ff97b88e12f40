"""``python -m bureau.leakage``: run the MAGPIE leakage lab and write its report.

    python -m bureau.leakage --out results/leakage            # full MAGPIE, k = 5
    python -m bureau.leakage --dataset data/magpie_mini --out /tmp/mini --limit 3

The lab opens its own store (a temporary data directory unless ``--data-dir``): PowerMem serves
one store per process, and the lab writes ~6,000 cards that belong in no one's course data.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bureau.errors import BureauError


def _parser() -> argparse.ArgumentParser:
    from bureau.leakage.policies import DEFAULT_K, DEFAULT_THRESHOLD

    p = argparse.ArgumentParser(
        prog="python -m bureau.leakage",
        description="Measure private leakage and shareable recall of four memory policies on "
        "MAGPIE (shared pool vs the Bureau boundary), with one offline embedder.",
    )
    p.add_argument("--dataset", type=Path, default=None,
                   help="magpie.tsv, a folder holding it, or per-scenario JSON "
                   "(default: $BUREAU_MAGPIE or ../shared/datasets/magpie/magpie.tsv)")
    p.add_argument("--out", type=Path, required=True, help="output directory (created)")
    p.add_argument("--k", type=int, default=DEFAULT_K, help="top-k per scope (default %(default)s)")
    p.add_argument("--limit", type=int, default=None,
                   help="only N scenarios, spread evenly over the id-sorted list")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="Bureau data directory (default: a temporary one, deleted afterwards)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help="cosine for the stricter 'top-k and relevant' reading (default %(default)s)")
    p.add_argument("--no-bench", action="store_true",
                   help="skip timing the embedding of the same texts with a fresh encoder")
    p.add_argument("--sequential", action="store_true",
                   help="embed everything first, then do the storage work (no pipelining)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    try:
        return _run(args, started)
    except BureauError as exc:
        print(f"error: {exc}", file=sys.stderr)
        hint = getattr(exc, "hint", None)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, started: float) -> int:
    from tqdm import tqdm

    from bureau.leakage.convert import to_lab
    from bureau.leakage.magpie import default_magpie_path, load_magpie, subset
    from bureau.leakage.report import benchmark, summarize, write_outputs
    from bureau.leakage.runner import MAX_K, run_lab

    if not 1 <= args.k <= MAX_K:  # the same range check_limit applies, said as a CLI error
        print(f"error: --k must lie between 1 and {MAX_K}", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    source = args.dataset if args.dataset is not None else default_magpie_path()
    dataset = subset(load_magpie(source), args.limit)
    data_dir = args.data_dir
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="bureau-leakage-"))
        atexit.register(shutil.rmtree, data_dir, ignore_errors=True)

    from bureau.service import Bureau

    counts = dataset.counts()
    print(
        f"MAGPIE: {counts['scenarios']} scenarios, {counts['agents']:,} agents, "
        f"{counts['shareable']:,} shareable + {counts['private']:,} private items "
        f"({counts['safe_abstraction']} with a safe abstraction); k = {args.k}",
        flush=True,
    )
    bureau = Bureau.open(data_dir)

    def progress(it, total):  # noqa: ANN001, ANN202 - the Progress protocol
        return tqdm(it, total=total, desc="scenarios", unit="scn", disable=args.quiet,
                    file=sys.stderr)

    result = run_lab(bureau, to_lab(dataset), k=args.k, progress=progress,
                     pipeline=not args.sequential)
    bench = None if args.no_bench else benchmark(result)
    meta = {
        "command": "python -m bureau.leakage " + " ".join(sys.argv[1:]),
        "limit": args.limit,
        "pipeline": not args.sequential,
        "data_dir": "temporary" if args.data_dir is None else str(args.data_dir),
    }
    paths = write_outputs(result, args.out, bench, args.threshold, meta)
    summary = summarize(result, args.threshold)
    _print(summary, result, bench, paths, time.perf_counter() - started)
    return 0


def _print(summary, result, bench, paths, total) -> None:  # noqa: ANN001
    from bureau.leakage.paper import PAPER
    from bureau.leakage.report import relevance

    rel = relevance(result)
    print()
    print(f"{'policy':36s} {'leak pairs':>11s} {'leak items':>11s} {'recall':>8s}")
    for r in summary.to_dict(orient="records"):
        print(f"{r['label']:36s} {100 * r['private_leak_rate_pairs']:10.1f}% "
              f"{100 * r['private_leak_rate_items']:10.1f}% {100 * r['shareable_recall']:7.1f}%")
    print(f"relevance AUROC (pooled)            {rel['pooled']:.3f}   "
          f"(paper {PAPER['relevance_auroc']:.3f})")
    print(f"relevance AUROC (mean per scenario) {rel['per_scenario_mean']:.3f}   "
          f"({rel['scenarios_scored']} scenarios)")
    eng = result.engine_check
    print(f"seekdb vs numpy top-k agreement     {eng.get('same_topk', 0)}/{eng.get('queries', 0)}")
    if bench is not None:
        print()
        for line in bench.lines():
            print(line)
    print(f"command wall time      {total:8.1f} s (incl. store start, benchmark, files)")
    print()
    print(f"wrote {len(paths)} files to {paths['report'].parent}/ (report.md, summary.csv, ...)")


if __name__ == "__main__":
    sys.exit(main())
