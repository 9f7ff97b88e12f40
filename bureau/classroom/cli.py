"""``python -m bureau classroom ...``: the instructor's commands.

    python -m bureau classroom start --dir ~/classroom [--port 2881] [--learner-host HOST]
        (on an existing room whose server stopped: restarts it, same data, roster, password)
    python -m bureau classroom use --dir D --host H --port P --admin-user U   # password: $BUREAU_CLASSROOM_ADMIN_PASSWORD
    python -m bureau classroom add --dir D alice bob carol    # prints each connection file's path
        [--data-dir '/home/{learner}/.bureau-data']  # where their sealing keys live, if known
    python -m bureau classroom reset --dir D alice [--keep-data]
    python -m bureau classroom remove --dir D alice
    python -m bureau classroom status --dir D
    python -m bureau classroom teardown --dir D
    python -m bureau classroom guard --dir D     # the KILL guard (started by ``start``)
    python -m bureau classroom loadtest --learners 30 [--duration 180]

Nothing printed holds a password: the commands print paths, names and ports. ``--dir`` defaults
to ``$BUREAU_CLASSROOM_DIR``. Module-level imports stay light (``bureau.__main__`` builds its
parser from :func:`add_arguments`).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import tenants


def _dir_argument(p: argparse.ArgumentParser) -> None:
    default = os.environ.get("BUREAU_CLASSROOM_DIR")
    p.add_argument("--dir", type=Path, default=Path(default) if default else None,
                   required=default is None,
                   help="the classroom folder (roster, connection files, server data); "
                        "default $BUREAU_CLASSROOM_DIR")


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sub = p.add_subparsers(dest="action", required=True)
    s = sub.add_parser("start", help="start a seekdb server for a new classroom (or restart "
                                      "the stopped server of an existing one)")
    _dir_argument(s)
    s.add_argument("--port", type=int, default=None, help="default: a free port")
    s.add_argument("--learner-host", default="127.0.0.1",
                   help="the host written into connection files (default 127.0.0.1)")
    s.add_argument("--no-guard", action="store_true",
                   help="do not run the KILL guard (by default it runs, proves from the "
                        "server's log which learner ended another account's session, and "
                        "locks that account)")
    s.add_argument("--guard-name-only", action="store_true",
                   help="the guard names a proven sender on the instructor's page but does "
                        "not lock the account")
    u = sub.add_parser("use", help="a classroom on a server that already runs")
    _dir_argument(u)
    u.add_argument("--host", required=True)
    u.add_argument("--port", type=int, required=True)
    u.add_argument("--admin-user", default="root")
    u.add_argument("--learner-host", default=None)
    for name, helptext in (("add", "create learners' tenants and connection files"),
                           ("reset", "new password (and an empty tenant unless --keep-data)"),
                           ("remove", "drop learners' accounts and databases")):
        a = sub.add_parser(name, help=helptext)
        _dir_argument(a)
        a.add_argument("learners", nargs="+")
        if name == "reset":
            a.add_argument("--keep-data", action="store_true")
        if name == "add":
            a.add_argument("--data-dir", default=None,
                           help="each learner's data directory on this machine ({learner} is "
                                "replaced by the name): remove, reset and teardown then destroy "
                                "their sealing keys (seal.keys.learner_<name>) too")
    for name, helptext in (("status", "the server and the learners (no password)"),
                           ("guard", "watch for KILLs of other accounts' sessions, lock the "
                                     "proven sender (started by `start`)"),
                           ("teardown", "remove every learner, stop the server, delete the folder")):
        g = sub.add_parser(name, help=helptext)
        _dir_argument(g)
        if name == "guard":
            g.add_argument("--name-only", action="store_true",
                           help="name a proven sender, do not lock the account")
    from .loadtest import add_arguments as loadtest_arguments

    loadtest_arguments(sub.add_parser("loadtest", help="a simulated workshop on loopback"))
    return p


def run(args: argparse.Namespace) -> int:
    from . import tenants

    action = args.action
    if action == "loadtest":
        from .loadtest import run as run_loadtest

        return run_loadtest(args)
    if action == "guard":
        from .guard import main as guard_main

        return guard_main(tenants.Roster.load(args.dir), lock=not args.name_only)
    if action == "start":
        roster = tenants.start(args.dir, args.port, args.learner_host,
                               guard=not args.no_guard, guard_lock=not args.guard_name_only)
        print(f"classroom server running on 127.0.0.1:{roster.port} (pid {roster.pid}); "
              f"roster {roster.directory / tenants.ROSTER}")
    elif action == "use":
        password = os.environ.get("BUREAU_CLASSROOM_ADMIN_PASSWORD", "")
        roster = tenants.use(args.dir, args.host, args.port, args.admin_user, password,
                             args.learner_host)
        print(f"classroom on {roster.host}:{roster.port}; roster {roster.directory / tenants.ROSTER}")
    elif action == "add":
        for learner in args.learners:
            print(f"{learner}: {tenants.add(args.dir, learner, args.data_dir)}")
    elif action == "reset":
        for learner in args.learners:
            roster = tenants.Roster.load(args.dir)
            left = None if args.keep_data else tenants.keys_left(roster, learner)
            keys = "" if args.keep_data or left else _keys_note(roster, learner)
            print(f"{learner}: {tenants.reset(args.dir, learner, args.keep_data)} "
                  f"(new password{keys})")
            if left is not None:
                print(left.message())
    elif action == "remove":
        for learner in args.learners:
            keys = _keys_note(tenants.Roster.load(args.dir), learner)
            left = tenants.remove(args.dir, learner)
            print(f"{learner}: removed{'' if left else keys}")
            if left is not None:
                print(left.message())
    elif action == "status":
        print(json.dumps(tenants.status(args.dir), indent=2))
    elif action == "teardown":
        left = tenants.teardown(args.dir)
        print(f"classroom in {args.dir} torn down")
        for k in left:
            print(k.message())
    return 0


def _keys_note(roster: tenants.Roster, learner: str) -> str:
    """What the command does with the learner's sealing keys (said before it runs; a learner
    whose data directory the roster does not know gets :meth:`KeysLeft.message` instead)."""
    from . import tenants

    where = roster.data_dirs.get(learner)
    if where is None:
        return ""
    return f"; sealing keys in {tenants.seal_keys(where, learner)} destroyed"
