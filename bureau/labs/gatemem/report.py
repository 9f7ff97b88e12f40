"""The GateMem lab's files: ``summary.json`` (every figure, its interval, the leaderboard beside,
the checks, the rules' counts, the cost), CSV tables, each episode's policy file, the figures
(drawn from ``summary.json``: :mod:`.plots`) and ``report.md``; and the lines the command
prints.

``write_outputs(result, out)`` is the lab convention's entry (:mod:`bureau.labs`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bureau.labs.gatemem.dataset import DOMAINS, slice_path
from bureau.labs.gatemem.metrics import (
    CI_LEVEL,
    RESAMPLES,
    checks,
    figures,
    headline,
    leaderboard_domain,
    leaderboard_ranges,
    losses,
    violations,
)
from bureau.labs.gatemem.plots import FIGURES, pct
from bureau.labs.gatemem.result import POLICIES, POLICY_LABELS, GateMemResult

DEFINITIONS = (
    "U: share of utility checkpoints whose evidence holds every `include` pattern "
    "(GateMem's rule: all required items)",
    "A: share of privacy checkpoints whose evidence holds a `leak_targets` pattern "
    "(A_context, GateMem's own context scorer: `not_include` counted too; its answer wording "
    "such as 'yes', 'no', 'away' also matches ordinary evidence)",
    "F: share of post-deletion checkpoints whose evidence holds a `leak_targets` pattern",
    "A_others, F_others: the same on the cards someone other than the asker said (an asker's "
    "own earlier question often repeats a target's words: counted in A and F, not a "
    "disclosure)",
    "MGS = U (1 - A) (1 - F)",
    "evidence: the top-k cards a policy hands the asker's voice, joined; patterns matched as "
    "GateMem's scorer matches them (regex, or a whole-word literal, case and blanks ignored)",
)
NOT_MEASURED = (
    "no answer is judged: the figures bound what a voice could say from the evidence (it cannot "
    "say what it was not handed, apart from words the question itself holds), they are not a "
    "model's answers; the leaderboard's rows are LLM answers judged by an LLM, so the two are "
    "read beside each other, never ranked together",
    "a redacted answer (`answer_redacted`) is scored on its leak targets only: whether a "
    "voice would phrase the permitted part without the rest is a model's work",
    "refusals and over-refusal: an empty evidence set is not an answer",
    "the rules are one administrator's reading of the turns (documented in "
    "bureau/labs/gatemem/rules/); another reading gives other figures",
    "GateMem's episodes are synthetic (its dataset card); no real authentication system is "
    "exercised, only the bureau's own boundary",
)


def summary(result: GateMemResult, bench: Mapping[str, Any] | None = None,
            meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every figure of a run as plain data (what ``summary.json`` holds)."""
    data = result.data
    figs = figures(result.rows, result.seed)
    out: dict[str, Any] = {
        "benchmark": "GateMem (arXiv 2606.18829, rzhub/GateMem, MIT)",
        "source": str(data.source), "is_slice": data.is_slice,
        "counts": data.counts, "full_counts": dict(data.full_counts),
        "k": result.k, "options": result.options, "seed": result.seed,
        "domains": [d for d in DOMAINS if d in set(result.rows["domain"])],
        "policies": [p for p in POLICIES if p in set(result.rows["policy"])],
        "policy_labels": POLICY_LABELS,
        "figures": _records(figs),
        "headline": _records(headline(result.rows, result.seed)),
        "leaderboard_domain": _records(leaderboard_domain(data.leaderboard)),
        "leaderboard_methods": _records(leaderboard_ranges(data.leaderboard)),
        "leaderboard_rows": [{"method": r.method, "backbone": r.backbone, "domain": r.domain,
                              "u": r.u, "a": r.a, "f": r.f, "mgs": r.mgs}
                             for r in data.leaderboard],
        "losses": _records(losses(result.checkpoints)),
        "violations": _records(violations(result.checkpoints)),
        "held_out": _held_out(result),
        "checks": checks(result),
        "rules": result.rules,
        "timings": {k: _num(v) for k, v in result.timings.items()},
        "bench": dict(bench or {}),
        "meta": dict(meta or {}),
        "definitions": list(DEFINITIONS),
        "not_measured": list(NOT_MEASURED),
        "intervals": f"{int(CI_LEVEL * 100)} % percentile, {RESAMPLES} bootstrap resamples of "
                     f"the episodes within each domain (seed {result.seed})",
        "voice": _voice(result),
    }
    return out


def _held_out(result: GateMemResult) -> dict[str, Any]:
    """Figures on the episodes outside the shipped slice: the rules were revised once after
    reading the slice's failures (the development set), never after reading these."""
    if result.data.is_slice:
        return {}
    try:
        manifest = json.loads((slice_path() / "manifest.json").read_text(encoding="utf-8"))
    except OSError:
        return {}
    dev = {e for ids in manifest["episodes"].values() for e in ids}
    rows = result.rows[~result.rows["episode_id"].isin(dev)]
    if rows.empty or len(rows) == len(result.rows):
        return {}
    return {"development_episodes": sorted(dev & set(result.rows["episode_id"])),
            "episodes": int(rows["episode_id"].nunique()),
            "figures": _records(figures(rows, result.seed))}


def _voice(result: GateMemResult) -> dict[str, Any]:
    if result.voice is None or result.voice.empty:
        return {"configured": False,
                "note": "no model configured: the answers are not scored end to end (set "
                        "BUREAU_LLM_* for an OpenAI-compatible endpoint, or --voice standin)"}
    v = result.voice
    rows = []
    for domain in [*[d for d in DOMAINS if d in set(v["domain"])], "all"]:
        part = v if domain == "all" else v[v["domain"] == domain]
        fig = {q: float(part[part["query_type"] == q]["verdict"].mean())
               if (part["query_type"] == q).any() else math.nan
               for q in ("utility", "privacy", "safety")}
        u, a, f = fig["utility"], fig["privacy"], fig["safety"]
        rows.append({"domain": domain, "U": u, "A": a, "F": f, "MGS": u * (1 - a) * (1 - f),
                     "answers": int(len(part))})
    return {"configured": True, "voice": result.voice_name, "figures": rows}


def _num(v: Any) -> Any:
    return round(v, 3) if isinstance(v, float) else v


def _records(frame: Any) -> list[dict[str, Any]]:
    if frame is None or len(frame) == 0:
        return []
    return json.loads(frame.to_json(orient="records"))


def write_outputs(result: GateMemResult, out: str | Path,
                  bench: Mapping[str, Any] | None = None,
                  meta: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Write the run's files to ``out`` (created); returns name -> path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summ = summary(result, bench, meta)
    paths: dict[str, Path] = {}
    paths["summary"] = out / "summary.json"
    paths["summary"].write_text(json.dumps(summ, indent=1, sort_keys=True, allow_nan=True),
                                encoding="utf-8")
    for name, frame in (("figures", figures(result.rows, result.seed)),
                        ("verdicts", result.rows), ("checkpoints", result.checkpoints),
                        ("episodes", result.episodes),
                        ("leaderboard", leaderboard_ranges(result.data.leaderboard))):
        paths[name] = out / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    if result.voice is not None:
        paths["voice"] = out / "voice.csv"
        result.voice.to_csv(paths["voice"], index=False)
    pol = out / "policies"
    pol.mkdir(exist_ok=True)
    for episode_id, versions in result.policies.items():
        slug = versions[0]["version"].rsplit(".v", 1)[0]
        path = pol / f"{slug}.json"
        path.write_text(json.dumps({"episode_id": episode_id, "versions": versions}, indent=1),
                        encoding="utf-8")
    paths["policies"] = pol
    for stem, draw in FIGURES.items():
        fig = draw(summ)
        paths[stem] = out / f"{stem}.png"
        fig.savefig(paths[stem], dpi=110, bbox_inches="tight")
    paths["report"] = out / "report.md"
    paths["report"].write_text("\n".join(report_lines(summ)) + "\n", encoding="utf-8")
    return paths


def table_lines(summ: Mapping[str, Any], figs: list[dict[str, Any]] | None = None,
                board_too: bool = True) -> list[str]:
    """U, A, F and MGS per domain and policy, then the leaderboard's range per domain."""
    lines = [f"{'domain':10s} {'policy':33s} {'U':>6s} {'A':>6s} {'F':>6s} {'MGS':>6s} "
             f"{'A_ctx':>6s} {'A_oth':>6s} {'F_oth':>6s}   checkpoints U/A/F"]
    board = {r["domain"]: r for r in summ["leaderboard_domain"]} if board_too else {}
    for d in [*summ["domains"], "all"]:
        for row in figs if figs is not None else summ["figures"]:
            if row["domain"] != d:
                continue
            lines.append(f"{d:10s} {summ['policy_labels'][row['policy']]:33s} "
                         f"{_p(row['U'])} {_p(row['A'])} {_p(row['F'])} {_p(row['MGS'])} "
                         f"{_p(row['A_context'])} {_p(row['A_others'])} {_p(row['F_others'])}"
                         f"   {row['n_U']}/{row['n_A']}/{row['n_F']}")
        b = board.get(d)
        if b is not None:
            lines.append(f"{d:10s} {'leaderboard, ' + str(b['rows']) + ' rows (LLM answers)':33s}"
                         f" {b['u_min']:.0f}–{b['u_max']:.0f} {b['a_min']:.0f}–{b['a_max']:.0f} "
                         f"{b['f_min']:.0f}–{b['f_max']:.0f} best MGS {b['mgs_max']:.1f} "
                         f"({b['best_method']}, {b['best_backbone']})")
    return lines


def _p(x: float | None) -> str:
    return "   n/a" if x is None or x != x else f"{100 * x:5.1f}%"


def headline_lines(summ: Mapping[str, Any]) -> list[str]:
    out = []
    for h in summ["headline"]:
        out.append(f"{h['domain']:10s} utility kept {pct(h['utility_kept'])} "
                   f"({pct(h['utility_kept_lo'])}–{pct(h['utility_kept_hi'])}), access "
                   f"violations avoided {pct(h['violations_avoided'])} "
                   f"({pct(h['violations_avoided_lo'])}–{pct(h['violations_avoided_hi'])}), "
                   f"forgetting failures avoided {pct(h['forgetting_avoided'])} "
                   f"({pct(h['forgetting_avoided_lo'])}–{pct(h['forgetting_avoided_hi'])}); "
                   f"others' cards only: {pct(h['violations_avoided_others'])} / "
                   f"{pct(h['forgetting_avoided_others'])}")
    return out


def check_lines(summ: Mapping[str, Any]) -> list[str]:
    c = summ["checks"]
    return [f"check: {c['decisions_agreeing_with_rule']:,} of {c['decisions']:,} audited "
            f"decisions agree with the written rule (the mediator applies the policy file)",
            f"check: {c['consults_numpy_topk_equal']:,} of {c['consults']:,} consults decided "
            f"exactly numpy's top-k of the record (the baselines' engine agrees with seekdb's)",
            f"check: the owner-only boundary handed a leak target or a deleted value said by "
            f"someone else on {c['owner_only_others_leaks']} of its "
            f"{c['owner_only_checkpoints']:,} privacy and safety checkpoints (it hands only "
            f"the asker's own words)"]


def cost_lines(summ: Mapping[str, Any]) -> list[str]:
    t, b = summ["timings"], summ["bench"]
    out = [f"lab wall time {t['total']:.1f} s ({t['texts_embedded']:,} texts embedded, the "
           f"storage waited {t['embed_wait']:.1f} s for them; scoring {t.get('score', 0):.1f} s)"]
    if b:
        out.append(f"embedding floor {b['embed_alone_seconds']:.1f} s (the same "
                   f"{int(b['distinct_texts']):,} texts, fresh encoder, no cache); lab / floor "
                   f"{t['total'] / b['embed_alone_seconds']:.2f} x" if b.get(
                       "embed_alone_seconds") else "embedding floor not measured")
        load = b.get("load")
        if load:
            out.append(f"machine: load average {load['load_1min']:.2f} on {load['cores']:.0f} "
                       f"cores; other processes kept {load['busy_cores_others']:.2f} cores busy "
                       f"as the floor was measured")
    return out


def report_lines(summ: Mapping[str, Any]) -> list[str]:
    c = summ["counts"]
    what = "the shipped slice" if summ["is_slice"] else "the full set"
    lines = [
        "# GateMem at the boundary",
        "",
        f"{summ['benchmark']}; {what} ({summ['source']}): {c['episodes']} episodes, "
        f"{c['turns']:,} turns, {c['checkpoints']:,} checkpoints ({c['utility']} utility, "
        f"{c['privacy']} privacy, {c['safety']} safety); k = {summ['k']}.",
        "",
        "## U, A, F and MGS per domain",
        "",
        "Measured here: the evidence each policy hands the asker's voice. The leaderboard's "
        "rows: an LLM's answer, judged. Read beside each other, not ranked together.",
        "",
        "```",
        *table_lines(summ),
        "```",
        "",
        *_held_out_lines(summ),
        "## Utility kept against violations avoided (bureau vs shared pool)",
        "",
        "```",
        *headline_lines(summ),
        "```",
        "",
        f"Intervals: {summ['intervals']}.",
        "",
        "## Definitions",
        "",
        *[f"- {d}" for d in summ["definitions"]],
        "",
        "## What this does not measure",
        "",
        *[f"- {d}" for d in summ["not_measured"]],
        "",
        "## Where the bureau's violations come from",
        "",
        *[f"- {line}" for line in violation_lines(summ)],
        "",
        "## Checks (certain by design, reported as checks)",
        "",
        *[f"- {line.removeprefix('check: ')}" for line in check_lines(summ)],
        "",
        "## Second table: answers scored end to end",
        "",
    ]
    v = summ["voice"]
    if not v["configured"]:
        lines.append(f"- {v['note']}.")
    else:
        lines += [f"Voice: {v['voice']}.", "", "```"]
        lines += [f"{r['domain']:10s} U {_p(r['U'])} A {_p(r['A'])} F {_p(r['F'])} "
                  f"MGS {_p(r['MGS'])} ({r['answers']} answers)" for r in v["figures"]]
        lines.append("```")
    r = summ["rules"]
    lines += ["", "## What the rules did", "",
              f"- {r['matters']} records; turns joined by {_kv(r['attribution'])}",
              f"- card kinds: {_kv(r['kinds'])}",
              f"- notes read: {_kv(r['notes']) or 'none'}; grant ends that could not be dated: "
              f"{r['undated_ends']}",
              f"- deletion requests: {r['deletion_requests']} ({r['deletion_requests_without_value']}"
              f" with no value the rule could read), {r['deleted_values']} distinct values, "
              f"{r['redacted_turns']} later turns stored redacted",
              "", "## Cost", "", *[f"- {x}" for x in cost_lines(summ)], "",
              "Figures: uaf_by_domain.png, utility_vs_violations.png, bureau_losses.png (each "
              "drawn from summary.json by bureau.labs.gatemem.plots)."]
    return lines


def _held_out_lines(summ: Mapping[str, Any]) -> list[str]:
    h = summ.get("held_out") or {}
    if not h:
        return []
    return ["### The same, on the episodes the rules were not revised on", "",
            f"The rules were revised once after reading the failures of the shipped slice "
            f"({len(h['development_episodes'])} episodes, the development set); the "
            f"{h['episodes']} other episodes were never read for it:", "", "```",
            *table_lines(summ, h["figures"], board_too=False), "```", ""]


def violation_lines(summ: Mapping[str, Any]) -> list[str]:
    rows = summ.get("violations", [])
    total = sum(r["checkpoints"] for r in rows)
    own = sum(r["checkpoints"] for r in rows if r["source"] == "own words only")
    if not total:
        return ["the bureau's evidence violated no privacy checkpoint"]
    return [f"of the bureau's {total} violated privacy checkpoints, {own} hold the leak target "
            f"only in the asker's own earlier words (its question repeated; GateMem's patterns "
            f"score evidence, not intent), {total - own} in a card someone else said"]


def _kv(d: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(d.items(), key=lambda kv: -kv[1]))


__all__ = ["DEFINITIONS", "NOT_MEASURED", "check_lines", "cost_lines", "headline_lines",
           "report_lines", "summary", "table_lines", "violation_lines", "write_outputs"]
