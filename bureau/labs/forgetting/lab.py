"""Run the forgetting lab: a child process per setting writes and forgets canaries, the parent
plays the observer on the data directory it leaves (:mod:`.disk`).

What could have failed, and is therefore a measurement: unsealed, the canaries are found and
the attack names the forgotten card (so the observer's tools work); sealed, whatever they still
find. The key store is the other half of the picture: the observer is played twice, once with
the database's files only (the administrator, a backup of the database, the classroom server)
and once with the whole data directory, key store included.
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

from . import disk

OPERATIONS = ("revoke", "forget", "expire", "end_session", "reset", "delete_case",
              "scope_delete", "member_values", "kept")
"""How each group of canaries is forgotten in one data directory (``kept``: not at all -- the
control; ``member_values``: a task-scope member removed with the values it wrote)."""
CLASSROOM_OPERATIONS = ("classroom_reset", "classroom_remove", "classroom_teardown")
"""The instructor's commands, each on one learner of a real classroom server (:func:`_room`)."""
CANDIDATES = 50

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


CHILD = r"""
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
    mine = []
    if op in ("revoke", "forget", "expire"):
        for card in cards(c, "detective", texts):
            copy = c.publish("detective", card.id)
            mine += [(card.id, "detective"), (copy.id, "board")]
            if op == "revoke":
                c.revoke(card.id)
            elif op == "forget":
                c.forget(card.id)
            else:
                c.expire(card.id, 0.05)
        if op == "expire":
            time.sleep(0.2)
            c.cards("detective")  # the first read after the expiry fell due
    elif op == "end_session":
        mine = [(k.id, "informant") for k in cards(c, "informant", texts, tier="session")]
        c.end_session("informant")
    elif op == "reset":
        mine = [(k.id, "detective") for k in cards(c, "detective", texts)]
        c.reset()
    elif op == "delete_case":
        mine = [(k.id, "detective") for k in cards(c, "detective", texts)]
    elif op == "scope_delete":
        a = c.agent("detective")
        a.scopes.create("stash")
        for i, t in enumerate(texts):
            a.scopes.write("stash", f"k{i}", t)
        a.scopes.delete("stash")
    elif op == "member_values":
        boss, mole = c.agent("detective"), c.agent("informant")
        boss.scopes.create("plan")
        boss.scopes.invite("plan", "informant")
        mole.scopes.accept("plan")
        for i, t in enumerate(texts):
            mole.scopes.write("plan", f"k{i}", t)
        mine = [(k.id, o) for o in ("task:plan:log", "task:plan")
                for k in b.gateway.list(c.space, o)]
        boss.scopes.remove("plan", "informant", forget_values=True)
    else:
        mine = [(k.id, "detective") for k in cards(c, "detective", texts)]
    ids[op] = {"case": c.id, "space": space, "cards": mine}
    if op == "delete_case":
        b.delete_case(c.id)
print(json.dumps(ids))
"""


LEARNER = r"""
import json, sys
from bureau import Bureau
b = Bureau.open()
c = b.load_scenario("safe-combination")
mine = []
for t in json.loads(sys.argv[1]):
    card = c.whisper("detective", t)
    copy = c.publish("detective", card.id)
    mine += [(card.id, "detective"), (copy.id, "board")]
print(json.dumps({"case": c.id, "space": c.space.store_id, "cards": mine,
                  "keys": str(b.settings.seal_keys_path)}))
"""


def run_lab(out: Path, per_op: int = 10, seed: int = 31, keep: bool = False,
            classroom: bool = True) -> list[dict[str, Any]]:
    """Both settings, every operation (``classroom``: also the instructor's commands on a
    classroom server this lab starts and tears down); writes ``forgetting.json``/``.csv``/
    ``.md``/``.png`` to ``out`` and returns the rows."""
    from ...embedding import shared_minilm

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
    """The observer: the files only, then the files with the key store."""
    from ...sealing.keys import KeyStore, parse_scope_file
    from ...sealing.rotation import rotation

    tokens = {t.split("Reference ")[1].rstrip("."): (op, t) for op, ts in plan.items()
              for t in ts}
    where = disk.find_texts(data, tokens)
    vectors = disk.find_vectors(data)
    # every key store the copy holds (a data directory's seal.keys, a learner's
    # seal.keys.learner_<name>): the observer who copied the key stores too
    scope_keys = [parse_scope_file(p.read_bytes())[0]
                  for p in data.rglob("*.key") if p.parent.parent.name.startswith("seal.keys")]
    turned_back = [vectors] + [vectors @ rotation(k.key, vectors.shape[1], k.draw)
                               for k in scope_keys]
    rows = []
    for op, texts in plan.items():
        truth = encoder.embed(texts, cache=False)
        hits_plain = hits_keys = 0
        for i in range(len(texts)):
            cands = [texts[i], *rng.sample(decoys, CANDIDATES - 1)]
            emb = np.vstack([truth[i:i + 1], encoder.embed(cands[1:], cache=False)])
            hits_plain += _top1(emb, [vectors])
            hits_keys += _top1(emb, turned_back)
        found = [t for t, (o, _) in tokens.items() if o == op and where[t]]
        info = made.get(op, {})
        space = info.get("space")
        store = KeyStore(Path(info.get("keys") or data / "seal.keys"))
        left = sum(1 for cid, owner in info.get("cards", [])
                   if space and store.exists() and store.data_keys(space, owner, [cid]))
        rows.append({
            "sealed": seal, "operation": op, "canaries": len(texts),
            "plaintext_found": len(found),
            "plaintext_files": sorted({f for t in found for f in where[t]}),
            "vectors_on_disk": int(len(vectors)),
            "top1_files_only": round(hits_plain / len(texts), 3),
            "top1_with_key_store": round(hits_keys / len(texts), 3),
            "chance": round(1 / CANDIDATES, 3),
            "forgotten_keys_left": left if info.get("cards") and op != "kept" else None,
            "key_store": store.held() if store.exists() else {"scopes": 0, "card_keys": 0},
        })
    return rows


def _top1(candidates: np.ndarray, views: list[np.ndarray]) -> int:
    """1 when the true text (row 0) scores highest against any vector of any view."""
    if not len(views[0]):
        return 0
    best = np.max([np.max(candidates @ v.T, axis=1) for v in views], axis=0)
    return int(np.argmax(best) == 0)


COLUMNS = ("sealed", "operation", "canaries", "plaintext_found", "vectors_on_disk",
           "top1_files_only", "top1_with_key_store", "chance", "forgotten_keys_left")


def format_table(rows: list[dict[str, Any]]) -> str:
    head = ("setting", "operation", "canaries", "found in clear", "top-1 (files)",
            "top-1 (+key store)", "chance", "forgotten keys left")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        lines.append(" | ".join(str(x) for x in (
            "sealed" if r["sealed"] else "unsealed", r["operation"], r["canaries"],
            r["plaintext_found"], f"{r['top1_files_only']:.0%}",
            f"{r['top1_with_key_store']:.0%}", f"{r['chance']:.0%}",
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


def _plot(path: Path, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [r["operation"] for r in rows if not r["sealed"]]
    x = np.arange(len(ops))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    series = (("unsealed", False, "top1_files_only", "#c0392b"),
              ("sealed, files only", True, "top1_files_only", "#2e86c1"),
              ("sealed, files + key store", True, "top1_with_key_store", "#85c1e9"))
    by = {(r["sealed"], r["operation"]): r for r in rows}
    for ax, metric, title in ((axes[0], "plaintext", "canaries found in clear on disk"),
                              (axes[1], "top1", "forgotten card named among 50 (top-1)")):
        for k, (label, sealed, key, colour) in enumerate(series):
            if metric == "plaintext":
                if key != "top1_files_only":
                    continue
                vals = [by[(sealed, o)]["plaintext_found"] / by[(sealed, o)]["canaries"]
                        for o in ops]
            else:
                vals = [by[(sealed, o)][key] for o in ops]
            ax.bar(x + (k - 1) * 0.27, vals, 0.27, label=label, color=colour)
        if metric == "top1":
            ax.axhline(1 / CANDIDATES, color="black", ls="--", lw=1, label="chance (2 %)")
        ax.set_xticks(x, ops, rotation=30, ha="right")
        ax.set_title(title)
        ax.set_ylim(0, 1.4)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
