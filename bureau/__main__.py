"""Command line: ``python -m bureau demo``, ``mcp``, ``classroom``, ``repair`` and ``voice`` (a
local model: serve, quality table), and every lab (``bench``, ``leakage``, ``injection``,
``poisoning``, ``peers``: :data:`bureau.labs.LABS`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import BureauError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bureau", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="tell the safe-combination story with X-ray figures")
    demo.add_argument("--keep", action="store_true", help="keep the demo case afterwards")
    from .labs import LABS

    for lab in LABS:  # every lab alike: its cli module's add_arguments and run
        lab.cli().add_arguments(sub.add_parser(lab.name, help=lab.help))
    mcp = sub.add_parser("mcp", help="serve one role's agent tools over MCP (stdio)")
    mcp.add_argument("--case", default=None, help="case id (default: $BUREAU_MCP_CASE)")
    mcp.add_argument("--role", default=None, help="role (default: $BUREAU_MCP_ROLE)")
    from .classroom.cli import add_arguments as classroom_arguments

    classroom_arguments(sub.add_parser(
        "classroom", help="a classroom on one server: start, add/reset/remove learners, loadtest"))
    from .voice.cli import add_arguments as voice_arguments

    voice_arguments(sub.add_parser(
        "voice", help="a local model (GGUF) as the roles' voice: serve, check, quality table"))
    rep = sub.add_parser("repair", help="compare the card store with the ledger; repair on request")
    rep.add_argument("--data-dir", type=Path, default=None,
                     help="data directory (default: $BUREAU_DATA_DIR or ~/.local/share/bureau)")
    rep.add_argument("--adopt", action="store_true",
                     help="re-register unknown cases whose snapshot survives")
    rep.add_argument("--purge-unknown", action="store_true",
                     help="delete the cards of namespaces that stay unknown")
    args = parser.parse_args(argv)
    try:
        lab = next((lab for lab in LABS if lab.name == args.command), None)
        if lab is not None:
            return int(lab.cli().run(args))
        if args.command == "classroom":
            from .classroom.cli import run as run_classroom

            return run_classroom(args)
        if args.command == "voice":
            from .voice.cli import run as run_voice

            return run_voice(args)
        if args.command == "repair":
            from .service.repair import repair
            from .settings import Settings

            extra = {"data_dir": args.data_dir} if args.data_dir else {}
            print(repair(Settings.from_env(**extra), adopt=args.adopt,
                         purge_unknown=args.purge_unknown).text())
        elif args.command == "mcp":
            from .mcp_server import serve_stdio

            return serve_stdio(args.case, args.role)
        elif args.command == "demo":
            from .course.demo import run_demo

            print(run_demo(keep=args.keep))
    except BureauError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
