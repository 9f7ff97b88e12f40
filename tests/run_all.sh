#!/usr/bin/env bash
# The whole test suite, as `make test` runs it: lint, unit and storage tests, notebooks, browser.
set -uo pipefail
PY=${1:-.venv/bin/python}
cd "$(dirname "$0")/.."
status=0
step() { echo; echo "=== $1"; }
run_pytest() {  # pytest exit 5 means "no tests collected": that is a failure here too
  "$PY" -m pytest "$@"; rc=$?
  if [ $rc -ne 0 ]; then echo "pytest $* exited with $rc"; status=1; fi
}
step "ruff"
"$PY" -m ruff check bureau tests || status=1
step "no torch in the environment"
"$PY" -c 'import importlib.util as u, sys; sys.exit(1 if u.find_spec("torch") else 0)' \
  || { echo "torch is installed: the project must not pull it in"; status=1; }
step "package, storage and notebook tests"
run_pytest -m "not ui" tests --ignore=tests/ui -q -p no:cacheprovider -p no:playwright
if ls notebooks/[0-9][0-9]_*.ipynb >/dev/null 2>&1; then
  step "nbval (deterministic cells of every lesson)"
  run_pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=180 -p no:cacheprovider -p no:playwright notebooks -q
fi
if [ -d tests/ui ]; then
  step "real browser (JupyterLab and Voila in Chromium)"
  run_pytest -m ui tests/ui -q -p no:cacheprovider
fi
step "no stray files left in the working tree"
stray=$(git status --porcelain --untracked-files=all 2>/dev/null | grep '^??' || true)
if [ -n "$stray" ]; then echo "untracked files appeared:"; echo "$stray"; status=1; fi
echo
if [ $status -eq 0 ]; then echo "ALL TEST STAGES PASSED"; else echo "SOME TEST STAGES FAILED"; fi
exit $status
