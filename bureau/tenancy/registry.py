"""Where a data directory's progress record lives: a process-wide map from data directory to the
classroom tenant it was opened with.

``Bureau.open`` registers the tenant when ``BUREAU_CLASSROOM`` names one; the lessons' progress
calls, which pass the data directory they always passed, look it up here and write to that
learner's own database. It lives below the classroom and the course so the core can register
without importing either.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..settings import ServerSettings

_TENANTS: dict[Path, ServerSettings] = {}
_LOCK = threading.Lock()


def _key(data_dir: str | Path) -> Path:
    """One spelling per directory (``~``, relative), so a lookup finds what was registered."""
    return Path(os.path.abspath(os.path.expanduser(os.fspath(data_dir))))


def register_tenant(data_dir: Path, server: ServerSettings) -> None:
    """From now on, the progress record of ``data_dir`` lives in ``server``'s database."""
    with _LOCK:
        _TENANTS[_key(data_dir)] = server


def tenant_for(data_dir: str | Path) -> ServerSettings | None:
    with _LOCK:
        return _TENANTS.get(_key(data_dir))


__all__ = ["register_tenant", "tenant_for"]
