"""The published figures the leakage lab is read beside, in the shape its report reads.

Li, "Memory as a Service (MaaS): Purpose-Bound Memory Mediation for Cooperative Agents",
arXiv 2506.22815v2, reports a diagnostic probe on MAGPIE. AgentSocialBench (Wang, Jiang et al.,
arXiv 2604.01487) publishes a leaderboard of LLM agents' leak rates per category. The values,
their definitions and where each was checked are in :mod:`bureau.anchors` (the one place every
lab quotes them from); this module only arranges them for the report, the plots and the command.
Every other number they print is computed from the run.
"""

from __future__ import annotations

from typing import Any

from bureau.anchors import (
    ASB_LEADERBOARD,
    ASB_MODELS,
    ASB_SETTING,
    ASB_SOURCE,
    MAAS_HINT_ITEMS,
    MAAS_PRIVATE_LEAK,
    MAAS_PRIVATE_PREFERENCES,
    MAAS_RELEVANCE_AUROC,
    MAAS_SOURCE,
)

PAPER: dict[str, Any] = {
    "source": MAAS_SOURCE,
    "relevance_auroc": MAAS_RELEVANCE_AUROC.value,
    "private_leak_rate": MAAS_PRIVATE_LEAK.value,
    "hint_items": int(MAAS_HINT_ITEMS.value),
    "private_preferences": int(MAAS_PRIVATE_PREFERENCES.value),
    "checked": {a.key: a.checked for a in (MAAS_RELEVANCE_AUROC, MAAS_PRIVATE_LEAK,
                                           MAAS_HINT_ITEMS, MAAS_PRIVATE_PREFERENCES)},
}

AGENTSOCIALBENCH_LEADERBOARD: dict[str, Any] = {
    "source": ASB_SOURCE,
    "setting": ASB_SETTING,
    "models": ASB_MODELS,
    "leak_rate": {a.key.removeprefix("agentsocialbench_leak_"): (a.value, a.high)
                  for a in ASB_LEADERBOARD},
    "checked": ASB_LEADERBOARD[0].checked,
}
"""Published leak rates (lowest, highest over the models) per category: what LLM agents *say*
over a conversation, judged by an LLM -- not what a retrieval hands them (see the report)."""
