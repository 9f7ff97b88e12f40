"""A real voice offline (issue 52): a GGUF model served on loopback by llama.cpp (``xllamacpp``,
the ``bureau[voice]`` extra), which the bureau's LLM responder talks to like any provider.

:mod:`.gguf` (the files the course names and the sha256 check before loading), :mod:`.server`
(the server in a child process: loopback, a per-session key, threads and a timeout chosen for
the machine), :mod:`.child` (that process), :mod:`.requests` (the 12 + 4 requests of the quality
table), :mod:`.quality` (the table, for whatever model is configured), :mod:`.blind_spot` (what
the phrasing check cannot catch, measured), :mod:`.cli` (``python -m bureau voice``).
"""

from .gguf import KNOWN, KnownModel, ModelFile, bundled_test_model, check_model_file
from .server import TIMEOUT_S, LocalVoice, threads_for

__all__ = ["KNOWN", "TIMEOUT_S", "KnownModel", "LocalVoice", "ModelFile", "bundled_test_model",
           "check_model_file", "threads_for"]
