"""The publish saga: copy one private card to the board exactly once, whatever crashes.

Steps, each with an event so lesson 03 can show them in slow motion:

1. **reserve** a durable record keyed by (case, source card) in the ledger (``memory.publishing``);
2. **reconcile**: if an earlier attempt of that record wrote a board copy and died, adopt it
   instead of writing another (``memory.reconciled``);
3. **write** the board copy, carrying source role, source id and a content hash;
4. **mark ready** (``memory.published``).

The record's ``attempts`` counter fences every later step: a publisher whose reservation was taken
over cannot complete or fail it any more. A failure after the copy is written deletes it again
(compensation, ``memory.publish_failed``); if that delete fails, a cleanup task is recorded
(``cleanup.scheduled``) and retried by ``recover()`` and whenever a bureau opens
(``cleanup.done``). A pending record whose process is gone, or whose lease ran out, is taken over
by the next caller (``publish.taken_over``) or finished by ``recover()``.

A repeat publish is answered from the ledger: a ready record of this role for this card is the
proof that the card was checked (private, this role's, this case's) when it was first published,
and cards never change owner or visibility. The board copy itself is still fetched, so a repeat
never returns a card that is not there.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import (
    CardRevokedError,
    PublishError,
    PublishPendingError,
    UnknownCardError,
    VisibilityBoundaryError,
)
from ..ledger import Publication, is_stale
from ..model import BOARD, CaseSpace, MemoryCard
from ..text import short_repr
from ..tiers import LONG_TERM, Labels, labels
from . import faults

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..ledger.publishes import PublishStore
    from ..storage.gateway import MemoryGateway

Emit = Callable[[str, dict[str, Any]], Any]
"""Records one outward event of the case (``Case._emit``)."""

POLL_S = 0.02


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _revoked(source_id: str) -> CardRevokedError:
    return CardRevokedError(f"Card {source_id} was revoked; it is not published (again).")


def _copy_meta(source: MemoryCard) -> dict[str, str | None]:
    return {
        "visibility": "public",
        "topic": source.topic,
        "kind": source.kind,
        "source_role": source.owner,
        "source_id": source.id,
        "content_hash": content_hash(source.content),
        # trust tiers (issue 14): a board copy is durable, published content; it keeps the
        # trust of its source (approved tool output stays untrusted data on the board too)
        **Labels(LONG_TERM, "publication", labels(source).trust).meta(),
        # ... and its tool source (issue 19 §4): a board copy of promoted tool output still
        # says which tool it came from, wherever it is shown
        "tool_source": source.tool_source,
    }


class Publisher:
    """Runs the saga for one case. Its dependencies are narrow on purpose: the store, the
    ledger's publish records (``ledger.publishes``: it keeps no other store), the case's current
    namespace and a way to record events -- not the case or the bureau, so the saga cannot reach
    anything else (and the service imports it, not the other way round).
    """

    def __init__(self, gateway: MemoryGateway, publishes: PublishStore, space: CaseSpace,
                 emit: Emit, lease_s: float) -> None:
        self.gw = gateway
        self.publishes = publishes
        self.space = space
        self.case_id = space.case_id
        self.emit = emit
        self.lease_s = lease_s

    # -- the saga ----------------------------------------------------------------------------
    def publish(self, role: str, card_id: str, wait_s: float = 30.0) -> MemoryCard:
        card_id = str(card_id)
        # Already published by this role: one ledger read and one get of the board copy.
        rec = self.publishes.get(self.case_id, card_id)
        if rec is not None and rec.status == "ready" and rec.source_role == role:
            copy = self._ready_copy(rec)
            if copy is not None:
                return copy
        source = self._source(role, card_id)
        deadline = time.monotonic() + wait_s
        while True:
            outcome, rec = self.publishes.reserve(self.case_id, source.id, role, self.lease_s)
            if outcome == "revoked":
                raise _revoked(source.id)
            if outcome == "ready":
                copy = self._ready_copy(rec)
                if copy is not None:
                    return copy
                # The ready copy vanished (deleted outside the bureau?): publish it again.
                self.publishes.drop(self.case_id, source.id, rec)
                continue
            if outcome == "held":
                if time.monotonic() > deadline:
                    raise PublishPendingError(f"Card {source.id} is being published elsewhere.")
                time.sleep(POLL_S)
                continue
            return self._run(source, rec, outcome == "taken_over", deadline)

    def _run(self, source: MemoryCard, rec: Publication, taken_over: bool,
             deadline: float) -> MemoryCard:
        attempt = rec.attempts
        if taken_over:
            self.emit("publish.taken_over", {"source_id": source.id, "attempt": attempt})
        self.emit(
            "memory.publishing",
            {"source_id": source.id, "source_role": source.owner, "attempt": attempt},
        )
        copy: MemoryCard | None = None
        written: MemoryCard | None = None
        try:
            faults.hit("publish.after_reserve")
            if attempt > 1:  # an earlier attempt may have written the copy before it died
                copy = self._reconcile(source)
            if copy is None:
                written = copy = self.gw.add(self.space, BOARD, source.content,
                                             _copy_meta(source))
                faults.hit("publish.after_copy_written")
            faults.hit("publish.before_mark_ready")
            ready = self.publishes.mark_ready(self.case_id, source.id, copy.id, attempt)
        except Exception as exc:
            self._compensate(source, attempt, copy, written, exc, deadline)
            raise PublishError(
                f"Publishing card {source.id} failed ({type(exc).__name__}: {exc}).",
                "The board is unchanged; try again.",
            ) from exc
        except BaseException as exc:  # KeyboardInterrupt and friends: undo, then let it through
            self._compensate(source, attempt, copy, written, exc, deadline)
            raise
        if not ready:
            return self._lost_lease(source, copy, written, deadline)
        self.emit(
            "memory.published",
            {"source_id": source.id, "source_role": source.owner, "copy_id": copy.id,
             "topic": copy.topic, "kind": copy.kind, "attempt": attempt},
        )
        return copy

    def _ready_copy(self, rec: Publication) -> MemoryCard | None:
        copy = self.gw.get(self.space, BOARD, rec.copy_id or "")
        return copy if copy is not None and copy.source_id == rec.source_id else None

    def _source(self, role: str, card_id: str) -> MemoryCard:
        """The card to publish: it must be this role's, in this case, and private.

        Only the role's own space is looked at, and every card outside it gets the same answer,
        whether it exists in another role's space, on the board, in another case or nowhere:
        a different refusal would tell a role which ids exist where.
        """
        card = self.gw.get(self.space, role, card_id)
        if card is None:
            raise UnknownCardError(
                f"{role} has no card {short_repr(card_id)} among its private cards in case "
                f"{self.case_id}.",
                "A role can only publish its own private cards; list them with "
                "case.cards(role).",
            )
        if card.visibility != "private":
            raise VisibilityBoundaryError(
                f"Card {card_id} is not private.", "Only private cards can be published."
            )
        return card

    def _doomed(self) -> set[str]:
        """Card ids with a pending cleanup task: never adopt those."""
        return {t.card_id for t in self.publishes.cleanup_tasks(self.case_id)}

    def _reconcile(self, source: MemoryCard) -> MemoryCard | None:
        """Adopt a board copy an earlier attempt wrote; delete any duplicates beyond the first."""
        doomed = self._doomed()
        copies = [c for c in self.gw.list(self.space, BOARD, where={"source_id": source.id})
                  if c.id not in doomed]
        if not copies:
            return None
        keep, extra = copies[0], copies[1:]
        for dup in extra:
            self._delete_or_schedule(dup.id, "duplicate board copy", source.id)
        self.emit(
            "memory.reconciled",
            {"source_id": source.id, "copy_id": keep.id, "duplicates_removed": len(extra)},
        )
        return keep

    def _await_settled(self, source_id: str, deadline: float) -> Publication | None:
        """The record once it is no longer pending (or as it is when the deadline passes)."""
        while True:
            rec = self.publishes.get(self.case_id, source_id)
            if rec is None or rec.status != "pending" or time.monotonic() > deadline:
                return rec
            time.sleep(POLL_S)

    def _lost_lease(self, source: MemoryCard, copy: MemoryCard, written: MemoryCard | None,
                    deadline: float) -> MemoryCard:
        """Our reservation was taken over while we were slow: defer to whoever holds it now."""
        rec = self._await_settled(source.id, deadline)
        if rec is not None and rec.blocked:  # revoked while we copied: our copy goes again
            self._delete_or_schedule(copy.id, "source revoked", source.id)
            raise _revoked(source.id)
        theirs = rec.copy_id if rec is not None and rec.status == "ready" else None
        if theirs == copy.id:
            return copy  # the new owner adopted our copy
        if written is not None and rec is not None and rec.status == "pending":
            # Still theirs and unresolved: they may yet adopt our copy; recover() sorts it out.
            raise PublishPendingError(f"Card {source.id} was taken over by another publisher.")
        if written is not None:
            self._delete_or_schedule(written.id, "lost lease", source.id)
        found = self.gw.get(self.space, BOARD, theirs) if theirs else None
        if found is not None:
            return found
        raise PublishPendingError(f"Card {source.id} was taken over by another publisher.")

    def _compensate(self, source: MemoryCard, attempt: int, copy: MemoryCard | None,
                    written: MemoryCard | None, exc: BaseException, deadline: float) -> None:
        """Undo a failed attempt: delete its board copy (if we still own the record), fail it."""
        error = f"{type(exc).__name__}: {exc}"
        removed = False
        owned = True
        if copy is not None:
            # Keep the record pending (and ours) while the copy goes, so nobody adopts it meanwhile.
            owned = self.publishes.renew(self.case_id, source.id, attempt, self.lease_s)
            if owned:
                try:
                    faults.hit("publish.during_compensation")
                    removed = self.gw.delete_or_gone(self.space, BOARD, copy.id)
                except Exception:  # noqa: BLE001 - any storage failure becomes a cleanup task
                    removed = False
                if not removed:
                    self.publishes.add_cleanup(self.case_id, copy.id, BOARD, "publish compensation")
                    self.emit("cleanup.scheduled", {"card_id": copy.id, "source_id": source.id,
                                                     "reason": "publish compensation"})
            elif written is not None:
                rec = self._await_settled(source.id, deadline)
                if rec is None or rec.status != "pending":
                    if rec is None or rec.copy_id != written.id:
                        self._delete_or_schedule(written.id, "lost lease", source.id)
                        removed = True
        if owned:
            self.publishes.mark_failed(self.case_id, source.id, attempt, error)
        self.emit(
            "memory.publish_failed",
            {"source_id": source.id, "error": type(exc).__name__, "attempt": attempt,
             "copy_removed": removed, "cleanup_scheduled": copy is not None and not removed},
        )

    def _delete_or_schedule(self, card_id: str, reason: str, source_id: str | None = None) -> None:
        try:
            if self.gw.delete_or_gone(self.space, BOARD, card_id):
                return
        except Exception:  # noqa: BLE001 - any storage failure becomes a cleanup task
            pass
        self.publishes.add_cleanup(self.case_id, card_id, BOARD, reason)
        self.emit("cleanup.scheduled",
                        {"card_id": card_id, "source_id": source_id, "reason": reason})

    # -- recovery ----------------------------------------------------------------------------
    def recover(self) -> dict[str, int]:
        """Repair what crashes left: cleanup tasks, stale reservations, orphan or duplicate copies.

        Live reservations (lease running, owner process alive) are left alone, and every change
        to a record is a compare-and-set, so recover() may run while others publish.
        """
        stats = {"cleanups": 0, "completed": 0, "rolled_back": 0, "orphans": 0, "duplicates": 0,
                 "unexplained": 0, "revoked": 0}
        ready = {r.copy_id for r in self.publishes.all(self.case_id) if r.status == "ready"}
        for task in self.publishes.cleanup_tasks(self.case_id):
            if task.card_id in ready:  # adopted after all: the task is void
                done = True
            else:
                try:
                    done = self.gw.delete_or_gone(self.space, task.owner_role, task.card_id)
                except Exception:  # noqa: BLE001 - retried next time
                    done = False
            self.publishes.finish_cleanup(self.case_id, task.card_id, done)
            if done:
                stats["cleanups"] += 1
                self.emit("cleanup.done", {"card_id": task.card_id})
        # Copies first, records second: a copy listed here was reserved before it was written,
        # so its record is in the list read below (unless recovery itself removed it).
        doomed = self._doomed()
        copies: dict[str, list[MemoryCard]] = {}
        for card in self.gw.list(self.space, BOARD):
            if card.id not in doomed:
                copies.setdefault(card.source_id or "", []).append(card)
        now = time.time()
        records = {r.source_id: r for r in self.publishes.all(self.case_id)}
        for source_id, rec in records.items():
            found = copies.get(source_id, [])
            if rec.blocked:  # revoked: whatever an attempt left on the board goes (issue 19)
                for card in found:
                    self._delete_or_schedule(card.id, "source revoked", source_id)
                    stats["revoked"] += 1
                continue
            if rec.status == "pending" and not is_stale(rec, now):
                continue  # a live publisher is at work
            keep: MemoryCard | None = None
            if rec.status == "ready":
                keep = next((c for c in found if c.id == rec.copy_id), None)
                if keep is None and found:
                    keep = found[0]
                    if not self.publishes.force_ready(rec, keep.id):
                        continue
                    self.emit("memory.reconciled", {"source_id": source_id, "copy_id": keep.id})
                elif keep is None:
                    if self.publishes.drop(self.case_id, source_id, rec):
                        stats["rolled_back"] += 1
                    continue
            elif found:  # an abandoned attempt wrote its copy: finish it
                keep = found[0]
                if not self.publishes.force_ready(rec, keep.id):
                    continue
                stats["completed"] += 1
                self.emit("memory.reconciled", {"source_id": source_id, "copy_id": keep.id})
            else:  # an abandoned attempt wrote nothing: fail it, a later publish starts over
                why = "owner gone or lease over"
                if rec.status == "pending" and self.publishes.abandon(rec, why):
                    stats["rolled_back"] += 1
                    self.emit("memory.publish_failed",
                               {"source_id": source_id, "error": "abandoned",
                                "attempt": rec.attempts, "copy_removed": False})
                continue
            for dup in found:
                if dup.id != keep.id:
                    self._delete_or_schedule(dup.id, "duplicate board copy", source_id)
                    stats["duplicates"] += 1
        for source_id, found in copies.items():
            if source_id in records:
                continue
            # No record speaks for this copy. Every publish reserves its record before it writes
            # a copy, so this is not a crash the saga left behind: the ledger lost the record
            # (damaged, replaced, restored from an old backup). Deleting the copy could destroy
            # a real publication; leave it and say so.
            stats["unexplained"] += len(found)
            for card in found:
                log.warning("case %s: board copy %s (source %s) has no publish record; left in "
                            "place (run `python -m bureau repair`)", self.case_id, card.id, source_id)
        return stats
