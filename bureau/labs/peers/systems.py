"""Each system under the same interface: load a case, search as a role, spoof an identity.

* **bureau**: a role's handle (``case.agent(role).recall``): it searches its own space and the
  board, k per scope; the caller names no identity. The spoof is the only way an agent could
  try: a tool call with a ``role`` argument (refused).
* **mem0** (``mem0ai``): ``Memory`` with ``infer=False`` (no LLM), its telemetry off, an
  in-process Qdrant and the bureau's MiniLM vectors. A case is ``user_id``, a role ``agent_id``,
  the board ``agent_id="board"``. Three filters, as mem0's docs name them.
* **LangGraph** ``InMemoryStore`` with the same vectors: a role's space is the namespace
  ``(case, role)``, the board ``(case, "board")``; a search by the case prefix, or by the
  role's own namespace.

mem0 and LangGraph are imported only when a run builds them (the optional ``peers`` extra).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from ...embedding import given_vectors
from ...errors import ConfigurationError
from ...model import BOARD
from .corpus import PeerCase

Hit = tuple[str, str]
"""(stored owner, text): a board copy's owner is ``board``."""


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


class VectorBook:
    """Every distinct text embedded once by the bureau's encoder, shared by every system.

    A text nobody embedded ahead of time is embedded on the spot and counted (``misses``), so
    a run can show that no system searched with a vector the others did not get.
    """

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.vectors: dict[str, np.ndarray] = {}
        self.misses = 0

    def add(self, texts: Sequence[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if todo:
            if hasattr(self.encoder, "reserve_cache"):  # the bureau's writes hit its cache
                self.encoder.reserve_cache(len(self.vectors) + len(todo) + 1024)
            self.vectors.update(zip(todo, self.encoder.embed(todo), strict=True))

    def get(self, text: str) -> list[float]:
        v = self.vectors.get(text)
        if v is None:
            self.misses += 1
            v = self.vectors[text] = self.encoder.embed([text])[0]
        return v.tolist()

    def many(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.get(t) for t in texts]


@dataclass
class Config:
    """One way of searching: what the peer's docs call it, and the exact filter."""

    name: str
    peer: str
    version: str
    filter: str
    search: Callable[[PeerCase, str, str, int], list[Hit]]
    spoof: Callable[[PeerCase, str, str, str, int], list[Hit]]
    """(case, asker, victim, question, k): the asker passes the victim's identity string."""


# -- the bureau ----------------------------------------------------------------------------------
class BureauSystem:
    def __init__(self, bureau: Any, book: VectorBook) -> None:
        self.bureau = bureau
        self.book = book
        self.cases: dict[str, Any] = {}

    def load(self, pc: PeerCase) -> None:
        case = self.bureau.create_case(pc.scenario, pc.case_id)
        for c in pc.cards:
            if c.published:
                case.agent(c.owner).publish(case.seed_card(c.key).id)
        self.cases[pc.case_id] = case

    def configs(self) -> list[Config]:
        def search(pc: PeerCase, role: str, q: str, k: int) -> list[Hit]:
            with given_vectors(self.book.vectors):
                trace = self.cases[pc.case_id].agent(role).recall(q, k)
            return [(c.owner, c.content) for s in trace.scopes
                    for c in (*s.hits, *s.below_threshold)]

        def spoof(pc: PeerCase, role: str, victim: str, q: str, k: int) -> list[Hit]:
            out = self.cases[pc.case_id].agent(role).call_tool(
                "recall", {"question": q, "limit": k, "role": victim})
            if not out["ok"]:
                return []
            return [(h["owner"], h["text"]) for h in out["result"]["hits"]]

        return [Config("bureau (agent handle)", "bureau", package_version("bureau"),
                       "none: case.agent(role).recall(question, k); own space + board, "
                       "k per scope", search, spoof)]


# -- mem0 ----------------------------------------------------------------------------------------
def offline_mem0() -> Any:
    """mem0's ``Memory`` class, imported offline: telemetry off (else it posts every add and
    search to PostHog, and opens a second Qdrant store for it under ``~/.mem0``), its home in a
    temporary folder. mem0 reads both once, when it is imported, so a process that imported it
    before with telemetry on is refused rather than measured."""
    if "mem0" not in sys.modules:
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = tempfile.mkdtemp(prefix="bureau-mem0-home-")
    import mem0.memory.main as main
    import mem0.memory.telemetry as telemetry
    from mem0 import Memory

    if telemetry.MEM0_TELEMETRY or main.MEM0_TELEMETRY:
        raise ConfigurationError(
            "mem0 was imported with its telemetry on, which would send every call to PostHog.",
            "Set MEM0_TELEMETRY=False before anything imports mem0 (or let the bench import it).")
    return Memory


class _Mem0Embedder:
    """Stands in for mem0's embedding model object (its provider list is closed)."""

    def __init__(self, config: Any, book: VectorBook) -> None:
        self.config = config
        self.book = book

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self.book.get(text)


class Mem0System:
    def __init__(self, book: VectorBook) -> None:
        memory_cls = offline_mem0()
        self.dir = tempfile.mkdtemp(prefix="bureau-mem0-")
        key = "sk-offline-never-used"  # it builds an OpenAI client eagerly, never calls it
        self.memory = memory_cls.from_config({
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": "peers", "embedding_model_dims": 384,
                "path": os.path.join(self.dir, "qdrant"), "on_disk": False}},
            "history_db_path": os.path.join(self.dir, "history.db"),
            "llm": {"provider": "openai", "config": {"api_key": key}},
            "embedder": {"provider": "openai", "config": {"api_key": key,
                                                          "embedding_dims": 384}},
        })
        self.memory.embedding_model = _Mem0Embedder(self.memory.embedding_model.config, book)

    def close(self) -> None:
        self.memory.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def load(self, pc: PeerCase) -> None:
        for c in pc.cards:
            for agent in (c.owner, BOARD) if c.published else (c.owner,):
                self.memory.add([{"role": "user", "content": c.text}], user_id=pc.case_id,
                                agent_id=agent, infer=False)

    def _search(self, q: str, filters: dict[str, Any], k: int) -> list[Hit]:
        res = self.memory.search(q, top_k=k, filters=filters, threshold=0.0)
        return [(r.get("agent_id") or "", r["memory"]) for r in res["results"]]

    def configs(self) -> list[Config]:
        v = package_version("mem0ai")

        def user(pc: PeerCase, role: str, q: str, k: int) -> list[Hit]:
            return self._search(q, {"user_id": pc.case_id}, k)

        def user_agent(pc: PeerCase, role: str, q: str, k: int) -> list[Hit]:
            return self._search(q, {"user_id": pc.case_id, "agent_id": role}, k)

        def user_or(pc: PeerCase, role: str, q: str, k: int) -> list[Hit]:
            return self._search(q, {"user_id": pc.case_id,
                                    "OR": [{"agent_id": role}, {"agent_id": BOARD}]}, k)

        def spoofing(fn: Callable[..., list[Hit]]) -> Callable[..., list[Hit]]:
            return lambda pc, role, victim, q, k: fn(pc, victim, q, k)

        return [
            Config("mem0, user only (documented default)", "mem0", v,
                   'search(q, filters={"user_id": case}, top_k=k, threshold=0)', user,
                   spoofing(user)),
            Config("mem0, user + agent", "mem0", v,
                   'search(q, filters={"user_id": case, "agent_id": role}, top_k=k, '
                   'threshold=0)', user_agent, spoofing(user_agent)),
            Config("mem0, user + OR(agent, board)", "mem0", v,
                   'search(q, filters={"user_id": case, "OR": [{"agent_id": role}, '
                   '{"agent_id": "board"}]}, top_k=k, threshold=0)', user_or,
                   spoofing(user_or)),
        ]


# -- LangGraph -----------------------------------------------------------------------------------
class LangGraphSystem:
    def __init__(self, book: VectorBook) -> None:
        from langgraph.store.memory import InMemoryStore

        self.store = InMemoryStore(index={"dims": 384, "embed": book.many, "fields": ["text"]})
        self._n = 0

    def load(self, pc: PeerCase) -> None:
        for c in pc.cards:
            for space in (c.owner, BOARD) if c.published else (c.owner,):
                self._n += 1
                self.store.put((pc.case_id, space), f"{c.key}-{self._n}", {"text": c.text})

    def _search(self, ns: tuple[str, ...], q: str, k: int) -> list[Hit]:
        return [(it.namespace[1], it.value["text"])
                for it in self.store.search(ns, query=q, limit=k)]

    def configs(self) -> list[Config]:
        v = (f"langgraph {package_version('langgraph')} "
             f"(store: langgraph-checkpoint {package_version('langgraph-checkpoint')})")

        def prefix(pc: PeerCase, role: str, q: str, k: int) -> list[Hit]:
            return self._search((pc.case_id,), q, k)

        def own(pc: PeerCase, role: str, q: str, k: int) -> list[Hit]:
            return self._search((pc.case_id, role), q, k)

        return [
            Config("LangGraph store, case-prefix search", "langgraph", v,
                   "store.search((case,), query=q, limit=k)", prefix,
                   lambda pc, role, victim, q, k: prefix(pc, victim, q, k)),
            Config("LangGraph store, own namespace", "langgraph", v,
                   "store.search((case, role), query=q, limit=k)", own,
                   lambda pc, role, victim, q, k: own(pc, victim, q, k)),
        ]


def timed(fn: Callable[[], list[Hit]]) -> tuple[list[Hit], float]:
    t = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t) * 1000


__all__ = ["BureauSystem", "Config", "Hit", "LangGraphSystem", "Mem0System", "VectorBook",
           "package_version", "timed"]
