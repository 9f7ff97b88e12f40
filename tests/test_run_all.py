"""``tests/run_all.sh`` tells the truth in its closing lines (issue 9, item 9).

A machine without Chromium used to end ``make test`` with "ALL TEST STAGES PASSED" although the
four real-browser tests never ran. These tests run the real script, cheaply: on a throwaway copy
of the repository layout (the script, the summary helper, a one-line package, a passing and a
skipped test, one browser test that runs or skips on demand), so every stage runs in seconds and
the real suite is never started from inside itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import test_summary as summary  # noqa: E402

PASS = "ALL TEST STAGES PASSED"
FAIL = "SOME TEST STAGES FAILED"
BROWSER = "real browser (JupyterLab and Voila in Chromium)"


@pytest.fixture(scope="module")
def fake_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository layout run_all.sh expects, with tiny stand-in tests."""
    root = tmp_path_factory.mktemp("fake-repo")
    (root / "tests" / "ui").mkdir(parents=True)
    (root / "tests" / "site").mkdir()
    (root / "tools").mkdir()
    (root / "bureau").mkdir()
    (root / "notebooks").mkdir()
    shutil.copy(REPO / "tests" / "run_all.sh", root / "tests" / "run_all.sh")
    shutil.copy(REPO / "tools" / "test_summary.py", root / "tools" / "test_summary.py")
    (root / "bureau" / "__init__.py").write_text('"""Stand-in package."""\n')
    (root / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.pytest.ini_options]
        markers = ["ui: real-browser tests"]
        """))
    (root / "tests" / "test_core.py").write_text(textwrap.dedent("""\
        import os

        import pytest


        def test_passes():
            assert os.environ.get("FAKE_CORE_FAILS") is None


        @pytest.mark.skip(reason="stand-in skip in the core stage")
        def test_skipped():
            pass
        """))
    (root / "tests" / "ui" / "test_browser.py").write_text(textwrap.dedent("""\
        import os

        import pytest


        @pytest.mark.ui
        def test_page():
            if os.environ.get("FAKE_NO_CHROMIUM"):
                pytest.skip("/usr/bin/chromium is missing (stand-in)")
        """))
    # The site stage: a stand-in build (fails on demand) and one page test.
    (root / "tools" / "sitebuild.py").write_text(
        "import os\nimport sys\n\nsys.exit(1 if os.environ.get('FAKE_SITE_FAILS') else 0)\n")
    (root / "tests" / "site" / "test_pages.py").write_text(textwrap.dedent("""\
        import pytest


        @pytest.mark.ui
        def test_site_page():
            pass
        """))
    return root


def run_all(repo: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the copied run_all.sh with this interpreter; no git repository above the copy."""
    full = {k: v for k, v in os.environ.items()
            if k not in ("CI", "BUREAU_STAGES", "FAKE_NO_CHROMIUM", "FAKE_CORE_FAILS",
                         "FAKE_SITE_FAILS")}
    # one process per stage: the stand-in stages hold a test or two, and starting xdist workers
    # for them doubled this file's time
    full.update(GIT_CEILING_DIRECTORIES=str(repo.parent), BUREAU_TEST_WORKERS="0", **env)
    return subprocess.run(
        ["bash", str(repo / "tests" / "run_all.sh"), sys.executable],
        cwd=repo, env=full, text=True, capture_output=True, timeout=300,
    )


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout.strip().splitlines()[-1]


def test_skipped_browser_stage_is_named_with_counts_and_reason(fake_repo):
    proc = run_all(fake_repo, FAKE_NO_CHROMIUM="1")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert last_line(proc) == PASS  # locally a skip is reported, not fatal
    assert f"skipped stage: {BROWSER} (all 1 tests skipped)" in out
    assert f"skipped tests in {BROWSER}: 1 of 1" in out
    assert "/usr/bin/chromium is missing (stand-in)" in out
    # the core stage passed but skipped one test: said so, with the reason
    assert "skipped tests in package, storage and notebook tests: 1 of 2" in out
    assert "stand-in skip in the core stage" in out
    assert "total: 2 passed, 0 failed, 2 skipped" in out
    # pytest's own closing lines stay visible
    assert "1 passed, 1 skipped" in out and "1 skipped" in out


def test_ci_fails_a_run_whose_browser_tests_skipped(fake_repo):
    proc = run_all(fake_repo, FAKE_NO_CHROMIUM="1", CI="true", BUREAU_STAGES="ui")
    assert proc.returncode != 0, proc.stdout
    assert last_line(proc) == FAIL
    assert f"CI=true: {BROWSER}: 1 real-browser test(s) skipped" in proc.stdout
    assert PASS not in proc.stdout


def test_ci_passes_when_every_stage_ran(fake_repo):
    proc = run_all(fake_repo, CI="true")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert last_line(proc) == PASS
    assert "stages: 6 - 6 passed, 0 failed, 0 skipped, 0 not run" in proc.stdout
    assert f"skipped stage: {BROWSER}" not in proc.stdout


def test_a_failing_stage_fails_the_run_and_is_named(fake_repo):
    proc = run_all(fake_repo, FAKE_CORE_FAILS="1", BUREAU_STAGES="core")
    assert proc.returncode == 1
    assert "FAILED stage: package, storage and notebook tests" in proc.stdout
    assert last_line(proc) == FAIL


def test_a_failed_site_build_fails_the_site_stage(fake_repo):
    proc = run_all(fake_repo, FAKE_SITE_FAILS="1", BUREAU_STAGES="site")
    assert proc.returncode == 1 and last_line(proc) == FAIL
    assert "the site build failed (exit 1)" in proc.stdout
    assert "FAILED stage: course site (built from the executed lessons, read in Chromium)" \
        in proc.stdout
    proc = run_all(fake_repo, BUREAU_STAGES="site")
    assert proc.returncode == 0 and last_line(proc) == PASS, proc.stdout
    assert "total: 1 passed, 0 failed, 0 skipped" in proc.stdout


def test_partial_runs_are_reported_and_fail_ci(fake_repo):
    proc = run_all(fake_repo, BUREAU_STAGES="torch")
    assert proc.returncode == 0 and last_line(proc) == PASS
    assert f"not run: {BROWSER} (left out by BUREAU_STAGES)" in proc.stdout
    proc = run_all(fake_repo, BUREAU_STAGES="torch", CI="true")
    assert proc.returncode == 1 and last_line(proc) == FAIL
    assert f"CI=true: {BROWSER}: not run (BUREAU_STAGES)" in proc.stdout


# -- the summary helper alone ----------------------------------------------------------------------
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="t" name="a"/>
<testcase classname="t" name="b"><skipped type="pytest.skip" message="no chromium"/></testcase>
<testcase classname="t" name="c"><skipped type="pytest.xfail" message="known"/></testcase>
<testcase classname="t" name="d"><failure message="boom"/></testcase>
<testcase classname="t" name="e"><error message="collection failure"/></testcase>
</testsuite></testsuites>"""


def test_junit_counts(tmp_path):
    xml = tmp_path / "s.xml"
    xml.write_text(JUNIT)
    c = summary.read_junit(xml)
    assert (c.collected, c.passed, c.skipped, c.xfailed, c.failed, c.errors) == (5, 1, 1, 1, 1, 1)
    assert c.skip_reasons == ["no chromium"]


def test_missing_junit_and_empty_records(tmp_path):
    tsv = tmp_path / "stages.tsv"
    tsv.write_text(f"ui\t{BROWSER}\tfailed\t{tmp_path / 'none.xml'}\tbrowser\n")
    lines, ok = summary.render(summary.read_records(tsv), ci=False)
    assert not ok and lines[-1] == FAIL
    assert any("wrote no JUnit XML" in line for line in lines)
    tsv.write_text("")
    lines, ok = summary.render(summary.read_records(tsv), ci=False)
    assert not ok and lines[-1] == FAIL  # no stage at all is not a pass
    assert summary.main([]) == 2
    tsv.write_text(f"ui\t{BROWSER}\tnot-selected\t\tbrowser\n")
    lines, ok = summary.render(summary.read_records(tsv), ci=False)
    assert not ok  # nothing ran


def test_unknown_stage_name_is_refused(fake_repo):
    proc = run_all(fake_repo, BUREAU_STAGES="torch,browser")
    assert proc.returncode == 2 and last_line(proc) == FAIL
    assert "unknown stage 'browser'" in proc.stdout
