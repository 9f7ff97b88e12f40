"""`make lab`'s JupyterLab starts without a warning a newcomer takes for an error (issue 34 §10).

notebook_shim, installed with JupyterLab, reads every ServerApp trait while it links; reading
the deprecated ``ServerApp.token`` prints "ServerApp.token config is deprecated" even though
nothing sets it. The Makefile's ``LAB_FLAGS`` leave notebook_shim out. The test starts
JupyterLab with those flags (and, as the planted defect, without the one that leaves it out),
on a free local port, until it says it is running.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOISE = "ServerApp.token config is deprecated"


def lab_flags() -> list[str]:
    """The Makefile's ``LAB_FLAGS`` (continuation lines joined)."""
    text = (REPO / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    found = re.search(r"^LAB_FLAGS\s*:?=\s*(.+)$", text, re.M)
    assert found, "the Makefile defines LAB_FLAGS for the lab target"
    return found.group(1).split()


def start_log(flags: list[str], tmp: Path) -> str:
    """JupyterLab's output from start until it serves (or 90 s), then it is stopped."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces")}
    log = tmp / f"lab-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--ServerApp.open_browser=False",
             *(f for f in flags if "open_browser" not in f),  # headless here
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
             f"--ServerApp.root_dir={tmp}", "--LabApp.news_url=None",
             "--LanguageServerManager.autodetect=False"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp)
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and proc.poll() is None:
                if "is running at" in log.read_text():
                    break
                time.sleep(0.3)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    text = log.read_text()
    assert "is running at" in text, text[-2000:]
    return text


@pytest.mark.slow
def test_make_lab_starts_without_the_token_deprecation(tmp_path: Path):
    flags = lab_flags()
    assert "--ServerApp.jpserver_extensions=notebook_shim=False" in flags
    assert not [f for f in flags if f.startswith("--ServerApp.token")], "IdentityProvider.token"
    assert NOISE not in start_log(flags, tmp_path)
    # The planted defect: notebook_shim loaded again, the line is back (so the check can fail).
    with_shim = [f for f in flags if "notebook_shim" not in f]
    assert NOISE in start_log(with_shim, tmp_path)
