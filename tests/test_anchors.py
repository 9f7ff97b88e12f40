"""The published anchors (``bureau.anchors``): one module, each figure with its definition and
where it was checked; the labs quote the same objects."""

from __future__ import annotations

from bureau import anchors
from bureau.labs.leakage.report.paper import AGENTSOCIALBENCH_LEADERBOARD, PAPER
from bureau.labs.poisoning import anchors as poisoning_anchors


def test_every_anchor_is_defined_and_says_whether_it_was_checked():
    keys = [a.key for a in anchors.ANCHORS]
    assert len(keys) == len(set(keys))
    for a in anchors.ANCHORS:
        assert a.source and a.figure and a.setting and a.differs and a.checked
        if not a.verified:
            assert a.checked.startswith("not checked"), a.key  # says so, in so many words
    assert {a.key for a in anchors.ANCHORS if not a.verified} >= {
        "agentpoison_asr_r", "agentpoison_attack_success", "minja_attack_success"}


def test_the_labs_quote_the_same_anchors():
    assert poisoning_anchors.AGENTPOISON is anchors.AGENTPOISON
    assert poisoning_anchors.ANCHORS == anchors.POISONING_ANCHORS
    assert PAPER["relevance_auroc"] == anchors.MAAS_RELEVANCE_AUROC.value
    assert PAPER["private_leak_rate"] == anchors.MAAS_PRIVATE_LEAK.value
    assert AGENTSOCIALBENCH_LEADERBOARD["leak_rate"] == {
        "cross_domain": (0.40, 0.67), "mediated_comm": (0.21, 0.30), "cross_user": (0.14, 0.29)}
    assert anchors.anchor("minja_attack_success") is anchors.MINJA


def test_memory_gating_is_stated_as_the_paper_states_it():
    assert "0 % on 8 of 9 models; one went from 0 % to 100 %" in anchors.GATING.figure
    assert anchors.GATING.value == 0.0 and anchors.GATING.verified
