"""MAGPIE loading: exact counts on the real benchmark, the hand-written mini set, the JSON form,
and the errors a user sees when the data is missing or broken."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from bureau.errors import ScenarioError
from bureau.labs.leakage.datasets.magpie import (
    default_magpie_path,
    domain_of,
    item_text,
    load_magpie,
    safe_abstraction,
)

MINI = Path(__file__).resolve().parents[1] / "data" / "magpie_mini"


@pytest.fixture(scope="module")
def magpie_path() -> Path:
    """The shared MAGPIE copy beside the clone (or $BUREAU_MAGPIE); skip only if neither exists."""
    env = os.environ.get("BUREAU_MAGPIE")
    if env:
        return Path(env)
    path = Path(__file__).resolve().parents[2] / "shared/datasets/magpie"
    if not path.exists():
        pytest.skip(f"MAGPIE not available: BUREAU_MAGPIE unset and {path} missing")
    return path


@pytest.fixture(scope="module")
def magpie(magpie_path: Path):
    return load_magpie(magpie_path)


# --- the real benchmark ---------------------------------------------------------------------------


def test_real_counts_match_the_paper(magpie) -> None:
    assert magpie.counts() == {
        "scenarios": 200,
        "agents": 1038,
        "shareable": 2320,
        "private": 1478,
        "private_preferences": 1456,
        "private_information": 22,
        "safe_abstraction": 64,
        "safe_abstraction_private_preferences": 63,
        "safe_abstraction_private_information": 1,
    }


def test_real_frame_shape_and_ids(magpie) -> None:
    df = magpie.to_frame()
    assert len(df) == 2320 + 1478
    assert df["item_id"].is_unique
    assert df["domain"].nunique() == 93
    assert set(df["label"]) == {"shareable", "private"}
    assert df.loc[df["label"] == "shareable", "private_key"].isna().all()
    assert set(df.loc[df["label"] == "private", "private_key"]) == {
        "private_preferences",
        "private_information",
    }
    assert df.loc[~df["has_safe_abstraction"], "abstraction"].isna().all()
    assert df.loc[df["has_safe_abstraction"], "label"].eq("private").all()
    assert sorted(df.loc[df["private_key"] == "private_information", "scenario_id"].unique()) == [
        "carbon_trading_3",
        "inheritance_3",
        "intellectual_property_1",
        "writing_1",
    ]


def test_real_scenario_and_item(magpie) -> None:
    first = magpie.scenarios[0]
    assert (first.scenario_id, first.domain, len(first.agents), len(first.items)) == (
        "academic_1",
        "academic",
        5,
        17,
    )
    by_id = {i.item_id: i for i in magpie.items}
    item = by_id["timeline_1/Priya Sharma/qa_team_attrition_risk"]
    assert item.label == "private" and item.domain == "timeline"
    assert item.text.startswith("qa team attrition risk: ")
    assert item.abstraction == "team morale issues"
    assert by_id["timeline_1/Ben Carter/board_of_directors_pressure"].abstraction == (
        "upper management pressure"
    )
    # a pronoun hint takes the quoted phrase after it
    assert by_id["crowdfunding_3/David Rossi/Private Anti-Exclusivity Poll Data"].abstraction == (
        "the vast majority of the core community would leave"
    )


def test_real_tsv_file_and_directory_agree(magpie, magpie_path: Path) -> None:
    tsv = magpie_path / "magpie.tsv" if magpie_path.is_dir() else magpie_path
    assert load_magpie(tsv).counts() == magpie.counts()


# --- the rule on its own --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "She can hint at 'team morale' (penalty: -0.5), but revealing names costs (penalty: -2).",
            "team morale",
        ),
        (
            "Penalty for revealing the figure: -2. Penalty for hinting at 'tight budgets': -1.",
            "tight budgets",
        ),
        (
            "Sharing the survey. Penalty: -4. Hinting that 'our models look good'. Penalty: -1.",
            "our models look good",
        ),
        (
            "He may hint that the plan is 'ambitious' (-0.5 penalty); naming the buyer is -2 penalty.",
            "the plan is 'ambitious'",
        ),
        (
            "Penalty for hinting at budget cuts is -1, penalty for revealing the memo is -2.",
            "budget cuts",
        ),
        # one penalty only, or the hint has none of its own: not a gradation
        ("He can hint at 'other options' but cannot reveal the offer (penalty: -2).", None),
        ("She can hint at 'delays'. Nothing else may be said.", None),
        ("Any hint of a sale would cause a frenzy. Penalty for revealing: -2.", None),
        ("Penalty for strongly alluding to it: -1. Penalty for naming the source: -2.", None),
    ],
)
def test_safe_abstraction_rule(body: str, expected: str | None) -> None:
    assert safe_abstraction(body) == expected


def test_item_text_and_domain() -> None:
    assert item_text("launch_timeline", "  Ship in\nMay. ") == "launch timeline: Ship in May."
    assert domain_of("timeline_1") == "timeline"
    assert domain_of("medical_collaboration_12") == "medical_collaboration"
    assert domain_of("standalone") == "standalone"


# --- the mini set ---------------------------------------------------------------------------------


def test_mini_counts() -> None:
    data = load_magpie(MINI)
    assert data.counts() == {
        "scenarios": 3,
        "agents": 9,
        "shareable": 13,
        "private": 10,
        "private_preferences": 8,
        "private_information": 2,
        "safe_abstraction": 3,
        "safe_abstraction_private_preferences": 3,
        "safe_abstraction_private_information": 0,
    }
    assert [s.scenario_id for s in data.scenarios] == [
        "bakery_1",
        "choir_tour_2",
        "community_garden_1",
    ]
    hints = {i.key: i.abstraction for i in data.items if i.has_safe_abstraction}
    assert hints == {
        "wrist_injury": "needing lighter prep shifts",
        "eviction_notice": "a possible move next year",
        "sponsor_withdrawal": "sponsorship uncertainty",
    }
    rosa = data.scenarios[0].agents[0]
    assert (rosa.name, rosa.role) == ("Rosa Alvarez", "Head Baker")
    assert [i.key for i in rosa.shareable] == ["oven_schedule", "signature_item"]
    assert [i.key for i in rosa.private] == ["wrist_injury"]


# --- the JSON form --------------------------------------------------------------------------------


def _tsv_rows(path: Path, n: int) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))[:n]


def test_json_directory_matches_tsv(tmp_path: Path) -> None:
    rows = _tsv_rows(MINI / "magpie.tsv", 2)
    for row in rows:
        scenario = dict(row)
        for column in ("agent_names", "agents", "success_criteria", "constraints"):
            scenario[column] = json.loads(row[column])  # real JSON, not JSON strings
        (tmp_path / f"{row['file_name']}.json").write_text(json.dumps(scenario), encoding="utf-8")
    from_json = load_magpie(tmp_path)
    from_tsv = load_magpie(MINI)
    assert [s.scenario_id for s in from_json.scenarios] == ["bakery_1", "community_garden_1"]
    wanted = {s.scenario_id for s in from_json.scenarios}
    assert list(from_json.items) == [i for i in from_tsv.items if i.scenario_id in wanted]


def test_json_file_with_string_columns(tmp_path: Path) -> None:
    rows = _tsv_rows(MINI / "magpie.tsv", 2)  # JSON columns left as JSON-encoded strings
    file = tmp_path / "two.json"
    file.write_text(json.dumps(rows), encoding="utf-8")
    assert load_magpie(file).counts()["agents"] == 6


# --- errors ---------------------------------------------------------------------------------------


def test_missing_path_names_it_and_says_where_to_get_data(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "magpie.tsv"
    with pytest.raises(ScenarioError) as err:
        load_magpie(missing)
    assert str(missing) in str(err.value)
    assert "gurusha01/magpie" in str(err.value)


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="neither magpie.tsv nor"):
        load_magpie(tmp_path)


def test_malformed_inputs(tmp_path: Path) -> None:
    bad_tsv = tmp_path / "bad.tsv"
    bad_tsv.write_text("a\tb\n1\t2\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="missing column"):
        load_magpie(bad_tsv)

    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json", encoding="utf-8")
    with pytest.raises(ScenarioError, match="not valid JSON"):
        load_magpie(bad_json)

    agent = {"name": "A", "shareable_preferences": {}, "private_preferences": {"k": {"v": 1}}}
    no_value = tmp_path / "no_value.json"
    no_value.write_text(json.dumps({"file_name": "x_1", "task": "t", "agents": [agent]}))
    with pytest.raises(ScenarioError, match=r"private_preferences\.k needs a text 'value'"):
        load_magpie(no_value)

    both = {**agent, "private_information": {}}
    two_keys = tmp_path / "two_keys.json"
    two_keys.write_text(json.dumps({"file_name": "x_1", "task": "t", "agents": [both]}))
    with pytest.raises(ScenarioError, match="exactly one of"):
        load_magpie(two_keys)


def test_default_path_env_var(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BUREAU_MAGPIE", str(tmp_path / "gone.tsv"))
    with pytest.raises(ScenarioError, match="BUREAU_MAGPIE points to"):
        default_magpie_path()
    monkeypatch.setenv("BUREAU_MAGPIE", str(MINI / "magpie.tsv"))
    assert default_magpie_path() == MINI / "magpie.tsv"
    assert load_magpie().counts()["scenarios"] == 3


def test_default_path_beside_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUREAU_MAGPIE", raising=False)
    sibling = Path(__file__).resolve().parents[2] / "shared/datasets/magpie/magpie.tsv"
    if sibling.exists():
        assert default_magpie_path() == sibling
    else:
        with pytest.raises(ScenarioError, match="BUREAU_MAGPIE is unset"):
            default_magpie_path()
