"""Issue 18's size and shape targets, measured on the working tree.

    .venv/bin/python tools/targets.py              # figures and a quick bench (~30 s)
    .venv/bin/python tools/targets.py --no-bench   # static figures only (a few seconds)

Prints one line per target (name, value, target, OK / NOT MET) and writes the same figures as
JSON to ``bench-results/targets.json``. Exits 0 whether or not a target is met: it reports, it
does not gate (``tests/test_layers.py`` gates the layer rules). The static figures read the
package's source only, never import it; the bench runs ``python -m bureau bench`` on one small
size in a throw-away store (the quick run takes well under the 3 minutes that would make it
opt-in), so its ratio is a smoke figure, noisier than the README's sizes.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import import_graph as ig  # tools/ is this script's directory, so it is on sys.path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "bureau"
CASE = PACKAGE / "service" / "case.py"
OUT = REPO / "bench-results" / "targets.json"

CASE_PUBLIC_MAX = 25
CASE_LINES_MAX = 450
FILE_LINES_MAX = 700
CYCLES_MAX = 0
RATIO_MAX = 1.5
BENCH_ARGS = ["--sizes", "100", "--queries", "20"]


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def case_public_names(path: Path = CASE) -> list[str]:
    """Public methods and properties defined in ``class Case`` (a property's setter is the same
    name; attributes set in ``__init__``, such as the rooms, are not counted)."""
    tree = ast.parse(path.read_text())
    case = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Case"), None)
    if case is None:
        return []
    names: list[str] = []
    for node in case.body:
        name = None
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = node.name
        elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(
                node.value, ast.Lambda | ast.Call) and isinstance(
                (t := node.targets[0] if isinstance(node, ast.Assign) else node.target), ast.Name):
            # `alias = other_method` is not counted; `x = property(...)` / a lambda is
            if isinstance(node.value, ast.Lambda) or ast.unparse(node.value.func) in (
                    "property", "functools.cached_property", "cached_property"):
                name = t.id
        if name and not name.startswith("_") and name not in names:
            names.append(name)
    return names


def row(name: str, value: Any, target: str, ok: bool | None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "value": value, "target": target,
            "status": "n/a" if ok is None else ("OK" if ok else "NOT MET"), **extra}


def static_rows() -> list[dict[str, Any]]:
    rows = []
    if CASE.exists():
        public = case_public_names()
        rows.append(row("Case public methods", len(public), f"<= {CASE_PUBLIC_MAX}",
                        len(public) <= CASE_PUBLIC_MAX, names=public))
        n = lines(CASE)
        rows.append(row("lines of bureau/service/case.py", n, f"<= {CASE_LINES_MAX}",
                        n <= CASE_LINES_MAX))
    else:
        rows.append(row("Case public methods", None, f"<= {CASE_PUBLIC_MAX}", None,
                        note="bureau/service/case.py is missing"))
    sizes = sorted(((lines(p), p.relative_to(REPO).as_posix()) for p in PACKAGE.rglob("*.py")),
                   reverse=True)
    over = [{"file": f, "lines": n} for n, f in sizes if n > FILE_LINES_MAX]
    rows.append(row(f"files in bureau/ over {FILE_LINES_MAX} lines", len(over),
                    "0 (none over 700)", not over, offenders=over,
                    largest=[{"file": f, "lines": n} for n, f in sizes[:5]]))
    pkg = ig.Package.load(PACKAGE)
    every = ig.cycles(pkg, ig.KINDS)
    rows.append(row("import cycles (runtime, function-level and TYPE_CHECKING)", len(every),
                    f"{CYCLES_MAX}", len(every) <= CYCLES_MAX,
                    cycles=[{"modules": sorted(c.modules), "loop": str(c),
                             "kinds": sorted(c.kinds)} for c in every]))
    runtime = ig.cycles(pkg, (ig.RUNTIME, ig.FUNCTION))
    rows.append(row("import cycles without TYPE_CHECKING imports", len(runtime), f"{CYCLES_MAX}",
                    len(runtime) <= CYCLES_MAX, cycles=[str(c) for c in runtime]))
    return rows


def bench_rows() -> list[dict[str, Any]]:
    """A quick ``python -m bureau bench`` (one small size) on a throw-away store: the
    interrogation / raw search p50 ratio (docs/benchmarks.md target: <= 1.5)."""
    with tempfile.TemporaryDirectory(prefix="bureau-targets-") as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "bureau", "bench", *BENCH_ARGS, "--out", str(out),
               "--data-dir", str(Path(tmp) / "data")]
        proc = subprocess.run(cmd, cwd=REPO, text=True, capture_output=True, timeout=900)
        if proc.returncode != 0 or not (out / "bench.json").exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return [row("interrogation / raw search p50", None, f"<= {RATIO_MAX}", False,
                        note=f"bench failed ({proc.returncode}): {' | '.join(tail)}")]
        results = json.loads((out / "bench.json").read_text())
    return [row(f"interrogation / raw search p50 ({r['cards']} cards, quick bench)",
                r["ratio_p50"], f"<= {RATIO_MAX}", r["ratio_p50"] <= RATIO_MAX,
                interrogate_p50_ms=r.get("interrogate_p50_ms"),
                raw_search_p50_ms=r.get("raw_search_p50_ms"), bench_args=BENCH_ARGS)
            for r in results]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-bench", dest="bench", action="store_false",
                        help=f"skip `python -m bureau bench {' '.join(BENCH_ARGS)}` "
                             "(it opens a real store and loads MiniLM)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"JSON file (default: {OUT})")
    args = parser.parse_args(argv)
    rows = static_rows() + (bench_rows() if args.bench else [])
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        print(f"{r['name']:<{width}}  {str(r['value']):>6}  target {r['target']:<18} "
              f"{r['status']}")
        for o in r.get("offenders", []):
            print(f"{'':<{width}}    {o['file']}: {o['lines']} lines")
        if r["name"].startswith("import cycles") and r.get("cycles"):
            for c in r["cycles"]:
                print(f"{'':<{width}}    {c['loop'] if isinstance(c, dict) else c}")
        if r.get("note"):
            print(f"{'':<{width}}    {r['note']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"targets": rows}, indent=2) + "\n")
    print(f"(written to {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
