"""MAGPIE -> Bureau: a MAGPIE scenario as a case file, its roles, seed keys and queries.

Every MAGPIE scenario becomes a Bureau :class:`~bureau.scenario.Scenario`: each agent a role
(:func:`role_names`), each item a private seed memory of its owner (:func:`seed_key`; kind =
the MAGPIE label, so a shareable item is a private card its owner may publish). Each agent asks
one query (:func:`query_text`). :func:`to_lab` packs all of it into the
:class:`~bureau.leakage.labset.LabSet` the runner takes, so the runner never reads MAGPIE itself.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from bureau.leakage.labset import LabAgent, LabItem, LabScenario, LabSet
from bureau.leakage.magpie import MagpieAgent, MagpieDataset, MagpieScenario
from bureau.model import BOARD
from bureau.scenario import Scenario, parse_scenario
from bureau.text import MAX_CARD_CHARS, MAX_QUESTION_CHARS

DATASET_NAME = "MAGPIE"
QUERY_TEMPLATE = "{role}: {task}"
"""One query per requester: its MAGPIE role (the agent name if the role is empty), a colon and a
space, then the scenario task; whitespace collapsed to single spaces; if longer than
MAX_QUESTION_CHARS (500, the Bureau's question limit) cut at the last space at or before 500."""
TITLE_CHARS = 120
"""Scenario and role titles are labels, not texts: clipped well below the card limit."""


def full_query(scenario: MagpieScenario, agent: MagpieAgent) -> str:
    """:data:`QUERY_TEMPLATE` filled in, whitespace collapsed, before any cut."""
    role = " ".join(agent.role.split()) or agent.name
    return " ".join(QUERY_TEMPLATE.format(role=role, task=scenario.task).split())


def query_text(scenario: MagpieScenario, agent: MagpieAgent) -> str:
    """The requester's query (see :data:`QUERY_TEMPLATE`)."""
    text = full_query(scenario, agent)
    if len(text) > MAX_QUESTION_CHARS:
        text = text[: MAX_QUESTION_CHARS + 1].rsplit(" ", 1)[0].rstrip()
    return text


def slug(text: str, fallback: str, width: int = 32) -> str:
    """A Bureau name (``[a-z][a-z0-9_-]{0,31}``) from free text: ``Dr. Eleanor Vance`` ->
    ``dr_eleanor_vance``; accents folded, ``fallback`` if nothing usable is left."""
    ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    out = re.sub(r"[^a-z0-9]+", "_", ascii_.lower()).strip("_")[:width].rstrip("_")
    return out if out and out[0].isalpha() else fallback


def role_names(scenario: MagpieScenario) -> dict[str, str]:
    """Agent name -> unique role slug (``board`` is reserved, so an agent called Board is
    ``board_agent``; clashes get ``_2``, ``_3``...)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for n, agent in enumerate(scenario.agents, start=1):
        base = slug(agent.name, f"agent_{n}")
        base = "board_agent" if base == BOARD else base
        name, i = base, 1
        while name in used:
            i += 1
            name = f"{base[: 31 - len(str(i))]}_{i}"
        used.add(name)
        out[agent.name] = name
    return out


def _clip(text: str, limit: int) -> str:
    text = "".join(ch for ch in " ".join(text.split()) if unicodedata.category(ch)[0] != "C")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def seed_key(n: int) -> str:
    """The seed-memory key of the scenario's ``n``-th item (file order)."""
    return f"m{n:03d}"


def to_bureau_scenario(scenario: MagpieScenario, name: str = DATASET_NAME) -> Scenario:
    """The MAGPIE scenario as a Bureau :class:`Scenario` (validated like a file).

    Roles are agents (slug names, title = MAGPIE role); every item is a seed memory of its owner
    with key ``m000``, ``m001``... in file order, ``kind`` = the MAGPIE label (``shareable`` or
    ``private``) and ``topic`` = a slug of the MAGPIE key. The task is the summary; the title is
    ``<name> <scenario id>`` (``name``: another benchmark loaded into MAGPIE's data model keeps
    its own name).
    """
    roles = role_names(scenario)
    memories: dict[str, list[dict[str, str]]] = {roles[a.name]: [] for a in scenario.agents}
    n = 0
    for agent in scenario.agents:
        for item in agent.items:
            memories[roles[agent.name]].append(
                {
                    "key": seed_key(n),
                    "topic": slug(item.key, "item"),
                    "kind": item.label,
                    "content": _clip(item.text, MAX_CARD_CHARS),
                }
            )
            n += 1
    data: dict[str, Any] = {
        "id": slug(scenario.scenario_id, "magpie"),
        "title": _clip(f"{name} {scenario.scenario_id}", TITLE_CHARS),
        "summary": _clip(scenario.task, MAX_CARD_CHARS),
        "roles": [
            {
                "name": roles[a.name],
                "title": _clip(a.role or a.name, TITLE_CHARS),
                "description": _clip(a.description, MAX_CARD_CHARS),
            }
            for a in scenario.agents
        ],
        "memories": memories,
    }
    return parse_scenario(data)


def case_stem(scenario: MagpieScenario) -> str:
    """``mp-<scenario id slug>``: names the case after its scenario in listings."""
    return f"mp-{slug(scenario.scenario_id, 'x', 24).replace('_', '-')}"


def to_lab_scenario(scenario: MagpieScenario, name: str = DATASET_NAME) -> LabScenario:
    """One MAGPIE scenario in the runner's terms (items keep their MAGPIE ids and agent names).

    ``seed_key(n)`` numbers ``scenario.items``, which lists the agents' items in the same order
    :func:`to_bureau_scenario` writes them, so item ``n`` is seed memory ``m<n>``.
    """
    roles = role_names(scenario)
    agents = tuple(
        LabAgent(
            name=a.name,
            role=roles[a.name],
            query=query_text(scenario, a),
            query_cut=query_text(scenario, a) != full_query(scenario, a),
        )
        for a in scenario.agents
    )
    items = tuple(
        LabItem(
            item_id=i.item_id,
            scenario_id=i.scenario_id,
            domain=i.domain,
            owner=i.agent,
            label=i.label,
            text=i.text,
            seed_key=seed_key(n),
            abstraction=i.abstraction,
        )
        for n, i in enumerate(scenario.items)
    )
    return LabScenario(
        scenario_id=scenario.scenario_id,
        domain=scenario.domain,
        scenario=to_bureau_scenario(scenario, name),
        agents=agents,
        items=items,
        case_stem=case_stem(scenario),
    )


def to_lab(dataset: MagpieDataset, name: str = DATASET_NAME) -> LabSet:
    """A MAGPIE dataset (or a :func:`~bureau.leakage.magpie.subset` of one) as a lab set.

    ``name`` is the benchmark's name as the report and case titles give it: a benchmark loaded
    into MAGPIE's data model passes its own.
    """
    return LabSet(
        name=name,
        scenarios=tuple(to_lab_scenario(s, name) for s in dataset.scenarios),
        counts=dataset.counts(),
        source=dataset.source,
        source_scenarios=dataset.source_scenarios,
        dataset=dataset,
    )
