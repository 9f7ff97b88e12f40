"""The forgetting lab (issue 31 §3): what is left on disk after the bureau forgets, measured as
the observer who copies the data directory would.

For each way of forgetting (revoke, forget, an expiry falling due, a session's end, a reset, a
deleted case, a deleted task scope, a task-scope member removed with its values, and the
instructor's ``classroom reset|remove|teardown`` on a real classroom server) and a control that
is not forgotten, with sealing off and on:
write canary cards, forget them, close the process, then read every byte of the data directory.
Three figures per row: canaries found in plaintext (``grep``), the dictionary attack's top-1 rate
(each forgotten card among 50 candidate texts, scored against every vector found in the files;
chance 2 %), once without and once with the copied key store, and what the key store still
holds of the forgotten cards. ``python -m bureau forgetting --out DIR``; see :mod:`.lab`;
``--docs docs/sealing.md`` rewrites that page's table from the rows (:mod:`.report`).
"""

from .. import entry_points

__getattr__ = entry_points(__name__, run="lab:run_lab", OPERATIONS="lab:OPERATIONS")
