"""MAGPIE -> Bureau: a MAGPIE scenario as a case file, its roles, seed keys and queries.

Every MAGPIE scenario becomes a Bureau :class:`~bureau.scenario.Scenario`: each agent a role
(:func:`role_names`), each item a private seed memory of its owner (:func:`seed_key`; kind =
the MAGPIE label, so a shareable item is a private card its owner may publish). Each agent asks
one query (:func:`query_text`). :func:`to_lab` packs all of it into the
:class:`~bureau.labs.leakage.datasets.labset.LabSet` the runner takes, so the runner never reads MAGPIE itself.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any, Literal

from bureau.errors import ScenarioError
from bureau.labs.leakage.datasets.agentsocialbench import SCENARIOS_DIR, load_agentsocialbench
from bureau.labs.leakage.datasets.labset import LabAgent, LabItem, LabScenario, LabSet
from bureau.labs.leakage.datasets.magpie import (
    TSV_NAME,
    MagpieAgent,
    MagpieDataset,
    MagpieScenario,
    load_magpie,
    subset,
)
from bureau.labs.leakage.datasets.social_lab import to_lab_dataset
from bureau.labs.leakage.datasets.social_model import SocialDataset
from bureau.model import BOARD
from bureau.scenario import Scenario, parse_scenario
from bureau.text import MAX_CARD_CHARS, MAX_QUESTION_CHARS

DATASET_NAME = "MAGPIE"
SOCIAL_NAME = "AgentSocialBench"
QUERY_TEMPLATE = "{task} {role} {description}"
"""The headline query (``own_job``), asked under every policy: what the requester knows about its
own job -- the scenario task, its role (the agent name if the role is empty) and its role
description, space-separated; whitespace collapsed to single spaces; if longer than
MAX_QUESTION_CHARS (the Bureau's question limit) cut at the last space within it. The limit is
well above the text MiniLM reads (its first 256 tokens), so a cut never shortens what the model
sees below that."""
QUERY_VARIANTS = {
    "own_job": QUERY_TEMPLATE,
    "task": "{task}",
    "role_task": "{role}: {task}",
}
"""Every query the lab scores, by name. ``task`` is the relevance-AUROC headline (the MaaS
setting: the request is the task); ``role_task`` is the lab's former query, reported beside it.
Only ``own_job`` is asked through the Bureau; the others are scored in numpy."""
TITLE_CHARS = 120
"""Scenario and role titles are labels, not texts: clipped well below the card limit."""


def full_query(scenario: MagpieScenario, agent: MagpieAgent, variant: str = "own_job") -> str:
    """The query called ``variant`` (:data:`QUERY_VARIANTS`), whitespace collapsed, before any
    cut."""
    role = " ".join(agent.role.split()) or agent.name
    text = QUERY_VARIANTS[variant].format(role=role, task=scenario.task,
                                          description=agent.description)
    return " ".join(text.split())


def query_text(scenario: MagpieScenario, agent: MagpieAgent, variant: str = "own_job") -> str:
    """The requester's query (see :data:`QUERY_TEMPLATE`), cut to the Bureau's question limit."""
    text = full_query(scenario, agent, variant)
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
    with key ``m000``, ``m001``... in file order, ``kind`` and ``sensitivity`` = the MAGPIE label
    (``shareable`` or ``private``), ``abstraction`` = its safe abstraction if it has one, and
    ``topic`` = a slug of the MAGPIE key. The task is the summary; the title is
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
                    # What the mediated policy e matches on (bureau.labs.leakage.policies.mediated).
                    "sensitivity": item.label,
                    **({"abstraction": _clip(item.abstraction, MAX_CARD_CHARS)}
                       if item.abstraction else {}),
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
            variants={v: query_text(scenario, a, v) for v in QUERY_VARIANTS if v != "own_job"},
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
    """A MAGPIE dataset (or a :func:`~bureau.labs.leakage.datasets.magpie.subset` of one) as a lab set.

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


# --- AgentSocialBench, and picking a benchmark by its layout --------------------------------------

Benchmark = Literal["magpie", "agentsocialbench"]
BENCHMARK_NAMES: dict[str, str] = {"magpie": DATASET_NAME, "agentsocialbench": SOCIAL_NAME}


def social_subset(dataset: SocialDataset, limit: int | None) -> SocialDataset:
    """The first ``limit`` AgentSocialBench scenarios taking the categories in turn (the first
    of each category in file order, then the second of each, ...), or all; kept in the
    loader's order.

    In turn, not the first ``limit`` files: those are all ``cross_domain`` (its folder sorts
    first), and a lesson's default of 12 then measured one kind of boundary of three (issue 48).
    A subset of N is still part of the subset of N + 1."""
    if limit is None or limit >= len(dataset):
        return dataset
    if limit < 1:
        raise ValueError("limit must be at least 1")
    by_category: dict[str, list[Any]] = {}
    for s in dataset.scenarios:
        by_category.setdefault(s.category, []).append(s)
    turns = [s for rank in range(max(len(v) for v in by_category.values()))
             for v in by_category.values() if rank < len(v) for s in [v[rank]]]
    picked = {s.scenario_id for s in turns[:limit]}
    scenarios = tuple(s for s in dataset.scenarios if s.scenario_id in picked)
    items = tuple(i for s in scenarios for i in s.items)
    return SocialDataset(scenarios=scenarios, items=items, skipped=dataset.skipped,
                         source=dataset.source)


def to_lab_social(dataset: SocialDataset, source_scenarios: int | None = None) -> LabSet:
    """AgentSocialBench as a lab set: its scenarios through MAGPIE's shape
    (:func:`~bureau.labs.leakage.datasets.social_lab.to_lab_dataset`), then :func:`to_lab_scenario`, so
    roles, seed keys and queries follow the same rules; ``counts`` are AgentSocialBench's own
    (:meth:`SocialDataset.counts`) and ``dataset`` the :class:`SocialDataset`."""
    shaped = to_lab_dataset(dataset)
    return LabSet(
        name=SOCIAL_NAME,
        scenarios=tuple(to_lab_scenario(s, SOCIAL_NAME) for s in shaped.scenarios),
        counts=dataset.counts(),
        source=dataset.source,
        source_scenarios=source_scenarios,
        dataset=dataset,
    )


def benchmark_of(path: str | Path) -> Benchmark:
    """Which benchmark a ``--dataset`` path holds, by its layout.

    AgentSocialBench: a folder with ``scenarios/``, a folder of its category folders, or JSON
    files holding a ``privacy_boundary``. MAGPIE: a ``.tsv`` file, a folder holding
    ``magpie.tsv``, or per-scenario JSON in MAGPIE's columns. A path that does not exist is taken
    for MAGPIE, whose loader then says it is missing.
    """
    p = Path(path).expanduser()
    if p.is_dir():
        if (p / SCENARIOS_DIR).is_dir():
            return "agentsocialbench"
        if (p / TSV_NAME).is_file():
            return "magpie"
        if any(child.is_dir() and any(child.glob("*.json")) for child in p.iterdir()):
            return "agentsocialbench"
        jsons = sorted(p.glob("*.json"))
        return "agentsocialbench" if jsons and _is_social(jsons[0]) else "magpie"
    if p.is_file() and p.suffix.lower() == ".json" and _is_social(p):
        return "agentsocialbench"
    return "magpie"


def _is_social(file: Path) -> bool:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # the loader that takes it says what is wrong
    return isinstance(data, dict) and "privacy_boundary" in data


def load_lab(path: str | Path, limit: int | None = None) -> LabSet:
    """Load the benchmark at ``path`` (:func:`benchmark_of`) and convert its first ``limit``
    scenarios in file order."""
    if benchmark_of(path) == "agentsocialbench":
        social = load_agentsocialbench(path)
        part = social_subset(social, limit)
        return to_lab_social(part, len(social) if len(part) < len(social) else None)
    return to_lab(subset(load_magpie(path), limit))


__all__ = ["BENCHMARK_NAMES", "DATASET_NAME", "QUERY_TEMPLATE", "QUERY_VARIANTS", "SOCIAL_NAME",
           "ScenarioError", "benchmark_of", "full_query", "load_lab", "query_text", "role_names",
           "seed_key", "slug", "social_subset", "to_bureau_scenario", "to_lab", "to_lab_scenario",
           "to_lab_social"]
