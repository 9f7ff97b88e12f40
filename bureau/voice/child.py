"""The local voice server's own process: llama.cpp's OpenAI-compatible server (xllamacpp).

Run by :class:`bureau.voice.server.LocalVoice`, never by hand. It runs in a child process, not
in the kernel, for three reasons: llama.cpp writes its log to the process's own stderr (a kernel
would show it under every cell), a crash of the runtime must not take the kernel with it, and
stopping the child gives its memory (0.2 to 1.8 GB) back at once.

Left to its defaults the server accepts any client and any origin; here it listens on
127.0.0.1 only, requires the per-session API key its parent put in ``$BUREAU_VOICE_KEY``
(read, then removed from the environment), sends no cross-origin header, serves no web UI, no
slot, metrics or props endpoint, never downloads (``offline``) and caps every reply's length.
It prints one JSON line (``{"url": ...}``) once it listens, then serves until its standard
input closes (the parent stopped it, or died) or it is terminated.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

KEY_ENV = "BUREAU_VOICE_KEY"


def _params(args: argparse.Namespace, key: str):  # noqa: ANN202 - xllamacpp's own type
    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = args.model
    p.model_alias = {args.alias}
    p.hostnames = ["127.0.0.1"]
    p.port = 0  # a free port, chosen by the system
    p.api_keys = [key]
    p.cors_origins = ""
    p.ui = False
    p.endpoint_slots = False
    p.endpoint_metrics = False
    p.endpoint_props = False
    p.offline = True
    p.n_ctx = args.ctx
    p.n_parallel = 1
    p.n_predict = args.max_tokens
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.n_threads_http = 2
    p.timeout_read = p.timeout_write = args.timeout
    p.verbosity = 1
    return p


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bureau.voice.child")
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--max-tokens", type=int, default=192)
    parser.add_argument("--timeout", type=int, default=120)
    args = parser.parse_args(argv)
    key = os.environ.pop(KEY_ENV, "")
    if len(key) < 32:
        print(json.dumps({"error": f"no API key in ${KEY_ENV}"}), flush=True)
        return 2
    import xllamacpp

    server = xllamacpp.Server(_params(args, key))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(json.dumps({"url": server.listening_address, "pid": os.getpid()}), flush=True)
    try:
        while sys.stdin.buffer.read(1024):  # until the parent closes it (or dies)
            pass
    finally:
        del server  # stops the server's threads before the process exits
    return 0


if __name__ == "__main__":
    sys.exit(main())
