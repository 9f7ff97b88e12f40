"""A store sealed by the previous version (issue 31: each scope's vectors turned by a rotation,
content labels in clear) is migrated when the new version opens it (issue 51): every vector
turned back and sealed under its card's key, the content labels sealed, the vector column noise,
the key files and the MANIFEST rewritten last; a kill at each step is finished by the next open.

The old store is written by the previous version's own code (``git archive`` of
:data:`LEGACY_COMMIT`, run in a child process with this environment), not by an imitation of
it. Actors: the operator (a crash mid-migration must lose no card and change no answer) and the
database administrator (after the migration the store's rows hold no usable vector and no
content label).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from bureau.service.faults import MIGRATION_POINTS

LEGACY_COMMIT = "68cdfec60212118cb28be6a7bc6c12f6f6847a5a"
"""The last commit before issue 51 (main when it began): stores sealed with scope rotations."""

QUESTIONS = ["When was the lamp lit?", "Where is the spare key?", "What is the safe's code?",
             "Who wears a grey raincoat?"]

OLD_WRITER = r"""
import json
from bureau import Bureau
from bureau.model import BOARD
QUESTIONS = json.loads(__import__("sys").argv[1])
b = Bureau.open()
c = b.load_scenario("safe-combination")
notes = ["The lamp in the study was lit at nine.", "The spare key is taped under the third stair.",
         "The gardener saw a grey raincoat by the gate.", "The cellar door squeaks in the rain.",
         "A cab waited at the corner until midnight.", "The vicar's bicycle was moved."]
cards = [c.whisper("detective", t) for t in notes]
copy = c.publish("detective", cards[0].id)
gone = c.whisper("detective", "A forgotten note about the boathouse.")
c.forget(gone.id)
dead = c.whisper("detective", "A note whose key a crash destroyed before its row went.")
b.gateway.sealer.forget(c.space.store_id, "detective", [dead.id])  # the row stays: noise
boss = c.agent("detective")
boss.scopes.create("plan")
boss.scopes.write("plan", "route", "The van leaves by the north gate.")
b.settings = b.settings.with_(seal=False)
clear = b.load_scenario("safe-combination")
clear.whisper("detective", "An unsealed note: the lamp was lit at nine.")
b.settings = b.settings.with_(seal=True)

def searches(case):
    out = {}
    for q in QUESTIONS:
        vec, _ = b.gateway.embed_query(q)
        found, _ = b.gateway.search_scopes(case.space, ["detective", "informant", BOARD], vec, 4)
        out[q] = {o: [[x.id, x.score] for x in xs] for o, xs in found.items()}
    return out

def listing(case):
    return sorted([x.id, x.owner, x.content, x.seed_key, x.source_id, x.topic, x.kind]
                  for x in b.gateway.list(case.space))

print(json.dumps({"case": c.id, "clear": clear.id, "dead": dead.id, "gone": gone.id,
                  "copy": copy.id, "searches": searches(c), "clear_searches": searches(clear),
                  "listing": listing(c), "clear_listing": listing(clear)}))
"""

NEW_READER = r"""
import json, sys
import numpy as np
from sqlalchemy import text
from bureau import Bureau
from bureau.model import BOARD
QUESTIONS = json.loads(sys.argv[1])
old = json.loads(sys.argv[2])
b = Bureau.open()
gw = b.gateway
c, clear = b.case(old["case"]), b.case(old["clear"])

def searches(case):
    out = {}
    for q in QUESTIONS:
        vec, _ = gw.embed_query(q)
        found, _ = gw.search_scopes(case.space, ["detective", "informant", BOARD], vec, 4)
        out[q] = {o: [[x.id, x.score] for x in xs] for o, xs in found.items()}
    return out

def listing(case):
    return sorted([x.id, x.owner, x.content, x.seed_key, x.source_id, x.topic, x.kind]
                  for x in gw.list(case.space))

vs = gw.memory.storage.vector_store
with gw.sql_engine.connect() as conn:
    rows = conn.execute(text(
        f"SELECT `{vs.primary_field}`, `user_id`, `{vs.text_field}`, `{vs.metadata_field}`, "
        f"`{vs.vector_field}` FROM `{vs.collection_name}`")).fetchall()
raw = []
for pk, uid, body, meta, vec in rows:
    meta = json.loads(meta) if isinstance(meta, str) else meta
    raw.append({"id": str(pk), "uid": uid, "sealed": str(body).startswith("sealed:1:"),
                "labels": sorted(meta), "vector": json.loads(vec) if isinstance(vec, str) else vec})
texts = {x[0]: x[2] for x in listing(c) + listing(clear)}
emb = dict(zip(texts, gw.encoder.embed(list(texts.values())).tolist()))
cos = {r["id"]: float(np.dot(emb[r["id"]], r["vector"])) for r in raw if r["id"] in emb}
print(json.dumps({"searches": searches(c), "clear_searches": searches(clear),
                  "listing": listing(c), "clear_listing": listing(clear), "raw": raw, "cos": cos,
                  "manifest": gw.sealer.keys.root.joinpath("MANIFEST").read_text(),
                  "legacy_files": len(gw.sealer.keys.legacy_files())}))
"""


def _legacy_tree(tmp: Path) -> Path:
    """The previous version's package, extracted from git (skipped where the history is not
    there: a shallow clone or an unpacked sdist)."""
    tree = tmp / "legacy-code"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", LEGACY_COMMIT, "bureau",
                              "scenarios", "pyproject.toml"], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"the previous version ({LEGACY_COMMIT[:7]}) is not in this clone's history")
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def _child(code: str, data: Path, *args: str, pythonpath: Path = REPO, fault: str = "",
           expect_kill: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "BUREAU_DATA_DIR": str(data),
           "BUREAU_FAULT": fault}
    env.pop("BUREAU_SEAL", None)
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, text=True,
                          capture_output=True, timeout=300, cwd=data.parent)
    if expect_kill:
        assert proc.returncode == -9, proc.stderr[-3000:]
        return {}
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    """A data directory the previous version wrote, and what that version answered in it."""
    tmp = tmp_path_factory.mktemp("legacy")
    tree = _legacy_tree(tmp)
    data = tmp / "data"
    data.mkdir()
    old = _child(OLD_WRITER, data, json.dumps(QUESTIONS), pythonpath=tree)
    assert (data / "seal.keys" / "MANIFEST").read_text().startswith("bureau seal key store v1")
    yield data, old
    shutil.rmtree(tmp, ignore_errors=True)


def _copy(legacy, tmp_path: Path) -> tuple[Path, dict]:
    data, old = legacy
    copy = tmp_path / "data"
    shutil.copytree(data, copy, symlinks=True)
    return copy, old


def _assert_migrated(new: dict, old: dict) -> None:
    """Every answer of the old version, card for card (scores within 1e-5: the turned-back
    vectors are read from seekdb's six-digit text; where the old version's top-k held the dead
    row and so came back one short, the new one's next card follows), every label; and what the administrator
    reads now: no sealed row without its vector token or with a content label in clear, no
    stored vector of a sealed card that matches its text, the unsealed case untouched."""
    for key in ("searches", "clear_searches"):
        for q, scopes in old[key].items():
            for owner, hits in scopes.items():
                got = new[key][q][owner]
                assert [h[0] for h in got[: len(hits)]] == [h[0] for h in hits], (key, q, owner)
                assert len(got) == len(hits) or (key, owner) == ("searches", "detective")
                assert all(abs(g[1] - h[1]) <= 1e-5 for g, h in zip(got, hits, strict=False))
    assert new["listing"] == old["listing"] and new["clear_listing"] == old["clear_listing"]
    assert any(x[3] for x in old["listing"]) and any(x[4] for x in old["listing"])  # labels
    sealed = [r for r in new["raw"] if r["sealed"]]
    live = {x[0] for x in old["listing"] if x[1] != "bureau:tombstones"}  # tombstones: clear
    assert sealed and live <= {r["id"] for r in sealed}
    for r in sealed:
        assert not {"seed_key", "source_id", "topic", "kind", "source_role"} & set(r["labels"])
        assert ("vector" in r["labels"]) == (r["id"] in live), r
    assert old["dead"] in {r["id"] for r in sealed}  # a dead row: noise, its labels dropped
    assert all(abs(new["cos"][i]) < 0.35 for i in live), new["cos"]  # noise in the column
    clear_ids = {x[0] for x in old["clear_listing"] if x[1] == "detective"}
    assert all(new["cos"][i] > 0.99 for i in clear_ids)  # the unsealed case: as it was
    assert "v2" in new["manifest"] and new["legacy_files"] == 0


def test_a_store_sealed_by_the_previous_version_is_migrated_on_open(legacy, tmp_path):
    """The first open migrates (every answer as before, nothing usable left in the rows);
    a second open finds nothing to do and answers the same."""
    data, old = _copy(legacy, tmp_path)
    first = _child(NEW_READER, data, json.dumps(QUESTIONS), json.dumps(old))
    _assert_migrated(first, old)
    again = _child(NEW_READER, data, json.dumps(QUESTIONS), json.dumps(old))
    _assert_migrated(again, old)
    assert again["raw"] == first["raw"]  # nothing rewritten by the second open


@pytest.mark.parametrize("point", MIGRATION_POINTS)
def test_a_kill_at_each_step_of_the_migration_is_finished_by_the_next_open(legacy, tmp_path,
                                                                          point):
    """SIGKILL inside the migration (after its first row, after every row, after the key
    files): the MANIFEST still says v1, so the next open starts again, finds only what is left,
    and ends with every answer of the old version and nothing usable in the rows."""
    data, old = _copy(legacy, tmp_path)
    _child(NEW_READER, data, json.dumps(QUESTIONS), json.dumps(old), fault=f"{point}:kill",
           expect_kill=True)
    assert (data / "seal.keys" / "MANIFEST").read_text().startswith("bureau seal key store v1")
    new = _child(NEW_READER, data, json.dumps(QUESTIONS), json.dumps(old))
    _assert_migrated(new, old)
