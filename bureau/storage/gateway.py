"""MemoryGateway: scoped access to the card store, the one door between the bureau and PowerMem.

Everything above it speaks in cases, roles and cards; everything below it is PowerMem (opened by
:mod:`bureau.storage.setup`). Its job is to make the storage's sharp edges impossible to hit by
accident:

* every call is scoped by case namespace (PowerMem ``user_id``) *and* role (``agent_id``);
  PowerMem's own get/delete by id would touch any row, so the gateway checks case and owner first;
* every returned row is checked again against the scope that was asked for (a filter bug must
  surface as ``BoundaryViolation``, not as a quiet leak);
* calls are serialised by the storage lock (PowerMem crashes the process under threads);
* search is vector-only, one statement per retrieval, and each scope gets its own top-k,
  through this process's copy of each scope's vectors (:mod:`.scope_search`); every write bumps
  its scope's version in the store, so those copies -- here and in every other process sharing
  the store -- stay in step;
* with ``Settings.seal`` (the default) every text, every label that names or links content and
  every vector is sealed under the card's own key before it leaves the process
  (:mod:`bureau.sealing`); a sealed scope is searched in this process over its opened vectors
  (:mod:`.scope_search`); every delete destroys the card's key *before* the row goes, so a
  crash in between leaves noise, never text.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np

from ..embedding import Encoder
from ..errors import BoundaryViolation, BureauError
from ..mediation.derivation import TOMBSTONE_OWNER
from ..model import CaseSpace, MemoryCard
from ..sealing import CLEAR_META, Sealer
from ..settings import Settings
from ..tiers.provenance import read_labels
from . import reconnect
from .diskspace import check_writable, explain_write_failure
from .purge import purge_rows
from .rows import META_KEYS
from .rows import check_row as _check_row
from .rows import ids_of as _ids
from .rows import ts_text as _ts
from .scope_search import ScopeSearch
from .sealed_writes import check_seal_keys, write_sealed
from .setup import LOCK, open_store, sql_engine, store_key

log = logging.getLogger(__name__)


class MemoryGateway:
    """Scoped access to the card store. Obtain it with :meth:`open`, never construct twice."""

    def __init__(self, settings: Settings, memory: Any, encoder: Encoder) -> None:
        self.settings = settings
        self.memory = memory
        self.encoder = encoder
        self.store_key = store_key(settings)
        self._server = settings.store == "server"
        self._disk = settings.seekdb_path if settings.store == "embedded" else None
        """Where an embedded store's writes land (a server store's disk is not ours to watch)."""

        self.sealer = Sealer(settings.seal_keys_path)
        """Opens sealed rows whatever ``settings.seal`` says (it decides how new rows are
        written), and destroys keys on every delete."""
        self.on_step: Callable[[str], None] = lambda point: None
        """Called at named steps (the service points it at its fault injection)."""
        self.scope_search = ScopeSearch(self)
        self.scopes = self.scope_search.index
        """This process's scope matrices (:mod:`.scope_index`); every write reaches them."""

    def _retry(self, fn: Any, what: str, landed: Any = None) -> Any:
        """A server store's call survives one lost connection (:mod:`.reconnect`): a learner's
        KILL or a server restart costs a retry, not a failed cell. Embedded: a statement seekdb
        stopped at its bound runs once more, then fails typed (issue 47)."""
        if not self._server:
            return reconnect.retry_timeouts(fn, what, landed)
        return reconnect.retry(fn, what, landed)

    def _sealing(self, owner: str) -> bool:
        # Tombstones hold ids and owners, never text; in clear, a revocation outlives even the
        # loss of the key store (``repair --adopt`` reads them).
        return self.settings.seal and owner != TOMBSTONE_OWNER

    def _opened(self, uid: str, rows: list[dict[str, Any]],
                reader: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Rows as the store returned them, opened; forgotten ones (key destroyed) left out.
        ``reader``: the scopes a search may read (what it opened is kept for its next search
        of the same scopes, :meth:`.Sealer.open_rows`)."""
        return self.sealer.open_rows(uid, rows, None if reader is None else tuple(reader))

    @property
    def sql_engine(self) -> Any:
        """The store's SQLAlchemy engine, for tests that check the store's own state."""
        return sql_engine(self.memory)

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def open(cls, settings: Settings, encoder: Encoder,
             on_step: Callable[[str], None] | None = None) -> MemoryGateway:
        """The gateway over this process's store (opened now, or the one already open); a
        store sealed by an earlier version is migrated first (:mod:`.seal_migration`).
        ``on_step``: :attr:`on_step`, set before the migration (its crash points)."""
        memory, encoder = open_store(settings, encoder)
        gateway = cls(settings, memory, encoder)
        if on_step is not None:
            gateway.on_step = on_step
        gateway.check_seal_keys()
        return gateway

    def check_seal_keys(self) -> None:
        """Refuse to go on when the store holds sealed cards but the key store is gone
        (:func:`~bureau.storage.sealed_writes.check_seal_keys`); migrate a store sealed by an
        earlier version (its vectors turned by a scope rotation, issue 51)."""
        check_seal_keys(self.memory, self.sealer)
        if self.sealer.keys.needs_migration():
            from .seal_migration import migrate

            migrate(self)

    # -- writes ------------------------------------------------------------------------------
    @contextmanager
    def _writing(self, guard: bool = True) -> Iterator[None]:
        """A write to an embedded store: refused before it starts when the disk is full
        (``guard``; deletes are not refused: they may be how a learner makes room), and an
        engine error on a full disk raised as :class:`~bureau.errors.DiskFullError` (seekdb
        would otherwise say "statement timeout ... ob_query_timeout", code 4012)."""
        if self._disk is None:
            yield
            return
        if guard:
            check_writable(self._disk)
        try:
            yield
        except BureauError:
            raise
        except Exception as exc:
            err = explain_write_failure(exc, self._disk)
            if err is exc:
                raise
            raise err from exc

    def add(
        self, case: CaseSpace, owner: str, content: str, meta: dict[str, Any]
    ) -> MemoryCard:
        case_id, uid = _ids(case)
        if self._sealing(owner):
            return self._add_sealed(case, owner, [(content, meta)])[0]
        metadata = {k: v for k, v in meta.items() if k in META_KEYS and v is not None}
        metadata.setdefault("created", datetime.now().isoformat(timespec="milliseconds"))

        def write() -> str:
            with self._writing(), LOCK:
                r = self.memory.add(content, user_id=uid, agent_id=owner, metadata=metadata,
                                    infer=False)
            return str(r["results"][0]["id"])

        def landed() -> str | None:  # the first attempt committed before its connection died
            found = self._landed(case, owner, [(content, metadata["created"])])
            return None if found is None else found[0].id

        card_id = self._retry(write, "writing a card", landed)
        self.scope_search.wrote(uid, owner, added=[card_id])
        return self._card(
            {"id": card_id, "memory": content, "user_id": uid, "agent_id": owner,
             "metadata": metadata},
            case_id,
        )

    def add_many(
        self,
        case: CaseSpace,
        owner: str,
        items: Sequence[tuple[str, dict[str, Any]]],
        batch: int = 256,
    ) -> list[MemoryCard]:
        """Write many cards of one owner: embed in length-sorted batches, insert rows in bulk.

        The rows have exactly the shape ``Memory.add`` writes (PowerMem's storage adapter builds
        it the same way), so search, get, list and delete treat them alike; one ``insert`` per
        batch instead of one per card is what makes seeding a 200-case benchmark cheap.
        """
        case_id, uid = _ids(case)
        if not items:
            return []
        if self._sealing(owner):
            return self._add_sealed(case, owner, items, batch)
        storage = self.memory.storage
        if not hasattr(storage, "_collection_created"):  # PowerMem creates the table lazily
            return [self.add(case, owner, items[0][0], items[0][1]),
                    *self.add_many(case, owner, items[1:], batch)]
        from powermem.utils.utils import get_current_datetime, serialize_datetime

        vectors = self.encoder.embed([text for text, _ in items])
        cards: list[MemoryCard] = []
        for start in range(0, len(items), batch):
            chunk = items[start : start + batch]
            now = serialize_datetime(get_current_datetime())
            rows = []
            for text, meta in chunk:
                metadata = {k: v for k, v in meta.items() if k in META_KEYS and v is not None}
                metadata.setdefault("created", datetime.now().isoformat(timespec="milliseconds"))
                rows.append({
                    "data": text, "user_id": uid, "agent_id": owner, "run_id": "",
                    "actor_id": "", "hash": hashlib.md5(text.encode("utf-8")).hexdigest(),
                    "created_at": now, "updated_at": now, "category": "",
                    "fulltext_content": text, "metadata": metadata,
                })

            chunk_vectors = vectors[start : start + len(chunk)]

            def insert(chunk_vectors: Any = chunk_vectors,
                       rows: list[dict[str, Any]] = rows) -> list[Any]:
                with self._writing(), LOCK:
                    return list(storage.vector_store.insert(chunk_vectors.tolist(), rows))

            def landed(rows: list[dict[str, Any]] = rows) -> list[Any] | None:
                found = self._landed(case, owner, [(r["data"], r["metadata"]["created"])
                                                   for r in rows])
                return None if found is None else [c.id for c in found]

            ids = self._retry(insert, "writing cards", landed)
            if len(ids) != len(rows):
                raise BoundaryViolation(f"Bulk insert returned {len(ids)} ids for {len(rows)} rows.")
            self.scope_search.wrote(uid, owner, added=ids, vectors=chunk_vectors)
            cards += [
                self._card({"id": str(i), "memory": row["data"], "user_id": uid,
                            "agent_id": owner, "metadata": row["metadata"]}, case_id)
                for i, row in zip(ids, rows, strict=True)
            ]
        return cards

    def _add_sealed(self, case: CaseSpace, owner: str,
                    items: Sequence[tuple[str, dict[str, Any]]],
                    batch: int = 256) -> list[MemoryCard]:
        return write_sealed(self, case, owner, items, batch)

    def delete(self, case: CaseSpace, owner: str, card_id: str) -> bool:
        """Delete one card, but only if it belongs to this case and owner (False: not there).

        Its key is destroyed first (crypto-shredding): from that moment every copy of its
        ciphertext -- this row, the store's redo log and old blocks -- is noise, even if the
        process dies before the row is deleted (the row is then unreadable and deleted later).
        """
        _, uid = _ids(case)
        if type(card_id) is not str or not card_id.isascii() or not card_id.isdigit():
            return False
        with self._writing(guard=False), LOCK:
            row = self.memory.get(int(card_id), user_id=uid, agent_id=owner)
            if row is None or row.get("user_id") != uid or row.get("agent_id") != owner:
                self.sealer.forget(uid, owner, [card_id])  # a key whose row is already gone
                return False
            self.sealer.forget(uid, owner, [card_id])
            self.on_step("forget.after_key_destroyed")
            try:
                return bool(self.memory.delete(int(card_id), user_id=uid, agent_id=owner))
            finally:  # its vector leaves every scope matrix too
                self.scope_search.wrote(uid, owner, removed=[card_id])

    def delete_or_gone(self, case: CaseSpace, owner: str, card_id: str) -> bool:
        """True once the card is not in the store any more (deleted now, or already gone)."""
        def run() -> bool:
            with LOCK:
                return self.delete(case, owner, card_id) or self.get(case, owner, card_id) is None

        return bool(self._retry(run, "deleting a card"))

    def purge_case(self, case: CaseSpace, max_rounds: int = 100) -> int:
        """Delete every card of a case namespace and verify none is left (PowerMem's delete_all
        leaves rows)."""
        return self.purge_space(_ids(case)[1], max_rounds)

    def purge_space(self, uid: str, max_rounds: int = 100) -> int:
        """Delete every card stored under one namespace (``user_id``), verified."""
        return int(self._retry(lambda: self._purge_space(uid, max_rounds), "deleting cards"))

    def _purge_space(self, uid: str, max_rounds: int) -> int:
        with self._writing(guard=False), LOCK:
            self.sealer.forget_namespace(uid)  # every key of the namespace first
            deleted, left = purge_rows(self, uid, None, max_rounds)
        if left:
            raise BoundaryViolation(f"{left} cards of {uid} survived deletion.")
        return deleted

    def purge_owner(self, case: CaseSpace, owner: str, max_rounds: int = 100) -> int:
        """Delete every card of one owner in one namespace (a run's ephemeral scope), verified
        with the store's own count; returns how many were deleted."""
        _, uid = _ids(case)
        with self._writing(guard=False), LOCK:
            self.sealer.forget_scope(uid, owner)  # the scope's keys first
            deleted, left = purge_rows(self, uid, owner, max_rounds)
        if left:
            raise BoundaryViolation(f"{left} cards of {uid}/{owner} survived deletion.")
        return deleted

    # -- reads -------------------------------------------------------------------------------
    def embed_query(self, text: str) -> tuple[np.ndarray, float]:
        """Embed a question; returns (unit vector, ms). The ms reach every outward view.

        Never through the encoder's shared cache (``cache=False``): it holds every case's card
        texts and would hold every question, so a hit (~0.02 ms against ~5 ms) would tell a
        role that its guess is some other role's card, or that someone already asked this.

        And never the same vector twice: seekdb answers an exactly repeated search statement
        ~9 % faster, and the board's search is the same statement for every role of a case, so
        a role could tell that another one had asked the very same question (measured: 239 of
        300 repeats faster; 151 of 300 after this). Scaling each component by a random factor
        within 1 ± 2⁻²¹ (a few float32 ulps) makes every query new to the store and moves a
        cosine by less than 1e-6.
        """
        start = time.perf_counter()
        vec = self.encoder.embed([text], cache=False)[0]
        jitter = _jitter_rng().uniform(-(2.0**-21), 2.0**-21, vec.shape)
        vec = (vec * (1.0 + jitter)).astype(np.float32)
        return vec, (time.perf_counter() - start) * 1000

    def search_scope(
        self, case: CaseSpace, owner: str, vector: np.ndarray, limit: int
    ) -> tuple[list[MemoryCard], float]:
        """Vector search in one owner's space of one case; returns (cards with scores, ms).
        PowerMem's own search for an unsealed scope; a sealed one is searched in this process
        (:mod:`.scope_search`)."""
        case_id, uid = _ids(case)
        if self.sql_engine is not None and self.sealer.sealed_scope(uid, owner):
            # the store holds no usable vector of a sealed card: searched in this process
            found, ms = self.scope_search.search(case, [owner], vector, int(limit))
            return found[owner], ms
        start = time.perf_counter()

        def search() -> Any:
            with LOCK:
                return self.memory.storage.search_memories(
                    query_embedding=np.asarray(vector).tolist(), user_id=uid, agent_id=owner,
                    limit=limit)

        rows = self._retry(search, "searching")
        rows = self._opened(uid, [_check_row(row, uid, owner, "search") for row in rows],
                            reader=[owner])
        ms = (time.perf_counter() - start) * 1000
        return [self._scored(row, case_id) for row in rows], ms

    def search_scopes(
        self, case: CaseSpace, owners: Sequence[str], vector: np.ndarray, limit_per_scope: int
    ) -> tuple[dict[str, list[MemoryCard]], float]:
        """Each owner's own top ``limit_per_scope`` cards; returns them and the search's ms.

        Every scope gets its own top-k, whatever the others hold: a role with many similar notes
        of its own must not push a relevant board copy out of the results (one filtered query
        with ``agent_id IN (...)`` and a shared limit did exactly that).

        With the scope cache on (``Settings.scope_cache``, the default) each scope's matrix in
        this process picks the candidates and one statement reads them, seekdb's distances and
        the scopes' versions: the same cards, scores and order as :meth:`search_scopes_exact`
        (tests/test_scope_index.py). Off, PowerMem's own per-scope queries in one statement.
        Sealed scopes are searched in this process over their opened vectors, whatever the
        cache setting (:mod:`.scope_search`).
        """
        _ids(case)
        wanted = list(dict.fromkeys(owners))
        k = int(limit_per_scope)
        if sql_engine(self.memory) is None:  # not an SQL store: one PowerMem search per scope
            start = time.perf_counter()
            found = {o: self.search_scope(case, o, vector, k)[0] for o in wanted}
            return found, (time.perf_counter() - start) * 1000
        return self.scope_search.search(case, wanted, vector, k)

    def search_scopes_exact(
        self, case: CaseSpace, owners: Sequence[str], vector: np.ndarray, limit_per_scope: int
    ) -> tuple[dict[str, list[MemoryCard]], float]:
        """seekdb's exact search of each scope, ordered by (distance, id): the reference the
        scope cache must equal (:meth:`.ScopeSearch.exact`)."""
        _ids(case)
        return self.scope_search.exact(case, list(dict.fromkeys(owners)), vector,
                                       int(limit_per_scope))

    def raw_search(
        self, case: CaseSpace, owner: str, query: str, limit: int
    ) -> list[dict[str, Any]]:
        """PowerMem's own ``Memory.search``: the benchmark's baseline, not used by the service."""
        _, uid = _ids(case)
        with LOCK:
            return self.memory.search(query, user_id=uid, agent_id=owner, limit=limit)["results"]

    def raw_add(self, case: CaseSpace, owner: str, content: str) -> str:
        """PowerMem's own ``Memory.add``: the benchmark's baseline for publish. The caller must
        pass the id to ``scope_search.announce`` (untimed), or searches miss the card."""
        _, uid = _ids(case)
        with self._writing(), LOCK:
            r = self.memory.add(content, user_id=uid, agent_id=owner, infer=False)
        return str(r["results"][0]["id"])

    def get(self, case: CaseSpace, owner: str, card_id: str) -> MemoryCard | None:
        case_id, uid = _ids(case)
        if (type(card_id) is not str or not card_id.isascii() or not card_id.isdigit()
                or int(card_id) >= 2**63):
            return None  # ids are decimal integers of the store's BIGINT; nothing else is one

        def read() -> Any:
            with LOCK:
                if self.sql_engine is not None:  # the row without its vector
                    return self.scope_search.row(uid, owner, int(card_id))
                return self.memory.get(int(card_id), user_id=uid, agent_id=owner)

        row = self._retry(read, "reading a card")
        if row is None or row.get("user_id") != uid or row.get("agent_id") != owner:
            return None
        opened = self._opened(uid, [row])
        return self._card(opened[0], case_id) if opened else None

    def list(
        self,
        case: CaseSpace,
        owner: str | None = None,
        where: dict[str, Any] | None = None,
        page: int = 500,
    ) -> list[MemoryCard]:
        """All cards of a case (optionally of one owner, optionally matching metadata), oldest
        first. ``where``: label equalities; the store filters on the labels a sealed row keeps
        in clear (:data:`~bureau.sealing.CLEAR_META`), every other label is compared once the
        rows are opened (a sealed row holds it sealed, issue 51)."""
        return list(self._retry(lambda: self._list(case, owner, where, page), "listing cards"))

    def _list(self, case: CaseSpace, owner: str | None, where: dict[str, Any] | None,
              page: int) -> list[MemoryCard]:
        case_id, uid = _ids(case)
        store_where = {k: v for k, v in (where or {}).items() if k in CLEAR_META}
        opened_where = {k: v for k, v in (where or {}).items() if k not in CLEAR_META}
        out: list[MemoryCard] = []
        offset = 0
        with LOCK:
            while True:
                if not store_where and self.sql_engine is not None:  # rows without vectors
                    rows = self.scope_search.page(uid, owner, page, offset)
                else:
                    rows = self.memory.get_all(
                        user_id=uid, agent_id=owner, filters=store_where or None, limit=page,
                        offset=offset, sort_by="id", order="asc",
                    )["results"]
                checked = [_check_row(row, uid, owner, "list") for row in rows]
                out += [self._card(row, case_id) for row in self._opened(uid, checked)
                        if _matches(row.get("metadata"), opened_where)]
                if len(rows) < page:
                    return out
                offset += page

    def count(self, case: CaseSpace, owner: str | None = None) -> int:
        _, uid = _ids(case)

        def count() -> int:
            with LOCK:
                return int(self.memory.count_all(user_id=uid, agent_id=owner))

        return int(self._retry(count, "counting cards"))

    def _landed(self, case: CaseSpace, owner: str,
                written: Sequence[tuple[str, str]]) -> list[MemoryCard] | None:
        """The cards an insert whose connection died wrote after all, by (text, creation
        stamp): all of them, or ``None`` when the first is not there (one statement inserts a
        batch, so it landed whole or not at all). The stamp is taken to the millisecond when
        the card is built, so an equal pair is this write's own row, not an earlier one."""
        first_text, first_created = written[0]
        mine = {(c.content, c.created_at): c
                for c in self._list(case, owner, {"created": first_created}, 500)}
        if (first_text, first_created) not in mine:
            return None
        if len(written) > 1:
            mine = {(c.content, c.created_at): c for c in self._list(case, owner, None, 500)}
        try:
            return [mine[w] for w in written]
        except KeyError:
            return None

    def spaces(self) -> set[str]:
        """Every namespace (``user_id``) that holds at least one card: one indexed query.

        The service compares them with the ledger on open, so a store whose ledger was lost or
        replaced is noticed instead of being silently merged into new cases.
        """
        from sqlalchemy import text

        engine = sql_engine(self.memory)
        if engine is None:  # not an SQL store: page through every row instead
            seen: set[str] = set()
            offset = 0
            with LOCK:
                while True:
                    rows = self.memory.get_all(limit=1000, offset=offset)["results"]
                    seen |= {str(r.get("user_id") or "") for r in rows}
                    if len(rows) < 1000:
                        return seen
                    offset += 1000

        def read() -> set[str]:
            with LOCK, engine.connect() as conn:
                try:
                    rows = conn.execute(
                        text(f"SELECT DISTINCT `user_id` FROM `{self.settings.collection}`")
                    ).fetchall()
                except Exception as exc:  # noqa: BLE001 - no card table yet: nothing stored
                    if "doesn't exist" in str(exc) or "not exist" in str(exc):
                        return set()
                    raise
            return {str(r[0] or "") for r in rows}

        return set(self._retry(read, "listing namespaces"))

    # -- mapping -----------------------------------------------------------------------------
    @classmethod
    def _scored(cls, row: dict[str, Any], case_id: str) -> MemoryCard:
        # PowerMem reports 1 - d/2 for cosine distance d = 1 - cos; the bureau speaks cosine.
        score = 2.0 * float(row.get("score") or 0.0) - 1.0
        return cls._card(row, case_id, round(score, 6))  # built once, not copied to add a score

    @staticmethod
    def _card(row: dict[str, Any], case_id: str, score: float | None = None) -> MemoryCard:
        meta = row.get("metadata") or {}
        owner = str(row.get("agent_id"))
        tiers = read_labels(meta, owner)  # cards written before tiers existed read by one rule
        return MemoryCard(
            id=str(row["id"]),
            case_id=case_id,
            owner=str(row.get("agent_id")),
            visibility=meta.get("visibility", "private"),
            topic=meta.get("topic", "general"),
            kind=meta.get("kind", "note"),
            content=row.get("memory") if row.get("memory") is not None else row.get("content", ""),
            created_at=meta.get("created") or _ts(row.get("created_at")),
            source_role=meta.get("source_role"),
            source_id=meta.get("source_id"),
            content_hash=meta.get("content_hash"),
            seed_key=meta.get("seed_key"),
            sensitivity=meta.get("sensitivity"),
            info_type=meta.get("info_type"),
            abstraction=meta.get("abstraction"),
            tier=tiers.tier,
            provenance=tiers.provenance,
            trust=tiers.trust,
            promoted_from=meta.get("promoted_from"),
            tool_source=meta.get("tool_source"),
            copied_from=meta.get("copied_from"),
            score=score,
        )


def _matches(meta: Any, where: dict[str, Any]) -> bool:
    """An opened row's labels hold every ``where`` equality."""
    if not where:
        return True
    labels = meta if isinstance(meta, dict) else {}
    return all(labels.get(k) == v for k, v in where.items())


_JITTER = threading.local()
os.register_at_fork(after_in_child=lambda: _JITTER.__dict__.clear())  # a child draws its own


def _jitter_rng() -> np.random.Generator:
    """This thread's generator for query jitter, seeded once from the OS (a Generator is not
    thread-safe; a fresh one per query cost ~0.05 ms of OS entropy and seeding)."""
    rng = getattr(_JITTER, "rng", None)
    if rng is None:
        rng = _JITTER.rng = np.random.default_rng()
    return rng
