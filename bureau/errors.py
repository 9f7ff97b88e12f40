"""Typed errors. Each one says what went wrong *and what to do about it*.

Every error raised on bad input is raised before anything is written, so a caller that catches a
``BureauError`` knows the store is exactly as it was.
"""

from __future__ import annotations


class BureauError(Exception):
    """Base class: catch this to handle every refusal the bureau makes on purpose."""

    hint: str = ""

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.message = message
        if hint is not None:
            self.hint = hint
        super().__init__(f"{message} {self.hint}".strip())


class ConfigurationError(BureauError):
    """Settings that cannot work (bad data directory, missing API key for an opt-in service)."""


class EmbedderMissingError(ConfigurationError):
    """The offline model or tokenizer files are not installed or do not match their hash."""


class StoreAlreadyOpenError(ConfigurationError):
    """A second data directory in one process: PowerMem would silently reuse the first store."""

    hint = "Restart the kernel (or the Python process) to switch data directories."


class ScenarioError(BureauError):
    """A scenario file is malformed; the message names the file and the field."""


class UnknownCaseError(BureauError):
    """No such case, or it was deleted (also by another process): every holder gets this."""

    hint = "List cases with bureau.cases() or load a scenario with bureau.load_scenario(...)."


class CaseExistsError(BureauError):
    """A case with this id already exists; ids are never shared by two live cases."""

    hint = "Pick another case id, or delete the old case with bureau.delete_case(id) first."


class InvalidArgumentError(BureauError, ValueError):
    """An argument out of range (a limit of 0, a NaN): refused before anything is read or written."""


class DamagedDataError(BureauError):
    """A file under the data directory is missing or unreadable; the message names it."""


class LedgerDamagedError(DamagedDataError):
    """The ledger (SQLite) cannot be read."""


class CaseDamagedError(DamagedDataError):
    """One case's own files are damaged (e.g. its scenario snapshot); other cases still work."""


class StoreLedgerMismatchError(DamagedDataError):
    """The card store holds cards the ledger knows nothing about (e.g. the ledger was lost)."""


class UnknownRoleError(BureauError):
    """The role is not part of this case."""


class UnknownCardError(BureauError):
    """No such card in this case and space (deliberately the same answer for 'exists elsewhere')."""

    hint = "List the cards you may see with agent.cards() (the list_cards tool)."


class InvalidTextError(BureauError):
    """Empty, too long, or carrying control characters."""


class BoardNotWritableError(BureauError):
    """The bulletin board only receives sourced copies through publish()."""

    hint = "Whisper to a role, then publish the card with case.publish(role, card_id)."


class VisibilityBoundaryError(BureauError):
    """The request crosses a boundary: another case, another role, or a card that is not private."""


class NamespaceRefusedError(VisibilityBoundaryError, InvalidArgumentError):
    """A store bound to a handle was given a namespace that is not its own role's (lesson 09's
    bridge from caller-chosen namespaces). Raised from the argument alone, before any storage
    call, with the same words whether or not the named namespace holds anything."""

    hint = ("The handle already says who you are: pass your own ('memories', <your role>), "
            "a prefix of it, or ().")


class BoundaryViolation(BureauError):
    """Storage returned a row outside the requested scope. Never expected; fail loudly."""


class PublishError(BureauError):
    """Publishing could not complete; the saga has compensated (see case.events())."""


class PublishPendingError(PublishError):
    """Another process is publishing the same card right now."""

    hint = "Try again in a moment; the first publisher's result will be returned."


class InjectedFault(BureauError):
    """Raised at a named fault-injection point (tests and the saga lesson only)."""


class PolicyError(ConfigurationError):
    """A mediation policy file is malformed; the message names the file, rule index and field."""

    hint = "See scenarios/README.md ('Policies') for the format."

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        file: str | None = None,
        rule: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.rule = rule
        """Index of the offending rule in ``rules`` (``None``: not inside a rule)."""
        self.field = field
        """The field path inside the policy (``rules[3].match.recipient[0]``)."""
        super().__init__(message, hint)


class CardRevokedError(BureauError):
    """The card (or its board copy) was revoked or expired: revocation is final."""

    hint = "Whisper the fact again if it should be shared anew; the audit keeps the revocation."


class UnknownGrantError(BureauError):
    """No such grant in this case."""


class AuditTamperedError(DamagedDataError):
    """The audit ledger's hash chain does not hold: an entry was changed, removed or reordered."""

    hint = "Restore the ledger from a backup; the message names the first entry that fails."


class StateTamperedError(AuditTamperedError):
    """A state row (a card limit, a grant, a budget) was changed, added or removed outside the
    bureau: its keyed MAC, or the case's state seal in the audit chain, does not hold. Nothing
    is read from such a row; ``table`` and ``row`` name it (``row`` is ``None`` when a row is
    missing or was restored from an older copy)."""

    hint = ("Restore the ledger from a backup (or reset the case); the bureau refuses to act on "
            "state the audit chain does not vouch for.")

    def __init__(self, message: str, table: str, row: dict[str, object] | None = None,
                 hint: str | None = None) -> None:
        self.table = table
        """The table holding the row: ``card_limits``, ``grants``, ``budget`` or ``cases``."""
        self.row = row
        """The row's key columns, or ``None`` when the whole table fails its seal."""
        super().__init__(message, hint)


class AuditKeyError(ConfigurationError):
    """The audit key file is missing, unreadable, malformed, or readable by other users."""

    hint = ("The key lives beside the ledger (``audit.key`` in the data directory); restore it "
            "from a backup, or make it owner-only with `chmod 600`.")


class ForgetRefusedError(BureauError):
    """An agent asked to forget a card that is not one of its own notes."""

    hint = "Only the operator (``case.forget``) forgets whispers, board cards and scope values."


class SealKeysLostError(ConfigurationError):
    """The sealing key store (``seal.keys``) is missing or damaged while sealed cards remain."""

    hint = ("Restore the folder from a backup (copy it with the data directory, or keep a copy "
            "apart: whoever holds it and the database can read every card). Without it the "
            "sealed cards cannot be read again; `python -m bureau repair --purge-unknown` or "
            "deleting the case removes them.")


# -- trust tiers (issue 14) -------------------------------------------------------------------
class UnknownTierError(InvalidArgumentError):
    """A tier name that is not ephemeral, session or long-term (or not allowed there)."""


class UnknownRunError(BureauError):
    """No such run in this case (a bad run id, or one of another case or role)."""

    hint = "Start a run with agent.start_run(); the operator lists live runs with case.runs.live()."


class RunEndedError(UnknownRunError):
    """The run has ended (here, in another process, or swept after its process died): its
    ephemeral cards are gone and it accepts nothing more."""

    hint = "Start a new run with agent.start_run()."


class PromotionNotApprovedError(BureauError):
    """Untrusted content (tool output) is never promoted without an approval step."""

    hint = ("Review the card, then promote it with case.promote(role, card_id, "
            "approved_by='<your name>'), or end the run with a narrow, audited "
            "PromotionRule: run.end(promote=rule).")


# -- shared task scopes (issue 14) ---------------------------------------------------------------
class TaskScopeError(BureauError):
    """Base class of every refusal about a shared task scope."""


class UnknownTaskScopeError(TaskScopeError):
    """The role is not an accepted member of a live scope of that name.

    Deliberately the same words whether the scope exists (and the role is not in it, or only
    invited, or was removed) or not: a refusal must not tell a non-member that a scope exists.
    """

    hint = ("Ask the scope's owner for an invitation and accept it with agent.scopes.accept(name); "
            "agent.scopes.mine() lists the scopes you belong to.")


class NoInvitationError(TaskScopeError):
    """Accepting or declining without a pending invitation (same words for a missing scope)."""

    hint = "Only an invitation the owner sent can be accepted or declined: see agent.scopes.inbox()."


class NotScopeOwnerError(TaskScopeError):
    """A member tried to manage a scope; only its owner invites, removes, transfers, archives
    and deletes."""

    hint = "Ask the owner (agent.scopes.info(name).owner) to do it, or to transfer the scope."


class ScopeArchivedError(TaskScopeError):
    """The scope is archived: read-only for its members, no writes, no membership changes."""

    hint = "Read it with case.scope_read/scope_keys; its owner may still delete it."


class ScopeExistsError(TaskScopeError):
    """A case already has (or had) a scope of that name; names are never reused in a case."""

    hint = "Pick another scope name."


class MembershipError(TaskScopeError):
    """A membership change that does not fit the members' states (e.g. inviting a member,
    removing the owner, transferring to someone who has not accepted)."""

    hint = "Check agent.scopes.info(name) for the members and pending invitations."


class UnknownScopeKeyError(TaskScopeError):
    """A member asked for a key nobody has written in that scope."""

    hint = "List the keys with agent.scopes.keys(name)."


class UnknownPrincipalError(BureauError):
    """A requester that is neither a role of the case nor a declared principal.

    Identities are held, not typed: an undeclared name would otherwise start with a fresh
    disclosure budget and match no grant, so it is refused instead."""

    hint = ("Act through a handle: case.agent(role) for a role, case.requester(name) for a "
            "principal the scenario or the policy file declares under `principals:`.")


class ToolCallError(InvalidArgumentError):
    """A tool call an agent's model made is not one of its tools or has bad arguments.

    Nothing was done; the message is safe to hand back to the model."""


class QuotaExceededError(BureauError):
    """A principal used up one of its quotas (consults, scope writes, run tool output, audit
    growth); refused before anything was done, so nothing changed. The message names the limit
    and when it frees up."""

    def __init__(self, message: str, hint: str | None = None, *,
                 retry_after_s: float | None = None) -> None:
        super().__init__(message, hint)
        self.retry_after_s = retry_after_s
        """Seconds until the next call may pass (``None``: not a rate, a fixed cap)."""


class ClassroomError(ConfigurationError):
    """A classroom command or connection file that cannot work (``bureau.classroom``)."""


class TenantAccessError(ClassroomError):
    """A learner's account cannot log in to its tenant: a wrong password (a connection file
    from before a reset), or a learner the instructor removed. The message names the learner,
    never the password."""


class ServerUnavailableError(BureauError):
    """The database server (a classroom's, a shared deployment's) dropped the connection twice
    or does not answer: it was restarted, stopped, or a session was ended. Nothing acknowledged
    is lost; the call that raised this did not happen, or happened once (see its message)."""

    hint = ("Wait a few seconds (the server may be restarting) and re-run the cell; if it "
            "keeps failing, ask the instructor whether the classroom server runs.")


class StoreStartError(ConfigurationError):
    """Embedded seekdb did not start: it failed (the message carries the ``OB_...`` code and the
    sentence from its log) or did not answer within ``Settings.open_timeout_s``. The seekdb
    process it left was stopped; nothing was written."""


class DiskSpaceError(StoreStartError):
    """Too little free space where the data directory lives to open the store; the message
    names the folder, the free space and what is needed."""

    hint = ("Free some space on that disk, or set BUREAU_DATA_DIR to a folder on a disk with "
            "room (and restart the kernel).")


class DiskFullError(BureauError):
    """A write was refused because the disk holding the data directory is full. Nothing of
    this call was written, everything acknowledged before is kept, and writing works again
    once space is freed (no repair step)."""

    hint = ("Free some space on that disk and try again (or set BUREAU_DATA_DIR to a folder on "
            "a disk with room and restart the kernel).")


class StoreTimeoutError(BureauError):
    """The store gave up on a statement at its bound (:mod:`bureau.bounds`): something held a
    lock it needed, or it ran too long. The message names what waited, for how long, and, when
    the bureau could tell, what held it. Nothing of the call that raised this was written."""

    hint = ("Run the cell again; if it fails the same way, restart the kernel (Kernel → Restart) "
            "and run the lesson from the top.")


class ModelFileError(ConfigurationError):
    """A GGUF model file the local voice was given cannot be served: it is missing, or it is
    named as one of the files the bureau knows (:mod:`bureau.voice.gguf`) and its size or
    sha256 differs. Checked before the file is loaded; nothing was started."""

    hint = ("Download the file once from its publisher (docs/voice.md gives the address, size "
            "and sha256), or point BUREAU_VOICE_GGUF at the right file.")


class VoiceServerError(BureauError):
    """The local voice server (xllamacpp, :mod:`bureau.voice.server`) did not start or stopped:
    the message carries the last lines of its log. The process it left was stopped."""

    hint = ("Check the log lines above; `pip install 'bureau[voice]'` installs the runtime "
            "(Linux also needs libgomp1). Without a voice the lessons answer in evidence mode.")
