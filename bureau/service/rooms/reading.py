"""The reading room: what one role may see, and the searches that show it.

Every read of a role goes through :class:`Reading`: the scopes come from
:func:`bureau.scopes.readable_scopes` (its own space, the board, the task scopes it is an
accepted member of now, and inside a run that run's ephemeral scope), the gateway fills in case
and role filters, and :class:`RoleView` is the one rule that drops what the role may not see
among what the store returned (revoked or expired cards, task-scope cards that show no current
value). Questions never widen scopes because scopes are never derived from questions.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import InvalidArgumentError, UnknownCardError
from ...model import BOARD, CaseSpace, MemoryCard, RetrievalTrace, ScopeResult
from ...scopes import readable_scopes
from ...settings import check_limit, check_threshold
from ...text import MAX_QUESTION_CHARS, card_id_text, clean_text, short_repr
from ...tiers import SEARCHED_IN_RUN, SEARCHED_OUTSIDE_RUN
from ...tiers.provenance import parse_run_owner
from .context import CaseContext, Dead, live

if TYPE_CHECKING:
    from .task_scopes import TaskScopes


@dataclass(frozen=True)
class RoleView:
    """What a read may keep, as of one ledger read: the live namespace, the dead cards, and
    for each task scope the ids of the cards showing current values."""

    space: CaseSpace
    dead: Dead
    shown: dict[str, frozenset[str]]

    def keeps(self, scope: str, card: MemoryCard) -> bool:
        """The one filter every read path applies to what the store returned: not revoked or
        expired, not copied from a card that is (a copy made while its source was being
        revoked), and for a task scope, showing a current value."""
        return live(card, self.dead) and (scope not in self.shown or card.id in
                                          self.shown[scope])

    def kept(self, scope: str, cards: Iterable[MemoryCard]) -> list[MemoryCard]:
        return [c for c in cards if self.keeps(scope, c)]

    def extra(self, scopes: Sequence[str], hidden: int) -> int:
        """How many more cards a top-k must ask for so that, once the filter has dropped dead
        and superseded cards, each scope still gets its own k."""
        return sum(1 for owner, _ in self.dead.values() if owner in scopes) + hidden


class Reading:
    """Searches, lists and gets, each limited to the spaces one role may read."""

    def __init__(self, ctx: CaseContext, task_scopes: TaskScopes) -> None:
        self._ctx = ctx
        self._scopes = task_scopes

    def view(self, role: str | None, dead_view: tuple[CaseSpace, Dead] | None = None
             ) -> RoleView:
        """The role's view now (``None``: every live task scope, the operator's view)."""
        role = None if role is None else self._ctx.role(role)
        if dead_view is not None and not (isinstance(dead_view, tuple) and len(dead_view) == 2):
            raise InvalidArgumentError("dead_view must be (namespace, dead cards) from the "
                                       "case context.")
        space, dead = self._ctx.view() if dead_view is None else dead_view
        return RoleView(space, dead, self._scopes.view(role))

    def scopes_for(self, role: str) -> list[str]:
        """The only spaces a role may search: its own, the board, its task scopes."""
        role = self._ctx.role(role)
        return readable_scopes(role, tuple(self._scopes.view(role)))

    def search(self, role: str, question: str, limit: int | None = None, *,
               view: RoleView | None = None, run_scope: str | None = None,
               threshold: float | None = None) -> RetrievalTrace:
        """One search of exactly the role's scopes (and a run's ephemeral scope, first); each
        scope gets its own top-``limit`` of cards the role may see. No event."""
        ctx = self._ctx
        role = ctx.role(role)
        threshold = None if threshold is None else check_threshold(threshold)
        if view is not None and not isinstance(view, RoleView):
            raise InvalidArgumentError("view must be a RoleView from Reading.view.")
        if run_scope is not None and (type(run_scope) is not str
                                      or parse_run_owner(run_scope) is None):
            raise InvalidArgumentError("run_scope must be a run's ephemeral scope.")
        view = self.view(role) if view is None else view
        scopes = readable_scopes(role, tuple(view.shown))
        if run_scope is not None:
            scopes = [run_scope, *scopes]
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        settings = ctx.settings()
        limit = settings.search_limit if limit is None else check_limit(limit)
        gw = ctx.gateway
        hidden = self._scopes.hidden(view.space, view.shown) if view.shown else 0
        k = limit + view.extra(scopes, hidden)
        start = time.perf_counter()
        vector, embed_ms = gw.embed_query(q)
        if settings.query_per_scope:  # exact per-scope latency, one query each (slower)
            found, timing = {}, {}
            for scope in scopes:
                found[scope], timing[scope] = gw.search_scope(view.space, scope, vector, k)
        else:  # each scope's own top-k; each scope reports the whole search's latency
            found, ms = gw.search_scopes(view.space, scopes, vector, k)
            timing = dict.fromkeys(scopes, ms)
        if view.dead or view.shown or k != limit:
            found = {sc: view.kept(sc, cards)[:limit] for sc, cards in found.items()}
        thr = settings.relevance_threshold if threshold is None else check_threshold(threshold)
        results = tuple(
            ScopeResult(scope,
                        tuple(c for c in found[scope] if (c.score or 0) >= thr),
                        tuple(c for c in found[scope] if (c.score or 0) < thr),
                        round(timing[scope], 3))
            for scope in scopes
        )
        return RetrievalTrace(
            request_id=uuid.uuid4().hex[:12], case_id=ctx.case_id, role=role, question=q,
            scopes=results, threshold=thr, embed_ms=round(embed_ms, 3),
            total_ms=round((time.perf_counter() - start) * 1000, 3),
            mode=ctx.responder().name, shared_query=not settings.query_per_scope,
            tiers=SEARCHED_IN_RUN if run_scope is not None else SEARCHED_OUTSIDE_RUN,
        )

    def retrieve(self, role: str, question: str, limit: int | None = None, *,
                 run_scope: str | None = None) -> RetrievalTrace:
        """A search, recorded as a ``retrieval.completed`` event (its summary only)."""
        trace = self.search(role, question, limit, run_scope=run_scope)
        self._ctx.emit("retrieval.completed", trace.summary())
        return trace

    def cards(self, role: str) -> list[MemoryCard]:
        """What a role may list: its own private cards, the board and the current values of
        the task scopes it is an accepted member of."""
        role = self._ctx.role(role)
        gw = self._ctx.gateway
        view = self.view(role)
        own = view.kept(role, gw.list(view.space, role)) + view.kept(BOARD, gw.list(view.space,
                                                                                  BOARD))
        return own + [c for owner in view.shown for c in view.kept(owner, gw.list(view.space,
                                                                                   owner))]

    def card(self, role: str, card_id: object) -> MemoryCard:
        """One card as a role: its own, a board card or a task-scope value it may read; every
        other id (another role's, another case's, a revoked one, none) gets the same refusal."""
        role = self._ctx.role(role)
        view = self.view(role)
        cid = card_id_text(card_id)
        for scope in (role, BOARD, *view.shown) if cid is not None else ():
            card = self._ctx.gateway.get(view.space, scope, cid)
            if card is not None and view.keeps(scope, card):
                return card
        raise UnknownCardError(f"{role} has no card {short_repr(card_id)} in case "
                               f"{self._ctx.case_id}.")

    def knowers(self, question: str) -> list[str]:
        """Which roles would retrieve a relevant card for this question (operator; no events)."""
        ctx = self._ctx
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        gw = ctx.gateway
        view = self.view(None)
        vector, _ = gw.embed_query(q)
        thr = ctx.settings().relevance_threshold
        hidden = self._scopes.hidden(view.space, view.shown) if view.shown else 0
        lim = ctx.settings().search_limit + len(view.dead) + hidden

        def relevant(scope: str) -> bool:
            cards, _ = gw.search_scope(view.space, scope, vector, lim)
            return any((c.score or 0) >= thr for c in view.kept(scope, cards))

        board = relevant(BOARD)
        members = self._scopes.members_of() if view.shown else {}
        in_scopes = {r for owner in view.shown if relevant(owner) for r in members.get(owner, ())}
        return [r for r in ctx.roles if board or r in in_scopes or relevant(r)]


__all__ = ["Reading", "RoleView"]
