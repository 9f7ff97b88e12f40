"""Jupyter widgets for the course: operator console, memory X-ray, spaces view, stage.

Each ``make_*()`` returns ``(widget, state)``: display the widget, drive or inspect the state
(tests click ``state.whisper_button``, read ``state.xray.html.value``, ...). Handlers never use
``with output:`` (it captures nothing outside a kernel); they set HTML values or call
``Output.append_stdout``.
"""

from ..tables import show_whole_text
from .attacks import attacks_html, make_attack_report
from .console import ConsoleState, make_console
from .environment import Check, environment_checks, make_environment_report
from .exercises import EXERCISES, Verdict, check
from .spaces import SpacesState, make_spaces, spaces_html
from .stage import StageState, latest_case_id, make_stage, stage_html
from .xray import XrayState, make_xray, xray_html

show_whole_text()  # every lesson imports this package: its tables show their text whole

__all__ = [
    "EXERCISES",
    "Check",
    "ConsoleState",
    "SpacesState",
    "StageState",
    "Verdict",
    "XrayState",
    "attacks_html",
    "check",
    "environment_checks",
    "latest_case_id",
    "make_attack_report",
    "make_console",
    "make_environment_report",
    "make_spaces",
    "make_stage",
    "make_xray",
    "spaces_html",
    "stage_html",
    "xray_html",
]
