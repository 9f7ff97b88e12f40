"""The labs: what *measures* memory isolation. The core (storage, ledger, service, agents) is what
isolates it; the course (``bureau.course``) is what teaches it; the classroom serves it to a room.

Imports go one way: the core never imports a lab, and a lab never imports the course (the layer
test, ``tests/test_layers.py``, fails on either). Every lab is a sub-package with the same entry
convention, so ``python -m bureau <lab>`` and the lessons call all of them alike:

* ``<lab>.run(...)``: runs the lab and returns its result object (looked up on first use,
  :func:`entry_points`, so importing a lab's package or building the command line does not pull
  in pandas, scikit-learn or the store);
* ``<lab>.report``: the module whose ``write_outputs(result, out)`` writes the result's tables,
  CSV/JSON and figures to ``out``;
* ``<lab>.cli``: ``add_arguments(parser)`` and ``run(args) -> int``, the command line (imports
  stay light until ``run``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Lab:
    """One lab as the command line lists it."""

    name: str
    package: str
    help: str

    def cli(self) -> ModuleType:
        return importlib.import_module(f"{self.package}.cli")


LABS: tuple[Lab, ...] = (
    Lab("bench", "bureau.labs.bench", "interrogation and publish latency figures"),
    Lab("leakage", "bureau.labs.leakage",
        "leakage lab: five memory policies on MAGPIE and AgentSocialBench, beside random"),
    Lab("injection", "bureau.labs.injection",
        "prompt-injection lab: the bureau vs a naive shared memory"),
    Lab("poisoning", "bureau.labs.poisoning",
        "memory-poisoning lab: poisoned tool output vs trust tiers, at retrieval"),
    Lab("peers", "bureau.labs.peers",
        "the same work through the bureau, mem0 and LangGraph's store"),
    Lab("forgetting", "bureau.labs.forgetting",
        "forgetting lab: what is left on disk after the bureau forgets, sealed vs unsealed"),
    Lab("gatemem", "bureau.labs.gatemem",
        "GateMem lab: utility, access control and forgetting at the boundary, beside its "
        "leaderboard"),
)


def entry_points(package: str, **targets: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) that resolves a lab's ``run`` on first use:
    ``targets`` maps each name to ``"module:function"`` inside ``package``."""

    def __getattr__(name: str) -> Any:
        if name not in targets:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = targets[name].partition(":")
        return getattr(importlib.import_module(f"{package}.{module}"), attr)

    return __getattr__


__all__ = ["LABS", "Lab", "entry_points"]
