"""``python -m bureau demo``: the safe-combination story, end to end, with X-ray figures."""

from __future__ import annotations

from ..model import Answer
from ..service import Bureau, Case

QUESTION = "What is the combination of the safe in the study?"


def _xray_line(answer: Answer) -> str:
    t = answer.trace
    scopes = ", ".join(
        f"{s.scope}: {len(s.hits)} hit{'s' if len(s.hits) != 1 else ''} ({s.latency_ms:.1f} ms)"
        for s in t.scopes
    )
    hits = "; ".join(f"{c.owner} card {c.id} score {c.score:.2f}" for c in t.hits) or "none"
    return (f"    X-ray  searched [{', '.join(t.searched_scopes)}]  {scopes}  "
            f"embed {t.embed_ms:.1f} ms, total {t.total_ms:.1f} ms\n"
            f"           hits: {hits}; misses: {', '.join(t.misses) or 'none'}")


def _ask(case: Case, role: str, out: list[str]) -> Answer:
    answer = case.interrogate(role, QUESTION)
    out.append(f"  {role:>9} → {answer.text}  [{answer.certainty}]")
    out.append(_xray_line(answer))
    return answer


def run_demo(keep: bool = False) -> str:
    bureau = Bureau.open()
    case = bureau.load_scenario("safe-combination")
    out = [f"Case {case.id}: {case.scenario.title}",
           f"Roles: {', '.join(case.role_names)} (+ the bulletin board)",
           f"Data directory: {bureau.settings.data_dir}", "",
           f"1. Interrogate everyone: {QUESTION!r}"]
    for role in case.role_names:
        _ask(case, role, out)
    source = case.seed_card("safe-code")
    out += ["", f"2. Publish the informant's private card {source.id} to the board"]
    copy = case.publish("informant", source.id)
    out.append(f"    board copy {copy.id} (source {copy.source_role} card {copy.source_id}, "
               f"hash {copy.content_hash}); the original stays private")
    again = case.publish("informant", source.id)
    out.append(f"    publishing again returns the same copy: {again.id == copy.id}")
    out += ["", "3. Interrogate everyone again"]
    for role in case.role_names:
        _ask(case, role, out)
    out += ["", "4. Who can see what"]
    for space, cards in case.spaces().items():
        out.append(f"    {space:>9}: {len(cards)} card(s)")
    out.append(f"    knowers now: {', '.join(case.knowers(QUESTION))}")
    stage = case.stage()
    out.append(f"    stage view: private counts {stage['private_counts']}, "
               f"{len(stage['board'])} board card(s), no private text")
    if not keep:
        bureau.delete_case(case.id)
        out.append(f"\n(case {case.id} deleted; run with --keep to explore it in the course)")
    return "\n".join(out)
