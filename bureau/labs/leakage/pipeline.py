"""The leak lab's embedding schedule: which texts are embedded when, and by which worker.

The lab embeds every text once, ahead of the storage work that needs it, on background threads
(:func:`~bureau.embedding.run_in_background`): the storage thread takes the CPU it needs and
the encoder the rest. On two cores the run is bound by the CPU it needs, so the schedule has
one job: never leave a core idle. A core idles when the storage thread still has work after
the last text is embedded, which happens when vectors reach it in lumps. So the scenarios are
cut into groups that arrive one after the other (:func:`groups`), each group is embedded by
every worker at once (:func:`shares`), and the last groups are small (issue 31 §4: the full
sealed lab went from one core idle for its last ~25 s to none, docs/sealing.md, "Cost").
"""

from __future__ import annotations

from collections.abc import Sequence

from bureau.labs.leakage.datasets.labset import LabScenario
from bureau.labs.leakage.policies.shared_pool import QUERY_SCORES

GROUP_CAP = 64
"""Scenarios per embedding group (:func:`groups`; the last lab's groups halve towards its end)."""


def scenario_texts(scenario: LabScenario) -> list[str]:
    """Every text the lab embeds for one scenario: its items, each agent's query in every
    variant, and the items' safe abstractions."""
    texts = [i.text for i in scenario.items]
    texts += [a.variant(v) for a in scenario.agents for v in QUERY_SCORES]
    texts += [i.abstraction for i in scenario.items if i.abstraction]
    return texts


def groups(
    scenarios: Sequence[LabScenario], cap: int = GROUP_CAP, taper: bool = True
) -> list[list[LabScenario]]:
    """Scenario groups for the embedding pipeline, in order: ``cap`` scenarios each and, when
    ``taper`` (the last lab of a run), halving at the end: ..., 4, 2, 1.

    The storage work follows the embedding group by group; while the storage thread waits for
    a group both cores embed, so no group need be small for the storage to start early. Big
    groups give well-filled, length-sorted batches: padding is wasted model work, over both
    benchmarks 3.2 % of the tokens with groups of 16 ramping up from 1, 1.1 % with groups of 64
    (one global sort: 0.1 %). Only the end wants small groups: after the last vector, the
    storage work left runs alone on one core.
    """
    cap = max(1, cap)
    tail: list[int] = []
    left, size = len(scenarios), 1
    while taper and size < cap and left > size:  # 1, 2, 4, ... below the cap, from the end
        tail.append(size)
        left -= size
        size *= 2
    head = ([left % cap] if left % cap else []) + [cap] * (left // cap)
    out, i = [], 0
    for n in head + tail[::-1]:
        out.append(list(scenarios[i : i + n]))
        i += n
    return out


def shares(group: Sequence[LabScenario], n: int) -> list[list[str]]:
    """The group's distinct texts dealt into ``n`` shares of about equal work, one per worker:
    sorted by length and dealt round robin, so each share holds texts of every length (the
    encoder sorts each share again and pads each batch to its longest text). Empty shares are
    left out.

    Why shares and not a whole group per worker: groups side by side finished in pairs, each
    after the time one thread takes for a whole group, so the storage thread first waited with
    nothing to do and then had two groups to store at once, and it was still storing them when
    the encoder ran out of texts."""
    todo = sorted(dict.fromkeys(x for s in group for x in scenario_texts(s)), key=len)
    n = max(1, n)
    return [share for share in (todo[j::n] for j in range(n)) if share]


__all__ = ["GROUP_CAP", "groups", "scenario_texts", "shares"]
