#!/usr/bin/env bash
# The whole test suite, as `make test` runs it: lint, unit and storage tests, notebooks, browser.
# The core stage runs on BUREAU_TEST_WORKERS xdist workers (default 2, one per core): every
# lesson's two runs in one data directory (tests/test_lessons_twice.py) go to one worker, in
# order, while the other runs the rest; the site stage then renders those executed lessons.
# The browser stages run on as many workers (each its own JupyterLab or page server and Chromium).
#
# Every stage records its outcome (pytest stages also their JUnit XML); tools/test_summary.py then
# prints what ran, passed, failed and was skipped per stage, and the verdict line CI parses
# ("ALL TEST STAGES PASSED" / "SOME TEST STAGES FAILED"). With CI=true a skipped browser stage,
# or any skipped real-browser test, fails the run.
#   BUREAU_STAGES=ruff,torch,core,ui,site,stray   run only these stages (the others are
#                                                 reported as not run, and fail a CI run)
set -uo pipefail
PY=${1:-.venv/bin/python}
cd "$(dirname "$0")/.."
RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/bureau-run-all.XXXXXX")
trap 'rm -rf "$RESULTS"' EXIT
step() { echo; echo "=== $1"; }
# record ID TITLE STATUS [JUNIT] [KIND]: one line per stage for the summary
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" "${5:-check}" >>"$RESULTS/stages.tsv"; }
# stage ID TITLE: announce a stage, or record it as not selected (then the caller skips it)
stage() {
  if [ -n "${BUREAU_STAGES:-}" ] && [[ ",${BUREAU_STAGES}," != *",$1,"* ]]; then
    record "$1" "$2" not-selected; return 1
  fi
  step "$2"
}
check() {  # check ID TITLE EXIT_CODE: a stage that is not pytest
  if [ "$3" -eq 0 ]; then record "$1" "$2" passed; else record "$1" "$2" failed; fi
}
run_pytest() {  # run_pytest ID TITLE KIND ARGS...; exit 5 ("no tests collected") is a failure too
  local id=$1 title=$2 kind=$3; shift 3
  "$PY" -m pytest "$@" -rs --junitxml="$RESULTS/$id.xml" -o junit_family=xunit2; local rc=$?
  if [ $rc -ne 0 ]; then echo "pytest $* exited with $rc"; fi
  record "$id" "$title" "$([ $rc -eq 0 ] && echo passed || echo failed)" "$RESULTS/$id.xml" "$kind"
}

stages=${BUREAU_STAGES:-}
for id in ${stages//,/ }; do
  case $id in ruff|torch|core|ui|site|stray) ;;
    *) echo "BUREAU_STAGES: unknown stage '$id' (ruff,torch,core,ui,site,stray)"
       echo "SOME TEST STAGES FAILED"; exit 2 ;;
  esac
done

T="ruff"
if stage ruff "$T"; then
  "$PY" -m ruff check bureau tests tools; check ruff "$T" $?
fi
T="no torch in the environment"
if stage torch "$T"; then
  "$PY" -c 'import importlib.util as u, sys; sys.exit(1 if u.find_spec("torch") else 0)'; rc=$?
  [ $rc -eq 0 ] || echo "torch is installed: the project must not pull it in"
  check torch "$T" $rc
fi
T="package, storage and notebook tests"
if stage core "$T"; then
  run_pytest core "$T" pytest -m "not ui" tests --ignore=tests/ui --ignore=tests/site -q \
    -p no:cacheprovider -p no:playwright -n "${BUREAU_TEST_WORKERS:-2}" --dist loadgroup
fi
T="real browser (JupyterLab and Voila in Chromium)"
if stage ui "$T"; then
  if [ -d tests/ui ]; then
    run_pytest ui "$T" browser -m ui tests/ui -q -p no:cacheprovider -n "${BUREAU_TEST_WORKERS:-2}"
  else
    echo "tests/ui is missing"; record ui "$T" skipped "" browser
  fi
fi
T="course site (built from the executed lessons, read in Chromium)"
if stage site "$T"; then
  if [ -f tools/sitebuild.py ] && [ -d tests/site ]; then
    "$PY" tools/sitebuild.py build --reuse; rc=$?  # the core stage's executed lessons
    if [ $rc -eq 0 ]; then
      run_pytest site "$T" browser -m ui tests/site -q -p no:cacheprovider \
        -n "${BUREAU_TEST_WORKERS:-2}"
    else
      echo "the site build failed (exit $rc)"; record site "$T" failed "" browser
    fi
  else
    echo "tools/sitebuild.py or tests/site is missing"; record site "$T" skipped "" browser
  fi
fi
T="no stray files left in the working tree"
if stage stray "$T"; then
  stray=$(git status --porcelain --untracked-files=all 2>/dev/null | grep '^??' || true)
  if [ -n "$stray" ]; then echo "untracked files appeared:"; echo "$stray"; fi
  check stray "$T" "$([ -z "$stray" ] && echo 0 || echo 1)"
fi

# The summary decides the verdict (failed stages, and CI's rule on skipped browser tests). Should
# it not run at all (no Python), the verdict line is still printed.
"$PY" tools/test_summary.py "$RESULTS/stages.tsv"; rc=$?
if [ $rc -gt 1 ]; then
  echo; echo "the test summary could not run (exit $rc)"
  echo "SOME TEST STAGES FAILED"; exit 1
fi
exit $rc
