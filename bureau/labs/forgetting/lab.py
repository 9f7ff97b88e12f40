"""Run the forgetting lab: a child process per setting writes and forgets canaries, the parent
plays the observer on the data directory it leaves (:mod:`.disk`) and on the rows a backup taken
just before the operation holds.

What could have failed, and is therefore a measurement: unsealed, the canaries are found and
every attack names the forgotten card (so the observer's tools work); sealed, whatever they
still find. The attacks (:mod:`.geometry`): the plain dictionary attack on the vectors found in
the files, once with the files only and once also opening every vector token the backup holds
with the key store the operation left (the whole data directory copied afterwards); and,
without the key store, the geometry attacks issue 51 found: the scope's known texts (its public
seed cards, then the operation's other canaries, as if public) at ``k`` = 1, 2, 10 on the
backup's rows, ``k`` = 0 pairwise on two of its rows, and ``k`` = 2 over the vectors found in
the files after the operation.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import disk, geometry

OPERATIONS = ("revoke", "forget", "expire", "end_session", "reset", "delete_case",
              "scope_delete", "member_values", "kept")
"""How each group of canaries is forgotten in one data directory (``kept``: not at all -- the
control; ``member_values``: a task-scope member removed with the values it wrote)."""
CLASSROOM_OPERATIONS = ("classroom_reset", "classroom_remove", "classroom_teardown")
"""The instructor's commands, each on one learner of a real classroom server (:func:`_room`)."""
CANDIDATES = 50
DRAWS = 3
"""Decoy draws per canary (each a fresh 49 decoys): trials per attack = canaries x draws. The
draws of one canary share its stored vector, so a row's figure rests on its canaries (20 by
default), not on its trials."""
KNOWN = (1, 2, 10)
"""How many texts of the target's scope the geometry attack knows."""

PEOPLE = ("Mrs Pike", "the gardener", "the butler", "Colonel Hart", "the night nurse",
          "the cab driver", "Doctor Vale", "the cook", "the organist", "Miss Lark",
          "the stationmaster", "the vicar")
THINGS = ("the brass key", "a torn letter", "the revolver", "the ledger", "a pearl necklace",
          "the ration book", "a silver locket", "the train ticket", "a bottle of laudanum",
          "the map of the estate", "a roll of banknotes", "the signet ring")
PLACES = ("under the third stair", "behind the chapel organ", "in the potting shed",
          "inside the grandfather clock", "beneath the kitchen flagstones", "in the hay loft",
          "behind the library panel", "in the station's lost property", "under the bandstand",
          "in the ice house", "inside a hatbox in the attic", "in the boathouse")


def _texts(rng: random.Random) -> list[str]:
    combos = [f"{p[0].upper()}{p[1:]} hid {t} {w}." for p in PEOPLE for t in THINGS
              for w in PLACES]
    rng.shuffle(combos)
    return [f"{c} Reference CANARY{rng.getrandbits(48):012x}." for c in combos]


ROWS = r"""
def rows_of(b, c):
    # What the administrator's SQL (or a backup taken now) reads of a case: each row's owner,
    # stored vector and sealed vector token.
    import json as _json
    from sqlalchemy import text as _text
    vs = b.gateway.memory.storage.vector_store
    with b.gateway.sql_engine.connect() as conn:
        found = conn.execute(_text(
            f"SELECT `{vs.primary_field}`, `agent_id`, `{vs.vector_field}`, `{vs.metadata_field}` "
            f"FROM `{vs.collection_name}` WHERE `user_id` = :u"), {"u": c.space.store_id})
        out = {}
        for i, o, v, m in found.fetchall():
            m = _json.loads(m) if isinstance(m, (str, bytes)) else (m or {})
            out[str(i)] = [o, _json.loads(v) if isinstance(v, str) else list(v), m.get("vector")]
    return out

def seeds_of(c):
    return [[c.seed_card(m.key).id, role, m.content] for role, ms in c.scenario.memories.items()
            for m in ms]
"""

CHILD = ROWS + r"""
import json, sys, time
from bureau import Bureau
plan = json.loads(sys.argv[1])
b = Bureau.open()
ids = {}
def cards(case, role, texts, **kw):
    return [case.whisper(role, t, **kw) for t in texts]
for op, texts in plan.items():
    c = b.load_scenario("safe-combination")
    space = c.space.store_id  # the namespace the canaries are written to
    mine, primary = [], []
    if op in ("revoke", "forget", "expire"):
        for card in cards(c, "detective", texts):
            copy = c.publish("detective", card.id)
            mine += [(card.id, "detective"), (copy.id, "board")]
            primary.append(card.id)
    elif op == "end_session":
        mine = [(k.id, "informant") for k in cards(c, "informant", texts, tier="session")]
    elif op == "scope_delete":
        a = c.agent("detective")
        a.scopes.create("stash")
        for i, t in enumerate(texts):
            a.scopes.write("stash", f"k{i}", t)
        mine = [(k.id, "task:stash") for k in b.gateway.list(c.space, "task:stash")]
    elif op == "member_values":
        boss, mole = c.agent("detective"), c.agent("informant")
        boss.scopes.create("plan")
        boss.scopes.invite("plan", "informant")
        mole.scopes.accept("plan")
        for i, t in enumerate(texts):
            mole.scopes.write("plan", f"k{i}", t)
        mine = [(k.id, o) for o in ("task:plan:log", "task:plan")
                for k in b.gateway.list(c.space, o)]
    else:
        mine = [(k.id, "detective") for k in cards(c, "detective", texts)]
    # the canary's own row: its text, in the scope it was written to (a board copy aside)
    by_text = {k.content: k.id for cid, o in mine for k in [b.gateway.get(c.space, o, cid)]
               if k is not None and o not in ("board", "task:plan")}
    primary = [by_text[t] for t in texts]
    rows, seeds = rows_of(b, c), seeds_of(c)  # a backup taken just before the operation
    if op in ("revoke", "forget", "expire"):
        for cid in primary:
            if op == "revoke":
                c.revoke(cid)
            elif op == "forget":
                c.forget(cid)
            else:
                c.expire(cid, 0.05)
        if op == "expire":
            time.sleep(0.2)
            c.cards("detective")  # the first read after the expiry fell due
    elif op == "end_session":
        c.end_session("informant")
    elif op == "reset":
        c.reset()
    elif op == "scope_delete":
        c.agent("detective").scopes.delete("stash")
    elif op == "member_values":
        c.agent("detective").scopes.remove("plan", "informant", forget_values=True)
    ids[op] = {"case": c.id, "space": space, "cards": mine, "primary": primary, "rows": rows,
               "seeds": seeds}
    if op == "delete_case":
        b.delete_case(c.id)
print(json.dumps(ids))
"""


LEARNER = ROWS + r"""
import json, sys
from bureau import Bureau
b = Bureau.open()
c = b.load_scenario("safe-combination")
mine, primary = [], []
for t in json.loads(sys.argv[1]):
    card = c.whisper("detective", t)
    copy = c.publish("detective", card.id)
    mine += [(card.id, "detective"), (copy.id, "board")]
    primary.append(card.id)
print(json.dumps({"case": c.id, "space": c.space.store_id, "cards": mine, "primary": primary,
                  "rows": rows_of(b, c), "seeds": seeds_of(c),
                  "keys": str(b.settings.seal_keys_path)}))
"""


def run_lab(out: Path, per_op: int = 20, seed: int = 31, keep: bool = False,
            classroom: bool = True) -> list[dict[str, Any]]:
    """Both settings, every operation (``classroom``: also the instructor's commands on a
    classroom server this lab starts and tears down); writes ``forgetting.json``/``.csv``/
    ``.md``/``.png`` to ``out`` and returns the rows."""
    from ...embedding import shared_minilm
    from ...errors import InvalidArgumentError

    if per_op < max(KNOWN) + 1:
        raise InvalidArgumentError(
            f"per_op={per_op} leaves the k = {max(KNOWN)} attack too few known texts.",
            f"Use --per-op {max(KNOWN) + 1} or more (the default is 20).")
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    pool = _texts(rng)
    ops = OPERATIONS + (CLASSROOM_OPERATIONS if classroom else ())
    plan = {op: pool[i * per_op:(i + 1) * per_op] for i, op in enumerate(ops)}
    decoys = pool[len(ops) * per_op:]
    local = {op: plan[op] for op in OPERATIONS}
    encoder = shared_minilm()
    rows: list[dict[str, Any]] = []
    for seal in (False, True):
        rows += _local(seal, local, decoys, encoder, rng, keep)
        if classroom:
            room_plan = {op: plan[op] for op in CLASSROOM_OPERATIONS}
            rows += _room(seal, room_plan, decoys, encoder, rng, keep)
    write(out, rows)
    return rows


def _local(seal: bool, plan: dict[str, list[str]], decoys: list[str], encoder: Any,
           rng: random.Random, keep: bool) -> list[dict[str, Any]]:
    """The operations of one data directory, in a child process; then the observer."""
    data = Path(tempfile.mkdtemp(prefix=f"bureau-forgetting-{int(seal)}-"))
    try:
        start = time.perf_counter()
        env = {**os.environ, "BUREAU_DATA_DIR": str(data), "BUREAU_SEAL": str(int(seal))}
        env.pop("BUREAU_FAULT", None)
        env.pop("BUREAU_CLASSROOM", None)
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(plan)], env=env,
                              text=True, capture_output=True, timeout=900)
        made = _reported(proc.returncode, proc.stdout, proc.stderr, "the forgetting child")
        return _timed(_observe(data, seal, plan, made, decoys, encoder, rng), start)
    finally:
        if not keep:
            shutil.rmtree(data, ignore_errors=True)


def _room(seal: bool, plan: dict[str, list[str]], decoys: list[str], encoder: Any,
          rng: random.Random, keep: bool) -> list[dict[str, Any]]:
    """The instructor's commands on a real classroom server: one learner per command writes
    and publishes its canaries (in its own process, data directory and tenant), then the
    instructor resets the first, removes the second, copies the server's files (what a backup
    or the administrator holds) and tears the room down (the third). The observer reads that
    copy and the learners' data directories as they are afterwards."""
    from ...classroom import tenants

    base = Path(tempfile.mkdtemp(prefix=f"bureau-forgetting-room-{int(seal)}-"))
    homes, seen = base / "observed" / "homes", base / "observed" / "server"
    learners = dict(zip(plan, ("ann", "ben", "cat"), strict=True))
    start = time.perf_counter()
    room = base / "room"
    try:
        tenants.start(room, guard=False)  # a throw-away room: no KILL to watch for
        try:
            for name in learners.values():
                tenants.add(room, name, data_dir=homes / name)
            roster = tenants.Roster.load(room)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("BUREAU_FAULT", "BUREAU_SEEKDB_HOST")}
            procs = {op: subprocess.Popen(
                [sys.executable, "-c", LEARNER, json.dumps(plan[op])],
                env={**env, "BUREAU_DATA_DIR": str(homes / name), "BUREAU_SEAL": str(int(seal)),
                     "BUREAU_CLASSROOM": str(roster.connection_file(name))},
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for op, name in learners.items()}
            made = {}
            for op, proc in procs.items():
                stdout, stderr = proc.communicate(timeout=900)
                made[op] = _reported(proc.returncode, stdout, stderr, "a forgetting learner")
            tenants.reset(room, learners["classroom_reset"])
            tenants.remove(room, learners["classroom_remove"])
            disk.copy_files(roster.server_dir.resolve(), seen)
        finally:
            tenants.teardown(room)
        return _timed(_observe(base / "observed", seal, plan, made, decoys, encoder, rng), start)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def _reported(returncode: int, stdout: str, stderr: str, who: str) -> Any:
    """What a child process printed last (its JSON report), or why it failed."""
    if returncode != 0:
        raise RuntimeError(f"{who} failed:\n{stderr[-3000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def _timed(rows: list[dict[str, Any]], start: float) -> list[dict[str, Any]]:
    for r in rows:
        r["run_s"] = round(time.perf_counter() - start, 1)
    return rows


def _observe(data: Path, seal: bool, plan: dict[str, list[str]], made: dict[str, Any],
             decoys: list[str], encoder: Any, rng: random.Random) -> list[dict[str, Any]]:
    """The observer: the files only; the files with the vector tokens a backup holds, opened by
    the key store the operation left; the backup's rows, attacked by their geometry."""
    from ...sealing.keys import KeyStore

    tokens = {t.split("Reference ")[1].rstrip("."): (op, t) for op, ts in plan.items()
              for t in ts}
    where = disk.find_texts(data, tokens)
    vectors = disk.find_vectors(data)
    pool = sorted(set(decoys) | {t for ts in plan.values() for t in ts}
                  | {t for info in made.values() for _, _, t in info.get("seeds", [])})
    every = dict(zip(pool, encoder.embed(pool, cache=False), strict=True))
    rows = []
    for op, texts in plan.items():
        info = made.get(op, {})
        space = info.get("space")
        store = KeyStore(Path(info.get("keys") or data / "seal.keys"))
        hits = _attack(info, texts, vectors, store, every, decoys, rng)
        found = [t for t, (o, _) in tokens.items() if o == op and where[t]]
        left = sum(1 for cid, owner in info.get("cards", [])
                   if space and store.exists() and store.data_keys(space, owner, [cid]))
        trials = len(hits["top1_files_only"])
        rows.append({
            "sealed": seal, "operation": op, "canaries": len(texts),
            "plaintext_found": len(found),
            "plaintext_files": sorted({f for t in found for f in where[t]}),
            "vectors_on_disk": int(len(vectors)), "trials": trials,
            **{a: round(sum(hits[a]) / len(hits[a]), 3) for a in ATTACKS},
            "chance": round(1 / CANDIDATES, 3),
            "forgotten_keys_left": left if info.get("cards") and op != "kept" else None,
            "key_store": store.held() if store.exists() else {"scopes": 0, "card_keys": 0},
        })
    return rows


def _attack(info: dict[str, Any], texts: list[str], vectors: np.ndarray, store: Any,
            every: dict[str, np.ndarray], decoys: list[str], rng: random.Random
            ) -> dict[str, list[int]]:
    """Each attack's hit (1) or miss (0) per canary and decoy draw (:data:`DRAWS`), by its
    column name (:data:`ATTACKS`)."""
    from ...sealing.cipher import row_ad, unseal_bytes
    from ...sealing.vectors import FIELD

    rows, space = info["rows"], info["space"]
    stored = {cid: np.asarray(r[1], np.float64) for cid, r in rows.items()}
    opened = []  # what the key store the operation left opens of the backup's vector tokens
    for cid, (owner, vec, token) in rows.items():
        if token is None:
            opened.append(np.asarray(vec, np.float32))
        elif store.exists():
            dk = store.data_keys(space, owner, [cid]).get(cid)
            raw = None if dk is None else unseal_bytes(dk, token, row_ad(space, owner, cid, FIELD))
            if raw is not None:
                opened.append(np.frombuffer(raw, "<f4"))
    with_keys = np.vstack([vectors, *opened]) if opened else vectors
    owner_of = {cid: r[0] for cid, r in rows.items()}
    seeds = {owner: [(cid, t) for cid, o, t in info["seeds"] if o == owner and cid in stored]
             for owner in set(owner_of.values())}
    primary = info["primary"]
    hits: dict[str, list[int]] = {}
    for i, cid in enumerate(primary):
        owner = owner_of[cid]
        # known texts of the target's scope: its seed cards, then the other canaries in it
        known = seeds.get(owner, []) + [(o, texts[j]) for j, o in enumerate(primary)
                                        if j != i and owner_of[o] == owner]
        anchors = np.array([stored[k] for k, _ in known])
        anchor_texts = np.array([every[t] for _, t in known])
        j = next(j for j in [*range(i + 1, len(primary)), *range(i)]
                 if owner_of[primary[j]] == owner)  # the next canary in the scope
        for _ in range(DRAWS):
            cands = np.array([every[t] for t in [texts[i], *rng.sample(decoys, CANDIDATES - 1)]])
            other = np.array([every[t] for t in [texts[j], *rng.sample(decoys, CANDIDATES - 1)]])
            named = {
                "top1_files_only": geometry.dictionary_found(vectors, cands),
                "top1_with_key_store": geometry.dictionary_found(with_keys, cands),
                "top1_pairs": geometry.pairwise(stored[cid], stored[primary[j]], cands,
                                                other)[0],
                "top1_known_2_files": geometry.known_texts_found(vectors, anchors[:2],
                                                                 anchor_texts[:2], cands),
                **{f"top1_known_{k}": geometry.known_texts(stored[cid], anchors[:k],
                                                           anchor_texts[:k], cands)
                   for k in KNOWN}}
            for attack, pick in named.items():
                hits.setdefault(attack, []).append(int(pick == 0))
    return hits


ATTACKS = ("top1_files_only", "top1_with_key_store", "top1_known_1", "top1_known_2",
           "top1_known_10", "top1_pairs", "top1_known_2_files")
"""Every attack's top-1 column, in the table's order: the dictionary attack on the vectors
found in the files, and with the vector tokens the key store opens; the known texts of the
scope at k = 1, 2, 10 and the pairwise attack (k = 0) on a backup's rows; k = 2 over the
vectors found in the files."""
COLUMNS = ("sealed", "operation", "canaries", "trials", "plaintext_found", "vectors_on_disk",
           *ATTACKS, "chance", "forgotten_keys_left")


def format_table(rows: list[dict[str, Any]]) -> str:
    head = ("setting", "operation", "canaries", "found in clear", "dictionary (files)",
            "dictionary (+key store)", "k=1", "k=2", "k=10", "pairs (k=0)", "k=2 (files)",
            "chance", "forgotten keys left")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        lines.append(" | ".join(str(x) for x in (
            "sealed" if r["sealed"] else "unsealed", r["operation"], r["canaries"],
            r["plaintext_found"], *(f"{r[a]:.0%}" for a in ATTACKS), f"{r['chance']:.0%}",
            "-" if r["forgotten_keys_left"] is None else r["forgotten_keys_left"])))
    return "\n".join(lines)


def write(out: Path, rows: list[dict[str, Any]]) -> None:
    """The lab's files for ``rows`` in ``out`` (an existing folder)."""
    (out / "forgetting.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    with open(out / "forgetting.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    (out / "forgetting.md").write_text(format_table(rows) + "\n", encoding="utf-8")
    _plot(out / "forgetting.png", rows)


GEOMETRY = ("top1_known_1", "top1_known_2", "top1_known_10", "top1_pairs", "top1_known_2_files")
"""The geometry attacks (no key store): the plot shows the best of them per row."""


def _plot(path: Path, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [r["operation"] for r in rows if not r["sealed"]]
    x = np.arange(len(ops))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4), sharey=True)
    by = {(r["sealed"], r["operation"]): r for r in rows}

    def best(r: dict[str, Any]) -> float:
        return max(r[a] for a in GEOMETRY)

    series = (("unsealed, best geometry attack", False, best, "#c0392b"),
              ("sealed, dictionary (files)", True, lambda r: r["top1_files_only"], "#2e86c1"),
              ("sealed, best geometry attack", True, best, "#1b4f72"),
              ("sealed, dictionary (+key store)", True, lambda r: r["top1_with_key_store"],
               "#85c1e9"))
    width = 0.2
    plain = [by[(s, o)]["plaintext_found"] / by[(s, o)]["canaries"]
             for s in (False, True) for o in ops]
    axes[0].bar(x - width / 2, plain[: len(ops)], width, label="unsealed", color="#c0392b")
    axes[0].bar(x + width / 2, plain[len(ops):], width, label="sealed", color="#2e86c1")
    axes[0].set_title("canaries found in clear on disk")
    for k, (label, sealed, value, colour) in enumerate(series):
        axes[1].bar(x + (k - 1.5) * width, [value(by[(sealed, o)]) for o in ops], width,
                    label=label, color=colour)
    axes[1].axhline(1 / CANDIDATES, color="black", ls="--", lw=1, label="chance (2 %)")
    axes[1].set_title("card named among 50 (top-1)")
    for ax in axes:
        ax.set_xticks(x, ops, rotation=30, ha="right")
        ax.set_ylim(0, 1.4)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
