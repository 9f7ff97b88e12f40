"""``python -m bureau gatemem``: GateMem's utility, access control and forgetting, measured at
the bureau's boundary beside the shared pool, the owner-only boundary, a random draw and the
published leaderboard.

    python -m bureau gatemem --out /tmp/gm                      # the shipped slice (seconds)
    python -m bureau gatemem --full --out results/gatemem       # $BUREAU_GATEMEM or ../shared
    python -m bureau gatemem --dataset /path/to/gatemem --out results/gatemem --limit 3

The lab opens its own store (a temporary data directory unless ``--data-dir``): PowerMem
serves one store per process, and a full run writes ~22,000 cards that belong in no one's
course data.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

DESCRIPTION = ("Score GateMem's utility (U), access-control violations (A) and forgetting "
               "failures (F) on the evidence the bureau's boundary hands a voice, beside the "
               "shared pool, the owner-only boundary, a random draw and the leaderboard.")


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from bureau.labs.gatemem.dataset import DOMAINS
    from bureau.labs.gatemem.runner import DEFAULT_K

    where = p.add_mutually_exclusive_group()
    where.add_argument("--dataset", type=Path, default=None,
                       help="a GateMem folder (<domain>/episodes.jsonl, checkpoints.jsonl); "
                            "default: the shipped slice, data/gatemem_slice")
    where.add_argument("--full", action="store_true",
                       help="the full set at $BUREAU_GATEMEM or ../shared/datasets/gatemem")
    p.add_argument("--out", type=Path, required=True, help="output directory (created)")
    p.add_argument("--k", type=int, default=DEFAULT_K,
                   help="cards handed to the voice, and top-k per scope (default %(default)s, "
                        "GateMem's RAG top_k)")
    p.add_argument("--limit", type=int, default=None,
                   help="only the first N episodes of each domain, in file order")
    p.add_argument("--domain", action="append", choices=DOMAINS, default=None,
                   help="only these domains (repeat; default: all four)")
    p.add_argument("--voice", choices=("none", "standin"), default="none",
                   help="score answers end to end too: 'standin' phrases with the offline "
                        "stand-in model (it quotes the card sharing most words with the "
                        "question); a configured BUREAU_LLM_* endpoint is used when set")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="Bureau data directory (default: a temporary one, deleted afterwards)")
    p.add_argument("--keep", action="store_true",
                   help="keep each episode's case in --data-dir (a temporary directory keeps "
                        "them until it goes at exit)")
    p.add_argument("--no-bench", action="store_true",
                   help="skip timing the embedding floor (the same texts, a fresh encoder)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bureau gatemem", description=DESCRIPTION)
    return run(add_arguments(parser).parse_args(argv))


def run(args: argparse.Namespace) -> int:
    from bureau.labs.cli_common import run_cli

    return run_cli(_run, args)


def _run(args: argparse.Namespace, started: float) -> int:
    from bureau.labs.cli_common import check_k_and_limit, lab_data_dir, progress_bar
    from bureau.labs.gatemem.dataset import DOMAINS, default_gatemem_path, load_gatemem
    from bureau.labs.gatemem.report import (
        check_lines,
        cost_lines,
        headline_lines,
        summary,
        table_lines,
        violation_lines,
        write_outputs,
    )
    from bureau.labs.gatemem.runner import run_lab
    from bureau.labs.gatemem.timing import embedding_floor, machine_load

    check_k_and_limit(args)
    source = default_gatemem_path() if args.full else args.dataset
    data = load_gatemem(source, tuple(args.domain or DOMAINS), args.limit)
    c = data.counts
    print(f"GateMem{' slice' if data.is_slice else ''} ({data.source}): {c['episodes']} "
          f"episodes, {c['turns']:,} turns, {c['checkpoints']:,} checkpoints "
          f"({c['utility']} utility, {c['privacy']} privacy, {c['safety']} safety); "
          f"k = {args.k}", flush=True)
    data_dir = lab_data_dir(args.data_dir, "gatemem")
    from bureau.service import Bureau

    bureau = Bureau.open(data_dir)
    voice, standin = _voice(args, bureau)
    load_start = machine_load()
    progress = progress_bar("episodes", "ep", args.quiet)

    # A temporary data directory is thrown away at exit: the audit anchor moves once at the
    # end instead of after each of the ~10,000 audited consults (the leak lab's choice).
    defer = bureau.bulk_audit() if args.data_dir is None else contextlib.nullcontext()
    try:
        with defer:
            # A temporary data directory goes at exit, cases and all: deleting each episode's
            # ~230 cards would cost about as much as writing them (the leak lab's choice).
            result = run_lab(bureau, data, args.k, progress=progress, voice=voice,
                             keep=args.keep or args.data_dir is None)
    finally:
        if standin is not None:
            standin.close()
    bench: dict = {"load_at_start": load_start}
    if not args.no_bench:
        bench.update(embedding_floor(result.texts))
        bench["load"] = machine_load()
    meta = {"command": "python -m bureau gatemem " + " ".join(sys.argv[2:]),
            "data_dir": "temporary" if args.data_dir is None else str(args.data_dir),
            "voice": result.voice_name or "none"}
    paths = write_outputs(result, args.out, bench, meta)
    summ = summary(result, bench, meta)
    print()
    for line in table_lines(summ):
        print(line)
    print()
    print("bureau against the shared pool (95 % intervals over episodes):")
    for line in headline_lines(summ):
        print(line)
    held = summ.get("held_out") or {}
    if held:
        print()
        print(f"the {held['episodes']} episodes outside the slice (the slice was the rules' "
              "development set):")
        for line in table_lines(summ, held["figures"], board_too=False):
            print(line)
    print()
    for line in violation_lines(summ):
        print(line)
    for line in check_lines(summ):
        print(line)
    v = summ["voice"]
    print("second table (answers): " + (v["note"] if not v["configured"] else
                                        f"{v['voice']}, see report.md"))
    for line in cost_lines(summ):
        print(line)
    print(f"command wall time {time.perf_counter() - started:.1f} s")
    print(f"wrote {len(paths)} outputs to {paths['report'].parent}/ (report.md, summary.json, "
          "figures)")
    return 0


def _voice(args: argparse.Namespace, bureau: object) -> tuple[object | None, object | None]:
    """The responder whose answers are scored (a configured model, or the stand-in), and the
    stand-in to close afterwards."""
    settings = getattr(bureau, "settings", None)
    if getattr(settings, "responder", "evidence") == "llm":
        return getattr(bureau, "responder", None), None
    if args.voice != "standin":
        return None, None
    from bureau.standin.model import StandinModel

    model = StandinModel("obedient").start()
    return model.responder(), model


__all__ = ["DESCRIPTION", "add_arguments", "main", "run"]
