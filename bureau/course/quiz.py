"""End-of-lesson quizzes and prediction boxes that work offline (issue 21 §4).

The questions are data (``quizzes.yaml`` beside this module): three or four per lesson, each
choice with the explanation a learner reads after answering, whether it was right or not
(the Hugging Face course's quiz style: the wrong choices teach too). A quiz is a plain
ipywidgets box, so it runs in JupyterLab, Voila and a rendered page's live kernel alike, and
needs no server. Answers and predictions go to the learner's progress record
(:mod:`bureau.course.progress`) when a bureau is given.

    quiz("03", bureau)             # the lesson's questions, one "Check" button each
    predict("08-inside-run", bureau, "What will the answer say?")
    reveal("08-inside-run", bureau, answer.text)   # after the run: the guess beside the value
    application("02-scopes", bureau, "How many scopes?", answer=answers.of("02-scopes", answer))
"""

from __future__ import annotations

import hashlib
import html
import math
import numbers
import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as W
import yaml

from . import progress

if TYPE_CHECKING:
    from ..service import Bureau

QUIZ_FILE = Path(__file__).with_name("quizzes.yaml")
QUIZ_CLASS_PREFIX = "bureau-quiz-lesson-"
"""A quiz widget's DOM class ``bureau-quiz-lesson-03`` names its lesson for the site build."""
SITE_LEARNER = "site"
"""The learner key of the rendered site's choice order: shuffled like any learner's, so the
static page does not give the answer away by its position in the file."""


@dataclass(frozen=True)
class Choice:
    text: str
    why: str


@dataclass(frozen=True)
class Question:
    id: str
    lesson: str
    question: str
    choices: tuple[Choice, ...]
    answer: int

    def grade(self, picked: int) -> tuple[bool, str]:
        """Right or not, and the explanation of the picked choice."""
        if not 0 <= picked < len(self.choices):
            raise IndexError(f"{self.id} has choices 0..{len(self.choices) - 1}, not {picked}")
        return picked == self.answer, self.choices[picked].why


@cache
def questions() -> dict[str, tuple[Question, ...]]:
    """Every lesson's questions, read once from the shipped file."""
    data = yaml.safe_load(QUIZ_FILE.read_text(encoding="utf-8"))
    return {
        str(lesson): tuple(
            Question(q["id"], str(lesson), q["question"],
                     tuple(Choice(c["text"], c["why"]) for c in q["choices"]), int(q["answer"]))
            for q in items)
        for lesson, items in data.items()
    }


def _data_dir(bureau: Bureau | None) -> Path | None:
    return None if bureau is None else Path(bureau.settings.data_dir)


def learner_key(bureau: Bureau | None) -> str:
    """Who is taking the quiz, for the order of its choices: the learner's data directory (one
    per learner, a classroom tenant's too); ``""`` without a bureau."""
    where = _data_dir(bureau)
    return "" if where is None else str(where.expanduser().resolve())


def choice_order(q: Question, learner: str) -> list[int]:
    """The order a learner sees ``q``'s choices in: shuffled, and the same every time for that
    learner and question (seeded by both), so a reload does not move the answer a learner has
    just read; across learners the right answer sits in every position alike. Without it the
    shipped file's order gave the answer away (issue 34 §3: the second choice in 24 of 32)."""
    seed = hashlib.sha256(f"{learner}\0{q.id}".encode()).digest()
    order = list(range(len(q.choices)))
    random.Random(seed).shuffle(order)
    return order


@dataclass
class QuizState:
    """What a test drives: pick ``radios[i].value`` (a choice's index in the file; the radio
    shows them in ``orders[i]``) then ``buttons[i].click()``, read ``feedback[i].value``."""

    radios: list[W.RadioButtons]
    buttons: list[W.Button]
    feedback: list[W.HTML]
    orders: list[list[int]]


def quiz(lesson: str, bureau: Bureau | None = None) -> W.VBox:
    """The lesson's quiz as one widget; ``widget.state`` is its :class:`QuizState`."""
    qs = questions().get(str(lesson), ())
    where, learner = _data_dir(bureau), learner_key(bureau)
    radios, buttons, feedback, rows, orders = [], [], [], [], []
    for n, q in enumerate(qs, start=1):
        order = choice_order(q, learner)
        orders.append(order)
        radio = W.RadioButtons(options=[(q.choices[i].text, i) for i in order],
                               index=None, layout=W.Layout(width="auto"))
        button = W.Button(description="Check", button_style="info")
        out = W.HTML("")

        def on_click(_: Any, q: Question = q, radio: W.RadioButtons = radio,
                     out: W.HTML = out) -> None:
            if radio.value is None:
                out.value = "<i>Pick an answer first.</i>"
                return
            ok, why = q.grade(radio.value)  # the choice itself, wherever it was shown
            mark = "✅ Right." if ok else "❌ Not quite."
            out.value = (f'<div class="bureau-quiz" data-ok="{str(ok).lower()}"><b>{mark}</b> '
                         f"{html.escape(why)}</div>")
            if where is not None:
                # The choice's text, not its position: positions differ between learners.
                progress.record(where, "quiz", q.id, ok, q.choices[radio.value].text)

        button.on_click(on_click)
        radios.append(radio)
        buttons.append(button)
        feedback.append(out)
        rows.append(W.VBox([W.HTML(f"<b>{n}. {html.escape(q.question)}</b>"), radio,
                            W.HBox([button, out])]))
    box = W.VBox([W.HTML(f"<h4>Check yourself: lesson {html.escape(str(lesson))}</h4>"), *rows])
    # The classes name the quiz and its lesson, so a static page (tools/sitebuild.py) can put
    # quiz_html(lesson) where the live widget stood.
    box.add_class("bureau-quiz")
    box.add_class(f"{QUIZ_CLASS_PREFIX}{lesson}")
    box.state = QuizState(radios, buttons, feedback, orders)  # type: ignore[attr-defined]
    return box


def quiz_html(lesson: str, learner: str = SITE_LEARNER) -> str:
    """The lesson's quiz as static HTML, for a page with no kernel (the course site).

    Each question shows its choices (lettered, in ``learner``'s order) and a folded answer:
    the right choice and every choice's explanation, since the wrong ones teach too (the
    Hugging Face course's style). A ``<details>`` block needs no script, so the site stays
    offline and a reader still has to open it to see the answer."""
    items = []
    for n, q in enumerate(questions().get(str(lesson), ()), start=1):
        order = choice_order(q, learner)
        letter = {i: chr(ord("A") + k) for k, i in enumerate(order)}
        choices = "".join(f"<li>{html.escape(q.choices[i].text)}</li>" for i in order)
        whys = "".join(
            f"<li><b>{letter[i]}</b>: "
            f"{html.escape(q.choices[i].why)}</li>" for i in order)
        items.append(
            f'<div class="bureau-quiz-question" data-question="{html.escape(q.id)}">'
            f"<p><b>{n}. {html.escape(q.question)}</b></p>"
            f'<ol type="A">{choices}</ol>'
            f"<details><summary>Show the answer</summary>"
            f"<p><b>Answer: {letter[q.answer]}.</b> {html.escape(q.choices[q.answer].text)}</p>"
            f"<ul>{whys}</ul></details></div>")
    return (f'<div class="bureau-quiz-text" data-lesson="{html.escape(str(lesson))}">'
            f"<h4>Check yourself: lesson {html.escape(str(lesson))}</h4>{''.join(items)}"
            "<p><i>Run the lesson to answer in the quiz itself: your answers go to your "
            "progress record.</i></p></div>")


def quiz_text(lesson: str, learner: str = SITE_LEARNER) -> str:
    """:func:`quiz_html` as plain text (a notebook's ``text/plain`` beside the HTML)."""
    lines = [f"Check yourself: lesson {lesson}"]
    for n, q in enumerate(questions().get(str(lesson), ()), start=1):
        order = choice_order(q, learner)
        lines.append(f"{n}. {q.question}")
        lines += [f"   {chr(ord('A') + k)}. {q.choices[i].text}" for k, i in enumerate(order)]
        lines.append(f"   Answer: {chr(ord('A') + order.index(q.answer))}. "
                     f"{q.choices[q.answer].why}")
    return "\n".join(lines)


def predict(item: str, bureau: Bureau | None = None, prompt: str = "Your prediction:"
            ) -> W.VBox:
    """A box to write a prediction before the reveal; "Save" keeps it in the progress record
    (the reveal cell can then print it beside what happened)."""
    text = W.Textarea(placeholder="Write what you expect, then run the next cell.",
                      layout=W.Layout(width="100%", height="3.5em"))
    save = W.Button(description="Save")
    said = W.HTML("")
    where = _data_dir(bureau)

    def on_save(_: Any) -> None:
        if not text.value.strip():
            said.value = "<i>Write something first.</i>"
            return
        if where is not None:
            progress.record(where, "prediction", item, None, text.value.strip())
        said.value = "saved"

    save.on_click(on_save)
    box = W.VBox([W.HTML(f"<b>{html.escape(prompt)}</b>"), text, W.HBox([save, said])])
    box.add_class("bureau-predict")  # a static page shows the prompt alone (tools/sitebuild.py)
    box.state = (text, save, said)  # type: ignore[attr-defined]
    return box


def last_prediction(item: str, bureau: Bureau) -> str | None:
    """The latest prediction saved under ``item`` (``None``: none yet)."""
    df = progress.attempts(bureau.settings.data_dir)
    mine = df[(df["kind"] == "prediction") & (df["item"] == item)]
    return None if mine.empty else str(mine["detail"].iloc[-1])


REVEAL_CLASS = "bureau-reveal"
REVEAL_METADATA = "bureau-reveal"
"""The output metadata key under which a reveal keeps its item and run value, so the site build
(tools/sitebuild.py) can show the same reveal the site's way (:func:`reveal_site_html`)."""
PREDICT_FIRST = ("Predict first: write your guess in the box above and press Save, then run "
                 "this cell again.")
"""The one line a reveal shows when no prediction was saved (Run All ran straight past the box)."""
REVEAL_SUMMARY = "Show what this run gave"


def _run_fold(run: str, open_: bool) -> str:
    return (f'<details class="{REVEAL_CLASS}-run"{" open" if open_ else ""}>'
            f"<summary>{REVEAL_SUMMARY}</summary><p><b>This run:</b> {html.escape(run)}</p>"
            "</details>")


@dataclass(frozen=True)
class Reveal:
    """A saved prediction beside what the run produced. Plain HTML and text (no widget), so it
    reads the same in the lab and under papermill; the site shows it folded
    (:func:`reveal_site_html`).

    With a prediction saved, the guess and the run's value are shown together. Without one
    (*Run All* runs straight past the prediction box), one line says how to predict first and
    the run's value stays folded, so the learner can still predict before reading it."""

    item: str
    predicted: str | None
    this_run: str | None

    @property
    def run(self) -> str:
        return self.this_run if self.this_run is not None else "the output above"

    def lines(self) -> tuple[str, str]:
        said = (f"You predicted: {self.predicted}" if self.predicted is not None
                else PREDICT_FIRST)
        return said, f"This run:      {self.run}"

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        saved = self.predicted is not None
        said = (f"<p><b>You predicted:</b> {html.escape(self.predicted)}</p>" if saved
                else f'<p class="{REVEAL_CLASS}-first"><i>{html.escape(PREDICT_FIRST)}</i></p>')
        return (f'<div class="{REVEAL_CLASS}" data-item="{html.escape(self.item)}" '
                f'data-predicted="{str(saved).lower()}">{said}{_run_fold(self.run, saved)}</div>')

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None
                          ) -> tuple[dict[str, str], dict[str, Any]]:
        return ({"text/plain": repr(self), "text/html": self._repr_html_()},
                {REVEAL_METADATA: {"item": self.item, "this_run": self.this_run}})


def reveal_site_html(item: str, this_run: str | None) -> str:
    """A reveal on a page with no kernel (the course site): the run's value folded, nothing
    about a prediction or saving (a reader of the site has no box to save in)."""
    run = this_run if this_run is not None else "the output above"
    return (f'<div class="{REVEAL_CLASS}" data-item="{html.escape(item)}">'
            f"{_run_fold(run, False)}</div>")


def reveal(item: str, bureau: Bureau | None, this_run: object = None) -> Reveal:
    """The learner's latest prediction for ``item`` (saved with :func:`predict`) beside
    ``this_run``, the value the run just produced (``None``: the output above)."""
    predicted = None if bureau is None else last_prediction(item, bureau)
    return Reveal(item, predicted, None if this_run is None else str(this_run))


# -- application questions (issue 34 §3) ---------------------------------------------------------
APPLICATION_CLASS = "bureau-application"
"""The application box's DOM class: the site build (tools/sitebuild.py) shows it as text."""
APPLICATION_RUN_CLASS = "bureau-application-run"
"""The hidden child holding "On this page's run: …", which the site shows in a fold."""
REVEAL_AFTER = 3
"""Wrong tries before the feedback shows the run's value: never on the first, so the box still
asks the learner to read the output, and not never, so a learner cannot get stuck."""
_NUMBER = re.compile(r"[-+\u2212]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def format_value(answer: float | str, tolerance: float = 0.0, unit: str = "") -> str:
    """The run's value as a learner reads it: a whole number without decimals, others to the
    precision the tolerance asks for (``0.01`` → two decimals), then the unit."""
    if isinstance(answer, str):
        return answer
    value = float(answer)
    if value.is_integer() and abs(value) < 1e15:
        shown = str(int(value))
    elif tolerance > 0:
        shown = f"{value:.{max(0, -math.floor(math.log10(tolerance)))}f}"
    else:
        shown = f"{value:.6g}"
    return f"{shown} {unit}".strip() if unit else shown


def read_number(text: str) -> float | None:
    """The one number a learner wrote, or ``None``: "25.5", "25.5 %", "25,5" (a decimal comma)
    and "1,234.5" (a thousands comma) all read; "25 or 26" does not (one answer per try)."""
    text = text.strip()
    text = text.replace(",", "") if "." in text else text.replace(",", ".")
    found = _NUMBER.findall(text)
    if len(found) != 1:
        return None
    return float(found[0].replace("\u2212", "-"))


def _same_text(a: str, b: str) -> bool:
    return "".join(a.split()).casefold() == "".join(b.split()).casefold()


def grade_application(answer: float | str, given: str, tolerance: float = 0.0
                      ) -> tuple[bool | None, str]:
    """``(right, hint)`` for what a learner typed; ``right`` is ``None`` when ``given`` is not an
    answer at all (empty, or no single number where one is asked), which is not recorded.

    A number is right within ``tolerance`` of the run's value; the hint of a wrong one says
    only which way to look (higher or lower), never the value. A text is right when it equals
    the run's ignoring case and spaces."""
    if not given.strip():
        return None, "Write your answer first."
    if isinstance(answer, str):
        if _same_text(answer, given):
            return True, ""
        return False, "Read the output above again."
    number = read_number(given)
    if number is None:
        return None, "Write one number (for example 25.5)."
    if abs(number - float(answer)) <= tolerance + 1e-9 * max(1.0, abs(float(answer))):
        return True, ""
    way = "lower" if number > float(answer) else "higher"
    return False, f"This run's value is {way} than yours: read the output above again."


@dataclass
class ApplicationState:
    """What a test drives: set ``text.value``, ``button.click()``, read ``feedback.value``."""

    text: W.Text
    button: W.Button
    feedback: W.HTML
    tries: list[bool]
    """This box's graded tries, right or not, in order."""


def application(item: str, bureau: Bureau | None, question: str, answer: float | str, *,
                tolerance: float = 0.0, unit: str = "") -> W.VBox:
    """An application question: a number (or a short reading) from the lesson's own output,
    checked against ``answer``, the value this run produced (never a literal: the figure above
    and the check must be the same run's; a lesson passes ``answers.of(item, <the run's
    objects>)`` from :mod:`bureau.course.answers`, so its code does not spell the answer out).

    A number is right within ``tolerance`` (give one that covers how the output rounds it);
    "25.5", "25.5 %" and "25,5" all read. A wrong try gets "higher" or "lower", and the value
    only after :data:`REVEAL_AFTER` wrong tries. Each graded try goes to the progress record
    (kind ``application``: right or not, and what the learner typed). On the static site the
    box reads as its question with the value folded, as this page's run produced it
    (tools/sitebuild.py reads the hidden ``bureau-application-run`` child)."""
    if not isinstance(answer, str):
        if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
            raise TypeError(f"answer must be a number or a string, not {type(answer).__name__}")
        if not math.isfinite(float(answer)):
            raise ValueError(f"answer must be a finite number, not {answer!r}")
    if tolerance < 0:
        raise ValueError(f"tolerance must be 0 or more, not {tolerance!r}")
    shown = format_value(answer, tolerance, unit)
    where = _data_dir(bureau)
    text = W.Text(placeholder="a number" + (f" ({unit})" if unit else "")
                  if not isinstance(answer, str) else "your reading",
                  layout=W.Layout(width="16em"))
    button = W.Button(description="Check", button_style="info")
    feedback = W.HTML("")
    tries: list[bool] = []

    def on_click(_: Any) -> None:
        ok, hint = grade_application(answer, text.value, tolerance)
        if ok is None:
            feedback.value = f"<i>{html.escape(hint)}</i>"
            return
        tries.append(ok)
        if where is not None:
            progress.record(where, "application", item, ok, text.value.strip())
        if ok:
            msg = f"<b>✅ Right.</b> This run's value: {html.escape(shown)}."
        elif sum(not t for t in tries) >= REVEAL_AFTER:
            msg = (f"<b>❌ Not yet.</b> This run's value: {html.escape(shown)}. Find it in the "
                   "output above before you go on.")
        else:
            msg = f"<b>❌ Not yet.</b> {html.escape(hint)}"
        feedback.value = (f'<div class="{APPLICATION_CLASS}-feedback" '
                          f'data-ok="{str(ok).lower()}">{msg}</div>')

    button.on_click(on_click)
    run = W.HTML(f"On this page's run: {html.escape(shown)}", layout=W.Layout(display="none"))
    run.add_class(APPLICATION_RUN_CLASS)
    box = W.VBox([W.HTML(f"<b>🔎 Apply it: {html.escape(question)}</b>"),
                  W.HBox([text, button, feedback]), run])
    box.add_class(APPLICATION_CLASS)
    box.state = ApplicationState(text, button, feedback, tries)  # type: ignore[attr-defined]
    return box


def application_html(question_html: str, run: str) -> str:
    """An application question on a page with no kernel: the question, and the value this
    page's run produced in a fold (another run, the learner's own, may differ)."""
    return (f'<div class="{APPLICATION_CLASS}-text">'
            f"<p>{question_html}</p>"
            f"<details><summary>Show this page's value</summary><p>{run}</p></details>"
            '<p class="bureau-muted"><i>In the lesson, you type what you read into a box here '
            "and press Check: it is checked against the value your own run produced.</i></p>"
            "</div>")


__all__ = ["APPLICATION_CLASS", "APPLICATION_RUN_CLASS", "ApplicationState", "Choice",
           "PREDICT_FIRST", "Question", "QuizState", "REVEAL_CLASS", "REVEAL_METADATA", "Reveal",
           "application", "application_html",
           "choice_order", "format_value", "grade_application", "last_prediction",
           "learner_key", "predict", "questions", "quiz", "quiz_html", "quiz_text", "read_number",
           "reveal", "reveal_site_html"]
