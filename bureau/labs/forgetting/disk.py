"""The observer's tools: read every byte of a copied data directory, find card texts and
vectors in it. No database, no bureau code path: only the files.

Never from a process that has a store of that directory open: closing a file descriptor drops
every POSIX lock the process holds on the file, so reading the ledger's SQLite file (or
seekdb's) there would silently release that process's own locks (found in this session: a
second process then no longer saw the first one's case). The lab reads after its children
exit; lesson 07 reads in a child process (:mod:`bureau.course.forgetting`)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np

BLOCK = 1 << 22


def files(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*") if p.is_file() and not p.is_symlink())


def copy_files(src: Path, dst: Path) -> None:
    """Copy every regular file under ``src`` to ``dst`` (what a backup of a server's folder
    holds; its sockets and links are not files to copy)."""
    for path in files(src):
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def find_texts(root: Path, needles: Iterable[str]) -> dict[str, list[str]]:
    """Which files hold each needle (UTF-8 bytes, anywhere): ``grep -rlaF`` for many at once."""
    wanted = {n: n.encode("utf-8") for n in needles}
    found: dict[str, list[str]] = {n: [] for n in wanted}
    longest = max((len(b) for b in wanted.values()), default=1)
    for path in files(root):
        hit: set[str] = set()
        try:
            fh = open(path, "rb")  # noqa: SIM115 (closed below)
        except OSError:  # a running store's short-lived file (seekdb's -shm, a temp file)
            continue
        with fh:
            tail = b""
            while chunk := fh.read(BLOCK):
                data = tail + chunk
                for n, b in wanted.items():
                    if n not in hit and b in data:
                        hit.add(n)
                tail = data[-longest:]
        for n in hit:
            found[n].append(str(path.relative_to(root)))
    return found


def find_vectors(root: Path, dims: int = 384, tol: float = 1e-4) -> np.ndarray:
    """Every run of ``dims`` little-endian float32 of unit length (a sentence embedding as an
    index stores it) at any 4-byte phase of any file; duplicates dropped. Rows, float32."""
    out: list[np.ndarray] = []
    for path in files(root):
        try:
            if path.stat().st_size < 4 * dims:
                continue
            fh = open(path, "rb")  # noqa: SIM115 (closed below)
        except OSError:  # gone since it was listed (a running store's short-lived file)
            continue
        with fh:
            prev = b""
            while chunk := fh.read(BLOCK):
                buf = np.frombuffer(prev + chunk, dtype=np.uint8)
                if buf.any():
                    out += _unit_runs(buf, dims, tol)
                prev = chunk[-4 * dims:]
    if not out:
        return np.zeros((0, dims), np.float32)
    stacked = np.stack(out)
    _, first = np.unique(np.round(stacked, 5), axis=0, return_index=True)
    return stacked[np.sort(first)]


def _unit_runs(buf: np.ndarray, dims: int, tol: float) -> list[np.ndarray]:
    found: list[np.ndarray] = []
    for phase in range(4):
        n = (len(buf) - phase) // 4
        if n < dims:
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            f = buf[phase : phase + 4 * n].view("<f4").astype(np.float64)
            ok = np.isfinite(f) & (np.abs(f) < 1.0) & (np.abs(f) > 1e-5)
        f = np.where(ok, f, 0.0)
        sq = np.concatenate([[0.0], np.cumsum(f * f)])
        cnt = np.concatenate([[0], np.cumsum(ok)])
        norm2, dense = sq[dims:] - sq[:-dims], cnt[dims:] - cnt[:-dims]
        err = np.abs(norm2 - 1.0)
        idx = np.nonzero((err < tol) & (dense >= dims - 8))[0]
        # A window shifted by a float or two can also pass (a tiny first component): of each
        # run of overlapping windows keep the one closest to unit length.
        start = 0
        for k in range(1, len(idx) + 1):
            if k == len(idx) or idx[k] - idx[start] >= dims:
                best = idx[start + int(np.argmin(err[idx[start:k]]))]
                found.append(f[best : best + dims].astype(np.float32))
                start = k
    return found
