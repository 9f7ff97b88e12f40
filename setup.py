"""Build hook: ship ``scenarios/`` and ``data/`` (the benchmark slices and minis among it) inside
the wheel as ``bureau/_shipped``.

All metadata lives in pyproject.toml; this file only adds one step to ``build_py``. The files stay
at the repository root (the course sends students there, and the project layout fixes it), but a
wheel can only carry what is inside its packages, so the build copies them into the build tree.
It writes under ``build/`` (``self.build_lib``) only, never into the source tree, and does nothing
for editable installs, where ``bureau.resources`` reads the repository root directly. The sdist
carries the originals (MANIFEST.in), so a wheel built from the sdist gets the same copies.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
TARGET = Path("bureau", "_shipped")
"""Inside the built package; must match bureau.resources.SHIPPED_DIR."""
SOURCES = {
    "scenarios": ("*.yaml", "README.md", "policies/*.yaml"),
    "data/magpie_mini": ("**/*",),
    "data/agentsocialbench_mini": ("**/*",),
    "data/magpie_slice": ("**/*",),
    "data/agentsocialbench_slice": ("**/*",),
    "data/gatemem_slice": ("**/*",),
    "data/poisoning": ("*.yaml", "README.md"),
    "data/injection": ("*.yaml",),
    "data/leak_judgements": ("*.csv", "README.md"),
}
"""Repository-root directories and the files of each that ship (must match MANIFEST.in)."""


def _shipped_files() -> list[Path]:
    """The files to copy, relative to the repository root; an empty source is a broken build."""
    files: set[Path] = set()
    for directory, patterns in SOURCES.items():
        for pattern in patterns:
            files.update(p.relative_to(ROOT) for p in (ROOT / directory).glob(pattern) if p.is_file())
        if not any(f.is_relative_to(directory) for f in files):
            raise FileNotFoundError(f"{ROOT / directory}: nothing to ship; is the checkout complete?")
    return sorted(files)


class build_py_with_shipped(build_py):  # noqa: N801 (setuptools command naming)
    """``build_py`` plus the copies under ``bureau/_shipped`` (skipped for editable installs)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for rel in _shipped_files():
            target = Path(self.build_lib) / TARGET / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / rel, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        """Declare the copies too, so ``install --record`` and uninstall know about them."""
        outputs = list(super().get_outputs(include_bytecode))
        if not self.editable_mode:
            outputs += [str(Path(self.build_lib) / TARGET / rel) for rel in _shipped_files()]
        return outputs


setup(cmdclass={"build_py": build_py_with_shipped})
