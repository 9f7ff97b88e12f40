"""The closing summary of ``tests/run_all.sh``: what ran, passed, failed and was skipped, per stage.

``run_all.sh`` used to print "ALL TEST STAGES PASSED" whenever no stage *failed*, so a machine
without Chromium reported a green run in which the four real-browser tests never ran. This helper
reads what each stage recorded (a tab-separated line per stage, plus pytest's JUnit XML for the
pytest stages) and says it all at the end, where people and CI look:

* one line per stage: its result and, for pytest stages, tests collected / passed / failed /
  skipped (read from the JUnit XML, not from the console, so ``-q`` or plugins cannot hide them);
* every skipped stage and every stage with skipped tests, named, with pytest's skip reasons;
* a plain total line ``total: N passed, N failed, N skipped``;
* the last line, unchanged because CI parses it: "ALL TEST STAGES PASSED" or
  "SOME TEST STAGES FAILED".

With ``CI=true`` a run that skipped the browser stage, or any test in it, fails: CI installs
Chromium, so a skip there means the check did not happen. A stage left out by ``BUREAU_STAGES``
(a partial run, handy locally) fails CI too. Kept in a separate file so that the decision can be
tested cheaply (``tests/test_run_all.py``) without running the whole suite.

Record format, one line per stage: ``id<TAB>title<TAB>status<TAB>junit-xml-or-empty<TAB>kind``
with status ``passed``, ``failed``, ``skipped`` (the stage had nothing to run) or ``not-selected``
and kind ``check``, ``pytest`` or ``browser`` (a pytest stage whose skips fail CI).
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

PASS_LINE = "ALL TEST STAGES PASSED"
FAIL_LINE = "SOME TEST STAGES FAILED"


@dataclass
class Counts:
    """Test outcomes of one pytest stage, read from its JUnit XML."""

    collected: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    skip_reasons: list[str] = field(default_factory=list)


@dataclass
class Stage:
    id: str
    title: str
    status: str
    junit: Path | None
    kind: str
    counts: Counts | None = None
    note: str = ""


def read_junit(path: Path) -> Counts:
    """Count outcomes per test case (a collection error counts as an error)."""
    counts = Counts()
    root = ET.parse(path).getroot()
    reasons: dict[str, int] = {}
    for case in root.iter("testcase"):
        counts.collected += 1
        if case.find("failure") is not None:
            counts.failed += 1
        elif case.find("error") is not None:
            counts.errors += 1
        elif (skip := case.find("skipped")) is not None:
            if skip.get("type") == "pytest.xfail":
                counts.xfailed += 1
                continue
            counts.skipped += 1
            reason = (skip.get("message") or "no reason given").strip()
            reasons[reason] = reasons.get(reason, 0) + 1
        else:
            counts.passed += 1
    counts.skip_reasons = [f"{n} x {r}" if n > 1 else r for r, n in reasons.items()]
    return counts


def read_records(path: Path) -> list[Stage]:
    stages = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        sid, title, status, junit, kind = (line.split("\t") + [""] * 5)[:5]
        stage = Stage(sid, title, status, Path(junit) if junit else None, kind or "check")
        if stage.junit is not None:
            if stage.junit.is_file():
                try:
                    stage.counts = read_junit(stage.junit)
                except ET.ParseError as exc:
                    stage.note = f"unreadable JUnit XML ({exc})"
            else:
                stage.note = "pytest wrote no JUnit XML (it did not start or crashed)"
        c = stage.counts
        if stage.status == "passed" and c and c.collected and c.skipped + c.xfailed == c.collected:
            stage.status = "skipped"  # pytest exits 0 when it skips everything: nothing ran
            stage.note = f"all {c.collected} tests skipped"
        stages.append(stage)
    return stages


def ci_problems(stages: list[Stage], ci: bool) -> list[str]:
    """Why a CI run must fail although no stage failed (empty when not on CI)."""
    if not ci:
        return []
    problems = []
    for s in stages:
        if s.status == "not-selected":
            problems.append(f"{s.title}: not run (BUREAU_STAGES); CI runs every stage")
        elif s.kind == "browser" and s.counts is not None and s.counts.skipped:
            problems.append(
                f"{s.title}: {s.counts.skipped} real-browser test(s) skipped; "
                "CI must run them all (is /usr/bin/chromium installed?)"
            )
        elif s.kind == "browser" and s.status == "skipped":
            problems.append(f"{s.title}: stage skipped; CI must drive the real browser")
    return problems


def _cell(n: int | None) -> str:
    return "-" if n is None else str(n)


def render(stages: list[Stage], ci: bool) -> tuple[list[str], bool]:
    """The summary lines and whether the run passed (the last line says which)."""
    lines = ["", "=== summary"]
    width = max([len(s.title) for s in stages] + [5])
    lines.append(f"{'stage':<{width}}  {'result':<12} {'tests':>6} {'passed':>7} {'failed':>7} "
                 f"{'skipped':>8}")
    for s in stages:
        c = s.counts
        result = {"not-selected": "NOT RUN", "skipped": "SKIPPED"}.get(s.status, s.status)
        if s.status == "passed" and c is not None and c.skipped:
            result = "passed*"  # passed, but not everything in it ran
        lines.append(
            f"{s.title:<{width}}  {result:<12} {_cell(c and c.collected):>6} "
            f"{_cell(c and c.passed):>7} {_cell(c and c.failed + c.errors):>7} "
            f"{_cell(c and c.skipped):>8}"
        )
    for s in stages:
        if s.status == "skipped":
            lines.append(f"skipped stage: {s.title}" + (f" ({s.note})" if s.note else ""))
        elif s.status == "not-selected":
            lines.append(f"not run: {s.title} (left out by BUREAU_STAGES)")
        if s.counts is not None and s.counts.skipped:
            c = s.counts
            lines.append(f"skipped tests in {s.title}: {c.skipped} of {c.collected}")
            lines += [f"    {reason}" for reason in c.skip_reasons[:5]]
        if s.counts is not None and s.counts.xfailed:
            lines.append(f"expected failures in {s.title}: {s.counts.xfailed}")
        if s.note and s.status != "skipped":
            lines.append(f"note: {s.title}: {s.note}")
        if s.status == "failed":
            lines.append(f"FAILED stage: {s.title}")
    problems = ci_problems(stages, ci)
    lines += [f"CI=true: {p}" for p in problems]
    n = {k: sum(1 for s in stages if s.status == k)
         for k in ("passed", "failed", "skipped", "not-selected")}
    lines.append(
        f"stages: {len(stages)} - {n['passed']} passed, {n['failed']} failed, "
        f"{n['skipped']} skipped, {n['not-selected']} not run"
    )
    counted = [s.counts for s in stages if s.counts is not None]
    lines.append(
        f"total: {sum(c.passed for c in counted)} passed, "
        f"{sum(c.failed + c.errors for c in counted)} failed, "
        f"{sum(c.skipped for c in counted)} skipped"
    )
    ok = n["failed"] == 0 and not problems and n["passed"] > 0  # nothing ran: not a pass
    lines.append(PASS_LINE if ok else FAIL_LINE)
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    """``python tools/test_summary.py STAGES_TSV``: print the summary, exit 0 if the run passed."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: test_summary.py STAGES_TSV", file=sys.stderr)
        return 2
    try:
        stages = read_records(Path(args[0]))
        lines, ok = render(stages, os.environ.get("CI", "").lower() == "true")
    except Exception as exc:  # noqa: BLE001 - never end a test run without its verdict line
        print(f"test summary could not be computed: {exc!r}")
        print(FAIL_LINE)
        return 1
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
