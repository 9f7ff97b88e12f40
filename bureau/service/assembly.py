"""The one assembly point: every part of a bureau built from :class:`~bureau.settings.Settings`.

Encoder, store, ledger backend, responder and mediator used to be chosen in three files; here
each choice is one small function, and :func:`reconfigure` decides what a second
``Bureau.open`` in the same process may change (per-request settings: applied) and what it may
not (anything that names the store or its vectors: refused, saying which setting differs).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..embedding import Encoder, HashEncoder, OpenAICompatibleEncoder, shared_minilm
from ..errors import ConfigurationError, StoreAlreadyOpenError
from ..ledger.base import BaseLedger
from ..mediation import Mediator, PassThrough
from ..responders import EvidenceResponder, Responder
from ..settings import EMBEDDERS, Settings, keep_libraries_offline
from ..storage.gateway import MemoryGateway

STORE_FIELDS = frozenset({
    "data_dir", "store", "server", "collection", "embedder", "embedding_model",
    "embedding_dims", "embedding_base_url", "embedding_api_key_env", "audit_key", "classroom",
})
"""Settings fixed for the life of a process: PowerMem keeps one store (and one vector space)."""


@dataclass
class Parts:
    settings: Settings
    gateway: MemoryGateway
    ledger: BaseLedger
    responder: Responder
    mediator: Mediator


def build_encoder(settings: Settings) -> Encoder:
    """The encoder ``settings.embedder`` names. The network one only when named exactly:
    anything else is refused (Settings validates too; this guards a bypassed Settings)."""
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


def build_gateway(settings: Settings) -> MemoryGateway:
    from . import faults

    # forgetting's crash points (issue 31) and a sealed store's migration's (issue 51)
    return MemoryGateway.open(settings, build_encoder(settings), on_step=faults.hit)


def build_ledger(settings: Settings) -> BaseLedger:
    """SQLite under the data directory, or the tables on the seekdb/OceanBase server; either
    keyed by the audit key file outside it (``settings.audit_key_path``)."""
    if settings.store == "server":
        from ..ledger.server import ServerLedger

        return ServerLedger(settings.server, key_path=settings.audit_key_path)
    from ..ledger.sqlite import Ledger

    return Ledger(settings.ledger_path, key_path=settings.audit_key_path)


def build_responder(settings: Settings) -> Responder:
    """Evidence mode offline; an OpenAI-compatible model only when one is configured."""
    if settings.responder == "llm":
        from ..responders.llm import LLMResponder

        if settings.llm is None:  # Settings validates this; a bypassed Settings is refused here
            raise ConfigurationError("responder='llm' needs llm=LLMSettings(...).")
        return LLMResponder(settings.llm)
    return EvidenceResponder()


def build_mediator(settings: Settings) -> Mediator:
    """Pass-through, or purpose-bound mediation by the policy file ``settings`` names (its
    rules are validated here: a broken policy is a ``PolicyError`` naming file, rule, field)."""
    if settings.mediation_policy is None:
        return PassThrough()
    from ..mediation.mediator import PolicyMediator
    from ..mediation.policy import load_policy

    return PolicyMediator(load_policy(settings.mediation_policy))


def join_tenant(settings: Settings) -> None:
    """A learner's tenant: log in once (a clear error for a wrong password or a removed
    learner), then keep this data directory's progress record in the tenant too."""
    from ..ledger.server import check_login
    from ..tenancy.registry import register_tenant

    check_login(settings.server, settings.server.user.removeprefix("learner_"))
    register_tenant(settings.data_dir, settings.server)


def assemble(
    settings: Settings, responder: Responder | None = None, mediator: Mediator | None = None
) -> Parts:
    mediator = mediator or build_mediator(settings)  # a bad policy fails before the store opens
    if settings.classroom is not None:
        join_tenant(settings)  # a refused login fails before the store opens, too
    return Parts(
        settings=settings,
        gateway=build_gateway(settings),
        ledger=build_ledger(settings),
        responder=responder or build_responder(settings),
        mediator=mediator,
    )


def changed(old: Settings, new: Settings) -> list[str]:
    return [f.name for f in fields(Settings) if getattr(old, f.name) != getattr(new, f.name)]


def reconfigure(parts: Parts, new: Settings) -> list[str]:
    """Apply ``new`` settings to an open bureau's parts; returns the names that changed.

    Raises ``StoreAlreadyOpenError`` naming each store-level setting that differs: silently
    keeping the old value (a threshold of 0.45 when 0.9 was asked) would make every figure lie.
    """
    diff = changed(parts.settings, new)
    fixed = sorted(set(diff) & STORE_FIELDS)
    if fixed:
        shown = "; ".join(f"{n}: open {getattr(parts.settings, n)!r}, asked {getattr(new, n)!r}"
                          for n in fixed)
        raise StoreAlreadyOpenError(
            f"This process already has a bureau open with other store settings ({shown})."
        )
    if {"responder", "llm"} & set(diff):
        parts.responder = build_responder(new)
    if "mediation_policy" in diff:
        parts.mediator = build_mediator(new)
    if "seal" in diff:  # how new cards are written; sealed ones are opened either way
        parts.gateway.settings = parts.gateway.settings.with_(seal=new.seal)
    if "scope_cache" in diff:  # the search cache's bound, or off (issue 36)
        parts.gateway.scope_search.configure(new.scope_cache)
    parts.settings = new
    return diff
