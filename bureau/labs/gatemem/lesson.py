"""The deep dive's helpers (``notebooks/05c_gatemem.ipynb``): thin calls into the lab, so every
cell stays one line, and every sentence the lesson prints about a direction (more, fewer, up,
down) is computed from the run it describes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from bureau.labs.gatemem.dataset import GateMemSet, load_gatemem
from bureau.labs.gatemem.plan import OPTIONS, plan_episode
from bureau.labs.gatemem.plots import compare, headline_figure, losses_figure, pct, uaf_figure
from bureau.labs.gatemem.report import summary
from bureau.labs.gatemem.result import BUREAU, POLICY_LABELS, SHARED_POOL, GateMemResult

if TYPE_CHECKING:
    from bureau.figures import CourseFigure
    from bureau.service import Bureau


def load(path: str = "", limit: int | None = None) -> GateMemSet:
    """The shipped slice (``path`` empty), or a GateMem release at ``path``; ``limit``: the first
    N episodes of each domain."""
    return load_gatemem(Path(path) if path else None, limit=limit)


def describe(data: GateMemSet) -> str:
    """What ``data`` holds, in a sentence: episodes per domain, turns, and the checkpoints of
    each kind with the figure each one feeds (``safety`` checkpoints are GateMem's forgetting
    checks, F); a slice says how much of the release it is."""
    c = data.counts
    per: dict[str, int] = {}
    for e in data.episodes:
        per[e.domain] = per.get(e.domain, 0) + 1
    counts = set(per.values())
    each = (f"{counts.pop()} in each domain ({', '.join(per)})" if len(counts) == 1
            else ", ".join(f"{n} {d}" for d, n in per.items()))
    out = (f"{c['episodes']} episodes, {each}; {c['turns']:,} turns; {c['checkpoints']} "
           f"checkpoints: {c['utility']} utility (U), {c['privacy']} access control (A) and "
           f"{c['safety']} forgetting (F, GateMem's 'safety')")
    full = data.full_counts
    if data.is_slice and full:
        out += (f". Taken from the shipped slice; the whole release holds {full['episodes']} "
                f"episodes and {full['checkpoints']:,} checkpoints")
    return out + "."


def run(bureau: Bureau, data: GateMemSet, k: int = 20,
        options: Mapping[str, bool] | None = None) -> GateMemResult:
    """The lab on ``data`` (quietly: no progress bar), each episode's case deleted after it."""
    from bureau.labs.gatemem.runner import run_lab

    return run_lab(bureau, data, k, options=options)


def summarise(result: GateMemResult) -> dict[str, Any]:
    return summary(result)


def table(result: GateMemResult) -> pd.DataFrame:
    """U, A, F and MGS (%) per domain and policy, the leaderboard's range per domain below."""
    summ = summary(result)
    rows = [{"domain": r["domain"], "policy": POLICY_LABELS[r["policy"]],
             **{f: round(100 * r[f], 1) for f in ("U", "A", "F", "MGS", "A_others")}}
            for r in summ["figures"]]
    for b in summ["leaderboard_domain"]:
        if b["domain"] in summ["domains"]:
            rows.append({"domain": b["domain"], "policy": "leaderboard (LLM answers), range",
                         "U": f"{b['u_min']:.0f}–{b['u_max']:.0f}",
                         "A": f"{b['a_min']:.0f}–{b['a_max']:.0f}",
                         "F": f"{b['f_min']:.0f}–{b['f_max']:.0f}",
                         "MGS": f"≤ {b['mgs_max']:.1f}", "A_others": ""})
    return pd.DataFrame(rows)


def figure(result: GateMemResult) -> CourseFigure:
    return uaf_figure(summary(result))


def headline(result: GateMemResult) -> CourseFigure:
    return headline_figure(summary(result))


def losses(result: GateMemResult) -> CourseFigure:
    return losses_figure(summary(result))


def _all(summ: Mapping[str, Any], policy: str) -> Mapping[str, Any]:
    return next(r for r in summ["figures"] if r["domain"] == "all" and r["policy"] == policy)


def findings(result: GateMemResult) -> str:
    """Three sentences about the run, every direction word computed from it."""
    summ = summary(result)
    b, p = _all(summ, BUREAU), _all(summ, SHARED_POOL)
    own = sum(r["checkpoints"] for r in summ["violations"] if r["source"] == "own words only")
    bad = sum(r["checkpoints"] for r in summ["violations"])
    return (
        f"The bureau's evidence held a leak target on {pct(b['A'])} of the privacy checkpoints, "
        f"{compare(b['A'], p['A'], 'more', 'fewer', 'as many')} than the shared pool's "
        f"{pct(p['A'])}; of its {bad} violated checkpoints, {own} held the target only in the "
        f"asker's own earlier words.\n"
        f"After a deletion it handed over a deleted value on {pct(b['F'])} of the checkpoints, "
        f"against the pool's {pct(p['F'])} (the pool never forgets).\n"
        f"It kept every include on {pct(b['U'])} of the utility checkpoints, "
        f"{compare(b['U'], p['U'], 'more', 'less', 'as much')} than the pool's {pct(p['U'])}.")


def rules_of(data: GateMemSet, episode: int = 0) -> pd.DataFrame:
    """Who reads which record of one episode, by the matter rule (one row per principal)."""
    ep = data.episodes[episode]
    plan = plan_episode(ep)
    rows = []
    for p in ep.principals:
        row = {"principal": p.pid, "role": p.role}
        for m in plan.matters:
            row[f"{m.role} ({m.key})"] = m.levels.get(p.pid, "")
        rows.append(row)
    return pd.DataFrame(rows)


def policy_of(data: GateMemSet, episode: int = 0, version: int = 0) -> dict[str, Any]:
    """The policy file the administrator wrote for one episode (one version)."""
    return plan_episode(data.episodes[episode]).policy(version)


def episode_case(bureau: Bureau, data: GateMemSet, episode: int = 0, upto: int = 80) -> Any:
    """One episode replayed on real storage up to turn ``upto`` (its case kept, its mediator
    left on the episode's policy): the case a cell can look into."""
    from dataclasses import replace

    from bureau.labs.gatemem.replay import replay
    from bureau.labs.gatemem.runner import embed_texts
    from bureau.quotas import lifted

    plan = plan_episode(data.episodes[episode])
    part = replace(plan, steps=[s for s in plan.steps if s.index <= upto])
    texts = list(dict.fromkeys(part.texts()))
    bureau.encoder.reserve_cache(len(texts) + 1024)
    with lifted(bureau):
        run = replay(bureau, part, [], embed_texts(bureau.encoder, texts), 20, "gm-lesson")
    return bureau.case(run.case_id)


QUESTION = "What is the current plan, with any results, amounts, codes and times?"
"""The question of the demo consult (the lesson's, not a GateMem checkpoint)."""


def demo(bureau: Bureau, data: GateMemSet, episode: int = 0, upto: int = 60
         ) -> tuple[Any, str, str]:
    """The first episode replayed to turn ``upto``, and a limited reader of its first record
    (one a relationship names, if any): (case, that reader, the record's role)."""
    from bureau.labs.gatemem.plan import live_cards
    from bureau.labs.gatemem.rules.matters import LIMITED

    plan = plan_episode(data.episodes[episode])
    _, version = live_cards(plan, upto)
    record = plan.matters[0]
    state = plan.states[version][record.key]
    related = [w for r in data.episodes[episode].relationships for w in r.fields.values()]
    limited = sorted(p for p, lv in state.items() if lv == LIMITED)
    reader = next((p for p in limited if p in related), limited[0] if limited else
                  record.subject or "")
    return episode_case(bureau, data, episode, upto), reader, record.role


def decisions(case: Any, asker: str, record: str, question: str = QUESTION, k: int = 5
              ) -> pd.DataFrame:
    """``asker`` consults ``record`` through its own handle; the operator's view of each
    decision (the audit trail): card, kind, action, the rule that decided."""
    handle = case.agent(asker, threshold=-1.0)
    result = handle.consult(record, question, limit=k)
    audit = case.audit(verify=False)
    mine = audit[audit["invocation_id"] == result.invocation.id]
    mine = mine[mine["kind"] == "decision"]
    cards = {c.id: c for c in case.spaces().get(record, [])}
    return pd.DataFrame([{"card": cards[cid].content if cid in cards else cid,
                          "kind": cards[cid].info_type if cid in cards else "",
                          "action": action, "rule": rule if isinstance(rule, str) else
                          "(none matched: the default, withhold)"}
                         for cid, action, rule in zip(mine["card_id"], mine["action"],
                                                      mine["rule"], strict=True)])


def moved(before: GateMemResult, after: GateMemResult) -> str:
    """How U, A and F of the bureau moved between two runs, in words computed from them."""
    b, a = _all(summary(before), BUREAU), _all(summary(after), BUREAU)
    parts = []
    for fig, name in (("U", "utility"), ("A", "access violations"), ("F", "forgetting failures")):
        word = compare(a[fig], b[fig], "rose", "fell", "stayed")
        parts.append(f"{name} {word} ({pct(b[fig])} → {pct(a[fig])})")
    changed = {k: v for k, v in after.options.items() if before.options.get(k) != v}
    return f"With {changed or 'no rule changed'}: " + "; ".join(parts) + "."


def check_rule_change(answer: Any) -> tuple[bool, str]:
    """The exercise's check: ``answer = {"before": result, "after": result}``, two runs on the
    same checkpoints that differ in exactly one rule; passes when U or A moved, and says how."""
    if not isinstance(answer, Mapping) or not {"before", "after"} <= set(answer):
        return False, 'Pass {"before": result, "after": my_result}.'
    before, after = answer["before"], answer["after"]
    if not all(isinstance(r, GateMemResult) for r in (before, after)):
        return False, "Both must be results of lesson.run(...)."
    if set(before.rows["checkpoint_id"]) != set(after.rows["checkpoint_id"]):
        return False, "Run both on the same data, so the same checkpoints are asked."
    changed = [k for k in OPTIONS if before.options.get(k) != after.options.get(k)]
    if len(changed) != 1:
        return False, (f"Change exactly one rule (you changed {len(changed)}: "
                       f"{', '.join(changed) or 'none'}); the rules are {', '.join(OPTIONS)}.")
    b, a = _all(summary(before), BUREAU), _all(summary(after), BUREAU)
    if round(100 * a["U"]) == round(100 * b["U"]) and round(100 * a["A"]) == round(100 * b["A"]):
        return False, (f"{changed[0]} changed neither U nor A on these checkpoints; try "
                       "limited_reads_records or credentials_need_to_know.")
    return True, moved(before, after)


__all__ = ["QUESTION", "check_rule_change", "decisions", "demo", "describe", "episode_case", "figure", "findings", "headline",
           "load", "losses", "moved", "policy_of", "rules_of", "run", "summarise", "table"]
