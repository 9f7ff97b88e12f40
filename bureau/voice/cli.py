"""``python -m bureau voice``: serve a GGUF on loopback, print the quality table, check a file.

* ``serve FILE.gguf``: the local voice (:class:`~.server.LocalVoice`) until Ctrl-C, and the
  variables that point the bureau at it (``BUREAU_LLM_*``, the session's key);
* ``quality [FILE.gguf]``: the 12 + 4 table (:mod:`.quality`) for that file, else for
  ``$BUREAU_VOICE_GGUF``, else for the provider ``BUREAU_LLM_MODEL`` configures; ``--standin``
  runs it against the stand-in model (a teaching tool: the table's shape, not a model's quality);
* ``check FILE.gguf``: the size and sha256 check alone;
* ``blind-spot``: what the phrasing check cannot catch (:mod:`.blind_spot`).

The variables ``BUREAU_VOICE_GGUF``, ``BUREAU_VOICE_SHA256``, ``BUREAU_VOICE_THREADS`` and
``BUREAU_VOICE_TIMEOUT`` give the same choices to the lessons (:func:`voice_from_env`).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from ..errors import ConfigurationError
from .gguf import check_model_file
from .server import ENV_FILE, ENV_SHA, KEY_VAR, TIMEOUT_S, LocalVoice


def voice_from_env(path: str | Path | None = None) -> LocalVoice | None:
    """The local voice ``path`` (else ``$BUREAU_VOICE_GGUF``) asks for, checked, not started."""
    if path is None:
        return LocalVoice.from_env()
    return LocalVoice.of(path, os.environ.get(ENV_SHA) or None)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="voice_command", required=True)
    serve = sub.add_parser("serve", help="serve a GGUF on 127.0.0.1 with a per-session key")
    serve.add_argument("model", type=Path, help="the .gguf file")
    check = sub.add_parser("check", help="check a GGUF's size and sha256 before loading it")
    check.add_argument("model", type=Path)
    quality = sub.add_parser("quality", help="the 12 + 4 quality table for a model")
    quality.add_argument("model", type=Path, nargs="?", default=None,
                         help=f"a .gguf file (default: ${ENV_FILE}, else BUREAU_LLM_MODEL)")
    quality.add_argument("--standin", choices=("obedient", "gullible"), default=None,
                         help="ask the stand-in model (a teaching tool, not a language model)")
    sub.add_parser("blind-spot", help="what the phrasing check cannot catch, measured")
    for p in (serve, check, quality):
        p.add_argument("--sha256", default=None,
                       help="the sha256 the publisher gives for this file (checked first)")
    for p in (serve, quality):
        p.add_argument("--threads", type=int, default=0, help="0: chosen for this machine")
        p.add_argument("--timeout", type=float, default=TIMEOUT_S,
                       help="seconds to wait for one reply")


def _serve(voice: LocalVoice) -> int:
    with voice:
        print(f"The voice is listening on {voice.url}: {voice.model.label}, "
              f"{voice.threads} thread(s), replies of at most {voice.max_tokens} tokens.")
        print("Point the bureau at it in the shell that starts Jupyter (the key is valid until "
              "you stop this command):")
        print(f"  export BUREAU_LLM_MODEL={voice.model.label}")
        print(f"  export BUREAU_LLM_BASE_URL={voice.url}")
        print(f"  export BUREAU_LLM_KEY_ENV={KEY_VAR}")
        print(f"  export BUREAU_LLM_TIMEOUT={voice.timeout_s:g}")
        print(f"  export {KEY_VAR}={voice.key}")
        print("Press Ctrl-C to stop.", flush=True)
        try:
            while voice.running:
                time.sleep(1)
        except KeyboardInterrupt:
            return 0
        print(f"The voice server stopped. Its log ends:\n{voice.log_tail()}")
        return 1


def _quality(args: argparse.Namespace) -> int:
    from . import quality

    if args.standin:
        from ..standin.model import StandinModel

        with StandinModel(args.standin) as model:
            print(quality.run(model.responder(timeout_s=args.timeout)).table())
        return 0
    voice = (LocalVoice.of(args.model, args.sha256, threads=args.threads,
                           timeout_s=args.timeout) if args.model else voice_from_env())
    if voice is not None:
        with voice:
            print(f"{voice!r}")
            print(quality.run(voice.responder()).table())
        return 0
    from ..responders.llm import LLMResponder
    from ..settings import Settings

    settings = Settings.from_env()
    if settings.llm is None:
        raise ConfigurationError(
            "No model to judge.", f"Give a .gguf file, set ${ENV_FILE} or BUREAU_LLM_MODEL, "
            "or pass --standin.")
    print(quality.run(LLMResponder(settings.llm)).table())
    return 0


def run(args: argparse.Namespace) -> int:
    command = args.voice_command
    if command == "blind-spot":
        from .blind_spot import measure

        print(measure().table())
        return 0
    if command == "check":
        f = check_model_file(args.model, args.sha256)
        print(f"{f.path}: {f.size:,} bytes, "
              + (f"sha256 {f.sha256} as expected" if f.sha256 else "no sha256 asked for")
              + (f" ({f.known.name}, {f.known.repo})" if f.known else ""))
        return 0
    if command == "serve":
        return _serve(LocalVoice.of(args.model, args.sha256, threads=args.threads,
                                    timeout_s=args.timeout))
    return _quality(args)


__all__ = ["add_arguments", "run", "voice_from_env"]
