"""Leakage metrics on tables small enough to compute by hand (the expected numbers are derived in
the comments, not from the code under test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bureau.labs.leakage.datasets.magpie import load_magpie
from bureau.labs.leakage.metrics.metrics import (
    COLUMNS,
    bootstrap_auroc,
    bootstrap_rates,
    exposure_frame,
    per_domain,
    per_scenario_auroc,
    pooled_auroc,
    private_leak_rate_items,
    private_leak_rate_pairs,
    random_draw_probability,
    random_expectations,
    relevance_auroc,
    resample_counts,
    roc_points,
    scenario_totals,
    shareable_recall,
)

MINI = Path(__file__).resolve().parents[1] / "data" / "magpie_mini"


def table(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(COLUMNS))


@pytest.fixture
def exposures() -> pd.DataFrame:
    """s1 (domain d1): agents A, B, C; A owns private pa + shareable sa, B owns private pb, C owns
    shareable sc. s2 (domain d2): X owns private px, Y owns shareable sy."""
    return table(
        [
            ("s1", "d1", "A", "pa", "A", "private", True, 0.0),  # own item: ignored
            ("s1", "d1", "B", "pa", "A", "private", True, 0.8),  # leak
            ("s1", "d1", "C", "pa", "A", "private", False, 0.1),
            ("s1", "d1", "A", "pb", "B", "private", False, 0.3),
            ("s1", "d1", "C", "pb", "B", "private", False, 0.2),
            ("s1", "d1", "B", "sa", "A", "shareable", True, 0.7),
            ("s1", "d1", "C", "sa", "A", "shareable", True, 0.6),
            ("s1", "d1", "A", "sc", "C", "shareable", False, 0.4),
            ("s1", "d1", "B", "sc", "C", "shareable", True, 0.5),
            ("s2", "d2", "Y", "px", "X", "private", True, 0.9),  # leak
            ("s2", "d2", "X", "sy", "Y", "shareable", False, 0.1),
        ]
    )


def test_private_leak_rate_pairs(exposures: pd.DataFrame) -> None:
    # other-agent private pairs: pa->B, pa->C, pb->A, pb->C, px->Y = 5; leaked: pa->B, px->Y = 2
    assert private_leak_rate_pairs(exposures) == pytest.approx(2 / 5)


def test_private_leak_rate_items(exposures: pd.DataFrame) -> None:
    # private items pa (leaked to B), pb (never), px (leaked to Y): 2 of 3
    assert private_leak_rate_items(exposures) == pytest.approx(2 / 3)


def test_own_items_are_not_leaks() -> None:
    own_only = table([("s", "d", "A", "p", "A", "private", True, 1.0)])
    assert np.isnan(private_leak_rate_pairs(own_only))
    assert np.isnan(private_leak_rate_items(own_only))


def test_shareable_recall(exposures: pd.DataFrame) -> None:
    # shareable pairs sa->B, sa->C, sc->A, sc->B, sy->X = 5; retrieved sa->B, sa->C, sc->B = 3
    assert shareable_recall(exposures) == pytest.approx(3 / 5)


def test_per_domain(exposures: pd.DataFrame) -> None:
    out = per_domain(exposures)
    assert list(out.index) == ["d1", "d2"]
    assert out.loc["d1"].to_dict() == pytest.approx(
        {
            "private_pairs": 4,
            "leak_rate_pairs": 1 / 4,
            "private_items": 2,
            "leak_rate_items": 1 / 2,
            "shareable_pairs": 4,
            "shareable_recall": 3 / 4,
        }
    )
    assert out.loc["d2"].to_dict() == pytest.approx(
        {
            "private_pairs": 1,
            "leak_rate_pairs": 1.0,
            "private_items": 1,
            "leak_rate_items": 1.0,
            "shareable_pairs": 1,
            "shareable_recall": 0.0,
        }
    )
    assert out["private_pairs"].dtype.kind == "i"


def test_relevance_auroc_by_hand() -> None:
    # positives (shareable) 0.9, 0.6, 0.4; negatives (private) 0.5, 0.2.
    # Winning (pos, neg) pairs: 0.9 beats both (2), 0.6 beats both (2), 0.4 beats 0.2 (1) -> 5/6.
    scores = [0.9, 0.6, 0.4, 0.5, 0.2]
    labels = ["shareable", "shareable", "shareable", "private", "private"]
    assert relevance_auroc(scores, labels) == pytest.approx(5 / 6)
    assert relevance_auroc(scores, [1, 1, 1, 0, 0]) == pytest.approx(5 / 6)
    # a tie counts half: 0.5 vs 0.5 -> 2 + 1.5 + 1 = 4.5 of 6
    assert relevance_auroc([0.9, 0.5, 0.4, 0.5, 0.2], labels) == pytest.approx(0.75)


def test_roc_points_by_hand() -> None:
    # Descending: 0.9 P, 0.6 P, 0.5 N, 0.4 P, 0.2 N -- one step per threshold after (0, 0).
    pts = roc_points([0.9, 0.6, 0.4, 0.5, 0.2], [1, 1, 1, 0, 0])
    assert list(pts.columns) == ["fpr", "tpr", "threshold"]
    assert pts["threshold"].tolist()[1:] == pytest.approx([0.9, 0.6, 0.5, 0.4, 0.2])
    assert pts["fpr"].tolist() == pytest.approx([0, 0, 0, 0.5, 0.5, 1])
    assert pts["tpr"].tolist() == pytest.approx([0, 1 / 3, 2 / 3, 2 / 3, 1, 1])
    area = float(np.sum(np.diff(pts["fpr"]) * (pts["tpr"].to_numpy()[1:])))
    assert area == pytest.approx(5 / 6)


def test_pooled_auroc_uses_other_agent_pairs(exposures: pd.DataFrame) -> None:
    # positives 0.7, 0.6, 0.4, 0.5, 0.1; negatives 0.8, 0.1, 0.3, 0.2, 0.9 (the own row's 0.0 would add
    # 5 easy wins: 17.5/30)
    # wins: 0.7 -> 3 (0.1, 0.3, 0.2); 0.6 -> 3; 0.4 -> 3; 0.5 -> 3; 0.1 -> tie with 0.1 = 0.5
    assert pooled_auroc(exposures) == pytest.approx(12.5 / 25)


def test_per_scenario_auroc_skips_single_class() -> None:
    df = table(
        [
            # s1: shareable 0.8, 0.3 vs private 0.5 -> 1 of 2
            ("s1", "d", "A", "x1", "B", "shareable", False, 0.8),
            ("s1", "d", "A", "x2", "B", "shareable", False, 0.3),
            ("s1", "d", "B", "x3", "A", "private", False, 0.5),
            # s2: shareable 0.9 vs private 0.1 -> 1
            ("s2", "d", "A", "y1", "B", "shareable", False, 0.9),
            ("s2", "d", "B", "y2", "A", "private", False, 0.1),
            # s3: private only -> skipped; s4: other class only via an own row -> skipped
            ("s3", "e", "A", "z1", "B", "private", False, 0.4),
            ("s4", "e", "A", "w1", "B", "private", False, 0.4),
            ("s4", "e", "B", "w2", "B", "shareable", False, 0.9),
        ]
    )
    result = per_scenario_auroc(df)
    assert result.skipped == ("s3", "s4")
    assert result.n_skipped == 2
    assert result.table["scenario_id"].tolist() == ["s1", "s2"]
    assert result.table["auroc"].tolist() == pytest.approx([0.5, 1.0])
    assert result.table[["n_shareable", "n_private"]].to_numpy().tolist() == [[2, 1], [1, 1]]
    assert result.mean == pytest.approx(0.75)


def test_invalid_tables_are_rejected(exposures: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="duplicate"):
        private_leak_rate_pairs(pd.concat([exposures, exposures.iloc[[1]]]))
    with pytest.raises(ValueError, match="label must be"):
        shareable_recall(exposures.assign(label="secret"))
    with pytest.raises(ValueError, match="lacks column"):
        private_leak_rate_items(exposures.drop(columns="owner"))
    with pytest.raises(ValueError, match="no score"):
        per_scenario_auroc(exposures.assign(score=np.nan))
    with pytest.raises(ValueError, match="one class"):
        relevance_auroc([0.1, 0.2], ["private", "private"])
    with pytest.raises(ValueError, match="labels must be"):
        relevance_auroc([0.1, 0.2], ["private", "public"])


def test_exposure_frame_on_mini() -> None:
    data = load_magpie(MINI)
    grid = exposure_frame(data)
    # 3 agents per scenario: each of the 23 items is exposed to the 2 other agents
    assert len(grid) == 46
    assert grid["label"].value_counts().to_dict() == {"shareable": 26, "private": 20}
    assert not (grid["requester"] == grid["owner"]).any()
    assert not grid["retrieved"].any() and grid["score"].isna().all()
    assert list(grid.columns) == list(COLUMNS)
    assert exposure_frame(data.to_frame()).equals(grid)
    # nothing retrieved: no leak, no recall
    assert private_leak_rate_pairs(grid) == 0.0 and shareable_recall(grid) == 0.0
    # an owner-blind "return everything" policy leaks every private item to everyone
    everything = grid.assign(retrieved=True)
    assert private_leak_rate_items(everything) == 1.0 and shareable_recall(everything) == 1.0


# --- random baseline ------------------------------------------------------------------------------


def test_random_draw_probability_by_hand() -> None:
    # k = 2 draws: pool of 4 -> 2/4; pool of 2 -> everything; pool of 1 -> everything; no pool
    assert random_draw_probability([4, 2, 1, 0], 2).tolist() == [0.5, 1.0, 1.0, 0.0]
    assert random_draw_probability([10], 5).tolist() == [0.5]


def baseline_table() -> pd.DataFrame:
    """One scenario: A, B and C each ask, k = 1. Pools of others: A and C see 4 items, B sees 2.
    p(drawn): A 1/4, B 1/2, C 1/4. Private items: pa (owner A, seen by B and C), pb (owner B, seen
    by A and C). Shareable: sc (owner C, seen by A and B)."""
    rows = [
        ("s", "d", "B", "pa", "A", "private", False, 0.0, 0.5),
        ("s", "d", "C", "pa", "A", "private", False, 0.0, 0.25),
        ("s", "d", "A", "pb", "B", "private", False, 0.0, 0.25),
        ("s", "d", "C", "pb", "B", "private", False, 0.0, 0.25),
        ("s", "d", "A", "sc", "C", "shareable", False, 0.0, 0.25),
        ("s", "d", "B", "sc", "C", "shareable", False, 0.0, 0.5),
    ]
    return pd.DataFrame(rows, columns=[*COLUMNS, "p_random"])


def test_random_expectations_by_hand() -> None:
    got = random_expectations(baseline_table())
    # pairs: (0.5 + 0.25 + 0.25 + 0.25) / 4 = 0.3125
    assert got["pair_leak"] == pytest.approx(0.3125)
    # items: pa escapes unless B and C both miss: 1 - 0.5 * 0.75 = 0.625;
    #        pb: 1 - 0.75 * 0.75 = 0.4375; mean = 0.53125
    assert got["item_leak"] == pytest.approx(0.53125)
    # recall: (0.25 + 0.5) / 2 = 0.375
    assert got["shareable_recall"] == pytest.approx(0.375)


def test_random_expectations_match_a_monte_carlo() -> None:
    """Draw k items uniformly without replacement from each requester's pool, many times, and
    score the draws with the lab's own leak functions: the exact expectations must agree."""
    rng = np.random.default_rng(7)
    # one scenario, four agents with 3, 2, 4, 1 items; private every other item
    owners = [o for o, n in zip("ABCD", (3, 2, 4, 1), strict=True) for _ in range(n)]
    items = pd.DataFrame({
        "scenario_id": "s", "domain": "d", "item_id": [f"i{n}" for n in range(len(owners))],
        "agent": owners, "label": ["private" if n % 2 else "shareable"
                                   for n in range(len(owners))]})
    grid = exposure_frame(items)
    k = 3
    sizes = grid.groupby("requester")["item_id"].transform("size")
    exact = random_expectations(grid.assign(p_random=random_draw_probability(sizes, k)))
    # numpy rather than the lab's functions per draw (fast enough for 20,000 draws); the lab's
    # own functions score one draw below, so the definitions are the same
    private = (grid["label"] == "private").to_numpy()
    item_idx = pd.factorize(grid["item_id"])[0]
    pools = [np.flatnonzero(grid["requester"].to_numpy() == r) for r in grid["requester"].unique()]
    runs = {"pair_leak": [], "item_leak": [], "shareable_recall": []}
    for n in range(20000):
        retrieved = np.zeros(len(grid), dtype=bool)
        for pool in pools:
            retrieved[rng.choice(pool, size=min(k, len(pool)), replace=False)] = True
        leaked = np.zeros(item_idx.max() + 1, dtype=bool)
        np.logical_or.at(leaked, item_idx[private], retrieved[private])
        runs["pair_leak"].append(retrieved[private].mean())
        runs["item_leak"].append(leaked[np.unique(item_idx[private])].mean())
        runs["shareable_recall"].append(retrieved[~private].mean())
        if n == 0:
            sample = grid.assign(retrieved=retrieved)
            assert private_leak_rate_pairs(sample) == runs["pair_leak"][0]
            assert private_leak_rate_items(sample) == runs["item_leak"][0]
            assert shareable_recall(sample) == runs["shareable_recall"][0]
    for name, values in runs.items():
        assert np.mean(values) == pytest.approx(exact[name], abs=0.005), name


# --- bootstrap ------------------------------------------------------------------------------------


def test_scenario_totals_and_bootstrap(exposures: pd.DataFrame) -> None:
    table = exposures.assign(p_random=0.5)
    totals = scenario_totals(table)
    # s1: private pairs pa->B, pa->C, pb->A, pb->C (1 leaked); items pa, pb (1 leaked);
    #     shareable pairs sa->B, sa->C, sc->A, sc->B (3 retrieved). s2: px->Y leaked; sy->X not.
    assert totals.loc["s1", ["private_pairs", "leaked_pairs", "private_items", "leaked_items",
                             "shareable_pairs", "retrieved_shareable"]].tolist() == [4, 1, 2, 1,
                                                                                      4, 3]
    assert totals.loc["s2", ["private_pairs", "leaked_pairs", "shareable_pairs"]].tolist() == [
        1, 1, 1]
    # random items: each of pa, pb escapes with 1 - 0.5 * 0.5 = 0.75
    assert totals.loc["s1", "random_leaked_items"] == pytest.approx(1.5)
    counts = resample_counts(2, n=500, seed=0)
    assert counts.shape == (500, 2) and (counts.sum(axis=1) == 2).all()
    assert (resample_counts(2, n=500, seed=0) == counts).all()  # fixed seed, same resamples
    ci = bootstrap_rates(totals, counts)
    lo, hi = ci["pair_leak"]
    # resamples can hold s1 twice (1/4), s2 twice (2/2) or both (2/5): the interval spans them
    assert lo == pytest.approx(0.25) and hi == pytest.approx(1.0)
    assert ci["random_pair_leak"] == pytest.approx((0.5, 0.5))
    lo, hi = bootstrap_auroc(exposures, counts, ["s1", "s2"])
    assert 0.0 <= lo <= pooled_auroc(exposures) <= hi <= 1.0
