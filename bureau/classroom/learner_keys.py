"""A learner's sealing keys that a classroom command could not destroy, said out loud.

``classroom remove|reset|teardown`` destroy a learner's key store (``seal.keys.learner_<name>``
in their data directory) when the roster records that directory. When it does not (the learner
runs on their own laptop, or was added without ``--data-dir``), the tenant goes but the keys
stay, and whoever holds those keys *and* a copy of the server's files (its redo log keeps the
dropped rows for a while) can still read the learner's old cards. The command must not pass
that over in silence, and must not guess-destroy a folder it was never told is this learner's
(another classroom on the same machine may have a learner of the same name there).

So: :func:`keys_left` names such a learner, the places the key store would be by the naming
convention under the homes this machine knows (each other learner's recorded data directory
with their name replaced by this one's, e.g. ``/home/ben/.bureau-data`` ->
``/home/ann/.bureau-data``; this account's default data directory and ``BUREAU_DATA_DIR``),
which of those places hold one now, and what to do. It destroys nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..tenancy.connection import tenant_name


class Roster(Protocol):
    """What this module reads of :class:`bureau.classroom.tenants.Roster` (a protocol, so that
    ``tenants``, which calls this module, is not imported back)."""

    @property
    def data_dirs(self) -> Mapping[str, str]: ...


def seal_keys(data_dir: str | Path, learner: str) -> Path:
    """Where a learner's sealing keys live in their data directory
    (:attr:`bureau.settings.Settings.seal_keys_path` in classroom mode)."""
    return Path(data_dir) / f"seal.keys.{tenant_name(learner)}"


@dataclass(frozen=True)
class KeysLeft:
    """A learner whose sealing keys a classroom command did not destroy: the roster does not
    know their data directory. ``found``: key stores of theirs (by name) under known homes;
    ``searched``: where the command looked."""

    learner: str
    found: tuple[Path, ...]
    searched: tuple[Path, ...]

    def message(self) -> str:
        """One paragraph for the instructor: what stayed, where, and what to do."""
        head = (f"{self.learner}: sealing keys NOT destroyed (the roster does not know their "
                "data directory); with a copy of the server's files they still open the "
                "learner's old cards")
        if self.found:
            where = ", ".join(map(str, self.found))
            return (f"{head}. Found by name at {where}: if that is this learner's, delete it "
                    f"(`rm -rf {self.found[0]}`), or have the learner do it.")
        return (f"{head}. None found at {', '.join(map(str, self.searched)) or 'any known home'}"
                f": the learner deletes `seal.keys.{tenant_name(self.learner)}` in their own "
                "data directory (next time: `classroom add --data-dir`).")


def homes(roster: Roster, learner: str) -> list[Path]:
    """Data directories ``learner``'s keys may be in when the roster does not record theirs:
    other learners' recorded directories with that learner's name (a whole path part) replaced
    by this one's, then this account's default data directory and ``BUREAU_DATA_DIR``."""
    from ..settings import default_data_dir

    out: list[Path] = []
    for other, where in sorted(roster.data_dirs.items()):
        parts = Path(where).parts
        if other != learner and other in parts:
            out.append(Path(*(learner if p == other else p for p in parts)))
    out.append(default_data_dir())
    if os.environ.get("BUREAU_DATA_DIR"):
        out.append(Path(os.environ["BUREAU_DATA_DIR"]).expanduser())
    return list(dict.fromkeys(p.absolute() for p in out))


def keys_left(roster: Roster, learner: str) -> KeysLeft | None:
    """``None`` when the roster records ``learner``'s data directory (the command destroys the
    keys there); else what stays and where it may be. Looks only (nothing is destroyed)."""
    if learner in roster.data_dirs:
        return None
    searched = tuple(seal_keys(home, learner) for home in homes(roster, learner))
    found = tuple(p for p in searched if os.path.lexists(p))
    return KeysLeft(learner, found, searched)


__all__ = ["KeysLeft", "homes", "keys_left", "seal_keys"]
