"""Old import paths of modules that moved (issue 32's floor plan), kept working for one release.

``import bureau.leakage.runner`` (or ``python -m bureau.leakage``) still works: a finder at the
front of ``sys.meta_path`` answers only for the names in :data:`MOVED`, warns once with a
``DeprecationWarning`` that names the new path, and hands back the module at its new path, the
very same object (so classes, registries and monkeypatches are shared, never a second copy).
``python -m`` of an old package runs the new one's ``__main__``. Remove after the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

MOVED: dict[str, str] = {
    "bureau.bench": "bureau.labs.bench.runner",
    "bureau.classroom.connection": "bureau.tenancy.connection",
    "bureau.course.injection": "bureau.labs.injection",
    "bureau.course.injection.catalogue": "bureau.labs.injection.catalogue",
    "bureau.course.injection.lab": "bureau.labs.injection.lab",
    "bureau.course.injection.pool": "bureau.labs.injection.pool",
    "bureau.course.injection.trial": "bureau.labs.injection.trial",
    "bureau.course.standin_model": "bureau.standin.model",
    "bureau.course.standin_replies": "bureau.standin.replies",
    "bureau.course.standin_tools": "bureau.standin.tools",
    "bureau.leakage": "bureau.labs.leakage",
    "bureau.leakage.__main__": "bureau.labs.leakage.__main__",
    "bureau.leakage.agentsocialbench": "bureau.labs.leakage.datasets.agentsocialbench",
    "bureau.leakage.analysis": "bureau.labs.leakage.metrics.analysis",
    "bureau.leakage.cli": "bureau.labs.leakage.cli",
    "bureau.leakage.convert": "bureau.labs.leakage.datasets.convert",
    "bureau.leakage.judged": "bureau.labs.leakage.metrics.judged",
    "bureau.leakage.labset": "bureau.labs.leakage.datasets.labset",
    "bureau.leakage.lesson": "bureau.labs.leakage.lesson",
    "bureau.leakage.magpie": "bureau.labs.leakage.datasets.magpie",
    "bureau.leakage.measured": "bureau.labs.leakage.policies.measured",
    "bureau.leakage.mediated": "bureau.labs.leakage.policies.mediated",
    "bureau.leakage.metrics": "bureau.labs.leakage.metrics.metrics",
    "bureau.leakage.paper": "bureau.labs.leakage.report.paper",
    "bureau.leakage.plots": "bureau.labs.leakage.report.plots",
    "bureau.leakage.policies": "bureau.labs.leakage.policies.policies",
    "bureau.leakage.repetition": "bureau.labs.leakage.metrics.repetition",
    "bureau.leakage.report": "bureau.labs.leakage.report.report",
    "bureau.leakage.result": "bureau.labs.leakage.result",
    "bureau.leakage.runner": "bureau.labs.leakage.runner",
    "bureau.leakage.social_lab": "bureau.labs.leakage.datasets.social_lab",
    "bureau.leakage.social_model": "bureau.labs.leakage.datasets.social_model",
    "bureau.leakage.social_pairing": "bureau.labs.leakage.datasets.social_pairing",
    "bureau.leakage.summary": "bureau.labs.leakage.report.summary",
    "bureau.leakage.timing": "bureau.labs.leakage.timing",
    "bureau.peers": "bureau.labs.peers",
    "bureau.peers.cli": "bureau.labs.peers.cli",
    "bureau.peers.corpus": "bureau.labs.peers.corpus",
    "bureau.peers.report": "bureau.labs.peers.report",
    "bureau.peers.runner": "bureau.labs.peers.runner",
    "bureau.peers.systems": "bureau.labs.peers.systems",
    "bureau.poisoning": "bureau.labs.poisoning",
    "bureau.poisoning.__main__": "bureau.labs.poisoning.__main__",
    "bureau.poisoning.anchors": "bureau.labs.poisoning.anchors",
    "bureau.poisoning.attack": "bureau.labs.poisoning.attack",
    "bureau.poisoning.cli": "bureau.labs.poisoning.cli",
    "bureau.poisoning.corpus": "bureau.labs.poisoning.corpus",
    "bureau.poisoning.lesson": "bureau.labs.poisoning.lesson",
    "bureau.poisoning.metrics": "bureau.labs.poisoning.metrics",
    "bureau.poisoning.plots": "bureau.labs.poisoning.plots",
    "bureau.poisoning.report": "bureau.labs.poisoning.report",
    "bureau.poisoning.runner": "bureau.labs.poisoning.runner",
}
"""Old dotted name -> new dotted name."""


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(name)
        if new is None:
            return None
        new_spec = importlib.util.find_spec(new)
        is_package = bool(new_spec and new_spec.submodule_search_locations is not None)
        return importlib.util.spec_from_loader(name, self, is_package=is_package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; import it from there (the old path goes "
                      "in the next release)", DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module is the new path's, already executed."""

    def get_code(self, fullname: str) -> object:
        """For ``python -m <old name>``: the new module's code, run as ``__main__``."""
        new = MOVED[fullname]
        spec = importlib.util.find_spec(new)
        if spec is None or spec.loader is None:
            raise ImportError(f"{new} (moved from {fullname}) cannot be found")
        return spec.loader.get_code(new)  # type: ignore[attr-defined]

    def is_package(self, fullname: str) -> bool:
        spec = importlib.util.find_spec(MOVED[fullname])
        return bool(spec and spec.submodule_search_locations is not None)


def install() -> None:
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())


__all__ = ["MOVED", "install"]
