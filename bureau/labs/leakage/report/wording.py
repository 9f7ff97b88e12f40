"""The wording of ``report.md``: ``report_template.md`` (shipped beside this module) filled in,
section by section, by :func:`report_values` and its siblings.

The prose lives in the template and holds no figure; every number comes from the run (or, for the
published ones, from :mod:`~bureau.labs.leakage.report.paper`), so the report cannot go on stating
the counts of a dataset it was not run on. Every value the template's sections name is formatted
here, and only here (a test reads this module's literals, and :mod:`.report`'s, for figures typed
into text). :mod:`.report` writes the files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib import resources
from string import Template
from typing import Any

import pandas as pd

from bureau.embedding import MAX_TOKENS
from bureau.labs.leakage.datasets.convert import QUERY_TEMPLATE
from bureau.labs.leakage.datasets.social_model import IN_SCOPE
from bureau.labs.leakage.datasets.social_pairing import pairing_stats
from bureau.labs.leakage.metrics.analysis import (
    CI_LEVEL,
    SOCIAL_KS,
    Analysis,
    own_slots,
    pool_ks,
)
from bureau.labs.leakage.policies.mediated import EVERY_CARD
from bureau.labs.leakage.policies.policies import (
    BUREAU_POLICIES,
    POLICY_LABELS,
    PROBE_LIMIT,
    SHARED_POOL,
    SHARED_POOL_WITH_OWN,
)
from bureau.labs.leakage.report.paper import AGENTSOCIALBENCH_LEADERBOARD, PAPER
from bureau.labs.leakage.result import LabResult
from bureau.text import MAX_QUESTION_CHARS

MOST_LEAKY_DOMAINS, LEAST_LEAKY_DOMAINS = 8, 5
"""Rows of the report's per-domain table (the CSV has every domain)."""
MINI_MARKERS = ("magpie_mini", "agentsocialbench_mini")
"""A source path holding one of these is a bundled synthetic set, which the report must not
pass off as the benchmark."""
TEMPLATE_FILE = "report_template.md"
SECTION = "<!-- section: {} -->\n"
SECTIONS = ("magpie", "agentsocialbench", "mediated", "benchmark")
"""The template's parts, in order: one per benchmark (each followed by its policy-e part), then
the timing section."""

PLOTS = {
    "tradeoff": "leak_vs_recall.png",
    "baseline": "random_baseline.png",
    "roc": "roc_relevance.png",
    "domains": "per_domain.png",
    "mediation": "mediation.png",
}
"""Plot files per dataset, each prefixed with the dataset's slug (``magpie_roc_relevance.png``)."""




# --- report.md: the values of each template section ----------------------------------------------


def _pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _ci(interval: Sequence[float] | None, pct: bool = True) -> str:
    """``lo–hi`` of an interval, as percentages or as AUROC digits."""
    if interval is None:
        return "n/a"
    lo, hi = interval
    return f"{_pct(lo)}–{_pct(hi)}" if pct else f"{lo:.3f}–{hi:.3f}"


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _num(n: int) -> str:
    return f"{n:,}"


def _scope(result: LabResult) -> str:
    """What the run measured, in words: the mini set must never pass for the benchmark."""
    lab = result.lab
    name = lab.name
    if any(marker in str(lab.source or "") for marker in MINI_MARKERS):
        scope = f"the bundled synthetic mini set ({name}'s format, not {name} data)"
        if lab.is_subset:
            scope = (f"{_num(len(lab))} of the {_num(lab.source_scenarios or 0)} scenarios of "
                     f"{scope}, the first in file order")
        return scope
    if lab.is_subset:
        return (f"{_num(len(lab))} of the {_num(lab.source_scenarios or 0)} {name} scenarios "
                "(--limit: the first in file order)")
    return f"the full {name} set"


def load_template() -> dict[str, Template]:
    """The report template shipped beside this module, by section (:data:`SECTIONS`)."""
    text = resources.files(__package__).joinpath(TEMPLATE_FILE).read_text(encoding="utf-8")
    parts: dict[str, Template] = {}
    for name in reversed(SECTIONS):
        text, _, part = text.partition(SECTION.format(name))
        parts[name] = Template(part)
    return parts


def _common_values(a: Analysis) -> dict[str, Any]:
    """Placeholders both benchmark sections share: the headline shared pool and bureau figures
    with their random expectations and intervals, the probe, the queries."""
    result, k = a.result, a.result.k
    rel = a.relevance
    pol = {r["policy"]: r for r in a.policies.to_dict(orient="records")}
    a1, a2, aw = a.cell(SHARED_POOL), a.cell(SHARED_POOL, 2 * k), a.cell(SHARED_POOL_WITH_OWN)
    c, d = pol["c_bureau_published"], pol["d_bureau_abstractions"]
    slots = own_slots(result)
    policy_rows = [
        [
            f"**{r['label']}**",
            r["engine"],
            f"{_pct(r['private_leak_rate_pairs'])} ({r['leaked_pairs']:,}/{r['private_pairs']:,})",
            f"{_pct(r['private_leak_rate_items'])} ({r['leaked_items']:,}/{r['private_items']:,})",
            f"{_pct(r['shareable_recall'])} ({r['retrieved_shareable_pairs']:,}/"
            f"{r['shareable_pairs']:,})",
            f"{_pct(r['random_pair_leak'])} / {_pct(r['random_item_leak'])} / "
            f"{_pct(r['random_shareable_recall'])}",
            f"{r['abstraction_pairs_delivered']:,}/{r['hint_pairs']:,}",
            r["content_leaks"],
        ]
        for r in pol.values()
    ]
    tokens = result.query_tokens
    values: dict[str, Any] = {
        "dataset_name": a.name,
        "scope": _scope(result),
        "k": k,
        "k2": 2 * k,
        "ci_level": f"{100 * CI_LEVEL:.0f}%",
        "resamples": _num(a.intervals["resamples"]),
        "seed": a.intervals["seed"],
        "auroc_task": f"{rel['pooled']:.3f}",
        "auroc_task_ci": _ci(a.intervals["auroc_task_query"], pct=False),
        "auroc_role_task": f"{rel['by_query']['role_task']:.3f}",
        "auroc_own_job": f"{rel['by_query']['own_job']:.3f}",
        "mean_cosine_shareable": f"{rel['mean_cosine_shareable']:.3f}",
        "mean_cosine_private": f"{rel['mean_cosine_private']:.3f}",
        "a_leak_pairs": _pct(a1["pair_leak"]),
        "a_leak_pairs_ci": _ci(a.ci(SHARED_POOL, "pair_leak")),
        "a_random_pairs": _pct(a1["random_pair_leak"]),
        "a_leak_items": _pct(a1["item_leak"]),
        "a_leak_items_ci": _ci(a.ci(SHARED_POOL, "item_leak")),
        "a_random_items": _pct(a1["random_item_leak"]),
        "a_recall": _pct(a1["shareable_recall"]),
        "a_recall_ci": _ci(a.ci(SHARED_POOL, "shareable_recall")),
        "a_random_recall": _pct(a1["random_shareable_recall"]),
        "a2_leak_pairs": _pct(a2["pair_leak"]),
        "a2_leak_pairs_ci": _ci(a.ci(SHARED_POOL, "pair_leak", 2 * k)),
        "a2_random_pairs": _pct(a2["random_pair_leak"]),
        "a2_leak_items": _pct(a2["item_leak"]),
        "a2_random_items": _pct(a2["random_item_leak"]),
        "a2_recall": _pct(a2["shareable_recall"]),
        "a2_recall_ci": _ci(a.ci(SHARED_POOL, "shareable_recall", 2 * k)),
        "a2_random_recall": _pct(a2["random_shareable_recall"]),
        "aw_leak_pairs": _pct(aw["pair_leak"]),
        "aw_random_pairs": _pct(aw["random_pair_leak"]),
        "aw_recall": _pct(aw["shareable_recall"]),
        "own_share": _pct(slots["own_share_of_top_k"]),
        "own_pool_share": _pct(slots["own_share_of_pool"]),
        "c_recall": _pct(c["shareable_recall"]),
        "c_recall_ci": _ci(a.ci("c_bureau_published", "shareable_recall")),
        "c_random_recall": _pct(c["random_shareable_recall"]),
        "d_recall": _pct(d["shareable_recall"]),
        "d_recall_ci": _ci(a.ci("d_bureau_abstractions", "shareable_recall")),
        "d_random_recall": _pct(d["random_shareable_recall"]),
        "private_pairs": _num(c["private_pairs"]),
        "d_abstractions_delivered": _num(d["abstraction_pairs_delivered"]),
        "d_hint_pairs": _num(d["hint_pairs"]),
        **{f"{p}_leaked_pairs": pol[name]["leaked_pairs"] for p, name in
           (("b", "b_bureau_closed"), ("c", "c_bureau_published"),
            ("d", "d_bureau_abstractions"))},
        **{f"{p}_content_leaks": pol[name]["content_leaks"] for p, name in
           (("b", "b_bureau_closed"), ("c", "c_bureau_published"),
            ("d", "d_bureau_abstractions"))},
        "probes": _num(a.probe["probes"]),
        "probe_hits": _num(a.probe["hits"]),
        "probe_limit": PROBE_LIMIT,
        "probe_requesters": _num(a.probe["requesters"]),
        "probe_max_cards": a.probe["max_scope_cards"],
        "policy_table": _md_table(
            ["policy", "engine", "private leak (pairs)", "private leak (items, to at least one "
             "other agent)", "shareable recall", "random: pairs / items / recall",
             "abstractions delivered", "content leaks"],
            policy_rows,
        ),
        "query_template": QUERY_TEMPLATE,
        "question_limit": _num(MAX_QUESTION_CHARS),
        "queries_cut": _num(sum(ag.query_cut for s in result.lab.scenarios for ag in s.agents)),
        "queries": _num(len(result.queries)),
        "queries_over_tokens": _num(sum(n > MAX_TOKENS for n in tokens.values())),
        "queries_cut_short": _num(sum(
            ag.query_cut and tokens.get((s.scenario_id, ag.name), MAX_TOKENS) < MAX_TOKENS
            for s in result.lab.scenarios for ag in s.agents)),
        "max_tokens": MAX_TOKENS,
    }
    return values


def _k_rows(a: Analysis, ks: Sequence[int]) -> list[list[str]]:
    """Rows of a shared-pool depth table: both pools, each figure beside its random value."""
    rows = []
    for k in ks:
        o, w = a.cell(SHARED_POOL, k), a.cell(SHARED_POOL_WITH_OWN, k)
        rows.append([k, f"{_pct(o['pair_leak'])} (random {_pct(o['random_pair_leak'])})",
                     f"{_pct(o['item_leak'])} (random {_pct(o['random_item_leak'])})",
                     f"{_pct(o['shareable_recall'])} (random "
                     f"{_pct(o['random_shareable_recall'])})",
                     f"{_pct(w['pair_leak'])} (random {_pct(w['random_pair_leak'])})"])
    return rows


K_HEADERS = ["k (in all)", "leak, pairs: pool of others", "leak, items: pool of others",
             "shareable recall: pool of others", "leak, pairs: pool with own"]


def report_values(a: Analysis, info: dict[str, Any]) -> dict[str, str]:
    """Every figure the MAGPIE section states, formatted, by template placeholder name.

    Counts come from ``info`` (the run's :func:`dataset_dict`) and the analysis; the paper's
    figures from :data:`PAPER`. A test renders two subsets and checks the counts against the data.
    """
    k = a.result.k
    ds = info["dataset"]
    rel = a.relevance
    pol = {r["policy"]: r for r in a.policies.to_dict(orient="records")}
    b, c, d = (pol[p] for p in BUREAU_POLICIES)
    a1 = a.cell(SHARED_POOL)
    paper_hint_share = PAPER["hint_items"] / PAPER["private_preferences"]
    paper_rows = [
        ["Relevance AUROC (shareable vs private)", f"{PAPER['relevance_auroc']:.3f}",
         f"{rel['pooled']:.3f} (task query; {_ci(a.intervals['auroc_task_query'], False)}); "
         f"{rel['by_query']['role_task']:.3f} (role: task); {rel['per_scenario_mean']:.3f} mean "
         f"of {rel['scenarios_scored']} scenarios"],
        ["Private leak rate, relevance retrieval", _pct(PAPER["private_leak_rate"]),
         f"{_pct(a1['item_leak'])} of private items reach at least one other agent; "
         f"{_pct(a1['pair_leak'])} of (requester, private item) pairs (pool of others, top-{k}; "
         f"random {_pct(a1['random_item_leak'])} / {_pct(a1['random_pair_leak'])})"],
        ["Private leak rate behind the bureau boundary", "–",
         f"{_pct(b['private_leak_rate_pairs'])} (b), "
         f"{_pct(c['private_leak_rate_pairs'])} (c), {_pct(d['private_leak_rate_pairs'])} (d)"],
        ["Private items with a safe hint (abstraction)",
         f"{PAPER['hint_items']} of {PAPER['private_preferences']:,} ({_pct(paper_hint_share)}; "
         f"{PAPER['checked']['maas_hint_items']})",
         f"{ds['safe_abstraction_private_preferences']} of {ds['private_preferences']:,} "
         f"private_preferences (+{ds['safe_abstraction_private_information']} of "
         f"{ds['private_information']} private_information) = {ds['safe_abstraction']} of "
         f"{ds['private']:,}"],
    ]
    strict_rows = [
        [r["label"], _pct(r["private_leak_rate_pairs_at_threshold"]),
         _pct(r["shareable_recall_at_threshold"])]
        for r in pol.values()
    ]
    domains = a.domains
    dom_a = domains[domains["policy"] == SHARED_POOL].sort_values(
        ["leak_rate_pairs", "private_pairs"], ascending=[False, False]
    )
    leaky = int((dom_a["leak_rate_pairs"] > 0).sum())
    bureau = domains[domains["policy"].isin(BUREAU_POLICIES)]
    bureau_leaky = int((bureau["leak_rate_pairs"] > 0).sum())
    shown = pd.concat([dom_a.head(MOST_LEAKY_DOMAINS), dom_a.tail(LEAST_LEAKY_DOMAINS)])
    dom_rows = [
        [r["domain"], f"{r['private_pairs']}", _pct(r["leak_rate_pairs"]),
         _pct(r["random_leak_rate_pairs"]), _pct(r["leak_rate_items"]),
         _pct(r["shareable_recall"]),
         "n/a" if pd.isna(r["auroc_a_mean"]) else f"{r['auroc_a_mean']:.2f}"]
        for r in shown.drop_duplicates("domain").to_dict(orient="records")
    ]
    ks = pool_ks(k)
    near = min(ks, key=lambda kk: abs((a.cell(SHARED_POOL, kk)["item_leak"] or 0)
                                      - PAPER["private_leak_rate"]))
    eng = info["setup"]["engine_check"]
    return {name: str(value) for name, value in {
        **_common_values(a),
        "scenarios": _num(ds["scenarios"]),
        "agents": _num(ds["agents"]),
        "shareable": _num(ds["shareable"]),
        "private": _num(ds["private"]),
        "private_information": _num(ds["private_information"]),
        "hints_private_preferences": _num(ds["safe_abstraction_private_preferences"]),
        "paper_auroc": f"{PAPER['relevance_auroc']:.3f}",
        "paper_leak": _pct(PAPER["private_leak_rate"]),
        "paper_hint_items": _num(PAPER["hint_items"]),
        "paper_table": _md_table(["figure", "paper (MaaS)", "this run"], paper_rows),
        "threshold": f"{a.threshold:.2f}",
        "strict_table": _md_table(["policy", "private leak (pairs)", "shareable recall"],
                                  strict_rows),
        "plot_tradeoff": f"{a.slug}_{PLOTS['tradeoff']}",
        "plot_baseline": f"{a.slug}_{PLOTS['baseline']}",
        "plot_roc": f"{a.slug}_{PLOTS['roc']}",
        "plot_domains": f"{a.slug}_{PLOTS['domains']}",
        "domains": len(dom_a),
        "leaky_domains": leaky,
        "bureau_leaky_cells": bureau_leaky,
        "domain_table": _md_table(
            ["domain", "private pairs", "leak (pairs)", "random (pairs)", "leak (items)",
             "shareable recall", "AUROC (task query, mean of scenarios)"],
            dom_rows,
        ),
        "engine_same_topk": _num(eng.get("same_topk", 0)),
        "engine_queries": _num(eng.get("queries", 0)),
        "engine_max_score_diff": f"{eng.get('max_score_diff', float('nan')):.1e}",
        "nearest_k": near,
        "nearest_k_leak": _pct(a.cell(SHARED_POOL, near)["item_leak"]),
        "k_table": _md_table(K_HEADERS, _k_rows(a, ks)),
    }.items()}


def social_values(a: Analysis, info: dict[str, Any]) -> dict[str, str]:
    """Every figure the AgentSocialBench section states, by template placeholder name."""
    ds = info["dataset"]
    pairing = pairing_stats(a.result.lab.dataset)
    total = pairing["all"]
    board = AGENTSOCIALBENCH_LEADERBOARD
    domains = a.domains.set_index(["policy", "domain"])
    cat_rows = []
    for category in IN_SCOPE:
        if (SHARED_POOL, category) not in domains.index:
            continue
        o = domains.loc[(SHARED_POOL, category)]
        own = domains.loc[(SHARED_POOL_WITH_OWN, category)]
        bureau_leak = max(domains.loc[(p, category), "leak_rate_pairs"] for p in BUREAU_POLICIES)
        lo, hi = board["leak_rate"][category]
        cat_rows.append([category, _num(int(o["private_pairs"])), _pct(o["leak_rate_pairs"]),
                         _pct(o["random_leak_rate_pairs"]), _pct(own["leak_rate_pairs"]),
                         _pct(bureau_leak),
                         f"{_pct(lo)}–{_pct(hi)}"])
    pair_rows = [[s.category, _num(s.private_items), _num(s.exact), _num(s.fuzzy),
                  _num(s.unpaired), f"{s.unused_keys:,} of {s.abstraction_keys:,}"]
                 for s in pairing.values()]
    ks = sorted({*SOCIAL_KS, a.result.k, 2 * a.result.k})
    return {name: str(value) for name, value in {
        **_common_values(a),
        "scenarios": _num(ds["scenarios"]),
        "agents": _num(ds["agents"]),
        "shareable": _num(ds["shareable"]),
        "private": _num(ds["private"]),
        "cross_domain": _num(ds["cross_domain"]),
        "mediated_comm": _num(ds["mediated_comm"]),
        "cross_user": _num(ds["cross_user"]),
        "skipped": _num(ds["skipped"]),
        "paired": _num(total.paired),
        "paired_items": _num(total.private_items),
        "exact": _num(total.exact),
        "fuzzy": _num(total.fuzzy),
        "unpaired": _num(total.unpaired),
        "pairing_table": _md_table(["category", "private items", "exact", "fuzzy", "none",
                                    "keys unused"], pair_rows),
        "social_k_table": _md_table(K_HEADERS, _k_rows(a, ks)),
        "category_table": _md_table(
            ["category", "private pairs", f"shared pool of others, top-{a.result.k} (pairs)",
             "random (pairs)", f"pool with own items, top-{a.result.k}", "bureau b–d (pairs)",
             f"published LLM agents, no privacy guidance ({board['models']} models)"],
            cat_rows,
        ),
        "board_models": board["models"],
        "plot_baseline": f"{a.slug}_{PLOTS['baseline']}",
        "plot_tradeoff": f"{a.slug}_{PLOTS['tradeoff']}",
    }.items()}


def mediated_values(a: Analysis, judged: dict[str, Any] | None = None,
                    revealed: dict[str, Any] | None = None) -> dict[str, str]:
    """Every figure of a run's policy-e part, by template placeholder name (``judged`` and
    ``revealed``: the checks on the hand-judged samples, :mod:`bureau.labs.leakage.metrics.judged`)."""
    m, k = a.mediated, a.result.k
    pol = {r["policy"]: r for r in a.policies.to_dict(orient="records")}
    a1, a2 = a.cell(SHARED_POOL), a.cell(SHARED_POOL, 2 * k)
    rows = [
        [POLICY_LABELS[SHARED_POOL] + f", top-{k}", f"{k} in all", _pct(a1["pair_leak"]),
         _pct(a1["shareable_recall"]), "—"],
        [POLICY_LABELS[SHARED_POOL] + f", top-{2 * k}", f"{2 * k} in all",
         _pct(a2["pair_leak"]), _pct(a2["shareable_recall"]), "—"],
    ]
    for p in BUREAU_POLICIES:
        r = pol[p]
        rows.append([POLICY_LABELS[p], f"{k} per scope (own + board)",
                     _pct(r["private_leak_rate_pairs"]),
                     _pct(r["shareable_recall"]),
                     f"{r['abstraction_pairs_delivered']:,} pairs (published)" if p ==
                     "d_bureau_abstractions" else "—"])
    rows.append(["e: bureau + mediation", f"{k} per other agent, decided",
                 _pct(m["pair_leak"]), _pct(m["min_info_recall"]),
                 f"{_pct(m['abstract_coverage'])} ({m['abstract_pairs']:,} pairs)"])
    actions = m["private_actions"]
    if a.kind == "agentsocialbench":
        total = pairing_stats(a.result.lab.dataset)["all"]
        pairing = (f"AgentSocialBench's `acceptable_abstractions` are keyed by short phrases, "
                   f"not by the `must_not_cross` sentences, so they are paired first exactly, then "
                   f"by key containment (`bureau.labs.leakage.datasets.agentsocialbench`): {total.paired:,} "
                   f"of {total.private_items:,} private items pair ({total.exact:,} exact, "
                   f"{total.fuzzy:,} fuzzy), {total.unpaired:,} have no abstraction and are "
                   f"withheld whole, and {total.unused_keys:,} of {total.abstraction_keys:,} keys "
                   "pair with no sentence.")
    else:
        private = [i for i in a.result.lab.items if i.label == "private"]
        n = sum(1 for i in private if i.abstraction)
        pairing = (f"MAGPIE has no abstraction field: the hint rule of `bureau.labs.leakage.datasets.magpie` "
                   f"gives {n:,} of {len(private):,} private items a safe abstraction; "
                   "every other private item can only be withheld.")
    values = {
        "dataset_name": a.name,
        "k": k,
        "threshold": a.threshold,
        "every_card": EVERY_CARD,
        "policy_file": "scenarios/policies/leak-lab.yaml",
        "requests": _num(m["requests"]),
        "decisions": _num(m["decisions"]),
        "private_pairs": _num(m["private_pairs"]),
        "raw": _num(m["raw_private_reveals"]),
        "probe_raw": _num(m["probe"]["raw_private_reveals"]),
        "probes": _num(m["probe"]["probes"]),
        "probe_decisions": _num(m["probe"]["decisions"]),
        "probe_abstracts": _num(m["probe"]["abstracts_released"]),
        "probe_withheld": _num(m["probe"]["withheld"]),
        "probe_limit": PROBE_LIMIT,
        "recall": _pct(m["min_info_recall"]),
        "recall_pairs": f"{m['min_info_revealed_pairs']:,}/{m['shareable_pairs']:,}",
        "coverage": _pct(m["abstract_coverage"]),
        "coverage_pairs": f"{m['abstract_pairs']:,}/{m['private_pairs_with_abstraction']:,}",
        "coverage_all": _pct(m["abstract_coverage_all"]),
        "coverage_strict": _pct(m["abstract_coverage_at_threshold"]),
        "recall_strict": _pct(m["min_info_recall_at_threshold"]),
        "abs_leak": _pct(m["abstraction_leakage"]),
        "abs_leaky": _num(m["abstractions_with_leaked_terms"]),
        "abs_distinct": _num(m["distinct_abstractions_released"]),
        "private_actions": ", ".join(f"{n:,} {act}" for act, n in sorted(actions.items()))
        or "none",
        "audit": _num(m["audit_entries"]),
        "pairing": pairing,
        "compare_table": _md_table(["policy", "cards read", "private pairs leaked (raw)",
                                    "shareable / minimum-info recall", "abstractions"], rows),
        "plot_mediation": f"{a.slug}_{PLOTS['mediation']}",
        **measured_values(a),
        **judged_values(judged or {}),
        **revealed_values(revealed or {}),
    }
    return {name: str(value) for name, value in values.items()}


def _check_lines(judged: dict[str, Any], names: dict[str, str]) -> str:
    """Each named check of a judged sample: flags, precision / recall on each reading."""
    parts = []
    for key, label in names.items():
        if judged.get("judged") and key in judged:
            d, h = judged[key]["discloses"], judged[key]["discloses_or_hints"]
            parts.append(f"{label} flags {judged[key]['flagged']}, precision {_pct(d['precision'])}"
                         f" / recall {_pct(d['recall'])} on the {d['positives']} that disclose, "
                         f"{_pct(h['precision'])} / {_pct(h['recall'])} on the {h['positives']} "
                         "that disclose or hint")
    return "; ".join(parts) or "n/a"


TERM_CHECK_LABELS = {"checker": "the mediator's check", "checker_without_known_names":
                     "the same without known names", "term_repetition": "term repetition"}


def judged_values(judged: dict[str, Any]) -> dict[str, str]:
    """Each abstraction check's precision and recall on the hand-judged sample."""
    return {"judged_n": _num(int(judged.get("judged", 0))),
            "judged_line": _check_lines(judged, TERM_CHECK_LABELS)}


def revealed_values(judged: dict[str, Any]) -> dict[str, str]:
    """Each check's precision and recall on the hand-judged revealed items."""
    counts = judged.get("judgements", {})
    scored = (judged.get("content_mediator") or {}).get("scored", 0)
    names = {"policy_e_labels": "e's labels",
             "content_mediator": f"the content mediator ({scored} scored in this run)",
             **TERM_CHECK_LABELS}
    return {"revealed_n": _num(int(judged.get("judged", 0))),
            "revealed_counts": " / ".join(str(counts.get(j, counts.get(str(j), 0)))
                                          for j in (2, 1, 0)),
            "revealed_line": _check_lines(judged, names)}


def measured_values(a: Analysis) -> dict[str, str]:
    """The figures beside e's wiring check (:mod:`bureau.labs.leakage.policies.measured`, term repetition)."""
    w, cm = a.measured["wiring_check"], a.measured["content_mediator"]
    noise, by_k, rep = a.measured["label_noise"], a.measured["recall_by_k"], a.repetition
    rows = "; ".join(f"{rate:.0%} flipped → leak {_pct(r['leak'])} ({_pct(r['leak_range'][0])}–"
                     f"{_pct(r['leak_range'][1])}), recall {_pct(r['recall'])}"
                     for rate, r in noise.get("rates", {}).items()) or "n/a"
    curve = ", ".join(f"{_pct(v)} at k = {k}" for k, v in by_k.get("recall_at_k", {}).items())
    holders = by_k.get("holder_items", {})
    nan = float("nan")
    return {name: str(v) for name, v in {
        "wiring_private": _num(w["private_card_decisions"]),
        "wiring_revealed": _num(w["private_cards_revealed"]),
        "wiring_shareable": _num(w["shareable_card_decisions"]),
        "categories": cm.get("categories", 0),
        "threshold_content": f"cosine {cm.get('threshold', nan):.3f}",
        "eval_scenarios": _num(cm.get("evaluation_scenarios", 0)),
        "eval_decisions": _num(cm.get("evaluation_decisions", 0)),
        "content_leak": _pct(cm.get("content", {}).get("leak", nan)),
        "content_recall": _pct(cm.get("content", {}).get("recall", nan)),
        "random_line": _pct(cm.get("random", {}).get("leak", nan)),
        "content_auroc": f"{cm.get('auroc', nan):.3f}",
        "rule_matches": "yes" if noise.get("rule_matches_service") else "NO",
        "noise_rows": rows,
        "noise_seeds": next(iter(noise.get("rates", {}).values()), {}).get("seeds", 0),
        "recall_curve": curve or "n/a",
        "holder_min": holders.get("min", 0),
        "holder_max": holders.get("max", 0),
        "holder_median": f"{holders.get('median', nan):g}",
        "c_share": f"{by_k.get('c_shareable_per_requester', nan):.2f}",
        "k_match": by_k.get("k_matching_c"),
        "recall_match": _pct(by_k.get("recall_at_matching_k", nan)),
        "rep_rate": _pct(rep["repeating_rate"]),
        "rep_n": _num(rep["repeating_a_term"]),
        "rep_mean": _pct(rep["mean_term_repetition"]),
        "checker_unknown": _num(rep["checker_flags_without_known_names"]),
    }.items()}


def benchmark_values(info: dict[str, Any]) -> dict[str, str]:
    bench = info["benchmark"]
    rows = [["lab wall time", f"{bench['lab_seconds']:.1f} s"]]
    rows += [[f"… of which {name}", f"{sec:.1f} s"]
             for name, sec in bench["lab_seconds_per_dataset"].items()]
    rows += [
        ["texts embedded (distinct texts)",
         f"{bench['texts_embedded']:,} ({bench['distinct_texts']:,})"],
        ["tokens embedded", f"{bench['tokens_embedded']:,}"],
        ["tokens/s inside the lab (encoder busy time)", f"{bench['tokens_per_second']:,.0f}"],
        ["embedding alone (fresh encoder, no cache)",
         f"{bench['embed_alone_seconds']:.1f} s "
         f"({bench['embed_alone_tokens_per_second']:,.0f} tokens/s)"],
        ["lab / embedding alone", f"{bench['ratio_lab_to_embedding']:.2f}× "
         f"(target ≤ {bench['target_ratio']}×)"],
        ["machine at the start (busy cores)",
         f"{bench['busy_at_start']:.2f}: " + ("one embedding worker stepped back"
                                              if bench["stepped_back"] else
                                              "no embedding worker stepped back")],
    ]
    phases = []
    for name, d in info["datasets"].items():
        t = d["timings"]
        phases.append(f"{name}: " + ", ".join(
            f"{p} {t[p]:.1f}" for p in ("embed_wait", "seed", "publish", "abstractions",
                                        "retrieve", "probe", "mediated", "mediated_probe",
                                        "shared_pool", "frames")))
    t_all = [d["timings"] for d in info["datasets"].values()]
    load = info["environment"]["load_average_1_5_15_at_end"]
    return {
        "benchmark_table": _md_table(["figure", "value"], rows),
        "phases": "; ".join(phases),
        "cards_written": _num(sum(t["cards_written"] for t in t_all)),
        "searches": _num(sum(t["searches"] for t in t_all)),
        "load": "n/a" if not load else " / ".join(f"{x:.2f}" for x in load),
        "cpus": str(info["environment"]["cpus"]),
    }


def render_report(analyses: Sequence[Analysis], info: dict[str, Any]) -> str:
    """report.md: one section per run (its benchmark's part of the template), then the timing
    section when the run was timed.

    ``Template.substitute`` raises on a placeholder without a value, so a figure the template
    names can never be left out silently.
    """
    parts = load_template()
    texts = []
    judged = info["abstraction_checks_on_judged_sample"]
    revealed = info["revealed_checks_on_judged_sample"]
    for a in analyses:
        dinfo = info["datasets"][a.name]
        if a.kind == "agentsocialbench":
            texts.append(parts["agentsocialbench"].substitute(social_values(a, dinfo)))
        else:
            texts.append(parts["magpie"].substitute(report_values(a, dinfo)))
        texts.append(parts["mediated"].substitute(mediated_values(a, judged, revealed)))
    if "benchmark" in info:
        texts.append(parts["benchmark"].substitute(benchmark_values(info)))
    return "\n".join(t.strip("\n") + "\n" for t in texts)
