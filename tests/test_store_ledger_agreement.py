"""The ledger and the store never disagree silently (issue 9, item 4).

Each scenario damages a private data directory in a subprocess (one embedded store per process)
the way a learner's disk can be damaged: the ledger deleted or overwritten, a snapshot missing or
corrupt, one case broken while another is fine. The bureau must stop with a typed error naming
the file and the repair, never merge, never silently fall back, never delete a real board copy.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO, run_python

from bureau.model import BOARD

SETUP = """
import json
from bureau import Bureau
b = Bureau.open()
case = b.load_scenario("safe-combination", case_id="kept")
copy = case.publish("informant", case.seed_card("safe-code").id)
other = b.load_scenario("the-mole", case_id="bystander")
print(json.dumps({"copy": copy.id, "source": copy.source_id}))
"""

ATTEMPT = """
import json
from bureau import Bureau
from bureau.errors import BureauError
try:
    b = Bureau.open()
    out = {"opened": True, "cases": [c.case_id for c in b.cases()]}
except BureauError as exc:
    out = {"opened": False, "error": type(exc).__name__, "message": str(exc)}
print(json.dumps(out))
"""


def _last_json(proc: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _setup(tmp_path):
    data = tmp_path / "store"
    env = {"BUREAU_DATA_DIR": str(data)}
    ids = _last_json(run_python(SETUP, cwd=tmp_path, env=env))
    return data, env, ids


def test_a_lost_ledger_stops_the_open_and_repair_adopts_the_cases(tmp_path):
    data, env, ids = _setup(tmp_path)
    for f in data.glob("bureau.sqlite3*"):
        f.unlink()
    out = _last_json(run_python(ATTEMPT, cwd=tmp_path, env=env))
    assert not out["opened"] and out["error"] == "StoreLedgerMismatchError"
    assert "python -m bureau repair" in out["message"] and "case:kept#" in out["message"]
    # Re-creating the same id while the ledger is lost must not merge old cards into it: the
    # open already refused, so nothing could be created. Repair by adoption:
    report = subprocess.run(
        [sys.executable, "-m", "bureau", "repair", "--adopt"], cwd=tmp_path, text=True,
        capture_output=True, env={**env, "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=180,
    )
    assert report.returncode == 0, report.stderr
    assert "adopted: " in report.stdout and "1 publish records rebuilt" in report.stdout
    check = """
import json
from bureau import Bureau
b = Bureau.open()
case = b.case("kept")
stats = case.recover()
ans = case.interrogate("detective", "What is the combination of the safe in the study?")
print(json.dumps({"cases": sorted(c.case_id for c in b.cases()), "stats": stats,
                  "known": ans.known, "cited": list(ans.cited),
                  "board": [c.id for c in case.spaces()["board"]]}))
"""
    out = _last_json(run_python(check, cwd=tmp_path, env=env))
    assert out["cases"] == ["bystander", "kept"]
    assert out["board"] == [ids["copy"]] and out["known"] and out["cited"] == [ids["copy"]]
    assert out["stats"]["orphans"] == 0 and out["stats"]["unexplained"] == 0


def test_purge_unknown_removes_the_stray_cards_and_the_bureau_opens_empty(tmp_path):
    data, env, _ = _setup(tmp_path)
    for f in data.glob("bureau.sqlite3*"):
        f.unlink()
    for f in (data / "cases").glob("*.json"):
        f.unlink()  # no snapshot: nothing can be adopted
    proc = subprocess.run(
        [sys.executable, "-m", "bureau", "repair", "--adopt", "--purge-unknown"], cwd=tmp_path,
        text=True, capture_output=True, env={**env, "PYTHONPATH": str(REPO)}, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert "not adoptable" in proc.stdout and "purged" in proc.stdout
    out = _last_json(run_python(ATTEMPT, cwd=tmp_path, env=env))
    assert out == {"opened": True, "cases": []}


def test_a_corrupt_ledger_is_a_typed_error_naming_the_file(tmp_path):
    data, env, _ = _setup(tmp_path)
    ledger = data / "bureau.sqlite3"
    for f in data.glob("bureau.sqlite3-*"):
        f.unlink()
    ledger.write_bytes(b"this is not a database" * 100)
    out = _last_json(run_python(ATTEMPT, cwd=tmp_path, env=env))
    assert not out["opened"] and out["error"] == "LedgerDamagedError"
    assert str(ledger) in out["message"] and "repair" in out["message"]


DAMAGED_CASE = """
import json
from bureau import Bureau
from bureau.errors import BureauError
b = Bureau.open()
out = {"cases": sorted(c.case_id for c in b.cases())}
try:
    b.case("kept")
    out["kept"] = "opened"
except BureauError as exc:
    out["kept"] = type(exc).__name__
    out["message"] = str(exc)
other = b.case("bystander")
out["bystander_known"] = bool(other.cards(other.role_names[0]))  # the other case still works
print(json.dumps(out))
"""


def test_a_missing_snapshot_fails_that_case_alone_without_falling_back(tmp_path):
    data, env, _ = _setup(tmp_path)
    snapshot = data / "cases" / "kept.json"
    snapshot.unlink()
    out = _last_json(run_python(DAMAGED_CASE, cwd=tmp_path, env=env))
    assert out["kept"] == "CaseDamagedError" and str(snapshot) in out["message"]
    assert "missing" in out["message"]
    assert out["bystander_known"]


def test_a_corrupt_snapshot_fails_that_case_alone(tmp_path):
    data, env, _ = _setup(tmp_path)
    snapshot = data / "cases" / "kept.json"
    snapshot.write_text('{"id": "kept", "roles": [')
    out = _last_json(run_python(DAMAGED_CASE, cwd=tmp_path, env=env))
    assert out["kept"] == "CaseDamagedError" and str(snapshot) in out["message"]
    assert out["bystander_known"]


def test_a_damaged_case_with_a_pending_cleanup_does_not_close_the_others(tmp_path):
    data, env, _ = _setup(tmp_path)
    run_python("""
from bureau import Bureau
b = Bureau.open()
b.ledger.publishes.add_cleanup("kept", "123456", "board", "test: a cleanup left behind")
""", cwd=tmp_path, env=env)
    (data / "cases" / "kept.json").write_text("{not json")
    out = _last_json(run_python(DAMAGED_CASE, cwd=tmp_path, env=env))
    assert out["cases"] == ["bystander", "kept"]
    assert out["kept"] == "CaseDamagedError" and out["bystander_known"]


def test_recover_never_deletes_a_board_copy_without_a_record(bureau, case):
    copy = case.publish("informant", case.seed_card("safe-code").id)
    rec = bureau.ledger.publishes.get(case.id, copy.source_id)
    assert bureau.ledger.publishes.drop(case.id, copy.source_id, rec)  # the record is lost
    stats = case.recover()
    assert stats["orphans"] == 0 and stats["unexplained"] == 1
    assert [c.id for c in case.spaces()[BOARD]] == [copy.id]
