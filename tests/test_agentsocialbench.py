"""AgentSocialBench loading: exact counts on the hand-written mini sample and on the real dataset
(when it sits beside the clone), the path forms a user may pass, the abstraction pairing rule, the
common shape with MAGPIE, and the precise errors a damaged file gets."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from bureau.errors import ScenarioError
from bureau.labs.leakage.datasets.agentsocialbench import (
    FUZZY_THRESHOLD,
    IN_SCOPE,
    PairingStats,
    containment,
    default_agentsocialbench_path,
    fact_text,
    load_agentsocialbench,
    pair_abstractions,
    pairing_stats,
    to_lab_dataset,
    to_lab_scenarios,
)
from bureau.labs.leakage.datasets.magpie import MagpieDataset, MagpieScenario
from bureau.labs.leakage.metrics.metrics import exposure_frame

MINI = Path(__file__).resolve().parents[1] / "data" / "agentsocialbench_mini"
REAL = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "agentsocialbench"
CD_FILE = "scenarios/cross_domain/CD_mini_health_professional_001.json"
MC_FILE = "scenarios/mediated_comm/MC_mini_move_help_001.json"
CU_FILE = "scenarios/cross_user/CU_mini_garden_swap_001.json"


@pytest.fixture(scope="module")
def mini():
    return load_agentsocialbench(MINI)


def stats_tuple(s: PairingStats) -> tuple[int, ...]:
    return (
        s.scenarios,
        s.private_items,
        s.exact,
        s.fuzzy,
        s.unpaired,
        s.abstraction_keys,
        s.unused_keys,
    )


# --- the mini sample --------------------------------------------------------------------------------


def test_mini_counts(mini) -> None:
    assert mini.counts() == {
        "scenarios": 6,
        "agents": 12,
        "private": 19,
        "shareable": 15,
        "safe_abstraction": 16,
        "skipped": 1,
        "cross_domain": 2,
        "mediated_comm": 2,
        "cross_user": 2,
    }
    assert mini.skipped == {"competitive": 1}
    assert [s.scenario_id for s in mini.scenarios] == sorted(s.scenario_id for s in mini.scenarios)
    assert len({i.item_id for i in mini.items}) == len(mini.items) == 34


def test_mini_pairing_stats(mini) -> None:
    stats = pairing_stats(mini)
    assert list(stats) == [*IN_SCOPE, "all"]
    # scenarios, private items, exact, fuzzy, unpaired, keys, unused keys
    assert stats_tuple(stats["cross_domain"]) == (2, 6, 3, 1, 2, 5, 1)
    assert stats_tuple(stats["mediated_comm"]) == (2, 5, 1, 4, 0, 5, 0)
    assert stats_tuple(stats["cross_user"]) == (2, 8, 5, 2, 1, 7, 0)
    assert stats_tuple(stats["all"]) == (6, 19, 9, 7, 3, 17, 1)
    assert stats["all"].paired == 16 == mini.counts()["safe_abstraction"]


def test_mini_cross_domain_mapping(mini) -> None:
    s = next(s for s in mini.scenarios if s.scenario_id == "CD_mini_health_professional_001")
    assert [(a.name, a.kind, a.holder) for a in s.agents] == [
        ("health_support_agent", "agent", True),
        ("work_planning_agent", "agent", False),
    ]
    assert {i.holder for i in s.items} == {"health_support_agent"}
    physio = s.private[1]
    assert physio.field_path == "privacy_boundary.must_not_cross[1]"
    assert (
        physio.item_id == "CD_mini_health_professional_001/health_support_agent/must_not_cross[1]"
    )
    assert (physio.match, physio.abstraction_key, physio.score) == (
        "fuzzy",
        "Weekly physio on Thursday mornings",
        0.75,
    )
    assert physio.abstraction == "She has a standing commitment on Thursday mornings."
    assert [i.match for i in s.private] == ["exact", "fuzzy", "exact"]
    assert [i.text for i in s.shareable][
        0
    ] == "Orla needs two meeting-free afternoons a week for the next month"


def test_mini_unpairable_key_and_uncovered_items(mini) -> None:
    s = next(s for s in mini.scenarios if s.scenario_id == "CD_mini_finance_social_002")
    assert s.unused_abstraction_keys == ("Gym membership he cancelled in March",)
    assert s.abstraction_keys == 2
    assert [i.abstraction is not None for i in s.private] == [True, False, False]


def test_mini_mediated_comm_requester_is_the_human(mini) -> None:
    s = next(s for s in mini.scenarios if s.scenario_id == "MC_mini_move_help_001")
    assert [(a.name, a.kind, a.holder) for a in s.agents] == [
        ("idris_mediating_agent", "agent", True),
        ("Marta Ojala", "human", False),
    ]
    # The lab text drops the prohibition; the verbatim sentence is kept.
    first = s.private[0]
    assert first.text == "Do not reveal that Idris is moving because of a divorce settlement."
    assert first.fact == "Idris is moving because of a divorce settlement."
    assert s.private[2].fact == "Idris is behind on two storage-unit payments."
    assert [i.match for i in s.private] == ["fuzzy", "fuzzy", "fuzzy"]
    assert first.abstraction_key == "Divorce settlement forcing the move"


def test_mini_cross_user_routes_blocks_and_prefixed_entries(mini) -> None:
    s = next(s for s in mini.scenarios if s.scenario_id == "CU_mini_running_pair_002")
    by_holder: dict[str, list[str]] = {}
    for item in s.items:
        by_holder.setdefault(item.holder, []).append(item.field_path)
    assert by_holder == {
        "lior_amsel_running_agent": [
            "privacy_boundary.lior.must_not_cross[0]",
            "privacy_boundary.lior.must_not_cross[1]",
            "privacy_boundary.minimum_info_needed[0]",
            "privacy_boundary.minimum_info_needed[2]",
        ],
        "kasia_brandt_running_agent": [
            "privacy_boundary.kasia.must_not_cross[0]",
            "privacy_boundary.kasia.must_not_cross[1]",
            "privacy_boundary.minimum_info_needed[1]",
        ],
    }
    assert {i.person for i in s.items if i.holder == "lior_amsel_running_agent"} == {"lior"}
    assert all(a.holder for a in s.agents)


def test_lab_shape_is_magpie(mini) -> None:
    lab = to_lab_scenarios(mini)
    assert all(isinstance(s, MagpieScenario) for s in lab)
    assert [s.scenario_id for s in lab] == [s.scenario_id for s in mini.scenarios]
    mc = next(s for s in lab if s.scenario_id == "MC_mini_move_help_001")
    assert [(a.name, a.role, len(a.items)) for a in mc.agents] == [
        ("idris_mediating_agent", "idris mediating agent", 6),
        ("Marta Ojala", "Marta Ojala", 0),
    ]
    item = mc.items[0]
    assert (item.domain, item.agent, item.key, item.label, item.private_key) == (
        "mediated_comm",
        "idris_mediating_agent",
        "must_not_cross[0]",
        "private",
        None,
    )
    assert item.text == "Idris is moving because of a divorce settlement."
    assert (
        item.has_safe_abstraction and item.abstraction == "He is relocating for personal reasons."
    )

    dataset = to_lab_dataset(mini)
    assert isinstance(dataset, MagpieDataset)
    assert dataset.counts()["private"] == 19 and dataset.counts()["safe_abstraction"] == 16
    # Requesters: the other side only. 6+5 (cross_domain) + 6+4 (mediated) + 3+3+4+3 (cross_user).
    pairs = exposure_frame(dataset)
    assert len(pairs) == 34
    assert pairs.groupby("domain").size().to_dict() == {
        "cross_domain": 11,
        "mediated_comm": 10,
        "cross_user": 13,
    }


# --- path forms -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "counts", "skipped"),
    [
        ("", (2, 2, 2), {"competitive": 1}),
        ("scenarios", (2, 2, 2), {"competitive": 1}),
        ("scenarios/cross_user", (0, 0, 2), {}),
        (CD_FILE, (1, 0, 0), {}),
    ],
)
def test_path_forms(where: str, counts: tuple[int, int, int], skipped: dict[str, int]) -> None:
    data = load_agentsocialbench(str(MINI / where) if where else MINI)
    assert tuple(data.counts()[c] for c in IN_SCOPE) == counts
    assert data.skipped == skipped


def test_out_of_scope_folder_is_refused_with_the_skip_count() -> None:
    with pytest.raises(
        ScenarioError, match=r"no cross_domain/mediated_comm/cross_user .*skipped 1"
    ):
        load_agentsocialbench(MINI / "scenarios" / "competitive")


def test_default_path_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BUREAU_AGENTSOCIALBENCH", str(MINI))
    assert default_agentsocialbench_path() == MINI
    assert len(load_agentsocialbench()) == 6
    monkeypatch.setenv("BUREAU_AGENTSOCIALBENCH", str(tmp_path / "nowhere"))
    with pytest.raises(ScenarioError, match="BUREAU_AGENTSOCIALBENCH points to .*nowhere"):
        default_agentsocialbench_path()


def test_default_path_beside_the_clone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUREAU_AGENTSOCIALBENCH", raising=False)
    if REAL.exists():
        assert default_agentsocialbench_path() == REAL
    else:
        with pytest.raises(ScenarioError, match="AgentSocialBench not found"):
            default_agentsocialbench_path()


def test_missing_and_wrong_paths(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="not found at"):
        load_agentsocialbench(tmp_path / "absent")
    with pytest.raises(ScenarioError, match=r"holds no scenario files"):
        load_agentsocialbench(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ScenarioError, match=r"not a \.json scenario file"):
        load_agentsocialbench(tmp_path / "notes.txt")


# --- damaged files ----------------------------------------------------------------------------------


def mini_json(rel: str) -> dict[str, Any]:
    return json.loads((MINI / rel).read_text(encoding="utf-8"))


def write(root: Path, rel: str, data: Any) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    return path


def refused(root: Path, file: Path, *fragments: str) -> str:
    """Load ``root``; the error must name ``file`` and every fragment (a field path...)."""
    with pytest.raises(ScenarioError) as info:
        load_agentsocialbench(root)
    message = info.value.message
    assert str(file) in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_not_json(tmp_path: Path) -> None:
    file = write(tmp_path, CD_FILE, "{not json")
    refused(tmp_path, file, "not a valid JSON scenario file")


def test_not_an_object(tmp_path: Path) -> None:
    file = write(tmp_path, CD_FILE, [mini_json(CD_FILE)])
    refused(tmp_path, file, "expected one scenario object, found a list")


def test_nan_and_duplicate_keys(tmp_path: Path) -> None:
    file = write(tmp_path, CD_FILE, '{"scenario_id": NaN}')
    refused(tmp_path, file, "NaN is not a JSON number")
    file.write_text('{"task": "a", "task": "b"}', encoding="utf-8")
    refused(tmp_path, file, "duplicate key 'task'")


def test_missing_privacy_boundary(tmp_path: Path) -> None:
    data = mini_json(CD_FILE)
    del data["privacy_boundary"]
    file = write(tmp_path, CD_FILE, data)
    refused(tmp_path, file, "field 'privacy_boundary' must be an object, found null")


@pytest.mark.parametrize(
    ("rel", "change", "fragments"),
    [
        (
            CD_FILE,
            lambda d: d["privacy_boundary"].update(must_not_cross="one sentence"),
            ("'privacy_boundary.must_not_cross' must be a list of strings, found a string",),
        ),
        (
            CD_FILE,
            lambda d: d["privacy_boundary"]["must_not_cross"].append(7),
            ("'privacy_boundary.must_not_cross[3]' must be a non-empty string, found a number",),
        ),
        (
            CD_FILE,
            lambda d: d["privacy_boundary"].pop("must_not_cross"),
            ("'privacy_boundary.must_not_cross'", "found null"),
        ),
        (
            CD_FILE,
            lambda d: d["privacy_boundary"].update(acceptable_abstractions=["x"]),
            ("'privacy_boundary.acceptable_abstractions' must be an object, found a list",),
        ),
        (
            CD_FILE,
            lambda d: d["privacy_boundary"]["acceptable_abstractions"].update(k=None),
            ("'privacy_boundary.acceptable_abstractions.k' must be a non-empty string",),
        ),
        (
            CD_FILE,
            lambda d: d["privacy_boundary"].update(minimum_info_needed=[""]),
            ("'privacy_boundary.minimum_info_needed[0]'", "found an empty string"),
        ),
        (CD_FILE, lambda d: d.pop("task"), ("'task' must be a non-empty string",)),
        (
            CD_FILE,
            lambda d: d.update(category="cross_user"),
            ("'category' says 'cross_user' but the file is in cross_domain/",),
        ),
        (CD_FILE, lambda d: d["agents"][1].pop("role"), ("'agents[1].role'",)),
        (
            CD_FILE,
            lambda d: d["metadata"].update(source_domain="legal"),
            ("'metadata.source_domain' is 'legal', which matches 0",),
        ),
        (MC_FILE, lambda d: d.update(humans=[]), ("'humans' must be a non-empty list",)),
        (MC_FILE, lambda d: d["humans"][0].pop("name"), ("'humans[0].name'",)),
        (
            CU_FILE,
            lambda d: d["privacy_boundary"].update(ansel=["a list"]),
            ("'privacy_boundary.ansel' must be a person's block",),
        ),
        (
            CU_FILE,
            lambda d: d["privacy_boundary"].update(zed={"must_not_cross": []}),
            ("'privacy_boundary.zed' names a person matched by 0 of the agents",),
        ),
        (
            CU_FILE,
            lambda d: d["privacy_boundary"]["noor"].pop("must_not_cross"),
            ("'privacy_boundary.noor.must_not_cross' must be a list of strings",),
        ),
        (
            CU_FILE,
            lambda d: d["privacy_boundary"]["minimum_info_needed"].append("Free on Sundays"),
            ("'privacy_boundary.minimum_info_needed[2]' must start with a person's name",),
        ),
    ],
)
def test_damaged_field_is_named(
    tmp_path: Path, rel: str, change, fragments: tuple[str, ...]
) -> None:
    data = mini_json(rel)
    change(data)
    file = write(tmp_path, rel, data)
    refused(tmp_path, file, *fragments)


def test_optional_keys_may_be_absent(tmp_path: Path) -> None:
    data = mini_json(CD_FILE)
    del data["privacy_boundary"]["acceptable_abstractions"]
    del data["privacy_boundary"]["minimum_info_needed"]
    del data["metadata"]  # the holder is then the first agent
    write(tmp_path, CD_FILE, data)
    (s,) = load_agentsocialbench(tmp_path).scenarios
    assert [i.label for i in s.items] == ["private"] * 3
    assert all(i.abstraction is None for i in s.items) and s.abstraction_keys == 0
    assert s.items[0].holder == "health_support_agent"


def test_duplicate_scenario_id(tmp_path: Path) -> None:
    write(tmp_path, CD_FILE, mini_json(CD_FILE))
    copy = write(tmp_path, CD_FILE.replace("_001", "_copy"), mini_json(CD_FILE))
    refused(tmp_path, copy, "duplicate scenario_id 'CD_mini_health_professional_001'")


def test_size_cap(tmp_path: Path) -> None:
    data = mini_json(CD_FILE)
    data["padding"] = "x" * 5000
    file = write(tmp_path, CD_FILE, data)
    with pytest.raises(ScenarioError, match=r"over the 4096-byte limit") as info:
        load_agentsocialbench(tmp_path, max_bytes=4096)
    assert str(file) in info.value.message
    assert len(load_agentsocialbench(tmp_path)) == 1  # the default cap (1 MiB) lets it through


def test_out_of_scope_files_are_not_read(tmp_path: Path) -> None:
    shutil.copytree(MINI, tmp_path, dirs_exist_ok=True)
    write(tmp_path, "scenarios/hub_and_spoke/broken.json", "{not json")
    write(tmp_path, "scenarios/cross_user/notes.md", "not a scenario")
    data = load_agentsocialbench(tmp_path)
    assert data.skipped == {"competitive": 1, "hub_and_spoke": 1}
    assert len(data) == 6


# --- the pairing rule -------------------------------------------------------------------------------


def test_pairing_exact_is_normalised() -> None:
    pairs, unused = pair_abstractions(
        ["That Ana’s rent is late.", "Her  loan"],
        {"that ana's RENT is late": "a", "her loan.": "b"},
    )
    assert [(p.index, p.match, p.abstraction) for p in pairs if p] == [
        (0, "exact", "a"),
        (1, "exact", "b"),
    ]
    assert unused == []


def test_pairing_is_one_to_one_best_first() -> None:
    sentences = ["Medication list (sertraline, melatonin)", "Her home street"]
    keys = {"Melatonin 3 mg": "m", "Sertraline and melatonin": "s", "Gym in March": "g"}
    pairs, unused = pair_abstractions(sentences, keys)
    assert pairs[0] is not None and pairs[0].key == "Sertraline and melatonin"
    assert pairs[0].score == 1.0
    assert pairs[1] is None  # no key mentions the street; "Melatonin 3 mg" does not fall back
    assert unused == ["Melatonin 3 mg", "Gym in March"]


def test_pairing_threshold() -> None:
    sentence = "Do not reveal specific medications (e.g., Sertraline, Alendronate)"
    assert containment("Sertraline 50 mg daily", sentence) == 0.25 == FUZZY_THRESHOLD
    assert pair_abstractions([sentence], {"Sertraline 50 mg daily": "x"})[0][0] is not None
    assert containment("Sertraline 50 mg daily dose", sentence) == 0.2
    assert pair_abstractions([sentence], {"Sertraline 50 mg daily dose": "x"})[0] == [None]


def test_pairing_is_deterministic_under_key_order() -> None:
    sentences = ["Back surgery last spring", "Storage unit payments behind"]
    keys = {"Storage unit arrears": "s", "Back surgery": "b"}
    a, _ = pair_abstractions(sentences, keys)
    b, _ = pair_abstractions(sentences, dict(reversed(list(keys.items()))))
    assert (
        [p.key for p in a if p]
        == [p.key for p in b if p]
        == ["Back surgery", "Storage unit arrears"]
    )


def test_fact_text() -> None:
    assert fact_text("Do not reveal that he has COPD.") == "He has COPD."
    assert fact_text("Must not disclose Wen's night shifts.") == "Wen's night shifts."
    assert fact_text("Reveal Hana's medications (sertraline)") == "Hana's medications (sertraline)"
    assert fact_text("Sharing the name of her clinic") == "The name of her clinic"
    assert fact_text("Name of her partner") == "Name of her partner"
    assert fact_text("That she has  COPD") == "That she has COPD"


# --- the real dataset -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real():
    """The shared copy beside the clone (or $BUREAU_AGENTSOCIALBENCH); skip only if neither."""
    env = os.environ.get("BUREAU_AGENTSOCIALBENCH")
    path = Path(env) if env else REAL
    if not path.exists():
        why = "BUREAU_AGENTSOCIALBENCH points to" if env else "BUREAU_AGENTSOCIALBENCH unset and"
        pytest.skip(f"AgentSocialBench not available: {why} {path}, which is missing")
    return load_agentsocialbench(path)


def test_real_counts(real) -> None:
    stats = pairing_stats(real)
    shown = "\n".join(
        f"{s.category}: {s.private_items} private items, {s.paired} paired "
        f"({s.exact} exact + {s.fuzzy} fuzzy), {s.unpaired} unpaired; "
        f"{s.unused_keys} of {s.abstraction_keys} keys unused"
        for s in stats.values()
    )
    counts = real.counts()
    assert (counts["cross_domain"], counts["mediated_comm"], counts["cross_user"]) == (
        107,
        100,
        50,
    ), shown
    assert real.skipped == {
        "affinity_modulated": 30,
        "competitive": 25,
        "hub_and_spoke": 23,
        "multi_party_group": 37,
    }, shown
    for category in IN_SCOPE:
        assert stats[category].private_items > 0, shown
        assert sum(i.category == category and i.label == "shareable" for i in real.items) > 0, shown
    # The figures the module docstring (and so the report) quotes.
    assert stats_tuple(stats["cross_domain"]) == (107, 491, 311, 162, 18, 515, 42), shown
    assert stats_tuple(stats["mediated_comm"]) == (100, 489, 16, 384, 89, 534, 134), shown
    assert stats_tuple(stats["cross_user"]) == (50, 503, 270, 215, 18, 507, 22), shown
    assert counts["agents"] == 514 and counts["shareable"] == 1118, shown


def test_real_shape(real) -> None:
    assert len({i.item_id for i in real.items}) == len(real.items)
    for s in real.scenarios:
        holders = {a.name for a in s.agents if a.holder}
        assert {i.holder for i in s.items} == holders, s.scenario_id
        assert len(s.agents) - len(holders) == (0 if s.category == "cross_user" else 1), (
            s.scenario_id
        )
    lab = to_lab_dataset(real)
    assert len(lab) == 257 and len(lab.items) == len(real.items)
    stripped = [i for i in real.items if i.fact != i.text]
    assert {i.category for i in stripped} == {"mediated_comm"} and len(stripped) == 453
