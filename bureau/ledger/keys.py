"""The audit key and the audit anchor: two small files outside the ledger (issue 19 §3).

Anyone who can write the ledger file could, before, rewrite an audit entry and recompute every
plain hash after it, cut the chain short, or edit the state rows the bureau acts on. Two files
the ledger does not hold take that away:

* ``audit.key`` (32 random bytes, hex, mode 0600, created with the data directory): the HMAC key
  of the audit chain and of every state row (:mod:`bureau.mediation.audit`). Without it no entry
  or row can be forged. A key readable by group or others is refused (:class:`AuditKeyError`).
* ``audit.anchor`` (beside the key, written atomically): the last ``(seq, hash)`` the bureau
  appended, signed with the key, plus the legacy head of a chain that predates the key. A chain
  cut short or wiped no longer reaches the anchor, and the ledger file alone cannot move it.

On the server store the key file is named by ``Settings.audit_key`` (``BUREAU_AUDIT_KEY``):
every instance sharing the server needs the same key; each host keeps its own anchor.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import AuditKeyError, AuditTamperedError
from ..mediation.audit import GENESIS, mac

log = logging.getLogger(__name__)

KEY_FILE = "audit.key"
ANCHOR_SUFFIX = ".anchor"


@dataclass(frozen=True)
class Anchor:
    """The last entry the bureau appended, and the legacy (unkeyed) head of an old chain."""

    seq: int
    hash: str
    legacy: int = 0
    """Entries ``1..legacy`` were written before the key existed (plain sha256 links)."""
    migrating: bool = False
    """Set while an old ledger's state rows are being signed; cleared when that commits."""

    def body(self) -> str:
        return json.dumps([self.seq, self.hash, self.legacy, self.migrating])


class AuditKeys:
    """The key file and its anchor. ``key`` is ``None`` until :meth:`load` or :meth:`create`."""

    def __init__(self, key_path: Path) -> None:
        self.key_path = Path(key_path)
        self.anchor_path = self.key_path.with_name(self.key_path.name.removesuffix(".key")
                                                   + ANCHOR_SUFFIX)
        self.key: bytes | None = None
        self._deferring = False
        self._pending: tuple[int, str] | None = None

    def __repr__(self) -> str:
        return f"<AuditKeys {self.key_path}>"

    # -- the key ---------------------------------------------------------------------------
    def load(self) -> bytes | None:
        """Read the key; ``None`` when there is no key file. A key others may read, or one
        that is not 64 hex digits, is refused: a leaked key forges the whole audit."""
        try:
            st = os.stat(self.key_path)
        except FileNotFoundError:
            return None
        if os.name == "posix" and st.st_mode & 0o077:
            raise AuditKeyError(
                f"The audit key {self.key_path} is readable or writable by other users "
                f"(mode {stat.filemode(st.st_mode)}): whoever reads it can forge the audit.",
                f"Make it owner-only: chmod 600 {self.key_path} (and rotate it if it leaked).")
        text = self.key_path.read_text(encoding="ascii", errors="replace").strip()
        try:
            key = bytes.fromhex(text)
        except ValueError:
            key = b""
        if len(key) != 32:
            raise AuditKeyError(f"The audit key {self.key_path} is not 64 hex digits.")
        self.key = key
        return key

    def create(self) -> tuple[bytes, bool]:
        """A new key file (0600, all at once: a temp file linked into place, so a concurrent
        opener never reads half a key); ``(key, False)`` when another process made one first."""
        self.key_path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_bytes(32)
        tmp = self.key_path.with_name(f".{self.key_path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(key.hex() + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, self.key_path)
            except FileExistsError:
                return self.load() or key, False
        finally:
            tmp.unlink(missing_ok=True)
        self.key = key
        return key, True

    # -- the anchor ------------------------------------------------------------------------
    def read_anchor(self) -> Anchor | None:
        """The anchor, checked against the key; ``None`` when there is no anchor file."""
        assert self.key is not None
        try:
            raw = json.loads(self.anchor_path.read_text(encoding="utf-8"))
            anchor = Anchor(int(raw["seq"]), str(raw["hash"]), int(raw["legacy"]),
                            bool(raw.get("migrating", False)))
            ok = mac(self.key, anchor.body()) == raw["mac"]
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            raise AuditTamperedError(
                f"The audit anchor {self.anchor_path} is malformed or was not signed with the "
                f"audit key {self.key_path}.")
        return anchor

    def anchor(self) -> Anchor:
        """The anchor, which must exist once the key does (both are made together)."""
        anchor = self.read_anchor()
        if anchor is None:
            raise AuditTamperedError(
                f"The audit anchor {self.anchor_path} is missing, but the audit key exists: the "
                "anchor records how far the chain reached, so a chain cut short could not be told.",
                "Restore it from a backup. If you removed the ledger on purpose, remove the key "
                "and the anchor with it.")
        return anchor

    def write_anchor(self, anchor: Anchor) -> None:
        """Replace the anchor atomically (temp file + rename). Not fsynced: it is written after
        every audited decision, and an fsync each time would double a consult's cost; after a
        power loss it may lag the ledger by the last decisions (never run ahead of it)."""
        assert self.key is not None
        text = json.dumps({"seq": anchor.seq, "hash": anchor.hash, "legacy": anchor.legacy,
                           "migrating": anchor.migrating, "mac": mac(self.key, anchor.body())})
        tmp = self.anchor_path.with_name(f".{self.anchor_path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, self.anchor_path)

    def advance(self, seq: int, digest: str) -> None:
        """Move the anchor forward to a committed entry (never back: processes commit in one
        order but may reach this line in another, so the file lock orders them). Inside
        :meth:`deferred` the move is only remembered."""
        if self._deferring:
            if self._pending is None or seq > self._pending[0]:
                self._pending = (seq, digest)
            return
        try:
            with self._locked():
                current = self.read_anchor()
                if current is not None and current.seq >= seq and not current.migrating:
                    return
                legacy = current.legacy if current is not None else 0
                self.write_anchor(Anchor(seq, digest, legacy))
        except OSError as exc:  # the decision is committed; a lagging anchor is only weaker
            log.warning("cannot move the audit anchor %s to entry %d: %s",
                        self.anchor_path, seq, exc)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold the anchor's moves in memory and write the furthest one once, on the way out.

        For a bulk job in a throw-away data directory (the leak lab's tens of thousands of
        audited consults): each move costs a lock, a verified read and an atomic rename, about
        1 ms. Meanwhile the anchor lags the ledger, which every check allows (it must never run
        *ahead*), exactly as after a power loss; so a chain cut within the job would go unseen
        until the end. Never for a store anyone keeps: the service never enters it.
        """
        if self._deferring:
            yield
            return
        self._deferring, self._pending = True, None
        try:
            yield
        finally:
            self._deferring, pending, self._pending = False, self._pending, None
            if pending is not None:
                self.advance(*pending)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.key_path, "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def genesis_anchor() -> Anchor:
    return Anchor(0, GENESIS, 0)
