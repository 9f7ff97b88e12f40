"""The built course site served over http on 127.0.0.1, and Debian's Chromium to read it.

The site itself is built by the ``site`` stage of ``tests/run_all.sh`` (``make site``) before
these tests run; they read ``build/site/html`` (or ``BUREAU_SITE_HTML``) and fail, saying how to
build it, when it is missing. The browser settings are the ones of ``tests/ui``.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, skip_without_chromium

REPO = Path(__file__).resolve().parents[2]
SITE_HTML = Path(os.environ.get("BUREAU_SITE_HTML", REPO / "build" / "site" / "html"))


pytest_collection_modifyitems = skip_without_chromium(Path(__file__).parent)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": {"width": 1280, "height": 900}}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's signature
        pass


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """The built site, served read-only on a free 127.0.0.1 port for the session."""
    if not (SITE_HTML / "index.html").is_file():
        pytest.fail(f"no built site at {SITE_HTML}: run `make site` first "
                    "(tests/run_all.sh's site stage builds it before these tests)")
    handler = functools.partial(_Quiet, directory=str(SITE_HTML))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
