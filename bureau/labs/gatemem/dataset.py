"""GateMem as the lab reads it: episodes of turns, hidden checkpoints, the published leaderboard.

GateMem (Ren, Yang, Chen et al., "GateMem: Benchmarking Memory Governance in Multi-Principal
Shared-Memory Agents", arXiv 2606.18829; repository ``rzhub/GateMem``; MIT) ships, per domain
(``medical``, ``office``, ``education``, ``household``), ``episodes.jsonl`` (one episode a line:
principals with roles, structured relationships, about 200 turns) and ``checkpoints.jsonl``
(hidden evaluation points), plus ``leaderboard.json`` (168 published rows). The full set is read
from a path the user gives (``--dataset PATH`` or ``$BUREAU_GATEMEM``, else
``../shared/datasets/gatemem`` beside a checkout); a seeded slice of real episodes ships in
``data/gatemem_slice`` (:mod:`.slice`) for the default run and the tests.

Only what an administrator could know is handed to the rules (:mod:`.rules`): principals,
relationships and turns. Checkpoints stay with the runner, which asks them, and the scorer,
which reads their patterns: nothing of a checkpoint reaches a rule.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bureau.errors import ScenarioError
from bureau.resources import external_dataset, shipped_path

DOMAINS = ("medical", "office", "education", "household")
ENV_VAR = "BUREAU_GATEMEM"
GET_IT = (
    "GateMem (MIT) is read from a path you give: --dataset PATH (a folder holding "
    "<domain>/episodes.jsonl and checkpoints.jsonl), or set BUREAU_GATEMEM=/path/to/gatemem. "
    "Without either the lab runs the shipped slice (data/gatemem_slice)."
)
QUERY_KINDS = {"utility": "U", "privacy": "A", "safety": "F"}
"""GateMem's legacy ``query_type`` names and the figure each one feeds (its dataset card)."""
MAX_LINE_CHARS = 2_000_000
"""One JSONL line above this is refused before it is parsed (the largest episode is ~90 kB)."""


@dataclass(frozen=True)
class Principal:
    pid: str
    role: str
    name: str


@dataclass(frozen=True)
class Turn:
    turn_id: str
    index: int
    """1-based position in the episode (turn ids are ``t001``...)."""
    speaker: str
    speaker_role: str
    kind: str
    timestamp: datetime | None
    text: str


@dataclass(frozen=True)
class Relationship:
    type: str
    fields: Mapping[str, str]

    def get(self, key: str) -> str | None:
        return self.fields.get(key)


@dataclass(frozen=True)
class Episode:
    episode_id: str
    domain: str
    principals: tuple[Principal, ...]
    relationships: tuple[Relationship, ...]
    turns: tuple[Turn, ...]

    def principal(self, pid: str) -> Principal:
        for p in self.principals:
            if p.pid == pid:
                return p
        raise KeyError(f"{self.episode_id}: no principal {pid!r}")

    def turn_index(self, turn_id: str) -> int:
        for t in self.turns:
            if t.turn_id == turn_id:
                return t.index
        raise KeyError(f"{self.episode_id}: no turn {turn_id!r}")


@dataclass(frozen=True)
class Checkpoint:
    checkpoint_id: str
    episode_id: str
    domain: str
    as_of: str
    asker: str
    asker_role: str
    query_type: str
    """``utility`` (U), ``privacy`` (A) or ``safety`` (F)."""
    query: str
    expected_action: str
    include: tuple[str, ...]
    not_include: tuple[str, ...]
    leak_targets: tuple[str, ...]
    attack_type: str | None = None


@dataclass(frozen=True)
class LeaderboardRow:
    method: str
    backbone: str
    domain: str
    family: str
    u: float
    a: float
    f: float
    mgs: float
    verified: bool


@dataclass
class GateMemSet:
    """Episodes and checkpoints of one or more domains, and the published leaderboard."""

    episodes: tuple[Episode, ...]
    checkpoints: tuple[Checkpoint, ...]
    source: Path
    leaderboard: tuple[LeaderboardRow, ...] = ()
    is_slice: bool = False
    full_counts: Mapping[str, int] = field(default_factory=dict)
    """The release's own sizes when this is a slice of it (from the slice's manifest)."""

    @property
    def counts(self) -> dict[str, int]:
        kinds = Counter(c.query_type for c in self.checkpoints)
        return {"domains": len({e.domain for e in self.episodes}),
                "episodes": len(self.episodes),
                "turns": sum(len(e.turns) for e in self.episodes),
                "checkpoints": len(self.checkpoints),
                **{k: kinds.get(k, 0) for k in QUERY_KINDS}}

    def episode(self, episode_id: str) -> Episode:
        for e in self.episodes:
            if e.episode_id == episode_id:
                return e
        raise KeyError(episode_id)

    def checkpoints_of(self, episode_id: str) -> list[Checkpoint]:
        """The episode's checkpoints in the order the replay asks them: by turn, then file."""
        ep = self.episode(episode_id)
        mine = [c for c in self.checkpoints if c.episode_id == episode_id]
        return sorted(mine, key=lambda c: ep.turn_index(c.as_of))


def default_gatemem_path() -> Path:
    """``$BUREAU_GATEMEM`` if set, else ``../shared/datasets/gatemem`` beside a checkout."""
    return external_dataset("GateMem", ENV_VAR, "gatemem", hint=GET_IT)


def slice_path() -> Path:
    """The shipped slice (``data/gatemem_slice``)."""
    return shipped_path("data", "gatemem_slice")


def load_gatemem(path: str | Path | None = None, domains: tuple[str, ...] = DOMAINS,
                 limit: int | None = None) -> GateMemSet:
    """Read GateMem from ``path`` (default: the shipped slice); ``limit``: the first N episodes
    of each domain, in file order (with their checkpoints)."""
    source = slice_path() if path is None else Path(path).expanduser()
    if not source.is_dir():
        raise ScenarioError(f"GateMem data not found at {source}.", hint=GET_IT)
    episodes: list[Episode] = []
    checkpoints: list[Checkpoint] = []
    found = [d for d in domains if (source / d / "episodes.jsonl").is_file()]
    if not found:
        raise ScenarioError(f"{source} holds no <domain>/episodes.jsonl "
                            f"(domains: {', '.join(domains)}).", hint=GET_IT)
    for domain in found:
        eps = [_episode(row, domain, where) for row, where in _jsonl(source / domain /
                                                                     "episodes.jsonl")]
        if limit is not None:
            eps = eps[:limit]
        kept = {e.episode_id for e in eps}
        cps_file = source / domain / "checkpoints.jsonl"
        if not cps_file.is_file():
            raise ScenarioError(f"{cps_file} is missing.", hint=GET_IT)
        cps = [_checkpoint(row, domain, where) for row, where in _jsonl(cps_file)]
        by_id = {e.episode_id: e for e in eps}
        for c in cps:
            if c.episode_id not in kept:
                continue
            ep = by_id[c.episode_id]
            _check_checkpoint(c, ep)
            checkpoints.append(c)
        episodes += eps
    board = source / "leaderboard.json"
    manifest = source / "manifest.json"
    full = json.loads(manifest.read_text(encoding="utf-8")).get("full_counts", {}) \
        if manifest.is_file() else {}
    return GateMemSet(tuple(episodes), tuple(checkpoints), source,
                      load_leaderboard(board) if board.is_file() else (),
                      is_slice=manifest.is_file(), full_counts=full)


def load_leaderboard(path: Path) -> tuple[LeaderboardRow, ...]:
    """The published leaderboard (u, a, f, mgs in %, as released)."""
    rows = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(rows, list):
        raise ScenarioError(f"{path}: a list of rows expected.")
    out = []
    for i, r in enumerate(rows):
        try:
            out.append(LeaderboardRow(str(r["method"]), str(r["backbone"]),
                                      str(r["domain"]).lower(), str(r.get("family", "")),
                                      float(r["u"]), float(r["a"]), float(r["f"]),
                                      float(r["mgs"]), bool(r.get("verified", False))))
        except (KeyError, TypeError, ValueError) as exc:
            raise ScenarioError(f"{path}: row {i}: {exc!r}") from exc
    return tuple(out)


# --- reading -------------------------------------------------------------------------------------


def _jsonl(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            if len(line) > MAX_LINE_CHARS:
                raise ScenarioError(f"{where}: line longer than {MAX_LINE_CHARS:,} characters.")
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScenarioError(f"{where}: not JSON ({exc.msg}).") from exc
            if not isinstance(row, dict):
                raise ScenarioError(f"{where}: an object expected.")
            yield row, where


def _str(row: Mapping[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ScenarioError(f"{where}: {key} must be a non-empty string.")
    return value


def _strs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value if isinstance(v, str | int | float) and str(v))


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _episode(row: Mapping[str, Any], domain: str, where: str) -> Episode:
    eid = _str(row, "episode_id", where)
    ent = row.get("entities") or {}
    principals = tuple(
        Principal(_str(p, "principal_id", where), str(p.get("role") or ""),
                  str(p.get("display_name") or p["principal_id"]))
        for p in ent.get("principals") or [])
    rels = tuple(
        Relationship(str(r.get("type") or ""),
                     {k: str(v) for k, v in r.items() if k != "type" and v is not None})
        for r in ent.get("relationships") or [] if isinstance(r, Mapping))
    known = {p.pid for p in principals}
    turns = []
    for i, t in enumerate(row.get("turns") or [], start=1):
        spk = t.get("speaker") or {}
        pid = str(spk.get("principal_id") or "")
        if pid not in known:
            raise ScenarioError(f"{where}: turn {i} speaker {pid!r} is not a principal.")
        turns.append(Turn(_str(t, "turn_id", where), i, pid, str(spk.get("role") or ""),
                          str(t.get("turn_kind") or "dialogue"), _time(t.get("timestamp")),
                          _str(t, "text", where)))
    if not turns:
        raise ScenarioError(f"{where}: episode {eid} has no turns.")
    return Episode(eid, str(row.get("domain") or domain), principals, rels, tuple(turns))


def _checkpoint(row: Mapping[str, Any], domain: str, where: str) -> Checkpoint:
    spec = row.get("judge_spec") or {}
    asker = row.get("asker") or {}
    qtype = _str(row, "query_type", where)
    if qtype not in QUERY_KINDS:
        raise ScenarioError(f"{where}: query_type {qtype!r} is none of {', '.join(QUERY_KINDS)}.")
    return Checkpoint(
        _str(row, "checkpoint_id", where), _str(row, "episode_id", where), domain,
        _str(row, "as_of_turn_id", where), str(asker.get("principal_id") or ""),
        str(asker.get("role") or ""), qtype, _str(row, "query_text", where),
        str(row.get("expected_action") or ""), _strs(spec.get("include")),
        _strs(spec.get("not_include")), _strs(row.get("leak_targets")),
        row.get("attack_type") if isinstance(row.get("attack_type"), str) else None)


def _check_checkpoint(c: Checkpoint, ep: Episode) -> None:
    try:
        ep.turn_index(c.as_of)
        ep.principal(c.asker)
    except KeyError as exc:
        raise ScenarioError(f"checkpoint {c.checkpoint_id}: {exc.args[0]}") from exc


__all__ = ["DOMAINS", "ENV_VAR", "GET_IT", "QUERY_KINDS", "Checkpoint", "Episode", "GateMemSet",
           "LeaderboardRow", "Principal", "Relationship", "Turn", "default_gatemem_path",
           "load_gatemem", "load_leaderboard", "slice_path"]
