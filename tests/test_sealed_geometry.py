"""The database administrator against the stored vectors (issue 51): a copy of the data
directory without the key store, the scenario's seed texts known (the scenario file is public).

The attacks (:mod:`bureau.labs.forgetting.geometry`), each naming a held-out card among 50
candidates of the same shape (chance 2 %), on the rows the administrator reads by SQL and on the
vectors found in the files' bytes after the operation:

* the dictionary attack (a guess's embedding against the stored vector);
* known seed texts in the scope, ``k`` = 1, 2, 10: the target row's cosines to the seed rows
  against each candidate's cosines to the seed texts (the seed rows are *given* to the attacker:
  stronger than what the rows show, since their labels are sealed);
* ``k`` = 0, pairwise: two held-out rows, the pair of candidates whose mutual cosine matches.

For live, revoked and reset scopes: live rows as SQL shows them now; revoked and reset ones as
a backup taken before the operation holds them (the strongest holder: their rows are gone
afterwards), and what the redo log keeps of them after it (bytes only). Sealed, every attack
names a held-out card at chance (top-1 at most 6 % of 200 trials: 100 held-out rows, 2 decoy
draws each; at chance, more than 12 hits in 200 happen once in ~10,000); unsealed, the same
attacks name them (the observer's tools work).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from bureau.labs.forgetting import disk, geometry
from bureau.labs.forgetting.lab import PEOPLE, PLACES, THINGS

CANDIDATES = 50
HELD_OUT = 100
SEEDS = 12


def _pool() -> list[str]:
    combos = [f"{p[0].upper()}{p[1:]} hid {t} {w}." for p in PEOPLE for t in THINGS
              for w in PLACES]
    random.Random(51).shuffle(combos)
    return combos


POOL = _pool()
SEED_TEXTS = POOL[:SEEDS]
"""The scenario's public seed texts (the detective's opening memories)."""
HELD = {state: POOL[SEEDS + i * HELD_OUT: SEEDS + (i + 1) * HELD_OUT]
        for i, state in enumerate(("live", "revoked", "reset"))}
DECOYS = POOL[SEEDS + 3 * HELD_OUT:]


def _scenario() -> str:
    seeds = "\n".join(
        f"    - key: seed-{i}\n      topic: evidence\n      kind: fact\n      content: {t}"
        for i, t in enumerate(SEED_TEXTS))
    return f"""id: geometry-case
title: Seed texts everyone knows
language: en
summary: A case whose opening memories are public, as every shipped scenario's are.
roles:
  - name: detective
    title: Detective
    description: Holds the seeds and the held-out notes.
  - name: informant
    title: Informant
    description: Holds one note.
memories:
  detective:
{seeds}
  informant:
    - key: note
      topic: note
      kind: fact
      content: The informant keeps a diary.
questions:
  - text: Who hid the brass key?
    topic: evidence
    knowers_before: [detective]
"""


WRITE = r"""
import json, sys
from bureau import Bureau
held = json.loads(sys.argv[2])
b = Bureau.open()
out = {}
for state, texts in held.items():
    c = b.load_scenario(sys.argv[1])
    cards = [c.whisper("detective", t) for t in texts]
    out[state] = {"case": c.id, "space": c.space.store_id,
                  "held": {k.id: t for k, t in zip(cards, texts)},
                  "seeds": {c.seed_card(f"seed-{i}").id: i for i in range(int(sys.argv[3]))}}
print(json.dumps(out))
"""

FORGET = r"""
import json, sys
from bureau import Bureau
made = json.loads(sys.argv[1])
b = Bureau.open()
r = b.case(made["revoked"]["case"])
for cid in made["revoked"]["held"]:
    r.revoke(cid)
b.case(made["reset"]["case"]).reset()
print("done")
"""

ADMIN = r"""
import json
from sqlalchemy import text
from bureau.embedding import shared_minilm
from bureau.settings import Settings
from bureau.storage.setup import open_store, sql_engine
settings = Settings.from_env()
memory, _ = open_store(settings, shared_minilm())
vs = memory.storage.vector_store
with sql_engine(memory).connect() as conn:
    rows = conn.execute(text(f"SELECT `{vs.primary_field}`, `user_id`, `{vs.vector_field}` "
                             f"FROM `{vs.collection_name}`")).fetchall()
print(json.dumps([[str(i), u, json.loads(v) if isinstance(v, str) else list(v)]
                  for i, u, v in rows]))
"""


def _run(code: str, data: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "BUREAU_DATA_DIR": str(data)}
    env.pop("BUREAU_FAULT", None)
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, text=True,
                          capture_output=True, timeout=600, cwd=data.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def _copy_without_keys(data: Path, to: Path) -> Path:
    """What the administrator or a backup holds: the data directory, no key store."""
    shutil.copytree(data, to, symlinks=True, ignore=shutil.ignore_patterns("seal.keys*"))
    return to


def _store(tmp: Path, seal: bool) -> dict:
    """Write the three cases, back them up, revoke and reset, copy again; read both copies."""
    data = tmp / "data"
    data.mkdir()
    scenario = tmp / "geometry-case.yaml"
    scenario.write_text(_scenario(), encoding="utf-8")
    os.environ["BUREAU_SEAL"], before = str(int(seal)), os.environ.get("BUREAU_SEAL")
    try:
        made = json.loads(_run(WRITE, data, str(scenario), json.dumps(HELD), str(SEEDS)))
        backup = _copy_without_keys(data, tmp / "backup")
        _run(FORGET, data, json.dumps(made))
        after = _copy_without_keys(data, tmp / "after")
    finally:
        if before is None:
            os.environ.pop("BUREAU_SEAL")
        else:
            os.environ["BUREAU_SEAL"] = before
    rows = {"backup": json.loads(_run(ADMIN, backup)), "after": json.loads(_run(ADMIN, after))}
    return {"made": made, "rows": rows, "found": disk.find_vectors(after)}


def _rates(store: dict, encoder) -> dict[tuple[str, str], tuple[int, int]]:
    """Top-1 hits and trials of every attack, per state (``live``, ``revoked``, ``reset``)."""
    rng = random.Random(7)
    every = dict(zip(POOL, encoder.embed(POOL, cache=False), strict=True))

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([every[t] for t in texts])

    seed_emb = embed(SEED_TEXTS)
    rates = {}
    for state, info in store["made"].items():
        view = "after" if state == "live" else "backup"  # revoked/reset rows: the backup's
        vec = {i: np.asarray(v, float) for i, _, v in store["rows"][view]}
        held = list(info["held"].items())
        assert all(cid in vec for cid, _ in held), (state, view)
        seeds = sorted(info["seeds"].items(), key=lambda s: s[1])
        anchors = np.array([vec[cid] for cid, _ in seeds])
        hits: dict[str, list[int]] = {}
        for n, (cid, truth) in enumerate(held):
            partner_id, partner_text = held[(n + 1) % len(held)]
            for _draw in range(2):
                decoys = rng.sample(DECOYS, CANDIDATES - 1)
                cands = embed([truth, *decoys])
                other = embed([partner_text, *rng.sample(DECOYS, CANDIDATES - 1)])
                named = {"dictionary": geometry.dictionary(vec[cid], cands)}
                for k in (1, 2, 10):
                    named[f"k={k}"] = geometry.known_texts(vec[cid], anchors[:k], seed_emb[:k],
                                                           cands)
                named["pairs"] = geometry.pairwise(vec[cid], vec[partner_id], cands, other)[0]
                if state != "live":
                    found = store["found"]
                    named["dictionary, files"] = geometry.dictionary_found(found, cands)
                    named["k=2, files"] = geometry.known_texts_found(found, anchors[:2],
                                                                    seed_emb[:2], cands)
                for attack, pick in named.items():
                    hits.setdefault(attack, []).append(int(pick == 0))
        for attack, h in hits.items():
            rates[(state, attack)] = (sum(h), len(h))
    return rates


@pytest.mark.parametrize("seal", [True, False], ids=["sealed", "unsealed"])
def test_the_administrator_names_no_held_out_card_from_the_vectors(tmp_path, seal):
    from bureau.embedding import shared_minilm

    store = _store(tmp_path, seal)
    counts = _rates(store, shared_minilm())
    rates = {k: h / n for k, (h, n) in counts.items()}
    print(json.dumps({f"{s} {a}": round(r, 3) for (s, a), r in sorted(rates.items())}))
    assert {s for s, _ in rates} == {"live", "revoked", "reset"} and len(rates) == 19
    if seal:
        # Every attack at chance (1 in CANDIDATES): none, and not all of them together, names
        # more than a binomial draw at chance would, at a family-wise 0.1 % (Bonferroni over the
        # 19). A fixed 6 % cut-off failed on chance alone: 13 of 200 once in a full run, 2-5 of 200
        # in reruns of that store. An attack that names 10 % of the cards (20 of 200) is caught.
        from scipy.stats import binom

        chance, alpha = 1 / CANDIDATES, 0.001
        high = {k: f"{h} of {n}" for k, (h, n) in counts.items()
                if binom.sf(h - 1, n, chance) < alpha / len(counts)}
        assert not high, high
        hits, trials = (sum(x) for x in zip(*counts.values(), strict=True))
        assert binom.sf(hits - 1, trials, chance) >= alpha, (hits, trials)
    else:  # the same attacks on the unsealed store name them: the tools work
        low = {k: r for k, r in rates.items() if r < (0.5 if "files" in k[1] else 0.9)}
        assert not low, low
