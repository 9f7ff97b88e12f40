"""Load MAGPIE (multi-agent contextual privacy) scenarios as flat, labelled memory items.

MAGPIE (Juneja et al., arXiv 2506.20737 / 2510.15186; data from ``gurusha01/magpie``) gives each
agent ``shareable_preferences`` and ``private_preferences`` (15 agents say
``private_information`` instead). A memory system stores those as cards, so this module flattens
every entry into one :class:`MagpieItem` labelled ``"shareable"`` or ``"private"``: the label is the
ground truth a leakage metric compares retrievals against.

Item text
    ``"<key with underscores as spaces>: <body>"``, where the body is the entry's ``description``
    (shareable) or ``value`` (private). That is what a retrieval system would index: the key names
    the topic a query will match ("unstable core module"), the body is the fact itself. The
    ``reason``/``utility_impact``/``penalty*`` fields are left out on purpose: they are
    instructions to the simulated negotiator (why it is secret, what leaking costs), not the
    memory, and they would make every private card lexically alike ("penalty", "reveal").

Domain
    The scenario ``file_name`` without its trailing ``_<number>`` (``timeline_1`` -> ``timeline``).

Safe abstraction (hint gradation) rule
    Some private values grade disclosure: the agent *may hint at X* for a small penalty, while
    revealing the specifics costs more. X is then a safe abstraction a careful policy could share
    instead of the secret. A private item has one when its body holds a *hint clause* that carries
    its own penalty, and some *other* clause of the body carries another penalty:

    1. Split the body into sentences at ``. ! ?`` + whitespace, except before ``Penalty:`` (MAGPIE
       writes ``Hinting at 'X'. Penalty: -1.``), then into clauses at ``;``, at ``, penalty`` and
       at ``but`` when a disclosure word follows within three words (``but revealing``,
       ``but cannot share``, ``but can hint``); ``but less effective`` does not split.
    2. Hint clause: ``hint``/``hints``/``hinted``/``hinting`` (optionally + an ``-ly`` adverb)
       followed by ``at``/``that``/``about``/``like``/``of``, or ``allude``... ``to``.
    3. Penalty marker: ``penalty`` followed by a number in the same clause, a number followed by
       ``penalty``, a bare parenthesised number ``(-0.5)``, or ``no penalty``.
    4. The first hint clause with a penalty marker wins, provided some other clause of the body
       carries a penalty marker too (the harsher "revealing Y" level).
    5. X (``abstraction``) is the text after the hint phrase, ending before its penalty marker and
       the first ``( : ; ,`` or sentence end outside quotes; if that region quotes something, X
       runs to the last closing quote (``the prenup has 'significant legal issues'``), otherwise
       it stops at the first linking word (``is``, ``has``, ``carries``, ``with``, ``to``, ...).
       One quoted phrase alone is unquoted. A bare pronoun ("alluding to it") takes the quoted
       phrase that follows it; with none, there is no safe text and the item does not count.

    Only the ``value`` text is read. On the shared copy of MAGPIE the rule finds 64 items: 63 of
    1,456 ``private_preferences`` (4.3%) + 1 of 22 ``private_information``. The MaaS paper reported
    66 of 1,456 (4.5%) with a rule it does not spell out. Deliberately not counted: 66 values that
    use a hint verb without a graded penalty ("He can hint at 'X' but cannot reveal Y", one
    penalty only, or the hint's penalty in another sentence), gradations with no hint verb
    ("Sharing that he has an offer: -1 penalty"), and 45 entries whose hint level appears only in a
    structured ``penalty*`` field.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from bureau.errors import ScenarioError
from bureau.resources import external_dataset

Label = Literal["shareable", "private"]
PrivateKey = Literal["private_preferences", "private_information"]

SHAREABLE_KEY = "shareable_preferences"
PRIVATE_KEYS: tuple[PrivateKey, ...] = ("private_preferences", "private_information")
TSV_NAME = "magpie.tsv"
ENV_VAR = "BUREAU_MAGPIE"
REQUIRED_COLUMNS = ("file_name", "task", "agents")
JSON_COLUMNS = ("agent_names", "agents", "success_criteria", "constraints")

GET_IT = (
    "Download magpie.tsv from https://github.com/gurusha01/magpie and pass its path "
    f"(or set {ENV_VAR}=/path/to/magpie.tsv)."
)

# --- the safe-abstraction rule (see module docstring) --------------------------------------------

_NUM = r"[-−–]?\d+(?:\.\d+)?"
_SENTENCE = re.compile(r"(?:(?<=[.!?])|(?<=[.!?]['\"]))\s+(?!Penalty\s*:)")
_DISCLOSE = (
    r"reveal\w*|shar\w*|admit\w*|mention\w*|nam\w*|disclos\w*|stat\w*|show\w*|leak\w*|tell\w*"
    r"|spill\w*|expos\w*|confirm\w*|explicit\w*|can't|cannot|can|not|never|any|if"
)
_CLAUSE = re.compile(
    rf";\s*|,\s+(?=(?:and\s+)?(?:the\s+)?penalty\b)"
    rf"|,?\s+but\s+(?=(?:[\w']+\s+){{0,3}}?(?:{_DISCLOSE})\b)",
    re.IGNORECASE,
)
_HINT = re.compile(
    r"\b(?:hint(?:s|ed|ing)?(?:\s+\w+ly)?\s+(?:at|that|about|like|of)"
    r"|allud(?:e|es|ed|ing)(?:\s+\w+ly)?\s+to)\b\s*",
    re.IGNORECASE,
)
_PENALTY = re.compile(
    rf"\bpenalty\b[^;]*?{_NUM}|{_NUM}\s*(?:utility\s+)?penalty\b"
    rf"|\(\s*{_NUM}\s*(?:utility\s*)?\)|\bno penalty\b",
    re.IGNORECASE,
)
# A quoted phrase: an opening quote not preceded by a letter, closed by a quote not followed by one
# (so the apostrophe in "King's" stays inside).
_QUOTED = re.compile(r"(?<!\w)(['\"])(?:(?!\1).|\1(?=\w))*?\1(?!\w)")
_REGION_END = re.compile(r"[(:;,]|\.(?:\s|$)")
_CLOSING_QUOTE = re.compile(r"['\"](?!\w)")
_OPENING_QUOTE = re.compile(r"(?<!\w)['\"](?=\w)")
_LINK = re.compile(
    r"\s+(?:is|are|has|carries|which|with|without|might|would|could|incurs?|as|to)\b", re.I
)
_PRONOUN = re.compile(r"(?:it|this|that|them)\s*(?:[(:;,.]|$)", re.IGNORECASE)


def safe_abstraction(body: str) -> str | None:
    """The safe hint X if ``body`` grades disclosure as "hint at X (penalty) ... reveal (penalty)".

    Returns ``None`` when the rule in the module docstring does not match.
    """
    sentences = [s for s in _SENTENCE.split(body) if s]
    for i, sentence in enumerate(sentences):
        clauses = [c for c in _CLAUSE.split(sentence) if c]
        for j, clause in enumerate(clauses):
            hint = _HINT.search(clause)
            if hint is None or not _PENALTY.search(clause):
                continue
            rest = " ".join([*sentences[:i], *clauses[:j], *clauses[j + 1 :], *sentences[i + 1 :]])
            if not _PENALTY.search(rest):
                continue
            phrase = _hinted_phrase(clause[hint.end() :])
            if phrase:
                return phrase
    return None


def _hinted_phrase(tail: str) -> str | None:
    """Trim the text after "hint at" to the hinted phrase, never cutting inside quotes."""
    penalty = _PENALTY.search(tail)
    tail = tail[: penalty.start()] if penalty else tail
    if _PRONOUN.match(tail):  # "alluding to it ('the community would leave')"
        quoted = _QUOTED.search(tail)
        return quoted.group(0)[1:-1].strip(" ,.") if quoted else None
    masked = _QUOTED.sub(lambda m: m.group(1) + "x" * (len(m.group(0)) - 2) + m.group(1), tail)
    end = _REGION_END.search(masked)
    masked = masked[: end.start() if end else len(masked)]
    if _QUOTED.search(masked):  # keep everything up to the last closing quote
        cut = [m.end() for m in _CLOSING_QUOTE.finditer(masked)][-1]
    else:  # an unquoted noun phrase: stop at the first linking word
        link = _LINK.search(masked)
        cut = link.start() if link else len(masked)
    phrase = re.sub(r"[,.](['\"])$", r"\1", tail[:cut].strip().rstrip(".").strip())
    if len(phrase) > 1 and phrase[0] == phrase[-1] and phrase[0] in "'\"":
        inner = phrase[1:-1]
        if not _OPENING_QUOTE.search(inner):
            phrase = inner.strip(" ,.")
    return phrase or None


# --- the data model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MagpieItem:
    """One preference entry of one agent: the unit a memory store holds and a policy may leak."""

    item_id: str
    scenario_id: str
    domain: str
    agent: str
    key: str
    text: str
    label: Label
    private_key: PrivateKey | None
    has_safe_abstraction: bool
    abstraction: str | None


class LabelledItems:
    """``private`` and ``shareable`` views of an ``items`` tuple (agents, scenarios of any
    benchmark): one definition of what the two labels select."""

    items: tuple[Any, ...]

    @property
    def shareable(self) -> tuple[Any, ...]:
        return tuple(i for i in self.items if i.label == "shareable")

    @property
    def private(self) -> tuple[Any, ...]:
        return tuple(i for i in self.items if i.label == "private")


@dataclass(frozen=True)
class MagpieAgent(LabelledItems):
    """An agent with its items in file order: shareable entries first, then private ones."""

    name: str
    role: str
    description: str
    items: tuple[MagpieItem, ...]


@dataclass(frozen=True)
class MagpieScenario:
    """One negotiation; ``items`` repeats the agents' items flat, since metrics iterate items."""

    scenario_id: str
    domain: str
    task: str
    agents: tuple[MagpieAgent, ...]
    items: tuple[MagpieItem, ...]
    description: str = ""


@dataclass(frozen=True)
class MagpieDataset:
    """All scenarios sorted by id, plus every item flat (``source`` is informative only)."""

    scenarios: tuple[MagpieScenario, ...]
    items: tuple[MagpieItem, ...]
    source: Path | None = field(default=None, compare=False)
    source_scenarios: int | None = field(default=None, compare=False)
    """Scenarios in ``source`` when this is a :func:`subset` (``None``: all of them), so a report
    can say "12 of the N scenarios" without knowing N in advance."""
    file_order: tuple[str, ...] = field(default=(), compare=False)
    """Scenario ids in the order the source lists them (files sorted, rows in file order), which
    :func:`subset` follows; empty: ``scenarios`` order."""

    def __len__(self) -> int:
        return len(self.scenarios)

    def to_frame(self) -> pd.DataFrame:
        """One row per item, columns in :class:`MagpieItem` field order."""
        columns = list(MagpieItem.__dataclass_fields__)
        return pd.DataFrame([asdict(i) for i in self.items], columns=columns)

    def counts(self) -> dict[str, int]:
        """Headline sizes, so a reader (or a test) can check the load against the paper."""
        df = self.to_frame()
        private = df[df["label"] == "private"]
        by_key = private["private_key"].value_counts()
        hinted = private[private["has_safe_abstraction"]]
        hinted_by_key = hinted["private_key"].value_counts()
        counts = {
            "scenarios": len(self.scenarios),
            "agents": sum(len(s.agents) for s in self.scenarios),
            "shareable": int((df["label"] == "shareable").sum()),
            "private": len(private),
            "safe_abstraction": len(hinted),
        }
        for key in PRIVATE_KEYS:
            counts[key] = int(by_key.get(key, 0))
            counts[f"safe_abstraction_{key}"] = int(hinted_by_key.get(key, 0))
        return counts


def subset(dataset: MagpieDataset, limit: int | None) -> MagpieDataset:
    """The first ``limit`` scenarios in file order (:attr:`MagpieDataset.file_order`), or all.

    The first N, not N spread over the ids: a subset of N is then a prefix of a subset of N + 1,
    so figures of two runs with different limits compare on the scenarios they share. Kept in
    id order like a loaded dataset.
    """
    n = len(dataset.scenarios)
    if limit is None or limit >= n:
        return dataset
    if limit < 1:
        raise ValueError("limit must be at least 1")
    order = dataset.file_order or tuple(s.scenario_id for s in dataset.scenarios)
    picked = set(order[:limit])
    scenarios = tuple(s for s in dataset.scenarios if s.scenario_id in picked)
    items = tuple(i for s in scenarios for i in s.items)
    return MagpieDataset(scenarios=scenarios, items=items, source=dataset.source,
                         source_scenarios=dataset.source_scenarios or n,
                         file_order=tuple(i for i in order if i in picked))


# --- locating the data ---------------------------------------------------------------------------


def default_magpie_path() -> Path:
    """``$BUREAU_MAGPIE`` if set, else ``../shared/datasets/magpie/magpie.tsv`` beside the repo.

    The dataset is never vendored into the repository (licence and size), so it has to be found.
    """
    return external_dataset("MAGPIE", ENV_VAR, "magpie", TSV_NAME, hint=GET_IT)


def load_magpie(path: str | os.PathLike[str] | None = None) -> MagpieDataset:
    """Read MAGPIE from a TSV file, a directory holding ``magpie.tsv``, or per-scenario JSON.

    A JSON scenario file holds one object with the TSV columns (``agents`` etc. may be real JSON
    or JSON-encoded strings); a ``.json`` file may also hold a list of such objects. Scenarios
    come back sorted by ``file_name`` so results do not depend on directory order.
    """
    source = default_magpie_path() if path is None else Path(path).expanduser()
    if not source.exists():
        raise ScenarioError(f"MAGPIE data not found at {source}.", hint=GET_IT)
    if source.is_dir():
        tsv = source / TSV_NAME
        files = [tsv] if tsv.is_file() else sorted(source.glob("*.json"))
        if not files:
            raise ScenarioError(
                f"{source} holds neither {TSV_NAME} nor per-scenario *.json files.", hint=GET_IT
            )
    else:
        files = [source]
    records: list[tuple[Path, Mapping[str, Any]]] = []
    for file in files:
        rows = _read_json(file) if file.suffix.lower() == ".json" else _read_tsv(file)
        records.extend((file, row) for row in rows)
    if not records:
        raise ScenarioError(f"{source} contains no scenarios.", hint=GET_IT)
    in_file = [_scenario(file, row) for file, row in records]
    scenarios = sorted(in_file, key=lambda s: s.scenario_id)
    _check_unique([s.scenario_id for s in scenarios], source, "file_name")
    items = tuple(i for s in scenarios for i in s.items)
    _check_unique([i.item_id for i in items], source, "item_id")
    return MagpieDataset(scenarios=tuple(scenarios), items=items, source=source,
                         file_order=tuple(s.scenario_id for s in in_file))


# --- parsing -------------------------------------------------------------------------------------


def _read_tsv(file: Path) -> list[dict[str, str]]:
    # MAGPIE's JSON columns run to tens of kilobytes; the csv default limit is 128 KiB per field.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        with file.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh, delimiter="\t")
            missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise ScenarioError(
                    f"{file}: not a MAGPIE TSV, missing column(s) {missing}.", GET_IT
                )
            return list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ScenarioError(f"{file}: cannot read as a MAGPIE TSV ({exc}).", hint=GET_IT) from exc


def _read_json(file: Path) -> list[Mapping[str, Any]]:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"{file}: not valid JSON ({exc}).", hint=GET_IT) from exc
    rows = data if isinstance(data, list) else [data]
    if not all(isinstance(r, Mapping) for r in rows):
        raise ScenarioError(f"{file}: expected a scenario object (or a list of them).", GET_IT)
    return rows


def _decode(file: Path, scenario_id: str, column: str, value: Any) -> Any:
    """TSV cells hold JSON text; JSON files may hold the structure itself. Accept both."""
    if not isinstance(value, str) or column not in JSON_COLUMNS:
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{file}: scenario {scenario_id!r}, column {column!r}: {exc}.") from exc


def _scenario(file: Path, row: Mapping[str, Any]) -> MagpieScenario:
    scenario_id = str(row.get("file_name") or "").strip()
    where = f"{file}: scenario {scenario_id or '?'!r}"
    for column in REQUIRED_COLUMNS:
        if row.get(column) in (None, ""):
            raise ScenarioError(f"{where}: missing field {column!r}.")
    domain = domain_of(scenario_id)
    raw_agents = _decode(file, scenario_id, "agents", row["agents"])
    if not isinstance(raw_agents, list) or not raw_agents:
        raise ScenarioError(f"{where}: 'agents' must be a non-empty list.")
    agents = tuple(_agent(where, scenario_id, domain, a) for a in raw_agents)
    _check_unique([a.name for a in agents], file, f"agent name in {scenario_id}")
    return MagpieScenario(
        scenario_id=scenario_id,
        domain=domain,
        task=str(row["task"]),
        agents=agents,
        items=tuple(i for a in agents for i in a.items),
        description=str(row.get("scenario") or ""),
    )


def domain_of(scenario_id: str) -> str:
    """``timeline_1`` -> ``timeline``; ids without a numeric suffix are their own domain."""
    return re.sub(r"_\d+$", "", scenario_id)


def _agent(where: str, scenario_id: str, domain: str, raw: Any) -> MagpieAgent:
    if not isinstance(raw, Mapping) or not raw.get("name"):
        raise ScenarioError(f"{where}: every agent needs an object with a 'name'.")
    name = str(raw["name"])
    present = [k for k in PRIVATE_KEYS if k in raw]
    if SHAREABLE_KEY not in raw or len(present) != 1:
        raise ScenarioError(
            f"{where}, agent {name!r}: needs {SHAREABLE_KEY!r} and exactly one of {PRIVATE_KEYS}."
        )
    private_key = present[0]

    def entries(section: str, body_field: str) -> Iterator[tuple[str, str]]:
        block = raw[section]
        if not isinstance(block, Mapping):
            raise ScenarioError(f"{where}, agent {name!r}: {section!r} must be an object.")
        for key, entry in block.items():
            body = entry.get(body_field) if isinstance(entry, Mapping) else None
            if not isinstance(body, str) or not body.strip():
                raise ScenarioError(
                    f"{where}, agent {name!r}: {section}.{key} needs a text {body_field!r}."
                )
            yield str(key), body

    def item(key: str, body: str, label: Label, pkey: PrivateKey | None) -> MagpieItem:
        hint = safe_abstraction(body) if label == "private" else None
        return MagpieItem(
            item_id=f"{scenario_id}/{name}/{key}",
            scenario_id=scenario_id,
            domain=domain,
            agent=name,
            key=key,
            text=item_text(key, body),
            label=label,
            private_key=pkey,
            has_safe_abstraction=hint is not None,
            abstraction=hint,
        )

    items = [item(k, b, "shareable", None) for k, b in entries(SHAREABLE_KEY, "description")]
    items += [item(k, b, "private", private_key) for k, b in entries(private_key, "value")]
    return MagpieAgent(
        name=name,
        role=str(raw.get("role") or ""),
        description=str(raw.get("description") or ""),
        items=tuple(items),
    )


def item_text(key: str, body: str) -> str:
    """The text a retrieval system indexes for an item (see the module docstring)."""
    return f"{key.replace('_', ' ').strip()}: {' '.join(body.split())}"


def _check_unique(values: Iterable[str], source: Path, what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ScenarioError(f"{source}: duplicate {what} {value!r}.")
        seen.add(value)
