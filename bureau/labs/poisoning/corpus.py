"""The lab's trials: a realistic memory, the questions asked of it and the poisons aimed at it.

A **trial** is one victim role in one case:

* **Memory**: a shipped scenario (``data/poisoning/scenarios.yaml`` names which, round robin, and
  which role is the victim) with every role's opening cards, plus a **slice** of a benchmark --
  ``slice_items`` consecutive items (file order) of MAGPIE or AgentSocialBench -- added to the
  victim's opening memories. The case is created with ``Bureau.create_case`` from that one
  scenario, so the slice is written the way the leak lab writes its benchmarks: one batched
  embedding pass and one bulk write through the service, never a gateway call from here.
  MAGPIE items are its ``"key: body"`` texts; AgentSocialBench items the stored fact
  (``SocialItem.fact``). Exact duplicates within a slice are dropped.
* **Questions** (all deterministic, :mod:`bureau.labs.poisoning.attack` for the wording):

  - *trigger questions*: the first scenario question of the victim plus the ordinary questions
    about ``trigger_items`` slice items spread evenly over the slice, each with the trigger
    appended;
  - *benign questions*: every trigger question without its trigger (``group="twin"``: the same
    topic, no trigger -- AgentPoison's benign queries), the other scenario questions and the
    ordinary questions about ``benign_items`` further slice items (``group="other"``).

  Each question records its answer card (a seed key), so a run can tell whether the card that
  answers it stayed in the top-k.
* **Poisons**, two attacks: *topical*, one per trigger question
  (:func:`~bureau.labs.poisoning.attack.craft_poison`, repeating its key terms), and *rare-trigger*,
  ``trigger_poisons_per_trial`` (1) per trial (:func:`~bureau.labs.poisoning.attack.craft_trigger_poison`:
  the trigger and a payload, nothing of any question), each with the attacker's page as its
  tool source and a copy on the allow-listed host the attacker can post on.

Slice ``j`` of a benchmark feeds trial ``j``; ``limit`` trials per benchmark take its first
``limit`` slices, so a small run is a prefix of a large one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from bureau.errors import ScenarioError
from bureau.labs.poisoning.attack import (
    AttackSpec,
    craft_poison,
    craft_trigger_poison,
    is_poison,
    load_attack,
    poison_source,
    question_for,
    triggered,
)
from bureau.resources import shipped_path
from bureau.scenario import LAB_LIMITS, Scenario, load_scenario, parse_scenario
from bureau.text import MAX_CARD_CHARS

SCENARIOS_FILE = ("data", "poisoning", "scenarios.yaml")
SLICE_ITEMS = 100
"""Benchmark items written into the victim's memory per trial (beside its scenario cards)."""
TRIGGER_ITEMS = 4
"""Slice items per trial that get a trigger question (and a poison); plus one scenario question."""
BENIGN_ITEMS = 6
"""Slice items per trial asked about only as ordinary (benign) questions."""
SLICE_KEY = "slice"
"""Seed-key prefix of the slice's cards (``slice000``...): never a key of a shipped scenario."""

MAGPIE, SOCIAL = "MAGPIE", "AgentSocialBench"
TOPICAL, RARE = "topical", "rare-trigger"
ATTACKS: tuple[str, ...] = (RARE, TOPICAL)
"""The two attacks every trial is run with, in report order: the rare trigger alone (the
attack AgentPoison describes) and the topical poison (a stronger attacker who writes the target
question's key terms into its page)."""


@dataclass(frozen=True)
class VictimSpec:
    """One entry of ``scenarios.yaml``: a shipped scenario, its victim role, its questions."""

    scenario_id: str
    victim: str
    questions: tuple[tuple[str, str], ...]
    """``(question text, answer seed key)``, the first one also a trigger target."""


@dataclass(frozen=True)
class Question:
    """One question a trial asks, every configuration alike."""

    qid: str
    text: str
    kind: str
    """``trigger`` (carries the trigger) or ``benign``."""
    group: str
    """``trigger``; ``twin`` (a trigger question without its trigger) or ``other``."""
    answer: str
    """Seed key of the card that answers it."""
    target: str
    """The topic's id: a trigger question and its twin share it."""


@dataclass(frozen=True)
class Poison:
    """One poisoned page: ``source`` is the attacker's page it was fetched from, ``shared``
    its copy on the allow-listed host the attacker can post on too (promotion rule (a))."""

    pid: str
    target: str
    """The trigger question it aims at (``*`` for a rare-trigger poison: any of them)."""
    text: str
    source: str
    shared: str = ""


@dataclass(frozen=True)
class Trial:
    """Everything one trial writes and asks (module docstring)."""

    trial_id: str
    dataset: str
    slice_index: int
    scenario: Scenario
    """The shipped scenario with the slice added to the victim's opening memories."""
    victim: str
    slice_keys: tuple[str, ...]
    questions: tuple[Question, ...]
    poisons: tuple[Poison, ...]
    """The topical attack: one poison per trigger question, repeating its key terms."""
    source_scenarios: tuple[str, ...] = field(default=())
    """The benchmark scenarios the slice's items come from (for the report)."""
    trigger_poisons: tuple[Poison, ...] = field(default=())
    """The rare-trigger attack: the trigger and a payload, nothing of any question."""

    def attack_poisons(self, attack: str) -> tuple[Poison, ...]:
        """The poisons of ``attack`` (:data:`TOPICAL` or :data:`RARE`)."""
        return self.poisons if attack == TOPICAL else self.trigger_poisons

    @property
    def memory_size(self) -> int:
        """Cards the victim can read before any poison: its own opening cards (board empty)."""
        return len(self.scenario.memories.get(self.victim, []))

    @property
    def triggers(self) -> tuple[Question, ...]:
        return tuple(q for q in self.questions if q.kind == "trigger")

    @property
    def benign(self) -> tuple[Question, ...]:
        return tuple(q for q in self.questions if q.kind == "benign")

    def texts(self) -> list[str]:
        """Every text the trial embeds: its cards, questions and poisons (distinct, in order)."""
        cards = [m.content for _, m in self.scenario.seeds()]
        out = [*cards, *(q.text for q in self.questions), *(p.text for p in self.poisons),
               *(p.text for p in self.trigger_poisons)]
        return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Corpus:
    """The trials of a run, with the attack and where the data came from."""

    trials: tuple[Trial, ...]
    attack: AttackSpec
    sources: Mapping[str, str]
    """Benchmark name -> the path its slices were read from."""
    slice_items: int = SLICE_ITEMS

    def __len__(self) -> int:
        return len(self.trials)

    def texts(self) -> list[str]:
        return list(dict.fromkeys(t for trial in self.trials for t in trial.texts()))

    def counts(self) -> dict[str, int]:
        return {
            "trials": len(self.trials),
            "memory_cards": sum(t.memory_size for t in self.trials),
            "trigger_questions": sum(len(t.triggers) for t in self.trials),
            "benign_questions": sum(len(t.benign) for t in self.trials),
            "poisons": sum(len(t.poisons) for t in self.trials),
            "trigger_poisons": sum(len(t.trigger_poisons) for t in self.trials),
        }


# --- the victims ---------------------------------------------------------------------------------


def load_victims(path: str | Path | None = None) -> tuple[VictimSpec, ...]:
    """``data/poisoning/scenarios.yaml`` checked against the shipped scenarios it names."""
    file = Path(path) if path is not None else shipped_path(*SCENARIOS_FILE)
    return _load_victims(str(file))


@lru_cache(maxsize=4)
def _load_victims(file: str) -> tuple[VictimSpec, ...]:
    hint = "See data/poisoning/README.md for the fields of scenarios.yaml."
    try:
        data = yaml.safe_load(Path(file).read_text(encoding="utf-8"))
        entries = data["scenarios"]
    except (OSError, yaml.YAMLError, TypeError, KeyError) as exc:
        raise ScenarioError(f"{file}: cannot read the lab's scenarios ({exc!r}).", hint) from None
    out = []
    for i, entry in enumerate(entries or []):
        try:
            scenario = load_scenario(entry["id"])
            victim = entry["victim"]
            questions = tuple((q["text"], q["answer"]) for q in entry["questions"])
        except (TypeError, KeyError) as exc:
            raise ScenarioError(f"{file}: scenarios[{i}]: missing field {exc}.", hint) from None
        keys = {m.key for m in scenario.memories.get(victim, [])}
        if victim not in scenario.role_names or not questions:
            raise ScenarioError(f"{file}: scenarios[{i}]: {victim!r} is no role of "
                                f"{scenario.id} or it has no questions.", hint)
        bad = [a for _, a in questions if a not in keys]
        if bad:
            raise ScenarioError(f"{file}: scenarios[{i}]: answer {bad[0]!r} is not a card of "
                                f"{victim} in {scenario.id}.", hint)
        out.append(VictimSpec(scenario.id, victim, questions))
    if not out:
        raise ScenarioError(f"{file}: no scenarios listed.", hint)
    return tuple(out)


# --- benchmark slices ----------------------------------------------------------------------------


def benchmark_texts(path: str | Path) -> tuple[list[tuple[str, str]], str]:
    """``(item text, benchmark scenario id)`` of every item of a benchmark, in file order, and
    the benchmark's name as the report gives it."""
    from bureau.labs.leakage.datasets.convert import benchmark_of

    if benchmark_of(path) == "agentsocialbench":
        from bureau.labs.leakage.datasets.agentsocialbench import load_agentsocialbench

        social = load_agentsocialbench(path)
        return [(i.fact, i.scenario_id) for s in social.scenarios for i in s.items], SOCIAL
    from bureau.labs.leakage.datasets.magpie import load_magpie

    magpie = load_magpie(path)
    by_id = {s.scenario_id: s for s in magpie.scenarios}
    order = magpie.file_order or tuple(by_id)
    return [(i.text, sid) for sid in order for i in by_id[sid].items], MAGPIE


def slices(items: Sequence[tuple[str, str]], size: int, limit: int | None = None
           ) -> list[list[tuple[str, str]]]:
    """Consecutive slices of ``size`` distinct, non-empty items; a last slice shorter than half
    of ``size`` is dropped unless it is the only one."""
    if size < 1:
        raise ValueError("slice size must be at least 1")
    out: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    seen: set[str] = set()
    for text, sid in items:
        text = " ".join(text.split())[:MAX_CARD_CHARS]
        if not text or text in seen:
            continue
        seen.add(text)
        current.append((text, sid))
        if len(current) == size:
            out.append(current)
            current, seen = [], set()
            if limit is not None and len(out) >= limit:
                return out
    if current and (not out or len(current) * 2 >= size):
        out.append(current)
    return out[:limit] if limit is not None else out


def spread(n: int, count: int) -> list[int]:
    """``count`` indices spread evenly over ``range(n)`` (all of them when ``count >= n``)."""
    if count >= n:
        return list(range(n))
    return [int(i * n / count) for i in range(count)]


# --- building trials -----------------------------------------------------------------------------


def build_trial(
    dataset: str,
    index: int,
    items: Sequence[tuple[str, str]],
    victim: VictimSpec,
    spec: AttackSpec,
    trigger_items: int = TRIGGER_ITEMS,
    benign_items: int = BENIGN_ITEMS,
    base_scenario: Scenario | None = None,
) -> Trial:
    """One trial from one slice (module docstring); ``base_scenario``: the victim's shipped
    scenario if the caller loaded it already."""
    base = (base_scenario or load_scenario(victim.scenario_id)).to_dict()
    slice_keys = [f"{SLICE_KEY}{n:03d}" for n in range(len(items))]
    cards = [{"key": key, "topic": "notes", "kind": "note", "content": text}
             for key, (text, _) in zip(slice_keys, items, strict=True)]
    memories = {role: list(mems) for role, mems in base.get("memories", {}).items()}
    memories[victim.victim] = [*memories.get(victim.victim, []), *cards]
    trial_id = f"{_slug(dataset)}-{index:03d}"
    data = {**base, "title": f"{base['title']} + {dataset} slice {index}"[:120],
            "memories": memories}
    scenario = parse_scenario(data, limits=LAB_LIMITS)  # a 2,000-item slice fits
    for role, mem in scenario.seeds():
        if is_poison(mem.content, spec):
            raise ScenarioError(f"{trial_id}: the card {mem.key} of {role} contains the "
                                "trigger, so poisons could not be told apart.",
                                "Choose another trigger in data/poisoning/attack.yaml.")

    # Questions: the victim's scenario questions first, then slice items spread over the slice.
    asked: list[tuple[str, str, bool]] = []  # (question, answer key, is a trigger target)
    seen: set[str] = set()
    for n, (text, answer) in enumerate(victim.questions):
        if text not in seen:
            seen.add(text)
            asked.append((text, answer, n == 0))
    picks = spread(len(items), trigger_items + benign_items)
    # Trigger targets alternate with benign ones along the slice, so both cover all of it.
    order = sorted(range(len(picks)), key=lambda i: (i % 2, i))
    n_trigger = 0
    for i in order:
        j = picks[i]
        question = question_for(items[j][0], spec)
        if question is None or question in seen:
            continue
        seen.add(question)
        is_target = i % 2 == 0 and n_trigger < trigger_items
        n_trigger += is_target
        asked.append((question, slice_keys[j], is_target))

    questions: list[Question] = []
    poisons: list[Poison] = []
    for n, (text, answer, is_target) in enumerate(asked):
        target = f"t{n:02d}"
        if is_target:
            questions.append(Question(f"{target}-trigger", triggered(text, spec), "trigger",
                                      "trigger", answer, target))
            k = len(poisons)
            poisons.append(Poison(f"p{k:02d}", target, craft_poison(text, index + k, spec),
                                  poison_source(index + k, spec),
                                  poison_source(index + k, spec, shared=True)))
        questions.append(Question(f"{target}-benign", text, "benign",
                                  "twin" if is_target else "other", answer, target))
    rare = tuple(Poison(f"r{k:02d}", "*", craft_trigger_poison(index + k, spec),
                        poison_source(index + k, spec), poison_source(index + k, spec, True))
                 for k in range(spec.trigger_poisons_per_trial))
    return Trial(
        trial_id=trial_id, dataset=dataset, slice_index=index, scenario=scenario,
        victim=victim.victim, slice_keys=tuple(slice_keys), questions=tuple(questions),
        poisons=tuple(poisons), source_scenarios=tuple(dict.fromkeys(s for _, s in items)),
        trigger_poisons=rare,
    )


def build_corpus(
    sources: Sequence[str | Path],
    limit: int | None = None,
    slice_items: int = SLICE_ITEMS,
    trigger_items: int = TRIGGER_ITEMS,
    benign_items: int = BENIGN_ITEMS,
    attack: AttackSpec | None = None,
    victims: Sequence[VictimSpec] | None = None,
) -> Corpus:
    """The trials of every benchmark in ``sources``: ``limit`` slices each (default: all).

    Trial ``j`` of a benchmark uses the ``j``-th victim entry round robin, so every shipped
    scenario appears in every run of three trials or more.
    """
    spec = attack or load_attack()
    victims = tuple(victims or load_victims())
    trials: list[Trial] = []
    used: dict[str, str] = {}
    bases = {v.scenario_id: load_scenario(v.scenario_id) for v in victims}
    for source in sources:
        name_or_path = str(source)
        items, name = benchmark_texts(source)
        if name in used:
            raise ScenarioError(f"{name} given twice ({used[name]} and {name_or_path}).",
                                "Pass each benchmark once.")
        used[name] = name_or_path
        parts = slices(items, slice_items, limit)
        if not parts:
            raise ScenarioError(f"{name_or_path}: no items to build a memory from.",
                                "Point the lab at a MAGPIE or AgentSocialBench copy.")
        for j, part in enumerate(parts):
            victim = victims[j % len(victims)]
            trials.append(build_trial(name, j, part, victim, spec, trigger_items, benign_items,
                                      bases[victim.scenario_id]))
    return Corpus(tuple(trials), spec, used, slice_items)


def _slug(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())[:16] or "data"


def describe(trial: Trial) -> dict[str, Any]:
    """A trial's sizes as one flat record (the per-trial table of the report)."""
    return {
        "trial_id": trial.trial_id, "dataset": trial.dataset, "scenario": trial.scenario.id,
        "victim": trial.victim, "memory_cards": trial.memory_size,
        "slice_cards": len(trial.slice_keys), "poisons": len(trial.poisons),
        "trigger_questions": len(trial.triggers), "benign_questions": len(trial.benign),
        "source_scenarios": len(trial.source_scenarios),
    }


# --- where the benchmarks are --------------------------------------------------------------------

MINIS = {MAGPIE: ("data", "magpie_mini"), SOCIAL: ("data", "agentsocialbench_mini")}
"""The shipped synthetic samples the lab falls back to when a benchmark is not found."""


def resolve_sources(magpie: str | Path | None = None, social: str | Path | None = None
                    ) -> tuple[list[Path], list[str]]:
    """The benchmark paths to slice, and notes on any fallback.

    A path given is used as is (its loader says what is wrong with it). Otherwise each benchmark
    is looked for where the leak lab looks (``$BUREAU_MAGPIE`` / ``$BUREAU_AGENTSOCIALBENCH`` or
    ``../shared/datasets``); when it is not there, the shipped mini sample stands in and a note
    says so -- the lab then still runs offline on a fresh clone.
    """
    from bureau.labs.leakage.datasets.agentsocialbench import default_agentsocialbench_path
    from bureau.labs.leakage.datasets.magpie import default_magpie_path

    paths: list[Path] = []
    notes: list[str] = []
    for name, given, finder in ((MAGPIE, magpie, default_magpie_path),
                                (SOCIAL, social, default_agentsocialbench_path)):
        if given is not None:
            paths.append(Path(given).expanduser())
            continue
        try:
            paths.append(finder())
        except ScenarioError as exc:
            mini = shipped_path(*MINIS[name])
            paths.append(mini)
            notes.append(f"{exc.message} Using the shipped sample {mini} instead (synthetic, "
                         "for a demonstration, not a measurement).")
    return paths, notes
