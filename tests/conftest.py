"""Shared fixtures.

PowerMem serves one embedded store per process, so the whole pytest process shares one Bureau
in one temporary data directory; tests isolate themselves by creating their own cases.
Tests that need a second store (persistence, crashes, servers) run it in a subprocess.
"""

from __future__ import annotations

import inspect
import json
import os
import re
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


# --- markers, derived (registered in pyproject.toml) -------------------------------------------
# A test needs the store or the model when a fixture it uses does, or when its own code (or a
# helper or fixture of the test suite it calls) opens one: read from the source, so no test file
# carries these marks by hand. `make check` runs what needs neither.
STORAGE_FIXTURES = {"bureau", "case", "seekdb_server", "classroom", "room", "hub", "small_fs",
                    "busy_machine"}
"""Open the session's embedded store (``bureau``, and ``case`` through it), a seekdb server
(``classroom``, ``room``: one started by ``python -m bureau classroom start``), a JupyterHub
(``hub``), a loop-mounted file system for a store (``small_fs``), or keep a core busy for
children that open stores (``busy_machine``)."""
MODEL_FIXTURES = {"bureau", "case", "encoder"}
"""The session's Bureau embeds with MiniLM (the default embedder); ``encoder`` loads it."""
_CHILD_STORES = (r"\b(Bureau\.open|run_python|finish|execute_notebook|opener)\s*\(|\"-m\",\s*\"bureau\b"
                 r"|\bOPENERS\b")
_CHILDREN = (r"\bsubprocess\.(run|Popen|check_call|check_output)\(\s*\[\s*(sys\.executable|str\("
             r"Path\(sys\.executable\))|\b(start_server|_server_account)\s*\(|\bLocalVoice\.of\(|\bBUREAU_VOICE_GGUF\b")
"""A child Python process (a store of its own, a hub, a lab, the local voice's model server), a
seekdb server or the server's system account: never in the quick loop (`make check` stays a few
minutes on a 2-core machine, starts no store, hub or browser, and creates no account)."""
STORAGE_CALLS = re.compile(rf"{_CHILD_STORES}|{_CHILDREN}|\b(open_store|MemoryGateway)\s*\(")
"""In-process or child-process stores: a child started by ``run_python``/``finish`` opens its
own, a lesson run by papermill one in its kernel, ``python -m bureau[.leakage] ...`` one more."""
MODEL_CALLS = re.compile(rf"{_CHILD_STORES}|\b(MiniLMEncoder|shared_minilm)\s*\(")
SLOW_FILES = {"test_run_all", "test_install"}
"""Whole runs in child processes (run_all.sh's stages, a wheel build and a fresh venv): marked
``slow`` as well as what they need, so `make check` stays a few minutes."""
AREAS = {
    "publish": r"test_(publish_\w+|saga_story)",
    "mediation": r"test_(mediation_\w+|policy_\w+|leakage_mediated|outward_views|revocation_cascade)",
    "tiers": r"test_(tiers|lesson_08)",
    "task_scopes": r"test_(task_scopes|scope_topk)",
    "leakage": r"test_(leakage_\w+|leak_\w+|magpie|agentsocialbench)",
    "poisoning": r"test_(poisoning|lesson_08)",
    "injection": r"test_(injection_lab|standin_model|llm_responder|xray_payload|voice_\w+)",
    "isolation": r"test_(isolation|side_channels|identities|outward_views|bad_input)",
    "lifecycle": r"test_(lifecycle|persistence|store_ledger_agreement|footprint|sealing)",
    "ledger": r"test_(ledger|store_ledger_agreement)",
    "scenario": r"test_(scenario\w*|cast)",
    "notebooks": r"test_(notebooks|nbtool|widgets|lesson_\w+|cast|sitebuild|closing|quiz)",
    "layers": r"test_(layers|floor_plan|gateway|install|run_all)",
    "classroom": r"test_(classroom\w*|hub|instructor)",
    "peers": r"test_(peers|mcp_server)",
    "gatemem": r"test_gatemem",
}
"""Area marker -> test file names (``-m "storage and mediation"`` runs one area's storage
tests)."""
_TESTS = Path(__file__).resolve().parent


_SOURCE: dict[object, tuple[str, list[object]]] = {}


def _source_and_callees(fn: object) -> tuple[str, list[object]]:
    """A test-suite function's source and the test-suite functions it calls by name (cached:
    parametrised tests and shared fixtures are read once)."""
    if fn not in _SOURCE:
        text, callees = "", []
        try:
            if Path(inspect.getsourcefile(fn) or "").is_relative_to(_TESTS):
                text = inspect.getsource(fn)
        except (OSError, TypeError):
            pass
        if text:
            names = getattr(fn, "__globals__", {})
            callees = [names[n] for n in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text))
                       if inspect.isfunction(names.get(n))]
        _SOURCE[fn] = (text, callees)
    return _SOURCE[fn]


def _suite_sources(item: pytest.Item) -> list[str]:
    """The test's source, its fixtures' and every test-suite function they call by name."""
    info = getattr(item, "_fixtureinfo", None)
    todo = [getattr(item, "function", None)]
    todo += [defs[-1].func for defs in (info.name2fixturedefs.values() if info else ()) if defs]
    seen: set[int] = set()
    out = []
    while todo:
        fn = todo.pop()
        fn = inspect.unwrap(fn) if callable(fn) else None
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        text, callees = _source_and_callees(fn)
        if text:
            out.append(text)
            todo += callees
    return out


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        text = "\n".join(_suite_sources(item))
        if fixtures & STORAGE_FIXTURES or STORAGE_CALLS.search(text):
            item.add_marker(pytest.mark.storage)
        if fixtures & MODEL_FIXTURES or MODEL_CALLS.search(text):
            item.add_marker(pytest.mark.model)
        stem = item.path.stem
        if stem in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        for area, pattern in AREAS.items():
            if re.fullmatch(pattern, stem):
                item.add_marker(getattr(pytest.mark, area))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Stop at once if ``--dist loadgroup`` would not group (checked where the scheduler runs):
    the lessons must share one worker (one learner's data directory, in course order) and the
    injection lab's minutes-long module fixtures must be set up once. pytest 9.2 with
    pytest-xdist 3.8 dropped the groups silently (pytest-dev/pytest-xdist#1386): the suite ran
    about four minutes longer and nothing said why."""
    if getattr(node.config.option, "dist", None) != "loadgroup":
        return
    grouped = {f for f in {i.split("::", 1)[0] for i in ids}
               if "xdist_group(" in _module_text(node.config.rootpath / f)}
    lost = [i for i in ids if i.split("::", 1)[0] in grouped and "@" not in i]
    if lost:
        pytest.exit(f"--dist loadgroup lost its groups ({len(lost)} tests, e.g. {lost[0]}): this "
                    "pytest and pytest-xdist no longer group by xdist_group. Install the versions "
                    "requirements.lock pins (make venv).", returncode=4)


def _module_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def pytest_sessionfinish(session, exitstatus):
    """Remove this run's store (its seekdb child exits with this process right after)."""
    import shutil

    shutil.rmtree(_DATA, ignore_errors=True)


def magpie_path() -> Path | None:
    """MAGPIE where the package looks for it (one rule: ``default_magpie_path``), or None."""
    from bureau.errors import ScenarioError
    from bureau.labs.leakage.datasets.magpie import default_magpie_path

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
def mediated(bureau):
    """The shared Bureau with the example policy's mediator, restored after the test."""
    from bureau.mediation.mediator import PolicyMediator
    from bureau.mediation.policy import default_policy_path, load_policy

    before = bureau.mediator
    bureau.mediator = PolicyMediator(load_policy(default_policy_path()))
    yield bureau
    bureau.mediator = before


@pytest.fixture
def case(bureau):
    """A fresh safe-combination case, deleted afterwards."""
    c = bureau.load_scenario("safe-combination")
    yield c
    bureau.delete_case(c.id)


@pytest.fixture
def chat(monkeypatch):
    """A scripted OpenAI-compatible server (:mod:`fake_openai`), with the key the LLM settings
    of the tests name set."""
    from fake_openai import FakeOpenAI

    monkeypatch.setenv("BUREAU_TEST_LLM_KEY", "test-key")
    fake = FakeOpenAI()
    yield fake
    fake.close()


def shows(text: str, needle: str) -> bool:
    """``needle`` as a token of its own in ``text``. A secret like "7319" or "0427" also turns up
    inside long random card ids, run ids, hex digests and timings (about one run in a hundred);
    those are not the secret, and a leak test that counted them failed at random."""
    return re.search(rf"(?<![0-9A-Za-z]){re.escape(needle)}(?![0-9A-Za-z])", text) is not None


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
