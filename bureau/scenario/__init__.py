"""Scenarios: a case file on disk that says who the roles are, what each one privately knows and
which questions the course asks, with the answer key (who should know, before and after a
publication).

Roles are data, not an enum: a scenario may declare any number of them (at least two, or there is
nothing to isolate). Every check runs when the file is loaded, before a single card is written,
and every error names the file and the field path (``questions[0].knowers_before[1]: ...``) so a
teacher editing YAML by hand can find the mistake without reading this module. Unknown fields are
refused because a misspelt ``knowers_afer`` that silently fell back to a default would turn the
answer key into a lie.

Bad input costs little: a scenario is a handful of facts, so the file size, the nesting depth, the
number of values (counted *after* YAML aliases are expanded, which defeats "billion laughs" files)
and the total text are all capped before anything expensive runs (bureau.datafiles reads the file,
with the caps in :data:`LIMITS`), and every message that echoes the input is cut short. Whatever
the file or dict holds, the caller gets a ``ScenarioError`` in milliseconds, never a
``RecursionError``, a ``TypeError`` or an exhausted machine.
"""

from .loading import (
    SCENARIO_DIR,
    SHIPPED_ROOT,
    SUFFIXES,
    list_scenarios,
    load_scenario,
    parse_scenario,
)
from .schema import (
    LAB_LIMITS,
    LANGUAGE_RE,
    LIMITS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NUMBER_CHARS,
    MAX_PROBLEM_LINES,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
    MAX_VALUES,
    SIZE_HINT,
    PrincipalSpec,
    Question,
    RoleSpec,
    Scenario,
    SeedMemory,
)

__all__ = [
    "LAB_LIMITS",
    "LANGUAGE_RE",
    "LIMITS",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NUMBER_CHARS",
    "MAX_PROBLEM_LINES",
    "MAX_TEXT_CHARS",
    "MAX_TITLE_CHARS",
    "MAX_VALUES",
    "PrincipalSpec",
    "Question",
    "RoleSpec",
    "SCENARIO_DIR",
    "SHIPPED_ROOT",
    "SIZE_HINT",
    "SUFFIXES",
    "Scenario",
    "SeedMemory",
    "list_scenarios",
    "load_scenario",
    "parse_scenario",
]
