"""Command line: ``python -m bureau demo``, ``bench``, ``injection``, ``poisoning``, ``peers``,
``mcp``, ``classroom`` and ``repair``."""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
from pathlib import Path

from .errors import BureauError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bureau", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="tell the safe-combination story with X-ray figures")
    demo.add_argument("--keep", action="store_true", help="keep the demo case afterwards")
    bench = sub.add_parser("bench", help="interrogation and publish latency figures")
    bench.add_argument("--sizes", default="100,1000,10000", help="cards per case, comma-separated")
    bench.add_argument("--queries", type=int, default=40, help="timed questions per size")
    bench.add_argument("--out", type=Path, default=Path("bench-results"),
                       help="folder for bench.json and bench.csv")
    bench.add_argument("--data-dir", type=Path, default=None,
                       help="store to fill (default: a temporary one, removed afterwards)")
    inj = sub.add_parser("injection", help="prompt-injection lab: the bureau vs a naive shared memory")
    inj.add_argument("--scenarios", default="", help="scenario ids, comma-separated (default: all)")
    inj.add_argument("--temperament", default="gullible", choices=["gullible", "obedient"],
                     help="the stand-in model's temperament (ignored with BUREAU_LLM_MODEL)")
    inj.add_argument("--targets", type=int, default=None, help="targets per scenario (default: all)")
    inj.add_argument("--out", type=Path, default=Path("injection-results"),
                     help="folder for injection.json, injection.csv and injection-summary.csv")
    inj.add_argument("--data-dir", type=Path, default=None,
                     help="store to use (default: a temporary one, removed afterwards)")
    inj.add_argument("--own-only", action="store_true",
                     help="the lab's own eight injections only (not AgentDojo's templates)")
    from .poisoning.cli import add_arguments as poisoning_arguments

    poisoning_arguments(sub.add_parser(
        "poisoning", help="memory-poisoning lab: poisoned tool output vs trust tiers, at retrieval"))
    mcp = sub.add_parser("mcp", help="serve one role's agent tools over MCP (stdio)")
    mcp.add_argument("--case", default=None, help="case id (default: $BUREAU_MCP_CASE)")
    mcp.add_argument("--role", default=None, help="role (default: $BUREAU_MCP_ROLE)")
    from .peers.cli import add_arguments as peers_arguments

    peers_arguments(sub.add_parser(
        "peers", help="the same work through the bureau, mem0 and LangGraph's store"))
    from .classroom.cli import add_arguments as classroom_arguments

    classroom_arguments(sub.add_parser(
        "classroom", help="a classroom on one server: start, add/reset/remove learners, loadtest"))
    forg = sub.add_parser("forgetting", help="forgetting lab: what is left on disk after the "
                          "bureau forgets, sealed vs unsealed")
    forg.add_argument("--out", type=Path, default=Path("forgetting-results"),
                      help="folder for forgetting.json, .csv, .md and .png")
    forg.add_argument("--per-op", type=int, default=10, help="canaries per operation")
    forg.add_argument("--keep", action="store_true", help="keep the two data directories")
    rep = sub.add_parser("repair", help="compare the card store with the ledger; repair on request")
    rep.add_argument("--data-dir", type=Path, default=None,
                     help="data directory (default: $BUREAU_DATA_DIR or ~/.local/share/bureau)")
    rep.add_argument("--adopt", action="store_true",
                     help="re-register unknown cases whose snapshot survives")
    rep.add_argument("--purge-unknown", action="store_true",
                     help="delete the cards of namespaces that stay unknown")
    args = parser.parse_args(argv)
    try:
        if args.command == "classroom":
            from .classroom.cli import run as run_classroom

            return run_classroom(args)
        if args.command == "repair":
            from .service.repair import repair
            from .settings import Settings

            extra = {"data_dir": args.data_dir} if args.data_dir else {}
            print(repair(Settings.from_env(**extra), adopt=args.adopt,
                         purge_unknown=args.purge_unknown).text())
        elif args.command == "mcp":
            from .mcp_server import serve_stdio

            return serve_stdio(args.case, args.role)
        elif args.command == "peers":
            from .peers.cli import run as run_peers

            return run_peers(args)
        elif args.command == "poisoning":
            from .poisoning.cli import run as run_poisoning

            return run_poisoning(args)
        elif args.command == "injection":
            from .course.injection import run_cli

            print(run_cli(args.scenarios, args.temperament, args.targets, args.out, args.data_dir,
                          external=not args.own_only))
        elif args.command == "forgetting":
            from .forgetting.lab import format_table as forgetting_table
            from .forgetting.lab import run_lab

            print(forgetting_table(run_lab(args.out, args.per_op, keep=args.keep)))
            print(f"(also written to {args.out}/forgetting.json, .csv, .md and .png)")
        elif args.command == "demo":
            from .course.demo import run_demo

            print(run_demo(keep=args.keep))
        else:
            from .bench import format_table, run_bench

            data_dir = args.data_dir
            if data_dir is None:
                data_dir = Path(tempfile.mkdtemp(prefix="bureau-bench-"))
                atexit.register(shutil.rmtree, data_dir, True)
            sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
            rows = run_bench(sizes, args.queries, args.out, data_dir)
            print(format_table(rows))
            print(json.dumps(rows, indent=2))
            print(f"(also written to {args.out}/bench.json and bench.csv)")
    except BureauError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
