"""Policy e beside what could fail (``bureau.labs.leakage.policies.measured``), on hand-made decision tables.

* e's wiring check counts private-card decisions (not every decision) and a revealed private
  card shows up in it;
* the content mediator: its threshold comes from the calibration half only, and its leak and
  recall are scored against the labels it never saw (a score that separates the labels gives
  leak 0 / recall 1, a score that says nothing falls to the random line);
* label noise: the count flipped is exact and seeded, 0 % reproduces the service, 100 % turns
  every private card into a reveal, and a rule that disagrees with the recorded actions is caught;
* recall by budget: e's recall at each per-owner k, worked out by hand from a probe table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bureau.labs.leakage.datasets.labset import LabAgent, LabItem, LabScenario, LabSet
from bureau.labs.leakage.policies.measured import (
    CONTENT_COLUMNS,
    SENSITIVE_CATEGORIES,
    best_threshold,
    content_mediator,
    content_scores,
    flipped_items,
    label_noise,
    measured_summary,
    recall_by_k,
    split_of,
)
from bureau.labs.leakage.result import DECISION_COLUMNS, LabResult, Timings


def _ids() -> tuple[str, str]:
    """One scenario id of each split (the split is a hash, so the test looks them up)."""
    cal = next(f"s{n}" for n in range(100) if split_of(f"s{n}") == "calibration")
    ev = next(f"s{n}" for n in range(100) if split_of(f"s{n}") == "evaluation")
    return cal, ev


def _lab(sids: tuple[str, ...], per: int = 4) -> LabSet:
    """Per scenario: Ana owns ``per`` items (even index private), Ben owns none and asks."""
    scenarios = []
    for sid in sids:
        items = tuple(
            LabItem(item_id=f"{sid}/i{j}", scenario_id=sid, domain="d", owner="Ana",
                    label="private" if j % 2 == 0 else "shareable", text=f"{sid} text {j}",
                    seed_key=f"m{j}", abstraction="vague" if j == 0 else None)
            for j in range(per))
        agents = (LabAgent("Ana", "ana", "q"), LabAgent("Ben", "ben", "q"))
        scenarios.append(LabScenario(sid, "d", None, agents, items, sid))  # type: ignore[arg-type]
    return LabSet(name="hand", scenarios=tuple(scenarios), counts={})


def _decisions(lab: LabSet, stage: str = "ask", scores: dict[str, float] | None = None
               ) -> pd.DataFrame:
    """Ben's decisions on every Ana item under e's rule (as the service records them)."""
    rows = []
    for i in lab.items:
        action = ("reveal" if i.label == "shareable" else
                  "abstract" if i.abstraction else "withhold")
        rows.append((stage, i.scenario_id, "Ben", "Ana", f"c-{i.item_id}", i.item_id, "Ana",
                     i.label, bool(i.abstraction), (scores or {}).get(i.item_id, 0.5), action,
                     "", "", False, ""))
    return pd.DataFrame(rows, columns=list(DECISION_COLUMNS))


def _result(lab: LabSet, decisions: pd.DataFrame, content: pd.DataFrame | None = None
            ) -> LabResult:
    return LabResult(lab=lab, k=5, pairs=pd.DataFrame(columns=["policy", "label", "retrieved"]),
                     retrievals=pd.DataFrame(), requests=pd.DataFrame(), queries={}, texts=[],
                     timings=Timings(), mediated=decisions, content=content)


def _content(lab: LabSet, score) -> pd.DataFrame:  # noqa: ANN001 - item -> float
    return pd.DataFrame([(i.scenario_id, i.item_id, i.label, score(i)) for i in lab.items],
                        columns=list(CONTENT_COLUMNS))


def test_wiring_check_counts_private_card_decisions():
    lab = _lab(_ids())
    dec = _decisions(lab)
    w = measured_summary(_result(lab, dec))["wiring_check"]
    assert (w["private_card_decisions"], w["shareable_card_decisions"]) == (4, 4)
    assert w["private_cards_revealed"] == 0
    dec.loc[dec["item_label"] == "private", "action"] = "reveal"  # a broken mediator
    w = measured_summary(_result(lab, dec))["wiring_check"]
    assert w["private_cards_revealed"] == 4


def test_best_threshold_by_hand():
    scores = np.array([0.9, 0.8, 0.3, 0.2])
    private = np.array([True, True, False, False])
    assert best_threshold(scores, private) == 0.8  # withhold >= 0.8: leak 0, recall 1
    assert best_threshold(np.array([0.5, 0.5]), np.array([True, False])) == float("inf")


def test_content_mediator_scored_against_hidden_labels():
    cal, ev = _ids()
    lab = _lab((cal, ev))
    dec = _decisions(lab)
    # A score that separates the labels: calibrated on `cal`, it is perfect on `ev` too.
    good = content_mediator(_result(lab, dec), _content(lab, lambda i: 0.9 if i.label ==
                                                        "private" else 0.1))
    assert good["evaluation_decisions"] == 4 and good["calibration_decisions"] == 4
    assert good["content"]["leak"] == 0.0 and good["content"]["recall"] == 1.0
    assert good["random"]["leak"] == good["random"]["recall"] == 0.5  # releases half
    assert good["auroc"] == 1.0
    assert good["labels"]["leak"] == 0.0 and good["labels"]["recall"] == 1.0
    # A score that says nothing: the best threshold withholds nothing, every card flows.
    flat = content_mediator(_result(lab, dec), _content(lab, lambda i: 0.4))
    assert flat["content"]["leak"] == 1.0 and flat["content"]["recall"] == 1.0
    assert flat["random"]["leak"] == 1.0 and flat["auroc"] == 0.5
    # The threshold is learnt on the calibration half only: there the score is inverted on the
    # evaluation half, so the evaluation figures come out as bad as they can.
    inverted = content_mediator(_result(lab, dec), _content(
        lab, lambda i: (0.9 if i.label == "private" else 0.1) if i.scenario_id == cal
        else (0.1 if i.label == "private" else 0.9)))
    assert inverted["content"]["leak"] == 1.0 and inverted["content"]["recall"] == 0.0


def test_content_scores_use_the_encoder_not_the_labels():
    lab = _lab(_ids()[:1], per=2)

    class Enc:
        def embed(self, texts):  # noqa: ANN001, ANN202 - the encoder's protocol
            assert len(texts) == len(SENSITIVE_CATEGORIES)
            return np.eye(len(texts), 3 + len(texts))[:, : len(texts)]

    vec = {lab.items[0].text: np.eye(len(SENSITIVE_CATEGORIES))[0] * 2.0,
           lab.items[1].text: np.ones(len(SENSITIVE_CATEGORIES))}
    got = content_scores(Enc(), lab, vec)
    assert list(got.columns) == list(CONTENT_COLUMNS)
    assert np.isclose(got["content_score"].iloc[0], 1.0)  # normalised, on category 0
    assert np.isclose(got["content_score"].iloc[1], 1 / np.sqrt(len(SENSITIVE_CATEGORIES)))


def test_flipped_items_exact_and_seeded():
    lab = _lab(_ids(), per=10)  # 20 items
    assert len(flipped_items(lab, 0.05, 0)) == 1
    assert len(flipped_items(lab, 0.10, 0)) == 2
    assert len(flipped_items(lab, 0.20, 3)) == 4
    assert flipped_items(lab, 0.2, 3) == flipped_items(lab, 0.2, 3)
    assert flipped_items(lab, 0.0, 0) == set()


def test_label_noise_by_hand():
    lab = _lab(_ids(), per=10)
    dec = _decisions(lab)
    out = label_noise(_result(lab, dec), rates=(0.0, 0.2, 1.0), seeds=(0, 1))
    assert out["rule_matches_service"] and out["decisions"] == 20
    assert out["rates"][0.0]["leak"] == 0.0 and out["rates"][0.0]["recall"] == 1.0
    assert out["rates"][1.0]["leak"] == 1.0 and out["rates"][1.0]["recall"] == 0.0
    # 20 %: 4 of 20 items flipped per seed; leak = flipped private / 10 private, by hand.
    keys = {(i.scenario_id, i.item_id): i.label for i in lab.items}
    want = np.mean([sum(keys[k] == "private" for k in flipped_items(lab, 0.2, s)) / 10
                    for s in (0, 1)])
    assert out["rates"][0.2]["leak"] == want
    # The simulation is tied to the run: a recorded action the rule would not take is caught.
    dec.loc[0, "action"] = "reveal"
    assert not label_noise(_result(lab, dec), rates=(0.0,), seeds=(0,))["rule_matches_service"]


def test_recall_by_k_by_hand():
    lab = _lab(_ids()[:1], per=4)  # Ana: i0 p, i1 s, i2 p, i3 s; Ben asks
    scores = {f"{lab.scenarios[0].scenario_id}/i{j}": s for j, s in enumerate([0.9, 0.8, 0.7,
                                                                               0.1])}
    probe = _decisions(lab, "probe", scores)
    got = recall_by_k(_result(lab, probe), ks=(1, 2, 3))
    # ranks: i0 (p) 1, i1 (s) 2, i2 (p) 3, i3 (s) 4; 2 shareable pairs
    assert got["recall_at_k"] == {1: 0.0, 2: 0.5, 3: 0.5}
    assert recall_by_k(_result(lab, probe), ks=(4, 9))["recall_at_k"] == {4: 1.0, 9: 1.0}
    assert got["holder_items"] == {"min": 4, "median": 4.0, "max": 4, "holders": 1}
    assert got["c_shareable_per_requester"] == 0.0 and got["k_matching_c"] == 1
    # Holders are counted per scenario: the same agent name in two scenarios is two holders.
    two = _lab(_ids(), per=3)
    assert recall_by_k(_result(two, _decisions(two, "probe")))["holder_items"] == {
        "min": 3, "median": 3.0, "max": 3, "holders": 2}
