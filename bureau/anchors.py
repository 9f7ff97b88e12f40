"""Every published figure the labs are read beside, once, with its definition and its check.

An *anchor* is a number from someone else's paper or leaderboard that a lab's report prints next
to its own measurement. Written down here and nowhere else, so the poisoning lab, the leakage lab
(and any other report) quote the same value with the same definition. Each anchor says

* what it measures (``figure``) and under which setting (``setting``),
* how that differs from what the lab measures (``differs``): none of them measures the same thing,
* where its value was checked (``checked``): a figure this repository could not check against
  its paper says so (``verified`` is False), and a report must not present it as more than a
  quotation.

Values are the ones the labs have printed since they were written; this module adds no figure,
it only records their status (issue 20 §4). Every other number a report prints is computed from
its run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Anchor:
    """One published figure (module docstring)."""

    key: str
    source: str
    figure: str
    value: float
    setting: str
    differs: str
    checked: str = "not checked against the paper"
    """Where the value was checked, or why it was not (then :attr:`verified` is False)."""
    verified: bool = False
    high: float | None = None
    """For a published range (lowest, highest over models): the highest; ``value`` the lowest."""

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


AGENTPOISON_SOURCE = "Chen, Xiang, Xiao, Song, Li: AgentPoison (NeurIPS 2024), arXiv 2407.12784"

AGENTPOISON = Anchor(
    key="agentpoison_asr_r",
    source=AGENTPOISON_SOURCE,
    figure="retrieval attack success (ASR-r), average over its agents and retrievers",
    value=0.812,
    setting="no defence; the trigger is optimised by gradient search against the retriever; "
            "under 0.1 % of the memory or knowledge base poisoned",
    differs="ASR-r counts a test query only when all the demonstrations it retrieves are "
            "poisoned (the lab reports that reading, rank 1 and 'at least one poisoned card in "
            "the top-k', each named); LLM-agent memories of driving, question-answering and "
            "health-record tasks with their own retrievers; this lab: MiniLM on seekdb, a "
            "chosen (not optimised) trigger, one rare-trigger poison per trial (about 1 % of "
            "the victim's cards) and a topical attacker who knows the target question's key "
            "terms (about 5 %).",
    checked="not checked against the paper's tables here; a third-party write-up of the same "
            "setting quotes the same 81.2 % ASR-r",
)
"""The retrieval figure: what the poisoning lab's retrieval columns are read beside."""
AGENTPOISON_END_TO_END = Anchor(
    key="agentpoison_attack_success",
    source=AGENTPOISON_SOURCE,
    figure="attack success, 'about 80 % on average' (the abstract's round figure; the triggered "
           "agent takes the attacker's target action)",
    value=0.80,
    setting="poisons an agent's long-term memory / RAG knowledge base with a few records and an "
            "optimised trigger; under 0.1 % of the memory poisoned",
    differs="end-to-end (the agent acted), not retrieval; the injection lab stops at what the "
            "Bureau hands a role, with no model choosing an action.",
    checked="not checked against the paper: the round figure of its abstract as the injection "
            "catalogue quotes it; the paper's end-to-end table was not read here",
)
"""The end-to-end figure the injection lab's catalogue quotes (its ``PUBLISHED`` table)."""
MINJA = Anchor(
    key="minja_attack_success",
    source="Dong et al., MINJA: memory injection attack, 2025, arXiv 2503.03704",
    figure="attack success on average (a victim's later query retrieves a planted record and "
           "the agent acts on it); the injection itself succeeds over 95 % of the time",
    value=0.768,
    setting="a normal user plants malicious records in a memory shared by all users, through "
            "queries only",
    differs="end-to-end with an LLM agent over a memory shared by all users; the Bureau keeps "
            "each role's memory private and publishes only through the operator.",
    checked="not checked against the paper; a later study (arXiv 2601.05504) summarises MINJA "
            "as 'over 95 % injection success and 70 % attack success under idealized "
            "conditions', which does not confirm 76.8 %",
)
UNDEFENDED = Anchor(
    key="persistent_memory_asr_undefended",
    source="Defense Effectiveness Across Architectural Layers: A Mechanistic Evaluation of "
           "Persistent Memory Attacks on Stateful LLM Agents, arXiv 2605.08442",
    figure="attack success, undefended baseline (9 open-source models, 5,040 runs)",
    value=0.886,
    setting="malicious instructions arrive in RAG-retrieved documents, are stored in persistent "
            "memory and executed in a later session (delayed trigger)",
    differs="end-to-end: the model executed the instruction; this lab stops at retrieval (was "
            "the poisoned card handed over at all), with no model.",
    checked="the paper's abstract (arxiv.org/html/2605.08442v1): 'the undefended baseline of "
            "88.6%', nine open-source models, 5,040 runs",
    verified=True,
)
GATING = Anchor(
    key="persistent_memory_asr_memory_gating",
    source=UNDEFENDED.source,
    figure="attack success with tool-gating at the memory layer (Memory Sandbox): 0 % on 8 of 9 "
           "models; one went from 0 % to 100 %",
    value=0.0,
    setting="the recall capability the attack needs is removed; the ninth model (a reasoning "
            "model at 0 % undefended) rose to 100 %, as the attack moved to the RAG path",
    differs="their gate removes the recall tool; the lab's tiers keep tool output out of the "
            "session and long-term memory a later question searches. Both act at the memory "
            "layer, not on the model; neither stops the poison inside the run that fetched it "
            "(the lab's 'inside the run' row).",
    checked="the paper's abstract (arxiv.org/html/2605.08442v1): Memory Sandbox 'reduces ASR to "
            "0% for eight of nine models'; a reasoning model at 0% undefended 'inverts to 100%'",
    verified=True,
)
POISONING_ANCHORS: tuple[Anchor, ...] = (AGENTPOISON, UNDEFENDED, GATING)
"""What the poisoning lab's report, plots and summary print (in this order)."""

MAAS_SOURCE = "Li, Memory as a Service (MaaS), arXiv:2506.22815v2, MAGPIE diagnostic probe"
MAAS_RELEVANCE_AUROC = Anchor(
    key="maas_relevance_auroc",
    source=MAAS_SOURCE,
    figure="relevance AUROC, shareable vs private (MAGPIE)",
    value=0.570,
    setting="relevance retrieval over MAGPIE's items, the task as the query",
    differs="the leakage lab asks per requester over the other agents' items with MiniLM; its "
            "AUROC with the task as the query is the comparable reading.",
    checked="the paper's abstract (arxiv.org/html/2506.22815v2): 'AUROC 0.570 and leaks 53.0% of "
            "private items'",
    verified=True,
)
MAAS_PRIVATE_LEAK = Anchor(
    key="maas_private_leak_rate",
    source=MAAS_SOURCE,
    figure="private leak rate of relevance retrieval (MAGPIE)",
    value=0.530,
    setting="relevance retrieval over MAGPIE's items",
    differs="the paper's budget and unit are not the lab's; the lab reports its leak beside the "
            "random draw of the same budget.",
    checked="the paper's abstract (arxiv.org/html/2506.22815v2): 'AUROC 0.570 and leaks 53.0% of "
            "private items'",
    verified=True,
)
MAAS_HINT_ITEMS = Anchor(
    key="maas_hint_items",
    source=MAAS_SOURCE,
    figure="private preferences with a hint (a safe abstraction), MAGPIE",
    value=66,
    setting="MAGPIE's private preferences",
    differs="the lab's hint rule finds its own count in the data (the report prints both).",
    checked="not checked against the paper's text: its abstract gives only the share ('4.5% of "
            "private items contain explicit safe-hint abstractions'), which 66 of 1,456 matches",
)
MAAS_PRIVATE_PREFERENCES = Anchor(
    key="maas_private_preferences",
    source=MAAS_SOURCE,
    figure="private preferences in MAGPIE",
    value=1456,
    setting="MAGPIE as the paper counts it",
    differs="the lab counts private items in the data it loads (the report prints both).",
    checked="not checked against the paper's text (see maas_hint_items)",
)
ASB_SOURCE = "AgentSocialBench README leaderboard (Wang, Jiang et al., arXiv:2604.01487)"
ASB_SETTING = "LLM agents with no privacy guidance; leaks judged in the conversation by an LLM"
ASB_MODELS = 8
_ASB_DIFFERS = ("what LLM agents *say* over a conversation, judged by an LLM; the lab measures "
                "what a retrieval hands an agent, a precondition of such a leak.")
ASB_LEADERBOARD: tuple[Anchor, ...] = tuple(
    Anchor(key=f"agentsocialbench_leak_{cat}", source=ASB_SOURCE,
           figure=f"private-fact leak rate, {cat}, lowest-highest over {ASB_MODELS} models",
           value=lo, high=hi, setting=ASB_SETTING, differs=_ASB_DIFFERS,
           checked="the upstream README leaderboard (kingofspace0wzz/agentsocialbench, commit "
                   "86f93b4, L0 unconstrained, 8 models); not the paper's tables",
           verified=True)
    for cat, lo, hi in (("cross_domain", 0.40, 0.67), ("mediated_comm", 0.21, 0.30),
                        ("cross_user", 0.14, 0.29))
)
GATEMEM_SOURCE = ("GateMem leaderboard, leaderboard.json of rzhub/GateMem (Ren, Yang, Chen et al., "
                  "arXiv 2606.18829), 168 rows: 7 methods x 6 backbones x 4 domains")
GATEMEM_SETTING = ("LLM agents over a shared multi-principal memory, the policy (if any) in the "
                   "prompt or the retrieval; every answer judged by an LLM against the checkpoint")
_GATEMEM_DIFFERS = ("an LLM's answer, judged; the lab scores the evidence the bureau's boundary "
                    "hands a voice with GateMem's own patterns (what any voice could say), not "
                    "an answer.")
_GATEMEM_CHECKED = ("the release's leaderboard.json (SOURCE_COMMIT 603f9f4); tests/test_gatemem.py "
                    "recomputes each from the shipped copy")
GATEMEM_ANCHORS: tuple[Anchor, ...] = (
    Anchor(key="gatemem_access_violation_range", source=GATEMEM_SOURCE,
           figure="access-control violations A, lowest-highest over every row (%)", value=5.6,
           high=69.0, setting=GATEMEM_SETTING, differs=_GATEMEM_DIFFERS,
           checked=_GATEMEM_CHECKED, verified=True),
    Anchor(key="gatemem_forgetting_failure_range", source=GATEMEM_SOURCE,
           figure="active-forgetting failures F, lowest-highest over every row (%)", value=2.2,
           high=69.4, setting=GATEMEM_SETTING, differs=_GATEMEM_DIFFERS,
           checked=_GATEMEM_CHECKED, verified=True),
    Anchor(key="gatemem_best_mgs", source=GATEMEM_SOURCE,
           figure="best MGS = U (1 - A) (1 - F) (Long-Context, GPT-5.4, medical; %)", value=80.1,
           setting=GATEMEM_SETTING, differs=_GATEMEM_DIFFERS, checked=_GATEMEM_CHECKED,
           verified=True),
    Anchor(key="gatemem_rag_policy_best_mgs", source=GATEMEM_SOURCE,
           figure="best MGS with the policy in the prompt (RAG-Policy, any backbone; %)",
           value=58.5, setting=GATEMEM_SETTING, differs=_GATEMEM_DIFFERS,
           checked=_GATEMEM_CHECKED, verified=True),
    Anchor(key="gatemem_mem0_medical_violations", source=GATEMEM_SOURCE,
           figure="Mem0's access-control violations on the medical domain, GPT-5.4 and "
                  "GPT-4o-mini (%)", value=28.1, high=67.2, setting=GATEMEM_SETTING,
           differs=_GATEMEM_DIFFERS, checked=_GATEMEM_CHECKED, verified=True),
)
"""The GateMem figures the lab's prose quotes; its tables read every row of leaderboard.json."""
LEAKAGE_ANCHORS: tuple[Anchor, ...] = (MAAS_RELEVANCE_AUROC, MAAS_PRIVATE_LEAK, MAAS_HINT_ITEMS,
                                       MAAS_PRIVATE_PREFERENCES, *ASB_LEADERBOARD)
ANCHORS: tuple[Anchor, ...] = (AGENTPOISON, AGENTPOISON_END_TO_END, MINJA, UNDEFENDED, GATING,
                               *LEAKAGE_ANCHORS, *GATEMEM_ANCHORS)
"""Every published figure the project quotes."""


def anchor(key: str) -> Anchor:
    """The anchor called ``key`` (KeyError names the known keys)."""
    for a in ANCHORS:
        if a.key == key:
            return a
    raise KeyError(f"no anchor {key!r}; known: {', '.join(a.key for a in ANCHORS)}")
