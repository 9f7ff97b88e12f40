"""Measure what a lesson costs a classroom: wall time per lesson and memory per kernel.

The instructor kit (notebooks/INSTRUCTOR.md) quotes these figures; this script is how they were
taken, so anyone can take them again on the room's own machine:

    python tools/measure_lessons.py                 # every lesson and deep dive, default parameters
    python tools/measure_lessons.py 00 02 --memory  # some lessons, plus RSS after lesson 02

Each lesson runs once with papermill at its default parameters (as a learner runs it, not with
the small values the tests use), in one fresh data directory shared by the whole run (a learner
keeps one), and its ``metadata.papermill.duration`` is reported with the load average before
and after, because a shared machine's load changes every figure. ``--memory`` runs lesson 02 in
a kernel it keeps alive, then sums the resident memory of that kernel and every process under
it (the embedded seekdb runs as a child of the kernel).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f}/{five:.1f}"


def time_lessons(names: list[str], keep: Path | None = None) -> list[dict[str, object]]:
    import papermill as pm

    rows = []
    out_dir = keep or Path(tempfile.mkdtemp(prefix="bureau-measure-out-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        # the lessons and their deep dives ("05" names lesson 05, "05b" its deep dive)
        for path in sorted([*NB_DIR.glob("[0-9][0-9]_*.ipynb"), *NB_DIR.glob("[0-9][0-9][a-z]_*.ipynb")]):
            if names and path.name.split("_")[0] not in names:
                continue
            before = _load()
            start = time.perf_counter()
            nb = pm.execute_notebook(str(path), str(out_dir / path.name), kernel_name="python3",
                                     cwd=str(NB_DIR), progress_bar=False, execution_timeout=1800)
            wall = time.perf_counter() - start
            rows.append({"lesson": path.name, "papermill_s": round(nb.metadata.papermill.duration, 1),
                         "wall_s": round(wall, 1), "load_before": before, "load_after": _load(),
                         "code_cells": sum(c.cell_type == "code" for c in nb.cells)})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        if keep is None:
            shutil.rmtree(out_dir, ignore_errors=True)
    return rows


def kernel_memory(lesson: str = "02_interrogate.ipynb") -> dict[str, float]:
    """RSS (MB) of a kernel that ran ``lesson``, itself and its child processes (seekdb)."""
    import nbformat
    import psutil
    from nbclient import NotebookClient

    nb = nbformat.read(NB_DIR / lesson, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=1800,
                            resources={"metadata": {"path": str(NB_DIR)}})
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        pid = client.km.provisioner.process.pid
        kernel = psutil.Process(pid)
        children = kernel.children(recursive=True)
        own = kernel.memory_info().rss / 2**20
        kids = {f"{c.name()}[{c.pid}]": c.memory_info().rss / 2**20 for c in children}
    result = {"kernel_mb": round(own, 1), **{k: round(v, 1) for k, v in kids.items()},
              "total_mb": round(own + sum(kids.values()), 1)}
    print(json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lessons", nargs="*", help="two-digit lesson numbers (default: all)")
    ap.add_argument("--memory", action="store_true", help="also measure a kernel after lesson 02")
    ap.add_argument("--no-timing", action="store_true", help="skip the timing run")
    ap.add_argument("--keep", type=Path, help="keep the executed notebooks in this folder")
    args = ap.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="bureau-measure-"))
    os.environ["BUREAU_DATA_DIR"] = str(data)  # the kernels inherit it
    try:
        print(f"cpus: {os.cpu_count()}, load (1/5 min): {_load()}", flush=True)
        if not args.no_timing:
            time_lessons(args.lessons, args.keep)
        if args.memory:
            kernel_memory()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
