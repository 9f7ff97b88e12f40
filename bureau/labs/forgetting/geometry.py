"""The observer's attacks on stored vectors: which of ``m`` candidate texts a stored vector is.

Every attack gets the candidates' embeddings by the public model (MiniLM) and picks one; the
truth is one of ``m`` candidates of the same shape, so chance is ``1/m``. What each assumes the
observer holds (issue 51):

* :func:`dictionary`: the stored vector itself, compared straight with each candidate's
  embedding. Works on a vector stored in clear; a vector turned by a secret rotation, or noise,
  defeats it.
* :func:`known_texts`: the target row's vector and the vectors of ``k`` other rows of the same
  scope whose texts the observer knows (the scenario's public seed cards; ``k = 1, 2, 10``).
  The target's cosines to the known rows must equal its true text's cosines to the known texts
  whenever the scope keeps its geometry -- in clear, and under any rotation of the whole scope
  -- so the candidate whose cosine profile matches is named. No key is needed.
* :func:`pairwise`: no known text at all (``k = 0``): two rows and a candidate list for each;
  the pair of candidates whose mutual cosine matches the two rows' names both.
* :func:`known_texts_found`: :func:`known_texts` when the observer has only bytes (seekdb's redo
  log after a forget): the target is whichever vector found in the files fits best.

Each returns the index of the candidate it names; the lab and ``tests/test_sealed_geometry.py``
count how often that is the truth. A figure at chance here is a measurement of the attack
against what the store holds, not a proof that no other attack exists.
"""

from __future__ import annotations

import numpy as np


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def dictionary(target: np.ndarray, candidates: np.ndarray) -> int:
    """The candidate whose embedding is closest (cosine) to the stored vector."""
    return int(np.argmax(_unit(candidates) @ _unit(target)))


def known_texts(target: np.ndarray, anchors: np.ndarray, anchor_texts: np.ndarray,
                candidates: np.ndarray) -> int:
    """The candidate whose cosines to the known texts (``anchor_texts``: their embeddings) best
    match the target row's cosines to the known rows' stored vectors (``anchors``)."""
    seen = _unit(anchors) @ _unit(target)
    guess = _unit(candidates) @ _unit(anchor_texts).T
    return int(np.argmin(np.sum((guess - seen) ** 2, axis=1)))


def pairwise(first: np.ndarray, second: np.ndarray, first_candidates: np.ndarray,
             second_candidates: np.ndarray) -> tuple[int, int]:
    """The pair of candidates (one per row) whose mutual cosine best matches the two stored
    vectors' mutual cosine."""
    seen = float(_unit(first) @ _unit(second))
    guess = _unit(first_candidates) @ _unit(second_candidates).T
    i, j = np.unravel_index(int(np.argmin(np.abs(guess - seen))), guess.shape)
    return int(i), int(j)


def known_texts_found(found: np.ndarray, anchors: np.ndarray, anchor_texts: np.ndarray,
                      candidates: np.ndarray) -> int:
    """:func:`known_texts` over every vector ``found`` in the files: each candidate is scored
    by the found vector whose cosine profile to the known rows fits it best."""
    if not len(found):
        return 0
    seen = _unit(found) @ _unit(anchors).T  # (found, k)
    guess = _unit(candidates) @ _unit(anchor_texts).T  # (candidates, k)
    err = np.empty(len(guess))
    for start in range(0, len(guess), 8):  # (8, found, k) at a time: bounded memory
        block = guess[start : start + 8]
        err[start : start + 8] = np.min(
            np.sum((block[:, None, :] - seen[None, :, :]) ** 2, axis=2), axis=1)
    return int(np.argmin(err))


def dictionary_found(found: np.ndarray, candidates: np.ndarray) -> int:
    """:func:`dictionary` over every vector found in the files (the best match of each
    candidate against any of them)."""
    if not len(found):
        return 0
    return int(np.argmax(np.max(_unit(candidates) @ _unit(found).T, axis=1)))


__all__ = ["dictionary", "dictionary_found", "known_texts", "known_texts_found", "pairwise"]
