"""report.md states only computed counts: rendered for two datasets, checked against the data.

The report is ``bureau/labs/leakage/report/report_template.md`` filled in from a run. A count typed into the
prose would be right for at most one dataset, so the report of the mini set and of a
two-scenario subset of it are rendered from real lab runs (real store, real MiniLM) and every
count sentence is compared with counts made here from the raw items -- not with
``MagpieDataset.counts``, which the report itself reads. The texts must differ exactly where the
two datasets' counts differ. The template and ``report.py`` are also scanned for figures typed
into prose.
"""

from __future__ import annotations

import ast
import re
from importlib import resources
from pathlib import Path

import pytest
from conftest import REPO

import bureau.labs.leakage.report.report as report_module
import bureau.labs.leakage.report.wording as wording_module
from bureau.embedding import MAX_TOKENS, shared_minilm
from bureau.labs.leakage.datasets.convert import full_query
from bureau.labs.leakage.datasets.magpie import MagpieDataset, load_magpie, subset
from bureau.labs.leakage.policies.policies import PROBE_LIMIT
from bureau.labs.leakage.report.paper import PAPER
from bureau.labs.leakage.report.report import (
    TARGET_RATIO,
    TEMPLATE_FILE,
    Benchmark,
    analyse,
    render_report,
    summary_dict,
)
from bureau.labs.leakage.runner import run_lab
from bureau.text import MAX_QUESTION_CHARS

MINI = REPO / "data" / "magpie_mini"
K = 5
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
"""A figure as the report prints it (``1,478``, ``0.570``, ``5`` in ``top-5``); digits inside
words (``MiniLM-L6-v2``, ``int8``) are names, not figures."""


def numbers(line: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(line)]


def facts(data: MagpieDataset) -> dict[str, int]:
    """The counts the report should state, made from the raw scenarios."""
    out = dict.fromkeys(
        ("scenarios", "agents", "shareable", "private", "private_information", "hints",
         "hints_private_preferences", "hints_private_information", "private_pairs",
         "shareable_pairs", "hint_pairs", "queries_cut", "queries_over_tokens"), 0)
    tokenizer = shared_minilm().tokenizer
    for s in data.scenarios:
        out["scenarios"] += 1
        out["agents"] += len(s.agents)
        others = len(s.agents) - 1
        for agent in s.agents:
            role = " ".join(agent.role.split()) or agent.name
            query = " ".join(f"{s.task} {role} {agent.description}".split())
            assert query == full_query(s, agent)
            out["queries_cut"] += len(query) > MAX_QUESTION_CHARS
            # the model truncates at MAX_TOKENS: a query that fills them is at least that long
            out["queries_over_tokens"] += len(tokenizer.encode(query).ids) >= MAX_TOKENS
            for item in agent.items:
                out[item.label] += 1
                out[f"{item.label}_pairs"] += others
                if item.label == "private" and item.private_key == "private_information":
                    out["private_information"] += 1
                if item.label == "private" and item.abstraction:
                    out["hints"] += 1
                    out["hint_pairs"] += others
                    out[f"hints_{item.private_key}"] += 1
    out["domains"] = len({s.domain for s in data.scenarios})
    return out


@pytest.fixture(scope="module")
def runs(bureau) -> dict[str, tuple[MagpieDataset, str]]:
    """name -> (dataset, report.md text) for the mini set and a two-scenario subset of it."""
    mini = load_magpie(MINI)
    out = {}
    for name, data in (("mini", mini), ("two", subset(mini, 2))):
        analysis = analyse(run_lab(bureau, data, k=K, cleanup=True))
        out[name] = (data, render_report([analysis], summary_dict([analysis])))
    return out


def line(text: str, start: str) -> str:
    """The one line of ``text`` that starts with ``start``."""
    found = [ln for ln in text.splitlines() if ln.startswith(start)]
    assert len(found) == 1, (start, found)
    return found[0]


def expected(data: MagpieDataset) -> dict[str, list[float]]:
    """Line start -> the figures that line must begin with, in order."""
    f = facts(data)
    full = load_magpie(MINI)
    scope = [] if len(data) == len(full) else [f["scenarios"], len(full)]  # "2 of the 3 ..."
    return {
        "Measured on": [*scope, f["scenarios"], f["agents"], f["shareable"], f["private"], K],
        "- **The bureau boundary leaks nothing**": [0, 0, 0, f["private_pairs"], 0, 0, 0,
                                                    f["private_pairs"], f["agents"], PROBE_LIMIT,
                                                    0],
        "- **Queries**": [MAX_QUESTION_CHARS, f["queries_cut"], f["agents"], 0, MAX_TOKENS,
                          f["queries_over_tokens"], MAX_TOKENS, MAX_TOKENS],
        "- **Engine check**": [K, K, f["agents"], f["agents"]],  # every agent asks in state c
        "- Hint items:": [f["hints_private_preferences"], PAPER["hint_items"],
                          f["private_information"], f["private"]],
    }


@pytest.mark.parametrize("name", ["mini", "two"])
def test_every_count_sentence_matches_the_data(runs, name):
    data, text = runs[name]
    for start, figures in expected(data).items():
        assert numbers(line(text, start))[: len(figures)] == figures, start
    f = facts(data)
    assert f"of {f['hint_pairs']:,} hint pairs" in line(text, "- **Utility without leaks comes from publishing")
    assert line(text, f"{f['domains']} domains;")
    # policy table: every row has the same denominators, the data's pair counts
    rows = [ln for ln in text.splitlines() if ln.startswith("| **")]
    assert len(rows) == 5
    for row in rows:
        cells = row.split(" | ")
        assert cells[2].endswith(f"/{f['private_pairs']:,})")
        assert cells[3].endswith(f"/{f['private']:,})")
        assert cells[4].endswith(f"/{f['shareable_pairs']:,})")
        assert cells[6].endswith(f"/{f['hint_pairs']:,}")
    paper_row = line(text, "| Private items with a safe hint")
    assert paper_row.endswith(
        f"{f['hints_private_preferences']} of {f['private'] - f['private_information']} "
        f"private_preferences (+{f['hints_private_information']} of "
        f"{f['private_information']} private_information) = {f['hints']} of {f['private']} |"
    )


def test_reports_differ_exactly_where_the_counts_differ(runs):
    (mini, a), (two, b) = runs["mini"], runs["two"]
    assert facts(mini)["scenarios"] != facts(two)["scenarios"]
    assert facts(mini)["private"] != facts(two)["private"]
    want_a, want_b = expected(mini), expected(two)
    # the subset's first line names its source's size first ("2 of the 3 scenarios"): skip it
    want_b["Measured on"] = want_b["Measured on"][2:]
    for start in want_a:
        n = len(want_a[start])
        got_a = numbers(line(a, start))[:n]
        got_b = numbers(line(b, start))[-n:] if start == "Measured on" else numbers(
            line(b, start))[:n]
        differ = [i for i, (x, y) in enumerate(zip(got_a, got_b, strict=True)) if x != y]
        should = [i for i, (x, y) in enumerate(zip(want_a[start], want_b[start], strict=True))
                  if x != y]
        assert differ == should and should, start
    assert "the bundled synthetic mini set" in line(a, "Measured on")
    assert line(b, "Measured on").startswith("Measured on 2 of the 3 scenarios of the bundled")
    # the prose around the figures is the same text: only numbers (and the scope) change
    prose = [ln for ln in a.splitlines() if not ln.startswith(("|", "Measured on"))]
    other = [ln for ln in b.splitlines() if not ln.startswith(("|", "Measured on"))]
    assert [NUMBER.sub("#", ln) for ln in prose] == [NUMBER.sub("#", ln) for ln in other]
    assert a != b


def test_benchmark_section_only_when_timed(runs, bureau):
    _, text = runs["mini"]
    assert "## Benchmark" not in text
    analysis = analyse(run_lab(bureau, subset(load_magpie(MINI), 1), k=K, cleanup=True))
    result = analysis.result
    bench = Benchmark(lab_seconds=3.0, distinct_texts=7, texts_embedded=7, tokens_embedded=420,
                      encoder_seconds=1.5, embed_alone_seconds=2.0, embed_alone_tokens=400)
    timed = render_report([analysis], summary_dict([analysis], bench))
    assert timed.startswith(render_report([analysis], summary_dict([analysis])))
    assert f"| lab / embedding alone | 1.50× (target ≤ {TARGET_RATIO}×) |" in timed
    assert "| machine at the start (busy cores) | -1.00: no embedding worker stepped back |" in timed
    assert f"{result.timings.cards_written:,} cards written" in timed


# --- no figure typed into prose -------------------------------------------------------------------

ALLOWED_IN_TEMPLATE = {
    "0.5 is a coin flip": "the AUROC of chance: a definition, not a measurement",
    "label 1 = shareable": "the positive class of the AUROC",
    "1 − Π(1 − p_r)": "the chance an item escapes to at least one requester: a formula",
}


def test_template_prose_holds_no_figure():
    text = resources.files("bureau.labs.leakage.report").joinpath(TEMPLATE_FILE).read_text(
        encoding="utf-8")
    prose = re.sub(r"\$\{\w+\}", "", text)
    for allowed in ALLOWED_IN_TEMPLATE:
        assert allowed in prose
        prose = prose.replace(allowed, "")
    offenders = [ln for ln in prose.splitlines() if NUMBER.search(ln)]
    assert not offenders, offenders


NAMES_WITH_DIGITS = ("≥1", "all-MiniLM-L6-v2", "utf-8")
"""Not figures: "at least one" in a column header, the model's name, an encoding."""


def test_report_module_types_no_figure_into_text():
    """String literals of report.py and wording.py (f-string text included, format specs excluded) name no
    figure: numbers reach the report only as computed values or named constants."""
    tree = ast.Module(body=[node for module in (report_module, wording_module)
                            for node in ast.parse(Path(module.__file__).read_text()).body],
                      type_ignores=[])
    specs = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FormattedValue) and f.format_spec
             for n in ast.walk(f.format_spec)}
    docstrings = {id(node.value) for node in ast.walk(tree)  # module, function, attribute
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    offenders = [
        (node.lineno, node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in specs and id(node) not in docstrings
        and any(NUMBER.search(part) for part in _split(node.value, NAMES_WITH_DIGITS))
    ]
    assert not offenders, offenders


def _split(text: str, names: tuple[str, ...]) -> list[str]:
    for name in names:
        text = text.replace(name, "\n")
    return text.split("\n")
