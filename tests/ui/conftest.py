"""Real-browser fixtures: JupyterLab and Voilà servers, and Debian's Chromium driven by Playwright.

* Both servers run ``sys.executable`` on free ``127.0.0.1`` ports, with their own temporary
  Jupyter config, runtime, workspace and settings folders, and serve a temporary **copy** of
  ``notebooks/`` (JupyterLab autosaves; the committed notebooks must never change).
* Their kernels share one temporary ``BUREAU_DATA_DIR``: what a lesson does in JupyterLab, the
  stage served by Voilà sees (two processes on one embedded seekdb path are supported).
* Playwright launches ``/usr/bin/chromium`` (``executable_path``); no Playwright browser is ever
  downloaded. Playwright is capped at 1.38 here (PowerMem pins greenlet<3 on Python 3.11); 1.38
  drives Chromium 156 fine.
* Servers are stopped by PID at the end of the session, together with any process they started
  that is still alive (kernels and their seekdb children).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
CHROMIUM = Path(os.environ.get("BUREAU_CHROMIUM", "/usr/bin/chromium"))
# Every pytest run with pytest-playwright loaded empties test-results/ when it starts (its
# autouse ``delete_output_dir``); BUREAU_UI_SCREENSHOTS puts the screenshots elsewhere.
SCREENSHOTS = Path(os.environ.get("BUREAU_UI_SCREENSHOTS", REPO / "test-results" / "screenshots"))
TOKEN = "bureau-ui-test-token"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NO_CHROMIUM = (
    f"{CHROMIUM} is missing: real-browser tests need Debian's chromium "
    "(apt-get install -y chromium; .ci/run installs it)"
)


def skip_without_chromium(here: Path):  # noqa: ANN201 - a pytest hook
    """The collection hook of a browser-test folder (this one, ``tests/site``): skip every test
    under ``here``, with the reason, when the browser is not installed."""

    def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
        if CHROMIUM.exists():
            return
        for item in items:
            if here in Path(str(item.path)).parents:
                item.add_marker(pytest.mark.skip(reason=NO_CHROMIUM))

    return pytest_collection_modifyitems


pytest_collection_modifyitems = skip_without_chromium(Path(__file__).parent)


def require_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)


# -- Playwright -----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """pytest-playwright's launch options, plus Debian's Chromium and offline-friendly flags."""
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": {"width": 1280, "height": 900}}


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def picture(locator, path: Path) -> None:
    """Screenshot ``locator`` (a widget) to ``path``, and write the text it shows beside it
    (``path`` with ``.txt``): a picture the site uses (``site/widgets/pictures.toml``) keeps that
    text, and the site build compares it with the lesson's own run (``tools/sitebuild.py``), so a
    picture taken from another lesson, or from an older state of this one, is refused."""
    locator.screenshot(path=str(path))
    path.with_suffix(".txt").write_text(locator.inner_text(), encoding="utf-8")


# -- servers --------------------------------------------------------------------------------------
@dataclass
class Server:
    name: str
    url: str
    proc: subprocess.Popen
    log: Path
    root: Path
    token: str = ""

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """PIDs of every process below ``pid`` (read from /proc; empty where /proc is missing)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop_server(server: Server) -> None:
    """Terminate the server by PID (15 s grace, then kill), then any of its leftover children."""
    proc = server.proc
    if proc.poll() is not None:
        return
    below = _descendants(proc.pid)
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    for pid in below:  # kernels and their seekdb children normally exit with the server
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass


def wait_http(server: Server, path: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"{server.name} exited with {server.proc.returncode}:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(server.url + path, timeout=5) as r:
                if r.status < 500:
                    return
        except urllib.error.HTTPError as e:
            if e.code < 500:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{server.name} not ready after {timeout} s:\n{server.log_tail()}")


@pytest.fixture(scope="session")
def ui_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bureau-ui")


@pytest.fixture(scope="session")
def notebooks_src() -> Path:
    """The folder of notebooks to serve (a copy of it); overridable for throwaway tests."""
    return NOTEBOOKS


@pytest.fixture(scope="session")
def served_root(ui_tmp: Path, notebooks_src: Path) -> Path:
    """A temporary root holding a copy of the notebooks at ``notebooks/``."""
    root = ui_tmp / "root"
    shutil.copytree(
        notebooks_src,
        root / "notebooks",
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", ".bureau-data"),
    )
    return root


@pytest.fixture(scope="session")
def bureau_data_dir(ui_tmp: Path) -> Path:
    """The one BUREAU_DATA_DIR of every kernel the servers start."""
    d = ui_tmp / "bureau-data"
    d.mkdir()
    return d


@pytest.fixture(scope="session")
def server_env(ui_tmp: Path, bureau_data_dir: Path) -> dict[str, str]:
    """Environment of both servers (and so of their kernels): every Jupyter folder temporary."""
    jhome = ui_tmp / "jupyter"
    settings = jhome / "lab-settings"
    notif = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notif.parent.mkdir(parents=True)
    notif.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    # Every cell in the DOM: the widgets of a long lesson stay findable without scrolling.
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    for sub in ("config", "runtime", "workspaces", "ipython", "data"):
        (jhome / sub).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUREAU_", "JUPYTER"))}
    env.update(
        BUREAU_DATA_DIR=str(bureau_data_dir),
        JUPYTER_CONFIG_DIR=str(jhome / "config"),
        JUPYTER_RUNTIME_DIR=str(jhome / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(jhome / "workspaces"),
        JUPYTER_DATA_DIR=str(jhome / "data"),
        IPYTHONDIR=str(jhome / "ipython"),
        PYTHONUNBUFFERED="1",
    )
    return env


def _start(name: str, cmd: list[str], env: dict[str, str], log: Path, root: Path, url: str,
           token: str = "") -> Server:
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    return Server(name=name, url=url, proc=proc, log=log, root=root, token=token)


@pytest.fixture(scope="session")
def lab_server(served_root: Path, server_env: dict[str, str], ui_tmp: Path) -> Iterator[Server]:
    """JupyterLab on a free port, token auth, serving the temporary copy."""
    require_chromium()
    port = free_port()
    config = ui_tmp / "jupyter" / "lab_config.py"
    config.write_text(
        "\n".join(
            [
                "c.ServerApp.ip = '127.0.0.1'",
                f"c.ServerApp.port = {port}",
                "c.ServerApp.port_retries = 0",
                "c.ServerApp.open_browser = False",
                f"c.ServerApp.root_dir = {str(served_root)!r}",
                f"c.IdentityProvider.token = {TOKEN!r}",
                "c.ServerApp.allow_root = True",
                # as `make lab`: notebook_shim would print a ServerApp.token deprecation
                "c.ServerApp.jpserver_extensions = {'notebook_shim': False}",
                "c.LabApp.expose_app_in_browser = True",
                f"c.LabApp.workspaces_dir = {str(ui_tmp / 'jupyter' / 'workspaces')!r}",
                "c.LabApp.news_url = None",
                "c.LabApp.check_for_updates_class = 'jupyterlab.NeverCheckForUpdate'",
                "c.LabApp.extension_manager = 'readonly'",
                "c.LanguageServerManager.autodetect = False",
                "",
            ]
        )
    )
    server = _start(
        "JupyterLab",
        [sys.executable, "-m", "jupyterlab", f"--config={config}"],
        server_env,
        ui_tmp / "jupyterlab.log",
        served_root,
        f"http://127.0.0.1:{port}",
        TOKEN,
    )
    try:
        wait_http(server, f"/api/status?token={TOKEN}")
        yield server
    finally:
        stop_server(server)


@pytest.fixture(scope="session")
def voila_server(served_root: Path, server_env: dict[str, str], ui_tmp: Path) -> Iterator[Server]:
    """Voilà on a free port (no token), serving the temporary copy: /voila/render/notebooks/…"""
    require_chromium()
    port = free_port()
    server = _start(
        "Voila",
        [
            sys.executable, "-m", "voila", "--no-browser", f"--port={port}",
            "--Voila.ip=127.0.0.1", "--show_tracebacks=True", f"--Voila.root_dir={served_root}",
        ],
        server_env,
        ui_tmp / "voila.log",
        served_root,
        f"http://127.0.0.1:{port}",
    )
    try:
        wait_http(server, "/")
        yield server
    finally:
        stop_server(server)


# -- JupyterLab page helpers ----------------------------------------------------------------------
_KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle';
}"""

_CELL_ERRORS = """() => {
  const m = window.jupyterapp.shell.currentWidget.content.model;
  const errs = [];
  for (let i = 0; i < m.cells.length; i++) {
    const c = m.cells.get(i);
    if (c.type !== 'code') continue;
    for (let j = 0; j < c.outputs.length; j++) {
      const o = c.outputs.get(j).toJSON();
      if (o.output_type === 'error') errs.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
    }
  }
  return errs;
}"""


class Lab:
    """Drive JupyterLab in a page: open a notebook, wait for its kernel, run it."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def open(self, page, notebook: str, timeout_s: float = 90) -> None:
        """Open ``notebooks/<notebook>`` in a clean layout and wait until its kernel is idle."""
        page.goto(f"{self.server.url}/lab/tree/notebooks/{notebook}?token={TOKEN}&reset")
        try:
            page.wait_for_function(_KERNEL_IDLE, timeout=timeout_s * 1000)
        except Exception as exc:  # a kernel that never starts: show why (server log)
            raise AssertionError(
                f"the kernel of {notebook} was not idle after {timeout_s} s ({exc}); "
                f"JupyterLab log:\n{self.server.log_tail()}"
            ) from None

    def run_all(self, page, timeout_s: float = 150) -> None:
        """Run every cell (resolves when the last one finished); fail on any error output."""
        page.evaluate(
            """(ms) => Promise.race([
                 window.jupyterapp.commands.execute('notebook:run-all-cells'),
                 new Promise((_, no) => setTimeout(() => no(new Error('run-all timed out')), ms)),
               ])""",
            timeout_s * 1000,
        )
        page.wait_for_function(_KERNEL_IDLE, timeout=timeout_s * 1000)
        errors = page.evaluate(_CELL_ERRORS)
        assert not errors, f"cells raised in JupyterLab: {errors}"

    def settle(self, page, quiet_ms: int = 500, timeout_s: float = 60) -> None:
        """Wait until the kernel stayed idle for ``quiet_ms``.

        ipywidgets throttles state updates (one pending message per model): right after typing,
        the last keystrokes may still be buffered in the page while a click would go at once.
        """
        page.wait_for_function(
            """async (quiet) => {
                 const w = window.jupyterapp.shell.currentWidget;
                 let since = performance.now();
                 while (performance.now() - since < quiet) {
                   await new Promise(r => setTimeout(r, 50));
                   const k = w.sessionContext.session && w.sessionContext.session.kernel;
                   if (!k || k.status !== 'idle') since = performance.now();
                 }
                 return true;
               }""",
            arg=quiet_ms,
            timeout=timeout_s * 1000,
        )

    def run_cell(self, page, source_prefix: str, timeout_s: float = 90) -> int:
        """Run the (first) cell whose source starts with ``source_prefix``; return its index."""
        index = page.evaluate(
            """(prefix) => {
                 const nb = window.jupyterapp.shell.currentWidget.content;
                 for (let i = 0; i < nb.model.cells.length; i++) {
                   const src = nb.model.cells.get(i).sharedModel.getSource().trimStart();
                   if (src.startsWith(prefix)) { nb.activeCellIndex = i; return i; }
                 }
                 return -1;
               }""",
            source_prefix,
        )
        assert index >= 0, f"no cell starts with {source_prefix!r}"
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
        self.settle(page, timeout_s=timeout_s)
        return index

    def cell(self, page, index: int):
        """The DOM node of cell ``index`` (every cell is in the DOM: windowingMode none)."""
        return page.locator(".jp-Notebook .jp-Cell").nth(index)

    def shutdown_kernel(self, page) -> None:
        """Free the kernel (and its seekdb client) before the next lesson opens."""
        page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()"
        )


@pytest.fixture(scope="session")
def lab(lab_server: Server) -> Lab:
    return Lab(lab_server)
