"""The published figures the lab is compared with: the one place they are written down.

Li, "Memory as a Service (MaaS): Purpose-Bound Memory Mediation for Cooperative Agents",
arXiv 2506.22815v2, reports a diagnostic probe on MAGPIE. The report, the plots and the command
read these constants; every other number they print is computed from the run.
"""

from __future__ import annotations

from typing import Any

PAPER: dict[str, Any] = {
    "source": "Li, Memory as a Service (MaaS), arXiv:2506.22815v2, MAGPIE diagnostic probe",
    "relevance_auroc": 0.570,
    "private_leak_rate": 0.530,
    "hint_items": 66,
    "private_preferences": 1456,
}
