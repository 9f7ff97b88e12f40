"""Files the bureau writes under the data directory: readable by their owner only.

Case snapshots name the roles and hold the scenario's opening memories (private text), so they
get the same protection as the store: mode 0600 inside a 0700 directory, written atomically so a
crash never leaves half a file that a later open would misread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

_BUREAU_MARKERS = ("bureau.sqlite3", "seekdb")
"""Entries only a bureau data directory has: such a folder may be tightened to 0700."""


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed and make it owner-only (0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def private_data_dir(path: Path) -> bool:
    """Create the data directory owner-only (0700); return whether its mode was set.

    A folder the bureau creates, finds empty, or recognises as its own (a ledger or a store
    inside) is tightened, so stores made before this rule get fixed on their next open. Any
    other existing folder (a user's project directory named as the data directory) keeps its
    mode: the bureau's own entries inside it are private anyway (see :func:`private_dir`).
    """
    fresh = not path.exists()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not (fresh or not any(path.iterdir()) or any((path / m).exists() for m in _BUREAU_MARKERS)):
        return False
    try:
        os.chmod(path, 0o700)
    except PermissionError:  # someone else's folder we may write in: leave its mode alone
        log.warning("cannot make the data directory %s owner-only (not its owner)", path)
        return False
    return True


def private_file(path: Path, companions: tuple[str, ...] = ()) -> Path:
    """Create ``path`` empty if missing, and make it (and existing ``path + suffix`` files for
    each of ``companions``) owner-only (0600).

    For files another library opens by name (SQLite): created 0600 *before* that library
    touches it, so the companions it creates later (SQLite's ``-wal`` and ``-shm`` take the
    database's mode) are private from the first byte; companions left by an older run are
    tightened too. The parent folder's mode is not touched (see :func:`private_data_dir`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
    for suffix in companions:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(f"{path}{suffix}", 0o600)
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically with mode 0600 (temp file + ``os.replace``)."""
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Run the block with umask 0o077, so every file created in it is owner-only.

    Meant for starting embedded seekdb: its server process inherits the umask at start and
    keeps it, so its data, logs and sockets are private for the store's whole life (measured:
    all files 0600, all folders 0700). The umask is process-wide, so keep the block short.
    """
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


SEEKDB_TELEMETRY = Path("run") / "telemetry.json"


def silence_seekdb_telemetry(seekdb_dir: Path) -> None:
    """Stop embedded seekdb from reporting itself to openwebapi.oceanbase.com.

    On first start (and on every start until one report got through) the seekdb server posts a
    "bootstraped" event with host facts (OS, CPU model, memory size, a host hash) to
    ``https://openwebapi.oceanbase.com/api/web/oceanbase/report``. Its only switch, the
    ``TELEMETRY_ENABLED=false`` environment variable, cannot reach it: pylibseekdb starts the
    server with an empty environment. The server does skip the report when its state file
    ``run/telemetry.json`` says ``"sent": true``, so that is written here, privately, before
    the server starts (an existing report is kept, only marked as sent).
    """
    path = seekdb_dir / SEEKDB_TELEMETRY
    state: dict[str, object] = {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            state = loaded
    except (OSError, ValueError):
        pass  # missing (a new store) or unreadable: replace it
    if state.get("sent") is True:
        return
    state["sent"] = True
    private_dir(seekdb_dir)
    write_private(path, json.dumps(state))


def seekdb_server_binary() -> Path:
    """The seekdb server binary the pylibseekdb wheel ships (the classroom's server).

    Located, not imported: importing pylibseekdb would start nothing, but the wheel is the
    storage layer's business, so its path is found here."""
    import importlib.util

    from ..errors import ConfigurationError

    spec = importlib.util.find_spec("pylibseekdb")
    path = Path(spec.origin).parent / "seekdb" if spec is not None and spec.origin else None
    if path is None or not path.is_file() or not os.access(path, os.X_OK):
        raise ConfigurationError("The seekdb server binary of the pylibseekdb wheel is missing.",
                                 "Run `make venv` (pylibseekdb ships it on Linux).")
    return path
