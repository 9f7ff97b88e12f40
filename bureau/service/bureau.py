"""The Bureau: one per process, the façade notebooks, widgets, the lab and the CLI use.

It owns the parts :mod:`bureau.service.assembly` builds from :class:`~bureau.settings.Settings`
(gateway, ledger, responder, mediator), creates, reattaches and deletes cases, checks on open that
the card store and the ledger agree, and fans events out to listeners. What happens inside one
case lives in :mod:`bureau.service.case`.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..embedding import Encoder
from ..errors import (
    BureauError,
    CaseDamagedError,
    StoreLedgerMismatchError,
    UnknownCaseError,
)
from ..ledger import CaseRecord
from ..mediation import Mediator
from ..model import Event
from ..responders import Responder
from ..scenario import Scenario, load_scenario
from ..settings import Settings
from ..text import clean_case_id, short_repr
from .assembly import assemble, reconfigure
from .case import Case
from .rooms.runs import sweep_runs

log = logging.getLogger(__name__)


Listener = Callable[[Event], None]


class Bureau:
    """One per process (PowerMem allows one store per process); get it with :meth:`open`."""

    _instance: Bureau | None = None
    _instance_lock = threading.Lock()

    def __init__(
        self,
        settings: Settings,
        responder: Responder | None = None,
        mediator: Mediator | None = None,
    ) -> None:
        self._parts = assemble(settings, responder, mediator)
        self.gateway = self._parts.gateway
        self.ledger = self._parts.ledger
        self._listeners: list[Listener] = []
        self._cases: dict[str, Case] = {}
        self.check_store()
        self.sweep_runs()
        # Board copies whose deletion failed earlier (in any process): retry now. A damaged
        # case fails alone, when it is touched; it must not keep every other case closed.
        for task_case in sorted({t.case_id for t in self.ledger.publishes.cleanup_tasks()}):
            try:
                if self.ledger.cases.get(task_case):
                    self.case(task_case).recover()
            except BureauError as exc:
                log.warning("case %s was not recovered on open: %s", task_case, exc)

    def disk_space(self) -> dict[str, Any]:
        """Free space where the data directory lives, beside the figures that matter: writes
        are refused below ``write_reserve`` (:class:`~bureau.errors.DiskFullError`), and a new
        data directory's first start needs ``first_start`` (seekdb's 2 GiB log disk)."""
        from ..storage import diskspace

        free = diskspace.free_bytes(self.settings.data_dir)
        return {"path": self.settings.data_dir, "free": free,
                "write_reserve": diskspace.WRITE_RESERVE_BYTES,
                "first_start": diskspace.FIRST_START_BYTES,
                "text": f"{diskspace.human(free)} free (writes stop below "
                        f"{diskspace.human(diskspace.WRITE_RESERVE_BYTES)}; a new data "
                        f"directory needs {diskspace.human(diskspace.FIRST_START_BYTES)})"}

    def check_store(self) -> dict[str, int]:
        """Compare the card store with the ledger; sweep retired namespaces; stop on strangers.

        Every card lives under a namespace the ledger knows: a live case's, or one retired by a
        delete or reset (a holder that missed the change may still write there; such cards are
        swept here). Cards under a namespace the ledger has never heard of mean the ledger was
        lost, replaced or belongs to another store: opening anyway would merge them into new
        cases and let ``recover()`` treat real board copies as orphans.
        """
        stored = self.gateway.spaces()
        if not stored:
            return {"swept": 0, "unknown": 0}
        retired = self.ledger.cases.retired_spaces()
        live = {r.space.store_id for r in self.ledger.cases.all()}
        swept = 0
        for store_id in sorted((stored & retired) - live):
            swept += self.gateway.purge_space(store_id)
        unknown = sorted(stored - retired - live)
        if unknown:
            shown = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3
                                             else "")
            raise StoreLedgerMismatchError(
                f"The card store in {self.settings.data_dir} holds cards of {len(unknown)} "
                f"case namespace(s) the ledger {self.ledger!r} does not know ({shown}). The "
                "ledger was probably lost, replaced or damaged.",
                "Nothing was changed. Run `python -m bureau repair` to see what was found; "
                "`python -m bureau repair --adopt` re-registers cases whose snapshot survives, "
                "`--purge-unknown` deletes the stray cards (see docs/threat-model.md, "
                "'Repairing a data directory').",
            )
        return {"swept": swept, "unknown": 0}

    def sweep_runs(self) -> int:
        """End every run whose process died (killed mid-run): purge its ephemeral scope,
        verified, and drop its row (issue 14). Runs on every open; returns the cards deleted."""
        try:
            swept = sweep_runs(self.gateway, self.ledger.run_records, self.ledger.cases)
        except BureauError as exc:  # a damaged case must not keep the bureau closed
            log.warning("runs were not swept on open: %s", exc)
            return 0
        for rec, deleted in swept:
            try:
                self.record_events(rec.case_id, [("run.ended", {
                    "run_id": rec.run_id, "role": rec.role, "deleted": deleted, "promoted": 0,
                    "swept": True})], rec.token)
            except BureauError:  # the case was deleted meanwhile: nobody reads its events
                pass
        return sum(n for _, n in swept)

    @classmethod
    def open(
        cls,
        data_dir: str | Path | None = None,
        settings: Settings | None = None,
        **overrides: Any,
    ) -> Bureau:
        """Open (or return the already open) bureau of this process.

        ``data_dir`` defaults to ``$BUREAU_DATA_DIR`` or ``~/.local/share/bureau``.
        """
        if settings is None:
            extra = dict(overrides)
            if data_dir is not None:
                extra["data_dir"] = Path(data_dir)
            settings = Settings.from_env(**extra)
        with cls._instance_lock:
            inst = cls._instance
            if inst is not None:
                # The same store: apply what may change, refuse (naming it) what may not.
                reconfigure(inst._parts, settings)
                inst.sweep_runs()
                return inst
            inst = cls(settings)
            cls._instance = inst
            return inst

    # -- parts (built in one place: bureau.service.assembly) -----------------------------------
    @property
    def settings(self) -> Settings:
        return self._parts.settings

    @settings.setter
    def settings(self, new: Settings) -> None:
        """Apply new per-request settings (threshold, limits, responder); store settings are
        refused with the name of what differs (see :func:`~bureau.service.assembly.reconfigure`)."""
        reconfigure(self._parts, new)

    @property
    def responder(self) -> Responder:
        return self._parts.responder

    @responder.setter
    def responder(self, responder: Responder) -> None:
        self._parts.responder = responder

    @property
    def mediator(self) -> Mediator:
        return self._parts.mediator

    @mediator.setter
    def mediator(self, mediator: Mediator) -> None:
        self._parts.mediator = mediator

    @property
    def encoder(self) -> Encoder:
        """The sentence encoder in use (read-only: lesson 00's check, the lab's pre-embedding)."""
        return self.gateway.encoder

    def bulk_audit(self) -> AbstractContextManager[None]:
        """Inside, the audit anchor moves once on the way out instead of after every audited
        decision (:meth:`bureau.ledger.keys.AuditKeys.deferred`). Only for a throw-away data
        directory, such as the leak lab's: while it lags, a chain cut goes unseen."""
        return self.ledger.keys.deferred()

    # -- events ------------------------------------------------------------------------------
    def last_event(self, case_id: str, type_: str | None = None) -> Event | None:
        """The newest outward event of a case (of one type): what the stage polls."""
        return self.ledger.event_log.last(case_id, type_)

    def event_log(self, case_id: str, since: int = 0) -> list[Event]:
        """The operator's record of a case's events, every field as recorded (task-scope
        names, members, run ids); observers get ``case.events()``, which leaves those out."""
        case = self.case(case_id)
        case.events(since)  # the same checks: a whole ``since``, a live case
        return self.ledger.event_log.read(case.id, since)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every event of every case; returns an unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def record_events(
        self, case_id: str, items: list[tuple[str, dict[str, Any]]], token: Any = ...
    ) -> list[Event]:
        """Record events (one ledger transaction), then tell every listener about each.

        With ``token`` the events are recorded only while the case is that incarnation.
        """
        events = self.ledger.event_log.append_many(case_id, items, token) if items else []
        return self.notify(events)

    def notify(self, events: list[Event]) -> list[Event]:
        """Tell every listener about events already recorded (by any ledger transaction)."""
        for event in events:
            for listener in list(self._listeners):
                try:
                    listener(event)
                except Exception:  # noqa: BLE001 - a subscriber must never break a command
                    log.exception("bureau event listener %r failed on %s", listener, event.type)
        return events

    # -- cases -------------------------------------------------------------------------------
    def scenarios(self) -> list[Scenario]:
        from ..scenario import list_scenarios

        return list_scenarios()

    def load_scenario(self, id_or_path: str | Path, case_id: str | None = None) -> Case:
        """Create a new case from a scenario file (or shipped id) and write its opening memories."""
        return self.create_case(load_scenario(id_or_path), case_id)

    def create_case(self, scenario: Scenario, case_id: str | None = None) -> Case:
        """Create a new case from an in-memory :class:`Scenario` and write its opening memories.

        All or nothing: if any step fails (snapshot, events, seeding), the ledger row, the
        snapshot and every card written so far are removed again before the error propagates.
        """
        if case_id is None:
            case_id = f"{scenario.id}-{uuid.uuid4().hex[:6]}"
        case_id = clean_case_id(case_id)
        snapshot = self._snapshot_path(case_id)
        record = self.ledger.cases.add(case_id, scenario.id, scenario.title, uuid.uuid4().hex[:12])
        try:
            self._write_scenario(snapshot, scenario, record)
            case = Case(self, record, scenario)
            self._cases[case_id] = case
            self.record_events(case_id, [("case.created", {"scenario_id": scenario.id,
                                                           "roles": scenario.role_names})])
            case.writing.seed(case.scenario)
        except BaseException:
            self._cases.pop(case_id, None)
            try:
                self.ledger.cases.delete(case_id, record.token)
            finally:
                snapshot.unlink(missing_ok=True)
                self.gateway.purge_space(record.space.store_id)
            raise
        return case

    def _snapshot_path(self, case_id: str) -> Path:
        """``cases/<id>.json``, resolved and checked to lie inside the data directory."""
        folder = (self.settings.data_dir / "cases").resolve()
        path = (folder / f"{case_id}.json").resolve()
        if path.parent != folder:
            raise UnknownCaseError(f"Case id {short_repr(case_id)} does not name a case file.")
        return path

    def _write_scenario(self, path: Path, scenario: Scenario, record: CaseRecord) -> None:
        """The scenario as it was when the case was created: a private file under the data
        directory, or (server store) a row on the server, since instances share no folder."""
        body = json.dumps(scenario.to_dict(), indent=1)
        if self.settings.store == "server":
            snapshots = self.ledger.snapshots  # type: ignore[attr-defined]  (ServerLedger)
            snapshots.put(record.case_id, record.token, body)
            return
        from ..storage.files import write_private

        write_private(path, body)

    def _read_scenario(self, record: CaseRecord) -> Scenario:
        """The scenario a case was created from, as it was then (its snapshot; no fallback)."""
        from ..scenario import parse_scenario

        path = self._snapshot_path(record.case_id)
        hint = (f"Delete the case with bureau.delete_case({record.case_id!r}) and load its "
                "scenario again, or restore the file from a backup.")
        try:
            if self.settings.store == "server":
                body = self.ledger.snapshots.get(record.case_id)  # type: ignore[attr-defined]
                if body is None:
                    raise FileNotFoundError(record.case_id)
                path = Path(f"<server snapshot of {record.case_id}>")
                data = json.loads(body)
            else:
                data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CaseDamagedError(
                f"Case {record.case_id}: its scenario snapshot {path} is missing.", hint
            ) from None
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise CaseDamagedError(
                f"Case {record.case_id}: its scenario snapshot {path} cannot be read "
                f"({type(exc).__name__}).", hint
            ) from None
        try:
            return parse_scenario(data, source=path)
        except BureauError as exc:
            raise CaseDamagedError(
                f"Case {record.case_id}: its scenario snapshot {path} is damaged: {exc.message}",
                hint,
            ) from None

    def case(self, case_id: str) -> Case:
        """Reattach to an existing case by id (also one created by another process)."""
        if type(case_id) is not str or len(case_id) > 128:
            raise UnknownCaseError(f"There is no case {short_repr(case_id)}.")
        record = self.ledger.cases.get(case_id)
        if record is None:
            self._cases.pop(case_id, None)
            raise UnknownCaseError(
                f"There is no case {short_repr(case_id)} in {self.settings.data_dir}."
            )
        cached = self._cases.get(case_id)
        if cached is not None and cached.token == record.token:
            return cached
        case = self._cases[case_id] = Case(self, record, self._read_scenario(record))
        case.runs.sweep()  # runs of a process that died since (issue 14)
        return case

    def cases(self) -> list[CaseRecord]:
        return self.ledger.cases.all()

    def delete_case(self, case_id: str) -> int:
        """Delete a case for every holder, in every process; returns the cards removed.

        The ledger row goes first (with its namespace retired, in one transaction): from then on
        every operation on the case raises ``UnknownCaseError``, and a case created later with
        the same id gets a new, empty namespace.
        """
        case = self.case(case_id)
        old = self.ledger.cases.delete(case.id, case.token)
        self._cases.pop(case.id, None)
        self._snapshot_path(case.id).unlink(missing_ok=True)
        return self.gateway.purge_space(old.space.store_id)


