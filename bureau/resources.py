"""Where the files Bureau ships with live: the scenarios and the leakage lab's mini dataset.

The repository keeps them at its root (``scenarios/``, ``data/magpie_mini/``), outside the
``bureau`` package, because the course points students at them there. A wheel cannot reach the
repository root, so the build (``setup.py``) copies them into the package as ``bureau/_shipped/``.
This module is the one place that knows both layouts; every caller asks :func:`shipped_path`.

* Installed (``pip install .`` or a wheel): ``importlib.resources.files("bureau") / "_shipped"``.
* Source checkout (``pip install -e .``, ``make venv``): the repository root, so edits to
  ``scenarios/`` take effect without a rebuild. ``_shipped`` never exists in the source tree
  (the build writes it under ``build/`` only), so the two cannot disagree.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from .errors import ConfigurationError

SHIPPED_DIR = "_shipped"
"""The package subdirectory the build copies ``scenarios/`` and ``data/magpie_mini/`` into.

What ships is listed in setup.py (``SOURCES``) and MANIFEST.in; a new shipped directory goes into
both, and is then found here under the same relative path as in the repository."""


def checkout_root() -> Path | None:
    """The repository root if ``bureau`` is imported from a source checkout, else None.

    A checkout is recognised by ``pyproject.toml`` and ``scenarios/`` beside the package directory;
    an installed package sits in ``site-packages``, which has neither.
    """
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "scenarios").is_dir():
        return root
    return None


def shipped_root() -> Path:
    """The directory that holds ``scenarios/`` and ``data/magpie_mini/`` for this installation.

    Bureau reads these files with plain ``open``/``os.open`` (scenario files are checked on the
    descriptor before they are read), so it needs a real directory: an unpacked install, which is
    what pip always produces, or a checkout.
    """
    installed = resources.files("bureau") / SHIPPED_DIR
    if installed.is_dir():
        if not isinstance(installed, Path):  # a zipped install: no real files to open
            raise ConfigurationError(
                f"bureau is installed as an archive ({installed}); its scenarios need real files.",
                "Install Bureau with pip (it unpacks the wheel), or run it from a clone.",
            )
        return installed
    root = checkout_root()
    if root is None:
        raise ConfigurationError(
            "bureau's shipped files are missing: no bureau/_shipped/ and no source checkout.",
            "Reinstall Bureau from its wheel or sdist (pip install .), or run it from a clone.",
        )
    return root


def shipped_path(*parts: str) -> Path:
    """A shipped file or directory, e.g. ``shipped_path("data", "magpie_mini")``."""
    return shipped_root().joinpath(*parts)


def external_dataset(label: str, env_var: str, *shared: str, hint: str) -> Path:
    """A benchmark the project never vendors (licence and size): ``$env_var`` if set, else
    ``../shared/datasets/<shared...>`` beside a source checkout. The one rule for both lab
    benchmarks, with errors that name the variable and the path that was tried."""
    from .errors import ScenarioError

    env = os.environ.get(env_var)
    if env:
        path = Path(env).expanduser()
        if not path.exists():
            raise ScenarioError(f"{env_var} points to {path}, which does not exist.", hint=hint)
        return path
    root = checkout_root()
    if root is None:  # an installed package has no clone to look beside
        raise ScenarioError(f"{label} not found: {env_var} is unset (Bureau is installed).", hint)
    path = root.parent.joinpath("shared", "datasets", *shared)
    if not path.exists():
        raise ScenarioError(f"{label} not found: {env_var} is unset and {path} is missing.", hint)
    return path
