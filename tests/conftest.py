"""Shared fixtures.

PowerMem serves one embedded store per process, so the whole pytest process shares one Bureau
in one temporary data directory; tests isolate themselves by creating their own cases.
Tests that need a second store (persistence, crashes, servers) run it in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_DATA = Path(tempfile.mkdtemp(prefix="bureau-test-"))
os.environ["BUREAU_DATA_DIR"] = str(_DATA)
os.environ.pop("BUREAU_SEEKDB_HOST", None)


def pytest_sessionfinish(session, exitstatus):
    """Remove this run's store (its seekdb child exits with this process right after)."""
    import shutil

    shutil.rmtree(_DATA, ignore_errors=True)


def magpie_path() -> Path | None:
    """MAGPIE where the package looks for it (one rule: ``default_magpie_path``), or None."""
    from bureau.errors import ScenarioError
    from bureau.leakage.magpie import default_magpie_path

    try:
        return default_magpie_path()
    except ScenarioError:
        return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return _DATA


@pytest.fixture(scope="session")
def bureau(data_dir):
    from bureau import Bureau

    return Bureau.open(data_dir)


@pytest.fixture
def case(bureau):
    """A fresh safe-combination case, deleted afterwards."""
    c = bureau.load_scenario("safe-combination")
    yield c
    bureau.delete_case(c.id)


def run_python(
    code: str,
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 180,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run Python code in a fresh interpreter (a second process = a second store is allowed)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=full_env,
        text=True,
        capture_output=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def finish(*procs: subprocess.Popen[str], timeout: float = 240) -> list[dict]:
    """Wait for every process (stopping the rest once one fails), then report all failures."""
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        if any(p.returncode not in (None, 0) for p in procs):
            break  # a peer died: the others would only wait for it
        time.sleep(0.05)
    for p in procs:
        if p.poll() is None:
            p.terminate()
    outs = [p.communicate(timeout=60) for p in procs]
    failed = [f"exit {p.returncode}:\n{err[-3000:]}" for p, (_, err) in zip(procs, outs, strict=True)
              if p.returncode != 0]
    assert not failed, "\n".join(failed)
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
