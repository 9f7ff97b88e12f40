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
from .engine_state import explain_ddl_timeout, let_setup_finish_at_exit
from .footprint import bound_disk_footprint
from .schema import create_versions, index_cases, stuck

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
    _cache_empty_result_columns()
    _register_embedder()
    return powermem


def _cache_empty_result_columns() -> None:
    """Parse each statement text once for the columns of an empty result.

    pyobvector's embedded cursor answers a SELECT that returns no rows by parsing the statement
    with sqlglot to name its columns (``seekdb_engine._description_from_select``): ~5 ms a
    statement, and most of a task-scope write's time (the reads for untrusted cards it may have
    copied are usually empty: 7.7 s of the injection lab's 34 s for one scenario, profiled).
    The answer depends on the statement text alone (SQLAlchemy's, with its placeholders), so it
    is kept per text; each caller gets its own copy of the list."""
    from pyobvector.client import seekdb_engine

    parse = seekdb_engine._description_from_select
    if getattr(parse, "__wrapped__", None) is not None:
        return
    cached = lru_cache(maxsize=1024)(lambda sql: tuple(parse(sql)))

    def columns(sql: str) -> list[tuple[Any, ...]]:
        return list(cached(sql))

    columns.__wrapped__ = parse  # type: ignore[attr-defined]
    seekdb_engine._description_from_select = columns


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


def _open_embedded(powermem: Any, settings: Settings, config: dict[str, Any]) -> Any:
    """Start (or attach to) embedded seekdb, bound its DDL, then build PowerMem's ``Memory``.

    The DDL bound (``Settings.ddl_timeout_s``, seekdb's ``_ob_ddl_timeout``, 1,000 s by
    default) is set before PowerMem runs its first statement, which on a new store is the
    ``CREATE TABLE`` of the card table: no DDL of this store waits longer, whatever holds the
    lock it waits on. pylibseekdb serves one instance per process, which PowerMem's client then
    finds already open (its "initialized twice" is the expected answer)."""
    import pylibseekdb

    from ..bounds import is_timeout

    ddl = f"{settings.ddl_timeout_s}s"
    try:
        pylibseekdb.open(db_dir=str(settings.seekdb_path))
    except Exception as exc:  # noqa: BLE001 - opened earlier in this process: attach
        if "initialized twice" not in str(exc):
            raise
    conn = pylibseekdb.connect(database="test", autocommit=True)

    def rows(sql: str) -> list[tuple[Any, ...]]:
        cursor = conn.cursor()
        try:
            cursor.execute(sql)
            return [tuple(r) for r in cursor.fetchall()]
        finally:
            cursor.close()

    try:
        found = rows("SHOW PARAMETERS LIKE '%ob_ddl_timeout'")
        if not found or str(found[0][3]) != ddl:
            rows(f"ALTER SYSTEM SET _ob_ddl_timeout = '{ddl}'")
        try:
            return _new_memory(powermem, settings, config)
        except Exception as exc:
            if not is_timeout(exc):
                raise
            raise explain_ddl_timeout(rows, settings, "creating the card table") from exc
    finally:
        conn.close()


def _bound_sessions(memory: Any, settings: Settings) -> None:
    """Every session of the store waits at most :mod:`bureau.bounds` says.

    Embedded seekdb has one connection for the whole process (:func:`_keep_one_connection`):
    it is set once. A server store's pool makes connections as it needs them: each is set as
    it is made, and the pool is emptied so that none made before escapes."""
    from ..bounds import session_sql

    engine = sql_engine(memory)
    if engine is None:
        return
    if settings.store == "embedded":
        with LOCK:
            _embedded_rows(memory)(session_sql())
        return
    from sqlalchemy import event

    def bound(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(session_sql())
        finally:
            cursor.close()

    event.listen(engine, "connect", bound)
    engine.dispose()


def _ensure_schema(memory: Any, settings: Settings) -> None:
    """The bureau's indexes and versions table (:mod:`.schema`), created only where missing."""
    engine = sql_engine(memory)
    if engine is None:
        return
    with LOCK, engine.connect() as conn:
        index_cases(conn, settings.collection, settings, _side_rows(settings))
        create_versions(conn, settings.collection, settings, _side_rows(settings))


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


def _embedded_rows(memory: Any) -> Any:
    """Runs one written-out statement on embedded seekdb's one connection (the caller holds
    :data:`LOCK`), as :mod:`.statements` does: pyseekdb's raw connection."""
    server = sql_engine(memory).get_execution_options()["seekdb_server"]

    def rows(sql: str) -> list[tuple[Any, ...]]:
        cursor = server.get_raw_connection().cursor()
        try:
            cursor.execute(sql)
            return [tuple(r) for r in cursor.fetchall()]
        finally:
            cursor.close()

    return rows


def _side_rows(settings: Settings) -> Any:
    """A way to read seekdb's views that does not wait for the store's own (busy) connection:
    a connection of its own to embedded seekdb; none on a server (its views are the
    administrator's)."""
    def rows(sql: str) -> list[tuple[Any, ...]]:
        if settings.store != "embedded":
            raise RuntimeError("no side connection on a server store")
        import pylibseekdb

        conn = pylibseekdb.connect(database="test", autocommit=True)
        try:
            cursor = conn.cursor()
            cursor.execute(sql)
            return [tuple(r) for r in cursor.fetchall()]
        finally:
            conn.close()

    return rows


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
    if stuck() is not None:
        from ..errors import StoreTimeoutError

        raise StoreTimeoutError(
            f"This Python process gave up on {stuck()} earlier, and its connection to the "
            "store is still waiting on it.", "Restart the kernel (Kernel → Restart).")
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
                memory = watch.call(lambda: _open_embedded(powermem, settings, config))
        else:
            memory = _new_memory(powermem, settings, config)
        if settings.store == "embedded":
            _keep_one_connection(memory)
            let_setup_finish_at_exit(_embedded_rows(memory), LOCK, settings,
                                     usable=lambda: stuck() is None)
        else:  # a session ended while idle in the pool (a KILL, a restart) costs a ping
            from .reconnect import pre_ping

            pre_ping(sql_engine(memory))
        _bound_sessions(memory, settings)
        _ensure_schema(memory, settings)
        bound_disk_footprint(sql_engine(memory), settings, LOCK)
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
