"""Scenario files: the shipped ones load, and every rule refuses bad input with its exact message.

Messages are asserted verbatim because they are the interface for a teacher editing YAML by hand:
a rule whose error stopped naming the field would make a typo expensive to find.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bureau.errors import ScenarioError
from bureau.model import BOARD
from bureau.scenario import (
    SCENARIO_DIR,
    Question,
    RoleSpec,
    Scenario,
    SeedMemory,
    list_scenarios,
    load_scenario,
    parse_scenario,
)
from bureau.scenario import loading as scenario_mod

SHIPPED = {"safe-combination", "the-mole", "ward-seven"}
NAME_HINT = "Use 1-32 lowercase letters, digits, '-' or '_', starting with a letter."


def base() -> dict[str, Any]:
    """A small valid scenario that each test breaks in exactly one place."""
    return {
        "id": "x",
        "title": "A test case",
        "language": "en",
        "summary": "Two roles, two cards.",
        "roles": [
            {"name": "detective", "title": "Detective"},
            {"name": "informant", "title": "Informant", "description": "Knows the code."},
        ],
        "memories": {
            "informant": [
                {"key": "code", "topic": "safe", "kind": "fact", "content": "The code is 0427."}
            ],
            "detective": [{"key": "cctv", "topic": "cctv", "content": "A grey raincoat."}],
        },
        "questions": [
            {
                "text": "What is the code?",
                "topic": "safe",
                "publish": "code",
                "knowers_before": ["informant"],
                "knowers_after": ["informant", "detective"],
            },
            {"text": "Who is the lawyer?", "topic": "lawyer", "knowers_before": []},
        ],
    }


def write(tmp_path: Path, data: Any, name: str = "x.yaml") -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    elif name.endswith(".json"):
        path.write_text(json.dumps(data), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
    return path


def error_of(tmp_path: Path, data: Any, name: str = "x.yaml") -> str:
    """The full message the loader raises for ``data``, with the file name shortened to ``F``."""
    path = write(tmp_path, data, name)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    return "F" + message[len(str(path)) :]


def broken(edit: Any) -> dict[str, Any]:
    data = base()
    edit(data)
    return data


# --- shipped scenarios ---------------------------------------------------------------------------


def test_every_shipped_scenario_loads_by_id_and_by_listing() -> None:
    listed = list_scenarios()
    ids = [s.id for s in listed]
    assert ids == sorted(ids)
    assert SHIPPED <= set(ids)
    for s in listed:
        assert s.source_path is not None and s.source_path.parent == SCENARIO_DIR
        again = load_scenario(s.id)
        assert again == s
        assert len(s.questions) >= 4
        assert BOARD not in s.role_names


def test_shipped_scenarios_cover_the_lessons() -> None:
    safe = load_scenario("safe-combination")
    assert safe.role_names == ["detective", "informant", "suspect"]
    assert safe.seed("safe-code")[0] == "informant"
    assert "0427" in safe.seed("safe-code")[1].content
    combo = next(q for q in safe.questions if q.publish == "safe-code")
    assert combo.knowers_before == ["informant", "suspect"]  # the suspect holds the decoy
    assert set(combo.knowers_after) == {"informant", "detective", "suspect"}
    assert any(q.knowers_before == [] and q.publish is None for q in safe.questions)

    mole = load_scenario("the-mole")
    tip_owner, tip = mole.seed("true-tip")
    decoy_owner, decoy = mole.seed("decoy")
    assert tip_owner != decoy_owner and tip.topic == decoy.topic
    assert {q.publish for q in mole.questions} >= {"true-tip", "decoy"}

    ward = load_scenario("ward-seven")
    assert len(ward.roles) >= 4


def test_readme_minimal_example_is_valid(tmp_path: Path) -> None:
    readme = (SCENARIO_DIR / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## A minimal example\s+```yaml\n(.*?)```", readme, re.S)
    assert block is not None, "scenarios/README.md lost its minimal example"
    s = load_scenario(write(tmp_path, block.group(1), "lost-key.yaml"))
    assert s.id == "lost-key" and s.role_names == ["gardener", "cook"]


# --- round trip and helpers ----------------------------------------------------------------------


def test_fields_round_trip(tmp_path: Path) -> None:
    s = load_scenario(write(tmp_path, base()))
    assert s.id == "x" and s.title == "A test case" and s.language == "en"
    assert s.summary == "Two roles, two cards."
    assert s.roles[1] == RoleSpec(
        name="informant", title="Informant", description="Knows the code."
    )
    assert s.roles[0].description == ""
    assert s.memories["detective"] == [
        SeedMemory(key="cctv", topic="cctv", kind="fact", content="A grey raincoat.")
    ]
    assert s.questions[0] == Question(
        text="What is the code?",
        topic="safe",
        publish="code",
        knowers_before=["informant"],
        knowers_after=["informant", "detective"],
        note="",
    )
    # Without publish, knowers_after defaults to knowers_before.
    assert s.questions[1].publish is None and s.questions[1].knowers_after == []
    assert s.source_path == tmp_path / "x.yaml"
    assert s.role_names == ["detective", "informant"]
    assert s.seed("code") == ("informant", s.memories["informant"][0])
    assert [key for _, key in ((r, c.key) for r, c in s.seeds())] == ["code", "cctv"]
    assert s.role("informant").title == "Informant"

    # Dumping and re-reading gives the same scenario, in YAML and in JSON.
    dumped = s.to_dict()
    assert "source_path" not in dumped
    for name in ("again.yaml", "again.json"):
        again = load_scenario(write(tmp_path, dumped, name))
        assert again.to_dict() == dumped


def test_shipped_scenarios_round_trip(tmp_path: Path) -> None:
    for s in list_scenarios():
        again = load_scenario(write(tmp_path, s.to_dict(), f"{s.id}.yaml"))
        assert again.to_dict() == s.to_dict()


def test_texts_are_stripped(tmp_path: Path) -> None:
    data = broken(lambda d: d["memories"]["informant"][0].update(content="  The code is 0427.\n"))
    assert load_scenario(write(tmp_path, data)).seed("code")[1].content == "The code is 0427."


def test_unknown_seed_and_role_lookups_say_what_exists(tmp_path: Path) -> None:
    s = load_scenario(write(tmp_path, base()))
    with pytest.raises(ScenarioError) as info:
        s.seed("nope")
    assert str(info.value) == "Scenario 'x' has no seed memory 'nope' (keys: code, cctv)."
    with pytest.raises(ScenarioError) as info:
        s.role("butler")
    assert str(info.value) == "Scenario 'x' has no role 'butler' (roles: detective, informant)."


def test_parse_scenario_accepts_a_dict_without_a_file() -> None:
    s = parse_scenario(base())
    assert s.source_path is None and s.id == "x"
    with pytest.raises(ScenarioError) as info:
        parse_scenario(broken(lambda d: d.update(id="X")))
    assert str(info.value) == f"<scenario>: id: Scenario id 'X' is not a valid name. {NAME_HINT}"


def test_models_are_frozen(tmp_path: Path) -> None:
    s = load_scenario(write(tmp_path, base()))
    with pytest.raises(Exception, match="frozen"):
        s.id = "y"  # type: ignore[misc]


# --- validation rules: one broken field, one exact message ---------------------------------------

BLANK_HINT = "Type a sentence with at least one word."
ROLES = "(roles: detective, informant)"

CASES: list[tuple[str, Any, str]] = [
    (
        "id-slug",
        lambda d: d.update(id="Safe Case"),
        f"F: id: Scenario id 'Safe Case' is not a valid name. {NAME_HINT}",
    ),
    (
        "role-slug",
        lambda d: d["roles"][1].update(name="Informant"),
        f"F: roles[1].name: Role name 'Informant' is not a valid name. {NAME_HINT}",
    ),
    (
        "topic-slug",
        lambda d: d["memories"]["informant"][0].update(topic="The Safe"),
        f"F: memories.informant[0].topic: Memory topic 'The Safe' is not a valid name. {NAME_HINT}",
    ),
    (
        "kind-slug",
        lambda d: d["memories"]["detective"][0].update(kind="hard evidence"),
        f"F: memories.detective[0].kind: Memory kind 'hard evidence' is not a valid name. "
        f"{NAME_HINT}",
    ),
    (
        "key-slug",
        lambda d: d["memories"]["detective"][0].update(key="CCTV"),
        f"F: memories.detective[0].key: Memory key 'CCTV' is not a valid name. {NAME_HINT}",
    ),
    (
        "question-topic-slug",
        lambda d: d["questions"][1].update(topic="who?"),
        f"F: questions[1].topic: Question topic 'who?' is not a valid name. {NAME_HINT}",
    ),
    (
        "board-reserved",
        lambda d: d["roles"][1].update(name="board"),
        "F: roles[1].name: 'board' is reserved for the bulletin board",
    ),
    (
        "two-roles",
        lambda d: (
            d.update(roles=d["roles"][1:], questions=[]),
            d["memories"].pop("detective"),
        ),
        "F: roles: a scenario needs at least 2 roles, found 1 "
        "(memory isolation needs someone to be isolated from)",
    ),
    (
        "unique-roles",
        lambda d: d["roles"].append({"name": "detective", "title": "Another detective"}),
        "F: roles[2].name: duplicate role 'detective'",
    ),
    (
        "memories-for-declared-roles",
        lambda d: d["memories"].update(butler=[]),
        f"F: memories.butler: unknown role 'butler' {ROLES}",
    ),
    (
        "memories-not-for-board",
        lambda d: d["memories"].update(board=[]),
        "F: memories.board: the bulletin board starts empty; it only receives published copies "
        "(give the card to a role and publish it in a question)",
    ),
    (
        "keys-unique-across-roles",
        lambda d: d["memories"]["detective"].append(
            {"key": "code", "topic": "safe", "content": "A second card with the same key."}
        ),
        "F: memories.detective[1].key: duplicate key 'code' (already used at "
        "memories.informant[0]); keys are unique per scenario",
    ),
    (
        "content-empty",
        lambda d: d["memories"]["informant"][0].update(content="   "),
        f"F: memories.informant[0].content: The memory content is empty. {BLANK_HINT}",
    ),
    (
        "content-too-long",
        lambda d: d["memories"]["informant"][0].update(content="x" * 2001),
        "F: memories.informant[0].content: The memory content has 2,001 characters; "
        "the limit is 2,000. Split it into shorter facts, one card each.",
    ),
    (
        "content-control-char",
        lambda d: d["memories"]["informant"][0].update(content="bell\x07"),
        "F: memories.informant[0].content: The memory content contains control or invisible "
        "format characters (U+0007). Remove them; only ordinary text, tabs and line breaks "
        "are accepted.",
    ),
    (
        "question-too-long",
        lambda d: d["questions"][0].update(text="q" * 2001),
        "F: questions[0].text: The question text has 2,001 characters; the limit is 2,000. "
        "Split it into shorter facts, one card each.",
    ),
    (
        "title-too-long",
        lambda d: d.update(title="t" * 121),
        "F: title: The scenario title has 121 characters; the limit is 120. "
        "Split it into shorter facts, one card each.",
    ),
    (
        "knowers-unknown-role",
        lambda d: d["questions"][0].update(
            knowers_before=["informant", "butler"], knowers_after=["informant", "butler"]
        ),
        "F: 2 problems:\n"
        f"  questions[0].knowers_before[1]: unknown role 'butler' {ROLES}\n"
        f"  questions[0].knowers_after[1]: unknown role 'butler' {ROLES}",
    ),
    (
        "knowers-board",
        lambda d: d["questions"][1].update(knowers_before=["board"]),
        "F: questions[1].knowers_before[0]: 'board' is the bulletin board, not a role; "
        f"list the roles that can answer {ROLES}",
    ),
    (
        "knowers-listed-twice",
        lambda d: d["questions"][0].update(knowers_after=["informant", "detective", "informant"]),
        "F: questions[0].knowers_after[2]: 'informant' is listed twice",
    ),
    (
        "publish-unknown-key",
        lambda d: d["questions"][0].update(publish="combination"),
        "F: questions[0].publish: unknown seed memory 'combination' (keys: code, cctv)",
    ),
    (
        "no-publish-means-no-change",
        lambda d: d["questions"][1].update(knowers_after=["detective"]),
        "F: questions[1].knowers_after: without publish nobody can learn anything, so it must "
        "equal knowers_before ([]), got [detective]",
    ),
    (
        "publisher-must-know-before",
        lambda d: d["questions"][0].update(
            knowers_before=["detective"], knowers_after=["detective", "informant"]
        ),
        "F: questions[0].knowers_before: 'code' belongs to 'informant', who must be among "
        "knowers_before (a role can always answer from its own card), got [detective]",
    ),
    (
        "publish-keeps-knowers",
        lambda d: d["questions"][0].update(knowers_after=["detective"]),
        "F: questions[0].knowers_after: publishing only adds a board copy, so every role in "
        "knowers_before must stay; missing [informant]",
    ),
    (
        "publish-needs-knowers-after",
        lambda d: d["questions"][0].pop("knowers_after"),
        "F: questions[0].knowers_after: required field is missing "
        "(with publish, list the roles that can answer once the card is public)",
    ),
    (
        "language-code",
        lambda d: d.update(language="English"),
        "F: language: 'English' is not a short language code; use e.g. 'en', 'zh' or 'pt-BR'",
    ),
    (
        "unknown-top-level-field",
        lambda d: d.update(summry="typo"),
        "F: summry: unknown field (did you mean 'summary'?)",
    ),
    (
        "unknown-question-field",
        lambda d: d["questions"][0].update(knowers_afer=["informant"]),
        "F: questions[0].knowers_afer: unknown field (did you mean 'knowers_after'?)",
    ),
    (
        "unknown-role-field",
        lambda d: d["roles"][0].update(colour="blue"),
        "F: roles[0].colour: unknown field (allowed: name, title, description)",
    ),
    (
        "unknown-memory-field",
        lambda d: d["memories"]["detective"][0].update(text="misplaced"),
        "F: memories.detective[0].text: unknown field (allowed: key, topic, kind, content, "
        "sensitivity, info_type, abstraction)",
    ),
    (
        "source-path-is-not-a-file-field",
        lambda d: d.update(source_path="/etc/passwd"),
        "F: source_path: unknown field (set by the loader, not the file)",
    ),
    (
        "required-field",
        lambda d: d.pop("title"),
        "F: title: required field is missing",
    ),
    (
        "wrong-type",
        lambda d: d.update(roles="detective, informant"),
        "F: roles: Input should be a valid list (got str 'detective, informant')",
    ),
    (
        "several-problems-at-once",
        lambda d: (d.update(id="X"), d["roles"][0].update(name="board")),
        "F: 2 problems:\n"
        f"  id: Scenario id 'X' is not a valid name. {NAME_HINT}\n"
        "  roles[0].name: 'board' is reserved for the bulletin board",
    ),
]


@pytest.mark.parametrize(("edit", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_rule_has_its_precise_error(tmp_path: Path, edit: Any, expected: str) -> None:
    assert error_of(tmp_path, broken(edit)) == expected


def test_unquoted_norwegian_is_explained(tmp_path: Path) -> None:
    text = yaml.safe_dump(base(), sort_keys=False).replace("language: en", "language: no")
    assert error_of(tmp_path, text) == (
        "F: language: Input should be a valid string (got bool False); "
        "quote it: YAML reads yes/no/on/off/true/false as booleans"
    )


def test_the_base_scenario_is_valid(tmp_path: Path) -> None:
    """Guards the table above: each case must fail because of its edit, not because of base()."""
    assert isinstance(load_scenario(write(tmp_path, base())), Scenario)


# --- malformed files -----------------------------------------------------------------------------


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    assert error_of(tmp_path, "id: x\ntitle: [unclosed\nroles: []\n") == (
        "F: line 3, column 6: invalid YAML: expected ',' or ']', but got ':'. "
        "Check the indentation and quoting around that line."
    )
    assert error_of(tmp_path, "id: x\n  title: y\n") == (
        "F: line 2, column 8: invalid YAML: mapping values are not allowed here. "
        "Check the indentation and quoting around that line."
    )


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    text = "id: x\ntitle: T\nmemories: {}\nmemories: {}\n"
    assert error_of(tmp_path, text) == (
        "F: line 4, column 1: invalid YAML: duplicate key 'memories'. "
        "Keep one of them: YAML would otherwise silently keep only the last."
    )
    assert error_of(tmp_path, '{"id": "x", "id": "y"}', "x.json") == (
        "F: invalid JSON: duplicate key 'id'. "
        "Keep one of them: JSON readers would otherwise silently keep only the last."
    )


def test_malformed_json_names_the_line(tmp_path: Path) -> None:
    assert error_of(tmp_path, '{"id": "x",\n "title": }', "x.json") == (
        "F: line 2, column 11: invalid JSON: Expecting value."
    )


def test_empty_file_and_wrong_top_level(tmp_path: Path) -> None:
    hint = "See scenarios/README.md for the format."
    assert error_of(tmp_path, "") == f"F: the file is empty. {hint}"
    assert error_of(tmp_path, "- a\n- b\n") == (
        f"F: the top level must be a mapping of fields (id, title, roles, ...), not list. {hint}"
    )


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"id: caf\xe9\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}: not UTF-8 (byte 7). Save the file as UTF-8."


# --- finding files -------------------------------------------------------------------------------


def test_unknown_id_lists_the_available_ones() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("no-such-case")
    message = str(info.value)
    assert message.startswith("No scenario 'no-such-case' in scenarios/ (available: ")
    for sid in SHIPPED:
        assert sid in message
    assert message.endswith("Pass an id from that list or a path to a .yaml/.yml/.json file.")


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "missing.yaml")
    assert str(info.value) == f"{tmp_path / 'missing.yaml'}: no such file."
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "notes.txt")
    assert str(info.value) == (
        f"{tmp_path / 'notes.txt'}: not a scenario file; use a .yaml, .yml or .json file."
    )


def test_scenario_dir_ids_must_match_file_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scenario_mod, "SCENARIO_DIR", tmp_path)
    write(tmp_path, base(), "x.yaml")
    write(tmp_path, broken(lambda d: d.update(id="y")), "z.yml")
    assert load_scenario("x").id == "x"
    with pytest.raises(ScenarioError) as info:
        list_scenarios()
    path = tmp_path / "z.yml"
    assert str(info.value) == (
        f"{path}: id: 'y' must match the file name 'z', so that load_scenario('y') finds it"
    )
    # Outside the scenario folder any file name is fine.
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    assert load_scenario(write(elsewhere, broken(lambda d: d.update(id="y")), "z.yml")).id == "y"


def test_one_id_in_two_formats_is_ambiguous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scenario_mod, "SCENARIO_DIR", tmp_path)
    write(tmp_path, base(), "x.yaml")
    write(tmp_path, base(), "x.json")
    with pytest.raises(ScenarioError) as info:
        load_scenario("x")
    assert str(info.value) == (
        f"Scenario 'x' is ambiguous: {tmp_path / 'x.json'}, {tmp_path / 'x.yaml'}. "
        "Keep one file per id, or pass the path you mean."
    )


def test_a_broken_shipped_file_fails_the_listing_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scenario_mod, "SCENARIO_DIR", tmp_path)
    write(tmp_path, base(), "x.yaml")
    write(tmp_path, broken(lambda d: (d.update(id="w"), d.update(summry="typo"))), "w.yaml")
    with pytest.raises(ScenarioError, match=r"w\.yaml: summry: unknown field"):
        list_scenarios()
