"""AgentSocialBench in the lab's common shape: MAGPIE's scenario objects.

:func:`to_lab_scenarios` returns real :class:`~bureau.labs.leakage.datasets.magpie.MagpieScenario` objects
(and :func:`to_lab_dataset` a :class:`~bureau.labs.leakage.datasets.magpie.MagpieDataset`), so the lab
runner, ``exposure_frame`` and the report take both datasets alike with no protocol to
maintain: every field they read (``item_id``, ``agent``, ``label``, ``text``,
``abstraction``, agent ``role``, scenario ``task``) has a direct meaning here. ``domain`` is
the category; ``key`` the item's field path inside ``privacy_boundary``
(``hassan.must_not_cross[2]``); ``private_key`` is None (it names MAGPIE's two source
fields); every participant is an agent, items only on the holders.

A module of its own: this is the one place the two benchmarks meet, so it depends on both data
models (:mod:`bureau.labs.leakage.datasets.social_model`, :mod:`bureau.labs.leakage.datasets.magpie`) and on no file reading;
the lab reaches it through :func:`bureau.labs.leakage.datasets.convert.to_lab_social`.
"""

from __future__ import annotations

from bureau.labs.leakage.datasets.magpie import (
    MagpieAgent,
    MagpieDataset,
    MagpieItem,
    MagpieScenario,
)
from bureau.labs.leakage.datasets.social_model import SocialDataset, SocialItem


def to_lab_scenarios(dataset: SocialDataset) -> list[MagpieScenario]:
    """The scenarios as :class:`MagpieScenario` objects the leakage lab runs as it runs MAGPIE.

    Every participant becomes a :class:`MagpieAgent` (role = its name with spaces, so its
    ``role: task`` query reads "work coordination agent: <task>"); items go to their holder; the
    item text is
    :attr:`SocialItem.fact`; ``domain`` is the category.
    """
    out: list[MagpieScenario] = []
    for scenario in dataset.scenarios:
        agents = []
        for agent in scenario.agents:
            items = tuple(_lab_item(i) for i in scenario.items if i.holder == agent.name)
            agents.append(
                MagpieAgent(
                    name=agent.name,
                    role=agent.name.replace("_", " "),
                    description=agent.description,
                    items=items,
                )
            )
        out.append(
            MagpieScenario(
                scenario_id=scenario.scenario_id,
                domain=scenario.category,
                task=scenario.task,
                agents=tuple(agents),
                items=tuple(i for a in agents for i in a.items),
                description=f"AgentSocialBench {scenario.category}",
            )
        )
    return out


def to_lab_dataset(dataset: SocialDataset) -> MagpieDataset:
    """:func:`to_lab_scenarios` wrapped as a :class:`MagpieDataset` (what the lab runner takes)."""
    scenarios = tuple(to_lab_scenarios(dataset))
    items = tuple(i for s in scenarios for i in s.items)
    return MagpieDataset(scenarios=scenarios, items=items, source=dataset.source)


def _lab_item(item: SocialItem) -> MagpieItem:
    return MagpieItem(
        item_id=item.item_id,
        scenario_id=item.scenario_id,
        domain=item.category,
        agent=item.holder,
        key=item.field_path.removeprefix("privacy_boundary."),
        text=item.fact,
        label=item.label,
        private_key=None,
        has_safe_abstraction=item.abstraction is not None,
        abstraction=item.abstraction,
    )
