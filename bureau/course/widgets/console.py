"""The operator console: the bureau chief's controls for one case.

Pick a case (or open a new one from a scenario), pick the role to act as, whisper a card into
that role's private memory, ask it a question (the answer comes with its memory X-ray), and
publish any of its private cards to the board. When the case's scenario has a case file (issue
49), a panel shows it: the goal, the question, each rule kept or broken, the moves used and the
verdict (never the answer), redrawn after each action and on the case's events, and the score's
numbers are recorded in the learner's progress record (:mod:`bureau.game.progress`). Refusals (:class:`~bureau.errors.BureauError`)
appear as a message and a hint, never as a traceback.

Everything the console does goes through :class:`~bureau.service.Case`; the console keeps no
state of its own that the bureau does not also have, and it redraws on the bureau's events, so a
second console or a stage stays in step with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import ipywidgets as W

from ...errors import BureauError
from ...game import Score, record_score, score
from ...model import BOARD, Answer, Event, MemoryCard
from ...service import Bureau, Case
from ._common import error_html, esc, safe_listener, style_widget
from .case_file import case_file_html
from .spaces import SpacesState, make_spaces
from .xray import XrayState, make_xray

NEW = "new:"
"""Case-picker values starting with this open a new case from the scenario id that follows."""

T = TypeVar("T")


def case_options(bureau: Bureau) -> list[tuple[str, str]]:
    """Existing cases (newest first), then one "new case" entry per shipped scenario."""
    existing = [(f"{r.title} — {r.case_id}", r.case_id) for r in reversed(bureau.cases())]
    new = [(f"➕ new case: {s.title}", NEW + s.id) for s in bureau.scenarios()]
    return existing + new


def answer_html(answer: Answer) -> str:
    badge = "known" if answer.known else "unknown"
    cited = f" · cites {len(answer.cited)} card(s)" if answer.cited else ""
    return (
        f'<div class="bureau-root bureau-answerbox" data-known="{str(answer.known).lower()}">'
        f"<b>{esc(answer.trace.role)}</b> answers: {esc(answer.text)} "
        f'<span class="bureau-badge {badge}">{badge}</span>'
        f'<span class="bureau-muted">{esc(answer.responder)}{cited}</span></div>'
    )


@dataclass
class ConsoleState:
    """The console's widgets and what its last actions returned (for tests and check cells)."""

    bureau: Bureau
    case_picker: W.Dropdown
    role_rail: W.ToggleButtons
    whisper_text: W.Text
    whisper_topic: W.Text
    whisper_kind: W.Text
    whisper_button: W.Button
    suggestions: W.Dropdown
    question: W.Text
    ask_button: W.Button
    answer: W.HTML
    error: W.HTML
    publish_box: W.VBox
    log: W.Output
    xray: XrayState
    spaces: SpacesState
    case_file: W.HTML
    case: Case | None = None
    publish_buttons: dict[str, W.Button] = field(default_factory=dict)
    last_card: MemoryCard | None = None
    last_answer: Answer | None = None
    last_published: MemoryCard | None = None
    last_error: BaseException | None = None
    last_score: Score | None = None
    _publish_key: Any = field(default=None, repr=False)
    _case_file_key: Any = field(default=None, repr=False)
    _quiet: bool = field(default=False, repr=False)
    _unsubscribe: Callable[[], None] | None = field(default=None, repr=False)

    # -- helpers -------------------------------------------------------------------------------
    @property
    def role(self) -> str | None:
        return self.role_rail.value

    def _run(self, action: str, fn: Callable[[], T]) -> T | None:
        """Run one command; show a refusal as message + hint (never a traceback)."""
        self.error.value = ""
        self.last_error = None
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - BureauError expected; anything else shown too
            self.last_error = exc
            self.error.value = error_html(exc)
            reason = exc.message if isinstance(exc, BureauError) else str(exc)
            self.log.append_stdout(f"✗ {action} refused: {reason}\n")
            return None
        self.refresh_case_file()
        return result

    def _need_case(self) -> Case:
        if self.case is None:
            raise BureauError("No case is open.", "Pick a case (or a new one) in the case picker.")
        return self.case

    def _need_role(self) -> str:
        if not self.role:
            raise BureauError("No role is selected.", "Pick the role to act as in the role rail.")
        return self.role

    # -- cases -----------------------------------------------------------------------------------
    def open_case(self, case: Case | str | None) -> Case | None:
        """Show ``case`` (a Case, a case id, or ``"new:<scenario id>"`` to open a new one)."""

        def do() -> Case | None:
            target = case
            if isinstance(target, str) and target.startswith(NEW):
                target = self.bureau.load_scenario(target[len(NEW):])
                self.log.append_stdout(f"opened new case {target.id}\n")
            elif isinstance(target, str):
                target = self.bureau.case(target)
            self.case = target
            self._sync_picker()
            self._sync_roles()
            self.xray.clear()
            self.answer.value = ""
            self.spaces.set_case(target)
            self.refresh()
            return target

        return self._run("open case", do)

    def _sync_picker(self) -> None:
        self._quiet = True
        try:
            self.case_picker.options = case_options(self.bureau)
            self.case_picker.value = self.case.id if self.case else None
        finally:
            self._quiet = False

    def _sync_roles(self) -> None:
        case = self.case
        self._quiet = True
        try:
            if case is None:
                self.role_rail.options = []
                self.suggestions.options = [("— suggested questions —", "")]
                return
            self.role_rail.options = [(r.title, r.name) for r in case.scenario.roles]
            self.role_rail.tooltips = [r.description or r.title for r in case.scenario.roles]
            self.role_rail.value = case.role_names[0]
            self.suggestions.options = [("— suggested questions —", "")] + [
                (q.text, q.text) for q in case.scenario.questions
            ]
            self.suggestions.value = ""
        finally:
            self._quiet = False

    def _on_pick(self, change: dict[str, Any]) -> None:
        if not self._quiet and change["new"] and change["new"] != self.case_id:
            if self.open_case(change["new"]) is None:
                self._sync_picker()  # refused: show the case that is still open

    @property
    def case_id(self) -> str | None:
        return self.case.id if self.case else None

    # -- commands --------------------------------------------------------------------------------
    def whisper(self) -> MemoryCard | None:
        """Whisper the whisper box's text into the selected role's private memory."""

        def do() -> MemoryCard:
            case, role = self._need_case(), self._need_role()
            card = case.whisper(
                role,
                self.whisper_text.value,
                topic=self.whisper_topic.value.strip() or "general",
                kind=self.whisper_kind.value.strip() or "note",
            )
            self.last_card = card
            self.whisper_text.value = ""
            self.log.append_stdout(f"whispered card {card.id} to {role}\n")
            return card

        return self._run("whisper", do)

    def ask(self) -> Answer | None:
        """Interrogate the selected role with the question box; show the answer and its X-ray."""

        def do() -> Answer:
            case, role = self._need_case(), self._need_role()
            answer = case.interrogate(role, self.question.value)
            self.last_answer = answer
            self.answer.value = answer_html(answer)
            self.xray.show(answer)
            self.log.append_stdout(f"asked {role}: {answer.certainty}\n")
            return answer

        return self._run("ask", do)

    def publish(self, card_id: str) -> MemoryCard | None:
        """Publish one of the selected role's private cards to the board."""

        def do() -> MemoryCard:
            case, role = self._need_case(), self._need_role()
            copy = case.publish(role, card_id)
            self.last_published = copy
            self.log.append_stdout(f"published card {card_id} of {role} as board copy {copy.id}\n")
            return copy

        return self._run("publish", do)

    # -- redraw ----------------------------------------------------------------------------------
    def refresh_case_file(self) -> Score | None:
        """Redraw the case-file panel when the case has moved since the last redraw (its newest
        event), and record the score's numbers in the learner's progress record when they
        changed. Nothing to show (an empty panel) for a case whose scenario has no case file."""
        case = self.case
        if case is None or case.scenario.case_file is None:
            self.case_file.value, self.last_score, self._case_file_key = "", None, None
            return None
        try:
            last = self.bureau.last_event(case.id)
            key = (case.id, last.seq if last else 0)
            if key == self._case_file_key:
                return self.last_score
            s = score(case)
        except BureauError as exc:  # e.g. the case was deleted meanwhile
            self.case_file.value, self.last_score, self._case_file_key = "", None, None
            self.log.append_stdout(f"✗ case file not read: {exc.message}\n")
            return None
        self._case_file_key, self.last_score = key, s
        self.case_file.value = case_file_html(s)
        record_score(self.bureau.settings.data_dir, s)
        return s

    def refresh(self) -> None:
        """Redraw the case file (when the case moved) and the publish buttons (only when the
        role's cards or the board changed)."""
        self.refresh_case_file()
        case, role = self.case, self.role
        if case is None or not role:
            self.publish_box.children = ()
            self.publish_buttons = {}
            self._publish_key = None
            return
        spaces = case.spaces()
        mine = spaces.get(role, [])
        on_board = {c.source_id for c in spaces.get(BOARD, []) if c.source_id}
        key = (case.id, role, tuple(c.id for c in mine), tuple(sorted(on_board)))
        if key == self._publish_key:
            return
        self._publish_key = key
        rows: list[W.Widget] = []
        buttons: dict[str, W.Button] = {}
        for card in mine:
            done = card.id in on_board
            button = W.Button(
                description="On board ✓" if done else "Publish",
                disabled=done,
                button_style="" if done else "info",
                tooltip=f"Copy card {card.id} to the bulletin board",
                layout=W.Layout(width="110px"),
            )
            button.add_class("bureau-publish")
            button.on_click(lambda _b, cid=card.id: self.publish(cid))
            buttons[card.id] = button
            label = W.HTML(
                f'<span class="bureau-badge lock">🔒 {esc(card.topic)}</span> {esc(card.snippet(70))}'
            )
            row = W.HBox([button, label])
            row.add_class("bureau-publish-row")
            rows.append(row)
        if not rows:
            rows = [W.HTML(f'<span class="bureau-muted">{esc(role)} holds no private card.</span>')]
        self.publish_box.children = tuple(rows)
        self.publish_buttons = buttons

    def on_event(self, event: Event) -> None:
        if event.type == "case.created" and event.case_id != self.case_id:
            self._sync_picker()
        elif self.case is not None and event.case_id == self.case.id:
            self.refresh()

    def close(self) -> None:
        """Stop listening to the bureau (and the embedded X-ray and spaces views)."""
        self.spaces.close()
        if self._unsubscribe:
            self._unsubscribe()
            self._unsubscribe = None


def _section(text: str) -> W.HTML:
    return W.HTML(f'<div class="bureau-root"><h4>{esc(text)}</h4></div>')


def make_console(
    bureau: Bureau, case: Case | str | None = None, show_spaces: bool = True
) -> tuple[W.VBox, ConsoleState]:
    """Build the operator console for ``case`` (a Case, a case id, or None to pick one)."""
    picker = W.Dropdown(description="Case", options=case_options(bureau), value=None,
                        layout=W.Layout(width="520px"))
    picker.add_class("bureau-case-picker")
    roles = W.ToggleButtons(options=[], description="Act as")
    roles.add_class("bureau-roles")
    whisper_text = W.Text(placeholder="a fact only this role will know…",
                          layout=W.Layout(width="360px"))
    whisper_text.add_class("bureau-whisper-text")
    topic = W.Text(value="general", description="topic", layout=W.Layout(width="170px"))
    topic.add_class("bureau-whisper-topic")
    kind = W.Text(value="note", description="kind", layout=W.Layout(width="150px"))
    kind.add_class("bureau-whisper-kind")
    whisper_button = W.Button(description="Whisper", icon="user-secret", button_style="warning")
    whisper_button.add_class("bureau-whisper")
    suggestions = W.Dropdown(options=[("— suggested questions —", "")], value="",
                             layout=W.Layout(width="520px"))
    suggestions.add_class("bureau-suggestions")
    question = W.Text(placeholder="ask the selected role…", layout=W.Layout(width="520px"))
    question.add_class("bureau-question")
    ask_button = W.Button(description="Ask", icon="question", button_style="primary")
    ask_button.add_class("bureau-ask")
    answer = W.HTML()
    answer.add_class("bureau-answer")
    error = W.HTML()
    error.add_class("bureau-error")
    publish_box = W.VBox()
    publish_box.add_class("bureau-publish-panel")
    log = W.Output(layout=W.Layout(max_height="120px", overflow="auto"))
    log.add_class("bureau-log")
    case_file = W.HTML()
    case_file.add_class("bureau-case-file")
    xray_box, xray = make_xray()
    spaces_box, spaces = make_spaces(None, live=True, bureau=bureau)

    state = ConsoleState(
        bureau=bureau, case_picker=picker, role_rail=roles, whisper_text=whisper_text,
        whisper_topic=topic, whisper_kind=kind, whisper_button=whisper_button,
        suggestions=suggestions, question=question, ask_button=ask_button, answer=answer,
        error=error, publish_box=publish_box, log=log, xray=xray, spaces=spaces,
        case_file=case_file,
    )
    picker.observe(state._on_pick, names="value")
    roles.observe(lambda _c: None if state._quiet else state.refresh(), names="value")

    def pick_suggestion(change: dict[str, Any]) -> None:
        if change["new"]:
            question.value = change["new"]

    suggestions.observe(pick_suggestion, names="value")
    whisper_button.on_click(lambda _b: state.whisper())
    ask_button.on_click(lambda _b: state.ask())
    state._unsubscribe = bureau.subscribe(safe_listener(state.on_event))
    if case is not None:
        state.open_case(case)

    parts: list[W.Widget] = [
        style_widget(),
        W.HTML('<div class="bureau-root"><h3>🕵️ Operator console</h3></div>'),
        picker,
        case_file,
        roles,
        _section("Whisper into the selected role's private memory"),
        W.HBox([whisper_text, topic, kind, whisper_button]),
        _section("Interrogate the selected role"),
        suggestions,
        W.HBox([question, ask_button]),
        error,
        answer,
        _section("Publish one of its private cards to the board"),
        publish_box,
        log,
        xray_box,
    ]
    if show_spaces:
        parts.append(spaces_box)
    box = W.VBox(parts)
    box.add_class("bureau-console")
    return box, state
