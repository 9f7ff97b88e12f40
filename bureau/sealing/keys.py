"""The sealing key store: one small owner-only file per scope, outside the database.

Layout (``Settings.seal_keys_path``, a folder ``seal.keys`` beside the audit key)::

    seal.keys/MANIFEST                 marks the store (its absence with sealed rows = lost)
    seal.keys/.lock                    writers take it (flock) across processes
    seal.keys/<ns>/<scope>.key         one (case namespace, role/board/...) scope

A scope file holds the scope key (32 random bytes) and, per card, that card's data key *wrapped*
by the scope key (AES-GCM, bound to the card id), which seals the card's text, its labels and its
vector (:mod:`.vectors`):
a first line (JSON: the key and the cards when the file was last written whole) and, after it,
one line per batch of cards added since (``{"cards": {...}}``), each appended and fsynced before
any row of those cards is written. Appending is what keeps a write's cost flat: rewriting the
whole file for every new card cost a publish ~1.5 ms on a small scope and grew with the scope
(issue 31 §4). A line cut short by a crash is skipped when read (its cards never reached the
database: their rows are written only once the append is durable), and the next append starts
on a fresh line.

Forgetting a card rewrites its scope file whole without it (appended lines folded in); so does
an append once the appended lines outnumber the first line's cards (a reader's parse stays
linear). Forgetting a scope or a whole namespace unlinks the files. Every rewrite is write-temp,
fsync, rename, fsync the folder: no old copy of a destroyed key stays in the store (the old
file's inode is released, never edited in place; appends only ever add keys of live cards),
and a crash leaves either the old or the new file, never half of one.

Versions. A store written before issue 51 (MANIFEST v1) turned each scope's vectors by a rotation
drawn from the scope key, and its scope files (``"v": 1``) name that draw (``"rotation"``; none:
draw 1). Such a store is migrated when it is opened (:mod:`bureau.storage.seal_migration`: each
vector turned back and sealed under its card's key), then its files are rewritten as ``"v": 2``
(no draw) and the MANIFEST last; until then every file keeps its draw, so a migration a crash
cut short can still turn the rest back.

The store is per data directory (in classroom mode: the learner's own, never the tenant), so
whoever copies the data directory *with* this folder can open every live card; forgotten ones
stay noise. Back it up with the data directory, or keep it apart from the database backups.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import SealKeysLostError
from .cipher import KEY_BYTES
from .rotation import DRAWS

MANIFEST = "MANIFEST"
_MANIFEST_V1 = "bureau seal key store v1: one folder per case namespace, one file per scope\n"
_MANIFEST_TEXT = ("bureau seal key store v2: one folder per case namespace, one file per scope; "
                  "vectors sealed per card\n")


_PATHS_KEPT = 65_536


def _name(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]


def _wrap_ad(card_id: str) -> bytes:
    return b"bureau-seal-wrap\x1f" + card_id.encode("utf-8")


@dataclass(frozen=True)
class ScopeKey:
    """A scope's key. ``draw``: in a file written before issue 51 (``"v": 1``), the draw of the
    rotation its stored vectors were turned by (:data:`.rotation.DRAWS`), which the migration
    needs to turn them back; ``None`` in a current file (vectors sealed per card)."""

    key: bytes
    draw: int | None = None

    def __repr__(self) -> str:  # never the key itself in a log or a traceback
        return f"ScopeKey(draw={self.draw})"


def parse_scope_file(body: bytes) -> tuple[ScopeKey, dict[str, str], int]:
    """A scope file's key (with, in a v1 file, its rotation's draw: 1 when it names none, as
    files written before draws were named), its wrapped card keys (first line and appended lines
    merged) and how many appended lines it has. ``ValueError``/``KeyError``/``TypeError`` when
    its first line is not a key file's (a v1 draw this bureau does not know included: its
    vectors could not be turned back, so the file is as good as lost; a v2 file naming a draw
    too); an appended line that does not parse is one a crash cut short (skipped: see the
    module's docstring)."""
    lines = body.split(b"\n")
    head = json.loads(lines[0])
    version = head.get("v", 1)
    if version == 2 and type(version) is int and "rotation" not in head:
        draw = None
    elif version == 1 and type(version) is int:
        draw = head.get("rotation", 1)
        if type(draw) is not int or draw not in DRAWS:  # not "2", not true (bool is an int)
            raise ValueError(f"unknown rotation draw {draw!r}")
    else:
        raise ValueError(f"unknown key file version {version!r}")
    key = ScopeKey(bytes.fromhex(head["scope_key"]), draw)
    wrapped = dict(head["cards"])
    tail = 0
    for line in lines[1:]:
        if not line.strip():
            continue
        tail += 1
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
            wrapped.update({str(c): str(w) for c, w in json.loads(line)["cards"].items()})
    return key, wrapped, tail


def _scope_body(key: ScopeKey, wrapped: dict[str, str]) -> bytes:
    """A scope file's first line: v2, or (a scope of a store not migrated yet, rewritten by a
    forget before its migration) v1 with its draw, as it was written (a draw-1 file names none)."""
    head: dict[str, object] = {"v": 2 if key.draw is None else 1, "scope_key": key.key.hex()}
    if key.draw not in (None, 1):
        head["rotation"] = key.draw
    return json.dumps({**head, "cards": wrapped}, separators=(",", ":")).encode("ascii") + b"\n"


@dataclass
class _Scope:
    sig: tuple[int, int, int]
    key: ScopeKey
    wrapped: dict[str, str]
    opened: dict[str, bytes] = field(default_factory=dict)
    tail: int = 0
    """Appended lines after the first (the file is rewritten whole once they outnumber it)."""
    head: int = 0
    """Cards known when the file was last read or written whole (the measure ``tail`` is
    held against)."""


class KeyStore:
    """Scope keys and wrapped per-card data keys of one data directory (thread- and
    process-safe; reads are cached until the scope's file changes)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.RLock()
        self._cache: dict[tuple[str, str], _Scope] = {}
        self._paths: dict[tuple[str, str], str] = {}

    def __repr__(self) -> str:
        return f"<KeyStore {self.root}>"

    # -- paths -------------------------------------------------------------------------------
    def scope_path(self, namespace: str, scope: str) -> Path:
        return Path(self._path(namespace, scope))

    def _path(self, namespace: str, scope: str) -> str:
        """The scope file's path as text, kept: every read stats it (the leak lab ~150,000
        times), and two hashes and a ``Path`` built each time were ~4 s of its storage thread."""
        path = self._paths.get((namespace, scope))
        if path is None:
            if len(self._paths) >= _PATHS_KEPT:
                self._paths.clear()
            path = os.path.join(self.root, _name(namespace), f"{_name(scope)}.key")
            self._paths[(namespace, scope)] = path
        return path

    def exists(self) -> bool:
        return (self.root / MANIFEST).is_file()

    def needs_migration(self) -> bool:
        """True for a store written before issue 51 (MANIFEST v1): its scopes' vectors are
        turned by a rotation, not sealed per card (:mod:`bureau.storage.seal_migration`)."""
        try:
            return (self.root / MANIFEST).read_text(encoding="utf-8") != _MANIFEST_TEXT
        except FileNotFoundError:
            return False

    def legacy_files(self) -> list[Path]:
        """The scope files still written the v1 way (naming a rotation's draw)."""
        out = []
        for path in sorted(self.root.glob("*/*.key")):
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                if parse_scope_file(path.read_bytes())[0].draw is not None:
                    out.append(path)
        return out

    def retire_draws(self) -> int:
        """Rewrite every v1 scope file as v2 (the same keys, no draw), each atomically; the
        caller holds :meth:`locked` and has migrated every vector first. Returns how many."""
        n = 0
        for path in self.legacy_files():
            key, wrapped, _ = parse_scope_file(path.read_bytes())
            self._atomic_write(path, _scope_body(ScopeKey(key.key), wrapped))
            n += 1
        with self._lock:
            self._cache.clear()
        return n

    def mark_migrated(self) -> None:
        """The MANIFEST rewritten as v2: the last step of a migration."""
        self._atomic_write(self.root / MANIFEST, _MANIFEST_TEXT.encode())

    def _ensure(self) -> None:
        if self.exists():
            return
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        self._atomic_write(self.root / MANIFEST, _MANIFEST_TEXT.encode())

    def lost(self, what: str) -> SealKeysLostError:
        return SealKeysLostError(
            f"The sealing key store {self.root} is missing or damaged ({what}): the text of "
            "every sealed card it kept the key of cannot be read, by anyone.")

    # -- reading -----------------------------------------------------------------------------
    def scope_key(self, namespace: str, scope: str) -> ScopeKey | None:
        """The scope's key, or ``None`` when the scope has none (never sealed, or forgotten)."""
        found = self._load(namespace, scope)
        return None if found is None else found.key

    def data_keys(self, namespace: str, scope: str, card_ids: Iterable[str]) -> dict[str, bytes]:
        """The data keys of those cards that still have one (a forgotten card has none)."""
        found = self._load(namespace, scope)
        if found is None:
            return {}
        out: dict[str, bytes] = {}
        aead = None
        for cid in card_ids:
            key = found.opened.get(cid)
            if key is None and cid in found.wrapped:
                aead = aead or AESGCM(found.key.key)
                raw = base64.b64decode(found.wrapped[cid])
                try:
                    key = aead.decrypt(raw[:12], raw[12:], _wrap_ad(cid))
                except InvalidTag:
                    raise self.lost(f"the key of card {cid} does not unwrap") from None
                found.opened[cid] = key
            if key is not None:
                out[cid] = key
        return out

    def _load(self, namespace: str, scope: str) -> _Scope | None:
        path = self._path(namespace, scope)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._cache.pop((namespace, scope), None)
            return None
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            cached = self._cache.get((namespace, scope))
            if cached is not None and cached.sig == sig:
                return cached
            if os.name == "posix" and st.st_mode & 0o077:
                raise SealKeysLostError(
                    f"The sealing key file {path} is readable or writable by other users "
                    f"(mode {stat.filemode(st.st_mode)}).",
                    f"Make it owner-only: chmod -R go= {self.root}")
            try:
                key, wrapped, tail = parse_scope_file(Path(path).read_bytes())
            except FileNotFoundError:
                return None
            except (ValueError, KeyError, TypeError, AttributeError):
                raise self.lost(f"{path} is not a key file") from None
            if len(key.key) != KEY_BYTES:
                raise self.lost(f"{path} holds a short scope key")
            found = _Scope(sig, key, wrapped, tail=tail, head=len(wrapped))
            self._cache[(namespace, scope)] = found
            return found

    # -- writing -----------------------------------------------------------------------------
    def new_cards(self, namespace: str, scope: str, card_ids: Iterable[str],
                  on_new_scope: Callable[[ScopeKey], None] | None = None) -> tuple[
            ScopeKey, dict[str, bytes]]:
        """Fresh data keys for new cards (and the scope key, made now if the scope has none;
        ``on_new_scope`` hears of it before it is written);
        durable (fsynced) before this returns, so no card is ever stored without its key."""
        ids = list(card_ids)
        with self._writing(namespace, scope) as found:
            key = found.key if found is not None else ScopeKey(secrets.token_bytes(KEY_BYTES))
            if found is None and on_new_scope is not None:
                on_new_scope(key)
            aead = AESGCM(key.key)
            fresh: dict[str, bytes] = {}
            added: dict[str, str] = {}
            for cid in ids:
                dk = secrets.token_bytes(KEY_BYTES)
                nonce = os.urandom(12)
                added[cid] = base64.b64encode(
                    nonce + aead.encrypt(nonce, dk, _wrap_ad(cid))).decode("ascii")
                fresh[cid] = dk
            if found is not None and found.tail < max(64, found.head):
                self._append_scope(namespace, scope, added)  # one line, one fsync
                found.wrapped.update(added)
                found.opened.update(fresh)
                self._remember(namespace, scope, found, tail=found.tail + 1)
            else:  # a new scope, or one whose appended lines outnumber its first line
                wrapped = {**(found.wrapped if found is not None else {}), **added}
                opened = {**(found.opened if found is not None else {}), **fresh}
                self._write_scope(namespace, scope, key, wrapped)
                self._remember(namespace, scope, _Scope((0, 0, 0), key, wrapped, opened),
                               tail=0)
        return key, fresh

    def _remember(self, namespace: str, scope: str, found: _Scope, tail: int) -> None:
        """Cache what this process just wrote under the file's new signature (a large scope is
        not re-read and re-unwrapped after each card it adds)."""
        try:
            st = os.stat(self._path(namespace, scope))
        except FileNotFoundError:
            return
        with self._lock:
            self._cache[(namespace, scope)] = _Scope(
                (st.st_ino, st.st_mtime_ns, st.st_size), found.key, found.wrapped, found.opened,
                tail=tail, head=len(found.wrapped) if tail == 0 else found.head)

    def forget_cards(self, namespace: str, scope: str, card_ids: Iterable[str]) -> int:
        """Destroy those cards' data keys (the scope's file rewritten without them; the file
        and so the scope key and its rotation go when no card is left). Returns how many."""
        if not self.exists():  # nothing was ever sealed here: make no key store for a delete
            return 0
        ids = set(card_ids)
        with self._writing(namespace, scope) as found:
            if found is None:
                return 0
            wrapped = {c: w for c, w in found.wrapped.items() if c not in ids}
            gone = len(found.wrapped) - len(wrapped)
            if not gone:
                return 0
            if wrapped:
                self._write_scope(namespace, scope, found.key, wrapped)
                self._remember(namespace, scope, _Scope(
                    (0, 0, 0), found.key, wrapped,
                    {c: k for c, k in found.opened.items() if c not in ids}), tail=0)
            else:
                self._unlink(self.scope_path(namespace, scope))
            return gone

    def forget_scope(self, namespace: str, scope: str) -> bool:
        """Destroy a scope's key and every data key it wraps (its file unlinked)."""
        if not self.exists():  # nothing was ever sealed here: make no key store for a delete
            return False
        with self._writing(namespace, scope) as found:
            if found is None:
                return False
            self._unlink(self.scope_path(namespace, scope))
            return True

    def forget_namespace(self, namespace: str) -> int:
        """Destroy every scope key of a case namespace (its folder removed); how many files."""
        if not self.exists():  # nothing was ever sealed here: make no key store for a delete
            return 0
        folder = self.root / _name(namespace)
        with self._locked():
            if not folder.is_dir():
                return 0
            n = sum(1 for _ in folder.glob("*.key"))
            shutil.rmtree(folder)
            self._fsync_dir(self.root)
            with self._lock:
                for k in [k for k in self._cache if k[0] == namespace]:
                    del self._cache[k]
            return n

    def destroy(self) -> int:
        """Destroy the whole store (a classroom learner removed or reset): every key file
        unlinked, each folder fsynced, then the folders removed; returns how many key files
        went. Links are removed, never followed (the store may sit in a folder its learner
        controls while the instructor's account destroys it)."""
        try:
            st = os.lstat(self.root)
        except FileNotFoundError:
            return 0
        if not stat.S_ISDIR(st.st_mode):  # a link or a file where the store should be
            os.unlink(self.root)
            self._fsync_dir(self.root.parent)
            return 0
        n = 0
        with self._lock:
            for folder, dirs, names in os.walk(self.root, topdown=False, followlinks=False):
                for name in names:
                    n += name.endswith(".key")
                    os.unlink(os.path.join(folder, name))
                for name in dirs:
                    path = os.path.join(folder, name)
                    if os.path.islink(path):
                        os.unlink(path)
                    else:
                        os.rmdir(path)
                self._fsync_dir(Path(folder))
            os.rmdir(self.root)
            self._fsync_dir(self.root.parent)
            self._cache.clear()
        return n

    def held(self) -> dict[str, int]:
        """What the store holds now: scope files and wrapped card keys (the forgetting lab)."""
        scopes = cards = 0
        if self.root.is_dir():
            for path in self.root.glob("*/*.key"):
                scopes += 1
                with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                    cards += len(parse_scope_file(path.read_bytes())[1])
        return {"scopes": scopes, "card_keys": cards}

    # -- the file operations -------------------------------------------------------------------
    @contextlib.contextmanager
    def _writing(self, namespace: str, scope: str) -> Iterator[_Scope | None]:
        with self._locked():  # the file's signature tells whether the cache is still current
            try:
                yield self._load(namespace, scope)
            except BaseException:
                with self._lock:
                    self._cache.pop((namespace, scope), None)
                raise

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The store's writer lock (this process's threads and every other process): a
        migration holds it from its first row to its MANIFEST."""
        return self._locked()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            self._ensure()
            fd = os.open(self.root / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def _write_scope(self, namespace: str, scope: str, key: ScopeKey,
                     wrapped: dict[str, str]) -> None:
        path = self.scope_path(namespace, scope)
        if not path.parent.is_dir():
            path.parent.mkdir(mode=0o700, exist_ok=True)
            self._fsync_dir(self.root)
        self._atomic_write(path, _scope_body(key, wrapped))

    def _append_scope(self, namespace: str, scope: str, added: dict[str, str]) -> None:
        """New cards' wrapped keys as one line at the end of the scope's file, fsynced (the
        file, hence its folder entry, is already durable). A line a crash cut short is ended
        first, so this one parses."""
        path = self.scope_path(namespace, scope)
        line = json.dumps({"cards": added}, separators=(",", ":")).encode("ascii") + b"\n"
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            getattr(os, "fdatasync", os.fsync)(fd)
        finally:
            os.close(fd)

    def _atomic_write(self, path: Path, body: bytes) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        self._fsync_dir(path.parent)

    def _unlink(self, path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self._fsync_dir(path.parent)

    @staticmethod
    def _fsync_dir(folder: Path) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
