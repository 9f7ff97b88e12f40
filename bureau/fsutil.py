"""Files the bureau writes under the data directory: readable by their owner only.

Case snapshots name the roles and hold the scenario's opening memories (private text), so they
get the same protection as the store: mode 0600 inside a 0700 directory, written atomically so a
crash never leaves half a file that a later open would misread.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed and make it owner-only (0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
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
