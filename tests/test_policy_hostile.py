"""Hostile policy files cost little (issue 19 §6): every bad file or dict is refused with a short
``PolicyError`` naming the file, in milliseconds, never a ``RecursionError``, a ``MemoryError``
or a policy that means something else than it says.

Policy files are read like scenario files (bureau.datafiles). Before, ``load_policy`` read them
with ``yaml.safe_load`` after a size check: an alias bomb of a few hundred bytes ran for 42 s
into a ``MemoryError``, deep nesting raised ``RecursionError``, and a repeated key silently kept
the last value (``default: withhold`` then ``default: reveal`` loaded as *reveal*). The bombs run
in a child process with an address-space and CPU-time limit, so a regression fails the test
instead of exhausting the machine other tests share. Times are CPU times (``process_time``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bureau.errors import PolicyError
from bureau.mediation.policy import MAX_POLICY_BYTES, load_policy, parse_policy

REPO = Path(__file__).resolve().parents[1]
MAX_MESSAGE = 300
"""Every refusal here is one short line (the hint included)."""
CPU_BUDGET = 1.0
"""Seconds of CPU for refusing any single input."""
VALID = "version: '1'\ndefault: withhold\nrules:\n  - {id: a, action: reveal}\n"


def write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refused(path: Path) -> str:
    """The message ``load_policy(path)`` refuses with: it names the file and stays short."""
    started = time.process_time()
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    spent = time.process_time() - started
    message = str(info.value)
    assert info.value.file == str(path)
    assert message.startswith(f"{path}: "), message[:300]
    assert len(message) < MAX_MESSAGE, message[:300]
    assert spent < CPU_BUDGET, f"{spent:.2f} s of CPU to refuse {path.name}"
    return message[len(str(path)) + 2 :]


def refused_data(data: Any) -> str:
    """Like :func:`refused`, for data handed straight to ``parse_policy``."""
    started = time.process_time()
    with pytest.raises(PolicyError) as info:
        parse_policy(data, source="snapshot.json")
    spent = time.process_time() - started
    message = str(info.value)
    assert info.value.file == "snapshot.json"
    assert message.startswith("snapshot.json: "), message[:300]
    assert len(message) < MAX_MESSAGE, message[:300]
    assert spent < CPU_BUDGET, f"{spent:.2f} s of CPU"
    return message[len("snapshot.json: ") :]


# --- bombs, in a child process with limits ------------------------------------------------------

_CHILD = r"""
import json, resource, sys, time, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))   # 1 GiB
resource.setrlimit(resource.RLIMIT_CPU, (10, 12))           # then SIGXCPU ends it
from bureau.errors import PolicyError
from bureau.mediation.policy import load_policy, parse_policy
exec(sys.argv[1])  # defines call()

def attempt():
    try:
        call()
    except PolicyError as exc:
        return "PolicyError", str(exc), exc.file
    except BaseException as exc:
        return type(exc).__name__, str(exc)[:300], None
    return "accepted", "", None

started = time.process_time()
kind, message, file = attempt()
seconds = time.process_time() - started
tracemalloc.start()
attempt()
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"kind": kind, "message": message, "file": file, "seconds": seconds,
                  "peak_bytes": peak}))
"""


def run_limited(code: str) -> dict[str, Any]:
    """Run ``code`` (which defines ``call()``) in a child limited to 1 GiB and 10 s of CPU."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, code],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=180,  # the CPU limit ends it first; wall time is slack for a busy machine
    )
    assert done.returncode == 0, f"the child died (exit {done.returncode}): {done.stderr[-800:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def bomb_yaml(where: str = "default", levels: int = 9, width: int = 9) -> str:
    """The classic "billion laughs": ``width ** levels`` strings from a few hundred bytes."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    lines += ["version: '1'", f"{where}: *a{levels - 1}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("where", ["default", "rules"])
def test_an_alias_bomb_is_refused_at_once(tmp_path: Path, where: str) -> None:
    path = write(tmp_path, bomb_yaml(where))
    assert path.stat().st_size < 600
    out = run_limited(f"def call(): load_policy({str(path)!r})")
    assert out["kind"] == "PolicyError", out
    assert out["file"] == str(path)
    assert out["message"].startswith(f"{path}: line "), out["message"]
    assert "more than 20,000 values" in out["message"]
    assert len(out["message"]) < MAX_MESSAGE
    assert out["seconds"] < 1.0, out  # measured: ~3 ms; the old reader ran 42 s into MemoryError
    assert out["peak_bytes"] < 50 << 20, out  # measured: ~0.2 MB


def test_a_shared_list_bomb_handed_to_parse_policy_is_refused() -> None:
    """The same bomb as data (small in memory, astronomically large once pydantic copies it)."""
    code = (
        "bomb = ['lol'] * 9\n"
        "for _ in range(8):\n"
        "    bomb = [bomb] * 9\n"
        "def call(): parse_policy({'version': '1', 'default': bomb}, source='snapshot.json')"
    )
    out = run_limited(code)
    assert out["kind"] == "PolicyError", out
    assert out["message"].startswith("snapshot.json: more than 20,000 values"), out["message"]
    assert len(out["message"]) < MAX_MESSAGE
    assert out["seconds"] < 1.0, out
    assert out["peak_bytes"] < 50 << 20, out


# --- deep nesting ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,text",
    [
        ("flow.yaml", "version: '1'\nrules: " + "[" * 5000 + "]" * 5000 + "\n"),
        ("block.yaml", "version: '1'\nrules:\n" + "- " * 5000 + "x\n"),
        ("mappings.yaml", "version: '1'\nrules:\n" + "".join(" " * i + "a:\n" for i in
                                                              range(1, 500)) + " " * 500 + "b\n"),
        ("deep.json", '{"version": "1", "rules": ' + "[" * 50_000 + "]" * 50_000 + "}"),
    ],
)
def test_deep_nesting_is_refused_without_recursion_error(
    tmp_path: Path, name: str, text: str
) -> None:
    path = write(tmp_path, text, name)
    assert path.stat().st_size <= MAX_POLICY_BYTES
    message = refused(path)
    assert "nested more than 16 levels deep (a policy needs 6" in message, message


def test_deep_data_handed_to_parse_policy_is_refused() -> None:
    """Refused before pydantic, whose validation and error reports recurse into the data."""
    deep: Any = "x"
    for _ in range(10_000):
        deep = [deep]
    message = refused_data({"version": "1", "rules": deep})
    assert "nested more than 16 levels deep" in message, message


# --- duplicate keys -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,text,line",
    [
        ("top.yaml", "version: '1'\ndefault: withhold\ndefault: reveal\n", 3),
        (
            "rule.yaml",
            "version: '1'\nrules:\n  - id: a\n    action: withhold\n    action: reveal\n",
            5,
        ),
        ("match.yaml", "version: '1'\nrules:\n  - {id: a, action: reveal, "
                       "match: {owner: chief, owner: informant}}\n", 3),
    ],
)
def test_duplicate_yaml_keys_are_refused(tmp_path: Path, name: str, text: str, line: int) -> None:
    """``yaml.safe_load`` keeps the last value: the file would say withhold and mean reveal."""
    message = refused(write(tmp_path, text, name))
    assert message.startswith(f"line {line}: not valid YAML: duplicate key "), message
    assert "Keep one of them" in message


@pytest.mark.parametrize(
    "name,text,key",
    [
        ("top.json", '{"version": "1", "default": "withhold", "default": "reveal"}', "default"),
        (
            "rule.json",
            '{"version": "1", "rules": [{"id": "a", "action": "withhold", "action": "reveal"}]}',
            "action",
        ),
    ],
)
def test_duplicate_json_keys_are_refused(tmp_path: Path, name: str, text: str, key: str) -> None:
    message = refused(write(tmp_path, text, name))
    assert message.startswith(f"not valid JSON: duplicate key {key!r}."), message


# --- files that are not policy files --------------------------------------------------------------


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    with path.open("wb") as f:
        f.truncate(2 << 30)  # sparse: no disk space used
    assert refused(path) == (
        f"the file has 2,147,483,648 bytes; a policy is at most {MAX_POLICY_BYTES:,}. "
        "Check that you picked the policy file and not a data dump."
    )


def test_a_file_just_over_the_cap_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "#" * MAX_POLICY_BYTES)
    assert refused(path).startswith(f"the file has {path.stat().st_size:,} bytes; a policy is")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    os.mkfifo(path)
    assert refused(path) == (
        "not a regular file (a device, pipe or socket). "
        "See scenarios/README.md ('Policies') for the format."
    )


def test_a_directory_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.mkdir()
    assert refused(path).startswith("is a directory, not a policy file."), refused(path)


@pytest.mark.parametrize("name", ["p.yaml", "p.json"])
def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b'{"version": "caf\xe9"}')
    assert refused(path) == "not UTF-8 (byte 16). Save the file as UTF-8."


# --- values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,text",
    [
        ("p.yaml", "version: '1'\ndefault: " + "9" * 4000 + "\n"),
        ("p.json", '{"version": "1", "default": ' + "9" * 4000 + "}"),
    ],
)
def test_a_huge_number_is_refused_with_a_short_message(
    tmp_path: Path, name: str, text: str
) -> None:
    """Before, the whole number was echoed back in the message (4,000 digits)."""
    message = refused(write(tmp_path, text, name))
    assert "a number with 4,000 characters; quote it if it is meant as text" in message, message


@pytest.mark.parametrize(
    "name,text,words",
    [
        ("p.yaml", "version: '1'\ndefault: " + "x" * 90_000 + "\n", "default: 'xxxx"),
        ("p.json", '{"version": "1", "' + "k" * 90_000 + '": 1}', "kkkk"),
    ],
    ids=["long-value", "long-key"],
)
def test_long_text_is_cut_short_in_the_message(
    tmp_path: Path, name: str, text: str, words: str
) -> None:
    """Before, a wrong value or an unknown key was echoed whole (90,000 characters)."""
    message = refused(write(tmp_path, text, name))
    assert message.startswith(words), message


class Hostile:
    """Not plain data: its ``repr`` and comparisons fail, as a hostile object's might."""

    def __repr__(self) -> str:
        raise RuntimeError("boom")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("boom")

    __hash__ = object.__hash__


@pytest.mark.parametrize(
    "data,where",
    [
        ({"version": "1", "default": Hostile()}, "default"),
        ({"version": "1", "rules": [{"id": "a", "action": Hostile()}]}, "rules[0].action"),
    ],
)
def test_non_plain_data_handed_to_parse_policy_is_refused(data: Any, where: str) -> None:
    message = refused_data(data)
    assert message.startswith(f"{where}: Hostile is not plain data"), message


# --- what must keep working -----------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((REPO / "scenarios" / "policies").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_the_shipped_policies_load_unchanged(path: Path) -> None:
    """The careful reader gives exactly what ``yaml.safe_load`` gave for the shipped files."""
    loaded = load_policy(path)
    plain = parse_policy(yaml.safe_load(path.read_text(encoding="utf-8")), source=str(path))
    assert loaded == plain
    assert loaded.digest == plain.digest and loaded.source == str(path)


def test_a_valid_policy_loads_from_yaml_and_json(tmp_path: Path) -> None:
    from_yaml = load_policy(write(tmp_path, VALID))
    from_json = load_policy(write(tmp_path, json.dumps(yaml.safe_load(VALID)), "p.json"))
    assert from_yaml.digest == from_json.digest
    assert [r.action for r in from_yaml.rules] == ["reveal"] and from_yaml.default == "withhold"
