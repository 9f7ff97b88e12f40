"""Lesson 07's look at the disk: the forgetting lab's own tools (:mod:`bureau.labs.forgetting.disk`,
run in a child process) on the learner's data directory, so the notebook stays thin.

* :func:`forget_and_look` -- one canary card written with sealing off and one with it on, each
  forgotten at once (``case.forget``), then every file of the data directory read for the
  canaries' tokens, as the observer who copies the disk would (``grep -rlaF``); :func:`said`
  reads its table in a sentence (which kind of file still held each canary);
* the exercise ``07b-forget-for-good``: forget a card of your own; the check finds the card gone
  on every read path and its key gone from the key store.

Both run on a throwaway case of the same scenario (deleted afterwards): a scope that holds
sealed cards turns its queries, so an unsealed card written into the lesson's own case would
rank wrongly there (docs/sealing.md, "Switching").
"""

from __future__ import annotations

import secrets
from typing import Any

import pandas as pd

from .widgets.exercises import Exercise, Verdict, not_yet, passed, register

FACT = "The spare key to the archive is taped under the third stair."


def forget_and_look(case: Any, role: str | None = None) -> pd.DataFrame:
    """Per setting (unsealed, sealed): a canary whispered to ``role`` (default: the case's
    first role; lesson 07 passes its colleague), forgotten, then looked for in every file of the
    data directory; and whether the key store still holds its key."""
    bureau = case.bureau
    role = role or case.role_names[0]
    if bureau.settings.store != "embedded":
        return pd.DataFrame([{"note": "your memory lives on the classroom server, not in this "
                                      "data directory: run this part on your own machine"}])
    before = bureau.settings
    scratch = bureau.load_scenario(case.scenario.id)
    rows = []
    try:
        for sealed in (False, True):
            token = f"CANARY{secrets.token_hex(6)}"
            bureau.settings = before.with_(seal=sealed)
            try:
                card = scratch.whisper(role, f"{FACT} Reference {token}.")
            finally:
                bureau.settings = before
            scratch.forget(card.id)
            found = _find_in_child(bureau.settings.data_dir, token)
            rows.append({"setting": "sealed" if sealed else "unsealed",
                         "forgotten": "yes",
                         "files holding the canary": ", ".join(sorted(found)) or "none",
                         "key left in the key store": _key_left(scratch, role, card.id)})
    finally:
        bureau.delete_case(scratch.id)
    return pd.DataFrame(rows)


FILE_KINDS = (("/redo/", "the redo log"), ("seal.keys", "the key store"),
              ("ledger", "the ledger"), ("/sstable", "a data file"), ("/clog/", "the commit log"),
              ("/slog/", "the storage log"))
"""Path pieces that name what a file of the data directory is (the first that matches)."""


def file_kind(path: str) -> str:
    """What a data-directory file is, in words (``the redo log``); the path itself otherwise."""
    return next((kind for piece, kind in FILE_KINDS if piece in f"/{path}"), path)


def said(table: pd.DataFrame) -> str:
    """The canary table of :func:`forget_and_look` in one sentence per setting, from the run:
    where each forgotten canary was still found, and whether the key store kept its key."""
    if "setting" not in table.columns:
        return str(table.iloc[0, 0]) if len(table) else ""
    lines = []
    for _, row in table.iterrows():
        found = [f for f in str(row["files holding the canary"]).split(", ") if f != "none"]
        kinds = sorted({file_kind(f) for f in found})
        where = (f"still in {len(found)} file{'s' if len(found) != 1 else ''} "
                 f"({', '.join(kinds)})" if found else "in no file")
        key = ("the key store kept its key" if row["key left in the key store"] else
               "it never had a key" if row["setting"] == "unsealed" else
               "the key store holds no key for it")
        lines.append(f"{row['setting'].capitalize()}, the forgotten canary is {where}; {key}.")
    return "\n".join(lines)


FIND = r"""
import json, sys
from bureau.labs.forgetting.disk import find_texts
print(json.dumps(find_texts(sys.argv[1], [sys.argv[2]])[sys.argv[2]]))
"""


def _find_in_child(data_dir: Any, token: str) -> list[str]:
    """:func:`~bureau.labs.forgetting.disk.find_texts` run in a child process. Never in this
    one: closing a file descriptor drops every POSIX lock the process holds on that file, so
    reading the ledger's SQLite file (or seekdb's) from the process that has it open would
    silently release its locks."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    package = str(Path(__file__).resolve().parents[2])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", FIND, str(data_dir), token], env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def _key_left(case: Any, role: str, card_id: str) -> bool:
    """Whether the key store (read as a file, as the observer would) still holds the card's key."""
    from ..sealing import KeyStore

    keys = KeyStore(case.bureau.settings.seal_keys_path)
    return keys.exists() and bool(keys.data_keys(case.space.store_id, role, [card_id]))


def check_forgotten(case: Any, answer: Any) -> Verdict:
    """The card ``answer`` names is forgotten for good: no read path of the case returns it,
    it is revoked with the reason ``forgotten``, and the key store holds no key of it."""
    from ..errors import UnknownCardError

    if answer is None:
        return not_yet("Replace `None` with the id of a card you wrote and then forgot.")
    if not isinstance(answer, str):
        return not_yet("Pass the card's id (`card.id`, a string), not the card.")
    audit = case.audit(verify=False)
    rows = audit[(audit["card_id"] == answer) & (audit["action"] == "revoke")]
    if rows.empty:
        try:
            case.disclosure.find(answer)
        except UnknownCardError:
            return not_yet(f"This case has no card {answer}: whisper one in this case first.")
        return not_yet("That card is still there: forget it with `case.forget(card.id)`.")
    if not any("forgotten" in str(r).split(", ") for r in rows["reasons"]):
        return not_yet("That card was revoked, not forgotten: revoking deletes the text too, "
                       "but `case.forget` says what you mean. Forget a card of your own.")
    owner = str(rows["card_owner"].iloc[0])
    if _key_left(case, owner, answer):
        return not_yet("The card is gone from every read path, but its key is still in the key "
                       "store: is sealing off (BUREAU_SEAL=0)?")
    return passed("Forgotten for good: no read path returns it, and its key is destroyed, so "
                  "every copy the database's files still keep of it is noise.")


SOLUTION = '''card = case.whisper(cast.colleague, "My own note: the side door sticks in the rain.")
case.forget(card.id)
my_card = card.id'''

register(Exercise("07b-forget-for-good", "Forget a card for good", SOLUTION, check_forgotten))

__all__ = ["FACT", "check_forgotten", "forget_and_look"]
