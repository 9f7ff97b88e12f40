"""The published figures the poisoning lab is read beside: the one place they are written down.

Every other number the report, the plots and the command print is computed from the run. Each
anchor says how its setup differs from the lab's, because none of them measures the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Anchor:
    key: str
    source: str
    figure: str
    value: float
    setting: str
    differs: str


AGENTPOISON = Anchor(
    key="agentpoison_asr_r",
    source="Chen, Xiang, Xiao, Song, Li: AgentPoison (NeurIPS 2024), arXiv 2407.12784",
    figure="retrieval attack success (ASR-r), average over its agents and retrievers",
    value=0.812,
    setting="no defence; the trigger is optimised by gradient search against the retriever; "
            "under 0.1 % of the memory or knowledge base poisoned",
    differs="ASR-r counts a test query only when all the demonstrations it retrieves are "
            "poisoned (stricter than this lab's 'at least one poisoned card in the top-k'; the "
            "lab's top-1 column is its strictest reading); LLM-agent memories of driving, "
            "question-answering and health-record tasks with their own retrievers; this lab: "
            "MiniLM on seekdb, a chosen (not optimised) trigger, an attacker who knows the "
            "target question's key terms, about 6 % of the victim's cards poisoned.",
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
)
GATING = Anchor(
    key="persistent_memory_asr_memory_gating",
    source=UNDEFENDED.source,
    figure="attack success with tool-gating at the memory layer (Memory Sandbox), "
           "8 of 9 models",
    value=0.0,
    setting="the recall capability the attack needs is removed; the ninth model (a reasoning "
            "model at 0 % undefended) rose to 100 %, as the attack moved to the RAG path",
    differs="their gate removes the recall tool; the lab's tiers keep tool output out of the "
            "session and long-term memory a later question searches. Both act at the memory "
            "layer, not on the model; neither stops the poison inside the run that fetched it "
            "(the lab's 'inside the run' row).",
)
ANCHORS: tuple[Anchor, ...] = (AGENTPOISON, UNDEFENDED, GATING)
