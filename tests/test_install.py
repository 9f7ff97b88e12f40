"""A real, non-editable install works on its own (issue 10, item 5).

The scenarios and the leakage lab's mini dataset live at the repository root, outside the
package; a plain ``pip install .`` used to lose them, and nothing noticed because every test ran
against the editable checkout. This test builds the sdist and, from it, the wheel (as PyPI users
would get it), installs the wheel into a fresh virtual environment, and runs the demo there from
an unrelated directory. The fresh environment borrows the main environment's dependencies through
a plain path in a ``.pth`` file: a path entry does not run the main environment's own ``.pth``
files, so the editable ``bureau`` finder stays inert and only the installed copy can be imported.
Everything runs offline: the build uses this environment's setuptools (``--no-build-isolation``)
and pip installs the wheel with ``--no-deps --no-index``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted(
    [*(f"scenarios/{p.name}" for p in (REPO / "scenarios").glob("*.yaml")), "scenarios/README.md",
     *(f"scenarios/policies/{p.name}" for p in (REPO / "scenarios" / "policies").glob("*.yaml")),
     *(p.relative_to(REPO).as_posix() for mini in ("magpie_mini", "agentsocialbench_mini",
                                                   "poisoning", "leak_judgements")
       for p in (REPO / "data" / mini).rglob("*")
       if p.is_file())]
)
"""What must travel with the package, relative to the repository root."""

PROBE = """
import json, sys
import bureau
from bureau import resources
from bureau.labs.leakage import lesson
from bureau.scenario import SCENARIO_DIR, list_scenarios, load_scenario
print(json.dumps({
    "bureau": bureau.__file__,
    "mole": str(load_scenario("the-mole").source_path),
    "scenario_dir": str(SCENARIO_DIR),
    "scenarios": [s.id for s in list_scenarios()],
    "mini": str(lesson.MINI),
    "mini_scenarios": len(lesson.load_magpie(lesson.MINI)),
    "checkout": resources.checkout_root() is not None,
    "editable_finder": any("__editable__" in m for m in sys.modules),
    "sys_path": sys.path,
}))
"""
"""Run by the fresh environment's interpreter: where everything was found."""


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 300) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, text=True, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _source_copy(dest: Path) -> None:
    """The files a clone would hold (tracked and new, not ignored): the build never touches REPO.

    Building in the working tree would leave build/ and bureau.egg-info beside the editable
    install that other processes are using; a copy keeps the checkout exactly as it was.
    """
    listing = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                   cwd=REPO)
    for rel in filter(None, listing.split("\0")):
        src = REPO / rel
        if src.is_file():  # a tracked file deleted in the working tree is simply not copied
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    """A scratch directory outside the repository (and its parent), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="bureau-install-")).resolve()
    try:
        # neither inside the checkout nor one of its ancestors: nothing is found relative to it
        assert not path.is_relative_to(REPO) and not REPO.is_relative_to(path), path
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def built(work: Path) -> tuple[Path, Path]:
    """(sdist, wheel): the sdist from a copy of the source, the wheel from the unpacked sdist."""
    setuptools = version("setuptools")
    assert int(setuptools.split(".")[0]) >= 77, (
        f"setuptools {setuptools} cannot build Bureau (the SPDX licence string needs >= 77); "
        "`make venv` installs the locked version (the test extra asks for it)"
    )
    src, dist = work / "src", work / "dist"
    src.mkdir()
    _source_copy(src)
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))"
    sdist = dist / _run([sys.executable, "-c", code], cwd=src).strip().splitlines()[-1]
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "-q", "-w", str(dist), str(sdist)], cwd=work)
    (wheel,) = dist.glob("bureau-*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def fresh(work: Path, built: tuple[Path, Path]) -> Path:
    """A new virtual environment holding only the wheel; dependencies come from this one."""
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=work)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
          "--no-index", "-q", str(built[1])], cwd=work)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     cwd=work).strip())
    (site / "_bureau_test_deps.pth").write_text("".join(f"{p}\n" for p in _borrowed_site_packages()))
    return python


def _borrowed_site_packages() -> list[str]:
    """This environment's site-packages: where the fresh one finds the dependencies."""
    return list(dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]))


def _env(work: Path) -> dict[str, str]:
    """No PYTHONPATH (it could point at the checkout), own data and temp directories."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "BUREAU_MAGPIE"}}
    (work / "data").mkdir(exist_ok=True)
    (work / "tmp").mkdir(exist_ok=True)
    env.update(BUREAU_DATA_DIR=str(work / "data"), TMPDIR=str(work / "tmp"), PYTHONNOUSERSITE="1")
    return env


def test_sdist_and_wheel_carry_the_shipped_files(work: Path, built: tuple[Path, Path]) -> None:
    sdist, wheel = built
    with tarfile.open(sdist) as tar:
        in_sdist = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert set(SHIPPED) <= in_sdist
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    assert {f"bureau/_shipped/{rel}" for rel in SHIPPED} <= names
    # and every file of the package itself, not only its modules (e.g. the report template)
    src = work / "src"
    package = {p.relative_to(src).as_posix() for p in (src / "bureau").rglob("*") if p.is_file()}
    assert package - names == set()
    # the build wrote into its own build/ only: no copy appeared in the checkout
    assert not (REPO / "bureau" / "_shipped").exists()


def test_installed_package_finds_its_files(work: Path, fresh: Path) -> None:
    elsewhere = work / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    info = json.loads(_run([str(fresh), "-c", PROBE], cwd=elsewhere, env=_env(work)))
    venv = fresh.parent.parent
    shipped = Path(info["bureau"]).parent / "_shipped"
    assert Path(info["bureau"]).is_relative_to(venv), info["bureau"]
    assert not info["checkout"] and not info["editable_finder"]
    # the only paths into the checkout are the borrowed site-packages (the main .venv's)
    borrowed = {Path(p).resolve() for p in _borrowed_site_packages()}
    into_repo = {Path(p).resolve() for p in info["sys_path"] if p} - borrowed
    assert not any(p.is_relative_to(REPO) for p in into_repo), into_repo
    assert Path(info["mole"]) == shipped / "scenarios" / "the-mole.yaml"
    assert Path(info["scenario_dir"]) == shipped / "scenarios"
    assert info["scenarios"] == ["safe-combination", "the-mole", "ward-seven"]
    assert Path(info["mini"]) == shipped / "data" / "magpie_mini"
    assert info["mini_scenarios"] == 3


def test_installed_demo_tells_the_whole_story(work: Path, fresh: Path) -> None:
    elsewhere = work / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    out = _run([str(fresh), "-m", "bureau", "demo"], cwd=elsewhere, env=_env(work))
    before, _, after = out.partition("3. Interrogate everyone again")
    detective = [line.strip() for line in out.splitlines() if line.strip().startswith("detective →")]
    # the detective does not know, the informant publishes, then the detective knows the answer
    assert detective[0] == "detective → I don't know.  [unknown]", out
    assert "detective → According to the bulletin board (published by informant)" in after
    assert "combination 0427" in detective[1], out
    assert "informant → According to my private notes" in before and "board copy" in before
    assert "knowers now: detective, informant, suspect" in out
    assert f"Data directory: {work / 'data'}" in out
