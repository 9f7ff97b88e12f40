"""``python -m bureau leakage`` (or ``python -m bureau.labs.leakage``): run the leakage lab on MAGPIE and AgentSocialBench and write
its report.

    python -m bureau leakage --out results/leakage            # both benchmarks, full, k = 5
    python -m bureau leakage --dataset data/magpie_mini --out /tmp/mini --limit 3
    python -m bureau leakage --dataset data/magpie_mini --dataset data/agentsocialbench_mini \
        --out /tmp/mini                                      # both mini samples

``--dataset`` picks the benchmark by the path's layout (a MAGPIE tsv or folder, an
AgentSocialBench folder) and may be given once per benchmark. Without it the lab runs every
benchmark it finds at its default place (``--benchmark`` narrows or insists).

The lab opens its own store (a temporary data directory unless ``--data-dir``): PowerMem serves
one store per process, and the lab writes ~10,000 cards that belong in no one's course data.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

DESCRIPTION = ("Measure private leakage and shareable recall of five memory policies on "
               "MAGPIE and AgentSocialBench (shared pools vs the Bureau boundary), beside a random "
               "baseline, with one offline embedder.")


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from bureau.labs.leakage.policies.policies import DEFAULT_K, DEFAULT_THRESHOLD

    p.add_argument("--dataset", type=Path, action="append", default=None,
                   help="a benchmark, picked by its layout: magpie.tsv, a folder holding it or "
                   "per-scenario JSON (MAGPIE); a folder holding scenarios/ (AgentSocialBench). "
                   "Repeat for both (default: each benchmark at $BUREAU_MAGPIE / "
                   "$BUREAU_AGENTSOCIALBENCH or ../shared/datasets/)")
    p.add_argument("--benchmark", choices=("magpie", "agentsocialbench", "both"), default=None,
                   help="which benchmark(s) to run when --dataset is not given (default: every "
                   "one found; naming one makes its absence an error)")
    p.add_argument("--out", type=Path, required=True, help="output directory (created)")
    p.add_argument("--k", type=int, default=DEFAULT_K, help="top-k per scope (default %(default)s)")
    p.add_argument("--limit", type=int, default=None,
                   help="only the first N scenarios of each benchmark, in file order")
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
    parser = argparse.ArgumentParser(prog="python -m bureau leakage", description=DESCRIPTION)
    return run(add_arguments(parser).parse_args(argv))


def run(args: argparse.Namespace) -> int:
    from bureau.labs.cli_common import run_cli

    return run_cli(_run, args)


def _sources(args: argparse.Namespace) -> list[Path]:
    """The benchmark paths to run: ``--dataset`` as given, else the default place of each
    benchmark ``--benchmark`` names (all: the ones that exist, at least one)."""
    from bureau.errors import ScenarioError
    from bureau.labs.leakage.datasets.agentsocialbench import default_agentsocialbench_path
    from bureau.labs.leakage.datasets.magpie import default_magpie_path

    if args.dataset:
        return list(args.dataset)
    wanted = ("magpie", "agentsocialbench") if args.benchmark in (None, "both") else (
        args.benchmark,)
    finders = {"magpie": default_magpie_path, "agentsocialbench": default_agentsocialbench_path}
    found, missing = [], []
    for name in wanted:
        try:
            found.append(finders[name]())
        except ScenarioError as exc:
            if args.benchmark is not None:
                raise
            missing.append(exc)
    if not found:
        raise missing[0]
    for exc in missing:
        print(f"note: {exc.message} Running without it.", file=sys.stderr)
    return found


def _run(args: argparse.Namespace, started: float) -> int:
    from bureau.labs.cli_common import check_k_and_limit, lab_data_dir, progress_bar
    from bureau.labs.leakage.datasets.convert import load_lab
    from bureau.labs.leakage.metrics.analysis import analyse
    from bureau.labs.leakage.report.report import write_outputs
    from bureau.labs.leakage.runner import run_labs
    from bureau.labs.leakage.timing import benchmark

    check_k_and_limit(args)  # the range check_limit applies (1 to MAX_K), said as a CLI error
    labs = [load_lab(source, args.limit) for source in _sources(args)]
    data_dir = lab_data_dir(args.data_dir, "leakage")

    from bureau.service import Bureau

    for lab in labs:
        counts = lab.counts
        print(
            f"{lab.name}: {counts['scenarios']} scenarios, {counts['agents']:,} agents, "
            f"{counts['shareable']:,} shareable + {counts['private']:,} private items "
            f"({counts['safe_abstraction']} with a safe abstraction); k = {args.k}",
            flush=True,
        )
    bureau = Bureau.open(data_dir)
    progress = progress_bar("scenarios", "scn", args.quiet)

    # A temporary data directory is thrown away at exit, so nobody keeps its audit: the anchor
    # moves once at the end instead of after each of the ~30,000 audited consults (about 1 ms
    # each, 7 % of the lab). A directory the user named keeps the per-commit anchor.
    defer = bureau.bulk_audit() if args.data_dir is None else contextlib.nullcontext()
    with defer:
        results = run_labs(bureau, labs, k=args.k, progress=progress,
                           pipeline=not args.sequential)
    bench = None if args.no_bench else benchmark(results)
    meta = {
        "command": "python -m bureau leakage " + " ".join(sys.argv[1:]),
        "limit": args.limit,
        "pipeline": not args.sequential,
        "data_dir": "temporary" if args.data_dir is None else str(args.data_dir),
    }
    analyses = [analyse(r, args.threshold) for r in results]
    paths = write_outputs(results, args.out, bench, args.threshold, meta, analyses)
    _print(analyses, bench, paths, time.perf_counter() - started)
    return 0


def _print(analyses, bench, paths, total) -> None:  # noqa: ANN001
    from bureau.labs.leakage.policies.policies import SHARED_POOL
    from bureau.labs.leakage.report.paper import PAPER

    for a in analyses:
        k = a.result.k
        print()
        print(f"{a.name} (k = {k}; the shared pools: top-k in all, the bureau: top-k per scope)")
        print(f"{'policy':36s} {'leak pairs':>11s} {'leak items':>11s} {'recall':>8s}   "
              f"random: pairs / items / recall")
        for r in a.policies.to_dict(orient="records"):
            print(f"{r['label']:36s} {100 * r['private_leak_rate_pairs']:10.1f}% "
                  f"{100 * r['private_leak_rate_items']:10.1f}% {100 * r['shareable_recall']:7.1f}%"
                  f"   {100 * r['random_pair_leak']:.1f}% / {100 * r['random_item_leak']:.1f}% / "
                  f"{100 * r['random_shareable_recall']:.1f}%")
        a2 = a.cell(SHARED_POOL, 2 * k)
        lo, hi = a.ci(SHARED_POOL, "pair_leak", 2 * k)
        print(f"{'a: shared pool of others at 2k':36s} {100 * a2['pair_leak']:10.1f}% "
              f"{100 * a2['item_leak']:10.1f}% {100 * a2['shareable_recall']:7.1f}%"
              f"   {100 * a2['random_pair_leak']:.1f}% / {100 * a2['random_item_leak']:.1f}% / "
              f"{100 * a2['random_shareable_recall']:.1f}%  (pairs 95% CI {100 * lo:.1f}–"
              f"{100 * hi:.1f}%)")
        rel = a.relevance
        lo, hi = a.intervals["auroc_task_query"]
        print(f"relevance AUROC, task query         {rel['pooled']:.3f}   ({lo:.3f}–{hi:.3f}; "
              f"role: task {rel['by_query']['role_task']:.3f}; MaaS paper on MAGPIE "
              f"{PAPER['relevance_auroc']:.3f})")
        m = a.mediated
        print(f"{'e: bureau + mediation':36s} {100 * m['pair_leak']:10.1f}% "
              f"{100 * m['item_leak']:10.1f}% {100 * m['min_info_recall']:7.1f}%   "
              f"abstract coverage {100 * m['abstract_coverage']:.1f}%, abstraction leakage "
              f"{100 * m['abstraction_leakage']:.1f}%, {m['audit_entries']:,} audit entries")
        p = a.probe
        print(f"exhaustive boundary probe           {p['probes']:,} probes, {p['hits']} hits")
        mp = m["probe"]
        print(f"mediated probe (policy e)           {mp['probes']:,} probes, {mp['decisions']:,} "
              f"decisions, {mp['raw_private_reveals']} raw private reveals")
        w, cm = a.measured["wiring_check"], a.measured["content_mediator"]
        print(f"e wiring check (label conformance)  {w['private_cards_revealed']} of "
              f"{w['private_card_decisions']:,} private-card decisions revealed")
        if cm:
            print(f"content mediator, labels hidden     leak {100 * cm['content']['leak']:.1f}%, "
                  f"recall {100 * cm['content']['recall']:.1f}% (random line "
                  f"{100 * cm['random']['leak']:.1f}%; evaluation half, "
                  f"{cm['evaluation_decisions']:,} decisions)")
        noise = a.measured["label_noise"].get("rates", {})
        if noise:
            print("e under label noise                 " + ", ".join(
                f"{rate:.0%}: leak {100 * r['leak']:.1f}% recall {100 * r['recall']:.1f}%"
                for rate, r in noise.items()))
        rep = a.repetition
        print(f"abstractions repeating a term       {rep['repeating_a_term']:,} of "
              f"{rep['abstractions']:,} (known names excluded; the checker: "
              f"{rep['checker_flags']:,}, {rep['checker_flags_without_known_names']:,} without "
              f"names)")
        eng = a.result.engine_check
        print(f"seekdb vs numpy top-k agreement     {eng.get('same_topk', 0)}/"
              f"{eng.get('queries', 0)}")
    if bench is not None:
        print()
        for line in bench.lines():
            print(line)
    print(f"command wall time      {total:8.1f} s (incl. store start, benchmark, files)")
    print()
    print(f"wrote {len(paths)} files to {paths['report'].parent}/ (report.md, summary.csv, ...)")
