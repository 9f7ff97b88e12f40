"""``python -m bureau classroom loadtest --learners N``: a simulated workshop on loopback.

A classroom server is started from the wheel (or ``--dir`` names one), N learners are added, and
each learner is a process of its own with its own tenant and data directory, as on a hub. In
three phases:

1. **ready**: every learner opens the bureau in its tenant, loads ``safe-combination`` and asks
   one untimed question (lesson 00's environment check warms the encoder the same way).
2. **solo**: learner 1 alone asks ``--solo-queries`` questions: the single-learner interrogation
   p50 of this run, measured on the same machine, server and data (the target's yardstick).
3. **room**: for ``--duration`` seconds every learner repeats lessons 01-03's actions (01:
   whisper a card, list what a role holds, who knows; 02: interrogate, known and unknown;
   03: publish a card, read the stage and the events), separated by think times drawn from a
   log-normal distribution (median ``--think-median`` s, shape ``--think-sigma``, clipped to
   0.5-30 s: people read between cells); every few actions it probes the other learners'
   tenants with raw SQL under its own account (their tables, ``USE``, ``SHOW TABLES``,
   ``information_schema``) and with bureau calls given their case ids (case, stage, events,
   publishing their card ids, ``cases()``). A probe that returns anything of another learner is
   a cross-tenant read.

It prints p50/p95/max latency per action, errors, probes and cross-tenant reads, the server's
resident memory (sampled every second) and each learner process's peak, as a table and JSON
(``--out``/loadtest.json). Targets: 0 errors, 0 cross-tenant reads, interrogation p95 at most
3x the solo p50.

**Fault run** (``--fault-at S``): S seconds into the room phase the server is killed with
``SIGKILL`` and restarted at once (``classroom start`` on the existing room: same data, port and
passwords). Each learner keeps every card id a whisper acknowledged and checks at the end that
all are there (lost writes, must be 0). The report adds errors by kind (every one must be a
typed bureau error, never a driver's), the restart's duration, and the time to recover: from the
kill to the last learner's first successful call after it. Targets then: 0 untyped errors,
0 lost writes, 0 cross-tenant reads (latency is not judged).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUESTIONS = {
    "known": "What is the combination of the safe in the study?",
    "unknown": "Where does the butler go on Thursday evenings?",
}
THINK_CLIP = (0.5, 30.0)
TARGET_RATIO = 3.0


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--learners", type=int, default=30)
    p.add_argument("--duration", type=float, default=180.0, help="seconds of the room phase")
    p.add_argument("--think-median", type=float, default=4.0,
                   help="median think time between actions, seconds (log-normal)")
    p.add_argument("--think-sigma", type=float, default=0.6,
                   help="log-normal shape (sigma of the log); clipped to 0.5-30 s")
    p.add_argument("--solo-queries", type=int, default=30)
    p.add_argument("--probe-every", type=int, default=3, help="probe after every k actions")
    p.add_argument("--embedder", default="minilm", choices=["minilm", "hash"])
    p.add_argument("--dir", type=Path, default=None,
                   help="an existing classroom to add the load learners to (default: a "
                        "temporary one, torn down afterwards)")
    p.add_argument("--out", type=Path, default=Path("classroom-results"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fault-at", type=float, default=None, metavar="S",
                   help="fault run: kill -9 the server S seconds into the room phase and "
                        "restart it (needs a classroom this run starts)")
    return p


# -- one learner (a child process) ---------------------------------------------------------------
def _percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _wait(path: Path, deadline: float) -> None:
    while not path.exists():
        if time.time() > deadline:
            raise TimeoutError(f"{path.name} never appeared")
        time.sleep(0.05)


def _write(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.rename(path)


def _probe_sql(conn_info: Any, others: list[str], rng: random.Random) -> tuple[int, int]:
    """(probes, reads that returned another tenant's data) with raw SQL under own account."""
    import pymysql

    from ..bounds import session_sql

    other = f"learner_{rng.choice(others)}"
    statements = [f"SELECT COUNT(*) FROM `{other}`.bureau_cards",
                  f"SELECT body FROM `{other}`.bureau_snapshots",
                  f"SELECT * FROM `{other}`.bureau_progress",
                  f"SHOW TABLES FROM `{other}`", f"USE `{other}`",
                  "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                  f"'{other}'"]
    conn = pymysql.connect(host=conn_info.host, port=conn_info.port, user=conn_info.user,
                           password=conn_info.password, database=conn_info.database,
                           connect_timeout=10, init_command=session_sql(), read_timeout=30,
                           write_timeout=30)
    reads = 0
    try:
        with conn.cursor() as cur:
            for sql in statements:
                try:
                    cur.execute(sql)
                    rows = cur.fetchall()
                except pymysql.err.MySQLError:
                    continue
                if sql.startswith("SELECT COUNT(*) FROM information_schema"):
                    reads += int(rows[0][0] > 0)
                else:
                    reads += 1  # any answer at all from another tenant's database
    finally:
        conn.close()
    return len(statements), reads


def _probe_bureau(bureau: Any, case: Any, theirs: dict[str, Any]) -> tuple[int, int]:
    """(probes, successes) of bureau calls given another learner's case and card ids."""
    from ..errors import BureauError

    calls = [lambda: bureau.case(theirs["case_id"]),
             lambda: bureau.case(theirs["case_id"]).stage(),
             lambda: bureau.event_log(theirs["case_id"]),
             lambda: case.publish("informant", theirs["card_id"])]
    reads = 0
    for call in calls:
        try:
            call()
            reads += 1
        except BureauError:
            pass
    reads += int(theirs["case_id"] in {c.case_id for c in bureau.cases()})
    return len(calls) + 1, reads


def child_main(argv: list[str]) -> None:
    """One simulated learner: ``argv`` = sync dir, name, all names (comma), JSON options."""
    import resource

    from ..service.bureau import Bureau
    from ..tenancy.connection import read_connection

    sync, me, names, opts = Path(argv[0]), argv[1], argv[2].split(","), json.loads(argv[3])
    rng = random.Random(f"{opts['seed']}-{me}")
    others = [n for n in names if n != me]
    deadline = time.time() + opts["timeout"]
    lat: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    untyped: list[str] = []
    ok_at: list[float] = []
    probes = cross = 0
    from ..errors import BureauError

    def timed(action: str, fn: Any) -> Any:
        t0 = time.perf_counter()
        try:
            out = fn()
        except Exception as exc:  # noqa: BLE001 - every failure is counted and named
            key = f"{action}:{type(exc).__name__}"
            errors[key] = errors.get(key, 0) + 1
            if not isinstance(exc, BureauError):
                untyped.append(f"{key}: {exc}"[:300])
            return None
        lat.setdefault(action, []).append((time.perf_counter() - t0) * 1000)
        ok_at.append(time.time())
        return out

    conn_info = read_connection(os.environ["BUREAU_CLASSROOM"])
    bureau = Bureau.open()
    case = timed("load_scenario", lambda: bureau.load_scenario("safe-combination"))
    if case is None:
        raise SystemExit(f"{me}: could not load the scenario: {errors}")
    seed = case.seed_card("safe-code")
    case.interrogate("detective", QUESTIONS["unknown"])  # lesson 00's check warms the encoder
    _write(sync / f"ids-{me}.json", {"case_id": case.id, "card_id": seed.id})
    (sync / f"ready-{me}").touch()
    if me == names[0]:
        _wait(sync / "solo", deadline)
        solo = []
        for i in range(opts["solo_queries"]):
            t0 = time.perf_counter()
            case.interrogate("detective", QUESTIONS["known" if i % 2 else "unknown"])
            solo.append((time.perf_counter() - t0) * 1000)
        _write(sync / "solo-result.json", {"solo_ms": solo})
    _wait(sync / "go", deadline)
    cpu_at_go = _cpu_s()
    stop_at = time.time() + opts["duration"]
    n = 0
    whispered: list[str] = []
    acked: list[str] = []
    sigma, median = opts["think_sigma"], opts["think_median"]
    while time.time() < stop_at:
        n += 1
        step = n % 7
        if step == 1:
            note = f"Note {n} of {me}: the study window was unlatched at {n % 12 + 1} pm."
            card = timed("whisper", lambda note=note: case.whisper("informant", note,
                                                                   topic="note"))
            if card is not None:
                whispered.append(card.id)
                acked.append(card.id)
        elif step == 2:
            timed("cards", lambda: case.cards("informant"))
        elif step == 3:
            timed("knowers", lambda: case.knowers(QUESTIONS["known"]))
        elif step in (4, 5):
            q = QUESTIONS["known" if step == 4 else "unknown"]
            timed("interrogate", lambda q=q: case.interrogate("detective", q))
        elif step == 6:
            if whispered:
                card_id = whispered.pop(0)
                timed("publish", lambda card_id=card_id: case.publish("informant", card_id))
        else:
            timed("stage", case.stage)
            timed("events", case.events)
        if n % opts["probe_every"] == 0 and others:
            other = rng.choice(others)
            try:
                theirs = json.loads((sync / f"ids-{other}.json").read_text())
                p1, r1 = _probe_sql(conn_info, others, rng)
                p2, r2 = _probe_bureau(bureau, case, theirs)
                probes += p1 + p2
                cross += r1 + r2
            except Exception as exc:  # noqa: BLE001 - a failed probe is an error, not a read
                key = f"probe:{type(exc).__name__}"
                errors[key] = errors.get(key, 0) + 1
        think = min(max(rng.lognormvariate(math.log(median), sigma), THINK_CLIP[0]),
                    THINK_CLIP[1])
        time.sleep(max(0.0, min(think, stop_at - time.time())))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu = round(_cpu_s() - cpu_at_go, 2)
    held = {c.id for c in bureau.gateway.list(case.space, "informant")}
    killed = sync / "killed"
    recovered = None
    if killed.exists():
        kill_at = float(killed.read_text())
        recovered = next((t - kill_at for t in ok_at if t > kill_at), None)
    print(json.dumps({"learner": me, "latency_ms": lat, "errors": errors, "probes": probes,
                      "cross_tenant_reads": cross, "peak_rss_mb": round(peak, 1),
                      "actions": n, "room_cpu_s": cpu, "acked_writes": len(acked),
                      "lost_writes": [c for c in acked if c not in held],
                      "untyped_errors": untyped, "recovered_s": recovered}))


def _cpu_s() -> float:
    """CPU seconds this process used so far (user + system)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- the coordinator -----------------------------------------------------------------------------
def _summary(results: list[dict[str, Any]], solo: list[float]) -> dict[str, Any]:
    actions: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    for r in results:
        for a, xs in r["latency_ms"].items():
            actions.setdefault(a, []).extend(xs)
        for k, v in r["errors"].items():
            errors[k] = errors.get(k, 0) + v
    table = {a: {"n": len(xs), "p50_ms": _percentile(xs, 0.5), "p95_ms": _percentile(xs, 0.95),
                 "max_ms": max(xs)} for a, xs in sorted(actions.items())}
    return {"actions": table, "errors": errors, "solo_p50_ms": _percentile(solo, 0.5)}


def format_table(report: dict[str, Any]) -> str:
    lines = [f"{'action':<14}{'n':>7}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}"]
    for a, row in report["actions"].items():
        lines.append(f"{a:<14}{row['n']:>7}{row['p50_ms']:>10.1f}{row['p95_ms']:>10.1f}"
                     f"{row['max_ms']:>10.1f}")
    s = report
    lines += [
        "",
        f"learners {s['learners']}, room phase {s['duration_s']:.0f} s, think time log-normal "
        f"(median {s['think']['median_s']} s, sigma {s['think']['sigma']}, clipped "
        f"{THINK_CLIP[0]}-{THINK_CLIP[1]} s), embedder {s['embedder']}",
        f"errors {sum(s['errors'].values())} {s['errors'] or ''}".rstrip(),
        f"cross-tenant probes {s['probes']}, cross-tenant reads {s['cross_tenant_reads']}",
        f"solo interrogation p50 {s['solo_p50_ms']:.1f} ms; room interrogation p95 "
        f"{s['interrogate_p95_ms']:.1f} ms = {s['ratio']:.2f} x (target <= {TARGET_RATIO})",
        f"server RSS max {s['server_rss_mb']['max']} MB (start {s['server_rss_mb']['start']} MB);"
        f" learner peak RSS median {s['client_rss_mb']['median']} MB, max "
        f"{s['client_rss_mb']['max']} MB",
        f"CPU seconds in the room phase: server {s['room_cpu_s']['server']}, learners "
        f"{s['room_cpu_s']['learners']} (wall clock {s['duration_s']:.0f} s, "
        f"{os.cpu_count()} cores)",
        f"load average during the run: {s['loadavg']}",
    ]
    if s.get("fault"):
        f = s["fault"]
        lines.append(f"fault run: server killed (-9) {f['killed_at_s']} s into the room phase, "
                     f"back after {f['restart_s']} s; every learner's next success within "
                     f"{f['recovered_s']} s of the kill; acknowledged writes {f['acked_writes']},"
                     f" lost {f['lost_writes']}; untyped errors {len(f['untyped_errors'])}")
    lines.append("TARGETS MET" if s["targets_met"] else "TARGETS MISSED")
    return "\n".join(lines)


def _tail(logs: Path, proc: subprocess.Popen[str], procs: list[subprocess.Popen[str]],
          names: list[str]) -> str:
    return (logs / f"{names[procs.index(proc)]}.err").read_text(errors="replace")[-3000:]


def _kill_and_restart(directory: Path, roster: Any, sync: Path) -> tuple[Any, dict[str, Any]]:
    """The fault: SIGKILL the room's server, then ``classroom start`` on the same room."""
    import signal

    from . import tenants
    from .server import server_running

    assert roster.pid is not None
    print("fault: kill -9 of the server", file=sys.stderr, flush=True)
    kill_at = time.time()
    os.kill(roster.pid, signal.SIGKILL)
    try:
        os.waitpid(roster.pid, 0)  # this run started it: reap it (a zombie's PID looks alive)
    except ChildProcessError:
        pass
    while server_running(roster.pid, roster.server_dir):
        time.sleep(0.02)
    (sync / "killed").write_text(repr(kill_at))
    roster = tenants.start(directory)
    up = time.time() - kill_at
    print(f"fault: server back after {up:.1f} s", file=sys.stderr, flush=True)
    return roster, {"killed_at_s": None, "restart_s": round(up, 2)}


def run(args: argparse.Namespace) -> int:
    from . import tenants
    from .server import cpu_s, rss_mb

    if args.learners < 1:
        raise SystemExit("--learners must be at least 1")
    if args.fault_at is not None and args.dir is not None:
        raise SystemExit("--fault-at kills the server: only with a classroom this run starts")
    scratch = Path(tempfile.mkdtemp(prefix="bureau-loadtest-"))
    own_room = args.dir is None
    directory = scratch / "room" if own_room else args.dir
    names = [f"load{i:02d}" for i in range(1, args.learners + 1)]
    procs: list[subprocess.Popen[str]] = []
    try:
        roster = tenants.start(directory) if own_room else tenants.Roster.load(directory)
        for name in names:
            tenants.add(directory, name)
        sync = scratch / "sync"
        sync.mkdir()
        opts = {"seed": args.seed, "duration": args.duration, "think_median": args.think_median,
                "think_sigma": args.think_sigma, "solo_queries": args.solo_queries,
                "probe_every": args.probe_every, "timeout": 900 + args.duration}
        logs = scratch / "logs"
        logs.mkdir()
        code = "import sys; from bureau.classroom.loadtest import child_main; child_main(sys.argv[1:])"
        for name in names:
            env = {**os.environ, "BUREAU_CLASSROOM": str(roster.connection_file(name)),
                   "BUREAU_DATA_DIR": str(scratch / "data" / name),
                   "BUREAU_EMBEDDER": args.embedder}
            env.pop("BUREAU_SEEKDB_HOST", None)
            procs.append(subprocess.Popen(
                [sys.executable, "-c", code, str(sync), name, ",".join(names), json.dumps(opts)],
                env=env, stdout=subprocess.PIPE, stderr=open(logs / f"{name}.err", "w"),  # noqa: SIM115
                text=True))
        server_rss: list[float] = []

        def sample() -> None:
            if roster.pid is not None and (r := rss_mb(roster.pid)) is not None:
                server_rss.append(round(r, 1))

        t0 = time.time()
        print(f"starting {args.learners} learners ...", file=sys.stderr, flush=True)
        while not all((sync / f"ready-{n}").exists() for n in names):
            if any(p.poll() not in (None, 0) for p in procs):
                bad = next(p for p in procs if p.poll() not in (None, 0))
                raise SystemExit(f"a learner failed while starting: {_tail(logs, bad, procs, names)}")
            if time.time() - t0 > opts["timeout"]:
                raise SystemExit("the learners did not all start in time")
            sample()
            time.sleep(1)
        print(f"all ready after {time.time() - t0:.0f} s; solo phase", file=sys.stderr,
              flush=True)
        sample()
        start_rss = server_rss[-1] if server_rss else None
        (sync / "solo").touch()
        while not (sync / "solo-result.json").exists():
            if procs[0].poll() not in (None, 0):
                raise SystemExit(f"learner 1 failed: {_tail(logs, procs[0], procs, names)}")
            time.sleep(0.2)
        solo = json.loads((sync / "solo-result.json").read_text())["solo_ms"]
        load_before = os.getloadavg()
        server_cpu_before = cpu_s(roster.pid) if roster.pid is not None else None
        (sync / "go").touch()
        go_at = time.time()
        print(f"room phase: {args.duration:.0f} s", file=sys.stderr, flush=True)
        fault: dict[str, Any] | None = None
        while any(p.poll() is None for p in procs):
            if args.fault_at is not None and fault is None and time.time() - go_at >= args.fault_at:
                roster, fault = _kill_and_restart(directory, roster, sync)
                fault["killed_at_s"] = round(time.time() - go_at - fault["restart_s"], 1)
                server_cpu_before = None  # a new process: its CPU is not the room's
            sample()
            time.sleep(1)
        load_after = os.getloadavg()
        server_cpu = (None if server_cpu_before is None or roster.pid is None
                      else round(cpu_s(roster.pid) - server_cpu_before, 1))
        results, failed = [], []
        for p in procs:
            out, _ = p.communicate()
            if p.returncode != 0:
                failed.append(_tail(logs, p, procs, names)[-2000:])
            else:
                results.append(json.loads(out.strip().splitlines()[-1]))
        report = _summary(results, solo)
        interrogate_p95 = report["actions"].get("interrogate", {}).get("p95_ms") or math.inf
        errors = sum(report["errors"].values()) + len(failed)
        cross = sum(r["cross_tenant_reads"] for r in results)
        lost = sum(len(r.get("lost_writes", [])) for r in results)
        untyped = [u for r in results for u in r.get("untyped_errors", [])
                   if not u.startswith("probe:")]
        if fault is not None:
            recovered = [r["recovered_s"] for r in results if r.get("recovered_s") is not None]
            fault.update(recovered_s=round(max(recovered), 2) if len(recovered) == len(results)
                         else None, lost_writes=lost, untyped_errors=untyped,
                         acked_writes=sum(r.get("acked_writes", 0) for r in results))
        peaks = [r["peak_rss_mb"] for r in results]
        report.update({
            "learners": args.learners, "learners_finished": len(results),
            "learner_failures": failed, "duration_s": args.duration, "embedder": args.embedder,
            "think": {"distribution": "log-normal", "median_s": args.think_median,
                      "sigma": args.think_sigma, "clip_s": list(THINK_CLIP)},
            "probes": sum(r["probes"] for r in results), "cross_tenant_reads": cross,
            "interrogate_p95_ms": interrogate_p95,
            "ratio": interrogate_p95 / report["solo_p50_ms"],
            "server_rss_mb": {"start": start_rss, "max": max(server_rss, default=None)},
            "client_rss_mb": {"median": statistics.median(peaks) if peaks else None,
                              "max": max(peaks, default=None)},
            "room_cpu_s": {"server": server_cpu,
                           "learners": round(sum(r.get("room_cpu_s", 0) for r in results), 1)},
            "loadavg": {"before_room": [round(x, 2) for x in load_before],
                        "after_room": [round(x, 2) for x in load_after]},
        })
        report["lost_writes"] = lost
        report["fault"] = fault
        if fault is not None:
            report["targets_met"] = bool(not failed and not untyped and lost == 0 and cross == 0
                                         and fault["recovered_s"] is not None)
        else:
            report["targets_met"] = bool(errors == 0 and cross == 0 and lost == 0
                                         and report["ratio"] <= TARGET_RATIO)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "loadtest.json").write_text(json.dumps(report, indent=2) + "\n")
        print(format_table(report))
        print(json.dumps(report, indent=2))
        print(f"(also written to {args.out / 'loadtest.json'})")
        return 0 if report["targets_met"] else 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        try:
            if own_room:
                tenants.teardown(directory)
            else:
                for name in names:
                    try:
                        tenants.remove(directory, name)
                    except Exception:  # noqa: BLE001 - never added (failed early)
                        pass
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


__all__ = ["add_arguments", "child_main", "format_table", "run"]
