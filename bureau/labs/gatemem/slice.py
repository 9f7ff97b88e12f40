"""The shipped slice of GateMem (``data/gatemem_slice``): a seeded choice of real episodes from
every domain, copied byte for byte with all their checkpoints, the release's licence, citation,
dataset card, source commit and leaderboard beside them.

The rule: for each domain, :data:`PER_DOMAIN` episodes drawn by ``random.Random(SEED)`` from the
domain's episodes in file order (their lines kept in file order), and every checkpoint of those
episodes. ``manifest.json`` records the seed, the episodes chosen, the release's own counts and
each file's SHA-256, so a slice can be checked against its source and cut again:

    python -m bureau.labs.gatemem.slice --from /path/to/gatemem --out data/gatemem_slice
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
from pathlib import Path

from bureau.labs.gatemem.dataset import DOMAINS, load_gatemem

SEED = 53
PER_DOMAIN = 2
BESIDE = ("LICENSE", "CITATION.cff", "DATASET_CARD.md", "SOURCE_COMMIT", "leaderboard.json")
README = """# gatemem_slice: a seeded slice of the real GateMem release

{per} episodes of each of GateMem's four domains, copied byte for byte from the release
(`rzhub/GateMem`, commit in `SOURCE_COMMIT`), with every checkpoint of those episodes:
{episodes} episodes, {turns:,} turns, {checkpoints} checkpoints ({utility} utility, {privacy}
privacy, {safety} safety). The full release has {full_episodes} episodes and {full_checkpoints:,}
checkpoints; `python -m bureau gatemem --full` reads it from a path you give.

GateMem: Ren, Yang, Chen et al., "GateMem: Benchmarking Memory Governance in Multi-Principal
Shared-Memory Agents", arXiv 2606.18829. Licence: MIT (`LICENSE`, the release's file; its
`CITATION.cff`, copied as released, names CC-BY-4.0 for the dataset: cite the paper either
way); intended use and limits: `DATASET_CARD.md` (synthetic data). `leaderboard.json` is the release's published leaderboard (168 rows).

The rule: for each domain, {per} episodes drawn by `random.Random({seed})` from the domain's
episodes in file order; their lines and their checkpoints' lines kept in file order.
`manifest.json` lists them with each file's SHA-256. Cut it again with

    python -m bureau.labs.gatemem.slice --from /path/to/gatemem --out data/gatemem_slice

`python -m bureau gatemem --out DIR` runs the lab on this slice; `tests/test_gatemem.py`
checks the slice against its manifest.
"""


def choose(lines: list[str], rng: random.Random, n: int) -> list[int]:
    """Indices of ``n`` episodes out of ``lines``, drawn by ``rng``, in file order."""
    return sorted(rng.sample(range(len(lines)), min(n, len(lines))))


def make_slice(source: Path, out: Path, seed: int = SEED, per_domain: int = PER_DOMAIN
               ) -> dict[str, object]:
    """Cut the slice from the release at ``source`` into ``out``; returns the manifest."""
    full = load_gatemem(source)
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    chosen: dict[str, list[str]] = {}
    files: dict[str, str] = {}
    for domain in DOMAINS:
        ep_lines = (source / domain / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
        ep_lines = [line for line in ep_lines if line.strip()]
        keep = [ep_lines[i] for i in choose(ep_lines, rng, per_domain)]
        ids = [json.loads(line)["episode_id"] for line in keep]
        cp_lines = [line for line in (source / domain / "checkpoints.jsonl").read_text(
            encoding="utf-8").splitlines() if line.strip() and
            json.loads(line)["episode_id"] in ids]
        (out / domain).mkdir(exist_ok=True)
        for name, lines in (("episodes.jsonl", keep), ("checkpoints.jsonl", cp_lines)):
            path = out / domain / name
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            files[f"{domain}/{name}"] = _sha(path)
        chosen[domain] = ids
    for name in BESIDE:
        if (source / name).is_file():
            shutil.copyfile(source / name, out / name)
            files[name] = _sha(out / name)
    manifest: dict[str, object] = {
        "seed": seed, "per_domain": per_domain, "episodes": chosen,
        "source_commit": (source / "SOURCE_COMMIT").read_text(encoding="utf-8").strip()
        if (source / "SOURCE_COMMIT").is_file() else None,
        "full_counts": full.counts, "sha256": files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    made = load_gatemem(out)
    c = made.counts
    (out / "README.md").write_text(README.format(
        per=per_domain, seed=seed, full_episodes=full.counts["episodes"],
        full_checkpoints=full.counts["checkpoints"], **c), encoding="utf-8")
    return manifest


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_slice(out: Path) -> list[str]:
    """Files whose SHA-256 differs from the manifest's (empty: the slice is as cut)."""
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return [name for name, sha in manifest["sha256"].items()
            if not (out / name).is_file() or _sha(out / name) != sha]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bureau.labs.gatemem.slice",
                                description="Cut the shipped GateMem slice from a release.")
    p.add_argument("--from", dest="source", type=Path, required=True,
                   help="the release (a folder holding <domain>/episodes.jsonl)")
    p.add_argument("--out", type=Path, required=True, help="where the slice goes")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--per-domain", type=int, default=PER_DOMAIN)
    args = p.parse_args(argv)
    manifest = make_slice(args.source, args.out, args.seed, args.per_domain)
    print(json.dumps(manifest["episodes"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["BESIDE", "PER_DOMAIN", "SEED", "check_slice", "choose", "make_slice"]
