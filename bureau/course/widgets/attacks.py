"""A table of attack outcomes for lesson 04 (the attacks themselves live in ``bureau.course.attacks``)."""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as W

from ..attacks import AttackResult
from ._common import esc, style_widget


def _row(r: AttackResult) -> str:
    against = f"<br><i>holds against {esc(r.against)}</i>" if r.against else ""
    return (
        f'<tr data-blocked="{str(r.blocked).lower()}">'
        f'<td class="bureau-check {"ok" if r.blocked else "fail"}">'
        f'{"🛡️ blocked" if r.blocked else "🚨 LEAKED"}</td>'
        f"<td><b>{esc(r.name)}</b><br><code>{esc(r.attempt)}</code>{against}</td>"
        f"<td>{esc(r.refusal or '—')}</td><td>{esc(r.reason)}</td></tr>"
    )


def attacks_html(results: Sequence[AttackResult]) -> str:
    """The attacks as a table: outcome, the attempt and the actor it holds against, the
    bureau's refusal, and why it failed."""
    rows = "".join(_row(r) for r in results)
    blocked = sum(r.blocked for r in results)
    return (
        f'<div class="bureau-root"><h3>Attacks: {blocked}/{len(results)} blocked</h3>'
        '<table class="bureau-table"><tr><th>outcome</th><th>attack</th><th>refusal</th>'
        f"<th>why it failed</th></tr>{rows}</table></div>"
    )


def make_attack_report(results: Sequence[AttackResult]) -> tuple[W.VBox, list[AttackResult]]:
    html = W.HTML(attacks_html(results))
    box = W.VBox([style_widget(), html])
    box.add_class("bureau-attacks")
    return box, list(results)
