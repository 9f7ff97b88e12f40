"""The leak lab's embedding schedule: which texts are embedded when, and by which worker.

The lab embeds every text once, ahead of the storage work that needs it, on a worker thread
per core, of which one steps back on a quiet machine (:func:`one_steps_back`): the storage
thread takes the CPU it needs and the encoder the rest. On two cores the run is bound by the CPU it needs, so the schedule has
one job: never leave a core idle. A core idles when the storage thread still has work after
the last text is embedded, which happens when vectors reach it in lumps. So the scenarios are
cut into groups that arrive one after the other (:func:`groups`), each group is embedded by
every worker at once (:func:`shares`), and the last groups are small (issue 31 §4: the full
sealed lab went from one core idle for its last ~25 s to none, docs/sealing.md, "Cost").
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

from bureau.embedding import run_in_background
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


BUSY_OTHERS = 0.5
"""Cores others may keep busy while the lab starts with one worker stepped back
(:func:`one_steps_back`)."""


def _machine_ticks() -> tuple[int, int, int]:
    """(all ticks, busy ticks, cores) from ``/proc/stat``; busy: all but idle and I/O wait."""
    with open("/proc/stat", encoding="ascii") as f:
        lines = f.read().splitlines()
    ticks = [int(x) for x in lines[0].split()[1:9]]  # user .. steal; guest is in user
    cores = sum(1 for line in lines if line[:3] == "cpu" and line[3:4].isdigit())
    return sum(ticks), sum(ticks) - ticks[3] - ticks[4], cores


def _own_ticks() -> int:
    """CPU ticks of this process and every process under it (the store's server runs as a
    child: embedded seekdb), from ``/proc/<pid>/stat``."""
    parent: dict[int, int] = {}
    spent: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        spent[pid] = int(fields[11]) + int(fields[12])  # utime, stime
    mine = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return sum(spent.get(pid, 0) for pid in mine)


def busy_cores(seconds: float = 0.25) -> float | None:
    """How many cores *other* processes kept busy over the next ``seconds``: the machine's busy
    time less that of this process and its children (at the lab's start the store's server
    may still be at work). Linux only (``/proc``); None where it cannot be read."""
    try:
        total0, busy0, cores = _machine_ticks()
        own0 = _own_ticks()
        time.sleep(seconds)
        total1, busy1, _ = _machine_ticks()
        own1 = _own_ticks()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0 or not cores:
        return None
    others = (busy1 - busy0) - (own1 - own0)
    return max(0.0, cores * others / (total1 - total0))


def one_steps_back(busy: float | None) -> Callable[[], None] | None:
    """An initializer for the embedding pool, given the cores other processes kept busy as the
    lab starts (:func:`busy_cores`): on a quiet machine the first worker steps back
    (:func:`~bureau.embedding.run_in_background`) and the others keep the caller's priority;
    on a busy one (others keep more than :data:`BUSY_OTHERS` cores) none does (None).

    Why one: the lab runs a worker per core beside its storage thread, one thread more than the
    cores. The spare must not starve the storage thread (the lab then ends with the storage
    work alone on one core), so it takes only the CPU no one else wants: quiet, the full sealed
    lab read 1.32–1.40 x its embedding floor against 1.50 x with no worker stepped back.
    Why only on a quiet machine: Linux shares the CPU by nice value among the threads of one
    session (or container); a busy process there takes a stepped-back worker's CPU too. Beside
    two busy loops of the same session, a 25-scenario MAGPIE run read 5.64 x with every worker
    stepped back, 3.15 x with one and 1.34 x with none (busy loops in sessions of their own:
    1.14, 1.21 and 1.19 x; the full lab with every worker stepped back did not end in 26
    minutes, 7 quiet). A thread cannot step forward again, so the choice is made once.
    """
    if busy is not None and busy > BUSY_OTHERS:
        return None
    first = threading.Lock()

    def initializer() -> None:
        if first.acquire(blocking=False):
            run_in_background()

    return initializer


__all__ = [
    "BUSY_OTHERS",
    "GROUP_CAP",
    "groups",
    "busy_cores",
    "one_steps_back",
    "scenario_texts",
    "shares",
]
