"""Scope search: the gateway's search statements, and the scope cache kept in step with the store.

The gateway (:class:`~bureau.storage.gateway.MemoryGateway`) asks here for each scope's own
top-k. Three ways, one answer:

* **cached** (``Settings.scope_cache`` > 0, the default): each scope's in-process matrix
  (:mod:`.scope_index`) names the candidates -- every card that may be in the scope's exact
  top-k -- and one statement reads just those rows by primary key, with seekdb's own
  ``cosine_distance`` ordered by (distance, id), beside the scopes' write versions. The same
  cards, scores and order as the exact search below, at a fraction of its time (issue 36).
* **exact** (:meth:`ScopeSearch.exact`): seekdb scans every row of each scope, ``ORDER BY
  distance, id LIMIT k``: the reference the cache must equal, and its fallback.
* **approximate** (cache off): PowerMem's own per-scope query (``APPROXIMATE LIMIT``), one
  sub-query per scope in one statement.

Sealed scopes (issue 51): the store holds no usable vector of a sealed card (each is sealed under
its card's key in the row's metadata; the vector column is noise), so a sealed scope is searched
here whatever the mode: its matrix is built by opening its cards' vectors, its exact top-k is
computed in this process (:meth:`.ScopeMatrix.top`: the same cards, order and cosines, to
~1e-7, as seekdb's exact scan of the same vectors), and the statement reads back only those rows
by id, beside the versions. The query vector never reaches the store. The trade: no server-side
vector index serves a sealed scope, and its first search in a process pays for opening every
vector of the scope (``python -m bureau bench`` reports it). Unsealed scopes keep the three
ways above. Rows come back sealed and are opened by the gateway's sealer; a forgotten card (its
key destroyed) is never in a matrix, and a row whose key went meanwhile is left out.

Staying in step, also with other processes: every gateway write to a scope -- clear or sealed,
add, delete or purge -- bumps the scope's row in the store's versions table
(:func:`.schema.versions_table`) *after* the write (:meth:`ScopeSearch.wrote`); a search reads
its scopes' versions in the same statement as the candidates, and a matrix whose version is not
the store's is dropped and rebuilt. A write of this process updates its matrix in place and
counts it one version on (one statement per write: had another writer come between, the store's
version is further on and the next search rebuilds); a purge drops the matrices.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import BoundaryViolation
from ..model import CaseSpace, MemoryCard
from ..sealing import VECTOR_KEY
from .rows import check_row, ids_of, sql_name, vector_literal
from .schema import scope_index, versions_table
from .scope_index import ScopeIndex, ScopeMatrix, parse_vectors
from .setup import LOCK, sql_engine
from .statements import statements


class ScopeSearch:
    """One gateway's search statements and scope cache (``index``: this process's matrices)."""

    def __init__(self, gateway: Any) -> None:
        self.gw = gateway
        sql = sql_engine(gateway.memory) is not None
        self.index = ScopeIndex(gateway.encoder.dims, gateway.settings.scope_cache if sql else 0)
        """``index.forget(uid, owner)`` / ``index.drop(ids)`` are how anything outside the
        gateway that removes stored vectors reaches the cache."""

    def configure(self, limit: float) -> None:
        """A new ``Settings.scope_cache`` (0: off); the matrices held so far are dropped."""
        with LOCK:
            self.index.configure(limit if sql_engine(self.gw.memory) is not None else 0)

    @property
    def _vs(self) -> Any:
        return self.gw.memory.storage.vector_store

    def _selected(self) -> list[str]:
        """The card columns as a search, a page or a row reads them: the metadata without a
        sealed row's vector token (2 kB a row that only a matrix build needs, :meth:`_fill`)."""
        meta = self._vs.metadata_field
        return [f"JSON_REMOVE(`{c}`, '$.{VECTOR_KEY}') AS `{c}`" if c == meta else f"`{c}`"
                for c in self._columns()]

    def _columns(self) -> list[str]:
        """The card columns a search reads (its distance is selected after them as ``_dist``)."""
        vs = self._vs
        return [vs.text_field, vs.metadata_field, vs.primary_field, "user_id", "agent_id",
                "created_at"]

    # -- the three searches -------------------------------------------------------------------
    def search(self, case: CaseSpace, wanted: list[str], vector: np.ndarray, k: int
               ) -> tuple[dict[str, list[MemoryCard]], float]:
        """Each scope's own top-k: through the cache when it is on, else PowerMem's query."""
        if self.index.enabled:
            return self._cached(case, wanted, vector, k)
        return self._plain(case, wanted, vector, k, "approximate")

    def exact(self, case: CaseSpace, wanted: list[str], vector: np.ndarray, k: int
              ) -> tuple[dict[str, list[MemoryCard]], float]:
        """seekdb's exact search of each scope: every row's distance, ordered by (distance,
        id), the first ``k``; a full scan inside seekdb, so its time grows with the scope."""
        return self._plain(case, wanted, vector, k, "exact")

    def _plain(self, case: CaseSpace, wanted: list[str], vector: np.ndarray, k: int, mode: str
               ) -> tuple[dict[str, list[MemoryCard]], float]:
        """One statement, one sub-query per scope (PowerMem's ``approximate`` one, or
        ``exact``). Each sub-query orders by the distance it selects (``ORDER BY _dist``), so
        seekdb parses the ~4.7 kB vector literal once per scope instead of twice. A sealed
        scope is searched in this process over a matrix opened for this search alone (the
        reference the cache is held to, and the way with the cache off)."""
        case_id, uid = ids_of(case)
        query = np.asarray(vector, np.float64).astype(np.float32)
        lit = vector_literal(query)
        start = time.perf_counter()

        def run() -> tuple[list[Any], dict[str, dict[int, float]]]:
            with LOCK:
                return self._exact_rows(uid, wanted, query, lit, k, mode)

        rows, given = self.gw._retry(run, "searching")
        ms = (time.perf_counter() - start) * 1000
        checked = self._placed(self._split(rows, uid, wanted), given)
        return self._cards(checked, uid, case_id, wanted, k, by_id=mode != "approximate"), ms

    def _cached(self, case: CaseSpace, wanted: list[str], vector: np.ndarray, k: int
                ) -> tuple[dict[str, list[MemoryCard]], float]:
        """The cache's search, in one statement (after a scope's first search builds it).

        A scope whose version is not its matrix's (another process wrote to it), or whose
        candidate rows are not all there, is rebuilt and the search asked again; an unsealed
        scope with more near-ties than :data:`~.scope_index.MAX_CANDIDATES` is scanned by
        seekdb for that search. A sealed scope's top-k is the matrix's own (:meth:`.ScopeMatrix.top`),
        its rows read back by id. Timing (issue 9): a matrix is never evicted for another
        scope's, so a role's search time depends on its own scopes only."""
        case_id, uid = ids_of(case)
        query = np.asarray(vector, np.float64).astype(np.float32)
        lit = vector_literal(query)
        start = time.perf_counter()

        def run() -> tuple[list[Any], dict[str, dict[int, float]]]:
            with LOCK:
                for _attempt in range(3):
                    mats = {o: self.index.get(uid, o) or self._build(uid, o) for o in wanted}
                    given = {o: self._sealed_top(uid, o, mats[o], query, k)
                             for o in wanted if mats[o].sealed}
                    plan = {o: list(given[o]) if o in given else mats[o].candidates(query, k)
                            for o in wanted}
                    parts = [self._part(uid, o, lit, k, "rows" if o in given else
                                        "exact" if plan[o] is None else "ids", plan[o])
                             for o in wanted if plan[o] != []]
                    rows = self._union([*parts, self._versions_part(uid, wanted)])
                    versions, counts = self._tally(rows)
                    stale = [o for o in wanted if versions.get(o, 0) != mats[o].version
                             or (plan[o] is not None and counts.get(o, 0) != min(k, len(plan[o])))]
                    if not stale:
                        return rows, given
                    for o in stale:
                        self.index.forget(uid, o)
                # three rebuilds overtaken by writers: this search runs as the exact one does
                return self._exact_rows(uid, wanted, query, lit, k)

        rows, given = self.gw._retry(run, "searching")
        ms = (time.perf_counter() - start) * 1000
        checked = self._placed(self._split(rows, uid, wanted), given)
        return self._cards(checked, uid, case_id, wanted, k, by_id=True), ms

    def _exact_rows(self, uid: str, wanted: list[str], query: np.ndarray, lit: str, k: int,
                    mode: str = "exact") -> tuple[list[Any], dict[str, dict[int, float]]]:
        """Every scope searched without the cache (seekdb's ``mode`` search; a sealed scope
        over a matrix opened for this search alone). The caller holds the lock."""
        given: dict[str, dict[int, float]] = {}
        parts = []
        for o in wanted:
            if self.gw.sealer.sealed_scope(uid, o):
                once = self._build(uid, o, into=ScopeIndex(self.index.dims, 1.05))
                given[o] = self._sealed_top(uid, o, once, query, k)
                if given[o]:
                    parts.append(self._part(uid, o, lit, k, "rows", list(given[o])))
            else:
                parts.append(self._part(uid, o, lit, k, mode))
        return self._union(parts), given

    def _sealed_top(self, uid: str, owner: str, matrix: ScopeMatrix, query: np.ndarray,
                    k: int) -> dict[int, float]:
        """A sealed scope's exact top-k, ``{id: distance}`` in order. A card whose key went
        since the matrix was built (a forget whose row is not deleted yet: a crash between
        the two, or another process half way) leaves the matrix here, and the next one
        moves up, as it does in a matrix opened afresh."""
        while True:
            ids, dists = matrix.top(query, k)
            live = self.gw.sealer.keys.data_keys(
                uid, owner, [str(i) for i in ids if i not in matrix.clear])
            gone = [i for i in ids if str(i) not in live and i not in matrix.clear]
            if not gone:
                return dict(zip(ids, dists, strict=True))
            matrix.drop(gone)

    @staticmethod
    def _placed(checked: list[dict[str, Any]], given: dict[str, dict[int, float]]
                ) -> list[dict[str, Any]]:
        """A sealed scope's rows given the distances its matrix computed (the store's vector
        column is noise there); a row the matrix did not name is not this search's."""
        if not given:
            return checked
        out = []
        for row in checked:
            dists = given.get(row["agent_id"])
            if dists is None:
                out.append(row)
                continue
            dist = dists.get(int(row["id"]))
            if dist is None:
                continue
            out.append({**row, "_dist": dist, "score": max(0.0, 1.0 - dist / 2.0)})
        return out

    def row(self, uid: str, owner: str, card_id: int) -> dict[str, Any] | None:
        """One card's row by primary key -- text, labels, owner, time, no vector -- checked
        against the scope asked for; ``None`` when it is not in that scope. The caller holds
        the lock. PowerMem's own ``get`` also reads the 384-number vector and parses it
        (~3.4 ms a card in the leak lab, whose every publish reads its source card)."""
        text_, meta, pk, user, agent, created = self._selected()
        part = (f"(SELECT {text_}, {meta}, {pk}, {user}, {agent}, {created}, 0 AS `_dist` FROM "
                f"`{self._vs.collection_name}` WHERE {pk} = {int(card_id)} AND "
                f"`user_id` = {sql_name(uid)} AND `agent_id` = {sql_name(owner)})")
        checked = self._split(self._union([part]), uid, [owner])
        return checked[0] if checked else None

    def page(self, uid: str, owner: str | None, limit: int, offset: int) -> list[dict[str, Any]]:
        """A page of a case's rows (of one owner, or of all), by id, without their vectors:
        what PowerMem's ``get_all`` sorted by id gives, but its reading and parsing of every
        row's 384 numbers (~12 ms a listing in the leak lab, two per case). The caller holds
        the lock."""
        text_, meta, pk, user, agent, created = self._selected()
        table = self._vs.collection_name
        where = f"`user_id` = {sql_name(uid)}"
        if owner is not None:
            where += f" AND `agent_id` = {sql_name(owner)}"
        part = (f"(SELECT /*+ INDEX(`{table}` `{scope_index(table)}`) */ {text_}, {meta}, {pk}, "
                f"{user}, {agent}, {created}, 0 AS `_dist` FROM `{table}` WHERE {where} "
                f"ORDER BY {pk} LIMIT {int(limit)} OFFSET {int(offset)})")
        checked = self._split(self._union([part]), uid, None if owner is None else [owner])
        for row in checked:  # as PowerMem's listing hands them over
            if isinstance(row["created_at"], datetime):
                row["created_at"] = row["created_at"].isoformat()
        return sorted(checked, key=lambda r: int(r["id"]))

    # -- the statements -------------------------------------------------------------------------
    def _part(self, uid: str, owner: str, lit: str, k: int, mode: str,
              ids: list[int] | None = None) -> str:
        """One scope's sub-query: ``approximate`` (PowerMem's own, seekdb's ``APPROXIMATE
        LIMIT``), ``exact`` (every row, ordered by distance then id), ``ids`` (only these
        rows, by primary key, ordered the same way as ``exact``) or ``rows`` (a sealed scope:
        these rows by primary key, no distance: the matrix computed them; ``_dist`` 0 marks a
        card row)."""
        vs = self._vs
        table = vs.collection_name
        inner = ", ".join(self._selected())
        # The (case, role) index, named: unhinted, seekdb scans the whole case's rows, and a
        # role's search time (in its X-ray) grew with the cards other roles hold.
        hint = (f"/*+ INDEX(`{table}` PRIMARY) */" if mode in ("ids", "rows")
                else f"/*+ INDEX(`{table}` `{scope_index(table)}`) */")
        where = f"`user_id` = {sql_name(uid)} AND `agent_id` = {sql_name(owner)}"
        if mode in ("ids", "rows"):
            where += f" AND `{vs.primary_field}` IN ({', '.join(str(int(i)) for i in ids or [])})"
        if mode == "rows":
            return f"(SELECT {hint} {inner}, 0 AS _dist FROM `{table}` WHERE {where})"
        order = ("ORDER BY `_dist` APPROXIMATE LIMIT" if mode == "approximate"
                 else f"ORDER BY `_dist`, `{vs.primary_field}` LIMIT")
        return (f"(SELECT {hint} {inner}, cosine_distance(`{vs.vector_field}`, '{lit}') AS _dist"
                f" FROM `{table}` WHERE {where} {order} {int(k)})")

    def _versions_part(self, uid: str, owners: list[str]) -> str:
        """The scopes' versions as rows of the card union: the version in the id column, the
        owner in the owner column, NULL elsewhere (a card row always has a distance)."""
        names = ", ".join(sql_name(o) for o in owners)
        text, meta, pk, user, agent, created = (f"`{c}`" for c in self._columns())
        return (f"(SELECT NULL AS {text}, NULL AS {meta}, `version` AS {pk}, NULL AS {user}, "
                f"`agent_id` AS {agent}, NULL AS {created}, NULL AS `_dist` FROM "
                f"`{versions_table(self._vs.collection_name)}` WHERE `user_id` = {sql_name(uid)} "
                f"AND `agent_id` IN ({names}))")

    def _union(self, parts: list[str]) -> list[Any]:
        """Run sub-queries joined by ``UNION ALL``; the caller holds the lock.

        Embedded seekdb's driver only reads a result whose statement starts with SELECT, and
        names its columns itself: select them again, by position, from the union. The last part
        is one row of NULLs (dropped when parsed) so the result is never empty: through
        SQLAlchemy (:func:`.statements.statements` with ``through_engine``), an empty result
        sends pyobvector's cursor through sqlglot to name its columns, ~20 ms of Python for the
        vector literals (every search of an empty scope)."""
        cols = self._columns()
        parts = [*parts, f"(SELECT {', '.join(['NULL'] * (len(cols) + 1))})"]
        sql = (f"SELECT {', '.join(f'u.`{c}`' for c in [*cols, '_dist'])} FROM ("
               + " UNION ALL ".join(parts) + ") AS u")
        with statements(self.gw.memory) as conn:
            # No bind parameters, no SQLAlchemy compilation: scanning the ~10 kB statement for
            # them cost more than seekdb's search (the names are validated literals).
            return conn.rows(sql)

    @staticmethod
    def _tally(rows: list[Any]) -> tuple[dict[str, int], dict[str, int]]:
        """The versions read and how many card rows each scope returned, without parsing or
        checking a row: whether a cached search must be asked again is decided before its rows
        are read (:meth:`_split`, once, on the rows kept)."""
        versions: dict[str, int] = {}
        counts: dict[str, int] = {}
        for _content, _meta, row_id, row_uid, owner, _created, dist in rows:
            if dist is not None:
                counts[owner] = counts.get(owner, 0) + 1
            elif owner is not None and row_id is not None and row_uid is None:
                versions[str(owner)] = int(row_id)
        return versions, counts

    @staticmethod
    def _split(rows: list[Any], uid: str, wanted: list[str] | None) -> list[dict[str, Any]]:
        """The card rows, parsed and checked against the scopes asked for (``None``: any scope
        of ``uid``); version rows and the NULL row are skipped (:meth:`_tally` counts them)."""
        allowed = None if wanted is None else set(wanted)
        checked: list[dict[str, Any]] = []
        for content, meta, row_id, row_uid, owner, created, dist in rows:
            if dist is None:
                continue  # a version row or the NULL row
            if allowed is not None and owner not in allowed:
                raise BoundaryViolation(f"A search scoped to {uid}/{wanted} returned a row of "
                                        f"{row_uid}/{owner}.")
            checked.append(check_row({
                "id": row_id, "memory": content, "user_id": row_uid, "agent_id": owner,
                "metadata": json.loads(meta) if isinstance(meta, str | bytes) else (meta or {}),
                "created_at": created,
                # PowerMem's similarity for cosine distance d, so _scored reads both paths alike
                "score": max(0.0, 1.0 - float(dist) / 2.0), "_dist": float(dist),
            }, uid, owner, "search"))
        return checked

    def _cards(self, checked: list[dict[str, Any]], uid: str, case_id: str, wanted: list[str],
               k: int, by_id: bool) -> dict[str, list[MemoryCard]]:
        """The rows opened (forgotten ones left out), per scope, ordered by distance (then id
        for the exact order), at most ``k``."""
        out: dict[str, list[tuple[float, int, MemoryCard]]] = {o: [] for o in wanted}
        for row in self.gw._opened(uid, checked, reader=wanted):
            out[row["agent_id"]].append((row["_dist"], int(row["id"]) if by_id else 0,
                                         self.gw._scored(row, case_id)))
        return {o: [c for _, _, c in sorted(hits, key=lambda h: (h[0], h[1]))][:k]
                for o, hits in out.items()}

    # -- keeping the versions and matrices in step with the store -------------------------------
    def _bump(self, uid: str, owners: Sequence[str], whole_space: bool = False) -> None:
        """Count a write to each scope in the store's versions table (after the write itself).
        ``whole_space``: every scope of the namespace."""
        table = versions_table(self._vs.collection_name)
        with statements(self.gw.memory) as conn:
            if whole_space:
                conn.run(f"UPDATE `{table}` SET `version` = `version` + 1 "
                         f"WHERE `user_id` = {sql_name(uid)}")
            for owner in owners:
                conn.run(
                    f"INSERT INTO `{table}` (`user_id`, `agent_id`, `version`) VALUES "
                    f"({sql_name(uid)}, {sql_name(owner)}, 1) "
                    "ON DUPLICATE KEY UPDATE `version` = `version` + 1")
            conn.commit()

    def _counted(self, uid: str, owners: Sequence[str], whole_space: bool = False) -> None:
        """:meth:`_bump` through the gateway's disk guard and retry (a repeated bump only
        makes a matrix rebuild). If it fails, this process's matrices of those scopes go."""
        def bump() -> None:
            with self.gw._writing(guard=False), LOCK:
                self._bump(uid, owners, whole_space)

        try:
            self.gw._retry(bump, "counting a write")
        except BaseException:
            for owner in owners:
                self.index.forget(uid, owner)
            if whole_space:
                self.index.forget(uid)
            raise

    def wrote(self, uid: str, owner: str, added: Sequence[int | str] = (),
              vectors: np.ndarray | None = None, removed: Sequence[int | str] = (),
              forget: bool = False, sealed: bool = False) -> None:
        """After a write to one scope (``vectors``: the added cards' vectors, read back when
        not given; ``sealed``: sealed cards, whose vectors the store does not hold in its
        vector column, so the scope is searched here from now on): bump its version, and bring this
        process's matrix along to the next version. Whether another writer came between is
        not read back here (a second statement per write): the next search reads the scope's
        version beside its candidates, and a matrix whose version is not the store's -- the
        store's went further than this write's one step -- is dropped and rebuilt there,
        before any of its candidates is used. A purge (``forget``) rebuilds the now empty
        matrix at once, so the next role to search the board does not pay for a build that
        would tell it no role had searched since."""
        if sql_engine(self.gw.memory) is None:
            return
        with LOCK:
            matrix = self.index.get(uid, owner)
            self._counted(uid, [owner])
            if matrix is None:
                return
            if forget:
                self.index.forget(uid, owner)
                try:
                    self._build(uid, owner)
                except Exception:  # noqa: BLE001 - a write never fails for its cache:
                    pass  # the half-read matrix is gone (_build); the next search builds it
                return
            if removed:
                matrix.drop([int(i) for i in removed])
            if added:
                ids = [int(i) for i in added]
                if sealed and not matrix.sealed:  # a scope of clear cards gets sealed ones
                    matrix.clear.update(matrix.ids[: matrix.n].tolist())
                    matrix.sealed = True
                elif not sealed and matrix.sealed:
                    matrix.clear.update(ids)
                matrix.append(ids, vectors if vectors is not None
                              else self._read_vectors(uid, owner, ids))
            matrix.version += 1

    def wrote_space(self, uid: str, owners: Sequence[str]) -> None:
        """After a namespace was purged: bump every scope of it, drop this process's matrices."""
        if sql_engine(self.gw.memory) is None:
            return
        with LOCK:
            self.index.forget(uid)
            self._counted(uid, sorted(set(owners)), True)

    def announce(self, case: CaseSpace, owner: str, added: Sequence[str] = ()) -> None:
        """Count a write made around the gateway (``raw_add``, the bench's baseline)."""
        self.wrote(ids_of(case)[1], owner, added=added)

    def _read_vectors(self, uid: str, owner: str, ids: Sequence[int]) -> np.ndarray:
        """These cards' vectors as the store holds them (in this order)."""
        vs = self._vs
        with statements(self.gw.memory) as conn:
            rows = conn.rows(
                f"SELECT `{vs.primary_field}`, `{vs.vector_field}` FROM `{vs.collection_name}` "
                f"WHERE `user_id` = {sql_name(uid)} AND `agent_id` = {sql_name(owner)} AND "
                f"`{vs.primary_field}` IN ({', '.join(str(int(i)) for i in ids)})")
        by_id = {int(i): str(v) for i, v in rows}
        if set(by_id) != {int(i) for i in ids}:
            raise BoundaryViolation(f"{len(ids) - len(by_id)} written cards of {uid}/{owner} "
                                    "are not in the store.")
        return parse_vectors([by_id[int(i)] for i in ids], self.index.dims)

    def _build(self, uid: str, owner: str, page: int = 2000,
               into: ScopeIndex | None = None) -> ScopeMatrix:
        """A scope's matrix from the store: its version first, then its rows by id, a page at a
        time (a write that lands in between leaves the matrix behind the version it sees next,
        so it is rebuilt then, never trusted). The caller holds the lock."""
        vs = self._vs
        table = vs.collection_name
        scope = f"`user_id` = {sql_name(uid)} AND `agent_id` = {sql_name(owner)}"
        hint = f"/*+ INDEX(`{table}` `{scope_index(table)}`) */"
        with statements(self.gw.memory) as conn:
            # Every statement returns a row (an aggregate, or a NULL row after the page): through
            # SQLAlchemy an empty result sends pyobvector's cursor through sqlglot.
            found = conn.rows(
                f"SELECT COALESCE(MAX(`version`), 0), COUNT(*) FROM `{versions_table(table)}` "
                f"WHERE {scope}")
            count = conn.rows(f"SELECT {hint} COUNT(*) FROM `{table}` WHERE {scope}")
            matrix = (into or self.index).new(uid, owner, int(found[0][0]), int(count[0][0]))
            matrix.sealed = self.gw.sealer.sealed_scope(uid, owner)
            try:
                return self._fill(conn, matrix, uid, owner, scope, hint, page)
            except BaseException:  # a half-read matrix is never left to be trusted
                (into or self.index).forget(uid, owner)
                raise

    def _fill(self, conn: Any, matrix: ScopeMatrix, uid: str, owner: str, scope: str,
              hint: str, page: int) -> ScopeMatrix:
        """Read a scope's rows into its matrix by id, a page at a time. A sealed scope reads
        each row's vector token (opened here; a forgotten card's does not open and stays out)
        and, for a row without one (written unsealed), its stored vector."""
        vs = self._vs
        table = vs.collection_name
        token = f"`{vs.metadata_field}`->>'$.{VECTOR_KEY}'"
        vec = (f"IF({token} IS NULL, `{vs.vector_field}`, NULL)" if matrix.sealed
               else f"`{vs.vector_field}`")
        tok = token if matrix.sealed else "NULL"
        after = None
        while True:
            more = "" if after is None else f" AND `{vs.primary_field}` > {after}"
            rows = conn.rows(
                f"SELECT u.`pk`, u.`vec`, u.`tok` FROM ((SELECT {hint} `{vs.primary_field}` "
                f"AS `pk`, {vec} AS `vec`, {tok} AS `tok` FROM `{table}` WHERE {scope}{more} "
                f"ORDER BY `{vs.primary_field}` LIMIT {page}) UNION ALL "
                "(SELECT NULL, NULL, NULL)) AS u")
            rows = [r for r in rows if r[0] is not None]
            clear = [r for r in rows if r[2] is None and r[1] is not None]
            if clear:
                matrix.append([int(r[0]) for r in clear],
                              parse_vectors([str(r[1]) for r in clear], self.index.dims))
                if matrix.sealed:
                    matrix.clear.update(int(r[0]) for r in clear)
            sealed = [(str(r[0]), str(r[2])) for r in rows if r[2] is not None]
            if sealed:
                kept, vectors = self.gw.sealer.open_vectors(uid, owner, sealed, self.index.dims)
                matrix.append([int(i) for i in kept], vectors)
            if rows:
                after = max(int(r[0]) for r in rows)
            if len(rows) < page:
                return matrix

    def scope_vectors(self, case: CaseSpace, owner: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, float32 vectors) of one scope as the store holds them (the bench's floor);
        read into a matrix of its own, so the cache is not touched."""
        _, uid = ids_of(case)

        def read() -> ScopeMatrix:
            with LOCK:
                return self._build(uid, owner, into=ScopeIndex(self.index.dims, 1.05))

        built = self.gw._retry(read, "reading vectors")
        return built.ids[: built.n].copy(), built.vecs[: built.n].copy()

    def footprint(self) -> dict[str, float]:
        """What this process's scope matrices hold (:meth:`.ScopeIndex.footprint`)."""
        with LOCK:
            return self.index.footprint()


__all__ = ["ScopeSearch", "vector_literal"]
