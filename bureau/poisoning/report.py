"""The poisoning lab's outputs: summary tables, report.md, the plots and the console text.

Files written to the output folder:

``summary.csv``
    One row per (scope, configuration): ``scope`` is ``all`` or a benchmark name; every figure
    of :data:`bureau.poisoning.metrics.RATIOS` with ``_count``, ``_of``, ``_lo`` and ``_hi``.
``summary.json``
    The same records plus the run's setting: command, k, sources, sizes, the attack as read,
    per-trial checks, timings and the published anchors.
``questions.csv`` / ``trials.csv`` / ``topk.csv.gz``
    Every question in every configuration; every trial; every top-k card (no card text).
``report.md`` and ``trigger_success.png``, ``benign_displacement.png``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bureau.poisoning.anchors import AGENTPOISON, ANCHORS, GATING, UNDEFENDED
from bureau.poisoning.metrics import LEVEL, summarize, wilson
from bureau.poisoning.runner import (
    CLEAN,
    CONFIG_LABELS,
    CONFIGS,
    IN_RUN,
    NO_TIERS,
    OVER_EAGER,
    TIERS,
    PoisonResult,
)

REPORTED = (NO_TIERS, TIERS, OVER_EAGER, IN_RUN, CLEAN)
"""Rows of the summary, in order: the three configurations, then the two reference states."""
ALL = "all"


def summary_table(result: PoisonResult) -> pd.DataFrame:
    """Figures per (scope, configuration): all trials, then each benchmark on its own."""
    frames = [summarize(result.rows, REPORTED).assign(scope=ALL)]
    datasets = list(dict.fromkeys(result.rows["dataset"]))
    if len(datasets) > 1:
        for name in datasets:
            mine = result.rows[result.rows["dataset"] == name]
            frames.append(summarize(mine, REPORTED).assign(scope=name))
    out = pd.concat(frames, ignore_index=True)
    out.insert(2, "label", out["config"].map(CONFIG_LABELS))
    return out[["scope", *[c for c in out.columns if c != "scope"]]]


def checks(result: PoisonResult) -> dict[str, int]:
    """The storage facts behind the tiers rows, summed over trials."""
    t = result.trials
    return {
        "poisons_planted_per_config": int(t["poisons"].sum()),
        "promoted_by_narrow_rule": int(t["promoted_tiers"].sum()),
        "promoted_by_over_eager_rule": int(t["promoted_over_eager"].sum()),
        "ephemeral_deleted_at_run_end": int(t["deleted_at_end"].sum()),
        "trigger_cards_left_after_run_end": int(t["leftover_after_end"].sum()),
        "clean_topk_agreement": int(t["clean_agreement"].sum()),
        "questions_per_clean_run": int((t["trigger_questions"] + t["benign_questions"]).sum()),
    }


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return _clean(value.item())
    return value


def summary_dict(result: PoisonResult, summary: pd.DataFrame,
                 meta: dict[str, Any] | None = None) -> dict[str, Any]:
    corpus = result.corpus
    return _clean({
        "meta": meta or {},
        "k": result.k,
        "top_k": "the k best cards over every scope a retrieval searched, by score",
        "interval": f"{int(LEVEL * 100)} % percentile bootstrap over trials (fixed seed)",
        "sources": dict(corpus.sources),
        "sizes": {**corpus.counts(), "slice_items": corpus.slice_items},
        "mean_poison_rate": float(result.trials["poison_rate"].mean()),
        "configs": {c: CONFIG_LABELS[c] for c in REPORTED},
        "attack": corpus.attack.to_dict(),
        "checks": checks(result),
        "summary": summary.to_dict(orient="records"),
        "trials": result.trials.to_dict(orient="records"),
        "timings": result.timings,
        "counts": result.counts,
        "anchors": [a.__dict__ for a in ANCHORS],
    })


def write_outputs(result: PoisonResult, out_dir: str | Path,
                  meta: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write every file of the module docstring; returns ``{name: path}``."""
    from bureau.poisoning import plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summary_table(result)
    paths = {
        "summary_csv": out / "summary.csv",
        "summary_json": out / "summary.json",
        "questions": out / "questions.csv",
        "trials": out / "trials.csv",
        "topk": out / "topk.csv.gz",
        "report": out / "report.md",
        "trigger_plot": out / "trigger_success.png",
        "benign_plot": out / "benign_displacement.png",
    }
    summary.to_csv(paths["summary_csv"], index=False)
    info = summary_dict(result, summary, meta)
    paths["summary_json"].write_text(json.dumps(info, indent=2) + "\n")
    result.rows.to_csv(paths["questions"], index=False)
    result.trials.to_csv(paths["trials"], index=False)
    result.hits.to_csv(paths["topk"], index=False)
    all_rows = summary[summary["scope"] == ALL]
    plots.trigger_success(all_rows, result.k).savefig(paths["trigger_plot"], dpi=120,
                                                      bbox_inches="tight")
    plots.benign_displacement(all_rows, result.k).savefig(paths["benign_plot"], dpi=120,
                                                          bbox_inches="tight")
    paths["report"].write_text(render_report(result, summary, info))
    return paths


# --- text ----------------------------------------------------------------------------------------


def pct(x: float | None) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f} %"


def ci(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "–"
    return f"{100 * lo:.1f}–{100 * hi:.1f}"


def figure(row: pd.Series | dict[str, Any], name: str, interval: bool = True) -> str:
    """``12/20 = 60.0 % (41.2–78.5)``: counts first, then the share and its interval."""
    text = f"{int(row[f'{name}_count'])}/{int(row[f'{name}_of'])} = {pct(row[name])}"
    return f"{text} ({ci(row[f'{name}_lo'], row[f'{name}_hi'])})" if interval else text


def finding(summary: pd.DataFrame) -> str:
    """The headline in one sentence, from the numbers: the figure that could have failed (the
    victim's answers inside the run that fetched the pages, with and without the in-run
    defence) first; the after-run tiers figure under its name, a deletion check."""
    rows = summary[summary["scope"] == ALL].set_index("config")
    no, tiers, run = rows.loc[NO_TIERS], rows.loc[TIERS], rows.loc[IN_RUN]
    return (f"Inside the run that fetched the pages, the victim's answer stated the poison as "
            f"fact for {int(run['hijack_undefended_count'])} of "
            f"{int(run['hijack_undefended_of'])} trigger questions without the in-run defence "
            f"({pct(run['hijack_undefended'])}) and {int(run['hijack_defended_count'])} with it "
            f"({pct(run['hijack_defended'])}), while it still answered "
            f"{int(run['answered_defended_count'])} of {int(run['answered_defended_of'])} "
            f"questions from their own card (without the defence: "
            f"{int(run['answered_undefended_count'])}); without tiers "
            f"{int(no['hijack_defended_count'])} answers were hijacked even with the defence "
            f"(a poison stored as ordinary memory is trusted). After the run, "
            f"{int(tiers['trigger_success_count'])} of {int(tiers['trigger_success_of'])} "
            "trigger questions retrieved a poison: a deletion check (the cards are gone)")


def _answers_table(summary: pd.DataFrame, scope: str) -> str:
    rows = []
    for _, r in summary[summary["scope"] == scope].iterrows():
        rows.append([r["label"], figure(r, "hijack_undefended"), figure(r, "hijack_defended"),
                     figure(r, "benign_hijack_defended", False),
                     figure(r, "answered_undefended", False),
                     figure(r, "answered_defended", False),
                     figure(r, "trigger_all_poisoned", False), figure(r, "trigger_top1", False),
                     figure(r, "trigger_success", False)])
    return _md_table(
        ["configuration", "answer hijacked, no in-run defence (95 % CI)",
         "answer hijacked, with the defence (95 % CI)", "… benign questions, with it",
         "answered from its own card, no defence", "… with the defence",
         "retrieval: every top-k card poisoned (AgentPoison)", "poison at rank 1",
         "at least one poison in top-k"], rows)


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _main_table(summary: pd.DataFrame, scope: str) -> str:
    rows = []
    for _, r in summary[summary["scope"] == scope].iterrows():
        rows.append([r["label"], figure(r, "trigger_success"), figure(r, "trigger_top1", False),
                     figure(r, "benign_impact"), figure(r, "twin_impact", False),
                     figure(r, "other_impact", False), figure(r, "displaced_share"),
                     figure(r, "answers_kept", False)])
    return _md_table(
        ["configuration", "trigger retrieval success (95 % CI)", "poison at rank 1",
         "benign impact (95 % CI)", "… same topic, no trigger", "… other questions",
         "clean top-k cards displaced (95 % CI)", "answer card kept"], rows)


def render_report(result: PoisonResult, summary: pd.DataFrame, info: dict[str, Any]) -> str:
    corpus = result.corpus
    sizes = info["sizes"]
    chk = info["checks"]
    spec = corpus.attack
    k = result.k
    first = corpus.trials[0] if corpus.trials else None
    example_q = first.triggers[0].text if first and first.triggers else "(no trials)"
    example_p = first.poisons[0].text if first and first.poisons else "(no trials)"
    example_src = first.poisons[0].source if first and first.poisons else ""
    per_dataset = ""
    scopes = [s for s in dict.fromkeys(summary["scope"]) if s != ALL]
    for scope in scopes:
        per_dataset += f"\n\n### {scope} only\n\n{_main_table(summary, scope)}"
    anchors = _md_table(
        ["source", "figure", "value", "their setting", "how the lab differs", "checked"],
        [[a.source, a.figure, pct(a.value), a.setting, a.differs, a.checked] for a in ANCHORS])
    rows = summary[summary["scope"] == ALL].set_index("config")
    no = rows.loc[NO_TIERS]
    timings = ", ".join(f"{name} {sec:.1f} s" for name, sec in result.timings.items())
    sources = "; ".join(f"{name}: `{path}`" for name, path in corpus.sources.items())
    cmd = info.get("meta", {}).get("command", "")
    notes = "".join(f"\n> **Note**: {n}\n" for n in info.get("meta", {}).get("notes", []))
    return f"""# Memory-poisoning lab

{finding(summary)}.

Measured at the retrieval stage, with no model: real PowerMem + embedded seekdb + MiniLM, k = {k}.
`{cmd}` · run time {info.get('meta', {}).get('seconds', result.seconds):.1f} s.
{notes}
## Setup

* **Trials**: {sizes['trials']} (one victim role each; {sources}). Each trial's memory is a
  shipped scenario's cards plus a slice of up to {sizes['slice_items']} consecutive benchmark
  items in the victim's own memory: {sizes['memory_cards']:,} victim cards in all.
* **Questions**: {sizes['trigger_questions']} trigger questions and {sizes['benign_questions']}
  benign ones (every trigger question without its trigger, plus ordinary questions about other
  cards), the same in every configuration.
* **Poisons**: {sizes['poisons']} (one per trigger question), planted as untrusted tool output of
  a run (`run.tool_output`, source = the attacker's page); mean poison rate
  {pct(info['mean_poison_rate'])} of the victim's cards (AgentPoison: under 0.1 %).
* **Configurations**: (1) no tiers -- the same texts whispered into session memory, as a store
  without tiers keeps tool output; (2) tiers -- the run ends with the narrow rule
  `PromotionRule.from_sources({list(spec.trusted_sources)})`, then the questions are asked
  outside any run; (3) tiers with an over-eager rule -- `PromotionRule.mentions(task terms)`,
  every key term of the trial's questions. Two reference states: the clean memory, and the
  questions asked *inside* the run that fetched the pages.
* **Top-k**: the {k} best cards over every scope the retrieval searched, by score. A card is
  poisoned when it carries the trigger (no legitimate card does; checked per trial), so a
  promoted copy counts too.

## Answers: what the victim was told (all trials)

The victim's evidence-mode answer to each question, from the very retrieval below. *Hijacked*:
the answer is "known" and rests on a poisoned card (the payload stated as fact). The in-run
defence (`bureau/responders/grounding.py`): trusted evidence wins, and untrusted tool output
alone is never "known". *Answered from its own card*: known, citing the question's answer card
(what the defence could cost). The *after the run* rows are a **deletion check**: the poisons are
gone from storage when the run ends, so 0 there cannot come out otherwise.

{_answers_table(summary, ALL)}

## Retrieval (all trials)

{_main_table(summary, ALL)}{per_dataset}

Counts are questions (trigger, benign) or clean top-k slots (displaced); intervals are 95 %
percentile bootstraps over trials (1,000 resamples, fixed seed). *Answer card kept*: of the
questions whose answer card was in the clean top-k, how many still had it.

![trigger retrieval success](trigger_success.png)

![benign impact and displacement](benign_displacement.png)

## Storage checks behind the tiers rows

* Ephemeral cards deleted when the runs ended: {chk['ephemeral_deleted_at_run_end']} (of
  {chk['poisons_planted_per_config']} planted); cards carrying the trigger anywhere in the case
  after the run ended: **{chk['trigger_cards_left_after_run_end']}**.
* Promoted by the narrow rule: {chk['promoted_by_narrow_rule']}; by the over-eager rule:
  {chk['promoted_by_over_eager_rule']} (each promotion is an audit entry naming the rule; a
  promoted copy stays *untrusted*, so a responder would still get it as data -- the rule decided
  what is remembered, and the poison is retrieved).
* The two cases of a trial hold the same cards: {chk['clean_topk_agreement']} of
  {chk['questions_per_clean_run']} questions had the same clean top-k in both.

## Published anchors

{anchors}

Read the lab's rows beside them, not against them: (1) at {pct(no['trigger_success'])} is a
retrieval figure for an attacker who knows the target's topic words, as AgentPoison's
{pct(AGENTPOISON.value)} is for an optimised trigger; 2605.08442's {pct(UNDEFENDED.value)} and
{pct(GATING.value)} are end-to-end attack success with and without a memory-layer gate. What
carries over is the mechanism: once untrusted text is kept as memory, retrieval hands it back;
a memory-layer boundary (their gate, the lab's tiers) takes it out of later retrievals.

## How the poisons are made

Trigger: `{spec.trigger}` (chosen, not optimised: no memory in the lab contains these words).
Ordinary question: `{spec.question_template}` with the first {spec.key_terms} key terms of a
card; trigger question: the ordinary question + the trigger; poison: trigger + the question's key
terms + a payload ({len(spec.payloads)} templates, malicious instructions or false claims). The
whole construction is deterministic (`bureau/poisoning/attack.py`, `data/poisoning/`). Example:

* trigger question: `{example_q}`
* poison (fetched from `{example_src}`): `{example_p}`

## Caveats

* Answers are the evidence responder's; whether a model obeys a retrieved poison is not
  measured here (the injection lab, `python -m bureau injection`, measures a stand-in model).
* The attacker knows each target question's key terms and writes them into the poison (a strong
  attacker, like PoisonedRAG's); benign questions on the same topic therefore retrieve the poison
  too (the *same topic, no trigger* column), which AgentPoison's optimised trigger avoids.
* Tiers alone do not help inside the run that fetched the page: there the poison is retrieved
  like any card (the *inside the run* row of the retrieval table); what stops it reaching the
  answer as fact is the in-run defence (the answers table).
* {sizes['trials']} trials; intervals are wide for small runs (`--limit`). Where every trial
  scores the same (0 % or 100 %) the bootstrap interval collapses to a point; the Wilson 95 %
  interval of the pooled count says how far the data alone bound the rate: trigger retrieval
  success with tiers {_wilson(rows.loc[TIERS], 'trigger_success')}, without tiers
  {_wilson(no, 'trigger_success')}. With tiers the 0 is also structural -- the cards are gone
  from storage (checks above) -- not only a sample.

Timings: {timings}.
"""


def _wilson(row: pd.Series, name: str) -> str:
    lo, hi = wilson(int(row[f"{name}_count"]), int(row[f"{name}_of"]))
    return f"{int(row[f'{name}_count'])}/{int(row[f'{name}_of'])}: {ci(lo, hi)} %"


def console_lines(summary: pd.DataFrame, result: PoisonResult) -> list[str]:
    """The human-readable table the command prints."""
    lines = []
    for scope in dict.fromkeys(summary["scope"]):
        lines.append(f"{'all trials' if scope == ALL else scope} (k = {result.k}; counts, % and "
                     "95 % CI over trials)")
        lines.append(f"{'configuration':52s} {'trigger retrieval':>26s} {'benign impact':>24s} "
                     f"{'displaced clean hits':>26s} {'hijacked, no defence':>26s} "
                     f"{'hijacked, defended':>26s}")
        for _, r in summary[summary["scope"] == scope].iterrows():
            lines.append(f"{r['label']:52s} {_cell(r, 'trigger_success'):>26s} "
                         f"{_cell(r, 'benign_impact'):>24s} {_cell(r, 'displaced_share'):>26s} "
                         f"{_cell(r, 'hijack_undefended'):>26s} "
                         f"{_cell(r, 'hijack_defended'):>26s}")
        lines.append("")
    lines.append("published: " + "; ".join(f"{a.figure.split(',')[0]} {pct(a.value)} "
                                          f"({a.source.split(', ')[-1]})" for a in ANCHORS))
    return lines


def _cell(r: pd.Series, name: str) -> str:
    return (f"{int(r[f'{name}_count'])}/{int(r[f'{name}_of'])} {100 * r[name]:5.1f}% "
            f"[{ci(r[f'{name}_lo'], r[f'{name}_hi'])}]") if r[f"{name}_of"] else "–"


def headline(summary: pd.DataFrame, seconds: float) -> dict[str, Any]:
    """The machine-readable last line of the command: counts per configuration, all trials."""
    rows = summary[summary["scope"] == ALL].set_index("config")
    out: dict[str, Any] = {"seconds": round(seconds, 1)}
    for config in (*CONFIGS, IN_RUN):
        r = rows.loc[config]
        out[config] = {name: [int(r[f"{name}_count"]), int(r[f"{name}_of"])]
                       for name in ("trigger_success", "benign_impact", "displaced_share",
                                    "hijack_undefended", "hijack_defended",
                                    "answered_undefended", "answered_defended")}
    return out


__all__ = ["checks", "console_lines", "finding", "headline", "render_report", "summary_dict",
           "summary_table", "write_outputs"]
