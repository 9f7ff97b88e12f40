"""Load AgentSocialBench privacy boundaries as flat, labelled memory items (the lab's terms).

AgentSocialBench (Wang, Jiang et al., arXiv 2604.01487; MIT; data from
``kingofspace0wzz/agentsocialbench``, folder ``prism/data/``) ships 372 scenario files in seven
categories under ``scenarios/<category>/*.json``. Three of them draw a *privacy boundary* between
a user's agent and the other side, which is what the leakage lab measures; only those are loaded:

``cross_domain`` (107 files)
    One user, two domain agents (say finance and professional). ``privacy_boundary`` holds
    ``must_not_cross``, ``acceptable_abstractions`` and ``minimum_info_needed``.
``mediated_comm`` (100 files)
    One user's mediating agent talks to a human (``humans[0]``); same three keys.
``cross_user`` (50 files)
    Two users, one agent each. ``privacy_boundary`` holds one block per person, keyed by a
    lowercase first name (``hassan``, ``sienna``), each with ``must_not_cross`` and
    ``acceptable_abstractions``, plus one shared ``minimum_info_needed`` whose entries start with
    the person's name (``"Hassan: ..."``).

The other four categories (``affinity_modulated``, ``competitive``, ``hub_and_spoke``,
``multi_party_group``: 115 files) describe group settings with a different shape; their files are
skipped unread and counted in :attr:`SocialDataset.skipped`.

Mapping to the lab's terms
    * **Private items**: the ``must_not_cross`` sentences of a scenario (in ``cross_user``, of each
      person's block).
    * **Shareable items**: the ``minimum_info_needed`` entries.
    * **Holder**: the user's agent holds both. ``cross_domain``: the agent whose ``domain`` is
      ``metadata.source_domain`` (the first agent when that is absent); ``mediated_comm``: its
      only agent; ``cross_user``: each person's agent (the agent whose ``user`` has that first
      name) holds its own ``must_not_cross`` items and the ``minimum_info_needed`` entries
      prefixed with its person's name.
    * **Requester**: the agent on the other side, i.e. every other participant of the scenario:
      the target-domain agent (``cross_domain``), the human (``mediated_comm``, named by
      ``humans[].name``), the other person's agent (``cross_user``, in both directions). It asks
      with the scenario's ``task``, as a MAGPIE requester does.
    * **Safe abstraction** of a private item: the value of the ``acceptable_abstractions`` key
      paired with its sentence by the rule of :mod:`~bureau.labs.leakage.datasets.social_pairing`, if any.
    * **Item text**: :attr:`SocialItem.text` is the sentence verbatim. The text the lab stores
      (:attr:`SocialItem.fact`) drops a leading prohibition in ``must_not_cross`` ("Do not reveal
      that", "Reveal", "Must not disclose", ...; 453 of 489 ``mediated_comm`` sentences start so,
      the other categories write "That she has ..."): it is an instruction to the agent, not the
      memory, and it would make every private card lexically alike, the reason the MAGPIE loader
      leaves out ``penalty`` fields. ``minimum_info_needed`` entries are stored verbatim (the
      ``cross_user`` name prefix included: it says whose fact it is).

    Caveat the report should carry: ``minimum_info_needed`` sometimes names what the *other* side
    must contribute (``mediated_comm``: "Nisha's availability constraints"); it is still held by
    the user's agent here, because the dataset lists it as what the exchange needs.

Where the rest lives
    This module reads the files: it finds the data, walks the folders, enforces the limits and
    raises every error (:class:`~bureau.errors.ScenarioError`, naming the file and the field),
    and applies the mapping above. The data model it builds is in
    :mod:`bureau.labs.leakage.datasets.social_model`; the pairing of ``acceptable_abstractions`` keys with
    ``must_not_cross`` sentences, the one judgement call of the mapping (its rule, why, and its
    figures on the shared copy), in :mod:`bureau.labs.leakage.datasets.social_pairing`; the conversion to the
    lab's common shape (MAGPIE's scenario objects) in :mod:`bureau.labs.leakage.datasets.social_lab`. Each part
    is one concept that reads on its own; every public name of the three is re-exported here, so
    ``bureau.labs.leakage.datasets.agentsocialbench`` still offers the whole loader.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from bureau.errors import ScenarioError
from bureau.labs.leakage.datasets.social_lab import to_lab_dataset, to_lab_scenarios
from bureau.labs.leakage.datasets.social_model import (
    IN_SCOPE,
    OUT_OF_SCOPE,
    Category,
    Label,
    Match,
    SocialAgent,
    SocialDataset,
    SocialItem,
    SocialScenario,
)
from bureau.labs.leakage.datasets.social_pairing import (
    FUZZY_THRESHOLD,
    Pairing,
    PairingStats,
    containment,
    content_words,
    normalise,
    pair_abstractions,
    pairing_stats,
)
from bureau.resources import external_dataset

__all__ = [
    "ABSTRACTIONS", "ENV_VAR", "FUZZY_THRESHOLD", "GET_IT", "IN_SCOPE", "MAX_FILES",
    "MAX_FILE_BYTES", "MINIMUM", "MUST_NOT_CROSS", "OUT_OF_SCOPE", "SCENARIOS_DIR", "Category",
    "Label", "Match", "Pairing", "PairingStats", "SocialAgent", "SocialDataset", "SocialItem",
    "SocialScenario", "containment", "content_words", "default_agentsocialbench_path", "fact_text",
    "load_agentsocialbench", "normalise", "pair_abstractions", "pairing_stats", "to_lab_dataset",
    "to_lab_scenarios",
]

ENV_VAR = "BUREAU_AGENTSOCIALBENCH"
SCENARIOS_DIR = "scenarios"
MAX_FILE_BYTES = 1 << 20
"""A scenario file larger than this is refused: the largest real one is 38 KB, so 1 MiB leaves
room for richer files while a stray dump or a hostile file cannot exhaust memory."""
MAX_FILES = 10_000
"""More JSON files than this under the given path is refused (the real dataset has 372)."""

GET_IT = (
    "Get AgentSocialBench from https://github.com/kingofspace0wzz/agentsocialbench (folder "
    "prism/data, MIT) and pass the folder holding scenarios/ (or set "
    f"{ENV_VAR}=/path/to/agentsocialbench)."
)

MUST_NOT_CROSS = "must_not_cross"
ABSTRACTIONS = "acceptable_abstractions"
MINIMUM = "minimum_info_needed"


# --- the item text -------------------------------------------------------------------------------

_LEAD = re.compile(
    r"^(?:(?:do not|don't|must not|should not|never|avoid)\s+)?"
    r"(?:reveal(?:ing)?|disclos(?:e|ing)|shar(?:e|ing)|mention(?:ing)?|provid(?:e|ing)"
    r"|identify(?:ing)?|expos(?:e|ing)|confirm(?:ing)?)\b\s*(?:that\s+)?",
    re.IGNORECASE,
)
"""A leading prohibition ("Do not reveal that", "Reveal", "Sharing"). Bare "name"/"state" are
left out: "Name of her partner" is a fact, not an instruction."""


def fact_text(sentence: str) -> str:
    """A ``must_not_cross`` sentence without its leading prohibition ("Do not reveal that ...")."""
    text = " ".join(sentence.split())
    stripped = _LEAD.sub("", text, count=1)
    if not stripped or stripped == text:
        return text
    return stripped[0].upper() + stripped[1:]


# --- locating the data ---------------------------------------------------------------------------


def default_agentsocialbench_path() -> Path:
    """``$BUREAU_AGENTSOCIALBENCH`` if set, else ``../shared/datasets/agentsocialbench`` beside
    the repository.

    The dataset is never vendored into the repository (licence and size), so it has to be found.
    """
    return external_dataset("AgentSocialBench", ENV_VAR, "agentsocialbench", hint=GET_IT)


def load_agentsocialbench(
    path: str | os.PathLike[str] | None = None, *, max_bytes: int = MAX_FILE_BYTES
) -> SocialDataset:
    """Read the in-scope scenarios from the dataset root, its ``scenarios`` folder, one category
    folder or one scenario file (``None``: :func:`default_agentsocialbench_path`).

    Folders named after an out-of-scope category are skipped unread; in a single folder, a file
    whose ``category`` is out of scope is skipped. Any damaged in-scope file raises
    :class:`ScenarioError` naming the file and the field: a silently dropped scenario would change
    the figures the report quotes.
    """
    source = default_agentsocialbench_path() if path is None else Path(path).expanduser()
    if not source.exists():
        raise ScenarioError(f"AgentSocialBench data not found at {source}.", hint=GET_IT)
    skipped: dict[str, int] = {}
    files = _scenario_files(source, skipped)
    if len(files) > MAX_FILES:
        raise ScenarioError(f"{source}: {len(files)} JSON files, over the {MAX_FILES} limit.")
    scenarios: list[SocialScenario] = []
    for file, folder_category in files:
        data = _read_json(file, max_bytes)
        category = _category(file, data, folder_category)
        if category not in IN_SCOPE:
            skipped[category] = skipped.get(category, 0) + 1
            continue
        scenarios.append(_scenario(file, data, category))
    if not scenarios:
        what = f" (skipped {sum(skipped.values())} out-of-scope files)" if skipped else ""
        raise ScenarioError(f"{source} contains no {'/'.join(IN_SCOPE)} scenarios{what}.", GET_IT)
    scenarios.sort(key=lambda s: s.scenario_id)
    _check_unique(((s.scenario_id, s.file) for s in scenarios), "scenario_id")
    items = tuple(i for s in scenarios for i in s.items)
    return SocialDataset(
        scenarios=tuple(scenarios),
        items=items,
        skipped=dict(sorted(skipped.items())),
        source=source,
    )


def _scenario_files(source: Path, skipped: dict[str, int]) -> list[tuple[Path, str | None]]:
    """(file, the category its folder names or None) for every JSON file to read, sorted."""
    if source.is_file():
        if source.suffix.lower() != ".json":
            raise ScenarioError(f"{source}: not a .json scenario file.", hint=GET_IT)
        return [(source, None)]
    root = source / SCENARIOS_DIR if (source / SCENARIOS_DIR).is_dir() else source
    flat = _json_files(root)
    if flat:  # one category folder (or any folder of scenario files)
        if root.name in OUT_OF_SCOPE:  # skipped unread, like the folder in a full tree
            skipped[root.name] = len(flat)
            return []
        return [(f, root.name if root.name in IN_SCOPE else None) for f in flat]
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not folders:
        raise ScenarioError(
            f"{source} holds no scenario files (*.json) nor category folders.", GET_IT
        )
    files: list[tuple[Path, str | None]] = []
    for folder in folders:
        found = _json_files(folder)
        if folder.name in IN_SCOPE:
            files += [(f, folder.name) for f in found]
        elif found:
            skipped[folder.name] = skipped.get(folder.name, 0) + len(found)
    return files


def _json_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.json") if p.is_file() and not p.name.startswith("."))


# --- parsing -------------------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:  # json would keep the last silently, losing an item or an abstraction
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _read_json(file: Path, max_bytes: int) -> dict[str, Any]:
    try:
        size = file.stat().st_size
        if size > max_bytes:
            raise ScenarioError(
                f"{file}: {size} bytes, over the {max_bytes}-byte limit for one scenario file "
                "(the largest real one is 38 KB).",
                "Pass max_bytes=... to load_agentsocialbench if the file is genuine.",
            )
        with file.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
        if len(raw) > max_bytes:  # grew after stat, or a special file
            raise ScenarioError(f"{file}: over the {max_bytes}-byte limit for one scenario file.")
        data = json.loads(
            raw.decode("utf-8-sig"), parse_constant=_no_constant, object_pairs_hook=_unique_object
        )
    except ScenarioError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ScenarioError(f"{file}: not a valid JSON scenario file ({exc}).") from exc
    if not isinstance(data, dict):
        raise ScenarioError(f"{file}: expected one scenario object, found {_kind(data)}.")
    return data


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")


class _Where:
    """Builds the precise error for a field of one file."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def error(self, path: str, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.file}: field {path!r} {problem}.")

    def text(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not value.strip():
            found = "an empty string" if isinstance(value, str) else _kind(value)
            raise self.error(path, f"must be a non-empty string, found {found}")
        return " ".join(value.split())

    def obj(self, value: Any, path: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(path, f"must be an object, found {_kind(value)}")
        return value

    def texts(self, value: Any, path: str) -> list[str]:
        if not isinstance(value, list):
            raise self.error(path, f"must be a list of strings, found {_kind(value)}")
        return [self.text(v, f"{path}[{n}]") for n, v in enumerate(value)]

    def abstractions(self, value: Any, path: str) -> dict[str, str]:
        block = self.obj(value, path)
        out: dict[str, str] = {}
        for key, text in block.items():
            if not key.strip():
                raise self.error(path, "has an empty key")
            out[" ".join(key.split())] = self.text(text, f"{path}.{key}")
        return out


def _category(file: Path, data: Mapping[str, Any], folder: str | None) -> str:
    declared = data.get("category")
    if declared is None:
        if folder is None:
            raise _Where(file).error("category", "is missing (and the folder names no category)")
        return folder
    category = _Where(file).text(declared, "category")
    if folder is not None and category != folder:
        raise _Where(file).error("category", f"says {category!r} but the file is in {folder}/")
    return category


def _people(data: Mapping[str, Any], agents: Iterable[SocialAgent], blocks: Iterable[Any]
            ) -> tuple[str, ...]:
    """Names both sides of a scenario know (:attr:`SocialScenario.people`), read leniently: a
    profile without a name adds none (the names only narrow a leak figure, they decide nothing)."""
    names: dict[str, None] = {}
    profiles = data.get("user_profiles")
    for profile in profiles if isinstance(profiles, list) else []:
        if isinstance(profile, Mapping) and isinstance(profile.get("name"), str):
            names[profile["name"]] = None
    for agent in agents:
        if agent.kind == "human" or agent.user:
            names[agent.name if agent.kind == "human" else agent.user] = None
    for block in blocks:
        if block.person:
            names[block.person] = None
    return tuple(n for n in names if n.strip())


def _scenario(file: Path, data: Mapping[str, Any], category: str) -> SocialScenario:
    w = _Where(file)
    scenario_id = w.text(data["scenario_id"], "scenario_id") if "scenario_id" in data else file.stem
    task = w.text(data.get("task"), "task")
    boundary = w.obj(data.get("privacy_boundary"), "privacy_boundary")
    raw_agents = data.get("agents")
    if not isinstance(raw_agents, list) or not raw_agents:
        raise w.error("agents", f"must be a non-empty list, found {_kind(raw_agents)}")
    agents = [_agent(w, raw, n) for n, raw in enumerate(raw_agents)]
    _check_unique(((a.name, file) for a in agents), "agents[].role")

    if category == "cross_user":
        blocks, holders, minimum = _cross_user(w, boundary, agents)
    else:
        holder, humans = _holder(w, category, data, agents)
        mnc = w.texts(boundary.get(MUST_NOT_CROSS), f"privacy_boundary.{MUST_NOT_CROSS}")
        aa = _optional_abstractions(w, boundary, "privacy_boundary")
        blocks = [_Block(None, "", mnc, aa, holder)]
        holders = {holder}
        minimum = [
            (n, text, holder)
            for n, text in enumerate(_optional_texts(w, boundary, f"privacy_boundary.{MINIMUM}"))
        ]
        agents += humans

    items: list[SocialItem] = []
    unused: list[str] = []
    n_keys = 0
    for person, prefix, sentences, abstractions, holder in blocks:
        pairs, left = pair_abstractions(sentences, abstractions)
        unused += left
        n_keys += len(abstractions)
        for n, (sentence, pairing) in enumerate(zip(sentences, pairs, strict=True)):
            key = f"{prefix}{MUST_NOT_CROSS}[{n}]"
            items.append(
                SocialItem(
                    item_id=f"{scenario_id}/{holder}/{key}",
                    scenario_id=scenario_id,
                    category=category,
                    holder=holder,
                    person=person,
                    field_path=f"privacy_boundary.{key}",
                    label="private",
                    text=sentence,
                    fact=fact_text(sentence),
                    abstraction=pairing.abstraction if pairing else None,
                    abstraction_key=pairing.key if pairing else None,
                    match=pairing.match if pairing else None,
                    score=pairing.score if pairing else None,
                )
            )
    persons = {b.holder: b.person for b in blocks}
    for n, text, holder in minimum:
        key = f"{MINIMUM}[{n}]"
        items.append(
            SocialItem(
                item_id=f"{scenario_id}/{holder}/{key}",
                scenario_id=scenario_id,
                category=category,
                holder=holder,
                person=persons.get(holder),
                field_path=f"privacy_boundary.{key}",
                label="shareable",
                text=text,
                fact=text,
            )
        )
    participants = tuple(replace(a, holder=a.name in holders) for a in agents)
    return SocialScenario(
        people=_people(data, participants, blocks),
        scenario_id=scenario_id,
        category=category,
        task=task,
        agents=participants,
        items=tuple(items),
        abstraction_keys=n_keys,
        unused_abstraction_keys=tuple(unused),
        file=file,
    )


class _Block(NamedTuple):
    """One privacy boundary: a scenario's, or one ``cross_user`` person's."""

    person: str | None
    prefix: str  # field path prefix inside privacy_boundary ("" or "hassan.")
    sentences: list[str]
    abstractions: dict[str, str]
    holder: str


def _agent(w: _Where, raw: Any, n: int) -> SocialAgent:
    agent = w.obj(raw, f"agents[{n}]")
    name = w.text(agent.get("role"), f"agents[{n}].role")
    domain = w.text(agent["domain"], f"agents[{n}].domain") if "domain" in agent else ""
    user = w.text(agent["user"], f"agents[{n}].user") if "user" in agent else ""
    acting = f" for {user}" if user else ""
    return SocialAgent(
        name=name,
        kind="agent",
        domain=domain,
        user=user,
        description=f"{domain or 'an'} agent{acting}",
        holder=False,
    )


def _optional_abstractions(w: _Where, block: Mapping[str, Any], path: str) -> dict[str, str]:
    """``acceptable_abstractions`` may be absent (no abstraction to pair), never malformed."""
    if ABSTRACTIONS not in block:
        return {}
    return w.abstractions(block[ABSTRACTIONS], f"{path}.{ABSTRACTIONS}")


def _optional_texts(w: _Where, block: Mapping[str, Any], path: str) -> list[str]:
    """``minimum_info_needed`` may be absent (no shareable item), never malformed."""
    if MINIMUM not in block:
        return []
    return w.texts(block[MINIMUM], path)


def _holder(
    w: _Where, category: str, data: Mapping[str, Any], agents: list[SocialAgent]
) -> tuple[str, list[SocialAgent]]:
    """The user's agent, and the humans on the other side (``mediated_comm``; else none).

    Every participant but the holder is a requester: the target-domain agent, or the humans.
    """
    if category == "mediated_comm":
        if len(agents) != 1:
            raise w.error("agents", f"must hold the one mediating agent, found {len(agents)}")
        raw_humans = data.get("humans")
        if not isinstance(raw_humans, list) or not raw_humans:
            raise w.error("humans", f"must be a non-empty list, found {_kind(raw_humans)}")
        humans: list[SocialAgent] = []
        for n, raw in enumerate(raw_humans):
            human = w.obj(raw, f"humans[{n}]")
            name = w.text(human.get("name"), f"humans[{n}].name")
            persona = human.get("persona")
            description = " ".join(persona.split()) if isinstance(persona, str) else ""
            humans.append(SocialAgent(name, "human", "", name, description, holder=False))
        _check_unique(((a.name, w.file) for a in [*agents, *humans]), "participant name")
        return agents[0].name, humans
    if len(agents) < 2:
        raise w.error(
            "agents", f"must hold the source and the target domain agent, found {len(agents)}"
        )
    metadata = data.get("metadata")
    source = metadata.get("source_domain") if isinstance(metadata, Mapping) else None
    if source is None:  # no metadata: the file lists the source agent first (all real files do)
        return agents[0].name, []
    matches = [a for a in agents if a.domain == source]
    if len(matches) != 1:
        raise w.error(
            "metadata.source_domain",
            f"is {source!r}, which matches {len(matches)} of agents[].domain "
            f"{[a.domain for a in agents]} (need exactly one)",
        )
    return matches[0].name, []


def _fold(name: str) -> str:
    ascii_ = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return (ascii_ or name).casefold().strip()


def _cross_user(
    w: _Where, boundary: Mapping[str, Any], agents: list[SocialAgent]
) -> tuple[list[_Block], set[str], list[tuple[int, str, str]]]:
    """Per-person blocks, their agents, and the ``Name: ...`` minimum-info entries routed."""
    blocks: list[_Block] = []
    names: dict[str, str] = {}  # folded block key / first name / full user name -> agent name
    for person, raw in boundary.items():
        if person == MINIMUM:
            continue
        path = f"privacy_boundary.{person}"
        if not isinstance(raw, Mapping):
            raise w.error(
                path,
                f"must be a person's block (an object with {MUST_NOT_CROSS!r}), found "
                f"{_kind(raw)}; cross_user boundaries hold one block per person",
            )
        agent = _person_agent(w, person, path, agents)
        mnc = w.texts(raw.get(MUST_NOT_CROSS), f"{path}.{MUST_NOT_CROSS}")
        aa = _optional_abstractions(w, raw, path)
        blocks.append(_Block(person, f"{person}.", mnc, aa, agent.name))
        for alias in (person, agent.user, agent.user.split()[0] if agent.user else ""):
            if alias:
                names[_fold(alias)] = agent.name
    if not blocks:
        raise w.error("privacy_boundary", "holds no person block (cross_user needs one per person)")
    _check_unique(((b.holder, w.file) for b in blocks), "agent for a privacy_boundary person")
    minimum: list[tuple[int, str, str]] = []
    for n, text in enumerate(_optional_texts(w, boundary, f"privacy_boundary.{MINIMUM}")):
        prefix, sep, _ = text.partition(":")
        holder = names.get(_fold(prefix)) if sep else None
        if holder is None:
            persons = sorted(str(b.person) for b in blocks)
            raise w.error(
                f"privacy_boundary.{MINIMUM}[{n}]",
                f"must start with a person's name and a colon (one of {persons}), "
                f"found {text[:40]!r}",
            )
        minimum.append((n, text, holder))
    return blocks, {b.holder for b in blocks}, minimum


def _person_agent(w: _Where, person: str, path: str, agents: list[SocialAgent]) -> SocialAgent:
    """The agent acting for ``person``: its ``user`` first name, else a role starting with it."""
    key = _fold(person)
    found = [a for a in agents if a.user and _fold(a.user.split()[0]) == key]
    if not found:
        found = [a for a in agents if _fold(a.name).startswith(f"{key}_")]
    if len(found) != 1:
        users = [a.user or a.name for a in agents]
        raise w.error(
            path, f"names a person matched by {len(found)} of the agents {users} (need one)"
        )
    return found[0]


def _check_unique(values: Iterable[tuple[str, Path | None]], what: str) -> None:
    seen: dict[str, Path | None] = {}
    for value, file in values:
        if value in seen:
            where = f"{file} and {seen[value]}" if seen[value] != file else str(file)
            raise ScenarioError(f"{where}: duplicate {what} {value!r}.")
        seen[value] = file
