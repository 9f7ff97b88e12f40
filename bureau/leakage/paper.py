"""The published figures the lab is compared with: the one place they are written down.

Li, "Memory as a Service (MaaS): Purpose-Bound Memory Mediation for Cooperative Agents",
arXiv 2506.22815v2, reports a diagnostic probe on MAGPIE. AgentSocialBench (Wang, Jiang et al.,
arXiv 2604.01487) publishes a leaderboard of LLM agents' leak rates per category. The report, the
plots and the command read these constants; every other number they print is computed from the
run.
"""

from __future__ import annotations

from typing import Any

PAPER: dict[str, Any] = {
    "source": "Li, Memory as a Service (MaaS), arXiv:2506.22815v2, MAGPIE diagnostic probe",
    "relevance_auroc": 0.570,
    "private_leak_rate": 0.530,
    "hint_items": 66,
    "private_preferences": 1456,
}

AGENTSOCIALBENCH_LEADERBOARD: dict[str, Any] = {
    "source": "AgentSocialBench README leaderboard (Wang, Jiang et al., arXiv:2604.01487)",
    "setting": "LLM agents with no privacy guidance; leaks judged in the conversation by an LLM",
    "models": 8,
    "leak_rate": {
        "cross_domain": (0.40, 0.67),
        "mediated_comm": (0.21, 0.30),
        "cross_user": (0.14, 0.29),
    },
}
"""Published leak rates (lowest, highest over the models) per category: what LLM agents *say*
over a conversation, judged by an LLM -- not what a retrieval hands them (see the report)."""
