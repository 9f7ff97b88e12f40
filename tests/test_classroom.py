"""A classroom on one real seekdb server (started from the pylibseekdb wheel on 127.0.0.1 by
``python -m bureau classroom start``): every learner a tenant the engine's own accounts isolate.

Actors: a learner (holds their own connection file, runs any bureau call and any SQL their
account may send) trying to reach another learner's tenant; the instructor's page, which must
show numbers and never text. Each learner runs in its own process with its own data directory,
as on their own laptop or hub server.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql
import pytest
from conftest import REPO, finish

from bureau.classroom import instructor, progress, tenants
from bureau.errors import ClassroomError
from bureau.scenario import load_scenario
from bureau.settings import Settings
from bureau.tenancy.connection import read_connection

SECRETS = {"ann": "The vault key hangs behind the kitchen clock in the pantry.",
           "ben": "The getaway car waits at pier seven with a red tarpaulin."}
QUESTIONS = {"ann": "Where does the vault key hang?", "ben": "Where does the getaway car wait?"}
SHARED_CASE = "workshop-case"
"""Both learners create a case with this very id, each in their own tenant."""

LEARNER = r"""
import json, sys, time
from pathlib import Path
from bureau import Bureau
from bureau.course import progress
from bureau.errors import BureauError
from bureau.game import record_case_progress
from bureau.service.repair import repair

sync, me, other = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
secrets, questions = json.loads(sys.argv[4]), json.loads(sys.argv[5])
deadline = time.time() + 200

def wait_for(path):
    while not path.exists():
        if time.time() > deadline:
            sys.exit(f"{path.name} never appeared")
        time.sleep(0.01)

def barrier(name):
    (sync / f"{name}-{me}").touch()
    wait_for(sync / f"{name}-{other}")

bureau = Bureau.open()
assert bureau.settings.store == "server" and bureau.settings.server.user == f"learner_{me}"
barrier("open")
case = bureau.load_scenario("safe-combination", case_id=SHARED_CASE_ID)  # same id, same moment
card = case.whisper("informant", secrets[me], topic="secret")
case.publish("informant", card.id)
own = bureau.load_scenario("the-mole")  # a second case whose id the other learner will try
record_case_progress(bureau, own)  # open, then lost: the page counts the case once, as lost
own.publish("harbourmaster", own.seed_card("decoy").id)  # the decoy spread: this case is lost
record_case_progress(bureau, own)
tmp = sync / f"{me}.tmp"
tmp.write_text(json.dumps({"case_id": own.id, "card_id": card.id,
                           "seed": own.seed_card("true-tip").id}))
tmp.rename(sync / f"ids-{me}.json")
barrier("seeded")
answers = {"mine": [], "theirs": []}
for _ in range(6):  # interrogations of both learners interleave
    answers["mine"].append(case.interrogate("detective", questions[me]).text)
    answers["theirs"].append(case.interrogate("detective", questions[other]).text)
progress.record(bureau.settings.data_dir, "check", f"01-{me}", True)
progress.record(bureau.settings.data_dir, "quiz", "q01-1", True, "2")
record_case_progress(bureau, case)  # open: 1 whisper, 1 publish, 12 interrogations
barrier("done")

theirs = json.loads((sync / f"ids-{other}.json").read_text())
probes = {}
def probe(name, fn):
    try:
        probes[name] = ["returned", repr(fn())[:300]]
    except BureauError as exc:
        probes[name] = [type(exc).__name__, str(exc)]
probe("case", lambda: bureau.case(theirs["case_id"]))
probe("stage", lambda: bureau.case(theirs["case_id"]).stage())
probe("events", lambda: bureau.event_log(theirs["case_id"]))
probe("last_event", lambda: bureau.last_event(theirs["case_id"]))
probe("publish_their_card", lambda: case.publish("informant", theirs["card_id"]))
probe("publish_their_seed", lambda: case.publish("informant", theirs["seed"]))
report = repair(bureau.settings).text()
shared = bureau.case(SHARED_CASE_ID)
out = {
    "cases": sorted(c.case_id for c in bureau.cases()),
    "own_case": own.id, "probes": probes, "answers": answers, "repair": report,
    "shared_stage": shared.stage(), "shared_events": [e.type for e in shared.events()],
    "board": [c.content for c in bureau.gateway.list(shared.space, "board")],
    "progress": sorted(progress.attempts(bureau.settings.data_dir)["item"]),
    "cases_table": progress.cases_table(bureau.settings.data_dir).to_dict("records"),
}
barrier("probed")
print(json.dumps(out))
""".replace("SHARED_CASE_ID", repr(SHARED_CASE))

JOIN = r"""
import sys
from bureau.classroom import join
from bureau.errors import TenantAccessError
try:
    join(sys.argv[1])
except TenantAccessError as exc:
    print("TenantAccessError", exc)
else:
    print("joined")
"""


def env_for(data_dir: Path, connection: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "BUREAU_DATA_DIR": str(data_dir)}
    env.pop("BUREAU_SEEKDB_HOST", None)
    if connection is not None:
        env["BUREAU_CLASSROOM"] = str(connection)
    return env


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    """A classroom server for this module: started, two learners added; torn down by PID."""
    directory = tmp_path_factory.mktemp("classroom") / "room"
    roster = tenants.start(directory)
    data = roster.server_dir.resolve()  # /var/lib/bureau-seekdb/rooms/... when run as root
    try:
        for learner in SECRETS:
            tenants.add(directory, learner)
        yield tenants.Roster.load(directory)
    finally:
        tenants.teardown(directory)
        assert not Path(f"/proc/{roster.pid}").exists() or not tenants.srv.server_running(
            roster.pid, roster.server_dir)
        assert not directory.exists() and not data.exists()


@pytest.fixture(scope="module")
def learned(classroom, tmp_path_factory):
    """Both learners, each in its own process, work and then probe each other."""
    base = tmp_path_factory.mktemp("learners")
    sync = base / "sync"
    sync.mkdir()
    procs = []
    for me, other in (("ann", "ben"), ("ben", "ann")):
        procs.append(subprocess.Popen(
            [sys.executable, "-c", LEARNER, str(sync), me, other, json.dumps(SECRETS),
             json.dumps(QUESTIONS)],
            cwd=base, env=env_for(base / me, classroom.connection_file(me)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    ann, ben = finish(*procs, timeout=300)
    return {"ann": ann, "ben": ben}


def test_the_learners_tenants_hold_their_own_cases_and_progress_only(learned):
    for me, other in (("ann", "ben"), ("ben", "ann")):
        r = learned[me]
        assert r["cases"] == sorted([SHARED_CASE, r["own_case"]])
        assert learned[other]["own_case"] not in r["cases"]
        assert r["board"] == [SECRETS[me]]  # the same case id, each tenant its own board
        counts = r["shared_stage"]["private_counts"]
        assert counts == {"detective": 2, "informant": 3, "suspect": 2}  # the seeds (the decoy too) and one whisper
        assert r["progress"] == sorted([f"01-{me}", "q01-1"])
        assert {(c["case"], c["status"], c["moves"], c["rules kept"]) for c in r["cases_table"]} \
            == {(SHARED_CASE, "open", 14, "4/4"), (r["own_case"], "lost", 1, "2/3")}
        text = json.dumps(r)
        assert SECRETS[other] not in text and learned[other]["own_case"] not in r["repair"]


def test_interrogations_running_at_once_do_not_interfere(learned):
    for me, _other in (("ann", "ben"), ("ben", "ann")):
        answers = learned[me]["answers"]
        assert all(SECRETS[me] in a for a in answers["mine"]), answers["mine"]
        assert all(a == "I don't know." for a in answers["theirs"]), answers["theirs"]


def test_every_bureau_call_with_the_other_learners_ids_reaches_nothing(learned):
    for me in ("ann", "ben"):
        probes = learned[me]["probes"]
        for name in ("case", "stage", "events"):
            assert probes[name][0] == "UnknownCaseError", (name, probes[name])
        assert probes["last_event"] == ["returned", "None"]
        assert probes["publish_their_card"][0] == probes["publish_their_seed"][0] \
            == "UnknownCardError"


def _login(classroom, learner: str, **kw):
    conn = read_connection(classroom.connection_file(learner))
    return pymysql.connect(host="127.0.0.1", port=conn.port, user=conn.user,
                           password=kw.get("password", conn.password),
                           database=kw.get("database", conn.database), connect_timeout=10,
                           read_timeout=60, write_timeout=60,
                           local_infile=kw.get("local_infile", False))


def _denied(cur, sql: str) -> int | None:
    try:
        cur.execute(sql)
        cur.fetchall()
    except pymysql.err.MySQLError as exc:
        return exc.args[0]
    return None


def test_raw_sql_with_one_learners_account_reaches_nothing_of_another(classroom, learned):
    conn = _login(classroom, "ann")
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW DATABASES")
            assert {r[0] for r in cur.fetchall()} == {"information_schema", "learner_ann"}
            cur.execute("SELECT COUNT(*) FROM bureau_cards")  # its own tables: readable
            assert cur.fetchone()[0] > 0
            for table in ("bureau_cards", "bureau_cases", "bureau_events", "bureau_snapshots",
                          "bureau_progress", "bureau_case_progress"):
                assert _denied(cur, f"SELECT * FROM learner_ben.{table}") == 1142, table
            assert _denied(cur, "INSERT INTO learner_ben.bureau_progress (lesson, kind, item, "
                                "ok, at) VALUES ('01', 'check', 'forged', 1, 0)") == 1142
            assert _denied(cur, "USE learner_ben") == 1044
            assert _denied(cur, "SHOW TABLES FROM learner_ben") == 1044
            assert _denied(cur, "CREATE DATABASE learner_zed") == 1044
            assert _denied(cur, "SELECT * FROM mysql.user") == 1142
            assert _denied(cur, "GRANT SELECT ON learner_ben.* TO 'learner_ann'@'%'") is not None
            cur.execute("SELECT COUNT(*) FROM information_schema.TABLES "
                        "WHERE TABLE_SCHEMA = 'learner_ben'")
            assert cur.fetchone()[0] == 0
    finally:
        conn.close()
    with pytest.raises(pymysql.err.OperationalError) as denied:
        _login(classroom, "ann", database="learner_ben")
    assert denied.value.args[0] == 1044
    with pytest.raises(pymysql.err.OperationalError) as root:  # root has a random password
        pymysql.connect(host="127.0.0.1", port=classroom.port, user="root", password="",
                        connect_timeout=10)
    assert root.value.args[0] == 1045


def test_known_gap_the_process_list_shows_every_session_s_statement(classroom, learned):
    """seekdb 1.4 shows every session's statement to every account (MySQL would need the
    PROCESS privilege, which no learner has): a learner polling it can catch another's SQL in
    flight. Documented in docs/classroom.md's threat model; this test says when it stops holding."""
    marker = "statement-of-ben-in-flight"
    ben = _login(classroom, "ben")
    sleeper = threading.Thread(
        target=lambda: ben.cursor().execute(f"SELECT SLEEP(2), '{marker}'"))
    sleeper.start()
    try:
        time.sleep(0.7)
        ann = _login(classroom, "ann")
        with ann.cursor() as cur:
            cur.execute("SHOW FULL PROCESSLIST")
            seen = " ".join(str(r) for r in cur.fetchall())
        ann.close()
    finally:
        sleeper.join()
        ben.close()
    assert marker in seen


def test_a_wrong_password_or_a_removed_learner_gets_a_clear_error(classroom, tmp_path):
    directory = classroom.directory
    tenants.add(directory, "cal")
    old = tmp_path / "cal-old.json"
    shutil.copy2(classroom.connection_file("cal"), old)
    secret = read_connection(old).password
    tenants.reset(directory, "cal")  # a new password: the old file must fail
    stale = subprocess.run([sys.executable, "-c", JOIN, str(old)], env=env_for(tmp_path / "c1"),
                           capture_output=True, text=True, timeout=120)
    fresh = read_connection(classroom.connection_file("cal"))
    tenants.remove(directory, "cal")  # the current file of a removed learner must fail too
    new = tmp_path / "cal-new.json"
    new.write_text(fresh.as_json())
    new.chmod(0o600)
    gone = subprocess.run([sys.executable, "-c", JOIN, str(new)], env=env_for(tmp_path / "c2"),
                          capture_output=True, text=True, timeout=120)
    for proc in (stale, gone):
        assert proc.stdout.startswith("TenantAccessError Learner 'cal' cannot log in"), \
            proc.stdout + proc.stderr[-2000:]
        assert secret not in proc.stdout + proc.stderr
        assert fresh.password not in proc.stdout + proc.stderr
    assert not classroom.connection_file("cal").exists()


def test_a_connection_file_others_may_read_is_refused(classroom, tmp_path):
    loose = tmp_path / "ann.json"
    shutil.copy2(classroom.connection_file("ann"), loose)
    loose.chmod(0o644)
    with pytest.raises(ClassroomError, match="may be read by others") as err:
        Settings(data_dir=tmp_path / "d", classroom=loose)
    assert read_connection(classroom.connection_file("ann")).password not in str(err.value)
    loose.chmod(0o600)
    settings = Settings(data_dir=tmp_path / "d", classroom=loose)
    assert (settings.store, settings.server.user) == ("server", "learner_ann")
    assert "password" not in repr(settings.server) and settings.server.password not in repr(
        settings)


def test_the_commands_print_no_password(classroom):
    env = env_for(classroom.directory / "unused", None)
    out = subprocess.run(
        [sys.executable, "-m", "bureau", "classroom", "add", "--dir", str(classroom.directory),
         "dee"], env=env, capture_output=True, text=True, timeout=120)
    status = subprocess.run(
        [sys.executable, "-m", "bureau", "classroom", "status", "--dir",
         str(classroom.directory)], env=env, capture_output=True, text=True, timeout=120)
    try:
        assert out.returncode == 0 and status.returncode == 0, out.stderr + status.stderr
        secrets = [read_connection(classroom.connection_file("dee")).password,
                   tenants.Roster.load(classroom.directory).admin_password]
        printed = out.stdout + out.stderr + status.stdout + status.stderr
        assert str(classroom.connection_file("dee")) in printed
        assert not [s for s in secrets if s in printed]
        assert json.loads(status.stdout)["learners"].keys() >= {"ann", "ben", "dee"}
    finally:
        tenants.remove(classroom.directory, "dee")


def test_the_instructor_reads_numbers_and_never_text(classroom, learned):
    # What is read, not how fast: budgets no loaded machine runs out of (the budgets' own tests
    # are below).
    rows = {r["learner"]: r for r in instructor.room(classroom.directory, row_budget=60.0,
                                                      page_budget=120.0)}
    assert set(rows) == {"ann", "ben"}
    for me in ("ann", "ben"):
        r = rows[me]
        assert (r["checks_passed"], r["quiz_right"], r["quiz_answered"]) == (1, 1, 1)
        assert r["lessons"] == ["01"]
        # The current case is the one touched last: the shared id, interrogated after the-mole
        # was loaded (by creation time the-mole would be the newer).
        assert r["case"] == SHARED_CASE != learned[me]["own_case"]
        assert r["roles"] == learned[me]["shared_stage"]["private_counts"] and r["board"] == 1
        # Their cases at their newest scores: the shared one open, the-mole lost (the decoy).
        assert (r["cases_solved"], r["cases_lost"], r["cases_open"]) == (0, 1, 1)
        assert (r["case_moves"], r["rules_kept"], r["rules"]) == (15, 6, 7)
    # A learner writes a hostile case id into their own tenant: it shows escaped, as text.
    conn = _login(classroom, "ben")
    with conn.cursor() as cur:
        cur.execute("INSERT INTO bureau_cases (case_id, scenario_id, title, created_at, epoch) "
                    "VALUES ('<script>alert(1)</script>', 'x', 'x', '9999', 0)")
        cur.execute("INSERT INTO bureau_events (case_id, type, payload, at) "
                    "VALUES ('<script>alert(1)</script>', 'case.created', '{}', '9999')")
    conn.commit()
    conn.close()
    page = instructor.room_html(instructor.room(classroom.directory))
    assert "<script>" not in page and "&lt;script&gt;" in page
    for me in SECRETS:
        assert SECRETS[me] not in page and QUESTIONS[me] not in page
    for scenario in ("safe-combination", "the-mole"):  # nothing of a case file, nor the answer
        cf = load_scenario(scenario).case_file
        texts = [cf.goal, cf.question, *cf.answer, *(rule.why for rule in cf.never)]
        assert not [t for t in texts if t in page or html.escape(t) in page]
    assert 'class="cases-lost">1<' in page and 'class="rules">6/7<' in page


HUGE = 200_000
"""Characters of a learner's hostile cell (the issue's 200 kB lesson)."""


@pytest.fixture
def fetched(monkeypatch):
    """Every value the instructor's page fetches from the server (all its threads), as text."""
    seen: list[str] = []
    lock = threading.Lock()

    def record(rows):
        with lock:
            seen.extend(str(v) for row in rows for v in row)

    fetchall, fetchone = pymysql.cursors.Cursor.fetchall, pymysql.cursors.Cursor.fetchone

    def all_rows(self):
        rows = fetchall(self)
        record(rows or ())
        return rows

    def one_row(self):
        row = fetchone(self)
        record([row] if row is not None else [])
        return row

    monkeypatch.setattr(pymysql.cursors.Cursor, "fetchall", all_rows)
    monkeypatch.setattr(pymysql.cursors.Cursor, "fetchone", one_row)
    return seen


def _as_learner(classroom, learner: str, *statements) -> None:
    """What a learner sends through their own account (their tenant is theirs to reshape)."""
    conn = _login(classroom, learner)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(*sql) if isinstance(sql, tuple) else cur.execute(sql)
        conn.commit()
    finally:
        conn.close()


def _hostile(classroom, learner: str, *statements) -> None:
    if learner not in tenants.Roster.load(classroom.directory).learners:
        tenants.add(classroom.directory, learner)
    _as_learner(classroom, learner, *statements)


SLEEPING_VIEW = ("CREATE TABLE IF NOT EXISTS ev (seq BIGINT PRIMARY KEY, case_id VARCHAR(64))",
                 "REPLACE INTO ev VALUES (1, 'c1')",
                 "CREATE TABLE IF NOT EXISTS bureau_cases (case_id VARCHAR(64), scenario_id TEXT, "
                 "title TEXT, created_at VARCHAR(32), epoch INT, token VARCHAR(32))",
                 "DROP TABLE IF EXISTS bureau_events", "DROP VIEW IF EXISTS bureau_events",
                 "CREATE VIEW bureau_events AS SELECT seq, case_id FROM ev WHERE SLEEP(3) = 0")
"""The issue's view: every read of ``bureau_events`` sleeps 3 s."""


def test_the_page_never_fetches_a_quiz_choice_or_a_prediction(classroom, learned, fetched,
                                                             tmp_path):
    canary = "detail-canary-7f3a"
    _as_learner(classroom, "ann", ("INSERT INTO bureau_progress (lesson, kind, item, ok, detail, "
                                   "at) VALUES ('02', 'quiz', 'q02-1', 1, %s, 0)", (canary,)))
    fetched.clear()
    rows = instructor.room(classroom.directory)
    page = instructor.room_html(rows)
    assert {r["learner"]: r for r in rows}["ann"]["quiz_answered"] == 2  # the row was read
    assert fetched and not [v for v in fetched if canary in v]  # not even over the wire
    assert canary not in json.dumps(rows) + page
    assert "detail" not in progress.page_query("learner_ann")
    assert [r[4] for r in progress.rows(Settings(data_dir=tmp_path,
                                                 classroom=classroom.connection_file("ann"))
                                        .server) if r[4] == canary]  # the learner's own read


def test_a_200_kb_cell_never_crosses_the_wire_nor_swells_the_page(classroom, learned, fetched):
    big = "L" * HUGE
    _hostile(classroom, "hal",
             "CREATE TABLE bureau_progress (seq BIGINT AUTO_INCREMENT PRIMARY KEY, lesson LONGTEXT, "
             "kind LONGTEXT, item LONGTEXT, ok LONGTEXT, detail LONGTEXT, at DOUBLE)",
             ("INSERT INTO bureau_progress (lesson, kind, item, ok, detail, at) VALUES "
              "(%s, 'check', %s, '1', %s, 0)", (big, big, big)),
             *[("INSERT INTO bureau_progress (lesson, kind, item, ok, at) VALUES "
                "(%s, 'check', 'x', 1, 0)", (f"{n:03d}",)) for n in range(40)],
             "CREATE TABLE bureau_cases (case_id LONGTEXT, scenario_id TEXT, title TEXT, "
             "created_at VARCHAR(32), epoch INT, token LONGTEXT)",
             ("INSERT INTO bureau_cases VALUES (%s, 'x', 'x', '9999', 0, %s)", (big, big)),
             "CREATE TABLE bureau_events (seq BIGINT AUTO_INCREMENT PRIMARY KEY, case_id LONGTEXT, "
             "type TEXT, payload TEXT, at TEXT)",
             ("INSERT INTO bureau_events (case_id, type, payload, at) VALUES (%s, 'x', 'x', 'x')",
              (big,)),
             # the cases' scores (issue 49): 200 kB cells, counts of 200,000 digits, a count
             # of -7 and one of letters, 30 cases "solved" in 10**11 moves each
             "CREATE TABLE bureau_case_progress (seq BIGINT AUTO_INCREMENT PRIMARY KEY, "
             "case_id LONGTEXT, scenario LONGTEXT, status LONGTEXT, moves LONGTEXT, "
             "rules_kept LONGTEXT, rules LONGTEXT, at DOUBLE)",
             ("INSERT INTO bureau_case_progress (case_id, scenario, status, moves, rules_kept, "
              "rules, at) VALUES (%s, %s, %s, %s, %s, %s, 0)",
              (big, big, big, "9" * HUGE, "9" * HUGE, "9" * HUGE)),
             *[("INSERT INTO bureau_case_progress (case_id, scenario, status, moves, rules_kept, "
                "rules, at) VALUES (%s, 'x', 'solved', '99999999999', '-7', 'abc', 0)",
                (f"c{n}",)) for n in range(30)])
    _hostile(classroom, "ivy",  # a valid current case whose card table holds 200 kB role names
             "CREATE TABLE bureau_cases (case_id VARCHAR(64), scenario_id TEXT, title TEXT, "
             "created_at VARCHAR(32), epoch INT, token VARCHAR(32))",
             "INSERT INTO bureau_cases VALUES ('c1', 'x', 'x', '9999', 0, NULL)",
             f"CREATE TABLE {instructor.CARDS_TABLE} (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
             "user_id VARCHAR(128), agent_id LONGTEXT)",
             *[(f"INSERT INTO {instructor.CARDS_TABLE} (user_id, agent_id) VALUES ('case:c1', %s)",
                (f"{n:03d}" + big,)) for n in range(3)],
             *[(f"INSERT INTO {instructor.CARDS_TABLE} (user_id, agent_id) VALUES ('case:c1', %s)",
                (f"role{n:03d}",)) for n in range(200)])
    try:
        fetched.clear()
        rows = {r["learner"]: r for r in instructor.room(classroom.directory)}
        page = instructor.room_html(list(rows.values()))
        longest = max(len(v) for v in fetched)
        hal, ivy = rows["hal"], rows["ivy"]
        print(f"\n200 kB cells: longest value fetched {longest} chars, page {len(page):,} chars "
              f"for {len(rows)} learners")
        assert longest <= 65  # cut by the server (LEFT), not after the transfer
        assert "error" not in hal and "error" not in ivy, (hal, ivy)
        assert hal["checks_passed"] == 41 and len(hal["lessons"]) <= instructor.MAX_LESSONS + 1
        assert len(hal["case"]) <= 64 and hal["roles"] == {}  # no id the bureau wrote
        assert (hal["cases_solved"], hal["cases_lost"], hal["cases_open"]) == (30, 0, 0)
        assert hal["case_moves"] == 31 * instructor.MAX_CASE_MOVES  # each case bounded
        assert hal["rules_kept"] == hal["rules"] == instructor.MAX_CASE_RULES
        assert len(ivy["roles"]) == instructor.MAX_ROLES
        assert all(len(a) <= 33 for a in ivy["roles"])
        assert len(page) < 4_000 * len(rows)
    finally:
        for learner in ("hal", "ivy"):
            tenants.remove(classroom.directory, learner)


def test_a_sleeping_view_is_not_read_and_costs_only_its_own_row(classroom, learned):
    _hostile(classroom, "hal", *SLEEPING_VIEW)
    try:
        started = time.perf_counter()
        rows = {r["learner"]: r for r in instructor.room(classroom.directory)}
        took = time.perf_counter() - started
        print(f"\nsleeping view: redraw {took:.3f} s")
        assert rows["hal"] == {"learner": "hal", "error": "not a table: bureau_events",
                               "locked": False, "suspected": False}
        assert rows["ann"]["checks_passed"] == 1 and rows["ann"]["roles"]  # read in full
        assert took < 1.0  # was 3.1 s: every redraw waited for the view
        page = instructor.room_html(list(rows.values()))
        assert "unreadable (not a table: bureau_events)" in page
    finally:
        tenants.remove(classroom.directory, "hal")


def test_a_view_in_place_of_the_cases_scores_is_not_read(classroom, learned):
    """The scores' table (issue 49) is guarded like the others: a view there is not read."""
    _hostile(classroom, "hal",
             "CREATE TABLE IF NOT EXISTS sc (seq BIGINT PRIMARY KEY, case_id VARCHAR(64))",
             "REPLACE INTO sc VALUES (1, 'c1')",
             "CREATE VIEW bureau_case_progress AS SELECT seq, case_id, 'solved' AS status, "
             "1 AS moves, 1 AS rules_kept, 1 AS rules FROM sc WHERE SLEEP(3) = 0")
    try:
        started = time.perf_counter()
        rows = {r["learner"]: r for r in instructor.room(classroom.directory)}
        took = time.perf_counter() - started
        assert rows["hal"]["error"] == "not a table: bureau_case_progress"
        assert rows["ann"]["cases_lost"] == 1 and took < 1.0
    finally:
        tenants.remove(classroom.directory, "hal")


def test_a_slow_object_is_cut_by_the_servers_statement_timeout(classroom, learned, monkeypatch):
    """The second layer, should a slow object pass for a table (a base table of millions of
    rows; here the sleeping view, with the kind check told it is a table): the statement is
    cut by seekdb at the row's budget (error 4012), the row says so, the page moves on."""
    _hostile(classroom, "hal", *SLEEPING_VIEW)
    try:
        with classroom.admin() as cur:
            started = time.perf_counter()
            row = instructor.read_learner(cur, "hal", time.monotonic() + 0.3)
            cut = time.perf_counter() - started
            cur.execute("SELECT 1")  # the connection survives the cut
            assert cur.fetchone() == (1,)
        assert row == {"learner": "hal", "error": "not a table: bureau_events"} and cut < 0.8
        real = instructor._table_types
        monkeypatch.setattr(instructor, "_table_types", lambda cur, db, deadline: {
            k: "BASE TABLE" for k in real(cur, db, deadline)})
        with classroom.admin() as cur:
            started = time.perf_counter()
            row = instructor.read_learner(cur, "hal", time.monotonic() + 0.3)
            cut = time.perf_counter() - started
        started = time.perf_counter()
        rows = {r["learner"]: r for r in instructor.room(classroom.directory)}
        took = time.perf_counter() - started
        print(f"\nstatement timeout: a 3 s view cut after {cut:.3f} s; redraw {took:.3f} s")
        assert row == {"learner": "hal", "error": "timed out"} and cut < 0.8
        assert rows["hal"]["error"] == "timed out" and "error" not in rows["ann"]
        assert took < 1.0
    finally:
        tenants.remove(classroom.directory, "hal")


def test_a_room_of_30_with_one_hostile_learner_redraws_within_a_second(classroom, learned,
                                                                      monkeypatch):
    """Benchmark (figures printed): 29 learners holding copies of ann's real tables and one
    whose events table is the sleeping view; five redraws with the view refused as not a
    table, five with the kind check told it is one (so the hostile row holds a worker for its
    whole budget, as a slow base table would). The page's budget bounds every redraw by
    construction; the figure that can miss under load is how many rows were read in full,
    asserted for the best redraw of each series."""
    copies = [f"r{n:02d}" for n in range(27)]
    with classroom.admin() as cur:
        cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                    "'learner_ann' AND TABLE_TYPE = 'BASE TABLE'")
        tables = [t for (t,) in cur.fetchall() if t in instructor.READ_TABLES]
    assert len(tables) == len(instructor.READ_TABLES)
    for learner in copies:
        tenants.add(classroom.directory, learner)
    with classroom.admin() as cur:
        for learner in copies:
            for t in tables:
                cur.execute(f"CREATE TABLE learner_{learner}.`{t}` AS SELECT * FROM learner_ann.`{t}`")
    _hostile(classroom, "hal", *SLEEPING_VIEW)
    real = instructor._table_types
    try:
        for series, hal_says in (("view refused", "not a table: bureau_events"),
                                 ("view read, cut at its budget", "timed out")):
            times, complete, hal = [], [], set()
            for _ in range(5):
                started = time.perf_counter()
                rows = instructor.room(classroom.directory)
                times.append(time.perf_counter() - started)
                complete.append(sum("error" not in r for r in rows))
                hal |= {r["error"] for r in rows if r["learner"] == "hal"}
            print(f"\nroom of {len(rows)}, 1 hostile ({series}): redraw {min(times):.3f}-"
                  f"{max(times):.3f} s, rows read in full {complete} of 29")
            # The budget bounds every redraw by construction (it was 3.1 s with the view);
            # on a loaded machine any row may run out of its budget, the hostile one included,
            # so the figures are printed and only what cannot depend on load is asserted.
            assert len(rows) == 30 and max(times) < instructor.PAGE_BUDGET_S + 0.5
            assert hal <= {hal_says, "timed out"} and max(complete) >= 1
            monkeypatch.setattr(instructor, "_table_types", lambda cur, db, deadline: {
                k: "BASE TABLE" for k in real(cur, db, deadline)})
    finally:
        for learner in [*copies, "hal"]:
            tenants.remove(classroom.directory, learner)


def test_the_load_test_runs_a_small_room_and_reports_its_figures(tmp_path):
    """Two learners for a few seconds (the hash embedder: this checks the harness, the figures
    in the README come from `--learners 30` with MiniLM)."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "bureau", "classroom", "loadtest", "--learners", "2",
         "--duration", "8", "--think-median", "0.6", "--solo-queries", "6", "--probe-every", "2",
         "--embedder", "hash", "--out", str(out)],
        env=env_for(tmp_path / "unused"), cwd=tmp_path, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # 1: the latency target missed
    report = json.loads((out / "loadtest.json").read_text())
    assert report["learners_finished"] == 2 and report["errors"] == {}
    assert report["probes"] > 0 and report["cross_tenant_reads"] == 0
    assert report["actions"]["interrogate"]["n"] > 0 and report["solo_p50_ms"] > 0
    assert report["server_rss_mb"]["max"] > 100 and report["client_rss_mb"]["max"] > 50
    assert "cross-tenant reads 0" in proc.stdout
    assert not list(tmp_path.glob("**/roster.json"))  # its classroom was torn down
