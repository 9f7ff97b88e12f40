"""Lesson 09 (the closing lesson): the course as a checklist, how peer memory systems scope
memory and where their published isolation bugs came from, and an agent host wired to the
bureau through one handle.

What the lesson's cells and its check share lives here, so the notebook stays thin:

* :data:`CHECKLIST` -- the design checklist for a multi-agent memory, each item with the
  lessons that taught it and the place in the bureau that implements it (a test keeps every
  path real);
* :func:`frameworks`, :func:`peer_reports` and :func:`plot_peer_reports` -- how mem0,
  LangGraph, CrewAI and Letta scope memory, and the published reports the lesson cites
  (``peers.yaml``: each one read in the public issue index, what it says, whether it could be
  verified), grouped by where the scope came from. A catalogue of cited reports, not a survey,
  and the figure says so;
* :func:`identity_fields` and :func:`owners_seen` -- which tool arguments would let a model
  choose whose memory it reads, and whose cards a tool-calling run was actually handed;
* the exercise ``09-wire-an-agent``: run the tool-calling loop over the informant's handle; the
  check reads the bureau's own event log of that retrieval, not the learner's code;
* the bridge from a caller-namespaced store (LangGraph's shape) to a handle, and its exercise
  ``09-port-a-store``, live in :mod:`.bridge` (imported here, so importing this module
  registers both exercises).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ..agents.loop import ToolLoop
from ..agents.tools import IDENTITY_FIELDS
from ..model import BOARD
from ..service import Case
from . import bridge  # noqa: F401  (registers the lesson's second exercise, 09-port-a-store)
from .widgets.exercises import Exercise, Verdict, not_yet, passed, register

PEERS_FILE = Path(__file__).with_name("peers.yaml")

CAUSES: dict[str, str] = {
    "no-owner-check": "a read or attach path without an owner check",
    "one-pool": "one shared pool; the scope not derived from who asks",
    "caller-filter": "the identity is a filter the caller writes",
    "unbound-tools": "tools not bound to the caller's identity",
}
"""Where the scope came from in each cited report (the key ``cause`` in peers.yaml)."""

BUREAU_ANSWER: dict[str, str] = {
    "no-owner-check": "one gateway adds case and owner filters to every store call, and every "
                      "read path is attacked in the tests (lesson 04)",
    "one-pool": "each role's cards live in a scope of their own, searched with their own top-k "
                "(lesson 02)",
    "caller-filter": "the service computes the scopes from the handle's identity; no call "
                     "takes one (lessons 04, 06)",
    "unbound-tools": "a handle's tools are built for its identity, and no schema has an "
                     "identity field (lesson 06 and this one)",
}

CHECKLIST: list[tuple[str, str, str]] = [
    ("Identity is bound when the handle (or tool set) is built; no tool takes a role, user or "
     "case argument.", "04, 06, 09", "bureau/agents/tools.py"),
    ("One module touches storage, and it adds the case and owner filters to every call.",
     "02, 04", "bureau/storage/gateway.py"),
    ("Each scope a request may search gets its own top-k, so a busy scope cannot crowd out "
     "another.", "02", "bureau/service/rooms/reading.py"),
    ("A returned card is labelled with its stored owner, never with the caller's role.", "01, 02",
     "bureau/storage/gateway.py"),
    ("Every way out of a private space is an explicit, sourced, audited act: publish, consult, "
     "grant, promotion.", "03, 07, 08", "bureau/service/publish.py"),
    ("A multi-step write (publish) survives a crash: compensation, cleanup tasks, recover().",
     "03", "bureau/service/faults.py"),
    ("What one principal may learn is decided per card and per purpose, with a budget and an "
     "audit trail.", "07", "bureau/mediation/policy.py"),
    ("Revocation follows the content: copies and derived values die with the card.", "07",
     "bureau/mediation/derivation.py"),
    ("Untrusted tool output stays in its run, and on its own never makes an answer 'known'.",
     "08", "bureau/responders/grounding.py"),
    ("Observers see ids, counts and timings only; an error never says whether a hidden thing "
     "exists; questions are never cached.", "04", "bureau/service/outward.py"),
    ("Leakage is measured against a random or naive baseline; a figure that cannot fail is "
     "called a check.", "05, 06, 08", "bureau/labs/leakage/metrics/metrics.py"),
]
"""The course as a checklist: (what must hold, the lessons that taught it, where it lives)."""

IDENTITY_WORDS = ("role", "user", "agent", "tenant", "requester", "principal", "case")
"""Words that make an argument name look like an identity (``owner`` is not one of them: in
``consult`` it names whose memory to ask, and the mediator decides for the holder)."""

PEER_STYLE_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "search_memories", "description": "Search memories.",
        "parameters": {"type": "object", "required": ["query", "user_id"], "properties": {
            "query": {"type": "string"}, "user_id": {"type": "string"},
            "agent_id": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "add_memory", "description": "Store a memory.",
        "parameters": {"type": "object", "required": ["text", "user_id"], "properties": {
            "text": {"type": "string"}, "user_id": {"type": "string"}}}}},
]
"""Tools in the style several memory tool servers publish, where the identity is an argument and
so the model writes it: what the lesson compares a handle's tools with. Written here, not
copied from any one server."""


@cache
def _peers() -> dict[str, Any]:
    data = yaml.safe_load(PEERS_FILE.read_text(encoding="utf-8"))
    unknown = {r["cause"] for r in data["reports"] if r["cause"] is not None} - set(CAUSES)
    if unknown:
        raise ValueError(f"{PEERS_FILE.name}: unknown cause(s) {sorted(unknown)}")
    return data


def frameworks() -> pd.DataFrame:
    """How each peer scopes memory: what the scope is, who picks it, and where that is said."""
    df = pd.DataFrame(_peers()["frameworks"])
    return df.rename(columns={"who_picks_it": "who picks the scope"})


def peer_reports(*, unverified: bool = False) -> pd.DataFrame:
    """The cited reports, one row each, with where the scope came from and the bureau's
    answer; a citation we could not verify only with ``unverified=True``."""
    df = pd.DataFrame(list(_peers()["reports"]))
    if not unverified:
        df = df[df["verified"]]
    if "fixes" not in df.columns:
        df["fixes"] = None
    df = df.assign(**{"where the scope came from": df["cause"].map(CAUSES),
                      "what the bureau does instead": df["cause"].map(BUREAU_ANSWER)})
    return df[["project", "ref", "kind", "year", "what", "where the scope came from",
               "what the bureau does instead", "fixes", "url"]].reset_index(drop=True)


def refixes(df: pd.DataFrame) -> pd.Series:
    """Which rows are the fix of a hole another listed report describes (``fixes`` names a
    ``ref`` of ``df``): that hole is one hole, not two."""
    fixes = df["fixes"] if "fixes" in df.columns else pd.Series(None, index=df.index)
    return fixes.isin(set(df["ref"])) & (df["kind"] == "fix")


def holes_said(df: pd.DataFrame | None = None) -> str:
    """``9 cited reports on 8 holes (a/b#2 is the fix of a/b#1: one hole, two reports)``: the
    reports of a hole (RFCs aside), and how many holes they describe."""
    df = peer_reports() if df is None else df
    reports = df[df["kind"] != "rfc"]
    again = reports[refixes(reports)]
    pairs = ", ".join(f"{r['ref']} is the fix of {r['fixes']}" for _, r in again.iterrows())
    return (f"{len(reports)} cited reports on {len(reports) - len(again)} holes"
            + (f" ({pairs}: one hole, two reports)" if len(again) else ""))


def plot_peer_reports(df: pd.DataFrame | None = None):
    """One bar per cause over the verified reports of a hole (RFCs have none), a fix of a hole
    another cited report describes hatched on its bar; the title counts reports and holes and
    states what they share (issue 50 §4: a bug and its fix are one hole)."""
    from ..figures import new_figure

    df = peer_reports() if df is None else df
    reports = df[df["kind"] != "rfc"]
    again = refixes(reports)
    cause = "where the scope came from"
    order = reports[cause].value_counts().sort_values().index
    first = reports[~again][cause].value_counts().reindex(order, fill_value=0)
    fixes = reports[again][cause].value_counts().reindex(order, fill_value=0)
    fig = new_figure(8, 3, layout="tight")
    ax = fig.add_subplot()
    ax.barh(order, first.values, color="#8c6d31", label="a report of a hole")
    if fixes.any():
        some = fixes > 0
        ax.barh(order[some.values], fixes[some].values, left=first[some].values,
                color="#8c6d31", alpha=0.45,
                hatch="//", edgecolor="white",
                label="the fix of a hole another cited report describes")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.28), frameon=False,
                  ncol=2)
    holes = len(reports) - int(again.sum())
    ax.set_xlabel(f"cited reports (of {len(reports)}, on {holes} holes; a catalogue, not a "
                  "survey)")
    ax.set_ylabel(cause)
    ax.set_title(f"{len(reports)} cited reports, {holes} holes: in every one the scope came "
                 "from the caller or from nowhere")
    ax.xaxis.get_major_locator().set_params(integer=True)
    return fig


def checklist() -> pd.DataFrame:
    return pd.DataFrame(CHECKLIST, columns=["what must hold", "lessons", "where in the bureau"])


def identity_fields(tools: list[dict[str, Any]]) -> list[str]:
    """Every ``tool.argument`` a model could use to choose whose memory it reads: an argument
    named like an identity. A handle's tools give an empty list."""
    found = []
    for tool in tools:
        fn = tool.get("function", {})
        for arg in fn.get("parameters", {}).get("properties", {}):
            named = arg in IDENTITY_FIELDS or any(w in arg.lower() for w in IDENTITY_WORDS)
            if named:
                found.append(f"{fn.get('name')}.{arg}")
    return found


def owners_seen(run: ToolLoop, tools: tuple[str, ...] = ("recall", "list_cards", "get_card")
                ) -> set[str]:
    """The stored owners of every card the ``tools`` calls of ``run`` returned (by default the
    reads of the handle's own scopes; a consult hands over what the mediator released, which
    may be another role's card by design)."""
    owners: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "card_id" in value and "owner" in value:
                owners.add(str(value["owner"]))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for call in run.calls:
        if call.name in tools:
            walk(call.result)
    return owners


# -- the exercise -----------------------------------------------------------------------------
def exercise_role(case: Case) -> str:
    """Whose handle the exercise wires: the secret's holder in this case's cast (the informant
    in the safe combination), so the exercise follows the lesson's ``scenario`` parameter."""
    from .cast import Cast

    return Cast.of(case).holder


def check_wired_agent(case: Case, answer: Any) -> Verdict:
    """The learner's run must have gone through the holder's handle (the informant's, in the
    safe combination), and the bureau's own log must show its last retrieval searching that
    role's space and the board, nothing another role owns."""
    role = exercise_role(case)
    if answer is None:
        return not_yet("Replace `None` with what `run_tool_loop(...)` returns for the "
                       f"{role}'s handle, `case.agent({role!r})`.")
    if not isinstance(answer, ToolLoop):
        return not_yet(f"Expected what run_tool_loop returns (a ToolLoop), got "
                       f"{type(answer).__name__}.")
    if answer.handle != role:
        return not_yet(f"That run went through the {answer.handle!r} handle; wire the {role}'s.")
    if not any(c.name == "recall" and c.ok for c in answer.calls):
        return not_yet("The model never called `recall` successfully: ask a question the "
                       f"{role}'s memory can answer, and let the loop run.")
    mine = [e.payload for e in case.bureau.event_log(case.id)
            if e.type == "retrieval.completed" and e.payload.get("role") == role]
    if not mine:
        return not_yet(f"The bureau has no retrieval by the {role} on record: was the run made "
                       "on this case?")
    scopes = set(mine[-1]["searched_scopes"])
    allowed = {role, BOARD, *case.scopes_for(role)}
    if not {role, BOARD} <= scopes <= allowed:
        return not_yet(f"The last retrieval searched {sorted(scopes)}: expected the {role}'s "
                       "own space and the board.")
    strangers = owners_seen(answer) - allowed
    if strangers:
        return not_yet(f"The run was handed cards owned by {sorted(strangers)}.")
    return passed(f"The model chose every call, and the bureau still searched only "
                  f"{sorted(scopes)}: the identity came from the handle you built, not from "
                  "anything the model wrote.")


SOLUTION = '''with StandinModel("obedient") as model:  # with a provider: voice.responder instead
    wired = model.responder()
    my_run = run_tool_loop(wired.client, wired.settings.model, case.agent(informant),
                           safe_question)
my_run.reply'''

register(Exercise("09-wire-an-agent", "An agent host wired through one handle", SOLUTION,
                  check_wired_agent))

__all__ = ["BUREAU_ANSWER", "CAUSES", "CHECKLIST", "PEER_STYLE_TOOLS", "check_wired_agent",
           "checklist", "frameworks", "identity_fields", "owners_seen", "peer_reports",
           "plot_peer_reports"]


def role_server(bureau: Any, case: Case, role: str) -> Any:
    """An MCP stdio transport to ``python -m bureau mcp`` serving one role of ``case``.

    The server process shares this kernel's data directory (the bureau supports several
    processes on one store). Its log goes to the kernel's own stderr, not the notebook: a
    notebook's stderr has no file descriptor for the child to inherit.
    """
    import sys

    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "bureau", "mcp", "--case", case.id, "--role", role],
        env={"BUREAU_DATA_DIR": str(bureau.settings.data_dir)})
    return stdio_client(params, errlog=sys.__stderr__)
