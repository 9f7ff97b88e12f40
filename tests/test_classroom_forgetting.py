"""``classroom remove|reset|teardown`` forget a learner's sealed cards for good (issue 31 §2).

Actor: someone who later holds a copy of the classroom server's files (the instructor, the
database administrator, a backup) *and* of the learner's data directory. The server keeps the
learner's sealed rows in its redo log after ``DROP DATABASE``; what makes them noise is that the
learner's keys are gone. Checked on a real classroom server with real learner processes: after
each command the learner's key store (``seal.keys.learner_<name>`` in their data directory) is
gone, and no file left anywhere in that data directory holds an old scope key or wrapped card
key (the store is unlinked file by file, never edited in place). ``reset --keep-data`` keeps
them (the data stays), and another learner's keys are untouched.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import finish
from test_classroom import env_for

from bureau.classroom import tenants
from bureau.sealing import KeyStore
from bureau.sealing.keys import parse_scope_file

WRITE = r"""
import json, sys
from bureau import Bureau
bureau = Bureau.open()
case = bureau.load_scenario("safe-combination")
card = case.whisper("informant", sys.argv[1])
case.publish("informant", card.id)
print(json.dumps({"keys": str(bureau.settings.seal_keys_path)}))
"""


def _secrets(keys: Path) -> list[bytes]:
    """Every scope key (hex) and wrapped card key (base64) the store holds now."""
    out = []
    for path in keys.glob("*/*.key"):
        key, wrapped, _ = parse_scope_file(path.read_bytes())
        out.append(key.key.hex().encode())
        out += [w.encode() for w in wrapped.values()]
    return out


def _anywhere(root: Path, needles: list[bytes]) -> list[str]:
    """Files under ``root`` holding any needle (the observer's ``grep -rlaF``)."""
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            body = path.read_bytes()
            hits += [str(path) for n in needles if n in body]
    return hits


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    base = tmp_path_factory.mktemp("forgetting-room")
    directory = base / "room"
    tenants.start(directory)
    try:
        for learner in ("ann", "ben", "cat"):
            tenants.add(directory, learner, data_dir=base / "homes" / "{learner}")
        yield directory, base / "homes"
    finally:
        if directory.exists():
            tenants.teardown(directory)


def test_remove_reset_and_teardown_destroy_the_learners_keys(room):
    directory, homes = room
    roster = tenants.Roster.load(directory)
    procs = [subprocess.Popen([sys.executable, "-c", WRITE, f"{name} hid the ledger CANARY{i}"],
                              cwd=homes.parent, env=env_for(homes / name,
                                                            roster.connection_file(name)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, name in enumerate(("ann", "ben", "cat"))]
    made = dict(zip(("ann", "ben", "cat"), finish(*procs, timeout=300), strict=True))
    keys = {name: Path(m["keys"]) for name, m in made.items()}
    for name, path in keys.items():
        assert path == tenants.seal_keys(homes / name, name)  # where the roster looks
    old = {name: _secrets(path) for name, path in keys.items()}
    assert all(len(v) >= 3 for v in old.values()), old  # scope keys and card keys

    tenants.reset(directory, "ann")
    assert not keys["ann"].exists()
    assert _anywhere(homes / "ann", old["ann"]) == []
    assert _secrets(keys["ben"]) == old["ben"]  # another learner's keys: untouched

    tenants.reset(directory, "cat", keep_data=True)  # the data stays, so do its keys
    assert _secrets(keys["cat"]) == old["cat"]

    assert tenants.remove(directory, "ben") is None  # destroyed: nothing left to report
    assert not keys["ben"].exists()
    assert _anywhere(homes / "ben", old["ben"]) == []

    # Learners the roster has no data directory for: their keys stay, and the commands say
    # where they are (found by name under a known home) or would be, never destroying a guess.
    tenants.add(directory, "dan")
    tenants.add(directory, "eve")
    dan_keys = tenants.seal_keys(homes / "dan", "dan")
    KeyStore(dan_keys).new_cards("ns", "informant", ["1"])
    left = tenants.remove(directory, "dan")
    assert left is not None and left.found == (dan_keys,) and dan_keys.exists()
    assert "NOT destroyed" in left.message() and f"rm -rf {dan_keys}" in left.message()

    gone = tenants.teardown(directory)
    assert not keys["cat"].exists()
    assert _anywhere(homes, [s for v in old.values() for s in v]) == []
    assert [(k.learner, k.found) for k in gone] == [("eve", ())]
    assert tenants.seal_keys(homes / "eve", "eve") in gone[0].searched
