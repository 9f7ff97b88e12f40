"""The publish saga: copy one private card to the board exactly once, whatever crashes.

Steps, each with an event so lesson 03 can show them in slow motion:

1. **reserve** a durable record keyed by (case, source card) in the ledger;
2. **reconcile**: if a board copy of that source already exists (an earlier attempt wrote it and
   died), adopt it instead of writing another;
3. **write** the board copy, carrying source role, source id and a content hash;
4. **mark ready**.

A failure after the copy is written deletes it again (compensation); if that delete fails, a
cleanup task is recorded and retried by ``recover()`` and whenever a bureau opens. A pending
record whose process is gone, or whose lease ran out, is taken over by the next caller.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING

from . import faults
from .errors import (
    BureauError,
    PublishError,
    PublishPendingError,
    UnknownCardError,
    VisibilityBoundaryError,
)
from .ledger import owner_alive
from .model import BOARD, MemoryCard

if TYPE_CHECKING:
    from .service import Case

POLL_S = 0.05


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _copy_meta(source: MemoryCard) -> dict[str, str]:
    return {
        "visibility": "public",
        "topic": source.topic,
        "kind": source.kind,
        "source_role": source.owner,
        "source_id": source.id,
        "content_hash": content_hash(source.content),
    }


class Publisher:
    def __init__(self, case: Case) -> None:
        self.case = case
        self.gw = case.bureau.gateway
        self.ledger = case.bureau.ledger

    # -- the saga ----------------------------------------------------------------------------
    def publish(self, role: str, card_id: str, wait_s: float = 10.0) -> MemoryCard:
        case = self.case
        source = self._source(role, card_id)
        deadline = time.monotonic() + wait_s
        while True:
            outcome, rec = self.ledger.reserve(
                case.id, source.id, role, case.bureau.settings.publish_lease_s
            )
            if outcome == "ready":
                copy = self.gw.get(case.id, BOARD, rec.copy_id or "")
                if copy is not None:
                    return copy
                # The ready copy vanished (deleted by hand?): publish it again.
                self.ledger.drop_publication(case.id, source.id)
                continue
            if outcome == "held":
                if time.monotonic() > deadline:
                    raise PublishPendingError(f"Card {source.id} is being published elsewhere.")
                time.sleep(POLL_S)
                continue
            break
        if outcome == "taken_over":
            case._emit("publish.taken_over", {"source_id": source.id, "attempts": rec.attempts})
        case._emit(
            "memory.publishing",
            {"source_id": source.id, "source_role": role, "attempt": rec.attempts},
        )
        faults.hit("publish.after_reserve")
        copy = self._reconcile(source)
        written: MemoryCard | None = None
        try:
            if copy is None:
                written = copy = self.gw.add(case.id, BOARD, source.content, _copy_meta(source))
                faults.hit("publish.after_copy_written")
            faults.hit("publish.before_mark_ready")
            if not self.ledger.mark_ready(case.id, source.id, copy.id):
                return self._lost_lease(source, written)
        except BaseException as exc:
            self._compensate(source, written, exc)
            raise PublishError(
                f"Publishing card {source.id} failed ({type(exc).__name__}: {exc}).",
                "The board is unchanged; try again.",
            ) from exc
        case._emit(
            "memory.published",
            {"source_id": source.id, "source_role": role, "copy_id": copy.id,
             "topic": copy.topic, "kind": copy.kind},
        )
        return copy

    def _source(self, role: str, card_id: str) -> MemoryCard:
        """The card to publish: it must be this role's, in this case, and private.

        Lookups stay inside this case: a card of another case is simply unknown here.
        """
        case = self.case
        card = self.gw.get(case.id, role, str(card_id))
        if card is None:
            for other in [*case.role_names, BOARD]:
                if other != role and self.gw.get(case.id, other, str(card_id)) is not None:
                    raise VisibilityBoundaryError(
                        f"Card {card_id} is not in {role}'s private space.",
                        "A role can only publish its own private cards.",
                    )
            raise UnknownCardError(
                f"Case {case.id} has no card {card_id}.",
                "Cards of other cases are out of reach; list this case with case.spaces().",
            )
        if card.visibility != "private":
            raise VisibilityBoundaryError(
                f"Card {card_id} is not private.", "Only private cards can be published."
            )
        return card

    def _reconcile(self, source: MemoryCard) -> MemoryCard | None:
        """Adopt a board copy an earlier attempt wrote; delete any duplicates beyond the first."""
        copies = self.gw.list(self.case.id, BOARD, where={"source_id": source.id})
        if not copies:
            return None
        keep, extra = copies[0], copies[1:]
        for dup in extra:
            self._delete_or_schedule(dup.id, "duplicate board copy")
        self.case._emit(
            "memory.reconciled",
            {"source_id": source.id, "copy_id": keep.id, "duplicates_removed": len(extra)},
        )
        return keep

    def _lost_lease(self, source: MemoryCard, written: MemoryCard | None) -> MemoryCard:
        """Another process took our reservation over while we were slow: defer to it."""
        rec = self.ledger.publication(self.case.id, source.id)
        theirs = rec.copy_id if rec and rec.status == "ready" else None
        if written is not None and written.id != theirs:
            self._delete_or_schedule(written.id, "lost lease")
        copy = self.gw.get(self.case.id, BOARD, theirs) if theirs else None
        if copy is not None:
            return copy
        raise PublishPendingError(f"Card {source.id} was taken over by another publisher.")

    def _compensate(self, source: MemoryCard, written: MemoryCard | None, exc: BaseException) -> None:
        if written is not None:
            try:
                faults.hit("publish.during_compensation")
                if not self.gw.delete(self.case.id, BOARD, written.id):
                    raise PublishError(f"Board copy {written.id} could not be deleted.")
            except BureauError:
                self.ledger.add_cleanup(self.case.id, written.id, BOARD, "publish compensation")
                self.case._emit("cleanup.scheduled", {"card_id": written.id, "source_id": source.id})
        self.ledger.mark_failed(self.case.id, source.id, f"{type(exc).__name__}: {exc}")
        self.case._emit(
            "memory.publish_failed",
            {"source_id": source.id, "error": type(exc).__name__,
             "copy_removed": written is not None},
        )

    def _delete_or_schedule(self, card_id: str, reason: str) -> None:
        try:
            if self.gw.delete(self.case.id, BOARD, card_id):
                return
        except Exception:  # noqa: BLE001 - any storage failure becomes a cleanup task
            pass
        self.ledger.add_cleanup(self.case.id, card_id, BOARD, reason)
        self.case._emit("cleanup.scheduled", {"card_id": card_id})

    # -- recovery ----------------------------------------------------------------------------
    def recover(self) -> dict[str, int]:
        """Repair what crashes left: cleanup tasks, stale reservations, orphan or duplicate copies."""
        case = self.case
        stats = {"cleanups": 0, "completed": 0, "rolled_back": 0, "orphans": 0, "duplicates": 0}
        for task in self.ledger.cleanup_tasks(case.id):
            done = self.gw.get(case.id, task.owner_role, task.card_id) is None or self.gw.delete(
                case.id, task.owner_role, task.card_id
            )
            self.ledger.finish_cleanup(case.id, task.card_id, done)
            if done:
                stats["cleanups"] += 1
                case._emit("cleanup.done", {"card_id": task.card_id})
        now = time.time()
        records = {r.source_id: r for r in self.ledger.publications(case.id)}
        copies: dict[str, list[MemoryCard]] = {}
        for card in self.gw.list(case.id, BOARD):
            copies.setdefault(card.source_id or "", []).append(card)
        for source_id, rec in records.items():
            if rec.status == "pending" and rec.lease_until >= now and owner_alive(rec.owner):
                continue  # a live publisher is at work
            found = copies.get(source_id, [])
            if rec.status == "ready":
                keep = next((c for c in found if c.id == rec.copy_id), None)
                if keep is None and found:
                    keep = found[0]
                    self._force_ready(source_id, keep.id)
                elif keep is None:
                    self.ledger.drop_publication(case.id, source_id)
                    stats["rolled_back"] += 1
            elif found:
                keep = found[0]
                self._force_ready(source_id, keep.id)
                stats["completed"] += 1
                case._emit("memory.reconciled", {"source_id": source_id, "copy_id": keep.id})
            else:
                keep = None
                self.ledger.drop_publication(case.id, source_id)
                stats["rolled_back"] += 1
            for dup in found:
                if keep is None or dup.id != keep.id:
                    self._delete_or_schedule(dup.id, "duplicate board copy")
                    stats["duplicates"] += 1
        for source_id, found in copies.items():
            if source_id not in records:
                for orphan in found:  # a copy no record speaks for: never completed publishing
                    self._delete_or_schedule(orphan.id, "orphan board copy")
                    stats["orphans"] += 1
        return stats

    def _force_ready(self, source_id: str, copy_id: str) -> None:
        with self.ledger.connect(immediate=True) as db:
            db.execute(
                "UPDATE publications SET status = 'ready', copy_id = ?, updated_at = ?"
                " WHERE case_id = ? AND source_id = ?",
                (copy_id, time.time(), self.case.id, source_id),
            )
