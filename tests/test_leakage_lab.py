"""The leakage lab on real storage (embedded seekdb through the Bureau) and the real MiniLM.

* fast: the MAGPIE -> Bureau mapping, the query definition, the mini set end to end in this
  process (the exhaustive boundary probe included), the AgentSocialBench mini sample through the
  same runner, a hand-built lab set (no MAGPIE object: what a second benchmark's converter would
  hand the runner) with a planted leak the probe must find, and ``python -m bureau leakage`` on
  both mini samples in a subprocess with its own store;
* full MAGPIE (marked ``slow``, skipped only when the data is absent): policies b-d leak no
  private item to any requester, checked by id, by card body and by scope; the shared pool does
  leak; publishing gives recall; the relevance AUROC equals an independent computation.

The full run uses this process's one Bureau (conftest) and keeps its 200 cases: they live in the
temporary test data directory, and deleting ~6,000 cards would cost as long as writing them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, magpie_path
from sklearn.metrics import roc_auc_score

from bureau.embedding import MiniLMEncoder, shared_minilm
from bureau.labs.leakage.cli import main
from bureau.labs.leakage.datasets.agentsocialbench import load_agentsocialbench, pairing_stats
from bureau.labs.leakage.datasets.convert import (
    benchmark_of,
    load_lab,
    query_text,
    role_names,
    slug,
    to_bureau_scenario,
    to_lab,
)
from bureau.labs.leakage.datasets.labset import LabAgent, LabItem, LabScenario, LabSet
from bureau.labs.leakage.datasets.magpie import MagpieScenario, load_magpie, subset
from bureau.labs.leakage.pipeline import (
    BUSY_OTHERS,
    GROUP_CAP,
    busy_cores,
    groups,
    one_steps_back,
    scenario_texts,
    shares,
)
from bureau.labs.leakage.policies.policies import (
    BUREAU_POLICIES,
    POLICIES,
    PROBE_LIMIT,
    SHARED_POOL,
    SHARED_POOL_WITH_OWN,
)
from bureau.labs.leakage.policies.shared_pool import pool_ranks
from bureau.labs.leakage.report.report import SUMMARY_COLUMNS, probe_summary, relevance, summarize
from bureau.labs.leakage.runner import (
    REQUEST_COLUMNS,
    RETRIEVAL_COLUMNS,
    lab_texts,
    leaked_contents,
    run_lab,
    run_labs,
)
from bureau.model import BOARD
from bureau.scenario import parse_scenario
from bureau.text import MAX_QUESTION_CHARS

MINI = REPO / "data" / "magpie_mini"
SOCIAL_MINI = REPO / "data" / "agentsocialbench_mini"


def my_query(scenario: MagpieScenario, agent, variant: str = "own_job") -> str:
    """The documented query definitions, written out again (not imported) for the checks."""
    role = " ".join(agent.role.split()) or agent.name
    text = {"own_job": f"{scenario.task} {role} {agent.description}",
            "task": scenario.task, "role_task": f"{role}: {scenario.task}"}[variant]
    text = " ".join(text.split())
    if len(text) > 2000:
        cut = text[:2001]
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
            task = " ".join(s.task.split())
            assert query_text(s, a) == my_query(s, a)
            assert query_text(s, a).startswith(f"{task} {a.role} ")
            assert query_text(s, a, "task") == my_query(s, a, "task") == task
            assert query_text(s, a, "role_task") == my_query(s, a, "role_task")
            assert query_text(s, a, "role_task") == f"{a.role}: {task}"
    s = data.scenarios[0]
    long = MagpieScenario(s.scenario_id, s.domain, "word " * 600, s.agents, s.items)
    q = query_text(long, s.agents[0])
    assert len(q) <= MAX_QUESTION_CHARS and q.endswith("word") and q == my_query(long, s.agents[0])


def test_question_limit_leaves_the_model_its_tokens():
    """The Bureau's question limit must not cut a query below what MiniLM reads: 2,000
    characters of plain words are far more than 256 tokens."""
    from bureau.embedding import MAX_TOKENS

    assert MAX_QUESTION_CHARS == 2000
    tokens = shared_minilm().tokenizer.encode("word " * (MAX_QUESTION_CHARS // 5)).ids
    assert len(tokens) == MAX_TOKENS  # truncated by the model, not by the question limit


def test_subset_takes_the_first_scenarios_in_file_order():
    data = load_magpie(MINI)
    assert subset(data, None) is data
    assert data.source_scenarios is None and not to_lab(data).is_subset
    # the file lists bakery_1, community_garden_1, choir_tour_2 (not in id order)
    assert data.file_order == ("bakery_1", "community_garden_1", "choir_tour_2")
    two = subset(data, 2)
    assert [s.scenario_id for s in two.scenarios] == ["bakery_1", "community_garden_1"]
    assert len(two.items) == len(two.scenarios[0].items) + len(two.scenarios[1].items)
    assert two.source_scenarios == 3 and subset(two, 1).source_scenarios == 3
    assert [s.scenario_id for s in subset(two, 1).scenarios] == ["bakery_1"]
    assert to_lab(two).is_subset
    social = load_lab(SOCIAL_MINI, 2)
    full = load_lab(SOCIAL_MINI)
    # AgentSocialBench's categories in turn: the first scenario of two categories, not the
    # first two files (both of the folder that sorts first)
    firsts = {}
    for s in full.dataset.scenarios:
        firsts.setdefault(s.category, s.scenario_id)
    assert [s.scenario_id for s in social.scenarios] == sorted(list(firsts.values())[:2])
    assert {s.scenario_id for s in social.scenarios} <= {s.scenario_id for s in
                                                         load_lab(SOCIAL_MINI, 3).scenarios}
    assert social.is_subset and social.source_scenarios == len(full)


def test_benchmark_is_picked_by_layout(tmp_path):
    assert benchmark_of(MINI) == benchmark_of(MINI / "magpie.tsv") == "magpie"
    assert benchmark_of(SOCIAL_MINI) == "agentsocialbench"
    assert benchmark_of(SOCIAL_MINI / "scenarios") == "agentsocialbench"
    assert benchmark_of(tmp_path / "missing.tsv") == "magpie"
    lab = load_lab(SOCIAL_MINI)
    assert lab.name == "AgentSocialBench" and lab.counts == load_agentsocialbench(
        SOCIAL_MINI).counts()


def test_pool_variants_by_hand():
    """Scores 0.9 (own), 0.8, 0.1 (own), 0.5: the with-own pool ranks every item, so its top-2
    spends a slot on the own 0.9 and returns one other item; the pool of others returns two."""
    scores = np.array([0.9, 0.8, 0.1, 0.5])
    own = np.array([True, False, True, False])
    with_own, others = pool_ranks(scores, own)
    assert with_own.tolist() == [1, 2, 4, 3]
    assert others.tolist() == [0, 1, 0, 2]
    k = 2
    assert [j for j in range(4) if with_own[j] <= k and not own[j]] == [1]
    assert [j for j in range(4) if 0 < others[j] <= k] == [1, 3]


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
    """Both pools recomputed by hand from the encoder's vectors: top-5 of each requester's pool,
    every item (with own) or the other agents' items only."""
    enc = shared_minilm()
    for s in mini.dataset.scenarios:
        items = list(s.items)
        vecs = enc.embed([i.text for i in items])
        for a in s.agents:
            cos = vecs @ enc.embed([my_query(s, a)])[0]
            top = {items[j].item_id for j in np.argsort(-cos, kind="stable")[:5]}
            others = [j for j in range(len(items)) if items[j].agent != a.name]
            top_others = {items[j].item_id for j in sorted(others, key=lambda j: -cos[j])[:5]}
            for policy, want in ((SHARED_POOL_WITH_OWN, top), (SHARED_POOL, top_others)):
                got = mini.retrievals.query(
                    "policy == @policy and scenario_id == @s.scenario_id "
                    "and requester == @a.name"
                )
                assert set(got["item_id"]) == want, policy


def test_mini_bureau_policies(mini):
    summary = summarize(mini).set_index("policy")
    for policy in BUREAU_POLICIES:
        assert summary.loc[policy, "leaked_pairs"] == 0
        assert summary.loc[policy, "content_leaks"] == 0
    assert summary.loc["b_bureau_closed", "shareable_recall"] == 0
    assert summary.loc["c_bureau_published", "shareable_recall"] > 0
    assert summary.loc["d_bureau_abstractions", "abstraction_pairs_delivered"] > 0
    assert summary.loc[SHARED_POOL, "leaked_pairs"] > 0  # the toy set shows the contrast too
    assert mini.engine_check["same_topk"] == mini.engine_check["queries"] == 9


def test_relevance_auroc_of_each_query_variant(mini):
    """Each query variant's AUROC is computed from its own cosine column (recomputed here)."""
    pairs = mini.policy(SHARED_POOL)
    others = pairs[pairs["requester"] != pairs["owner"]]
    y = (others["label"] == "shareable").astype(int)
    rel = relevance(mini)
    for name, column in (("own_job", "score"), ("task", "score_task"),
                         ("role_task", "score_role_task")):
        assert rel["by_query"][name] == pytest.approx(roc_auc_score(y, others[column]))
    assert rel["pooled"] == rel["by_query"]["task"]
    assert not others["score"].equals(others["score_task"])


def test_mini_exhaustive_probe(mini):
    """Every requester asked once per other agent's private item, over every readable scope,
    and got no such item back; each probe returned every readable card (limit above sizes)."""
    data = mini.dataset
    private_pairs = sum(len([i for i in s.items if i.label == "private"]) * (len(s.agents) - 1)
                        for s in data.scenarios)
    probe = probe_summary(mini)
    assert probe["probes"] == private_pairs == mini.timings.probes
    assert probe["hits"] == 0 and probe["requesters"] == 9
    assert probe["every_probe_searched_every_readable_scope"]
    assert 0 < probe["max_scope_cards"] < PROBE_LIMIT
    assert (mini.probe["scopes"] == mini.probe["role"] + "+" + BOARD).all()


def test_agentsocialbench_mini_through_the_lab(bureau):
    """The second benchmark through the same runner: its lab set, every policy, the probe."""
    lab = load_lab(SOCIAL_MINI)
    social = load_agentsocialbench(SOCIAL_MINI)
    result = run_lab(bureau, lab, k=5, cleanup=True)
    summary = summarize(result).set_index("policy")
    private_pairs = sum(len(s.private) * (len(s.agents) - 1) for s in social.scenarios)
    assert (summary["private_pairs"] == private_pairs).all()
    assert (summary.loc[list(BUREAU_POLICIES), "leaked_pairs"] == 0).all()
    assert (summary.loc[list(BUREAU_POLICIES), "content_leaks"] == 0).all()
    assert summary.loc["b_bureau_closed", "shareable_recall"] == 0
    assert summary.loc["c_bureau_published", "shareable_recall"] > 0
    assert summary.loc[SHARED_POOL, "leaked_pairs"] > 0
    probe = probe_summary(result)
    assert probe["probes"] == private_pairs and probe["hits"] == 0
    assert pairing_stats(social)["all"].private_items == summary.loc[SHARED_POOL,
                                                                     "private_items"]


@pytest.mark.parametrize("n", [0, 1, 2, 5, 10, 60, 64, 65, 200, 257, 372, 1000])
def test_pipeline_groups_are_full_and_taper_at_the_end(n):
    """Every scenario once, in order, none above the cap; the last lab's groups halve at the
    end (the storage has little left when its last vector arrives), and every group but those
    and one remainder is full (well-filled, length-sorted batches: little padding)."""
    for taper in (True, False):
        cut = groups(list(range(n)), taper=taper)
        assert [x for g in cut for x in g] == list(range(n))
        sizes = [len(g) for g in cut]
        assert all(1 <= size <= GROUP_CAP for size in sizes)
        k = len(sizes)
        if taper and n:
            assert sizes[-1] == 1
            k -= 1
            while k > 0 and sizes[k - 1] == 2 * sizes[k] < 2 * GROUP_CAP:
                k -= 1  # the halving tail: ..., 4, 2, 1, each below the cap
            if n >= 7:
                assert sizes[-3:] == [4, 2, 1]
        # before it, at most one remainder (first), then full groups only
        assert all(size == GROUP_CAP for size in sizes[1:k])


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_group_is_dealt_to_the_workers_in_shares_of_about_equal_work(workers):
    """Every worker embeds a share of the same group, so groups finish one after the other
    (whole groups side by side finished in pairs and starved the storage thread): the shares
    hold every distinct text of the group once, in about equal numbers and lengths."""
    lab = load_lab(MINI)
    group = list(lab.scenarios[:4])
    distinct = set(x for s in group for x in scenario_texts(s))
    dealt = shares(group, workers)
    assert len(dealt) == workers
    assert sorted(x for share in dealt for x in share) == sorted(distinct)
    assert max(map(len, dealt)) - min(map(len, dealt)) <= 1
    chars = [sum(map(len, share)) for share in dealt]
    longest = max(map(len, distinct))
    assert max(chars) - min(chars) <= longest  # dealt by length: no share takes the long ones
    assert shares([], workers) == []
    assert shares(group[:1], 10_000) and len(shares(group[:1], 10_000)) == len(
        set(scenario_texts(group[0])))  # more workers than texts: one text each, none empty


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread: Linux")
@pytest.mark.parametrize(("workers", "busy", "stepped_back"),
                         [(1, 0.0, 1), (3, 0.0, 1), (3, 0.4, 1), (3, None, 1), (3, 0.6, 0),
                          (3, 2.0, 0)])
def test_on_a_quiet_machine_one_embedding_worker_steps_back_and_only_there(
        workers, busy, stepped_back):
    """The spare thread yields to the storage thread, the others keep the caller's priority;
    on a busy machine none steps back, or a busy process of the same session takes the lab's
    CPU (issue 31 §4: the full lab, every worker stepped back, unfinished after 26 minutes)."""
    from concurrent.futures import ThreadPoolExecutor

    from bureau.embedding import BACKGROUND_NICENESS

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = niceness()
    everyone = threading.Barrier(workers)

    def meet() -> tuple[int, int]:
        everyone.wait(10)  # every task on a thread of its own
        return threading.get_native_id(), niceness()

    initializer = one_steps_back(busy)
    assert (initializer is None) == (busy is not None and busy > BUSY_OTHERS)
    with ThreadPoolExecutor(workers, initializer=initializer) as pool:
        seen = dict(f.result() for f in [pool.submit(meet) for _ in range(workers)])
    assert len(seen) == workers
    back = min(19, before + BACKGROUND_NICENESS)
    assert sorted(seen.values()) == [before] * (workers - stepped_back) + [back] * stepped_back
    assert niceness() == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc: Linux")
def test_the_machine_reads_busy_for_another_process_spinning_not_for_the_labs_own():
    """busy_cores counts what other processes take, not the lab's own threads or children
    (embedded seekdb is a child, busy as the lab starts). A spinning child and a spinning
    process outside the lab's tree run in the same window, and each is held to the CPU it
    really got (read from /proc), so the suite's other worker loading the machine moves both
    sides alike: the outsider must be counted, the child must not."""
    import signal

    spin = "while True: pass"
    child = subprocess.Popen([sys.executable, "-c", spin])
    # started by a shell that exits at once: the spinner is nobody's child here
    started = subprocess.run(["sh", "-c", f"'{sys.executable}' -c '{spin}' >/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True)
    other = int(started.stdout)
    hz = os.sysconf("SC_CLK_TCK")

    def ticks(pid: int) -> int:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    try:
        time.sleep(0.3)
        t0, c0, o0 = time.monotonic(), ticks(child.pid), ticks(other)
        busy = busy_cores(1.0)
        t1, c1, o1 = time.monotonic(), ticks(child.pid), ticks(other)
    finally:
        os.kill(other, signal.SIGKILL)
        child.kill()
        child.wait()
    child_cores, other_cores = ((c1 - c0) / hz / (t1 - t0), (o1 - o0) / hz / (t1 - t0))
    cores = os.cpu_count() or 1
    assert busy is not None
    assert other_cores > 0.2 and child_cores > 0.2, (child_cores, other_cores)  # both ran
    # the outsider is in what others take (its window is a little longer than busy_cores')
    assert busy >= 0.8 * other_cores - 0.05, (busy, other_cores)
    # the child is not: the machine's busy time less the lab's own leaves no room for it
    assert busy <= cores - 0.8 * child_cores + 0.05, (busy, child_cores)


def test_both_benchmarks_in_one_stream_give_the_figures_of_separate_runs(bureau, monkeypatch):
    """run_labs embeds the next benchmark's texts while this one's storage work finishes;
    what each benchmark measures must not change, and the windows add up to the wall time.
    One of the embedding threads steps back behind the storage work (one_steps_back; Linux: a
    higher nice value), the others and the calling thread keep the caller's."""
    from bureau.labs.leakage import runner

    labs = [load_lab(MINI), load_lab(SOCIAL_MINI)]
    bureau.encoder.forget([x for lab in labs for x in lab_texts(lab)[0]])  # embedded anew
    niceness = {}
    embed = bureau.encoder.embed

    def watched(*args, **kwargs):
        tid = threading.get_native_id()
        if sys.platform.startswith("linux"):
            niceness[tid] = os.getpriority(os.PRIO_PROCESS, tid)
        return embed(*args, **kwargs)

    made = []

    def initializer(busy):
        made.append(busy)
        return one_steps_back(0.0)  # as on a quiet machine: one worker steps back

    monkeypatch.setattr(bureau.encoder, "embed", watched)
    monkeypatch.setattr(runner, "one_steps_back", initializer)
    mine = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, mine) if sys.platform.startswith("linux") else 0
    t0 = time.perf_counter()
    streamed = run_labs(bureau, labs, k=5, cleanup=True)
    wall = time.perf_counter() - t0
    monkeypatch.undo()
    if sys.platform.startswith("linux"):
        lab_threads = {t: n for t, n in niceness.items() if t != mine}
        assert lab_threads and set(lab_threads.values()) <= {before, min(19, before + 10)}
        assert list(lab_threads.values()).count(min(19, before + 10)) <= 1
        assert os.getpriority(os.PRIO_PROCESS, mine) == before
    assert len(made) == 1 and (made[0] is None or made[0] >= 0)  # the machine read once
    alone = [run_lab(bureau, lab, k=5, cleanup=True) for lab in labs]
    for one, other in zip(streamed, alone, strict=True):
        pd.testing.assert_frame_equal(summarize(one), summarize(other))
        assert one.probe["hits"].sum() == other.probe["hits"].sum() == 0
        assert one.timings.total > 0
    assert sum(r.timings.total for r in streamed) <= wall
    assert sum(r.timings.texts_embedded for r in streamed) == len(
        {x for r in streamed for x in r.texts})


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
    for pool in (SHARED_POOL, SHARED_POOL_WITH_OWN):  # top-5 of 3 items: everything
        assert summary.loc[pool, "leaked_pairs"] == 2
        assert summary.loc[pool, "random_pair_leak"] == 1.0  # the draw takes the whole pool
    assert (summary.loc[list(BUREAU_POLICIES), "leaked_pairs"] == 0).all()
    assert summary.loc["c_bureau_published", "retrieved_shareable_pairs"] == 1  # Ben gets lunch
    assert summary.loc["b_bureau_closed", "retrieved_shareable_pairs"] == 0
    assert probe_summary(result)["probes"] == 2 and probe_summary(result)["hits"] == 0


def test_probe_finds_a_planted_leak(bureau):
    """A negative control: Ana also holds a *shareable* card whose body is her private one, so
    publishing it puts the secret on the board. The one-query figures may miss it; the probe,
    which asks with every secret's text and reads every readable card, must not."""
    secret = "health: Ana has knee surgery in May and will be away for three weeks."
    texts = {"k0": "lunch: Ana brings lentil soup for the team on Fridays.", "k1": secret,
             "k2": secret, "k3": "budget: Ben's team overspent its travel budget."}
    owners = {"k0": "ana", "k1": "ana", "k2": "ana", "k3": "ben"}
    labels = {"k0": "shareable", "k1": "private", "k2": "shareable", "k3": "private"}
    scenario = parse_scenario({
        "id": "planted", "title": "Planted",
        "roles": [{"name": "ana", "title": "Ana"}, {"name": "ben", "title": "Ben"}],
        "memories": {role: [{"key": key, "topic": "note", "kind": labels[key],
                             "content": texts[key]} for key in texts if owners[key] == role]
                     for role in ("ana", "ben")},
    })
    items = tuple(
        LabItem(item_id=f"p_1/{key}", scenario_id="p_1", domain="desk", owner=owners[key].title(),
                label=labels[key], text=texts[key], seed_key=key)
        for key in texts
    )
    agents = tuple(LabAgent(name=r.title(), role=r, query=f"{r.title()}: plan the team's week")
                   for r in ("ana", "ben"))
    lab = LabSet(name="planted", counts={},
                 scenarios=(LabScenario("p_1", "desk", scenario, agents, items, "planted"),))
    result = run_lab(bureau, lab, k=1, cleanup=True)
    probe = probe_summary(result)
    assert probe["probes"] == 2  # Ben asks with Ana's secret, Ana with Ben's budget
    assert probe["hits"] >= 1  # Ben's probe returns the board copy holding Ana's secret


# --- the command ----------------------------------------------------------------------------------


def test_command_on_both_mini_samples(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "bureau.labs.leakage", "--dataset", str(MINI), "--dataset",
         str(SOCIAL_MINI), "--out", str(out), "--data-dir", str(tmp_path / "data"), "--quiet"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for figure in ("lab wall time", "texts embedded", "tokens/s", "embedding alone",
                   "relevance AUROC", "exhaustive boundary probe", "AgentSocialBench"):
        assert figure in proc.stdout
    files = {p.name for p in out.iterdir()}
    plots = {f"{ds}_{name}.png" for ds in ("magpie", "agentsocialbench")
             for name in ("leak_vs_recall", "random_baseline", "roc_relevance", "per_domain")}
    assert {"summary.csv", "summary.json", "policies.csv", "per_item.csv", "per_domain.csv",
            "report.md", "pairs.csv.gz", "retrievals.csv.gz", "per_scenario_auroc.csv",
            "probe.csv", *plots} <= files
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    assert list(summary["dataset"].unique()) == ["MAGPIE", "AgentSocialBench"]
    for _, rows in summary.groupby("dataset"):
        pools = rows[rows["policy"].isin([SHARED_POOL, SHARED_POOL_WITH_OWN])]
        assert {3, 5, 10} <= set(pools["k"]) and set(pools["k"]) >= {5, 10}  # k and 2k
        assert pools[["pair_leak", "random_pair_leak", "auroc"]].notna().sum().tolist() == [
            len(pools), len(pools), 0]
        bureau_rows = rows[rows["policy"].isin(BUREAU_POLICIES)]
        assert (bureau_rows["pair_leak"] == 0).all() and (bureau_rows["k"] == 5).all()
        assert (bureau_rows["random_pair_leak"] == 0).all()
        auroc = rows[rows["auroc"].notna()]
        assert set(auroc["policy"]) == {"relevance_task_query", "relevance_role_task_query",
                                        "relevance_own_job_query"}
        assert auroc["k"].isna().all() and auroc["pair_leak"].isna().all()
    assert not summary.duplicated(["dataset", "policy", "k"]).any()
    items = pd.read_csv(out / "per_item.csv")
    assert len(items[items["dataset"] == "MAGPIE"]) == len(POLICIES) * 23
    assert {"policy", "item_id", "owner", "label", "retrieved_by", "leaked",
            "has_safe_abstraction"} <= set(items.columns)
    domains = pd.read_csv(out / "per_domain.csv")
    assert set(domains.loc[domains["dataset"] == "MAGPIE", "domain"]) == {
        "bakery", "community_garden", "choir_tour"}
    pairs = pd.read_csv(out / "pairs.csv.gz")
    assert {"dataset", "policy", "requester", "item_id", "retrieved", "score", "score_task",
            "pool_size"} <= set(pairs.columns)
    assert set(pd.read_csv(out / "retrievals.csv.gz").columns) == set(RETRIEVAL_COLUMNS) - {
        "content"} | {"dataset"}
    info = json.loads((out / "summary.json").read_text())
    assert info["paper"]["relevance_auroc"] == 0.570
    magpie, social = info["datasets"]["MAGPIE"], info["datasets"]["AgentSocialBench"]
    assert magpie["dataset"]["private"] == 10
    for d in (magpie, social):
        assert d["probe"]["hits"] == 0 and d["probe"]["probes"] > 0
        assert d["intervals"]["resamples"] == 1000 and d["intervals"]["level"] == 0.95
        lo, hi = d["intervals"][f"{SHARED_POOL}@5"]["pair_leak"]
        assert lo <= d["policies"][SHARED_POOL]["private_leak_rate_pairs"] <= hi
    assert social["pairing"]["all"]["paired"] > 0
    bench = info["benchmark"]
    assert bench["texts_embedded"] == bench["distinct_texts"] > 0
    assert bench["embed_alone_seconds"] > 0 and bench["ratio_lab_to_embedding"] > 0
    assert bench["stepped_back"] == int(0 <= bench["busy_at_start"] <= BUSY_OTHERS
                                        or bench["busy_at_start"] == -1)
    assert set(bench["lab_seconds_per_dataset"]) == {"MAGPIE", "AgentSocialBench"}
    report = (out / "report.md").read_text()
    for needle in ("0.570", "53.0%", "66 of 1,456", "Queries", "What this does and does not prove",
                   "a_shared_pool_with_own", "Random baseline", "Beside the published "
                   "leaderboard", "40.0%–67.0%", "## Benchmark", "probe"):
        assert needle in report, needle


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
    a, c, d = (summary.loc[p] for p in (SHARED_POOL, "c_bureau_published",
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
            q = enc.embed([my_query(s, agent, "task")])[0]  # the AUROC headline's query
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
    from bureau.labs.leakage.lesson import threshold_sweep

    case = bureau.load_scenario("safe-combination")
    try:
        assert not check("05-threshold", case, {"result": mini, "threshold": None})
        assert not check("05-threshold", case, {"result": mini, "threshold": -1.0})
        space = {"result": mini, "np": np, "threshold_sweep": threshold_sweep}
        exec(EXERCISES["05-threshold"].solution, space)
        verdict = check("05-threshold", case, {"result": mini, "threshold": space["my_threshold"]})
        assert verdict, verdict
        assert "bureau-verdict" in verdict._repr_html_()
        lowest = round(space["my_threshold"], 2)
        # "the lowest": a threshold that also works but is higher is refused, as are 3 decimals
        higher = check("05-threshold", case, {"result": mini, "threshold": round(lowest + 0.05, 2)})
        assert not higher and "lowest" in higher.message, higher
        assert not check("05-threshold", case, {"result": mini, "threshold": lowest + 0.005})
        assert not check("05-threshold", case, {"result": mini, "threshold": round(lowest - 0.01, 2)})
    finally:
        bureau.delete_case(case.id)


def test_lesson_reads_the_data_from_a_given_path_and_says_when_it_falls_back(tmp_path):
    """Lesson 05's "get the data": a path the learner gives wins; a wrong one falls back to the
    slice of real scenarios that ships in data/ (issue 48), with a note naming the path tried
    (never silently)."""
    from bureau.labs.leakage.lesson import (
        MAGPIE_SLICE,
        MINI,
        SOCIAL_MINI,
        SOCIAL_SLICE,
        load_dataset,
        load_second_benchmark,
    )

    given, note = load_dataset(str(MINI))
    assert note.startswith("Using MAGPIE") and len(given) == len(load_magpie(MINI))
    missing = tmp_path / "nowhere.tsv"
    fallback, note = load_dataset(str(missing))
    assert str(missing) in note and "data/magpie_slice" in note and "real MAGPIE" in note
    assert len(fallback) == len(load_magpie(MAGPIE_SLICE)) == 60
    social, note = load_second_benchmark(2, str(SOCIAL_MINI))
    assert note.startswith("Using AgentSocialBench") and len(social) == 2
    sliced, note = load_second_benchmark(12, str(missing))
    assert str(missing) in note and "data/agentsocialbench_slice" in note
    assert {s.category for s in sliced.dataset.scenarios} == {
        "cross_domain", "mediated_comm", "cross_user"}, "the categories in turn"
    assert len(load_second_benchmark(None, str(SOCIAL_SLICE))[0]) == 60


def test_c_versus_d_reads_the_run(mini):
    """The line lesson 05 prints to explain d beside c: its counts are the run's own."""
    from bureau.labs.leakage.lesson import c_versus_d

    rows = summarize(mini).set_index("policy")
    line = c_versus_d(mini)
    hints = sum(1 for item in mini.lab.items if item.abstraction)
    delivered = int(rows.loc["d_bureau_abstractions", "abstraction_pairs_delivered"])
    assert f"{hints} of {len(mini.lab.items)} items" in line
    assert f"delivered one in {delivered} " in line and delivered > 0
    assert f"c {rows.loc['c_bureau_published', 'shareable_recall']:.1%}" in line
