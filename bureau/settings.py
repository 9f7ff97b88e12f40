"""Every setting explicit, with offline defaults.

PowerMem fills any field it is not given from environment variables and stray ``.env`` files
(walking up parent directories). Bureau therefore builds a complete configuration itself, reads
only its own ``BUREAU_*`` variables, and never loads a ``.env``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from .errors import ConfigurationError


def default_data_dir() -> Path:
    """Per-user, outside any repository or working directory, shared by every lesson."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "bureau"


@dataclass(frozen=True)
class ServerSettings:
    """A seekdb or OceanBase server (opt-in); the default is embedded seekdb."""

    host: str = "127.0.0.1"
    port: int = 2881
    user: str = "root"
    password: str = ""
    db_name: str = "test"


@dataclass(frozen=True)
class LLMSettings:
    """An OpenAI-compatible chat endpoint (opt-in). The key is read from ``api_key_env``."""

    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"


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
    relevance_threshold: float = 0.45
    """Cosine similarity a card needs to count as knowing the answer (MiniLM scale)."""
    search_limit: int = 5
    """Cards returned per scope; the X-ray shows them all, the responder uses those above threshold."""
    query_per_scope: bool = False
    """False: one filtered query covers the role's space and the board (fast). True: one query
    per scope, so the X-ray can time each scope on its own (about twice the search time)."""
    responder: Literal["evidence", "llm"] = "evidence"
    llm: LLMSettings | None = None
    publish_lease_s: float = 30.0
    """A pending publish older than this (or whose process is gone) may be taken over."""

    def __post_init__(self) -> None:
        data_dir = Path(os.path.abspath(os.path.expanduser(str(self.data_dir))))
        object.__setattr__(self, "data_dir", data_dir)
        if not 0.0 < self.relevance_threshold < 1.0:
            raise ConfigurationError("relevance_threshold must lie between 0 and 1.")
        if not 1 <= self.search_limit <= 100:
            raise ConfigurationError("search_limit must lie between 1 and 100.")
        if self.embedder == "minilm" and self.embedding_dims != 384:
            raise ConfigurationError("MiniLM vectors have 384 dimensions; set embedding_dims=384.")
        if self.responder == "llm" and self.llm is None:
            raise ConfigurationError(
                "responder='llm' needs llm=LLMSettings(...).", "Or keep the offline evidence mode."
            )

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Defaults, then ``BUREAU_*`` environment variables, then explicit keyword overrides."""
        env: dict[str, object] = {}
        if v := os.environ.get("BUREAU_DATA_DIR"):
            env["data_dir"] = Path(v)
        if v := os.environ.get("BUREAU_EMBEDDER"):
            env["embedder"] = v
        if v := os.environ.get("BUREAU_THRESHOLD"):
            env["relevance_threshold"] = float(v)
        if v := os.environ.get("BUREAU_SEEKDB_HOST"):
            env["store"] = "server"
            env["server"] = ServerSettings(
                host=v,
                port=int(os.environ.get("BUREAU_SEEKDB_PORT", "2881")),
                user=os.environ.get("BUREAU_SEEKDB_USER", "root"),
                password=os.environ.get("BUREAU_SEEKDB_PASSWORD", ""),
                db_name=os.environ.get("BUREAU_SEEKDB_DB", "test"),
            )
        if v := os.environ.get("BUREAU_LLM_MODEL"):
            env["responder"] = "llm"
            env["llm"] = LLMSettings(
                model=v,
                base_url=os.environ.get("BUREAU_LLM_BASE_URL") or None,
                api_key_env=os.environ.get("BUREAU_LLM_KEY_ENV", "OPENAI_API_KEY"),
            )
        env.update(overrides)
        return cls(**env)  # type: ignore[arg-type]

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def ledger_path(self) -> Path:
        return self.data_dir / "bureau.sqlite3"

    @property
    def seekdb_path(self) -> Path:
        return self.data_dir / "seekdb"
