"""What the labs' command lines share: a run that turns a user's mistake into ``error: ...`` and
exit code 2, the ``--k`` / ``--limit`` checks, the lab's own temporary store, the progress bar.

Imports stay light (``bureau.__main__`` builds every lab's parser before any lab runs): tqdm and
the settings load when a lab runs, not when this module is imported.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bureau.errors import BureauError


class UsageError(Exception):
    """An argument out of range: printed as ``error: <message>``, exit code 2."""


def run_cli(body: Callable[[argparse.Namespace, float], int], args: argparse.Namespace, *,
            hint: bool = True) -> int:
    """``body(args, started)``, its exit code; a :class:`UsageError` or ``BureauError`` is
    printed to stderr (with the error's ``hint:`` line too when ``hint``) and gives 2."""
    started = time.perf_counter()
    try:
        return body(args, started)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BureauError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if hint and getattr(exc, "hint", None):
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 2


def check_k_and_limit(args: argparse.Namespace) -> None:
    """``--k`` within the per-scope search limit, ``--limit`` (when given) at least 1; else a
    :class:`UsageError`."""
    from bureau.settings import LIMIT_RANGE

    lo, hi = LIMIT_RANGE
    if not lo <= args.k <= hi:
        raise UsageError(f"--k must lie between {lo} and {hi}")
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")


def lab_data_dir(data_dir: Path | None, lab: str) -> Path:
    """``data_dir``, or a temporary data directory for ``lab`` that goes at exit."""
    if data_dir is not None:
        return data_dir
    made = Path(tempfile.mkdtemp(prefix=f"bureau-{lab}-"))
    atexit.register(shutil.rmtree, made, ignore_errors=True)
    return made


def progress_bar(desc: str, unit: str, quiet: bool) -> Callable[[Iterable[Any], int], Any]:
    """A runner's ``Progress``: a tqdm bar on stderr (none when ``quiet``)."""
    from tqdm import tqdm

    def progress(it: Iterable[Any], total: int) -> Any:
        return tqdm(it, total=total, desc=desc, unit=unit, disable=quiet, file=sys.stderr)

    return progress


__all__ = ["UsageError", "check_k_and_limit", "lab_data_dir", "progress_bar", "run_cli"]
