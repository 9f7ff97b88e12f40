"""Shared pieces of the widgets: one stylesheet, HTML escaping, error boxes, safe listeners.

Every widget renders plain HTML strings built here, so tests can read exactly what a browser would
show (``widget.value``) without a kernel or a browser.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from ...errors import BureauError
from ...model import BOARD, Event
from ...service.outward import RUN_SCOPE, TASK_SCOPES
from ...task_scopes import scope_name_of
from ...tiers import parse_run_owner

log = logging.getLogger("bureau.course.widgets")

CSS = """
<style>
.bureau-root { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 13px; }
.bureau-root h3, .bureau-root h4 { margin: 6px 0 4px 0; }
.bureau-muted { color: #6b7280; }
.bureau-badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 11px;
  background: #e5e7eb; color: #111827; margin-right: 4px; white-space: nowrap; }
.bureau-badge.known { background: #d1fae5; color: #065f46; }
.bureau-badge.unknown { background: #fef3c7; color: #92400e; }
.bureau-badge.miss { background: #fee2e2; color: #991b1b; }
.bureau-badge.lock { background: #ede9fe; color: #4c1d95; }
.bureau-badge.board { background: #dbeafe; color: #1e3a8a; }
.bureau-errorbox, .bureau-answerbox, .bureau-verdictbox {
  font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 13px; }
.bureau-errorbox { border-left: 4px solid #dc2626; background: #fef2f2; color: #7f1d1d;
  padding: 6px 10px; margin: 4px 0; }
.bureau-errorbox .hint { color: #374151; margin-top: 2px; }
.bureau-answerbox { border-left: 4px solid #2563eb; background: #eff6ff; padding: 6px 10px; }
.bureau-table { border-collapse: collapse; margin: 2px 0 6px 0; }
.bureau-table td, .bureau-table th { padding: 2px 8px; border-bottom: 1px solid #e5e7eb;
  text-align: left; vertical-align: top; }
.bureau-table tr.below td { color: #9ca3af; }
.bureau-bar { height: 10px; background: #60a5fa; border-radius: 3px; display: inline-block; }
.bureau-barcell { width: 180px; }
.bureau-spaces-grid { display: flex; flex-wrap: wrap; gap: 8px; }
.bureau-space { border: 1px solid #d1d5db; border-radius: 6px; padding: 6px; min-width: 170px;
  max-width: 260px; flex: 1 1 170px; }
.bureau-space.board { border-color: #2563eb; background: #f8fbff; }
.bureau-card { border: 1px solid #e5e7eb; border-radius: 4px; padding: 4px 6px; margin: 4px 0;
  background: #fff; }
.bureau-card.locked { background: repeating-linear-gradient(45deg, #f5f3ff, #f5f3ff 6px,
  #ede9fe 6px, #ede9fe 12px); color: #4c1d95; }
.bureau-stage-grid { display: flex; flex-wrap: wrap; gap: 10px; }
.bureau-count { font-size: 28px; font-weight: 600; }
.bureau-verdictbox { padding: 8px 12px; border-radius: 6px; margin: 4px 0; }
.bureau-verdictbox.ok { background: #ecfdf5; border-left: 4px solid #059669; }
.bureau-verdictbox.notyet { background: #fffbeb; border-left: 4px solid #d97706; }
.bureau-verdictbox.lost { background: #fef2f2; border-left: 4px solid #dc2626; }
.bureau-casefile, .bureau-stage-case { border: 1px solid #d1d5db; border-radius: 6px;
  padding: 4px 10px; margin: 4px 0; }
.bureau-check { padding: 1px 6px; }
.bureau-check.ok { color: #065f46; }
.bureau-check.fail { color: #991b1b; font-weight: 600; }
</style>
"""


def esc(value: object) -> str:
    """HTML-escape anything (cards, questions and role names are user-controlled text)."""
    return html.escape(str(value), quote=True)


def style_widget() -> W.HTML:
    """An invisible widget carrying the stylesheet; each top-level widget includes one."""
    w = W.HTML(CSS)
    w.add_class("bureau-style")
    return w


def space_label(scope: str) -> str:
    if scope == TASK_SCOPES:  # outward views name task scopes and runs by kind only
        return "task scopes (shared)"
    if scope == RUN_SCOPE:
        return "its run (ephemeral)"
    run = parse_run_owner(scope)  # a run's ephemeral scope (issue 14)
    if run is not None:
        return f"{run[1]}'s run {run[0]} (ephemeral)"
    task = scope_name_of(scope)  # a shared task scope (issue 14)
    if task is not None:
        return f"task scope {task} (shared)"
    return "bulletin board" if scope == BOARD else scope


def error_html(exc: BaseException) -> str:
    """Message and hint of a refusal; never a traceback."""
    if isinstance(exc, BureauError):
        title = type(exc).__name__
        message, hint = exc.message, exc.hint
    else:  # an unexpected failure: still no traceback in the learner's face
        title = f"Unexpected {type(exc).__name__}"
        message, hint = str(exc) or repr(exc), "This is a bug in Bureau; please report it."
    hint_html = f'<div class="hint">💡 {esc(hint)}</div>' if hint else ""
    return (
        f'<div class="bureau-errorbox" data-error="{esc(type(exc).__name__)}">'
        f"<b>{esc(title)}</b>: {esc(message)}{hint_html}</div>"
    )


def safe_listener(fn: Callable[[Event], Any]) -> Callable[[Event], None]:
    """Wrap a bureau event listener so a widget bug can never break a bureau command."""

    def listener(event: Event) -> None:
        try:
            fn(event)
        except Exception:  # noqa: BLE001 - logged, never raised into the saga
            log.exception("bureau widget listener failed on %s", event.type)

    return listener
