"""A real voice from pip alone: serve a GGUF on loopback and point the bureau's settings at it.

:class:`LocalVoice` starts llama.cpp's own OpenAI-compatible server (the ``xllamacpp`` wheel,
``bureau[voice]``) in a child process (:mod:`.child`) on ``127.0.0.1``, with a random API key
made for this session only, and gives back the :class:`~bureau.settings.LLMSettings` and the
:class:`~bureau.responders.llm.LLMResponder` that reach it: the responder's code is the one every
provider runs, unchanged. ``python -m bureau voice serve FILE.gguf`` does the same from a shell
and prints the variables to export.

Choices, measured on a 2-core laptop (docs/voice.md):

* **threads** (:func:`threads_for`): one on two cores. Two threads on a busy 2-core machine
  collapsed (a 60-token answer from the 1.5B model: 5.3 s quiet, 9 to 48 s beside other work);
  one thread stays near its quiet speed (8.9 s). On more cores: physical cores less one.
* **timeout** (:data:`TIMEOUT_S`, 90 s): the slowest busy answer measured was 48 s for the
  1.5B model; every reply is also capped at :data:`MAX_TOKENS` tokens, so a model that rambles
  cannot hold a lesson. A reply later than the timeout falls back to the evidence answer.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import secrets
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError, VoiceServerError
from ..responders.llm import LLMResponder
from ..settings import LLMSettings
from .child import KEY_ENV
from .gguf import ModelFile, check_model_file

TIMEOUT_S = 90.0
"""How long the bureau waits for one reply before it answers from the evidence alone."""
MAX_TOKENS = 192
"""The longest reply the server writes (the JSON answer asked for is one or two sentences)."""
CONTEXT = 2048
"""Tokens of context: the system prompt, the question and a packet of cards fit in about 400."""
START_TIMEOUT_S = 180.0
"""How long loading a model may take (a 1.1 GB file read cold from a slow disk)."""
KEY_VAR = "BUREAU_VOICE_KEY"
"""The variable ``python -m bureau voice serve`` tells the shell to hold the key in."""


ENV_FILE = "BUREAU_VOICE_GGUF"
ENV_SHA = "BUREAU_VOICE_SHA256"
ENV_THREADS = "BUREAU_VOICE_THREADS"
ENV_TIMEOUT = "BUREAU_VOICE_TIMEOUT"


def _env_number(var: str, default: float) -> float:
    raw = os.environ.get(var)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{var}={raw!r} is not a number.") from None
    if value <= 0:
        raise ConfigurationError(f"{var}={raw!r} must be greater than 0.")
    return value


def _physical_cores() -> int | None:
    """Physical cores from /proc/cpuinfo (Linux), or ``None`` when it cannot tell."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    cores, phys = set(), "0"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "physical id":
            phys = value.strip()
        elif key.strip() == "core id":
            cores.add((phys, value.strip()))
    return len(cores) or None


def threads_for(cores: int | None = None, physical: int | None = None) -> int:
    """Threads for the model: 1 on two cores or fewer, else physical cores less one. Without
    arguments, this machine's: the cores this process may use, the physical ones read from
    /proc/cpuinfo."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        physical = physical or _physical_cores()
    if cores <= 2:
        return 1
    return max(1, min(physical or cores, cores) - 1)


@dataclass
class LocalVoice:
    """A GGUF served on loopback, with a per-session key; ``with LocalVoice(...) as voice:``."""

    model: ModelFile
    threads: int = 0
    """0: :func:`threads_for` this machine."""
    timeout_s: float = TIMEOUT_S
    max_tokens: int = MAX_TOKENS

    def __post_init__(self) -> None:
        if not self.threads:
            self.threads = threads_for()
        self._key = secrets.token_urlsafe(32)
        self._proc: subprocess.Popen[bytes] | None = None
        self._url: str | None = None
        self._log = Path(tempfile.mkdtemp(prefix="bureau-voice-")) / "server.log"

    @classmethod
    def of(cls, path: str | Path, sha256: str | None = None, **options: object) -> LocalVoice:
        """Check the file (:func:`~.gguf.check_model_file`), then make its voice (not started)."""
        return cls(check_model_file(path, sha256), **options)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls) -> LocalVoice | None:
        """The voice ``$BUREAU_VOICE_GGUF`` asks for (with ``BUREAU_VOICE_SHA256``,
        ``BUREAU_VOICE_THREADS``, ``BUREAU_VOICE_TIMEOUT``), checked, not started; ``None``
        when the variable is not set."""
        path = os.environ.get(ENV_FILE)
        if not path:
            return None
        threads = int(_env_number(ENV_THREADS, 1)) if os.environ.get(ENV_THREADS) else 0
        return cls.of(path, os.environ.get(ENV_SHA) or None, threads=threads,
                      timeout_s=_env_number(ENV_TIMEOUT, TIMEOUT_S))

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> LocalVoice:
        if self._proc is not None:
            return self
        if importlib.util.find_spec("xllamacpp") is None:  # said here, not in the child's log
            raise ConfigurationError(
                "The local voice needs the xllamacpp runtime, which is not installed.",
                "Install it once: pip install 'bureau[voice]' (make venv does).")
        env = dict(os.environ)
        env[KEY_ENV] = self._key
        cmd = [sys.executable, "-m", "bureau.voice.child", "--model", str(self.model.path),
               "--alias", self.model.label, "--threads", str(self.threads),
               "--ctx", str(CONTEXT), "--max-tokens", str(self.max_tokens),
               "--timeout", str(int(self.timeout_s) + 30)]
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=log, env=env)
        atexit.register(self.close)
        try:
            ready = self._read_ready()
        except BaseException:
            self.close()
            raise
        self._url = f"{ready['url']}/v1"
        return self

    def _read_ready(self) -> dict[str, object]:
        assert self._proc is not None and self._proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if sel.select(timeout=0.5):
                    line = self._proc.stdout.readline()
                    if not line:
                        break  # it exited
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(msg, dict) and isinstance(msg.get("url"), str):
                        return msg
                    raise VoiceServerError(f"The voice server refused to start: {msg}.")
                if self._proc.poll() is not None:
                    break
        why = ("exited" if self._proc.poll() is not None
               else f"did not listen within {START_TIMEOUT_S:g} s")
        raise VoiceServerError(f"The voice server for {self.model.path.name} {why}. Its log "
                               f"ends:\n{self.log_tail()}")

    def close(self) -> None:
        """Stop the server (it exits when its input closes; terminated, then killed, if not)."""
        proc, self._proc = self._proc, None
        self._url = None
        if proc is None:
            return
        atexit.unregister(self.close)
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)

    def __enter__(self) -> LocalVoice:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the bureau uses --------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL (``http://127.0.0.1:<port>/v1``)."""
        if self._url is None:
            raise VoiceServerError("The local voice is not running.", "Call start() first.")
        return self._url

    @property
    def key(self) -> str:
        """This session's API key (the server answers 401 without it)."""
        return self._key

    def settings(self) -> LLMSettings:
        """The settings that point the bureau at this server (the key is read from
        ``$BUREAU_VOICE_KEY``, which ``python -m bureau voice serve`` tells the shell to set)."""
        return LLMSettings(model=self.model.label, base_url=self.url, api_key_env=KEY_VAR,
                           timeout_s=self.timeout_s)

    def responder(self, timeout_s: float | None = None) -> LLMResponder:
        """The bureau's own LLM responder, pointed at this server with this session's key."""
        return LLMResponder(self.settings(), timeout_s=timeout_s, api_key=self._key)

    def log_tail(self, lines: int = 12) -> str:
        try:
            text = self._log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"

    def __repr__(self) -> str:
        where = self._url or "stopped"
        return (f"<LocalVoice {self.model.label} ({self.model.size / 1e6:,.0f} MB), "
                f"{self.threads} thread(s), timeout {self.timeout_s:g} s, {where}>")


__all__ = ["CONTEXT", "ENV_FILE", "ENV_SHA", "ENV_THREADS", "ENV_TIMEOUT", "KEY_VAR", "MAX_TOKENS",
           "TIMEOUT_S", "LocalVoice", "threads_for"]
