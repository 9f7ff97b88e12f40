"""Repairing a data directory whose ledger and card store disagree.

``Bureau.open`` stops with ``StoreLedgerMismatchError`` when the store holds cards under
namespaces the ledger has never heard of (the ledger file was lost, replaced by an old copy, or
moved aside because it was damaged). Guessing would be worse than stopping: merging the cards
into a new case of the same id leaks them into it, and treating board copies without a record as
orphans deletes real publications. This module says what it found and repairs only on request:

* ``python -m bureau repair`` — report: live cases, retired namespaces, unknown namespaces;
* ``--adopt`` — re-register each unknown namespace whose case snapshot (``cases/<id>.json``)
  survives, with its original token and epoch, re-apply every revocation and expiry its
  tombstones record (to the revoked card and every copy derived from it), and rebuild a ready
  publish record for every board copy whose source card is still in the case and not revoked
  (a damaged ledger is first moved aside, never deleted);
* ``--purge-unknown`` — delete the cards of namespaces that are still unknown (after adoption,
  if both are given).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from ..errors import BureauError, DamagedDataError, LedgerDamagedError
from ..ledger import BaseLedger, parse_store_id
from ..mediation.derivation import TOMBSTONE_OWNER, Tombstone, closure
from ..model import BOARD, CaseSpace
from ..scenario import parse_scenario
from ..settings import Settings
from ..storage.gateway import MemoryGateway
from .assembly import build_gateway, build_ledger


@dataclass
class RepairReport:
    live: list[str] = field(default_factory=list)
    retired_with_cards: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    publications_restored: int = 0
    limits_restored: int = 0
    """Revocations and expiries re-applied from the store's tombstones."""
    not_adoptable: dict[str, str] = field(default_factory=dict)
    purged: dict[str, int] = field(default_factory=dict)
    ledger_moved_to: str | None = None

    def text(self) -> str:
        lines = [
            f"live cases in the ledger: {len(self.live)}",
            f"retired namespaces still holding cards (swept on open): {len(self.retired_with_cards)}",
            f"unknown namespaces (cards the ledger does not know): {len(self.unknown)}",
        ]
        lines += [f"  {s}" for s in self.unknown[:20]]
        if self.ledger_moved_to:
            lines.append(f"damaged ledger moved aside to {self.ledger_moved_to}")
        if self.adopted:
            lines.append(f"adopted: {', '.join(self.adopted)} "
                         f"({self.publications_restored} publish records rebuilt, "
                         f"{self.limits_restored} revocations/expiries re-applied from "
                         "tombstones)")
        lines += [f"not adoptable: {s}: {why}" for s, why in self.not_adoptable.items()]
        lines += [f"purged {n} cards of {s}" for s, n in self.purged.items()]
        if self.unknown and not (self.adopted or self.purged):
            lines.append("nothing changed; rerun with --adopt and/or --purge-unknown")
        return "\n".join(lines)


def _ledger(settings: Settings, move_damaged: bool) -> tuple[BaseLedger, str | None]:
    try:
        ledger = build_ledger(settings)
    except LedgerDamagedError:
        if not move_damaged or settings.store != "embedded":
            raise
        path = settings.ledger_path
        aside = path.with_name(f"{path.name}.damaged-{int(time.time())}")
        path.rename(aside)
        for extra in ("-wal", "-shm"):
            side = path.with_name(path.name + extra)
            if side.exists():
                side.rename(aside.with_name(aside.name + extra))
        _keys_aside(settings, aside.name)
        return build_ledger(settings), str(aside)
    if move_damaged and settings.store == "embedded" and ledger.mediation.chain_lost():
        # A lost ledger rebuilt empty: its audit anchor still records the old chain, so every
        # append would be refused as a wiped chain. Adopting means starting a new chain.
        ledger.close()
        _keys_aside(settings, f"lost-{int(time.time())}")
        ledger = build_ledger(settings)
    return ledger, None


def _keys_aside(settings: Settings, suffix: str) -> None:
    """Move the audit key and anchor aside: they belong to the chain moved aside (it can still
    be verified with them); the rebuilt ledger starts a new chain under a new key."""
    key = settings.audit_key_path
    for side in (key, key.with_name(key.name.removesuffix(".key") + ".anchor")):
        if side.exists():
            side.rename(side.with_name(f"{side.name}.{suffix}"))


def repair(
    settings: Settings | None = None, *, adopt: bool = False, purge_unknown: bool = False
) -> RepairReport:
    """Compare store and ledger; optionally adopt and/or purge unknown namespaces."""
    settings = settings or Settings.from_env()
    gateway = build_gateway(settings)
    ledger, moved = _ledger(settings, move_damaged=adopt)
    report = RepairReport(ledger_moved_to=moved)
    stored = gateway.spaces()
    retired = ledger.cases.retired_spaces()
    records = {r.case_id: r for r in ledger.cases.all()}
    live = {r.space.store_id for r in records.values()}
    report.live = sorted(records)
    report.retired_with_cards = sorted((stored & retired) - live)
    report.unknown = sorted(stored - retired - live)
    still_unknown = list(report.unknown)
    if adopt:
        for store_id in report.unknown:
            why = _adopt(settings, gateway, ledger, store_id, records, report)
            if why:
                report.not_adoptable[store_id] = why
            else:
                still_unknown.remove(store_id)
    if purge_unknown:
        for store_id in still_unknown:
            report.purged[store_id] = gateway.purge_space(store_id)
    return report


def _adopt(settings: Settings, gateway: MemoryGateway, ledger: BaseLedger, store_id: str,
           records: dict, report: RepairReport) -> str | None:
    parsed = parse_store_id(store_id)
    if parsed is None:
        return "not a namespace the bureau writes"
    case_id, token, epoch = parsed
    if case_id in records:
        return f"the ledger already has a live case {case_id!r} (another incarnation)"
    snapshot = settings.data_dir / "cases" / f"{case_id}.json"
    try:
        scenario = parse_scenario(json.loads(snapshot.read_text(encoding="utf-8")),
                                  source=snapshot)
    except (OSError, ValueError, RecursionError, BureauError) as exc:
        return f"its snapshot {snapshot} is missing or unreadable ({type(exc).__name__})"
    space = CaseSpace(case_id, store_id)
    try:
        stones = [Tombstone.parse(c) for c in gateway.list(space, TOMBSTONE_OWNER)]
    except DamagedDataError as exc:
        return f"a tombstone is unreadable ({exc}); adopting would forget a revocation"
    record = ledger.cases.add(case_id, scenario.id, scenario.title, token, epoch)
    records[case_id] = record
    revoked = _respect_tombstones(gateway, ledger, space, token, scenario.role_names, stones,
                                  report)
    for copy in gateway.list(space, BOARD):
        if copy.id in revoked or copy.source_id in revoked:
            continue
        source_role = next((r for r in scenario.role_names
                            if copy.source_id and gateway.get(space, r, copy.source_id)), None)
        if source_role and ledger.publishes.get(case_id, copy.source_id or "") is None:
            ledger.publishes.restore(case_id, copy.source_id or "", source_role, copy.id)
            report.publications_restored += 1
    report.adopted.append(case_id)
    return None


def _respect_tombstones(gateway: MemoryGateway, ledger: BaseLedger, space: CaseSpace,
                        token: str, roles: list[str], stones: list[Tombstone],
                        report: RepairReport) -> set[str]:
    """Re-apply every revocation and expiry the case's tombstones record (issue 19): the
    limits go back into the new ledger, over the closure of each one computed from the store
    as it is now (so a copy derived later is caught by its link too); revoked texts still in
    the store are deleted, and revoked private cards are barred from publishing. Returns the
    revoked ids (no publish record is rebuilt for them)."""
    every = gateway.list(space)
    revoked = closure(every, [cid for st in stones if st.state == "revoked"
                              for cid, _ in st.cards])
    for st in stones:
        if st.state == "expired" and st.expires_at is not None:
            ids = {cid: owner for cid, owner in
                   closure(every, [cid for cid, _ in st.cards]).items() if cid not in revoked}
            ledger.mediation.limit_cards(
                space.case_id, token, list(ids.items()), expires_at=st.expires_at,
                audit=[{"kind": "expiry", "card_id": i, "card_owner": o, "action": "expire",
                        "reasons": ["tombstone"]} for i, o in ids.items()])
            report.limits_restored += len(ids)
    if revoked:
        ledger.mediation.limit_cards(
            space.case_id, token, list(revoked.items()), revoke=True, reason="tombstone",
            audit=[{"kind": "revocation", "card_id": i, "card_owner": o, "action": "revoke",
                    "reasons": ["tombstone"]} for i, o in revoked.items()])
        report.limits_restored += len(revoked)
    for cid, owner in revoked.items():
        if owner in roles:
            ledger.publishes.block(space.case_id, cid, owner)
        if owner:
            gateway.delete_or_gone(space, owner, cid)
    return set(revoked)
