"""Pair AgentSocialBench's ``acceptable_abstractions`` keys with its ``must_not_cross`` sentences,
so a private item gets the safe abstraction the benchmark wrote for it.

The keys are not always the sentences: ``cross_domain`` and ``cross_user`` mostly repeat the
sentence, ``mediated_comm`` almost never does ("Penicillin allergy (rash)" for "Do not reveal
specific medications and dosages (...) or his penicillin allergy."), and one sentence often
covers several keys. Per boundary block (a scenario, or one ``cross_user`` person), one to
one, deterministically:

1. **Exact**: a key equal to a sentence after normalising (NFKC, case, curly quotes,
   whitespace, a trailing full stop) pairs with it.
2. **Fuzzy**: every remaining (key, sentence) couple is scored by *key containment*: the share
   of the key's content words (lower case; stop words and disclosure verbs like "reveal",
   "specific", "details" dropped; a plural ``s`` and ``'s`` stripped) that occur in the
   sentence. Couples scoring at least :data:`FUZZY_THRESHOLD` (0.25) are taken greedily,
   best score first, ties broken by :class:`difflib.SequenceMatcher` ratio, then key order,
   then sentence order; each key and each sentence is used at most once.

Why containment, not a ``difflib`` ratio: keys are short labels and sentences long
prohibitions, so a right pair often has a low ratio (0.40 for "Sertraline / hydroxyzine and
insomnia" and its sentence) while a wrong one can score 0.46 ("Hypermobility-related chronic
pain under evaluation and PT" against a migraine sentence); in 74 of the 761 fuzzy pairs below,
another sentence of the block has a higher ratio than the one containment picks. Why 0.25: on
the real data the best containment of the non-exact keys spreads evenly from 0 to 1, with no
natural gap. Reading every fuzzy pair below 0.4 (65 of 761) found them right, e.g. "Sertraline
50 mg daily" with "... medications (e.g., Sertraline, Alendronate, ...)" at 0.25, but for a
few arguable ones (a gel "for knee/shoulder pain" with a sentence about "'left knee',
'shoulder'").
Below 0.25 a single generic word starts to decide: lowering the threshold to 0.2 would add 11
pairs, about half of them wrong ("Uses a cane on high-pain days ..." with a THC sentence,
"Chronic lower back pain" with a mental-health one); raising it to 0.4 would drop those 65
mostly right ones. A key left over is *unused*: typically the second medication of a
sentence that lists several, or a fact no sentence mentions.

Figures on the shared copy (``pairing_stats``; private items = sentences):

============== ========= ===== ===== ======== ==== ======
category       scenarios items exact fuzzy    none unused
============== ========= ===== ===== ======== ==== ======
cross_domain         107   491   311      162   18     42
mediated_comm        100   489    16      384   89    134
cross_user            50   503   270      215   18     22
============== ========= ===== ===== ======== ==== ======

(``none``: sentences without an abstraction; ``unused``: keys paired with no sentence, out of
515, 534 and 507 keys.)

A module of its own: the pairing is the one judgement call between the benchmark's files and the
lab's items (the loader, :mod:`bureau.labs.leakage.datasets.agentsocialbench`, applies it per boundary block),
it works on strings alone, so it is read and tested without a file, and its counts
(:func:`pairing_stats`) are what the report quotes about the abstractions.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bureau.labs.leakage.datasets.social_model import IN_SCOPE, Match, SocialDataset, SocialScenario

FUZZY_THRESHOLD = 0.25
"""Minimum key containment for a fuzzy pair (see the module docstring for why)."""


@dataclass(frozen=True)
class PairingStats:
    """How the abstraction keys of one category (or ``"all"``) paired with its private items."""

    category: str
    scenarios: int
    private_items: int
    exact: int
    fuzzy: int
    unpaired: int
    abstraction_keys: int
    unused_keys: int

    @property
    def paired(self) -> int:
        return self.exact + self.fuzzy


@dataclass(frozen=True)
class Pairing:
    """One key paired with the sentence at ``index`` of its ``must_not_cross`` list."""

    index: int
    key: str
    abstraction: str
    match: Match
    score: float


_STOP = frozenset(
    """a an the and or of to in on for with at by from as is are was were be been being that this
    these those it its his her hers their them they he she him we our you your i my me do does did
    not don't no nor any all some such e g eg etc via per than beyond including include includes
    related about into reveal revealing disclose disclosing share sharing mention mentioning exact
    specific specifics detail details""".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def normalise(text: str) -> str:
    """Case-, quote- and whitespace-insensitive form used for exact pairing."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return " ".join(text.split()).rstrip(".").rstrip()


def _stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> frozenset[str]:
    """The words containment counts: lower case, stop words dropped, plurals folded."""
    return frozenset(_stem(w) for w in _WORD.findall(normalise(text)) if w not in _STOP)


def containment(key: str, sentence: str) -> float:
    """Share of ``key``'s content words found in ``sentence`` (0 when the key has none)."""
    words = content_words(key)
    return len(words & content_words(sentence)) / len(words) if words else 0.0


def pair_abstractions(
    must_not_cross: Sequence[str],
    abstractions: Mapping[str, str],
    threshold: float = FUZZY_THRESHOLD,
) -> tuple[list[Pairing | None], list[str]]:
    """Pair keys with sentences (the rule in the module docstring), one to one.

    Returns one entry per sentence (its :class:`Pairing` or None) and the keys left unused, in
    their file order.
    """
    keys = list(abstractions)
    out: list[Pairing | None] = [None] * len(must_not_cross)
    used: set[int] = set()
    by_text: dict[str, int] = {}
    for i, sentence in enumerate(must_not_cross):
        by_text.setdefault(normalise(sentence), i)
    for k, key in enumerate(keys):
        i = by_text.get(normalise(key))
        if i is not None and out[i] is None:
            out[i] = Pairing(i, key, abstractions[key], "exact", 1.0)
            used.add(k)
    candidates: list[tuple[float, float, int, int]] = []
    for k, key in enumerate(keys):
        if k in used:
            continue
        for i, sentence in enumerate(must_not_cross):
            if out[i] is not None:
                continue
            score = containment(key, sentence)
            if score >= threshold and score > 0:
                ratio = difflib.SequenceMatcher(None, normalise(key), normalise(sentence)).ratio()
                candidates.append((-score, -ratio, k, i))
    for neg_score, _, k, i in sorted(candidates):
        if k in used or out[i] is not None:
            continue
        out[i] = Pairing(i, keys[k], abstractions[keys[k]], "fuzzy", round(-neg_score, 4))
        used.add(k)
    return out, [key for k, key in enumerate(keys) if k not in used]


def pairing_stats(dataset: SocialDataset) -> dict[str, PairingStats]:
    """Pairing figures per in-scope category present, plus ``"all"`` (the report quotes these)."""
    groups: dict[str, list[SocialScenario]] = {c: [] for c in IN_SCOPE}
    for scenario in dataset.scenarios:
        groups.setdefault(scenario.category, []).append(scenario)

    def stats(name: str, scenarios: Sequence[SocialScenario]) -> PairingStats:
        private = [i for s in scenarios for i in s.private]
        return PairingStats(
            category=name,
            scenarios=len(scenarios),
            private_items=len(private),
            exact=sum(i.match == "exact" for i in private),
            fuzzy=sum(i.match == "fuzzy" for i in private),
            unpaired=sum(i.match is None for i in private),
            abstraction_keys=sum(s.abstraction_keys for s in scenarios),
            unused_keys=sum(len(s.unused_abstraction_keys) for s in scenarios),
        )

    out = {c: stats(c, group) for c, group in groups.items() if group}
    out["all"] = stats("all", dataset.scenarios)
    return out
