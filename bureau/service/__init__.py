"""The service layer: the Bureau façade and its cases, the publish saga, the read-path catalogue.

It decides which spaces a request may search and hands widgets, responders and the lab only the
cards it decided they may see; it never imports PowerMem (the storage layer does).

Threat model (docs/threat-model.md):

* The operator is trusted: whoever holds a ``Bureau`` or a ``Case``, or can write the data
  directory. Nothing here protects anything from the operator.
* An agent acts as exactly one role of one case, only through the handle it was given
  (``case.agent(role)``, its ``tools()`` and ``call_tool()``). An LLM that obeys any text it
  reads may drive it, so it may pick any argument of those tools, ask any question any number
  of times, and time the answers. It cannot run code in this process or read the bureau's files.
* An observer sees only the outward views, ``Case.stage()`` and ``Case.events()``, which name
  no task scope, member, invitee or run id (:mod:`.outward`); the operator's full record is
  ``Bureau.event_log``.

So the service decides what an agent may read from the principal its handle carries, never from
an argument or from the text of a question or a card, and no outward view carries private text,
a question or an answer; a consult of another role's memory returns only what was released.
Every consult is audited, and an agent works under per-principal quotas (:mod:`bureau.quotas`).
Known gaps: the audit chain is unkeyed, so whoever can write the ledger file can rewrite it
(issue 19 §3); revocation misses derived copies such as promoted copies (issue 19 §1).
"""

from .bureau import Bureau
from .case import Case

__all__ = ["Bureau", "Case"]
