"""Every setting explicit, validated, with offline defaults.

PowerMem fills any field it is not given from environment variables and stray ``.env`` files
(walking up parent directories). Bureau therefore builds a complete configuration itself, reads
only its own ``BUREAU_*`` variables, and never loads a ``.env``.

Nothing leaves the machine unless a setting asks for it by name: an unknown choice (a typo such
as ``BUREAU_EMBEDDER=MiniLM``) is refused with the list of valid values instead of falling
through to some default, because the one non-default embedder sends card texts to a network
endpoint. Numbers are checked as strictly (``nan`` compares false with everything, so a
``nan`` threshold would silently disable a range check further down).
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Literal

from .bounds import DDL_S
from .errors import BureauError, ConfigurationError, InvalidArgumentError
from .quotas import Quotas
from .text import short_repr

STORES = ("embedded", "server")
EMBEDDERS = ("minilm", "openai", "hash")
"""``openai`` is the only one that uses a network; it must be named exactly to be chosen."""
RESPONDERS = ("evidence", "llm")

_COLLECTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""The collection is PowerMem's table name and lands in SQL text: a plain identifier only."""

OFFLINE_ENV = {"ORT_DISABLE_TELEMETRY": "1"}
"""onnxruntime (>= 1.2x on Linux too) otherwise starts a telemetry uploader at import that sends
to mobile.events.data.microsoft.com and keeps a device id under ``~/.cache/Microsoft``. The
switch only works if set before onnxruntime is first imported, hence at bureau import time."""


def keep_libraries_offline() -> None:
    """Switch off the telemetry of libraries the bureau loads (called at import and on open).

    Set unconditionally: the bureau's promise is that nothing leaves the machine unless one of
    *its* settings asks for it, whatever the inherited environment says.
    """
    os.environ.update(OFFLINE_ENV)
    ort = sys.modules.get("onnxruntime")
    disable = getattr(ort, "disable_telemetry_events", None)
    if callable(disable):  # imported before the bureau: stop what can still be stopped
        disable()


keep_libraries_offline()


def default_data_dir() -> Path:
    """Per-user, outside any repository or working directory, shared by every lesson."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "bureau"


# -- validators: each returns the normalised value or raises ConfigurationError naming `label` --
def _choice(value: object, valid: tuple[str, ...], label: str) -> str:
    if isinstance(value, str) and value in valid:
        return value
    listed = ", ".join(repr(v) for v in valid)
    hint = f"Valid values: {listed}."
    if isinstance(value, str) and value.strip().lower() in valid:
        hint = f"Did you mean {value.strip().lower()!r}? Values are exact (lower case). {hint}"
    raise ConfigurationError(f"{label}={value!r} is not a known choice.", hint)


def _real(value: object, label: str) -> float:
    """A finite real number (not a bool: ``True`` is 1 to Python, never to a user)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigurationError(f"{label} must be a number, not {value!r}.")
    x = float(value)
    if not math.isfinite(x):
        raise ConfigurationError(f"{label} must be a finite number, not {value!r}.")
    return x


def _fraction(value: object, label: str) -> float:
    x = _real(value, label)
    if not 0.0 < x < 1.0:
        raise ConfigurationError(f"{label} must lie strictly between 0 and 1, not {value!r}.")
    return x


def _positive(value: object, label: str) -> float:
    x = _real(value, label)
    if x <= 0:
        raise ConfigurationError(f"{label} must be greater than 0, not {value!r}.")
    return x


def _whole_seconds(value: object, label: str) -> int:
    """A whole number of seconds from 1 to a day (seekdb reads ``_ob_ddl_timeout`` as such)."""
    x = _real(value, label)
    if x != int(x) or not 1 <= x <= 86400:
        raise ConfigurationError(f"{label} must be a whole number of seconds from 1 to 86400, "
                                 f"not {value!r}.")
    return int(x)


def _scope_cache(value: object, label: str) -> float:
    """0 (off) or a memory bound between 1.05 and 4 times the raw vectors (ids and norms take
    0.8 % more than the vectors, so a bound below 1.05 would leave no room to add a card)."""
    number = _real(value, label)
    if number != 0 and not 1.05 <= number <= 4:
        raise ConfigurationError(f"{label}={number!r} must be 0 (off) or between 1.05 and 4.")
    return float(number)


def _integer(value: object, lo: int, hi: int, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigurationError(f"{label} must be a whole number, not {value!r}.")
    n = int(value)
    if not lo <= n <= hi:
        raise ConfigurationError(f"{label} must lie between {lo} and {hi}, not {n}.")
    return n


DEFAULT_THRESHOLD = 0.45
"""Cosine similarity a card needs to count as knowing (MiniLM scale): the one copy of it."""
LIMIT_RANGE = (1, 100)
"""Cards per scope a search may ask for."""


def check_limit(
    value: object, label: str = "limit", error: type[BureauError] = InvalidArgumentError
) -> int:
    """A per-scope search limit: a whole number in :data:`LIMIT_RANGE` (the one copy of this
    check, used by Settings, ``Case.retrieve`` and the lab)."""
    lo, hi = LIMIT_RANGE
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not lo <= value <= hi:
        raise error(f"{label} must be a whole number from {lo} to {hi}, not {short_repr(value)}.")
    return int(value)


def check_threshold(
    value: object, label: str = "threshold", error: type[BureauError] = InvalidArgumentError
) -> float:
    """A per-request relevance threshold: a finite cosine from -1 to 1 (-1: every card of the
    top-k counts as evidence)."""
    try:
        number = float(value) if not isinstance(value, bool) and isinstance(
            value, numbers.Real) else math.nan
    except (OverflowError, ValueError):  # an int of 400 digits does not fit a float
        number = math.nan
    if not math.isfinite(number) or not -1.0 <= number <= 1.0:
        raise error(f"{label} must be a number from -1 to 1, not {short_repr(value)}.")
    return number


def _flag(value: object, label: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{label} must be True or False, not {value!r}.")
    return value


def _text(value: object, label: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or "\x00" in value or (not empty and not value.strip()):
        what = "a string" if empty else "a non-empty string"
        raise ConfigurationError(f"{label} must be {what}, not {value!r}.")
    return value


def _url(value: object, label: str) -> str | None:
    if value is None:
        return None
    url = _text(value, label)
    if not re.match(r"https?://[^\s/]+", url):
        raise ConfigurationError(
            f"{label}={value!r} is not an http(s) URL.", "Write it as http(s)://host[:port]/path."
        )
    return url


def _data_dir(value: object, label: str) -> Path:
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise ConfigurationError(f"{label} must be a folder path, not {value!r}.")
    path = Path(os.path.abspath(os.path.expanduser(os.fspath(value))))
    probe = path  # the folder itself or, if it does not exist yet, its nearest existing parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigurationError(
            f"{label}: {probe} is a file, so {path} cannot be the data directory.",
            "Pass Bureau.open(data_dir=...) or set BUREAU_DATA_DIR to a folder.",
        )
    return path


def _policy_file(value: object, label: str) -> Path:
    """An existing policy file (its rules are checked when the mediator is built, before the
    store opens: :func:`bureau.service.assembly.build_mediator`)."""
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise ConfigurationError(f"{label} must be a policy file path, not {value!r}.")
    path = Path(os.path.abspath(os.path.expanduser(os.fspath(value))))
    if path.suffix not in (".yaml", ".yml", ".json"):
        raise ConfigurationError(f"{label}={str(value)!r} is not a .yaml, .yml or .json file.")
    if not path.is_file():
        raise ConfigurationError(
            f"{label}: no policy file at {path}.",
            "Point it at a policy such as scenarios/policies/default.yaml, or leave it unset.",
        )
    return path


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)  # frozen dataclasses: normalise in __post_init__


def _field_names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]  # type: ignore[arg-type]


def _check_keys(cls: type, keys: object) -> None:
    """Unknown keyword → ConfigurationError (a dataclass would raise a bare TypeError)."""
    valid = _field_names(cls)
    unknown = sorted(k for k in keys if k not in valid)  # type: ignore[attr-defined]
    if unknown:
        raise ConfigurationError(
            f"Unknown setting(s) {', '.join(unknown)}.", f"Valid settings: {', '.join(valid)}."
        )


@dataclass(frozen=True)
class ServerSettings:
    """A seekdb or OceanBase server (opt-in); the default is embedded seekdb."""

    host: str = "127.0.0.1"
    port: int = 2881
    user: str = "root"
    password: str = field(default="", repr=False)
    """Kept out of ``repr``: settings get printed in notebooks, logs and error reports."""
    db_name: str = "test"

    def __post_init__(self) -> None:
        host = _text(self.host, "server.host")
        if any(c.isspace() for c in host):
            raise ConfigurationError(f"server.host={host!r} contains whitespace.")
        _set(self, "port", _integer(self.port, 1, 65535, "server.port"))
        _text(self.user, "server.user")
        _text(self.password, "server.password", empty=True)
        db = _text(self.db_name, "server.db_name")
        if any(c in db for c in "`'\"\\;") or any(c.isspace() for c in db):
            raise ConfigurationError(f"server.db_name={db!r} is not a plain database name.")


@dataclass(frozen=True)
class LLMSettings:
    """An OpenAI-compatible chat endpoint (opt-in). The key is read from ``api_key_env``."""

    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 30.0
    """How long to wait for one reply before answering from the evidence alone
    (``BUREAU_LLM_TIMEOUT``; a local model on a busy 2-core laptop needs about 90 s)."""

    def __post_init__(self) -> None:
        _text(self.model, "llm.model")
        _url(self.base_url, "llm.base_url")
        _text(self.api_key_env, "llm.api_key_env")
        _set(self, "timeout_s", _positive(self.timeout_s, "llm.timeout_s"))


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    store: Literal["embedded", "server"] = "embedded"
    server: ServerSettings = field(default_factory=ServerSettings)
    collection: str = "bureau_cards"
    embedder: Literal["minilm", "openai", "hash"] = "minilm"
    embedding_model: str = "text-embedding-3-small"
    embedding_dims: int = 384
    embedding_base_url: str | None = None
    embedding_api_key_env: str = "OPENAI_API_KEY"
    relevance_threshold: float = DEFAULT_THRESHOLD
    """Cosine similarity a card needs to count as knowing the answer (MiniLM scale)."""
    search_limit: int = 5
    """Cards returned per scope; the X-ray shows them all, the responder uses those above threshold."""
    query_per_scope: bool = False
    """False: one filtered query covers the role's space and the board (fast). True: one query
    per scope, so the X-ray can time each scope on its own (about twice the search time)."""
    scope_cache: float = 1.5
    """Searches scan an in-process float32 copy of each searched scope's vectors (sealed: opened
    from their per-card ciphertext; :mod:`bureau.storage.scope_index`) and read only the
    candidate rows from the store: the same cards and scores as seekdb's exact scan, at a
    fraction of its time. The copies hold at most this many times the raw vectors of the scopes
    searched (1.05 to 4); 0 turns them off (every search of an unsealed scope is then seekdb's
    own; a sealed scope, whose vectors the store cannot search, is opened afresh for each search).
    ``BUREAU_SCOPE_CACHE``."""
    responder: Literal["evidence", "llm"] = "evidence"
    llm: LLMSettings | None = None
    publish_lease_s: float = 30.0
    """A pending publish older than this (or whose process is gone) may be taken over."""
    mediation_policy: Path | None = None
    """A purpose-bound policy file (YAML/JSON, see scenarios/README.md 'Policies'): every
    interrogation is then mediated and audited. ``None``: no mediation (pass-through)."""
    audit_key: Path | None = None
    """The audit key file (HMAC key of the audit chain and the state rows; its anchor lies
    beside it). ``None``: ``audit.key`` in the data directory. Instances sharing a server store
    must name one key (``BUREAU_AUDIT_KEY``)."""
    classroom: Path | None = None
    """A learner's classroom connection file (``BUREAU_CLASSROOM``, see
    :mod:`bureau.classroom`): the store, the ledger, the snapshots and the progress record then
    live in that learner's tenant on the classroom's server, and ``store``/``server`` are taken
    from the file. The data directory keeps the logs and the learner's own audit key."""
    open_timeout_s: float = 120.0
    """Longest wait for embedded seekdb to answer when the store opens (``BUREAU_OPEN_TIMEOUT``);
    then it is stopped and the reason from its log raised (a failed start is reported as soon
    as seekdb logs it, about a second). A fresh store starts in 4-17 s on a busy 2-core machine."""
    ddl_timeout_s: int = DDL_S
    """Longest wait of a DDL statement on an embedded store (``BUREAU_DDL_TIMEOUT``, whole
    seconds, seekdb's ``_ob_ddl_timeout``; :mod:`bureau.bounds`). A DDL runs only when a table or
    index of the store is missing."""
    quotas: Quotas = field(default_factory=Quotas)
    """Per-principal limits (consults and audit entries per minute, scope writes, run tool
    output, inbox length): see :mod:`bureau.quotas`."""
    seal: bool = True
    """Seal what is stored (:mod:`bureau.sealing`): every card's text, the labels that name or
    link its content and its vector are encrypted under a key of its own (kept in ``seal.keys``
    beside the audit key, never in the database; the store's vector column holds noise, and a
    sealed scope is searched in this process); forgetting a card destroys its key. ``False``
    (``BUREAU_SEAL=0``): texts and vectors are stored as they are (the forgetting lab's
    baseline)."""

    def __post_init__(self) -> None:
        """Refuse anything that cannot work *before* a store, a file or a socket is opened."""
        _set(self, "data_dir", _data_dir(self.data_dir, "data_dir"))
        if self.classroom is not None:
            self._join_classroom()
        _choice(self.store, STORES, "store")
        if not isinstance(self.server, ServerSettings):
            raise ConfigurationError(f"server must be a ServerSettings, not {self.server!r}.")
        if not isinstance(self.collection, str) or not _COLLECTION.fullmatch(self.collection):
            raise ConfigurationError(
                f"collection={self.collection!r} is not a plain identifier.",
                "Use letters, digits and underscores (at most 64, not starting with a digit).",
            )
        _choice(self.embedder, EMBEDDERS, "embedder")
        _text(self.embedding_model, "embedding_model")
        _set(self, "embedding_dims", _integer(self.embedding_dims, 1, 65536, "embedding_dims"))
        _url(self.embedding_base_url, "embedding_base_url")
        _text(self.embedding_api_key_env, "embedding_api_key_env")
        threshold = _fraction(self.relevance_threshold, "relevance_threshold")
        _set(self, "relevance_threshold", threshold)
        _set(self, "search_limit", check_limit(self.search_limit, "search_limit",
                                               ConfigurationError))
        _flag(self.query_per_scope, "query_per_scope")
        _set(self, "scope_cache", _scope_cache(self.scope_cache, "scope_cache"))
        _flag(self.seal, "seal")
        _choice(self.responder, RESPONDERS, "responder")
        if self.llm is not None and not isinstance(self.llm, LLMSettings):
            raise ConfigurationError(f"llm must be an LLMSettings or None, not {self.llm!r}.")
        _set(self, "publish_lease_s", _positive(self.publish_lease_s, "publish_lease_s"))
        _set(self, "open_timeout_s", _positive(self.open_timeout_s, "open_timeout_s"))
        _set(self, "ddl_timeout_s", _whole_seconds(self.ddl_timeout_s, "ddl_timeout_s"))
        if self.mediation_policy is not None:
            _set(self, "mediation_policy", _policy_file(self.mediation_policy, "mediation_policy"))
        if self.audit_key is not None:
            _set(self, "audit_key", _key_file(self.audit_key, "audit_key"))
        if not isinstance(self.quotas, Quotas):
            raise ConfigurationError(f"quotas must be a bureau.quotas.Quotas, not "
                                     f"{self.quotas!r}.")
        if self.embedder == "minilm" and self.embedding_dims != 384:
            raise ConfigurationError("MiniLM vectors have 384 dimensions; set embedding_dims=384.")
        if self.responder == "llm" and self.llm is None:
            raise ConfigurationError(
                "responder='llm' needs llm=LLMSettings(...).", "Or keep the offline evidence mode."
            )

    def _join_classroom(self) -> None:
        """Point the store at the learner's tenant the connection file names (read and
        checked here, before anything opens: a loose or foreign file is refused)."""
        from .tenancy.connection import read_connection

        if not isinstance(self.classroom, str | os.PathLike):
            raise ConfigurationError(f"classroom must be a connection file path, not "
                                     f"{self.classroom!r}.")
        path = Path(os.path.abspath(os.path.expanduser(os.fspath(self.classroom))))
        conn = read_connection(path)
        _set(self, "classroom", path)
        _set(self, "store", "server")
        _set(self, "server", ServerSettings(host=conn.host, port=conn.port, user=conn.user,
                                            password=conn.password, db_name=conn.database))

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Defaults, then ``BUREAU_*`` environment variables, then explicit keyword overrides.

        A bad variable is reported by its own name (``BUREAU_THRESHOLD='abc' is not a number``),
        so the reader knows which line of their shell setup to fix.
        """
        _check_keys(cls, overrides)
        env: dict[str, object] = {}
        if v := os.environ.get("BUREAU_DATA_DIR"):
            env["data_dir"] = _data_dir(v, "BUREAU_DATA_DIR")
        if v := os.environ.get("BUREAU_EMBEDDER"):
            env["embedder"] = _choice(v, EMBEDDERS, "BUREAU_EMBEDDER")
        if v := os.environ.get("BUREAU_THRESHOLD"):
            threshold = _env_number(v, "BUREAU_THRESHOLD")
            env["relevance_threshold"] = _fraction(threshold, "BUREAU_THRESHOLD")
        port = 2881
        if v := os.environ.get("BUREAU_SEEKDB_PORT"):  # checked even without a host: a typo
            port = _integer(_env_int(v, "BUREAU_SEEKDB_PORT"), 1, 65535, "BUREAU_SEEKDB_PORT")
        if v := os.environ.get("BUREAU_SEEKDB_HOST"):
            env["store"] = "server"
            env["server"] = ServerSettings(
                host=v,
                port=port,
                user=os.environ.get("BUREAU_SEEKDB_USER", "root"),
                password=os.environ.get("BUREAU_SEEKDB_PASSWORD", ""),
                db_name=os.environ.get("BUREAU_SEEKDB_DB", "test"),
            )
        if v := os.environ.get("BUREAU_SCOPE_CACHE"):
            env["scope_cache"] = _scope_cache(_env_number(v, "BUREAU_SCOPE_CACHE"),
                                              "BUREAU_SCOPE_CACHE")
        if v := os.environ.get("BUREAU_LLM_MODEL"):
            env["responder"] = "llm"
            env["llm"] = LLMSettings(
                model=v,
                base_url=_url(os.environ.get("BUREAU_LLM_BASE_URL") or None,
                              "BUREAU_LLM_BASE_URL"),
                api_key_env=os.environ.get("BUREAU_LLM_KEY_ENV", "OPENAI_API_KEY"),
                timeout_s=_positive(_env_number(os.environ["BUREAU_LLM_TIMEOUT"],
                                                "BUREAU_LLM_TIMEOUT"), "BUREAU_LLM_TIMEOUT")
                if os.environ.get("BUREAU_LLM_TIMEOUT") else 30.0,
            )
        if v := os.environ.get("BUREAU_CLASSROOM"):
            env["classroom"] = v
        if v := os.environ.get("BUREAU_AUDIT_KEY"):
            env["audit_key"] = _key_file(v, "BUREAU_AUDIT_KEY")
        if v := os.environ.get("BUREAU_POLICY"):
            env["mediation_policy"] = _policy_file(v, "BUREAU_POLICY")
        if v := os.environ.get("BUREAU_DDL_TIMEOUT"):
            env["ddl_timeout_s"] = _whole_seconds(_env_number(v, "BUREAU_DDL_TIMEOUT"),
                                                  "BUREAU_DDL_TIMEOUT")
        if v := os.environ.get("BUREAU_OPEN_TIMEOUT"):
            env["open_timeout_s"] = _positive(_env_number(v, "BUREAU_OPEN_TIMEOUT"),
                                              "BUREAU_OPEN_TIMEOUT")
        if v := os.environ.get("BUREAU_QUOTAS"):
            env["quotas"] = Quotas.parse(v)
        if v := os.environ.get("BUREAU_SEAL"):
            if v.strip().lower() not in ("0", "1", "true", "false", "on", "off"):
                raise ConfigurationError(f"BUREAU_SEAL={v!r} is not 1/0, true/false or on/off.")
            env["seal"] = v.strip().lower() in ("1", "true", "on")
        env.update(overrides)
        return cls(**env)  # type: ignore[arg-type]

    def with_(self, **changes: object) -> Settings:
        _check_keys(type(self), changes)
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def ledger_path(self) -> Path:
        return self.data_dir / "bureau.sqlite3"

    @property
    def audit_key_path(self) -> Path:
        return self.audit_key if self.audit_key is not None else self.data_dir / "audit.key"

    @property
    def seal_keys_path(self) -> Path:
        """The sealing key store (a folder beside the audit key; never in the database). A
        classroom learner's is named after their tenant (``seal.keys.learner_ann``): it holds
        that tenant's keys only, so ``classroom remove|reset`` can destroy all of it without
        touching the keys of a store the same data directory keeps outside the classroom."""
        if self.classroom is not None:
            return self.audit_key_path.with_name(f"seal.keys.{self.server.user}")
        return self.audit_key_path.with_name("seal.keys")

    @property
    def seekdb_path(self) -> Path:
        return self.data_dir / "seekdb"


def _key_file(value: object, label: str) -> Path:
    """A path for the audit key file (it may not exist yet: the first open creates it)."""
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise ConfigurationError(f"{label}={value!r} is not a file path.")
    path = Path(value).expanduser()
    if path.is_dir():
        raise ConfigurationError(f"{label}={str(path)!r} is a directory, not a key file.")
    return path


def _env_number(raw: str, var: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise ConfigurationError(f"{var}={raw!r} is not a number.") from None


def _env_int(raw: str, var: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise ConfigurationError(f"{var}={raw!r} is not a whole number.") from None
