"""The leakage lab on real storage (embedded seekdb through the Bureau) and the real MiniLM.

* fast: the MAGPIE -> Bureau mapping, the query definition, the mini set end to end in this
  process, a hand-built lab set (no MAGPIE object: what a second benchmark's converter would hand
  the runner), and ``python -m bureau.leakage`` on the mini set in a subprocess with its own
  store;
* full MAGPIE (marked ``slow``, skipped only when the data is absent): policies b-d leak no
  private item to any requester, checked by id, by card body and by scope; the shared pool does
  leak; publishing gives recall; the relevance AUROC equals an independent computation.

The full run uses this process's one Bureau (conftest) and keeps its 200 cases: they live in the
temporary test data directory, and deleting ~6,000 cards would cost as long as writing them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, magpie_path
from sklearn.metrics import roc_auc_score

from bureau.embedding import MiniLMEncoder, shared_minilm
from bureau.leakage.__main__ import main
from bureau.leakage.convert import query_text, role_names, slug, to_bureau_scenario, to_lab
from bureau.leakage.labset import LabAgent, LabItem, LabScenario, LabSet
from bureau.leakage.magpie import MagpieScenario, load_magpie, subset
from bureau.leakage.policies import BUREAU_POLICIES, POLICIES
from bureau.leakage.report import relevance, summarize
from bureau.leakage.runner import (
    REQUEST_COLUMNS,
    RETRIEVAL_COLUMNS,
    lab_texts,
    leaked_contents,
    run_lab,
)
from bureau.model import BOARD
from bureau.scenario import parse_scenario
from bureau.text import MAX_QUESTION_CHARS

MINI = REPO / "data" / "magpie_mini"


def my_query(scenario: MagpieScenario, agent) -> str:
    """The documented query definition, written out again (not imported) for the checks."""
    role = " ".join(agent.role.split()) or agent.name
    text = " ".join(f"{role}: {scenario.task}".split())
    if len(text) > 500:
        cut = text[:501]
        text = cut[: cut.rfind(" ")].rstrip()
    return text


# --- mapping and query: no storage ----------------------------------------------------------------


def test_slugs_and_role_names():
    assert slug("Dr. Eleanor Vance", "x") == "dr_eleanor_vance"
    assert slug("Katrin Jónsdóttir", "x") == "katrin_jonsdottir"
    assert slug("42 Bots", "agent_1") == "agent_1"
    assert len(slug("A" * 80, "x")) == 32
    scenario = load_magpie(MINI).scenarios[0]
    agents = (
        scenario.agents[0].__class__(name="Board", role="r", description="", items=()),
        scenario.agents[0].__class__(name="board", role="r", description="", items=()),
    )
    fake = MagpieScenario("s_1", "s", "t", agents, ())
    assert list(role_names(fake).values()) == ["board_agent", "board_agent_2"]


def test_mini_scenario_becomes_a_case_file():
    data = load_magpie(MINI)
    for scenario in data.scenarios:
        bs = to_bureau_scenario(scenario)
        roles = role_names(scenario)
        assert bs.role_names == [roles[a.name] for a in scenario.agents]
        seeds = list(bs.seeds())
        assert [m.content for _, m in seeds] == [i.text for i in scenario.items]
        assert [m.kind for _, m in seeds] == [i.label for i in scenario.items]
        assert [owner for owner, _ in seeds] == [roles[i.agent] for i in scenario.items]


def test_query_definition():
    data = load_magpie(MINI)
    for s in data.scenarios:
        for a in s.agents:
            assert query_text(s, a) == my_query(s, a) == f"{a.role}: {' '.join(s.task.split())}"
    s = data.scenarios[0]
    long = MagpieScenario(s.scenario_id, s.domain, "word " * 300, s.agents, s.items)
    q = query_text(long, s.agents[0])
    assert len(q) <= MAX_QUESTION_CHARS and q.endswith("word") and q == my_query(long, s.agents[0])


def test_subset_spreads_over_the_ids():
    data = load_magpie(MINI)
    assert subset(data, None) is data
    assert data.source_scenarios is None and not to_lab(data).is_subset
    two = subset(data, 2)
    assert [s.scenario_id for s in two.scenarios] == [data.scenarios[0].scenario_id,
                                                      data.scenarios[-1].scenario_id]
    assert len(two.items) == len(two.scenarios[0].items) + len(two.scenarios[1].items)
    assert two.source_scenarios == 3 and subset(two, 1).source_scenarios == 3
    assert to_lab(two).is_subset


def test_mini_lab_set_keeps_items_queries_and_seed_keys():
    data = load_magpie(MINI)
    lab = to_lab(data)
    assert lab.counts == data.counts() and lab.dataset is data and len(lab) == len(data)
    assert [i.item_id for i in lab.items] == [i.item_id for i in data.items]
    for s, ls in zip(data.scenarios, lab.scenarios, strict=True):
        assert [a.query for a in ls.agents] == [my_query(s, a) for a in s.agents]
        assert not any(a.query_cut for a in ls.agents)
        for item in ls.items:  # the seed memory called seed_key holds the item, for its owner
            owner, memory = ls.scenario.seed(item.seed_key)
            assert (owner, memory.content, memory.kind) == (ls.role_of(item.owner), item.text,
                                                            item.label)


def test_every_magpie_scenario_maps_to_a_valid_case():
    path = magpie_path()
    if path is None:
        pytest.skip("MAGPIE not available")
    for scenario in load_magpie(path).scenarios:
        bs = to_bureau_scenario(scenario)  # validated like a scenario file
        assert len(list(bs.seeds())) == len(scenario.items)


# --- the mini set, in this process ----------------------------------------------------------------


@pytest.fixture(scope="module")
def mini(bureau):
    return run_lab(bureau, load_magpie(MINI), k=5, cleanup=True)


def test_mini_shared_pool_is_top_k_by_cosine(mini):
    """Policy a recomputed by hand from the encoder's vectors: top-5 of each requester's pool."""
    enc = shared_minilm()
    for s in mini.dataset.scenarios:
        items = list(s.items)
        vecs = enc.embed([i.text for i in items])
        for a in s.agents:
            cos = vecs @ enc.embed([my_query(s, a)])[0]
            top = {items[j].item_id for j in np.argsort(-cos, kind="stable")[:5]}
            got = mini.retrievals.query(
                "policy == 'a_shared_pool' and scenario_id == @s.scenario_id "
                "and requester == @a.name"
            )
            assert set(got["item_id"]) == top


def test_mini_bureau_policies(mini):
    summary = summarize(mini).set_index("policy")
    for policy in BUREAU_POLICIES:
        assert summary.loc[policy, "leaked_pairs"] == 0
        assert summary.loc[policy, "content_leaks"] == 0
    assert summary.loc["b_bureau_closed", "shareable_recall"] == 0
    assert summary.loc["c_bureau_published", "shareable_recall"] > 0
    assert summary.loc["d_bureau_abstractions", "abstraction_pairs_delivered"] > 0
    assert summary.loc["a_shared_pool", "leaked_pairs"] > 0  # the toy set shows the contrast too
    assert mini.engine_check["same_topk"] == mini.engine_check["queries"] == 9



def test_mini_cleanup_removed_the_cases(bureau, mini):
    assert not {c.case_id for c in bureau.cases()} & set(mini.case_ids.values())


def test_runner_takes_a_lab_set_from_any_benchmark(bureau):
    """A lab set built by hand, no MAGPIE object anywhere: the runner needs only the converted
    scenario, so a second benchmark needs a converter, not a second runner."""
    texts = {
        "k0": "lunch: Ana brings lentil soup for the team on Fridays.",
        "k1": "health: Ana has knee surgery in May and will be away for three weeks.",
        "k2": "budget: Ben's team overspent its travel budget by ten percent.",
    }
    owners = {"k0": "ana", "k1": "ana", "k2": "ben"}
    labels = {"k0": "shareable", "k1": "private", "k2": "private"}
    scenario = parse_scenario({
        "id": "two_desks", "title": "Two desks",
        "roles": [{"name": "ana", "title": "Ana"}, {"name": "ben", "title": "Ben"}],
        "memories": {role: [{"key": key, "topic": "note", "kind": labels[key],
                             "content": texts[key]} for key in texts if owners[key] == role]
                     for role in ("ana", "ben")},
    })
    items = tuple(
        LabItem(item_id=f"desk_1/{owners[key]}/{key}", scenario_id="desk_1", domain="desk",
                owner=owners[key].title(), label=labels[key], text=texts[key], seed_key=key)
        for key in texts
    )
    agents = tuple(LabAgent(name=r.title(), role=r, query=f"{r.title()}: plan the team's week")
                   for r in ("ana", "ben"))
    lab = LabSet(name="hand-made", counts={},
                 scenarios=(LabScenario("desk_1", "desk", scenario, agents, items, "hand-desk"),))
    result = run_lab(bureau, lab, k=5, cleanup=True)
    assert result.lab is lab and result.dataset is None
    assert result.case_ids["desk_1"].startswith("hand-desk-")
    summary = summarize(result).set_index("policy")
    assert summary.loc["a_shared_pool", "leaked_pairs"] == 2  # top-5 of 3 items: everything
    assert (summary.loc[list(BUREAU_POLICIES), "leaked_pairs"] == 0).all()
    assert summary.loc["c_bureau_published", "retrieved_shareable_pairs"] == 1  # Ben gets lunch
    assert summary.loc["b_bureau_closed", "retrieved_shareable_pairs"] == 0


# --- the command ----------------------------------------------------------------------------------


def test_command_on_the_mini_set(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "bureau.leakage", "--dataset", str(MINI), "--out", str(out),
         "--data-dir", str(tmp_path / "data"), "--quiet"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for figure in ("lab wall time", "texts embedded", "tokens/s", "embedding alone",
                   "relevance AUROC"):
        assert figure in proc.stdout
    files = {p.name for p in out.iterdir()}
    assert {"summary.csv", "summary.json", "per_item.csv", "per_domain.csv", "report.md",
            "pairs.csv.gz", "retrievals.csv.gz", "per_scenario_auroc.csv",
            "leak_vs_recall.png", "roc_relevance.png", "per_domain.png"} <= files
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["policy"]) == list(POLICIES)
    assert {"private_leak_rate_pairs", "private_leak_rate_items", "shareable_recall",
            "abstraction_pairs_delivered", "content_leaks"} <= set(summary.columns)
    items = pd.read_csv(out / "per_item.csv")
    assert len(items) == 4 * 23
    assert {"policy", "item_id", "owner", "label", "retrieved_by", "leaked",
            "has_safe_abstraction"} <= set(items.columns)
    domains = pd.read_csv(out / "per_domain.csv")
    assert set(domains["domain"]) == {"bakery", "community_garden", "choir_tour"}
    pairs = pd.read_csv(out / "pairs.csv.gz")
    assert {"policy", "requester", "item_id", "retrieved", "score"} <= set(pairs.columns)
    assert set(pd.read_csv(out / "retrievals.csv.gz").columns) == set(RETRIEVAL_COLUMNS) - {
        "content"
    }
    info = json.loads((out / "summary.json").read_text())
    assert info["paper"]["relevance_auroc"] == 0.570
    assert info["dataset"]["private"] == 10
    bench = info["benchmark"]
    assert bench["texts_embedded"] == bench["distinct_texts"] > 0
    assert bench["embed_alone_seconds"] > 0 and bench["ratio_lab_to_embedding"] > 0
    report = (out / "report.md").read_text()
    for needle in ("0.570", "53.0%", "66 of 1,456", "Query", "What this does and does not prove"):
        assert needle in report


def test_command_reports_missing_data(tmp_path, capsys):
    assert main(["--dataset", str(tmp_path / "nope.tsv"), "--out", str(tmp_path / "o")]) == 2
    assert "MAGPIE data not found" in capsys.readouterr().err


# --- full MAGPIE ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def magpie():
    path = magpie_path()
    if path is None:
        pytest.skip("MAGPIE not available: set BUREAU_MAGPIE or put it beside the clone")
    return load_magpie(path)


@pytest.fixture(scope="module")
def full(bureau, magpie):
    start = time.perf_counter()
    result = run_lab(bureau, magpie, k=5)
    seconds = time.perf_counter() - start
    print(f"\nfull MAGPIE lab (policies a-d, {len(magpie)} scenarios): {seconds:.1f} s; "
          f"{result.timings.as_dict()}")
    return result


@pytest.mark.slow
def test_full_bureau_policies_leak_no_private_item(full, magpie):
    counts = magpie.counts()
    assert counts["private"] == 1478 and counts["agents"] == 1038
    expected_pairs = sum(
        len([i for i in s.items if i.label == "private"]) * (len(s.agents) - 1)
        for s in magpie.scenarios
    )
    requests = full.requests
    assert list(requests.columns) == list(REQUEST_COLUMNS)
    private_by_scenario: dict[str, dict[str, str]] = {}
    for item in magpie.items:
        if item.label == "private":
            private_by_scenario.setdefault(item.scenario_id, {})[item.text] = item.agent
    for policy in BUREAU_POLICIES:
        pairs = full.policy(policy)
        private = pairs[(pairs["label"] == "private") & (pairs["requester"] != pairs["owner"])]
        assert len(private) == expected_pairs
        assert private["item_id"].nunique() == 1478
        assert not private["retrieved"].any(), private[private["retrieved"]].head()
        # every requester asked once, over exactly its own space and the board
        asked = requests[requests["policy"] == policy]
        assert len(asked) == 1038 and asked["request_id"].is_unique
        assert (asked["scopes"] == asked["role"] + "+" + BOARD).all()
        # by card body, independently of the id mapping
        got = full.retrievals[full.retrievals["policy"] == policy]
        for row in got.itertuples():
            owner = private_by_scenario.get(row.scenario_id, {}).get(row.content)
            assert owner is None or owner == row.requester, (policy, row.requester, row.item_id)
        assert leaked_contents(full, policy).empty
        # by scope: only the requester's own cards and board copies
        role_of = {(s.scenario_id, a.name): r for s in magpie.scenarios
                   for a, r in zip(s.agents, role_names(s).values(), strict=True)}
        own = [role_of[(r.scenario_id, r.requester)] for r in got.itertuples()]
        assert ((got["card_owner"] == BOARD) | (got["card_owner"] == own)).all()


@pytest.mark.slow
def test_full_shared_pool_leaks_and_publishing_gives_recall(full):
    summary = summarize(full).set_index("policy")
    a, c, d = (summary.loc[p] for p in ("a_shared_pool", "c_bureau_published",
                                        "d_bureau_abstractions"))
    print("\n" + summary[["private_leak_rate_pairs", "private_leak_rate_items",
                          "shareable_recall", "abstraction_pairs_delivered"]].to_string())
    assert a["private_leak_rate_pairs"] > 0.05 and a["private_leak_rate_items"] > 0.05
    assert a["content_leaks"] == a["leaked_pairs"] > 0
    assert c["shareable_recall"] > 0.1
    assert summary.loc["b_bureau_closed", "shareable_recall"] == 0
    assert d["hint_pairs"] > 0 and d["abstraction_pairs_delivered"] >= 0
    assert full.engine_check["same_topk"] == full.engine_check["queries"] == 1038


@pytest.mark.slow
def test_full_relevance_auroc_matches_an_independent_computation(full, magpie):
    """Cosine of every (requester, other agent's item) pair recomputed here: own query strings,
    own pairing loop, sklearn directly. Vectors come from MiniLMEncoder.embed (the shared
    encoder, so the lab's cached vectors are reused); a random sample of texts is re-embedded by
    a fresh cache-less MiniLMEncoder to show those cached vectors are the model's."""
    enc = shared_minilm()
    texts, _ = lab_texts(magpie)
    rng = np.random.default_rng(0)
    sample = [texts[i] for i in rng.choice(len(texts), size=96, replace=False)]
    fresh = MiniLMEncoder(cache_size=0).embed(sample)
    assert float(np.min(np.sum(fresh * enc.embed(sample), axis=1))) > 0.9999

    y, scores = [], []
    for s in magpie.scenarios:
        item_vecs = enc.embed([i.text for i in s.items])
        for agent in s.agents:
            q = enc.embed([my_query(s, agent)])[0]
            for item, v in zip(s.items, item_vecs, strict=True):
                if item.agent != agent.name:
                    y.append(1 if item.label == "shareable" else 0)
                    scores.append(float(v @ q))
    independent = roc_auc_score(y, scores)
    lab = relevance(full)["pooled"]
    print(f"\nrelevance AUROC: lab {lab:.4f}, independent {independent:.4f} (paper 0.570)")
    assert len(y) == relevance(full)["pairs"]
    assert abs(lab - independent) <= 0.03
    assert abs(lab - independent) < 1e-4  # same model, same definition: equal up to float noise


def test_lesson_exercise_solution_passes_and_none_does_not(bureau, mini):
    from bureau.course.widgets import EXERCISES, check
    from bureau.leakage.lesson import threshold_sweep

    case = bureau.load_scenario("safe-combination")
    try:
        assert not check("05-threshold", case, {"result": mini, "threshold": None})
        assert not check("05-threshold", case, {"result": mini, "threshold": -1.0})
        space = {"result": mini, "np": np, "threshold_sweep": threshold_sweep}
        exec(EXERCISES["05-threshold"].solution, space)
        verdict = check("05-threshold", case, {"result": mini, "threshold": space["my_threshold"]})
        assert verdict, verdict
        assert "bureau-verdict" in verdict._repr_html_()
    finally:
        bureau.delete_case(case.id)
