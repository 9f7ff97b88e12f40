"""End-of-lesson quizzes and prediction boxes that work offline (issue 21 §4).

The questions are data (``quizzes.yaml`` beside this module): three or four per lesson, each
choice with the explanation a learner reads after answering, whether it was right or not
(the Hugging Face course's quiz style: the wrong choices teach too). A quiz is a plain
ipywidgets box, so it runs in JupyterLab, Voila and a rendered page's live kernel alike, and
needs no server. Answers and predictions go to the learner's progress record
(:mod:`bureau.course.progress`) when a bureau is given.

    quiz("03", bureau)             # the lesson's questions, one "Check" button each
    predict("08-inside-run", bureau, "What will the answer say?")
"""

from __future__ import annotations

import html
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


@dataclass
class QuizState:
    """What a test drives: pick ``radios[i].index`` then ``buttons[i].click()``, read
    ``feedback[i].value``."""

    radios: list[W.RadioButtons]
    buttons: list[W.Button]
    feedback: list[W.HTML]


def quiz(lesson: str, bureau: Bureau | None = None) -> W.VBox:
    """The lesson's quiz as one widget; ``widget.state`` is its :class:`QuizState`."""
    qs = questions().get(str(lesson), ())
    where = _data_dir(bureau)
    radios, buttons, feedback, rows = [], [], [], []
    for n, q in enumerate(qs, start=1):
        radio = W.RadioButtons(options=[(c.text, i) for i, c in enumerate(q.choices)],
                               index=None, layout=W.Layout(width="auto"))
        button = W.Button(description="Check", button_style="info")
        out = W.HTML("")

        def on_click(_: Any, q: Question = q, radio: W.RadioButtons = radio,
                     out: W.HTML = out) -> None:
            if radio.index is None:
                out.value = "<i>Pick an answer first.</i>"
                return
            ok, why = q.grade(radio.index)
            mark = "✅ Right." if ok else "❌ Not quite."
            out.value = (f'<div class="bureau-quiz" data-ok="{str(ok).lower()}"><b>{mark}</b> '
                         f"{html.escape(why)}</div>")
            if where is not None:
                progress.record(where, "quiz", q.id, ok, str(radio.index))

        button.on_click(on_click)
        radios.append(radio)
        buttons.append(button)
        feedback.append(out)
        rows.append(W.VBox([W.HTML(f"<b>{n}. {html.escape(q.question)}</b>"), radio,
                            W.HBox([button, out])]))
    box = W.VBox([W.HTML(f"<h4>Check yourself: lesson {html.escape(str(lesson))}</h4>"), *rows])
    box.state = QuizState(radios, buttons, feedback)  # type: ignore[attr-defined]
    return box


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
    box.state = (text, save, said)  # type: ignore[attr-defined]
    return box


def last_prediction(item: str, bureau: Bureau) -> str | None:
    """The latest prediction saved under ``item`` (``None``: none yet)."""
    df = progress.attempts(bureau.settings.data_dir)
    mine = df[(df["kind"] == "prediction") & (df["item"] == item)]
    return None if mine.empty else str(mine["detail"].iloc[-1])


__all__ = ["Choice", "Question", "QuizState", "last_prediction", "predict", "questions", "quiz"]
