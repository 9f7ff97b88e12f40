"""The peers bench (issue 23 §1) on a small slice: the same cases through the bureau, mem0 and
LangGraph's store, on real storage, the real MiniLM encoder and the real peer libraries.

What could fail here: the bureau handing another role's private card to an asker (through any
question, a probe with the card's own text, or a tool call that names another role), or losing
its own space or the board; a peer configuration measured with the wrong filter (the mem0 and
LangGraph rows must show the isolation each filter is documented to give, and no more); a system
searching with a vector the others did not get. That nothing leaves the machine during a run is
in ``test_settings.py`` (``test_the_peers_bench_opens_no_network_connection``).
"""

from __future__ import annotations

import importlib.util
import json
import math
from itertools import combinations
from pathlib import Path

import pytest

if not (importlib.util.find_spec("mem0") and importlib.util.find_spec("langgraph")):
    pytest.skip("the peers extra is not installed", allow_module_level=True)

from bureau.labs.peers.corpus import magpie_slice, shipped_cases  # noqa: E402
from bureau.labs.peers.report import format_table, write_report  # noqa: E402
from bureau.labs.peers.runner import _any_drawn, run_peers  # noqa: E402

MINI = Path(__file__).resolve().parents[1] / "data" / "magpie_mini"


def test_the_random_line_is_the_chance_of_drawing_a_bad_card():
    for pool, bad, drawn in ((10, 3, 2), (7, 1, 7), (12, 0, 5), (5, 2, 9)):
        exact = sum(bool(set(c) & set(range(bad))) for c in combinations(range(pool), min(drawn, pool)))
        exact /= math.comb(pool, min(drawn, pool))
        assert _any_drawn(pool, bad, drawn) == pytest.approx(exact)


def test_every_case_set_has_the_same_texts_for_every_system():
    cases = shipped_cases("t")
    assert [pc.scenario.id for pc in cases] == ["safe-combination", "the-mole", "ward-seven"]
    safe = cases[0]
    assert {c.key for c in safe.cards if c.published} == {"safe-code", "footprint"}
    assert all(c.private != c.published for c in safe.cards)
    assert len(safe.questions) == len(safe.roles) * len(safe.scenario.questions)
    slice_ = magpie_slice(60, "t", MINI)
    stored = sum(pc.stored for pc in slice_)
    assert stored >= 60
    fill = [pc for pc in slice_ if pc.scenario.id.startswith("filler")]
    real = [pc for pc in slice_ if not pc.scenario.id.startswith("filler")]
    assert real and all(pc.questions for pc in real) and not any(pc.questions for pc in fill)
    big = magpie_slice(10_000, "t", MINI)  # the mini has far fewer: filler makes up the store
    assert sum(pc.stored for pc in big) == 10_000
    assert len({c.text for pc in big for c in pc.cards}) > 9_000
    assert len({pc.case_id for pc in big}) == len(big)  # two MAGPIE stems can be equal


@pytest.fixture(scope="module")
def peers_run(bureau, tmp_path_factory):
    out = tmp_path_factory.mktemp("peers")
    result = run_peers(out / "unused", sizes=[40], k=5, max_probes=120, dataset=MINI,
                       spoofs=60, bureau=bureau)
    return result, {(r["case_set"], r["config"]): r for r in result.records()}, out


def _rows(by, config):
    return [r for (_, c), r in by.items() if c == config]


def test_the_bureau_hands_no_asker_another_roles_private_card(peers_run):
    result, by, _ = peers_run
    rows = _rows(by, "bureau (agent handle)")
    assert len(rows) == 2  # the shipped scenarios and the MAGPIE slice
    for r in rows:
        assert r["question_leak_n"] > 0
        assert r["question_leak_hits"] == r["pair_leak_hits"] == r["probe_leak_hits"] == 0, r
        assert r["probe_leak_random"] > 0.05  # a random draw would have leaked
        assert r["spoof_hits"] == 0 and r["spoof_n"] > 0  # the role argument is refused
        assert r["own_recall"] == 1.0 and r["board_recall"] == 1.0, r
    assert result.vector_misses == 0  # every system searched with the same precomputed vectors


def test_each_peer_isolates_exactly_as_its_filter_says(peers_run):
    _, by, _ = peers_run
    for r in _rows(by, "mem0, user only (documented default)") + _rows(
            by, "LangGraph store, case-prefix search"):
        assert r["probe_leak"] > 0.9 and r["probe_leak"] > r["probe_leak_random"], r
        assert r["board_recall"] == 1.0
    for name in ("mem0, user + agent", "LangGraph store, own namespace"):
        for r in _rows(by, name):
            assert r["probe_leak_hits"] == r["question_leak_hits"] == 0, r
            assert r["board_recall"] == 0.0 and r["own_recall"] == 1.0, r  # the board is lost
    for r in _rows(by, "mem0, user + OR(agent, board)"):
        assert r["probe_leak_hits"] == 0 and r["board_recall"] == 1.0 and r["own_recall"] == 1.0
    for (_, config), r in by.items():
        if not config.startswith("bureau"):
            assert r["spoof_hits"] == r["spoof_n"] > 0, r  # another role's string, its cards


def test_the_report_names_every_version_and_filter(peers_run):
    result, by, out = peers_run
    table = format_table(result)
    for config in {c for _, c in by}:
        assert config in table
    assert '"agent_id": role' in table and "store.search((case,)" in table
    assert "never holds that choice" in table
    paths = write_report(result, out / "report")
    assert [p.name for p in paths] == ["peers.csv", "peers.json", "peers.png"]
    data = json.loads(paths[1].read_text())
    assert data["versions"]["mem0ai"].startswith("2.") and data["rows"]
    assert all(r["p50_ms"] > 0 for r in data["rows"])
    assert paths[2].stat().st_size > 10_000
