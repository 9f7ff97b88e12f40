"""Hostile scenario input costs little: every bad file or dict is refused with a short
``ScenarioError`` in milliseconds, never a ``TypeError``, a ``RecursionError`` or a full machine.

A scenario file is something a teacher downloads and opens in a notebook, so the loader is an
attack surface: a 400-byte YAML alias bomb used to spin for minutes while its expansion ate
gigabytes. The bombs run in a child process with an address-space and CPU-time limit, so a
regression fails the test instead of exhausting the machine other tests share. Times are CPU
times (``process_time``): the suite runs next to other jobs, and wall time would measure them.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bureau.errors import ScenarioError
from bureau.scenario import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_TEXT_CHARS,
    MAX_VALUES,
    load_scenario,
    parse_scenario,
)

REPO = Path(__file__).resolve().parents[1]
MAX_MESSAGE = 1000
"""No message may grow with the input; real ones stay under ~300 characters."""
CPU_BUDGET = 1.0
"""Seconds of CPU for refusing any single input (the worst case measured is ~0.1 s)."""


def base() -> dict[str, Any]:
    """A small valid scenario (the same shape as tests/test_scenario.py uses)."""
    return {
        "id": "x",
        "title": "A test case",
        "roles": [
            {"name": "detective", "title": "Detective"},
            {"name": "informant", "title": "Informant"},
        ],
        "memories": {
            "informant": [{"key": "code", "topic": "safe", "content": "The code is 0427."}],
        },
        "questions": [
            {
                "text": "What is the code?",
                "topic": "safe",
                "publish": "code",
                "knowers_before": ["informant"],
                "knowers_after": ["informant", "detective"],
            }
        ],
    }


def refused(path: Path, limit: int = MAX_MESSAGE) -> str:
    """The message ``load_scenario(path)`` refuses with; it must name the file and stay short."""
    started = time.process_time()
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    spent = time.process_time() - started
    message = str(info.value)
    assert message.startswith(f"{path}: "), message[:300]
    assert len(message) < limit, message[:300]
    assert spent < CPU_BUDGET, f"{spent:.2f} s of CPU to refuse {path.name}"
    return message[len(str(path)) + 2 :]


def refused_data(data: Any) -> str:
    """Like :func:`refused`, for data handed straight to ``parse_scenario``."""
    started = time.process_time()
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, source="snapshot.json")
    spent = time.process_time() - started
    message = str(info.value)
    assert message.startswith("snapshot.json: "), message[:300]
    assert len(message) < MAX_MESSAGE, message[:300]
    assert spent < CPU_BUDGET, f"{spent:.2f} s of CPU"
    return message[len("snapshot.json: ") :]


def write(tmp_path: Path, text: str, name: str = "x.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- bombs, in a child process with limits ------------------------------------------------------

_CHILD = r"""
import json, resource, sys, time, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))   # 1 GiB: ~7x what the child needs
resource.setrlimit(resource.RLIMIT_CPU, (10, 12))           # then SIGXCPU ends it
from bureau.errors import ScenarioError
from bureau.scenario import load_scenario, parse_scenario
exec(sys.argv[1])  # defines call()

def attempt():
    try:
        call()
    except ScenarioError as exc:
        return "ScenarioError", str(exc)
    except BaseException as exc:
        return type(exc).__name__, str(exc)[:300]
    return "accepted", ""

rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.process_time()
kind, message = attempt()
seconds = time.process_time() - started
rss_growth_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
tracemalloc.start()
attempt()
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"kind": kind, "message": message, "seconds": seconds,
                  "rss_growth_kb": rss_growth_kb, "peak_bytes": peak}))
"""


def run_limited(code: str) -> dict[str, Any]:
    """Run ``code`` (which defines ``call()``) in a child limited to 1 GiB and 10 s of CPU.

    Returns what the child measured: the outcome, the CPU seconds of the first attempt, how much
    its peak RSS grew and tracemalloc's peak for a second attempt.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,  # the CPU limit ends it first; wall time is slack for a busy machine
    )
    assert done.returncode == 0, (  # -24 or -9: the CPU limit; -6: out of memory in Rust code
        f"the child died (exit {done.returncode}): {done.stderr[-800:]}"
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def bomb_yaml(levels: int = 9, width: int = 9) -> str:
    """The classic "billion laughs": ``width ** levels`` strings from a few hundred bytes."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    lines += ["id: x", "title: T", f"roles: *a{levels - 1}", f"summary: *a{levels - 1}"]
    return "\n".join(lines) + "\n"


BOMBS: dict[str, tuple[str, str]] = {
    # name: (file text, what the message must say)
    "billion-laughs": (bomb_yaml(), f"more than {MAX_VALUES:,} values"),
    "long-text-repeated": (
        'a: &a "' + "x" * 50_000 + '"\nid: x\ntitle: T\nroles: [' + ", ".join(["*a"] * 30) + "]\n",
        f"more than {MAX_TEXT_CHARS:,} characters",
    ),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_alias_bombs_are_refused_before_they_expand(tmp_path: Path, name: str) -> None:
    text, expected = BOMBS[name]
    path = write(tmp_path, text)
    assert path.stat().st_size < MAX_FILE_BYTES
    out = run_limited(f"def call(): load_scenario({str(path)!r})")
    assert out["kind"] == "ScenarioError", out
    assert out["message"].startswith(f"{path}: line "), out["message"]
    assert expected in out["message"]
    assert len(out["message"]) < MAX_MESSAGE
    assert out["seconds"] < CPU_BUDGET, out
    assert out["peak_bytes"] < 4 << 20, out  # measured: ~0.3 MB
    assert out["rss_growth_kb"] < 32 << 10, out


def test_a_huge_sparse_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    """The size is checked before the read: a 2 GiB file must not be loaded to be measured."""
    path = tmp_path / "x.yaml"
    with path.open("wb") as f:
        f.truncate(2 << 30)  # sparse: no disk space used
    out = run_limited(f"def call(): load_scenario({str(path)!r})")
    assert out["kind"] == "ScenarioError", out
    assert out["message"] == (
        f"{path}: the file has 2,147,483,648 bytes; a scenario is at most {MAX_FILE_BYTES:,}. "
        "Check that you picked the scenario file and not a data dump."
    )
    assert out["peak_bytes"] < 1 << 20, out
    assert out["seconds"] < CPU_BUDGET, out


@pytest.mark.parametrize(
    "build",
    [
        "data['roles'] = ['x'] * 1_000_000",
        "import itertools; data['questions'] = itertools.repeat({})",
    ],
    ids=["million-item-list", "infinite-iterator"],
)
def test_huge_in_memory_data_is_refused_before_validation(build: str) -> None:
    """``parse_scenario`` also takes dicts that never were files (snapshots, notebooks)."""
    code = f"data = {base()!r}\n{build}\ndef call(): parse_scenario(data, source='snapshot.json')"
    out = run_limited(code)
    assert out["kind"] == "ScenarioError", out
    assert out["message"].startswith("snapshot.json: "), out["message"]
    assert len(out["message"]) < MAX_MESSAGE
    assert out["seconds"] < CPU_BUDGET, out


# --- files the YAML or JSON reader would choke on ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("? [a, b]\n: 1\n", "line 1, column 3: invalid YAML: a list cannot be a key"),
        ("? {a: 1}\n: 1\n", "line 1, column 3: invalid YAML: a mapping cannot be a key"),
        ("? [a, b] : 1\n", "line 1, column 3: invalid YAML: a mapping cannot be a key"),
        ("id: x\nmemories:\n  ? [informant]\n  : []\n", "line 3, column 5: invalid YAML: a list"),
    ],
    ids=["list-key", "mapping-key", "inline-complex-key", "nested-list-key"],
)  # on one line, ``? [a, b] : 1`` is a key that is itself the mapping {[a, b]: 1}
def test_unhashable_keys_are_refused(tmp_path: Path, text: str, expected: str) -> None:
    assert refused(write(tmp_path, text)).startswith(expected)


@pytest.mark.parametrize(
    "value",
    ["!!timestamp hello", "!!int abc", "!!float abc", "!!bool maybe", "!!map xy"],
)
def test_values_that_do_not_fit_their_tag_are_refused(tmp_path: Path, value: str) -> None:
    """PyYAML reports these as bare ValueError, KeyError or AttributeError."""
    message = refused(write(tmp_path, f"id: {value}\n"))
    assert message.startswith("line 1, column 5: invalid YAML: "), message


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    message = refused(write(tmp_path, "id: x\ntitle: T\nroles: &r [a, *r]\n"))
    assert message.startswith("line 3, column 15: alias *r is used inside its own anchor"), message


DEEP = 10_000


@pytest.mark.parametrize(
    "text",
    [
        "roles: " + "[" * DEEP + "]" * DEEP + "\n",
        "roles: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n",
        "roles:\n" + "- " * DEEP + "x\n",
        "? " * DEEP + "x\n",
    ],
    ids=["flow-lists", "flow-mappings", "block-lists", "complex-keys"],
)
def test_deep_yaml_is_refused(tmp_path: Path, text: str) -> None:
    message = refused(write(tmp_path, text))
    assert message.startswith("line "), message
    assert f"nested more than {MAX_DEPTH} levels deep" in message


@pytest.mark.parametrize("depth", [DEEP, MAX_DEPTH + 1])
def test_deep_json_is_refused(tmp_path: Path, depth: int) -> None:
    """10,000 levels overflow json's C scanner; 33 are below that but above any scenario."""
    text = '{"id": "x", "title": "T", "roles": ' + "[" * depth + "]" * depth + "}"
    message = refused(write(tmp_path, text, "x.json"))
    assert f"nested more than {MAX_DEPTH} levels deep" in message, message


def test_too_many_values_are_refused_while_parsing(tmp_path: Path) -> None:
    """Without the count, 5,001+ list items meant seconds of parsing and one line per item."""
    text = "id: x\ntitle: T\nroles:\n" + "- a\n" * (MAX_VALUES + 10)
    message = refused(write(tmp_path, text))
    assert f"more than {MAX_VALUES:,} values" in message


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("x.yaml", "id: " + "1" * 5000 + "\n"),
        ("x.yaml", "id: 1" + ":1" * 45_000 + "\n"),  # base 60, quadratic to convert
        ("x.json", '{"id": ' + "1" * 5000 + "}"),
        ("x.json", '{"id": 1.' + "1" * 5000 + "}"),
    ],
    ids=["yaml-int", "yaml-sexagesimal", "json-int", "json-float"],
)
def test_absurd_numbers_are_refused(tmp_path: Path, name: str, text: str) -> None:
    message = refused(write(tmp_path, text, name))
    assert "a number with " in message and "quote it if it is meant as text" in message


# --- the file itself -----------------------------------------------------------------------------


def test_a_file_over_the_cap_is_refused_even_if_valid(tmp_path: Path) -> None:
    # The cap also bounds parsing time (~3 us per byte for the worst text): keep it small.
    assert MAX_FILE_BYTES <= 100_000
    text = yaml.safe_dump(base(), sort_keys=False)
    text += "#" * (MAX_FILE_BYTES + 1 - len(text) - 1) + "\n"
    path = write(tmp_path, text)
    assert refused(path) == (
        f"the file has {MAX_FILE_BYTES + 1:,} bytes; a scenario is at most {MAX_FILE_BYTES:,}. "
        "Check that you picked the scenario file and not a data dump."
    )
    # One byte less is fine: the cap refuses size, not content.
    path.write_text(text[:-2] + "\n", encoding="utf-8")
    assert load_scenario(path).id == "x"


def test_a_large_but_honest_scenario_fits_the_caps(tmp_path: Path) -> None:
    """10 roles, 40 cards of 700 Chinese characters, 20 questions: the caps must not bite."""
    roles = [f"r{i}" for i in range(10)]
    data = {
        "id": "big",
        "title": "大案",
        "language": "zh",
        "roles": [{"name": r, "title": f"角色 {r}"} for r in roles],
        "memories": {
            r: [{"key": f"k{i}-{j}", "topic": f"t{i}", "content": "线索" * 350} for j in range(4)]
            for i, r in enumerate(roles)
        },
        "questions": [
            {
                "text": f"第 {q} 个问题是什么？",
                "topic": f"t{q % 10}",
                "publish": f"k{q % 10}-{q % 4}",
                "knowers_before": [roles[q % 10]],
                "knowers_after": roles,
            }
            for q in range(20)
        ],
    }
    path = write(tmp_path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    assert path.stat().st_size < MAX_FILE_BYTES
    started = time.process_time()
    assert len(load_scenario(path).questions) == 20
    assert time.process_time() - started < CPU_BUDGET


def test_aliases_within_the_caps_still_work(tmp_path: Path) -> None:
    """Anchors are a fair way to repeat a knowers list; only multiplying data is refused."""
    text = """\
id: x
title: A test case
roles:
  - {name: detective, title: Detective}
  - {name: informant, title: Informant}
memories:
  informant:
    - {key: code, topic: safe, content: The code is 0427.}
questions:
  - text: What is the code?
    topic: safe
    publish: code
    knowers_before: &owner [informant]
    knowers_after: &everyone [informant, detective]
  - text: Which digits open the safe?
    topic: safe
    publish: code
    knowers_before: *owner
    knowers_after: *everyone
"""
    s = load_scenario(write(tmp_path, text))
    assert [q.knowers_after for q in s.questions] == [["informant", "detective"]] * 2


@pytest.mark.parametrize("name", ["x.yaml", "x.json"])
def test_not_utf8(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b'{"id": "caf\xe9"}')
    assert refused(path) == "not UTF-8 (byte 11). Save the file as UTF-8."


def test_a_directory_is_not_a_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.mkdir()
    assert refused(path) == "is a directory, not a scenario file."


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    os.mkfifo(path)
    assert refused(path) == "not a regular file (a device, pipe or socket)."


def test_symlinks(tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    assert refused(loop) == f"cannot read the file ({os.strerror(errno.ELOOP)})."
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "nowhere.yaml")
    assert refused(dangling) == "no such file."
    good = write(tmp_path, yaml.safe_dump(base()), "real.yaml")
    link = tmp_path / "link.yaml"
    link.symlink_to(good)
    assert load_scenario(link).id == "x"


def test_a_file_name_too_long_for_the_system(tmp_path: Path) -> None:
    path = tmp_path / ("n" * 5000 + ".yaml")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert len(message) < MAX_MESSAGE
    assert message.startswith("…") and "nnn.yaml: cannot read the file (" in message, message


# --- huge values: the message stays short ---------------------------------------------------------

BIG = 90_000


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        target: Any = data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return edit


HUGE: dict[str, Callable[[dict[str, Any]], None]] = {
    "id": _set(("id",), "x" * BIG),
    "title": _set(("title",), "t" * BIG),
    "language": _set(("language",), "l" * BIG),
    "roles-as-text": _set(("roles",), "r" * BIG),
    "unknown-field": _set(("u" * BIG,), 1),
    "memories-role": _set(("memories", "m" * BIG), []),
    "card-content": _set(("memories", "informant", 0, "content"), "c" * BIG),
    "knower": _set(("questions", 0, "knowers_after", 1), "k" * BIG),
    "publish": _set(("questions", 0, "publish"), "p" * BIG),
}


@pytest.mark.parametrize("name", ["x.yaml", "x.json"])
@pytest.mark.parametrize("where", list(HUGE))
def test_a_huge_value_gives_a_short_message(tmp_path: Path, where: str, name: str) -> None:
    data = base()
    HUGE[where](data)
    text = json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data, width=1 << 30)
    refused(write(tmp_path, text, name))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("x.yaml", f'? "{"d" * 40_000}"\n: 1\n? "{"d" * 40_000}"\n: 2\n'),  # keys > 1024: "? "
        ("x.json", f'{{"{"d" * 40_000}": 1, "{"d" * 40_000}": 2}}'),
        ("x.yaml", "id: *" + "a" * BIG + "\n"),
        ("x.yaml", "id: !<" + "t" * BIG + "> x\n"),
    ],
    ids=["yaml-duplicate-key", "json-duplicate-key", "undefined-alias", "unknown-tag"],
)
def test_parser_messages_quoting_the_input_are_short(tmp_path: Path, name: str, text: str) -> None:
    refused(write(tmp_path, text, name))


def test_an_unknown_id_gives_a_short_message() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("i" * 1_000_000)
    assert len(str(info.value)) < MAX_MESSAGE
    assert str(info.value).startswith("No scenario 'iiii")


def test_many_problems_are_listed_briefly(tmp_path: Path) -> None:
    data = base()
    data["questions"][0]["knowers_after"] += [f"nobody{i}" for i in range(2000)]
    # 20 lines of ~90 characters, whatever the count: the first problems are the ones to fix.
    message = refused(write(tmp_path, json.dumps(data), "x.json"), limit=2500)
    assert message.startswith("2000 problems:\n  questions[0].knowers_after[2]: unknown role")
    assert message.endswith("  ... and 1,980 more")


# --- hostile data handed to parse_scenario --------------------------------------------------------


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


class _Hostile:
    """Every dunder pydantic or a message might call raises."""

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise TypeError("hostile __eq__")

    def __repr__(self) -> str:
        raise RuntimeError("hostile __repr__")


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


IN_MEMORY: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "deep-list": (_set(("roles",), _nested(100_000)), "levels deep"),
    "deep-summary": (_set(("summary",), _nested(100_000)), "levels deep"),
    "self-containing-list": (_set(("roles",), _cycle()), "levels deep"),
    "huge-string": (_set(("language",), "x" * 10_000_000), "characters of text"),
    "huge-key": (_set(("k" * 2_000_000,), 1), "characters of text"),
    "hostile-key": (_set(("memories", _Hostile()), []), "_Hostile is not plain data"),
    "hostile-value": (_set(("title",), _Hostile()), "title: _Hostile is not plain data"),
    "generator": (_set(("roles",), (r for r in base()["roles"])), "generator is not plain data"),
    "str-subclass": (_set(("id",), type("Sly", (str,), {})("x")), "Sly is not plain data"),
    "huge-int": (_set(("title",), 10**10_000), "title: Input should be a valid string"),
}


@pytest.mark.parametrize("where", list(IN_MEMORY))
def test_hostile_data_is_refused_by_parse_scenario(where: str) -> None:
    edit, expected = IN_MEMORY[where]
    data = base()
    edit(data)
    message = refused_data(data)
    assert expected in message, message


def test_plain_data_of_every_yaml_type_still_gets_field_messages() -> None:
    """The shape check lets YAML's own types through, so pydantic can name the field."""
    import datetime

    data = base()
    data["title"] = datetime.date(2024, 1, 1)
    assert refused_data(data) == (
        "title: Input should be a valid string (got date datetime.date(2024, 1, 1))"
    )


def test_a_json_snapshot_round_trips() -> None:
    """What service.py does with a case's snapshot keeps working."""
    snapshot = json.loads(json.dumps(parse_scenario(base()).to_dict()))
    assert parse_scenario(snapshot, source="snapshot.json").id == "x"
