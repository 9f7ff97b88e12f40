"""MemoryGateway: the only module that touches PowerMem and seekdb.

Everything above this line of code speaks in cases, roles and cards; everything below it is
PowerMem. The gateway's job is to make the storage's sharp edges impossible to hit by accident:

* every call is scoped by case (PowerMem ``user_id``) *and* role (``agent_id``); PowerMem's own
  get/delete by id would touch any row, so the gateway checks case and owner first;
* every returned row is checked again against the scope that was asked for (a filter bug must
  surface as ``BoundaryViolation``, not as a quiet leak);
* calls are serialised by one process-wide lock (PowerMem crashes the process under threads);
* a second data path in one process is refused (PowerMem would silently reuse the first store);
* search is vector-only and PowerMem's "intelligent memory" is off;
* PowerMem's log and audit files go under the data directory and no stray ``.env`` is read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from .embedding import Encoder, HashEncoder, OpenAICompatibleEncoder, shared_minilm
from .errors import BoundaryViolation, ConfigurationError, StoreAlreadyOpenError
from .model import CaseSpace, MemoryCard
from .settings import Settings

log = logging.getLogger(__name__)

_LOCK = threading.RLock()
"""One lock for every PowerMem call in this process (threads on one Memory crash seekdb)."""
_OPEN: dict[str, Any] = {}
"""The store this process has opened: {"key": ..., "memory": Memory, "encoder": Encoder}."""
_ACTIVE_ENCODER: Encoder | None = None

META_KEYS = (
    "visibility", "topic", "kind", "source_role", "source_id", "content_hash", "seed_key", "created"
)


def _ids(case: CaseSpace) -> tuple[str, str]:
    """(case id for labels, store namespace for filters). Only a CaseSpace names a namespace:
    a bare case id would address whichever incarnation once used it."""
    if not isinstance(case, CaseSpace):
        raise TypeError(f"the gateway takes a CaseSpace (case.space), not {type(case).__name__}")
    return case.case_id, case.store_id


def _make_encoder(settings: Settings) -> Encoder:
    """The encoder ``settings.embedder`` names. The network one only when named exactly:
    anything else is refused (Settings validates too; this guards a bypassed Settings)."""
    from .settings import EMBEDDERS, keep_libraries_offline

    keep_libraries_offline()  # before onnxruntime can be imported (MiniLM, pyseekdb)
    if settings.embedder == "minilm":
        return shared_minilm()
    if settings.embedder == "hash":
        return HashEncoder()
    if settings.embedder == "openai":
        return OpenAICompatibleEncoder(
            settings.embedding_model,
            settings.embedding_dims,
            settings.embedding_base_url,
            settings.embedding_api_key_env,
        )
    raise ConfigurationError(
        f"embedder={settings.embedder!r} is not a known choice.",
        f"Valid values: {', '.join(repr(e) for e in EMBEDDERS)}.",
    )


def _store_key(settings: Settings) -> str:
    if settings.store == "embedded":
        return f"embedded:{settings.seekdb_path}"
    s = settings.server
    return f"server:{s.host}:{s.port}/{s.db_name}"


def _import_powermem(settings: Settings) -> Any:
    """Import PowerMem with logging pointed into the data directory, no .env lookup and no
    network fallback: nothing PowerMem or seekdb would do on their own may leave the machine."""
    from .fsutil import private_dir, silence_seekdb_telemetry
    from .settings import keep_libraries_offline

    keep_libraries_offline()
    logs = private_dir(settings.data_dir / "logs")
    if settings.store == "embedded":
        private_dir(settings.seekdb_path)  # seekdb's data, logs and socket: owner-only folder
        silence_seekdb_telemetry(settings.seekdb_path)
    # PowerMem reads these at import time; the defaults write ./logs/powermem.log at DEBUG.
    os.environ["LOGGING_FILE"] = str(logs / "powermem.log")
    os.environ["LOGGING_LEVEL"] = "WARNING"
    os.environ["LOGGING_CONSOLE_ENABLED"] = "false"
    os.environ["LOGGING_MAX_SIZE"] = "10MB"
    os.environ["LOGGING_BACKUP_COUNT"] = "2"
    logging.getLogger("sqlglot").setLevel(logging.ERROR)

    import powermem
    import powermem.config_loader as pm_config_loader
    import powermem.core.memory as pm_memory
    import powermem.settings as pm_settings
    from pydantic_settings import BaseSettings
    from pyobvector.client.ob_client import ObClient

    # Never read a .env that happens to lie in the cwd or any parent directory. PowerMem binds
    # the path it found at import three times: the module global (settings.py:29), the default
    # of settings_config() (settings.py:36, used by every settings class and by any built
    # later), and config_loader's own copy (config_loader.py:20), which
    # _load_dotenv_if_available() (config_loader.py:24-44, called by load_config_from_env)
    # loads into os.environ -- along with any file $POWERMEM_ENV_FILE names.
    pm_settings._DEFAULT_ENV_FILE = None
    defaults = pm_settings.settings_config.__defaults__
    if defaults and len(defaults) == 4:  # (env_prefix, extra, arbitrary_types_allowed, env_file)
        pm_settings.settings_config.__defaults__ = (*defaults[:3], None)
    pm_config_loader._DEFAULT_ENV_FILE = None
    pm_config_loader._load_dotenv_if_available = lambda: None
    todo = list(BaseSettings.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("powermem"):
            cls.model_config["env_file"] = None
    # When embedded seekdb reports a lock, Memory() asks $POWERMEM_API_URL (or
    # $POWERMEM_BASE_URL, else http://localhost:8848) for /system/health and, if it answers,
    # sends every later add/search/get/delete there over HTTP (core/memory.py:122-147, used
    # at :624-638). The bureau's store is the one it opened or none: the lock error surfaces.
    pm_memory._HTTPMemoryClient.from_env_if_healthy = classmethod(lambda cls: None)
    # Embedded seekdb rebuilds the whole vector index after every upsert (10-14 s per update);
    # new rows are visible to filtered searches without it.
    ObClient._flush_seekdb_index = lambda self: None
    _register_embedder()
    return powermem


def _register_embedder() -> None:
    """Expose the bureau's encoder to PowerMem as the embedder provider ``bureau``."""
    if "_PowerMemEncoder" in globals():
        return
    from powermem.integrations.embeddings.base import EmbeddingBase
    from powermem.integrations.embeddings.config.base import BaseEmbedderConfig

    class _BureauEmbedderConfig(BaseEmbedderConfig):
        _provider_name = "bureau"
        _class_path = "bureau.gateway._PowerMemEncoder"

    class _PowerMemEncoder(EmbeddingBase):
        def embed(self, text: str, memory_action: Any = None) -> list[float]:
            assert _ACTIVE_ENCODER is not None
            # PowerMem's own search (the benchmark's baseline) embeds its query with
            # memory_action="search": like every query, never through the shared cache.
            cache = memory_action != "search"
            return _ACTIVE_ENCODER.embed([text], cache=cache)[0].tolist()

        def embed_batch(self, texts: list[str], memory_action: Any = None) -> list[list[float]]:
            assert _ACTIVE_ENCODER is not None
            return _ACTIVE_ENCODER.embed(texts).tolist()

    globals()["_BureauEmbedderConfig"] = _BureauEmbedderConfig
    globals()["_PowerMemEncoder"] = _PowerMemEncoder


def _powermem_config(settings: Settings, dims: int) -> dict[str, Any]:
    data = str(settings.data_dir)
    vector: dict[str, Any] = {
        "collection_name": settings.collection,
        "embedding_model_dims": dims,
        "vidx_metric_type": "cosine",
        "hybrid_search": False,
    }
    if settings.store == "embedded":
        vector.update(host="", ob_path=str(settings.seekdb_path), db_name="test")
    else:
        s = settings.server
        vector.update(
            host=s.host, port=str(s.port), user=s.user, password=s.password, db_name=s.db_name
        )
    return {
        "vector_store": {"provider": "oceanbase", "config": vector},
        "llm": {"provider": "noop", "config": {}},
        "embedder": {"provider": "bureau", "config": {"embedding_dims": dims}},
        "intelligent_memory": {"enabled": False},
        "audit": {"enabled": False, "log_file": os.path.join(data, "logs", "audit.log")},
    }


_CREATE_RACE = ("already exists", "has vector index", "Duplicate key name")


def _new_memory(powermem: Any, settings: Settings, config: dict[str, Any]) -> Any:
    """``Memory(config)``, surviving the first-start race of several instances on one server.

    PowerMem checks whether the card table exists, then creates it and its indexes: two service
    instances opening a fresh server at the same moment both try, and the slower one fails with
    "Table ... already exists" (1050) or "create vector index on column has vector index"
    (1235). By then the table is there, so opening again succeeds.
    """
    for attempt in range(5):
        try:
            return powermem.Memory(config=config)
        except Exception as exc:
            raced = any(m in str(exc) for m in _CREATE_RACE)
            if settings.store != "server" or not raced or attempt == 4:
                raise
            log.info("card table created concurrently by another instance; opening again")
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def _sql_engine(memory: Any) -> Any:
    """The SQLAlchemy engine under PowerMem's OceanBase/seekdb store (None if it has none)."""
    return getattr(getattr(memory.storage.vector_store, "obvector", None), "engine", None)


def _keep_one_connection(memory: Any) -> None:
    """Hold embedded seekdb's one connection open instead of reopening it for every statement.

    pyobvector builds the embedded engine on SQLAlchemy's ``NullPool``: each statement checks
    out a new DBAPI wrapper, which opens a seekdb connection, sends ``SET NAMES``, runs the
    statement and closes the connection again -- a third of a card search's time. Every
    wrapper shares the client's single seekdb connection anyway (so closing it under a second
    thread was a race the gateway lock hid); a ``StaticPool`` keeps that connection for the
    life of the store.
    """
    from sqlalchemy.pool import NullPool, StaticPool

    engine = _sql_engine(memory)
    pool = getattr(engine, "pool", None)
    if engine is None or not isinstance(pool, NullPool):
        return
    engine.pool = StaticPool(
        pool._creator,
        recycle=pool._recycle,
        echo=pool.echo,
        logging_name=pool._orig_logging_name,
        reset_on_return=pool._reset_on_return,
        pre_ping=pool._pre_ping,
        _dispatch=pool.dispatch,
        dialect=pool._dialect,
    )


def _index_cases(memory: Any, table: str) -> None:
    """Index the case column, so a scoped search reads one case's rows, not the whole table.

    Every read the gateway makes filters on ``user_id`` (the case). Without an index seekdb's
    pre-filtered vector scan evaluates that filter on every row of every case: a search got
    slower with each case the store held (the MAGPIE lab writes 200). With it the scan reads
    only the case's range and returns the same cards (checked against exact top-k in the tests).
    An index on (case, role) would narrow it further, but seekdb's scan over two ranges of such
    an index returned fewer rows than asked for, so the role filter stays a filter.
    """
    from sqlalchemy import text

    engine = _sql_engine(memory)
    if engine is None:
        return
    name = f"idx_{table}_case"[:64]
    with _LOCK, engine.connect() as conn:
        # Key_name is SHOW INDEX's third column (embedded seekdb names result columns column_N).
        have = conn.execute(text(f"SHOW INDEX FROM `{table}`")).fetchall()
        if any(str(row[2]) == name for row in have):
            return
        try:
            conn.execute(text(f"CREATE INDEX `{name}` ON `{table}` (`user_id`)"))
        except Exception as exc:  # noqa: BLE001 - another instance created it first
            if "Duplicate key name" not in str(exc):
                raise
        conn.commit()


# -- disk footprint (embedded seekdb) -------------------------------------------------------------
_SEEKDB_LOG_PARAMETERS = (("syslog_level", "WARN"), ("max_syslog_file_count", "1"))
"""seekdb parameters set on every embedded open (read back first, written only when different).

seekdb's own level is EDIAG, i.e. every INFO line: 11-28 MB per ``python -m bureau demo``.
WARN keeps warnings and errors. seekdb restarts at EDIAG whatever was set (the file count is
kept), hence every open. One rotated file at most instead of two (256 MB each)."""
_SEEKDB_LOG_TRIM_AT = 4 * 2**20
_SEEKDB_LOG_KEEP = 2**20
"""An open cuts ``seekdb.log`` beyond 4 MiB to its last MiB, plus up to a MiB of the newest
WARN and ERROR lines from the part it drops (the previous sessions' problems stay readable)."""


def _bound_disk_footprint(memory: Any, settings: Settings) -> None:
    """Keep an embedded store's data directory small, and flat however often it is reopened.

    Measured on a fresh store (``du -sb``): 178 MB, of which 134 MB redo and 34 MB data file,
    both preallocated and then stable, and 10 MB of ``seekdb/log``. The log was what grew:
    11-90 MB per reopen or demo, up to ~770 MB before seekdb's own rotation caps it. Two
    sources, two measures:

    * **while the store is open** seekdb logs every INFO line: set WARN for the life of the
      process (see :data:`_SEEKDB_LOG_PARAMETERS`); a demo then adds ~0.1 MB, not 11-28 MB.
    * **while seekdb starts**, before any SQL can run, it logs at its default level, and a small
      store replays all redo since it was created (seekdb checkpoints under memory pressure
      only), logging the replay: 6-90 MB per start. pylibseekdb starts seekdb with fixed
      arguments and an empty environment, so no option reaches that phase; the log is cut
      here, right after, to its last lines and its warnings (:func:`_trim_seekdb_log`).

    Not done: a checkpoint (``ALTER SYSTEM MINOR FREEZE``) per open would shorten the replay,
    but dumping a demo's cards grew the data file from 32 to 64 MiB (measured), more than the
    log it saves on disk.

    A server store (``settings.store == "server"``) is someone else's: nothing is changed there.
    Never fails the open: a parameter a future seekdb refuses is logged and skipped.
    """
    if settings.store != "embedded":
        return
    engine = _sql_engine(memory)
    if engine is not None:
        _quiet_embedded_seekdb(engine)
    _trim_seekdb_log(settings.seekdb_path / "log")


def _quiet_embedded_seekdb(engine: Any) -> None:
    """Set :data:`_SEEKDB_LOG_PARAMETERS` where seekdb holds other values."""
    from sqlalchemy import text

    with _LOCK, engine.connect() as conn:
        for name, value in _SEEKDB_LOG_PARAMETERS:
            try:
                # SHOW PARAMETERS row: zone, name, data_type, value, ... (columns are unnamed)
                rows = conn.execute(text(f"SHOW PARAMETERS LIKE '{name}'")).fetchall()
                if rows and str(rows[0][3]).upper() == value.upper():
                    continue
                literal = value if value.isdigit() else f"'{value}'"
                conn.execute(text(f"ALTER SYSTEM SET {name} = {literal}"))
            except Exception as exc:  # noqa: BLE001 - a smaller footprint is not worth an error
                log.warning("embedded seekdb: could not set %s=%s (%s)", name, value, exc)
        conn.commit()


def _trim_seekdb_log(log_dir: str | os.PathLike[str]) -> None:
    """Delete rotated seekdb logs and cut ``seekdb.log`` back to its tail when it is large.

    Safe while seekdb runs: rotated files (``seekdb.log.<timestamp>``) are closed, and seekdb
    holds ``seekdb.log`` with ``O_APPEND`` (``/proc/<pid>/fdinfo`` flags 02102001), so after the
    cut its next line lands at the new end instead of leaving a hole. Only lines seekdb writes
    in the instant between reading the tail and the cut are lost; at WARN there are few.
    """
    import re
    from pathlib import Path

    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        return
    for path in log_dir.iterdir():
        if re.search(r"\.log(\.wf)?\.\d{8,}$", path.name):
            path.unlink(missing_ok=True)
    active = log_dir / "seekdb.log"
    try:
        size = active.stat().st_size
        if size <= _SEEKDB_LOG_TRIM_AT:
            return
        with open(active, "r+b") as f:
            f.seek(size - _SEEKDB_LOG_KEEP)
            f.readline()  # cut at a line start
            cut = f.tell()
            kept = _problem_lines(f, cut)
            f.seek(cut)
            tail = f.read()  # up to seekdb's latest line
            f.truncate(0)
        note = f"[bureau] cut {cut - len(kept)} bytes of older seekdb log (kept WARN/ERROR)\n"
        with open(active, "ab") as f:
            f.write(note.encode() + kept + tail)
    except OSError as exc:
        log.warning("could not trim %s (%s)", active, exc)


def _problem_lines(f: Any, end: int) -> bytes:
    """The newest MiB of WARN and ERROR lines in ``f`` before ``end``, read in 8 MiB chunks.

    ``bytes.find`` for the level markers, not a line regex: 200 MB of trace took 0.7 s instead
    of 3.3 s (such lines are rare; INFO is almost everything).
    """
    found: list[tuple[int, bytes]] = []
    carry = b""
    f.seek(0)
    pos = 0
    while pos < end:
        chunk = f.read(min(8 * 2**20, end - pos))
        if not chunk:
            break
        pos += len(chunk)
        data = carry + chunk
        whole = data.rfind(b"\n") + 1
        data, carry = data[:whole], data[whole:]
        base = pos - len(carry) - len(data)
        for marker in (b"] WARN ", b"] ERROR "):
            i = data.find(marker)
            while i != -1:
                start = data.rfind(b"\n", 0, i) + 1
                stop = data.find(b"\n", i) + 1
                if data.startswith(b"[", start) and data.find(b"] ", start) == i:  # the level
                    found.append((base + start, data[start:stop]))
                i = data.find(marker, stop)
    kept = b"".join(line for _, line in sorted(found))
    if len(kept) > _SEEKDB_LOG_KEEP:
        kept = kept[-_SEEKDB_LOG_KEEP:]
        kept = kept[kept.find(b"\n") + 1 :]
    return kept


def _check_row(row: dict[str, Any], uid: str, owner: str | None, what: str) -> dict[str, Any]:
    """A row the store returned must lie in the scope that was asked for: a filter bug surfaces
    as ``BoundaryViolation``, never as a quiet leak. (The one copy of this check.)"""
    if row.get("user_id") != uid or (owner is not None and row.get("agent_id") != owner):
        raise BoundaryViolation(
            f"A {what} scoped to {uid}/{owner or '*'} returned a row of "
            f"{row.get('user_id')}/{row.get('agent_id')}."
        )
    return row


def _ts(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value or "")


class MemoryGateway:
    """Scoped access to the card store. Obtain it with :meth:`open`, never construct twice."""

    def __init__(self, settings: Settings, memory: Any, encoder: Encoder) -> None:
        self.settings = settings
        self.memory = memory
        self.encoder = encoder
        self.store_key = _store_key(settings)

    @property
    def sql_engine(self) -> Any:
        """The store's SQLAlchemy engine, for tests that check the store's own state."""
        return _sql_engine(self.memory)

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def open(cls, settings: Settings) -> MemoryGateway:
        global _ACTIVE_ENCODER
        key = _store_key(settings)
        with _LOCK:
            if _OPEN:
                if _OPEN["key"] != key or _OPEN["collection"] != settings.collection:
                    raise StoreAlreadyOpenError(
                        f"This process already uses the store {_OPEN['key']} "
                        f"(collection {_OPEN['collection']}); it cannot also open {key} "
                        f"(collection {settings.collection}): PowerMem would silently keep "
                        "using the first one."
                    )
                return cls(settings, _OPEN["memory"], _OPEN["encoder"])
            from .fsutil import private_data_dir

            private_data_dir(settings.data_dir)  # 0700: cards, ledger and logs are private text
            if not os.access(settings.data_dir, os.W_OK):
                raise ConfigurationError(
                    f"The data directory {settings.data_dir} is not writable.",
                    "Pass Bureau.open(data_dir=...) or set BUREAU_DATA_DIR to a writable folder.",
                )
            encoder = _make_encoder(settings)
            _ACTIVE_ENCODER = encoder
            powermem = _import_powermem(settings)
            from .fsutil import private_umask

            with private_umask():  # seekdb's server keeps the umask it starts with: 0600 files
                memory = _new_memory(powermem, settings, _powermem_config(settings, encoder.dims))
            if settings.store == "embedded":
                _keep_one_connection(memory)
            _index_cases(memory, settings.collection)
            _bound_disk_footprint(memory, settings)
            _OPEN.update(key=key, collection=settings.collection, memory=memory, encoder=encoder)
            return cls(settings, memory, encoder)

    # -- writes ------------------------------------------------------------------------------
    def add(
        self, case: CaseSpace, owner: str, content: str, meta: dict[str, Any]
    ) -> MemoryCard:
        case_id, uid = _ids(case)
        metadata = {k: v for k, v in meta.items() if k in META_KEYS and v is not None}
        metadata.setdefault("created", datetime.now().isoformat(timespec="milliseconds"))
        with _LOCK:
            r = self.memory.add(content, user_id=uid, agent_id=owner, metadata=metadata,
                                infer=False)
        card_id = str(r["results"][0]["id"])
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
            with _LOCK:
                ids = storage.vector_store.insert(
                    vectors[start : start + len(chunk)].tolist(), rows
                )
            if len(ids) != len(rows):
                raise BoundaryViolation(f"Bulk insert returned {len(ids)} ids for {len(rows)} rows.")
            cards += [
                self._card({"id": str(i), "memory": row["data"], "user_id": uid,
                            "agent_id": owner, "metadata": row["metadata"]}, case_id)
                for i, row in zip(ids, rows, strict=True)
            ]
        return cards

    def delete(self, case: CaseSpace, owner: str, card_id: str) -> bool:
        """Delete one card, but only if it belongs to this case and owner (False: not there)."""
        _, uid = _ids(case)
        with _LOCK:
            if self.get(case, owner, card_id) is None:
                return False
            return bool(self.memory.delete(int(card_id), user_id=uid, agent_id=owner))

    def delete_or_gone(self, case: CaseSpace, owner: str, card_id: str) -> bool:
        """True once the card is not in the store any more (deleted now, or already gone)."""
        with _LOCK:
            return self.delete(case, owner, card_id) or self.get(case, owner, card_id) is None

    def purge_case(self, case: CaseSpace, max_rounds: int = 100) -> int:
        """Delete every card of a case namespace and verify none is left (PowerMem's delete_all
        leaves rows)."""
        return self.purge_space(_ids(case)[1], max_rounds)

    def purge_space(self, uid: str, max_rounds: int = 100) -> int:
        """Delete every card stored under one namespace (``user_id``), verified."""
        deleted = 0
        with _LOCK:
            for _ in range(max_rounds):
                rows = self.memory.get_all(user_id=uid, limit=500, offset=0)["results"]
                if not rows:
                    break
                for row in rows:
                    _check_row(row, uid, None, "purge")
                    if self.memory.delete(int(row["id"]), user_id=uid, agent_id=row.get("agent_id")):
                        deleted += 1
            left = int(self.memory.count_all(user_id=uid))
        if left:
            raise BoundaryViolation(f"{left} cards of {uid} survived deletion.")
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
        jitter = np.random.default_rng().uniform(-(2.0**-21), 2.0**-21, vec.shape)
        vec = (vec * (1.0 + jitter)).astype(np.float32)
        return vec, (time.perf_counter() - start) * 1000

    def search_scope(
        self, case: CaseSpace, owner: str, vector: np.ndarray, limit: int
    ) -> tuple[list[MemoryCard], float]:
        """Vector search in one owner's space of one case; returns (cards with scores, ms)."""
        case_id, uid = _ids(case)
        start = time.perf_counter()
        with _LOCK:
            rows = self.memory.storage.search_memories(
                query_embedding=vector.tolist(), user_id=uid, agent_id=owner, limit=limit
            )
        ms = (time.perf_counter() - start) * 1000
        return [self._scored(_check_row(row, uid, owner, "search"), case_id) for row in rows], ms

    def search_scopes(
        self, case: CaseSpace, owners: Sequence[str], vector: np.ndarray, limit_per_scope: int
    ) -> tuple[dict[str, list[MemoryCard]], float]:
        """Each owner's own top ``limit_per_scope`` cards; returns them and the search's ms.

        Every scope gets its own top-k, whatever the others hold: a role with many similar notes
        of its own must not push a relevant board copy out of the results (one filtered query
        with ``agent_id IN (...)`` and a shared limit did exactly that).

        Speed without changing the answer: one SQL statement holds one sub-query per scope --
        each exactly the query PowerMem's own search sends (same filter, same distance, same
        ``APPROXIMATE LIMIT``) -- joined by ``UNION ALL``. That is one round trip instead of one
        per scope, and it skips PowerMem's per-call query building (about 4 ms a search). The
        tests compare it card for card with PowerMem's per-scope search.
        """
        case_id, uid = _ids(case)
        wanted = list(dict.fromkeys(owners))
        k = int(limit_per_scope)
        engine = _sql_engine(self.memory)
        if engine is None:  # not an SQL store: one PowerMem search per scope
            start = time.perf_counter()
            found = {o: self.search_scope(case, o, vector, k)[0] for o in wanted}
            return found, (time.perf_counter() - start) * 1000
        from sqlalchemy import text

        vs = self.memory.storage.vector_store
        cols = [vs.text_field, vs.metadata_field, vs.primary_field, "user_id", "agent_id",
                "created_at"]
        # The vector literal exactly as pyobvector writes it, so distances are identical.
        lit = "[" + ",".join(str(np.float32(v)) for v in vector.tolist()) + "]"
        inner = ", ".join(f"`{c}`" for c in cols)
        parts = [
            f"(SELECT {inner}, cosine_distance(`{vs.vector_field}`, '{lit}') AS _dist"
            f" FROM `{vs.collection_name}` WHERE `user_id` = :uid AND `agent_id` = :a{i}"
            f" ORDER BY cosine_distance(`{vs.vector_field}`, '{lit}') APPROXIMATE LIMIT {k})"
            for i in range(len(wanted))
        ]
        # Embedded seekdb's driver only reads a result whose statement starts with SELECT, and
        # names its columns itself: select them again, by position, from the union.
        sql = (f"SELECT {', '.join(f'u.`{c}`' for c in [*cols, '_dist'])} FROM ("
               + " UNION ALL ".join(parts) + ") AS u")
        params = {"uid": uid, **{f"a{i}": o for i, o in enumerate(wanted)}}
        start = time.perf_counter()
        with _LOCK, engine.connect() as conn:
            rows = conn.execute(text(sql), params).fetchall()
        ms = (time.perf_counter() - start) * 1000
        out: dict[str, list[tuple[float, MemoryCard]]] = {o: [] for o in wanted}
        for content, meta, row_id, row_uid, owner, created, dist in rows:
            if owner not in out:
                raise BoundaryViolation(f"A search scoped to {uid}/{wanted} returned a row of "
                                        f"{row_uid}/{owner}.")
            row = _check_row({
                "id": row_id, "memory": content, "user_id": row_uid, "agent_id": owner,
                "metadata": json.loads(meta) if isinstance(meta, str | bytes) else (meta or {}),
                "created_at": created,
                # PowerMem's similarity for cosine distance d, so _scored reads both paths alike
                "score": max(0.0, 1.0 - float(dist) / 2.0),
            }, uid, owner, "search")
            out[owner].append((float(dist), self._scored(row, case_id)))
        found = {o: [c for _, c in sorted(hits, key=lambda h: h[0])][:k] for o, hits in out.items()}
        return found, ms

    def raw_search(
        self, case: CaseSpace, owner: str, query: str, limit: int
    ) -> list[dict[str, Any]]:
        """PowerMem's own ``Memory.search``: the benchmark's baseline, not used by the service."""
        _, uid = _ids(case)
        with _LOCK:
            return self.memory.search(query, user_id=uid, agent_id=owner, limit=limit)["results"]

    def raw_add(self, case: CaseSpace, owner: str, content: str) -> str:
        """PowerMem's own ``Memory.add``: the benchmark's baseline for publish."""
        _, uid = _ids(case)
        with _LOCK:
            r = self.memory.add(content, user_id=uid, agent_id=owner, infer=False)
        return str(r["results"][0]["id"])

    def get(self, case: CaseSpace, owner: str, card_id: str) -> MemoryCard | None:
        case_id, uid = _ids(case)
        if type(card_id) is not str or not card_id.isascii() or not card_id.isdigit():
            return None  # ids are decimal integers; anything else names no card
        with _LOCK:
            row = self.memory.get(int(card_id), user_id=uid, agent_id=owner)
        if row is None or row.get("user_id") != uid or row.get("agent_id") != owner:
            return None
        return self._card(row, case_id)

    def list(
        self,
        case: CaseSpace,
        owner: str | None = None,
        where: dict[str, Any] | None = None,
        page: int = 500,
    ) -> list[MemoryCard]:
        """All cards of a case (optionally of one owner, optionally matching metadata), oldest first."""
        case_id, uid = _ids(case)
        out: list[MemoryCard] = []
        offset = 0
        with _LOCK:
            while True:
                rows = self.memory.get_all(
                    user_id=uid, agent_id=owner, filters=where or None, limit=page, offset=offset,
                    sort_by="id", order="asc",
                )["results"]
                out += [self._card(_check_row(row, uid, owner, "list"), case_id) for row in rows]
                if len(rows) < page:
                    return out
                offset += page

    def count(self, case: CaseSpace, owner: str | None = None) -> int:
        _, uid = _ids(case)
        with _LOCK:
            return int(self.memory.count_all(user_id=uid, agent_id=owner))

    def spaces(self) -> set[str]:
        """Every namespace (``user_id``) that holds at least one card: one indexed query.

        The service compares them with the ledger on open, so a store whose ledger was lost or
        replaced is noticed instead of being silently merged into new cases.
        """
        from sqlalchemy import text

        engine = _sql_engine(self.memory)
        if engine is None:  # not an SQL store: page through every row instead
            seen: set[str] = set()
            offset = 0
            with _LOCK:
                while True:
                    rows = self.memory.get_all(limit=1000, offset=offset)["results"]
                    seen |= {str(r.get("user_id") or "") for r in rows}
                    if len(rows) < 1000:
                        return seen
                    offset += 1000
        with _LOCK, engine.connect() as conn:
            try:
                rows = conn.execute(
                    text(f"SELECT DISTINCT `user_id` FROM `{self.settings.collection}`")
                ).fetchall()
            except Exception as exc:  # noqa: BLE001 - no card table yet: nothing stored
                if "doesn't exist" in str(exc) or "not exist" in str(exc):
                    return set()
                raise
        return {str(r[0] or "") for r in rows}

    # -- mapping -----------------------------------------------------------------------------
    @classmethod
    def _scored(cls, row: dict[str, Any], case_id: str) -> MemoryCard:
        # PowerMem reports 1 - d/2 for cosine distance d = 1 - cos; the bureau speaks cosine.
        score = 2.0 * float(row.get("score") or 0.0) - 1.0
        return cls._card(row, case_id).with_score(round(score, 6))

    @staticmethod
    def _card(row: dict[str, Any], case_id: str) -> MemoryCard:
        meta = row.get("metadata") or {}
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
        )
