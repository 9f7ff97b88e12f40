"""Opening PowerMem over seekdb: the storage layer's setup, and with the gateway the only code
that imports ``powermem``/``pyseekdb``.

Everything here exists because of a measured sharp edge (see ``shared/notes/powermem-seekdb.md``):
one lock for every call (threads on one ``Memory`` crash seekdb), one store per process (a second
data path silently reuses the first), no ``.env`` and no network fallback, logs under the data
directory and bounded, the case column indexed, embedded seekdb's connection kept open.
:class:`~bureau.storage.gateway.MemoryGateway` builds on :func:`open_store`.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from functools import lru_cache
from typing import Any

from ..embedding import Encoder
from ..errors import ConfigurationError, StoreAlreadyOpenError
from ..settings import Settings

log = logging.getLogger(__name__)

LOCK = threading.RLock()
"""One lock for every PowerMem call in this process (threads on one Memory crash seekdb)."""
_OPEN: dict[str, Any] = {}
"""The store this process has opened: {"key": ..., "memory": Memory, "encoder": Encoder}."""
_ACTIVE_ENCODER: Encoder | None = None

def store_key(settings: Settings) -> str:
    if settings.store == "embedded":
        return f"embedded:{settings.seekdb_path}"
    s = settings.server
    return f"server:{s.host}:{s.port}/{s.db_name}"


def _import_powermem(settings: Settings) -> Any:
    """Import PowerMem with logging pointed into the data directory, no .env lookup and no
    network fallback: nothing PowerMem or seekdb would do on their own may leave the machine."""
    from ..settings import keep_libraries_offline
    from .files import private_dir, silence_seekdb_telemetry

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
        _class_path = "bureau.storage.setup._PowerMemEncoder"

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


def sql_engine(memory: Any) -> Any:
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

    engine = sql_engine(memory)
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


def scope_index(table: str) -> str:
    """The name of the (case, role) index: searches name it in a hint (:func:`_index_cases`)."""
    return f"idx_{table}_scope"[:64]


def _index_cases(memory: Any, table: str) -> None:
    """Index the case column, so a scoped search reads one case's rows, not the whole table.

    Every read the gateway makes filters on ``user_id`` (the case). Without an index seekdb's
    pre-filtered vector scan evaluates that filter on every row of every case: a search got
    slower with each case the store held (the MAGPIE lab writes 200). With it the scan reads
    only the case's range and returns the same cards (checked against exact top-k in the tests).
    A second index on (case, role) narrows each scope's scan to that scope's own rows. Without
    it a role's search time grew with the cards *other roles* of its case held (a detective's
    own-scope search: 1.0 ms beside a suspect with 4 cards, 2.0 ms beside one with 304), and
    that time reaches the role's X-ray: a count it must not learn. Every gateway search asks one
    scope per sub-query (one equality range; seekdb's scan over *two* ranges of such an index,
    ``agent_id IN (...)``, once returned fewer rows than asked for, which is why each scope has
    its own sub-query). seekdb's planner leaves the index unused for the gateway's statement
    (a union of ordered sub-queries), so each sub-query names it in a hint; with the hint the
    same search costs the same beside 4 or 304 cards of another role, and returns the same
    cards (the tests compare it with PowerMem's search and with an exact top-k).
    """
    from sqlalchemy import text

    engine = sql_engine(memory)
    if engine is None:
        return
    wanted = {f"idx_{table}_case"[:64]: "`user_id`",
              scope_index(table): "`user_id`, `agent_id`"}
    with LOCK, engine.connect() as conn:
        # Key_name is SHOW INDEX's third column (embedded seekdb names result columns column_N).
        have = {str(row[2]) for row in conn.execute(text(f"SHOW INDEX FROM `{table}`"))}
        for name, columns in wanted.items():
            if name in have:
                continue
            try:
                conn.execute(text(f"CREATE INDEX `{name}` ON `{table}` ({columns})"))
            except Exception as exc:  # noqa: BLE001 - another instance created it first
                if "Duplicate key name" not in str(exc):
                    raise
        conn.commit()


def versions_table(table: str) -> str:
    """The table of per-scope write versions beside the card table (:func:`_create_versions`)."""
    return f"{table}_scope_versions"[:64]


def _create_versions(memory: Any, table: str) -> None:
    """Create the scope versions table: one row per (case, role) scope, bumped by every write
    the gateway makes to that scope, so an in-process copy of a scope's vectors
    (:mod:`bureau.storage.scope_index`) can tell in the same statement as its search whether
    any process has written to the scope since the copy was made. It lives in the store, beside
    the cards it counts, so every process sharing the store (embedded or server) sees it."""
    from sqlalchemy import text

    engine = sql_engine(memory)
    if engine is None:
        return
    with LOCK, engine.connect() as conn:
        conn.execute(text(
            f"CREATE TABLE IF NOT EXISTS `{versions_table(table)}` ("
            "`user_id` VARCHAR(128) NOT NULL, `agent_id` VARCHAR(128) NOT NULL, "
            "`version` BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (`user_id`, `agent_id`))"))
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
    engine = sql_engine(memory)
    if engine is not None:
        _quiet_embedded_seekdb(engine)
    _trim_seekdb_log(settings.seekdb_path / "log")


def _quiet_embedded_seekdb(engine: Any) -> None:
    """Set :data:`_SEEKDB_LOG_PARAMETERS` where seekdb holds other values."""
    from sqlalchemy import text

    with LOCK, engine.connect() as conn:
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


_ID_SLOT: Any = None
"""The open lock file of this process's card-id slot (held until the process exits)."""


def _claim_card_id_slot(settings: Settings) -> None:
    """Give this process card ids no other process sharing the data directory can make.

    PowerMem numbers cards with a Snowflake generator whose datacenter and worker ids are 0 in
    every process (unless ``SNOWFLAKE_DATACENTER_ID``/``SNOWFLAKE_WORKER_ID`` are set), and it
    inserts with ``REPLACE INTO``: two processes adding a card in the same millisecond make the
    same id, and the second row silently *replaces* the first -- another role's card, possibly.
    (Seen: two processes writing one task scope lost cards, issue 14.) Each process therefore
    claims one of the 1024 (datacenter, worker) slots with an exclusive ``flock`` on a file
    under ``<data_dir>/id-slots``, held for its lifetime; a process that exits frees its slot.
    Instances on other hosts (a shared seekdb server, each with its own data directory) start
    from a random slot, which makes a clash unlikely but cannot rule it out.
    """
    global _ID_SLOT
    if _ID_SLOT is not None or {"SNOWFLAKE_DATACENTER_ID", "SNOWFLAKE_WORKER_ID"} & set(os.environ):
        return
    import fcntl
    import random

    import powermem.utils.utils as pm_utils

    from .files import private_dir

    slots = private_dir(settings.data_dir / "id-slots")
    start = random.randrange(1024)
    for i in range(1024):
        slot = (start + i) % 1024
        handle = open(slots / f"{slot}.lock", "a")  # noqa: SIM115 - held open on purpose
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _ID_SLOT = handle
        with pm_utils._snowflake_lock:
            pm_utils._snowflake_generator = pm_utils.SnowflakeIDGenerator(
                datacenter_id=slot >> 5, worker_id=slot & 31)
        return
    raise ConfigurationError(
        f"All 1024 card-id slots under {slots} are held by running processes.",
        "Stop some of the processes that use this data directory.")


def open_store(settings: Settings, encoder: Encoder) -> tuple[Any, Encoder]:
    """PowerMem's ``Memory`` for ``settings``, set up as above; (memory, encoder in use).

    Returns the store this process already opened when it is the same one; a different store
    or collection is refused (PowerMem would silently keep using the first).
    """
    global _ACTIVE_ENCODER
    key = store_key(settings)
    with LOCK:
        if _OPEN:
            if _OPEN["key"] != key or _OPEN["collection"] != settings.collection:
                raise StoreAlreadyOpenError(
                    f"This process already uses the store {_OPEN['key']} "
                    f"(collection {_OPEN['collection']}); it cannot also open {key} "
                    f"(collection {settings.collection}): PowerMem would silently keep "
                    "using the first one."
                )
            return _OPEN["memory"], _OPEN["encoder"]
        from .files import private_data_dir, private_umask

        private_data_dir(settings.data_dir)  # 0700: cards, ledger and logs are private text
        if not os.access(settings.data_dir, os.W_OK):
            raise ConfigurationError(
                f"The data directory {settings.data_dir} is not writable.",
                "Pass Bureau.open(data_dir=...) or set BUREAU_DATA_DIR to a writable folder.",
            )
        if settings.store == "embedded":
            from .diskspace import check_before_open

            # Too little space: say so now (seekdb would fail in its log and hang the open).
            check_before_open(settings.data_dir, settings.seekdb_path)
        _ACTIVE_ENCODER = encoder
        powermem = _import_powermem(settings)
        _claim_card_id_slot(settings)
        config = _powermem_config(settings, encoder.dims)
        if settings.store == "embedded":
            from .diskspace import watched_open

            with private_umask(), watched_open(settings.data_dir, settings.seekdb_path,
                                               settings.open_timeout_s) as watch:
                memory = watch.call(lambda: _new_memory(powermem, settings, config))
        else:
            memory = _new_memory(powermem, settings, config)
        if settings.store == "embedded":
            _keep_one_connection(memory)
        else:  # a session ended while idle in the pool (a KILL, a restart) costs a ping
            from .reconnect import pre_ping

            pre_ping(sql_engine(memory))
        _index_cases(memory, settings.collection)
        _create_versions(memory, settings.collection)
        _bound_disk_footprint(memory, settings)
        _OPEN.update(key=key, collection=settings.collection, memory=memory, encoder=encoder)
        return memory, encoder


# -- what the sealed write path needs of PowerMem and pyobvector (kept here: the storage SDKs
#    are imported by setup.py and gateway.py only) -----------------------------------------------
def new_card_ids(n: int) -> list[str]:
    """``n`` card ids drawn the way PowerMem draws them (snowflake), before the rows exist."""
    from powermem.utils.utils import generate_snowflake_id

    return [str(generate_snowflake_id()) for _ in range(n)]


def store_now() -> str:
    """The timestamp text PowerMem writes into ``created_at``/``updated_at``."""
    from powermem.utils.utils import get_current_datetime, serialize_datetime

    return serialize_datetime(get_current_datetime())


def replace_statement(table: Any, dialect: Any, rows: list[dict[str, Any]]) -> str:
    """The ``REPLACE`` of ``rows`` into ``table`` as SQLAlchemy would compile it, with the text
    the SQLAlchemy/pyobvector/pyseekdb way would send to embedded seekdb: each value through its
    column type's own bind processor (the vector's literal, the metadata's JSON), then into the
    statement by pyseekdb's ``render_sql_with_params`` (pymysql's escaping), as that way's last
    step does. Every row names the same columns; no rows, or a float that is not finite, is an
    error, not a statement seekdb would refuse or read otherwise."""
    from pyseekdb.client.sql_utils import render_sql_with_params

    if not rows:
        raise ValueError("a REPLACE needs at least one row")
    names = [c.name for c in table.columns if c.name in rows[0]]
    if any(row.keys() != rows[0].keys() for row in rows) or len(names) != len(rows[0]):
        raise ValueError("every row of one REPLACE names the same columns of its table")
    process = _bind_processors(table, dialect)
    params: list[Any] = []
    for row in rows:
        params += [row[n] if process[n] is None else process[n](row[n]) for n in names]
    if any(isinstance(p, float) and not math.isfinite(p) for p in params):
        # the renderer writes a float as str(x): a bare nan/inf, not a value seekdb would store
        raise ValueError("a REPLACE value is not a finite number")
    one = "(" + ", ".join(["%s"] * len(names)) + ")"
    sql = (f"REPLACE INTO `{table.name}` ({', '.join(f'`{n}`' for n in names)}) VALUES "
           + ", ".join([one] * len(rows)))
    return render_sql_with_params(sql, params)


@lru_cache(maxsize=8)
def _bind_processors(table: Any, dialect: Any) -> dict[str, Any]:
    return {c.name: c.type.dialect_impl(dialect).bind_processor(dialect) for c in table.columns}


@lru_cache(maxsize=1)
def quick_vector() -> type:
    """pyobvector's ``Vector`` writing its literal as :func:`.rows.vector_literal` does:
    the same float32 values, at ~0.1 ms a vector instead of ~0.3 ms (``str`` of each big-endian
    float32; issue 31 §4)."""
    from pyobvector.util.vector import Vector

    from .rows import vector_literal

    class QuickVector(Vector):
        def to_text(self) -> str:
            return vector_literal(self._value)

    return QuickVector
