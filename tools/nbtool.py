"""Keep the committed notebooks to the outputs policy.

Policy (notebooks/README.md): a committed notebook keeps outputs **only** in cells marked
``# NBVAL_CHECK_OUTPUT`` (deterministic text, with their execution counts, so that
``pytest --nbval-lax`` compares them); every other cell is stored without outputs or count.
Widget state, papermill metadata and per-cell execution metadata are dropped; the kernelspec is
``python3``.

    python tools/nbtool.py execute notebooks/0*.ipynb   # run in a temporary data dir, then clean
    python tools/nbtool.py clean notebooks/*.ipynb      # clean only
    python tools/nbtool.py check notebooks/*.ipynb      # exit 1 if a notebook breaks the policy
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

CHECK = "# NBVAL_CHECK_OUTPUT"
KERNELSPEC = {"display_name": "Python 3 (bureau)", "language": "python", "name": "python3"}


def is_checked(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and CHECK in cell.source


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags")
        cell.metadata = {"tags": tags} if tags else {}
        cell.pop("id", None)
        if cell.cell_type != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            continue
        if not is_checked(cell):
            cell.outputs = []
            cell.execution_count = None
    nb.nbformat, nb.nbformat_minor = 4, 4
    return nb


def problems(path: Path, nb: nbformat.NotebookNode) -> list[str]:
    found = []
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        found.append(f"{path.name}: kernelspec must be python3")
    if "widgets" in nb.metadata or "papermill" in nb.metadata:
        found.append(f"{path.name}: notebook metadata must not hold widget state or papermill data")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if is_checked(cell):
            if cell.execution_count is None or not cell.outputs:
                found.append(f"{path.name} cell {i}: checked cell needs its output and count")
            if any(o.get("output_type") == "error" for o in cell.outputs):
                found.append(f"{path.name} cell {i}: checked cell stores an error")
        elif cell.outputs or cell.execution_count is not None:
            found.append(f"{path.name} cell {i}: unchecked cell must be stored without output")
    text = path.read_text(encoding="utf-8")
    for marker in (str(Path.home()), "/tmp/", "/work/", "/root/", "/home/"):
        if marker in text:
            found.append(f"{path.name}: contains an absolute path ({marker})")
    return found


def execute(paths: list[Path], timeout: int = 300) -> None:
    from nbclient import NotebookClient

    data = Path(tempfile.mkdtemp(prefix="bureau-nbtool-"))
    old = os.environ.get("BUREAU_DATA_DIR")
    os.environ["BUREAU_DATA_DIR"] = str(data)
    try:
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            NotebookClient(nb, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
            nbformat.write(clean(nb), path)
            print(f"executed and cleaned {path}")
    finally:
        if old is None:
            os.environ.pop("BUREAU_DATA_DIR", None)
        else:
            os.environ["BUREAU_DATA_DIR"] = old
        shutil.rmtree(data, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command", choices=["execute", "clean", "check"])
    ap.add_argument("paths", nargs="+", type=Path)
    args = ap.parse_args(argv)
    if args.command == "execute":
        execute(args.paths)
    elif args.command == "clean":
        for path in args.paths:
            nbformat.write(clean(nbformat.read(path, as_version=4)), path)
    found = [p for path in args.paths for p in problems(path, nbformat.read(path, as_version=4))]
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
