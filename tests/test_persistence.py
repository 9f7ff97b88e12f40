"""Data survives closing and reopening; nothing is written to the working directory; no .env."""

from __future__ import annotations

import json

from conftest import run_python

WRITE = """
import json
from bureau import Bureau
b = Bureau.open()
case = b.load_scenario("safe-combination")
card = case.whisper("detective", "The gardener owns a size 43 pair of boots.", topic="boots")
copy = case.publish("informant", case.seed_card("safe-code").id)
print(json.dumps({"case": case.id, "card": card.id, "copy": copy.id}))
"""

READ = """
import json, sys
from bureau import Bureau
ids = json.loads(sys.argv[1]) if len(sys.argv) > 1 else json.loads(open("ids.json").read())
b = Bureau.open()
case = b.case(ids["case"])
ans = case.interrogate("detective", "What is the combination of the safe in the study?")
boots = case.interrogate("detective", "Who owns size 43 boots?")
print(json.dumps({
    "cases": [c.case_id for c in b.cases()],
    "known": ans.known, "cited": list(ans.cited), "boots": boots.known,
    "detective": [c.id for c in case.spaces()["detective"]],
}))
"""


def test_data_survives_closing_and_reopening(tmp_path):
    data = tmp_path / "store"
    work = tmp_path / "cwd"
    work.mkdir()
    env = {"BUREAU_DATA_DIR": str(data)}
    ids = json.loads(run_python(WRITE, cwd=work, env=env).stdout.strip().splitlines()[-1])
    (work / "ids.json").write_text(json.dumps(ids))
    out = json.loads(run_python(READ, cwd=work, env=env).stdout.strip().splitlines()[-1])
    assert out["cases"] == [ids["case"]]
    assert out["known"] and out["cited"] == [ids["copy"]]
    assert out["boots"] and ids["card"] in out["detective"]
    (work / "ids.json").unlink()
    assert list(work.iterdir()) == [], "the bureau wrote into the working directory"


def test_no_stray_dotenv_is_read_and_nothing_lands_in_cwd(tmp_path):
    """A .env in the cwd (and one level up) pointing PowerMem elsewhere must change nothing."""
    work = tmp_path / "project" / "notebooks"
    work.mkdir(parents=True)
    trap = "OCEANBASE_HOST=127.0.0.1\nOCEANBASE_PORT=9\nLOGGING_FILE=./logs/trap.log\n" \
           "LOGGING_LEVEL=DEBUG\nEMBEDDING_PROVIDER=openai\nDATABASE_PROVIDER=sqlite\n"
    (work / ".env").write_text(trap)
    (work.parent / ".env").write_text(trap)
    code = """
from bureau import Bureau
b = Bureau.open()
case = b.load_scenario("safe-combination")
print(case.interrogate("informant", "What is the combination of the safe in the study?").known)
print(b.gateway.memory.storage.vector_store.connection_args.get("host") == "")
"""
    out = run_python(code, cwd=work, env={"BUREAU_DATA_DIR": str(tmp_path / "store")})
    assert out.stdout.split()[-2:] == ["True", "True"]
    assert sorted(p.name for p in work.iterdir()) == [".env"]
    assert sorted(p.name for p in work.parent.iterdir()) == [".env", "notebooks"]
    assert (tmp_path / "store" / "logs").is_dir()


def test_second_data_dir_in_one_process_is_refused(tmp_path):
    code = f"""
from bureau import Bureau
from bureau.errors import StoreAlreadyOpenError
Bureau.open({str(tmp_path / 'a')!r})
try:
    Bureau.open({str(tmp_path / 'b')!r})
except StoreAlreadyOpenError as e:
    print("refused:", e)
"""
    out = run_python(code, cwd=tmp_path)
    assert "refused:" in out.stdout and "Restart the kernel" in out.stdout
    assert not (tmp_path / "b" / "seekdb").exists()


def test_cli_demo_runs_offline(tmp_path):
    code = "import sys; from bureau.__main__ import main; sys.exit(main(['demo']))"
    out = run_python(code, cwd=tmp_path, env={"BUREAU_DATA_DIR": str(tmp_path / "store")})
    text = out.stdout
    assert text.count("I don't know.") == 1  # the detective (the suspect "knows" its decoy)
    assert "publishing again returns the same copy: True" in text
    assert "knowers now: detective, informant, suspect" in text
    assert [p.name for p in tmp_path.iterdir()] == ["store"]


def test_cli_bench_prints_and_writes_machine_readable_figures(tmp_path):
    """Not a timed test: the bench runs and reports every figure the issue asks for."""
    code = ("import sys; from bureau.__main__ import main; "
            "sys.exit(main(['bench', '--sizes', '60', '--queries', '5', '--out', 'out']))")
    out = run_python(code, cwd=tmp_path, timeout=300)
    rows = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert [(r["cards"], r["sealed"]) for r in rows] == [(60, True), (60, False)]
    for row in rows:
        for key in ("interrogate_p50_ms", "interrogate_p95_ms", "raw_search_p50_ms", "ratio_p50",
                    "publish_first_p50_ms", "publish_repeat_p50_ms", "raw_add_p50_ms",
                    "floor_p50_ms", "floor_ratio_p50", "interrogate_search_p50_ms", "cache_mb"):
            assert row[key] > 0, key
        assert row["cache_ratio"] <= 1.5  # the scope cache's bound (Settings.scope_cache)
        assert row["board_copies"] == row["published_sources"]
    assert "ratio_p50" in out.stdout and (tmp_path / "out" / "bench.csv").exists()
    assert "sealed / unsealed" in out.stdout and "scope cache in memory" in out.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
